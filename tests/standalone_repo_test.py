"""The repository stands alone: no file points outside it (issue 19 point 3).

A clone has no sibling `shared` directory, so no tracked file may name one
(its data and tools, or the study notes that now live in docs/studies.md).
The patterns are put together at run time so this file does not match them.
"""

import os
import re
import subprocess

import pytest

import e2e_support

SHARED = 'shared'
FORBIDDEN = re.compile('|'.join(re.escape(p) for p in (
    '../' + SHARED, SHARED + '/tools', SHARED + '/reference',
    SHARED + '/fixtures')))
SKIP_DIRS = {'.git', '.venv', 'build', 'results', '__pycache__'}


def _TrackedFiles():
  """`git ls-files`, or every file outside SKIP_DIRS when not a checkout."""
  proc = subprocess.run(['git', 'ls-files', '-z'], cwd=e2e_support.REPO,
                        capture_output=True, check=False)
  if proc.returncode == 0 and proc.stdout:
    return [p for p in proc.stdout.decode().split('\0') if p]
  found = []
  for root, dirs, files in os.walk(e2e_support.REPO):
    dirs[:] = [d for d in dirs if d not in SKIP_DIRS]
    found += [os.path.relpath(os.path.join(root, f), e2e_support.REPO)
              for f in files]
  return found


@pytest.mark.e2e
def test_no_tracked_file_refers_to_a_shared_directory_beside_the_repo():
  files = _TrackedFiles()
  assert 'README.md' in files and len(files) > 50
  offenders = []
  for name in files:
    path = os.path.join(e2e_support.REPO, name)
    if os.path.islink(path) or not os.path.isfile(path):
      continue
    with open(path, 'rb') as f:
      text = f.read().decode(errors='replace')
    for number, line in enumerate(text.splitlines(), 1):
      if FORBIDDEN.search(line):
        offenders.append(f'{name}:{number}: {line.strip()[:100]}')
  assert not offenders, 'files pointing outside the repository:\n' + (
      '\n'.join(offenders))


def test_the_pattern_catches_each_form():
  for text in ('see ../' + SHARED + '/reference/studies.md',
               '--memtier_path=../' + SHARED + '/tools/memtier_benchmark',
               'Seeded from ' + SHARED + '/reference/prices.md'):
    assert FORBIDDEN.search(text), text
  assert not FORBIDDEN.search('docs/studies.md, shared by every preset')
