"""redis.conf lines read the way redis-server reads them.

redis-server splits each config line into arguments with its own rules
(sds.c `sdssplitargs`): arguments are separated by blanks; "double quotes"
take backslash escapes (\\n, \\r, \\t, \\b, \\a, \\xHH, and \\ before any
other character stands for it); 'single quotes' take only \\'; a quote may
start in the middle of an argument (po"rt" is port); a closing quote must be
followed by a blank or the end of the line, and an unclosed quote makes the
line invalid. The directive, the first argument, is matched without regard
to case. `SplitArgs` applies those rules, so a check of a user's line sees
the directive redis-server would act on, whatever the quoting.

Pure: strings in, arguments out.
"""

from typing import List, Optional

_BLANKS = ' \n\r\t\f\v\0'
_ESCAPES = {'n': '\n', 'r': '\r', 't': '\t', 'b': '\b', 'a': '\a'}
_HEX = '0123456789abcdefABCDEF'


def SplitArgs(line: str) -> Optional[List[str]]:
  """The arguments of one config line, or None where redis-server would
  refuse it (unbalanced quotes, a quote closed in mid-argument)."""
  args: List[str] = []
  i, n = 0, len(line)
  while True:
    while i < n and line[i] in _BLANKS:
      i += 1
    if i >= n:
      return args
    current: List[str] = []
    in_double = in_single = False
    while True:
      if in_double:
        if i >= n:
          return None
        c = line[i]
        if (c == '\\' and i + 3 < n and line[i + 1] == 'x' and
            line[i + 2] in _HEX and line[i + 3] in _HEX):
          current.append(chr(int(line[i + 2:i + 4], 16)))
          i += 3
        elif c == '\\' and i + 1 < n:
          i += 1
          current.append(_ESCAPES.get(line[i], line[i]))
        elif c == '"':
          if i + 1 < n and line[i + 1] not in _BLANKS:
            return None
          in_double = False
          i += 1
          break
        else:
          current.append(c)
      elif in_single:
        if i >= n:
          return None
        c = line[i]
        if c == '\\' and i + 1 < n and line[i + 1] == "'":
          i += 1
          current.append("'")
        elif c == "'":
          if i + 1 < n and line[i + 1] not in _BLANKS:
            return None
          in_single = False
          i += 1
          break
        else:
          current.append(c)
      else:
        if i >= n or line[i] in _BLANKS:
          break
        c = line[i]
        if c == '"':
          in_double = True
        elif c == "'":
          in_single = True
        else:
          current.append(c)
      i += 1
    args.append(''.join(current))


def Directive(line: str) -> Optional[str]:
  """The directive redis-server takes from `line` (lowercase), '' for a
  blank or comment line, None for a line it refuses."""
  stripped = line.strip(' \t\r\n')
  if not stripped or stripped.startswith('#'):
    return ''
  args = SplitArgs(stripped)
  if args is None:
    return None
  return args[0].lower() if args else ''
