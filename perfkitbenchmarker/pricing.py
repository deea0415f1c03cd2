"""The price catalog: hourly prices as reviewed data with a source and a date.

Prices live in configs/prices.yaml, keyed by (cloud, region, machine type), and
are joined to VMs by machine type. Extension seam: scripts/refresh_prices.py
regenerates the file from the providers' price APIs; a new cloud only needs
entries and a `RegionFromZone` rule.
"""

import dataclasses
import os
import re
from typing import Dict, Iterable, Optional, Tuple

import yaml

from perfkitbenchmarker import errors

# An installed package carries the build's copy of configs/prices.yaml
# (setup.py); a checkout reads configs/prices.yaml, the one source of truth.
_PACKAGED_CATALOG_PATH = os.path.join(
    os.path.dirname(os.path.abspath(__file__)), 'data', 'prices.yaml')
_REPO_CATALOG_PATH = os.path.join(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'configs',
    'prices.yaml')
DEFAULT_CATALOG_PATH = (_PACKAGED_CATALOG_PATH
                        if os.path.exists(_PACKAGED_CATALOG_PATH) else
                        _REPO_CATALOG_PATH)
DEFAULT_REGIONS = {'GCP': 'us-central1', 'AWS': 'us-east-1'}


@dataclasses.dataclass(frozen=True)
class HourlyPrice:
  cloud: str
  region: str
  machine_type: str
  vcpus: int
  memory_gib: float
  usd_per_hour: float
  source: str
  source_date: str

  def Metadata(self, prefix: str = '') -> Dict[str, object]:
    return {
        f'{prefix}machine_type': self.machine_type,
        f'{prefix}price_usd_per_hour': self.usd_per_hour,
        f'{prefix}price_cloud': self.cloud,
        f'{prefix}price_region': self.region,
        f'{prefix}price_source': self.source,
        f'{prefix}price_date': self.source_date,
    }


def RegionFromZone(cloud: str, zone: Optional[str]) -> str:
  """us-central1-a -> us-central1 (GCP); us-east-1a -> us-east-1 (AWS)."""
  if not zone:
    return DEFAULT_REGIONS.get(cloud, '')
  if cloud == 'GCP':
    match = re.fullmatch(r'([a-z]+-[a-z]+\d+)(-[a-z])?', zone)
  elif cloud == 'AWS':
    match = re.fullmatch(r'([a-z]+-(?:gov-)?[a-z]+-\d+)([a-z])?', zone)
  else:
    return zone
  if not match:
    raise errors.UsageError(
        f'Zone "{zone}" is not a {cloud} zone; use e.g. '
        f'{"us-central1-a" if cloud == "GCP" else "us-east-1a"}.')
  return match.group(1)


class PriceCatalog:
  """Looks up hourly prices by cloud, region and machine type."""

  def __init__(self, prices: Iterable[HourlyPrice]):
    self._prices: Dict[Tuple[str, str, str], HourlyPrice] = {
        (p.cloud, p.region, p.machine_type): p for p in prices}

  @classmethod
  def FromYaml(cls, text: str) -> 'PriceCatalog':
    data = yaml.safe_load(text) or {}
    sources = data.get('sources', {})
    prices = []
    for row in data.get('prices', []):
      source = sources.get(row['source'], {})
      prices.append(HourlyPrice(
          cloud=row['cloud'], region=row['region'],
          machine_type=row['machine_type'], vcpus=int(row['vcpus']),
          memory_gib=float(row['memory_gib']),
          usd_per_hour=float(row['usd_per_hour']),
          source=source.get('description', row['source']),
          source_date=str(source.get('date', 'unknown'))))
    return cls(prices)

  @classmethod
  def Load(cls, path: str = DEFAULT_CATALOG_PATH) -> 'PriceCatalog':
    with open(path) as f:
      return cls.FromYaml(f.read())

  def Lookup(self, cloud: str, zone_or_region: Optional[str],
             machine_type: str) -> HourlyPrice:
    region = RegionFromZone(cloud, zone_or_region)
    price = self._prices.get((cloud, region, machine_type))
    if price is not None:
      return price
    known = sorted(mt for (c, r, mt) in self._prices
                   if c == cloud and r == region)
    if known:
      raise errors.UsageError(
          f'Machine type "{machine_type}" is not in the price catalog for '
          f'{cloud} {region}; choose one of {", ".join(known)} or add it to '
          'configs/prices.yaml with scripts/refresh_prices.py.')
    regions = sorted({r for (c, r, _) in self._prices if c == cloud})
    raise errors.UsageError(
        f'The price catalog has no {cloud} prices for region "{region}"; '
        f'priced regions: {", ".join(regions) or "none"}.')


def ParsePricedAs(text: str) -> Tuple[str, Optional[str], str]:
  """'GCP:n2d-standard-2@us-central1' -> ('GCP', 'us-central1', 'n2d-...')."""
  match = re.fullmatch(r'(GCP|AWS):([A-Za-z0-9.\-]+)(?:@([a-z0-9\-]+))?', text)
  if not match:
    raise errors.UsageError(
        f'--local_priced_as="{text}" must look like GCP:n2d-standard-2 or '
        'AWS:c6gn.xlarge@us-east-1.')
  return match.group(1), match.group(3), match.group(2)
