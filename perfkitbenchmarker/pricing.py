"""The price catalog: hourly prices as reviewed data with a source and a date.

Prices live in configs/prices.yaml, keyed by (cloud, region, machine type),
each row with its source and date and up to four bases: on-demand list price,
spot, and 1- and 3-year committed use (`BASES`). A run picks one basis
(`--price_basis`) and may give prices of its own (`--machine_price`); the
catalog it looks prices up in is `Load().ForRun(basis, user_prices)`.

Every price passes one validation when it is loaded (`ValidPrice`: a finite
number of US dollars per hour within `MIN_USD_PER_HOUR`..`MAX_USD_PER_HOUR`;
catalog rows also need a known source and a date, `ValidDate`): the catalog
file (`PriceCatalog.Load`, a regular UTF-8 file of at most
`MAX_CATALOG_BYTES`, a known `format_version`), --machine_price
(`ParseMachinePrices`) and what scripts/refresh_prices.py writes. A bad one
is one line (errors.ConfigError / UsageError, exit 2) before anything runs,
never a zero division after the search.

Extension seam: scripts/refresh_prices.py regenerates the file from the
providers' price APIs (or imports a reviewed CSV of them); a new cloud only
needs rows and a `RegionFromZone` rule; a new basis is one more entry in
`BASES` and a column in the file.
"""

import dataclasses
import datetime
import difflib
import math
import os
import re
from typing import (Annotated, Any, Dict, Iterable, List, Optional, Sequence,
                    Tuple, Union)

import pydantic
import yaml

from perfkitbenchmarker import cloud_names
from perfkitbenchmarker import errors
from perfkitbenchmarker import paths
from perfkitbenchmarker import regular_files

# An installed package carries the build's copy of configs/prices.yaml
# (setup.py); a checkout reads configs/prices.yaml, the one source of truth.
_PACKAGED_CATALOG_PATH = os.path.join(paths.PACKAGE_DIR, 'data',
                                      'prices.yaml')
_REPO_CATALOG_PATH = os.path.join(paths.REPO_ROOT, 'configs', 'prices.yaml')
DEFAULT_CATALOG_PATH = (_PACKAGED_CATALOG_PATH
                        if os.path.exists(_PACKAGED_CATALOG_PATH) else
                        _REPO_CATALOG_PATH)
DEFAULT_REGIONS = {'GCP': 'us-central1', 'AWS': 'us-east-1'}

ON_DEMAND = 'on_demand'
# Basis -> the catalog column holding it.
BASES = {ON_DEMAND: 'usd_per_hour', 'spot': 'usd_per_hour_spot',
         'cud_1y': 'usd_per_hour_cud_1y', 'cud_3y': 'usd_per_hour_cud_3y'}
BASIS_NAMES = {ON_DEMAND: 'on-demand', 'spot': 'spot',
               'cud_1y': '1-year commitment', 'cud_3y': '3-year commitment'}
USER_SOURCE = 'given with --machine_price'
# The catalog formats this module reads (refresh_prices.py writes the last).
FORMAT_VERSIONS = (2,)
# Sane hourly prices: below a tenth of a cent (the cheapest spot VMs cost
# about $0.001/hr) or above $1,000 (the largest VMs list at about $400/hr)
# is a typo or a unit mix-up (per month, per second, in cents), not a price.
MIN_USD_PER_HOUR = 0.0001
MAX_USD_PER_HOUR = 1000.0
# The catalog is about 0.3 MB (1,100 rows); every pkb.py start reads it.
MAX_CATALOG_BYTES = 8 * 1024 * 1024
_FAST_LOADER = getattr(yaml, 'CSafeLoader', yaml.SafeLoader)


@dataclasses.dataclass(frozen=True)
class HourlyPrice:
  """One machine type's hourly price on one basis, with its provenance."""
  cloud: str
  region: str
  machine_type: str
  vcpus: int
  memory_gib: float
  usd_per_hour: float
  source: str
  source_date: str
  basis: str = ON_DEMAND

  def __post_init__(self):
    # However it was made, a price that reaches a cost is a sane one.
    basis = BASIS_NAMES.get(self.basis, self.basis)
    ValidPrice(self.usd_per_hour,
               f'the {basis} price of {self.cloud} {self.machine_type}')

  def Metadata(self, prefix: str = '') -> Dict[str, object]:
    return {
        f'{prefix}machine_type': self.machine_type,
        f'{prefix}price_usd_per_hour': self.usd_per_hour,
        f'{prefix}price_cloud': self.cloud,
        f'{prefix}price_region': self.region,
        f'{prefix}price_source': self.source,
        f'{prefix}price_date': self.source_date,
        f'{prefix}pricing_model': self.basis,
    }

  def Describe(self) -> str:
    """'$0.6759/hr (on-demand; us-central1; 2026-07-30)'."""
    given = ' as ' + USER_SOURCE if self.source == USER_SOURCE else ''
    return (f'${self.usd_per_hour:.4f}/hr ({BASIS_NAMES[self.basis]}{given}; '
            f'{self.region}; {self.source_date})')


@dataclasses.dataclass(frozen=True)
class CatalogRow:
  """A catalog row: every basis the source prices (absent ones are None)."""
  cloud: str
  region: str
  machine_type: str
  vcpus: int
  memory_gib: float
  prices: Tuple[Tuple[str, Optional[float]], ...]
  source: str
  source_date: str

  def Price(self, basis: str) -> Optional[HourlyPrice]:
    usd = dict(self.prices).get(basis)
    if usd is None:
      return None
    return HourlyPrice(self.cloud, self.region, self.machine_type,
                       self.vcpus, self.memory_gib, usd, self.source,
                       self.source_date, basis)


# One price row as scripts/refresh_prices.py writes it: a flow mapping on
# one line whose values are plain names, numbers or single-quoted text.
_ROW_LINE = re.compile(r'  - \{(.*)\}')
_ROW_ITEM = re.compile(r"(\w+): ('[^',]*'|[A-Za-z0-9_.\-]+)")
_INT = re.compile(r'-?\d+')
_FLOAT = re.compile(r'-?\d+\.\d+')
_NAME = re.compile(r'[A-Za-z][A-Za-z0-9_.\-]*')
_YAML_WORDS = frozenset(('true', 'false', 'yes', 'no', 'on', 'off', 'null',
                         'y', 'n'))


def _RowValue(text: str):
  if text.startswith("'"):
    return text[1:-1]
  if _INT.fullmatch(text):
    return int(text)
  if _FLOAT.fullmatch(text):
    return float(text)
  if _NAME.fullmatch(text) and text.lower() not in _YAML_WORDS:
    return text
  raise ValueError(text)


def ParseCatalogText(text: str) -> Dict:
  """The catalog file as YAML reads it. Its 1,000-odd price rows are one
  flow mapping a line (as refresh_prices.py writes them) and are read here
  directly, about 50x faster than a YAML parser (every pkb.py start reads
  them); anything else in that part sends the whole file through YAML."""
  head, sep, rows = text.partition('\nprices:\n')
  data = (yaml.load(head, Loader=_FAST_LOADER) or {}) if sep else None
  if isinstance(data, dict):
    try:
      prices = []
      for line in rows.splitlines():
        if not line.strip() or line.lstrip().startswith('#'):
          continue
        match = _ROW_LINE.fullmatch(line)
        items = _ROW_ITEM.findall(match.group(1)) if match else []
        if not match or ', '.join(f'{k}: {v}' for k, v in items) != (
            match.group(1)):
          raise ValueError(line)
        prices.append({k: _RowValue(v) for k, v in items})
      return {**data, 'prices': prices}
    except ValueError:
      pass
  return yaml.load(text, Loader=_FAST_LOADER) or {}


def ValidPrice(value: Any, what: str) -> float:
  """`value` as US dollars per hour, if it is a sane price.

  The one check every price passes when it is loaded (catalog rows,
  --machine_price, refresh_prices.py's output). Raises ValueError with what
  is wrong, for the caller to put in its one-line error.
  """
  if isinstance(value, bool) or not isinstance(value, (int, float)):
    raise ValueError(f'{what} is {str(value)[:40]!r}, not a number')
  try:
    number = float(value)
  except OverflowError:  # An integer of 400 digits.
    number = math.inf
  if not math.isfinite(number):
    raise ValueError(f'{what} is {str(value)[:40]}, not a finite number')
  if not MIN_USD_PER_HOUR <= number <= MAX_USD_PER_HOUR:
    raise ValueError(
        f'{what} is {number:g}, outside ${MIN_USD_PER_HOUR:g} to '
        f'${MAX_USD_PER_HOUR:,.0f} per hour')
  return number


def ValidDate(value: Any, what: str,
              today: Optional[datetime.date] = None) -> str:
  """An ISO date (YYYY-MM-DD) not after tomorrow, as text; ValueError
  otherwise (a price without a real date cannot be reviewed)."""
  if isinstance(value, datetime.date):  # YAML reads an unquoted date so.
    value = value.isoformat()
  try:
    date = datetime.date.fromisoformat(str(value))
  except ValueError:
    raise ValueError(f'{what} is {str(value)[:40]!r}, not a date '
                     '(YYYY-MM-DD)') from None
  if date > (today or datetime.date.today()) + datetime.timedelta(days=1):
    raise ValueError(f'{what} {date.isoformat()} is in the future')
  return date.isoformat()


# Catalog fields: checked as --machine_price is (the field names them).
_Price = Optional[Annotated[Any, pydantic.AfterValidator(
    lambda value: ValidPrice(value, ''))]]
_Date = Annotated[Any, pydantic.AfterValidator(
    lambda value, info: ValidDate(value, '', info.context['today']))]
_Name = Annotated[str, pydantic.Field(
    pattern=r'^[A-Za-z0-9][A-Za-z0-9._\-]{0,99}$')]


class _Model(pydantic.BaseModel):
  model_config = pydantic.ConfigDict(strict=True, extra='forbid')


class _Source(_Model):
  model_config = pydantic.ConfigDict(extra='ignore')  # A reference, say.
  description: Annotated[str, pydantic.Field(pattern=r'\S')]
  date: _Date = pydantic.Field(None, validate_default=True)


class _Row(_Model):
  cloud: _Name
  region: _Name
  machine_type: _Name
  vcpus: Annotated[int, pydantic.Field(ge=1, le=4096)]
  memory_gib: Annotated[float, pydantic.Field(gt=0, le=65536)]
  source: str
  date: Optional[_Date] = None  # The source's, when not given.
  usd_per_hour: _Price = None
  usd_per_hour_spot: _Price = None
  usd_per_hour_cud_1y: _Price = None
  usd_per_hour_cud_3y: _Price = None


class _Catalog(_Model):
  format_version: int
  sources: Annotated[Dict[str, _Source], pydantic.Field(min_length=1)]
  prices: Annotated[List[_Row], pydantic.Field(min_length=1)]


class CatalogError(errors.ConfigError):
  """The price catalog is not one this pkb can price a run from."""

  def __init__(self, path: str, problem: str):
    super().__init__(
        f'the price catalog {path}: {problem}; fix it or regenerate it with '
        'scripts/refresh_prices.py.')


def CatalogRows(data: Any, today: Optional[datetime.date] = None
                ) -> List['CatalogRow']:
  """The rows of a catalog as YAML reads it, every one validated.

  Raises:
    ValueError: what is wrong, and where (one line).
  """
  if not isinstance(data, dict):
    raise ValueError('not a mapping of format_version, sources and prices')
  version = data.get('format_version')
  if isinstance(version, bool) or version not in FORMAT_VERSIONS:
    raise ValueError(
        f'format_version {str(version)[:20]!r} is not one this pkb reads '
        f'({", ".join(map(str, FORMAT_VERSIONS))})')
  try:
    catalog = _Catalog.model_validate(
        data, context={'today': today or datetime.date.today()})
  except pydantic.ValidationError as e:
    where = e.errors()[0]['loc']  # A row is found by its name, not index.
    row = data['prices'][where[1]] if where[:1] == ('prices',) and len(
        where) > 1 else None
    raise ValueError(errors.Problems(e) + (
        f' ({row.get("cloud")} {row.get("region")} {row.get("machine_type")})'
        if isinstance(row, dict) else '')) from None
  rows, seen = [], set()
  for index, row in enumerate(catalog.prices):
    where = (f'prices[{index}] ({row.cloud} {row.region} '
             f'{row.machine_type})')
    source = catalog.sources.get(row.source)
    if source is None:
      raise ValueError(f'{where}: source is {row.source[:60]!r}, not one of '
                       'the sources: listed above the prices')
    prices = tuple((basis, getattr(row, column))
                   for basis, column in BASES.items())
    if all(usd is None for _, usd in prices):
      raise ValueError(f'{where}: no price (give {", ".join(BASES.values())})')
    key = (row.cloud, row.region, row.machine_type)
    if key in seen:
      raise ValueError(f'prices[{index}]: a second row for {" ".join(key)}')
    seen.add(key)
    rows.append(CatalogRow(
        cloud=row.cloud, region=row.region, machine_type=row.machine_type,
        vcpus=row.vcpus, memory_gib=row.memory_gib,
        prices=prices,
        source=source.description, source_date=row.date or source.date))
  return rows


def RegionFromZone(cloud: str, zone: Optional[str]) -> str:
  """us-central1-a -> us-central1 (GCP); us-east-1a -> us-east-1 (AWS)."""
  if not zone:
    return DEFAULT_REGIONS.get(cloud, '')
  if cloud not in cloud_names.ZONE_SHAPES:
    return zone
  region, joiner, example = cloud_names.ZONE_SHAPES[cloud]
  match = re.fullmatch(f'({region})(?:{joiner}[a-z])?', zone)
  if not match:
    raise errors.UsageError(
        f'Zone "{zone}" is not a {cloud} zone; use e.g. {example}.')
  return match.group(1)


def _Number(text: str) -> Union[float, str]:
  """The number `text` writes (0.58, 1e-3, -1, nan), else `text` itself:
  ValidPrice then says which of number, finite and range it fails."""
  if '_' in text:  # float() reads 1_000 as 1000; a price is not written so.
    return text
  try:
    return float(text)
  except ValueError:
    return text


def ParseMachinePrices(values: Sequence[str]) -> Dict[str, float]:
  """['c7g.4xlarge=0.58'] -> {'c7g.4xlarge': 0.58} (--machine_price)."""
  prices = {}
  for value in values or ():
    for item in value.split(','):
      match = re.fullmatch(r'\s*([A-Za-z0-9.\-]+)=(\S*)\s*', item)
      try:
        if not match:
          raise ValueError('it is not TYPE=PRICE')
        price = ValidPrice(_Number(match.group(2)), 'the price')
      except ValueError as e:
        raise errors.UsageError(
            f'--machine_price="{item[:80]}": {str(e)[:120]}; give it like '
            'c7g.4xlarge=0.58 (machine type = US dollars per hour, from '
            f'{MIN_USD_PER_HOUR:g} to {MAX_USD_PER_HOUR:g}).') from None
      machine_type = match.group(1)
      if prices.get(machine_type, price) != price:
        # Which one a figure rests on would be the order of the flags.
        raise errors.UsageError(
            f'--machine_price="{item.strip()[:80]}": {machine_type} was given '
            f'{prices[machine_type]:g} already; give each type one price.')
      prices[machine_type] = price
  return prices


def _Family(machine_type: str) -> str:
  """c7g.4xlarge -> c7g; c4-standard-16(-metal) -> c4-standard."""
  if '.' in machine_type:
    return machine_type.split('.')[0]
  return '-'.join(machine_type.split('-')[:2])


def _SizeGuess(machine_type: str) -> float:
  """A vCPU count guessed from the name, to sort a family's sizes."""
  match = re.search(r'-(\d+)(?:-metal)?$', machine_type)
  if match:
    return float(match.group(1))
  size = machine_type.split('.', 1)[-1]
  match = re.fullmatch(r'(\d*)xlarge', size)
  if match:
    return 4.0 * int(match.group(1) or 1)
  return {'nano': 0.5, 'micro': 0.5, 'small': 1, 'medium': 1,
          'large': 2}.get(size, 1e6)


class PriceCatalog:
  """Looks up hourly prices by cloud, region and machine type on one basis."""

  def __init__(self, rows: Iterable[CatalogRow], basis: str = ON_DEMAND,
               user_prices: Optional[Dict[str, float]] = None,
               today: Optional[str] = None):
    self._rows: Dict[Tuple[str, str, str], CatalogRow] = {
        (r.cloud, r.region, r.machine_type): r for r in rows}
    if basis not in BASES:
      raise errors.UsageError(
          f'--price_basis="{basis}" is not one of {", ".join(BASES)}.')
    self.basis = basis
    self.user_prices = dict(user_prices or {})
    self._today = today or datetime.date.today().isoformat()

  @classmethod
  def FromYaml(cls, text: str, path: str = 'text') -> 'PriceCatalog':
    """The catalog in `text`, validated (CatalogError naming `path`)."""
    try:
      return cls(CatalogRows(ParseCatalogText(text)))
    except yaml.YAMLError as e:
      mark = getattr(e, 'problem_mark', None)
      where = f' at line {mark.line + 1}' if mark else ''
      raise CatalogError(path, f'invalid YAML{where} '
                         f'({getattr(e, "problem", None) or e})') from None
    except (ValueError, RecursionError) as e:
      raise CatalogError(path, str(e)) from None

  @classmethod
  def Load(cls, path: Optional[str] = None) -> 'PriceCatalog':
    path = path or DEFAULT_CATALOG_PATH
    try:
      data = regular_files.ReadRegular(path, MAX_CATALOG_BYTES)
    except regular_files.NotRegular as e:
      raise CatalogError(path, f'cannot be read ({e})') from None
    try:
      text = regular_files.Utf8Text(data)
    except regular_files.NotText as e:
      raise CatalogError(path, str(e)) from None
    return cls.FromYaml(text, path)

  def ForRun(self, basis: str = ON_DEMAND,
             user_prices: Optional[Dict[str, float]] = None
             ) -> 'PriceCatalog':
    """The same rows priced on `basis`, with the user's own prices first."""
    return PriceCatalog(self._rows.values(), basis, user_prices, self._today)

  def Rows(self) -> List[CatalogRow]:
    return list(self._rows.values())

  def Lookup(self, cloud: str, zone_or_region: Optional[str],
             machine_type: str) -> HourlyPrice:
    region = RegionFromZone(cloud, zone_or_region)
    row = self._rows.get((cloud, region, machine_type))
    if machine_type in self.user_prices:
      # The user's figure wins; shape and size from the catalog if it has
      # the type anywhere.
      like = row or next((r for r in self._rows.values()
                          if r.cloud == cloud and
                          r.machine_type == machine_type), None)
      return HourlyPrice(cloud, region, machine_type,
                         like.vcpus if like else 0,
                         like.memory_gib if like else 0.0,
                         self.user_prices[machine_type], USER_SOURCE,
                         self._today, self.basis)
    price = row.Price(self.basis) if row else None
    if price is not None:
      return price
    raise errors.UsageError(self._Missing(cloud, region, machine_type, row))

  def _Missing(self, cloud: str, region: str, machine_type: str,
               row: Optional[CatalogRow]) -> str:
    """One line: what is missing, the nearest rows, the flag to give one."""
    give = (f'give a price with --machine_price={machine_type}=<USD per '
            'hour>')
    if row is not None:  # Priced, but not on this basis.
      bases = [b for b, usd in row.prices if usd is not None]
      return (f'The price catalog has no {BASIS_NAMES[self.basis]} price '
              f'for {cloud} {machine_type} in {region} (its source '
              f'{row.source_date} gives {", ".join(bases)}); use '
              f'--price_basis={bases[0]} or {give}.')
    near = self.Nearest(cloud, region, machine_type)
    where = (f'nearest: {"; ".join(near)}' if near else
             f'priced {cloud} regions: '
             f'{", ".join(self.Regions(cloud)) or "none"}')
    return (f'No {cloud} price for {machine_type} in {region} in the price '
            f'catalog ({where}); {give}, or refresh configs/prices.yaml with '
            'scripts/refresh_prices.py.')

  def Regions(self, cloud: str) -> List[str]:
    return sorted({r for (c, r, _) in self._rows if c == cloud})

  def Nearest(self, cloud: str, region: str, machine_type: str,
              limit: int = 3) -> List[str]:
    """Catalog rows closest to an unpriced one, described for a person:
    the same type in other regions, else its family's nearest sizes in the
    region, else the most similar names in the region."""
    rows = [r for r in self._rows.values() if r.cloud == cloud]
    same = sorted((r for r in rows if r.machine_type == machine_type),
                  key=lambda r: r.region)
    if not same:
      here = [r for r in rows if r.region == region] or rows
      family = [r for r in here
                if _Family(r.machine_type) == _Family(machine_type)]
      if family:
        size = _SizeGuess(machine_type)
        same = sorted(family, key=lambda r: (abs(r.vcpus - size), r.vcpus,
                                             r.region))
      else:
        names = difflib.get_close_matches(
            machine_type, sorted({r.machine_type for r in here}), n=limit,
            cutoff=0.5)
        same = [next(r for r in here if r.machine_type == n) for n in names]
    described = []
    for r in same[:limit]:
      price = r.Price(self.basis) or r.Price(ON_DEMAND)
      described.append(f'{r.machine_type} in {r.region} at '
                       f'${price.usd_per_hour:.4f}/hr '
                       f'{BASIS_NAMES[price.basis]}, {price.source_date}')
    return described


def ParsePricedAs(text: str) -> Tuple[str, Optional[str], str]:
  """'GCP:n2d-standard-2@us-central1' -> ('GCP', 'us-central1', 'n2d-...')."""
  match = re.fullmatch(r'(GCP|AWS):([A-Za-z0-9.\-]+)(?:@([a-z0-9\-]+))?', text)
  if not match:
    raise errors.UsageError(
        f'--local_priced_as="{text}" must look like GCP:n2d-standard-2 or '
        'AWS:c6gn.xlarge@us-east-1.')
  return match.group(1), match.group(3), match.group(2)
