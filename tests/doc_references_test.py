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


# A file path in backticks: two or more parts, a file's extension.
_FILE_PATH = re.compile(
    r'`([A-Za-z0-9_.-]+(?:/[A-Za-z0-9_.-]+)+\.(?:py|sh|yaml|yml|json|md|j2))`')


def _RepoFiles():
  for directory, dirs, files in os.walk(REPO):
    dirs[:] = [d for d in dirs if d not in (
        '.git', '.venv', 'build', 'results', '__pycache__')]
    for name in files:
      yield os.path.relpath(os.path.join(directory, name), REPO)


def test_every_file_a_doc_names_by_its_path_exists():
  # docs/compare.md named `results_history/synthetic.py` after it moved to
  # tests/synthetic_history.py.
  files = set(_RepoFiles())
  missing = []
  for doc in ['README.md'] + sorted(
      os.path.join('docs', n) for n in os.listdir(os.path.join(REPO, 'docs'))
      if n.endswith('.md')):
    with open(os.path.join(REPO, doc), encoding='utf-8') as f:
      named = {p[2:] if p.startswith('./') else p
             for p in _FILE_PATH.findall(f.read())}
    missing += [f'{doc}: {path}' for path in sorted(named)
                if not any(f == path or f.endswith('/' + path) for f in files)]
  assert not missing
