"""A section a message or doc sends the reader to exists.

Help texts, error lines, module docs and the docs themselves point to
sections by name (`README: "Verdicts"`, `docs/search.md, "What a probe
costs"`); each such name must be a heading of that file.
"""

import os
import re

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_REFERENCE = re.compile(r'(README|docs/[a-z_]+\.md)(?:[:,]| says)? "([^"\n]+)"')


def _Sources():
  for top in ('perfkitbenchmarker', 'scripts', 'pkb_plugin', 'docs'):
    for directory, _, files in os.walk(os.path.join(REPO, top)):
      for name in files:
        if name.endswith(('.py', '.md', '.sh')):
          yield os.path.join(directory, name)
  yield os.path.join(REPO, 'README.md')
  yield os.path.join(REPO, 'pkb.py')


def _Headings(doc: str):
  """A file's section names: its headings and its bold paragraph leads
  (`**Why the quota's period is 2 ms, and what it costs.**`)."""
  with open(os.path.join(REPO, doc), encoding='utf-8') as f:
    text = f.read()
  names = {line.lstrip('#').strip() for line in text.splitlines()
           if line.startswith('#')}
  names.update(m.strip() for m in re.findall(r'\*\*([^*]+)\*\*', text))
  return names


def test_every_section_named_is_a_heading_of_its_file():
  # scripts/flake_hunt.py sent the reader to README: "Run the tests",
  # which README has no section of.
  headings = {}
  missing = []
  for path in _Sources():
    with open(path, encoding='utf-8') as f:
      # A comment's lines joined without their '#'s.
      text = ' '.join(re.sub(r'^\s*#', '', line) for line in f).split()
    text = ' '.join(text)
    for doc, section in _REFERENCE.findall(text):
      doc = 'README.md' if doc == 'README' else doc
      if doc not in headings:
        headings[doc] = _Headings(doc)
      if not any(h.startswith(section) for h in headings[doc]):
        missing.append(f'{os.path.relpath(path, REPO)}: {doc} "{section}"')
  assert not missing
