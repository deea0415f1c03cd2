#!/usr/bin/env python3
"""Measures compare.py's peak memory and time on large histories.

  ./scripts/bench_compare_memory.py [--rows=1000000] [--workdir=DIR]

Writes copies of the real runs in tests/data/history as one PKB JSON-lines
file of about --rows samples and one of a tenth as many
(synthetic.WriteRepeatedRuns: real lines, new run_uri/sample_uri/timestamps,
runs an hour apart), runs `scripts/compare.py FILE` on each in a child
process, and prints each child's peak resident memory (ru_maxrss) and wall
time, side by side, then the memory each extra 100,000 samples cost. The
last line is: rows=<n> peak_mb=<...> seconds=<...> mb_per_100k_rows=<...>.
The files are large (about 1.9 KB a sample); --workdir defaults to a
temporary directory that is removed afterwards.
"""

import os
import shutil
import subprocess
import sys
import tempfile
import time

_HERE = os.path.dirname(os.path.abspath(__file__))
_REPO = os.path.dirname(_HERE)
sys.path.insert(0, _REPO)
from perfkitbenchmarker import venv_reexec  # pylint: disable=g-import-not-at-top
venv_reexec.UseRepoVenv(_REPO, __file__)

# pylint: disable=g-import-not-at-top,wrong-import-position
from absl import app
from absl import flags

sys.path.insert(0, os.path.join(_REPO, 'tests'))  # Synthetic histories.
import synthetic_history as synthetic

flags.DEFINE_integer('rows', 1000000, 'Samples in the large history.',
                     lower_bound=1000, upper_bound=20000000)
flags.DEFINE_string('workdir', None, 'Where the history files go (default: '
                    'a temporary directory, removed afterwards).')
FLAGS = flags.FLAGS
HISTORY = os.path.join(_REPO, 'tests', 'data', 'history')
COMPARE = os.path.join(_REPO, 'scripts', 'compare.py')
SAMPLES_PER_RUN = 23  # about, over the template runs


def _Measure(path: str):
  """(peak RSS in MB, seconds, exit code) of compare.py on one file."""
  start = time.monotonic()
  with open(os.devnull, 'w') as devnull:
    child = subprocess.Popen([sys.executable, COMPARE, path], stdout=devnull,
                             stderr=subprocess.PIPE)
    _, status, usage = os.wait4(child.pid, 0)
  seconds = time.monotonic() - start
  child.returncode = os.waitstatus_to_exitcode(status)
  error = child.stderr.read().decode(errors='replace').strip()
  child.stderr.close()
  if child.returncode != 0:
    raise SystemExit(f'compare.py exited {child.returncode}: {error}')
  return usage.ru_maxrss / 1024.0, seconds


def main(argv):
  del argv
  workdir = FLAGS.workdir or tempfile.mkdtemp(prefix='bench-compare-')
  try:
    results = []
    for rows in (FLAGS.rows // 10, FLAGS.rows):
      path = os.path.join(workdir, f'history-{rows}.json')
      written = synthetic.WriteRepeatedRuns(
          HISTORY, path, max(1, rows // SAMPLES_PER_RUN))
      peak_mb, seconds = _Measure(path)
      os.remove(path)
      results.append((written, peak_mb, seconds))
      print(f'{written:>10,} samples: peak {peak_mb:,.0f} MB, '
            f'{seconds:,.1f} s', flush=True)
    (small, small_mb, _), (large, large_mb, large_s) = results
    slope = (large_mb - small_mb) / (large - small) * 100000
    print(f'rows={large} peak_mb={large_mb:.0f} seconds={large_s:.1f} '
          f'mb_per_100k_rows={slope:.1f}')
  finally:
    if not FLAGS.workdir:
      shutil.rmtree(workdir, ignore_errors=True)


if __name__ == '__main__':
  # absl's --help exits 1, as a failure; a help asked for is not one.
  if any(a in ('-h', '--help', '--helpshort', '--helpfull')
         for a in sys.argv[1:]):
    app.usage(shorthelp=True, writeto_stdout=True, exitcode=0)
  app.run(main)
