"""Regular-expression helpers with upstream PKB's names, for modules that
parse a tool's output with them (ExtractFloat, ExtractGroup, ...).

Each refuses text that does not match with NoMatchError (a ValueError, as
upstream's) naming the pattern, so a parser never carries on with None.
"""

import re
from typing import Any, Dict, List, Pattern, Union

FLOAT_REGEX = r'[-+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?'
_Regex = Union[str, Pattern[str]]


class NoMatchError(ValueError):
  """The text does not match the pattern."""


class TooManyMatchesError(ValueError):
  """The text matches the pattern more than once where one was expected."""


def _Shown(text: str) -> str:
  return text if len(text) <= 200 else f'{text[:200]}...'


def ExtractGroup(regex: _Regex, text: str, group: Union[int, str] = 1,
                 flags: int = 0) -> str:
  """Group `group` of the first match of `regex` in `text`."""
  match = re.search(regex, text, flags=flags)
  if match is None:
    pattern = getattr(regex, 'pattern', regex)
    raise NoMatchError(f'No match for pattern "{pattern}" in "{_Shown(text)}"')
  try:
    return match.group(group)
  except IndexError:
    raise IndexError(f'No group {group} in "{regex}".') from None


def ExtractFloat(regex: _Regex, text: str, group: Union[int, str] = 1,
                 flags: int = 0) -> float:
  return float(ExtractGroup(regex, text, group=group, flags=flags))


def ExtractInt(regex: _Regex, text: str, group: Union[int, str] = 1) -> int:
  return int(ExtractGroup(regex, text, group=group))


def ExtractAllMatches(regex: _Regex, text: str, flags: int = 0) -> List[Any]:
  """Every match, as re.findall gives them (strings, or tuples of groups
  when the pattern has several); NoMatchError when there is none."""
  matches = re.findall(regex, text, flags=flags)
  if not matches:
    pattern = getattr(regex, 'pattern', regex)
    raise NoMatchError(f'No match for pattern "{pattern}" in "{_Shown(text)}"')
  return matches


def ExtractExactlyOneMatch(regex: _Regex, text: str) -> Any:
  matches = ExtractAllMatches(regex, text)
  if len(matches) > 1:
    raise TooManyMatchesError(f'Pattern "{regex}" matches {len(matches)} '
                              f'times in "{_Shown(text)}"; one expected.')
  return matches[0]


def ExtractAllFloatMetrics(text: str, metric_regex: str = r'\w+',
                           value_regex: str = FLOAT_REGEX,
                           delimiter_regex: str = '=') -> Dict[str, float]:
  """{metric: value} of every `<metric><delimiter><value>` in the text.

  As upstream PKB's, a metric pattern with any '(' is refused (a
  non-capturing group or an escaped parenthesis too: upstream's checks
  the text, and a pattern it refuses ran here)."""
  if '(' in metric_regex:
    raise NotImplementedError(
        'ExtractAllFloatMetrics does not support a metric regex with groups.')
  matches = re.findall(f'({metric_regex}){delimiter_regex}({value_regex})',
                       text)
  return {match[0]: float(match[1]) for match in matches}


def Substitute(pattern: _Regex, repl: str, text: str) -> str:
  """re.sub, refusing text the pattern does not match (NoMatchError)."""
  if not re.search(pattern, text):
    raise NoMatchError(f'No match for pattern "{pattern}" in "{_Shown(text)}"')
  return re.sub(pattern, repl, text)
