#!/usr/bin/env python3
"""tests/durations.json: the seconds each test file took in a whole suite.

  ./scripts/suite_durations.py JUNIT.xml      # from a whole-suite report

The file orders the work pytest-xdist hands out (tests/conftest.py: the
longest files start first). It is written here, in one format, from either
of two sources: the suite itself (PKB_RECORD_DURATIONS=1 ./scripts/test.sh,
through conftest's `pytest_sessionfinish`) or a JUnit report of a whole
suite that passed, e.g. one the flake hunt's runs write
(scripts/flake_hunt.py), so a timing run of its own is not needed. A file's
seconds are the sum over its tests of set-up, call and tear-down, as
conftest counts them (pytest's JUnit `time` is that same sum).

A report with a failed test, or without every test file of this checkout
(a part of the suite: too few seconds), is refused in one line (exit 1).
"""

import collections
import glob
import json
import os
import sys
import xml.etree.ElementTree as ElementTree
from typing import Dict, Mapping

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DURATIONS = os.path.join(REPO, 'tests', 'durations.json')


class ReportError(Exception):
  """The report cannot give every test file's seconds."""


def Write(seconds: Mapping[str, float], path: str = DURATIONS) -> None:
  """`seconds` (test file relative to the checkout -> seconds), to 0.1 s,
  sorted by file, one a line."""
  with open(path, 'w') as f:
    json.dump({k: round(v, 1) for k, v in sorted(seconds.items())}, f,
              indent=1)
    f.write('\n')


def _FileOf(classname: str, repo: str) -> str:
  """`tests.x_test` or `tests.x_test.SomeClass` -> `tests/x_test.py`: the
  longest dotted prefix that is a file of the checkout."""
  parts = classname.split('.')
  for end in range(len(parts), 0, -1):
    path = '/'.join(parts[:end]) + '.py'
    if os.path.isfile(os.path.join(repo, path)):
      return path
  raise ReportError(f'test class {classname!r} names no file of {repo}')


def FromJunit(report: str, repo: str = REPO) -> Dict[str, float]:
  """Each test file's seconds in a JUnit report of a passing whole suite.

  Raises:
    ReportError: unreadable, a test failed, or a test file is missing.
  """
  try:
    cases = list(ElementTree.parse(report).iter('testcase'))
  except (OSError, ElementTree.ParseError) as e:
    raise ReportError(f'cannot read {report}: {e}') from e
  seconds = collections.Counter()
  for case in cases:
    if case.find('failure') is not None or case.find('error') is not None:
      raise ReportError(
          f'{report}: {case.get("classname")}::{case.get("name")} failed; '
          'only a passing whole suite gives a file its seconds')
    # A module skipped whole is one case, its dotted path as the name.
    where = case.get('classname') or case.get('name', '')
    seconds[_FileOf(where, repo)] += float(
        case.get('time') or 0.0)
  everything = {os.path.relpath(p, repo) for p in
                glob.glob(os.path.join(repo, 'tests', '*_test.py'))}
  missing = sorted(everything - set(seconds))
  if missing:
    raise ReportError(
        f'{report} has no test of {len(missing)} test file(s) '
        f'({", ".join(missing[:3])}{", ..." if len(missing) > 3 else ""}): '
        'not a whole-suite run of this checkout')
  return dict(seconds)


def main(argv) -> int:
  if len(argv) != 2 or argv[1].startswith('-'):
    print(f'usage: {argv[0]} JUNIT.xml (a passing whole-suite report)',
          file=sys.stderr)
    return 2
  try:
    seconds = FromJunit(argv[1])
  except ReportError as e:
    print(f'suite_durations: {e}', file=sys.stderr)
    return 1
  Write(seconds)
  print(f'{os.path.relpath(DURATIONS)}: {len(seconds)} files, '
        f'{sum(seconds.values()):.0f} s in all')
  return 0


if __name__ == '__main__':
  sys.exit(main(sys.argv))
