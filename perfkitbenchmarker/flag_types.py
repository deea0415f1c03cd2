"""Flag types that upstream PKB also uses, so shared flag names parse alike.

Upstream PKB defines memtier_clients, memtier_threads, memtier_pipeline as
integer lists ("1,2,4", ranges "1-4" and "1-9-2" with a step); this module
gives the harness a flag of that syntax and type name ('integer list'), so a
PKB user's `--memtier_clients=1,2,4` means the same list here.
tests/data/upstream_pkb_flags.json records upstream's definitions and
tests/upstream_flags_test.py holds ours to them.

Every number a run takes is bounded on its definition (lower_bound and
upper_bound on DEFINE_integer, DEFINE_integerlist and this module's
DEFINE_float, which also refuses nan and infinity and can exclude its lower
bound), so the flag's own parser refuses a bad value from the command line,
a config's `flags:` and a matrix axis alike (configs.ParseConfigValue).

Definitions only; `OneValue` is for options builders whose run takes one
value of such a list and refuses several in one line saying why.
"""

import math
import re
from typing import List, Optional, Sequence

from absl import flags

from perfkitbenchmarker import errors

# Flags defined through this module's DEFINE_* are filed (--helpfull's
# groups, key flags) under the module that calls them, not this one.
flags.disclaim_key_flags()

_GROUP = re.compile(r'(\d+)(?:-(\d+)(?:-(\d+))?)?')
# Most values one list may give: counted before a range is expanded, so
# '1-100000000' is refused at once instead of filling memory.
MAX_VALUES = 1000


class IntegerListParser(flags.IntegerParser):
  """'1,3,5-7' -> [1, 3, 5, 6, 7]; '1-7-3' -> [1, 4, 7]; each value within
  absl's integer bounds."""

  def __init__(self, lower_bound: Optional[int] = None,
               upper_bound: Optional[int] = None):
    super().__init__(lower_bound, upper_bound)
    self.value_help = self.syntactic_help  # e.g. 'an integer in the range..'
    self.syntactic_help = ('a comma-separated list of whole numbers or '
                           'ranges, e.g. 1,2,4 or 8-32-8')

  # What an item may be: each pattern's groups are (first, last, step).
  GROUPS = (_GROUP,)

  def _Range(self, group: str, first: int, last: int, step: int) -> range:
    """The values of the item `group`, a range from first to last."""
    if last < first or step < 1:
      raise ValueError(f'range "{group}" must run upwards with a step of '
                       'at least 1')
    return range(first, last + 1, step)

  def _Groups(self, text: str) -> List[int]:
    values = []
    for group in (item.strip() for item in text.split(',')):
      match = next(filter(None, (pattern.fullmatch(group)
                                 for pattern in self.GROUPS)), None)
      if not match:
        raise ValueError(f'"{text}" is not {self.syntactic_help}')
      first, last, step = match.groups()
      if last is None:
        values.append(int(first))
        continue
      span = self._Range(group, int(first), int(last), int(step or 1))
      # Not len(): a range past sys.maxsize has none.
      count = (span[-1] - span[0]) // span.step + 1 if span else 0
      if len(values) + count > MAX_VALUES:
        raise ValueError(f'"{text}" gives more than {MAX_VALUES} values (at '
                         f'most {MAX_VALUES} runs per flag)')
      values.extend(span)
    return values

  def parse(self, argument) -> List[int]:
    if isinstance(argument, bool):
      raise ValueError(f'{argument!r} is not {self.syntactic_help}')
    if isinstance(argument, int):
      values = [argument]
    elif isinstance(argument, (list, tuple)):
      values = []
      for item in argument:
        values.extend(self.parse(item))
    else:
      values = self._Groups(str(argument))
    if len(values) > MAX_VALUES:
      raise ValueError(f'"{argument}" gives more than {MAX_VALUES} values (at '
                       f'most {MAX_VALUES} runs per flag)')
    for value in values:
      if self.is_outside_bounds(value):
        raise ValueError(f'{value} is not {self.value_help}')
    return values

  def flag_type(self) -> str:
    return 'integer list'


class _IntegerListSerializer(flags.ArgumentSerializer):

  def serialize(self, value) -> str:
    return ','.join(str(v) for v in value)


def DEFINE_integerlist(name: str, default, help_text: str,  # pylint: disable=invalid-name
                       lower_bound: Optional[int] = None,
                       upper_bound: Optional[int] = None,
                       flag_values=flags.FLAGS,
                       parser: Optional[IntegerListParser] = None,
                       **kwargs):
  """An integer-list flag (upstream PKB's type of the same name); `parser`
  (default: one with the bounds) and `kwargs` as absl's DEFINE takes them.
  Returns its FlagHolder."""
  return flags.DEFINE(parser or IntegerListParser(lower_bound, upper_bound),
                      name, default, help_text, flag_values,
                      _IntegerListSerializer(), **kwargs)


class FiniteFloatParser(flags.FloatParser):
  """absl's float parser without nan or infinity; `above` excludes the lower
  bound itself (a timeout or a share of 0 means nothing)."""

  def __init__(self, lower_bound: float, upper_bound: float,
               above: bool = False):
    super().__init__(lower_bound, upper_bound)
    self.above = above
    if above:
      self.syntactic_help = (f'a number above {lower_bound:g} and at most '
                             f'{upper_bound:g}')

  def convert(self, argument) -> float:
    value = super().convert(argument)
    if not math.isfinite(value):
      raise ValueError(f'{argument} is not a finite number')
    return value

  def is_outside_bounds(self, val: float) -> bool:
    return (super().is_outside_bounds(val) or
            (self.above and val == self.lower_bound))


def DEFINE_float(name: str, default: Optional[float], help_text: str,  # pylint: disable=invalid-name
                 lower_bound: float, upper_bound: float, above: bool = False,
                 flag_values=flags.FLAGS) -> None:
  """absl's float flag, finite and within its bounds (module doc)."""
  flags.DEFINE(FiniteFloatParser(lower_bound, upper_bound, above), name,
               default, help_text, flag_values, flags.ArgumentSerializer())


def OneValue(values: Optional[Sequence[int]], flag: str,
             why: str) -> Optional[int]:
  """The single value of an integer-list flag; several are refused (`why`)."""
  if values is None:
    return None
  values = list(values)
  if len(values) != 1:
    raise errors.UsageError(
        f'--{flag}={",".join(map(str, values))}: give one value; {why}')
  return values[0]
