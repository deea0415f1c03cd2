"""Text the tool read, shown as text: the one label sanitiser.

A results file, a run record, a run directory, a config or a flag can hold
text that acts instead of being read: terminal control sequences (ESC ] 0 ;
title BEL sets the window title, ESC [ 2 J clears the screen, a bare CR
rewrites the line before it), matplotlib's mathtext (a machine type holding
`$...$` is parsed as math, and a bad formula stops the chart), Markdown
(links, emphasis, a `|` breaking a table; GitHub also links bare URLs and
notifies @mentions) or HTML. Every renderer of read text passes it through
the function for its medium, all of which escape controls first:
  `Printable`       one console line (pkb's error line, teardown's report,
                    compare's and recompute's messages);
  `PrintableLines`  a console report: its line breaks and tabs stay;
  `ChartText`       text matplotlib draws (labels, titles, legends);
  `MarkdownText`    a Markdown value (compare's summary);
  `HtmlText`        an HTML value before autoescaping (compare's page).
Controls and other unprintable characters show as their Python escapes
(\\x1b, \\r, \\u202e). What a program printed is split into its lines
one way first (`Lines`: at \\n and \\r\\n only).
"""

import re
from typing import List, Optional

# C0 and C1 controls and DEL as escapes (a translate table: fast on long
# text); other unprintable characters go through the slow path.
_CONTROL_ESCAPES = {i: chr(i).encode('unicode_escape').decode('ascii')
                    for i in list(range(32)) + list(range(127, 160))}
_LINES_ESCAPES = {i: e for i, e in _CONTROL_ESCAPES.items()
                  if chr(i) not in '\n\t'}


def _Escaped(text, table: dict, keep: str) -> str:
  """Unprintable characters but `keep` escaped (fast when there are none)."""
  text = str(text)
  if _Printable(text, keep):
    return text
  text = text.translate(table)
  if _Printable(text, keep):
    return text
  return ''.join(c if c.isprintable() or c in keep else
                 c.encode('unicode_escape').decode('ascii') for c in text)


def _Printable(text: str, keep: str) -> bool:
  for c in keep:
    text = text.replace(c, '')
  return text.isprintable()


def NotUtf8(text: str) -> Optional[str]:
  """Why `text` (an argument, a variable of the environment, a path) is not
  UTF-8 text, or None. Python hands bytes that do not decode (a Latin-1
  terminal's 'é') over as lone surrogates, which no results file, record
  or text config the run writes can hold: the run stopped at its first
  write ('internal error UnicodeEncodeError')."""
  try:
    text.encode('utf-8')
  except UnicodeEncodeError as e:
    return (f'not UTF-8 text (byte 0x{ord(text[e.start]) & 0xff:02x} at '
            f'offset {e.start})')
  return None


def Lines(text: Optional[str]) -> List[str]:
  """`text`'s lines (a command's output), ended at \n and \r\n only:
  str.splitlines also ends one at \r, \x1c-\x1e, \x85, \u2028 and \u2029,
  so a program's bytes and ssh_command.sh's \x1e markers split its lines."""
  return [l[:-1] if l.endswith('\r') else l for l in (text or '').split('\n')]


def Printable(text: str) -> str:
  """One line: every control or unprintable character escaped (\\x1b, \\n,
  ...), so it reaches the terminal as text, never as a sequence or a line
  break."""
  return _Escaped(text, _CONTROL_ESCAPES, '')


# What a name that is no printable text is told, after '<name>' (a flag's
# '--zone' or a config's 'vm_groups.servers.vm_spec.GCP.zone'): one wording
# for both, built here (NotPrintable).
NOT_PRINTABLE_ADVICE = 'give it without control characters'


def NotPrintable(value: str, then: str = '; ' + NOT_PRINTABLE_ADVICE) -> str:
  """The refusal of a name that is not printable text on one line, to put
  right after the name: '="us\\x1b[2J" must be printable text on one
  line; give it without control characters' (`then` ends it)."""
  return f'="{Printable(value)}" must be printable text on one line{then}'


def PrintableLines(text: str) -> str:
  """A multi-line report with everything but its line breaks and tabs
  escaped as `Printable` does."""
  return _Escaped(text, _LINES_ESCAPES, '\n\t')


# Charts wrap their labels into lines of a few dozen characters: a machine
# type of 200,000 (a hostile results file) drew some 6,000 lines, and one
# compare --report took minutes of CPU and 700 MB. Longer text is cut.
CHART_LONGEST = 300


def ChartText(text) -> str:
  """A label matplotlib draws as written: one line per line of `text`,
  controls escaped, every '$' literal (never mathtext), at most
  CHART_LONGEST characters (then its start and its length)."""
  text = PrintableLines(text)
  if len(text) > CHART_LONGEST:
    text = f'{text[:CHART_LONGEST - 60]}...({len(text):,} characters)'
  return text.replace('$', r'\$')


_MARKDOWN_ESCAPES = {'&': '&amp;', '<': '&lt;', '>': '&gt;', '|': r'\|',
                     '\\': '\\\\', '`': r'\`', '*': r'\*', '_': r'\_',
                     '[': r'\[', ']': r'\]', '~': r'\~', '#': r'\#',
                     '!': r'\!'}
# GitHub links what looks like a URL or an e-mail address and notifies an
# @mention even in plain text, and escapes do not stop it: a zero-width
# space after '@', inside '://' and after 'www' breaks the pattern while the
# text reads the same. Written as its entity, so the file stays ASCII and
# printable (compare writes it through PrintableLines).
_ZERO_WIDTH = '&#8203;'
_AUTOLINKS = (('@', f'@{_ZERO_WIDTH}'), ('://', f':{_ZERO_WIDTH}//'),
              ('www.', f'www{_ZERO_WIDTH}.'), ('WWW.', f'WWW{_ZERO_WIDTH}.'))


def MarkdownText(text) -> str:
  """A value inert in GitHub Markdown, on one line: no HTML, links (bare
  ones included), @mentions, emphasis or table breaks, controls escaped."""
  text = Printable(str(text).replace('\r\n', ' ').replace('\n', ' ')
                   .replace('\r', ' '))
  text = ''.join(_MARKDOWN_ESCAPES.get(c, c) for c in text)
  for pattern, broken in _AUTOLINKS:
    text = text.replace(pattern, broken)
  return text


def HtmlText(text) -> str:
  """A value for an HTML page, before its autoescaping: controls escaped,
  line breaks kept."""
  return PrintableLines(text)


# An error line quotes its input; a value of 300 KB (a config's flag value)
# made a 600 KB line. Past these lengths a quoted run of text is shortened.
LONGEST_WORD = 200
_LONGEST_LINE = 2000
# A long run of text without a space, less the punctuation ending it.
_LONG_WORD = re.compile(r'(\S{%d,}?)([:;,.)\]"\']*)(?=\s|$)' %
                        (LONGEST_WORD + 1))


def Abbreviated(text: str) -> str:
  """One line of bounded length: each run of more than LONGEST_WORD
  characters without a space shown as its start and its length, and a line
  still longer than _LONGEST_LINE cut in the middle (its end, which usually
  says why, is kept)."""
  text = _LONG_WORD.sub(
      lambda m: (f'{m.group(1)[:60]}...({len(m.group(1)):,} characters)'
                 f'{m.group(2)}'), text)
  if len(text) <= _LONGEST_LINE:
    return text
  head, tail = _LONGEST_LINE * 2 // 3, _LONGEST_LINE // 3
  return (f'{text[:head]} ...({len(text) - head - tail:,} characters)... '
          f'{text[-tail:]}')
