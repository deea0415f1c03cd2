"""Text the tool read, made safe to print: no terminal escape sequences.

A results file, a run record, a config or a flag can hold terminal control
sequences (ESC ] 0 ; title BEL sets the window title, ESC [ 2 J clears the
screen, a bare CR rewrites the line before it); printed raw, they act on the
operator's terminal instead of being read. Every printer of read text
(pkb's error line, teardown's report, compare's console, Markdown and HTML
output) passes it through `Printable` (one line) or `PrintableLines` (a
report: its line breaks and tabs stay), which show each control or other
unprintable character as its Python escape (\\x1b, \\r, \\u202e).
"""

# C0 and C1 controls and DEL as escapes (a translate table: fast on long
# text); other unprintable characters go through the slow path.
_CONTROL_ESCAPES = {i: chr(i).encode('unicode_escape').decode('ascii')
                    for i in list(range(32)) + list(range(127, 160))}
_LINES_ESCAPES = {i: e for i, e in _CONTROL_ESCAPES.items()
                  if chr(i) not in '\n\t'}


def _Escaped(text: str, table: dict, keep: str) -> str:
  text = text.translate(table)
  if _Printable(text, keep):
    return text
  return ''.join(c if c.isprintable() or c in keep else
                 c.encode('unicode_escape').decode('ascii') for c in text)


def _Printable(text: str, keep: str) -> bool:
  for c in keep:
    text = text.replace(c, '')
  return text.isprintable()


def Printable(text: str) -> str:
  """One line: every control or unprintable character escaped (\\x1b, \\n,
  ...), so it reaches the terminal as text, never as a sequence or a line
  break."""
  text = str(text)
  if text.isprintable():
    return text
  return _Escaped(text, _CONTROL_ESCAPES, '')


def PrintableLines(text: str) -> str:
  """A multi-line report with everything but its line breaks and tabs
  escaped as `Printable` does."""
  text = str(text)
  if _Printable(text, '\n\t'):
    return text
  return _Escaped(text, _LINES_ESCAPES, '\n\t')
