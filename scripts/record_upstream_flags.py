#!/usr/bin/env python3
"""Records upstream PKB's flag definitions for the names this harness shares.

Run it with upstream's Python (its virtualenv, its requirements installed)
from an upstream PerfKitBenchmarker checkout; it imports upstream's pkb and
every benchmark module (as upstream's ./pkb.py does at start-up), reads each
flag's name, type and default from absl, and rewrites
tests/data/upstream_pkb_flags.json with the shared names and every upstream
flag name (so a later clash is caught). Our own names come from
`./pkb.py --helpfull`'s flag registry, read in a child process with the
harness's virtualenv.

  cd /path/to/PerfKitBenchmarker
  /path/to/upstream-venv/bin/python /path/to/harness/scripts/record_upstream_flags.py

tests/upstream_flags_test.py holds our definitions to the file.
"""

import json
import os
import subprocess
import sys

HARNESS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(HARNESS, 'tests', 'data', 'upstream_pkb_flags.json')

_OURS = """
import json, sys
sys.argv = ['pkb']
from perfkitbenchmarker import pkb
from absl import flags
F = flags.FLAGS
print(json.dumps(sorted(
    n for n, f in F._flags().items()
    if n == f.name and not (F.find_module_defining_flag(n) or '').startswith(
        'absl'))))
"""


def _Jsonable(value):
  if value is None or isinstance(value, (bool, int, float, str)):
    return value
  try:
    return [_Jsonable(v) for v in value]
  except TypeError:
    return str(value)


def main() -> int:
  upstream = os.getcwd()
  if not os.path.exists(os.path.join(upstream, 'perfkitbenchmarker',
                                     'benchmark_sets.py')):
    print('record_upstream_flags: run it from an upstream PerfKitBenchmarker '
          'checkout.', file=sys.stderr)
    return 2
  sys.path.insert(0, upstream)
  sys.argv = ['pkb']
  try:
    from absl import flags  # pylint: disable=g-import-not-at-top
    from perfkitbenchmarker import benchmark_sets  # pylint: disable=g-import-not-at-top,unused-import
    from perfkitbenchmarker import pkb  # pylint: disable=g-import-not-at-top,unused-import
  except ImportError as e:  # A python without upstream's requirements.
    print(f'record_upstream_flags: upstream\'s pkb does not import with '
          f'{sys.executable} ({e}); run it with the python of upstream\'s '
          'virtualenv, its requirements installed.', file=sys.stderr)
    return 2
  commit = subprocess.run(['git', 'rev-parse', 'HEAD'], cwd=upstream,
                          capture_output=True, text=True,
                          check=True).stdout.strip()
  registry = flags.FLAGS
  theirs = {n: f for n, f in registry._flags().items() if n == f.name}  # pylint: disable=protected-access
  ours = json.loads(subprocess.run(
      [os.path.join(HARNESS, '.venv', 'bin', 'python'), '-c', _OURS],
      cwd=HARNESS, capture_output=True, text=True, check=True).stdout)
  shared = {}
  for name in sorted(set(ours) & set(theirs)):
    flag = theirs[name]
    shared[name] = {
        'type': flag.flag_type(),
        'default': _Jsonable(flag.default),
        'module': registry.find_module_defining_flag(name),
    }
  data = {
      'upstream': 'GoogleCloudPlatform/PerfKitBenchmarker',
      'upstream_commit': commit,
      'recorded_with': 'scripts/record_upstream_flags.py (absl flag registry '
                       'after importing upstream pkb and every benchmark)',
      'note': 'owner\'s upstream default is the user running pkb, evaluated '
              'when the flag is defined (recorded as that user).',
      'shared': shared,
      'all_upstream_names': sorted(theirs),
  }
  with open(OUT, 'w') as f:
    json.dump(data, f, indent=1, sort_keys=False)
    f.write('\n')
  print(f'{len(shared)} shared flag names of {len(theirs)} upstream ones '
        f'at {commit[:8]} -> {OUT}')
  return 0


if __name__ == '__main__':
  sys.exit(main())
