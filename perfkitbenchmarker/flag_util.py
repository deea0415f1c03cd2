"""Flag helpers with upstream PKB's names, for benchmark modules that define
their flags with them.

The integer list is flag_types' with upstream's syntax added (colon groups
for negative numbers, '-3:4:2', and ranges running downwards, '8-1', which
the harness's own lists refuse); its value is a plain list of ints, which a
module iterates, indexes and measures as it does upstream's IntegerList.
DEFINE_integerlist, IntegerListParser and IntegerList take upstream's
arguments (a default of IntegerList([1]),
on_nonincreasing=IntegerListParser.WARN: upstream's fio flags), so a module
defining its flags so loads unchanged.
"""

import logging
import re
from typing import Any, Dict, Iterable, List, Optional

from absl import flags
import yaml

from perfkitbenchmarker import flag_types


# Upstream's two forms of a group: '5', '8-12', '8-24-2'; and with colons,
# which take negative numbers: '-3', '-3:4', '-3:4:2'.
_DASH_GROUP = re.compile(r'(\d+)(?:-(\d+)(?:-(\d+))?)?')
_COLON_GROUP = re.compile(r'(-?\d+)(?::(-?\d+)(?::(-?\d+))?)?')


class IntegerListParser(flag_types.IntegerListParser):
  """flag_types' integer list with upstream's constructor and syntax:
  colon groups for negative numbers ('-3:4:2'), and a range may run
  downwards ('8-1' is 8 to 1); on_nonincreasing None (any order), WARN (a
  list whose value is not above the one before is logged) or EXCEPTION
  (refused, ValueError)."""

  WARN = 'warn'
  EXCEPTION = 'exception'

  def __init__(self, on_nonincreasing: Optional[str] = None):
    super().__init__()
    self.on_nonincreasing = on_nonincreasing
    self.syntactic_help = ('a comma-separated list of integers or integer '
                           'ranges, e.g. -1,3,5:7 or 8-32-8')

  GROUPS = (_DASH_GROUP, _COLON_GROUP)

  def _Range(self, group: str, first: int, last: int, step: int) -> range:
    if step == 0:
      raise ValueError(f'range "{group}" has a step of 0')
    # Upstream's: a step runs the way from the first value to the last.
    step = -abs(step) if last < first else abs(step)
    return range(first, last + (1 if step > 0 else -1), step)

  def parse(self, argument: Any) -> List[int]:
    values = super().parse(argument)
    # Text only, as upstream's: a list or an IntegerList passes as given.
    if isinstance(argument, str) and self.on_nonincreasing and any(
        later <= earlier for earlier, later in zip(values, values[1:])):
      message = f'Integer list {argument} is not increasing'
      if self.on_nonincreasing == self.EXCEPTION:
        raise ValueError(message)
      logging.warning(message)
    return values


def IntegerList(groups: Iterable[Any]) -> List[int]:
  """Upstream's IntegerList(groups) as the plain list of its values: each
  group an int or a (low, high) or (low, high, step) range, high
  included."""
  values = []
  for group in groups:
    if not isinstance(group, tuple):
      values.append(int(group))
      continue
    low, high, step = (tuple(group) + (1,))[:3]
    values.extend(range(low, high + (1 if step > 0 else -1), step))
  return values


def DEFINE_integerlist(name: str, default: Any, help: str,  # pylint: disable=redefined-builtin,invalid-name
                       on_nonincreasing: Optional[str] = None,
                       flag_values=flags.FLAGS, **kwargs) -> Any:
  """An integer-list flag, with upstream's arguments; returns its
  FlagHolder."""
  return flag_types.DEFINE_integerlist(
      name, default, help, flag_values=flag_values,
      parser=IntegerListParser(on_nonincreasing), **kwargs)


# Sizes in bytes, as upstream's units parse them: decimal prefixes are
# powers of 1000, the binary ones (KiB, MiB, ...) powers of 1024. A byte
# is 'B' only: upstream's 'b' is no byte (pint's barn, so '10Mb' is no
# size there), and a reader of '10Mb' may well mean megabits.
_SIZE = re.compile(r'\s*(\d+(?:\.\d*)?|\.\d+)\s*([kKMGTP]i?)?B?\s*')
_FACTORS = {None: 1, 'k': 10**3, 'K': 10**3, 'M': 10**6, 'G': 10**9,
            'T': 10**12, 'P': 10**15, 'ki': 2**10, 'Ki': 2**10,
            'Mi': 2**20, 'Gi': 2**30, 'Ti': 2**40, 'Pi': 2**50}


def StringToBytes(string: str) -> int:
  """'10MiB' -> 10485760, '1.5KB' -> 1500; ValueError for anything else
  (not a size, or not a whole number of bytes)."""
  match = _SIZE.fullmatch(str(string))
  if not match:
    raise ValueError(f"Couldn't parse size {string}")
  number = float(match.group(1)) * _FACTORS[match.group(2)]
  if number != int(number):
    raise ValueError(f'Size {string} has a non-integer number ({number}) of '
                     'bytes!')
  return int(number)


def ParseKeyValuePairs(strings: Iterable[str]) -> Dict[str, str]:
  """['k1:v1', 'k2:v2,k3:v3'] -> {'k1': 'v1', 'k2': 'v2', 'k3': 'v3'}; an
  item without ':' is logged and skipped, as upstream does."""
  pairs = {}
  for pair in (item for text in strings for item in text.split(',')):
    key, sep, value = pair.partition(':')
    if not sep:
      logging.error('Bad key value pair format. Skipping "%s".', pair)
      continue
    pairs[key] = value
  return pairs


class YAMLParser(flags.ArgumentParser):
  """A flag whose text is YAML (safe_load); a parsed value passes as is."""

  syntactic_help = 'a YAML expression'

  def parse(self, argument: Any) -> Any:
    if not isinstance(argument, str):
      return argument
    try:
      return yaml.safe_load(argument)
    except yaml.YAMLError as e:
      raise ValueError(f'Invalid YAML: {e}') from None

  def flag_type(self) -> str:
    return 'yaml'


class _YAMLSerializer(flags.ArgumentSerializer):

  def serialize(self, value: Any) -> str:
    return yaml.safe_dump(value, default_flow_style=True).strip()


def DEFINE_yaml(name: str, default: Any, help: str,  # pylint: disable=redefined-builtin,invalid-name
                flag_values=flags.FLAGS, **kwargs) -> Any:
  """A flag holding a YAML value; returns its FlagHolder."""
  return flags.DEFINE(YAMLParser(), name, default, help, flag_values,
                      _YAMLSerializer(), **kwargs)


def IsGiven(flag_values, name: str) -> bool:
  """Whether flag `name` was given a value: on the command line (`present`),
  or by a config's `flags:` section, which sets the value only
  (configs.ApplyConfigFlags), so one set away from its default (and not
  empty). The one test of it: refusals (input_checks.GivenFlag) and the
  options builders alike."""
  state = flag_values[name]
  if state.present:
    return True
  return not (state.value == state.default or state.value in (None, '', []))


def GivenEmpty(flag_values, names: Iterable[str]) -> Optional[str]:
  """The first of flags `names` given on the command line with an empty
  value, or None: a shell variable not set, not a choice of the default,
  which every refusal of one (pkb's, compare's) takes it for."""
  return next((name for name in names if flag_values[name].present and
               not flag_values[name].value), None)
