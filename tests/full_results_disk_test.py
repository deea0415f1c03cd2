"""A run whose --results_dir fills up: one line naming the file the disk
refused, the samples that fit kept, nothing left running (issue 35 class 1).

A real full file system: an 80 KiB tmpfs as --results_dir (64 KiB until
the pilot before the first probe kept its 16 KiB of evidence too), mounted in a
private mount namespace (`unshare -m`) so nothing outside the test sees it
and it goes with the process. The probes' raw output (evidence.Keep) fills
it first; before the evidence writer gave up in one line this case was a
traceback with 0 samples.
"""

import csv
import json
import os
import shutil
import subprocess
import sys

import pytest

import e2e_support as e2e

pytestmark = pytest.mark.e2e

_RUN_ON_SMALL_DISK = r'''
set -u
results=$1 copy=$2; shift 2
mount -t tmpfs -o size=80k tmpfs "$results" || exit 99
"$@" >"$copy/stdout" 2>"$copy/stderr"
echo $? >"$copy/rc"
cp -a "$results/." "$copy/results/" 2>/dev/null
umount "$results"
'''


@e2e.Needs('root and unshare (it mounts a tmpfs in a private mount '
           'namespace)',
           lambda: os.geteuid() == 0 and bool(shutil.which('unshare')))
def test_a_full_results_disk_is_one_line_and_keeps_the_samples(tmp_path):
  results, copy = tmp_path / 'small', tmp_path / 'copy'
  results.mkdir()
  (copy / 'results').mkdir(parents=True)
  run_uri = e2e.NewRunUri()
  done = subprocess.run(
      ['unshare', '-m', '--propagation', 'private', 'bash', '-c',
       _RUN_ON_SMALL_DISK, 'full', str(results), str(copy)] +
      e2e.Command(['--load_generator=redis_benchmark'] + e2e.FAST, run_uri,
                  str(results)),
      capture_output=True, text=True, timeout=300, cwd=e2e.REPO,
      check=False)
  assert done.returncode == 0, done.stderr
  code = int((copy / 'rc').read_text())
  stderr = (copy / 'stderr').read_text()
  stdout = (copy / 'stdout').read_text()
  assert 'Traceback' not in stderr + stdout and 'internal error' not in stderr
  lines = stderr.splitlines()
  assert code == 1 and len(lines) == 1, stderr
  # It names the file the disk refused, and why.
  assert lines[0].startswith('pkb: ') and str(results) in lines[0]
  assert 'No space left on device' in lines[0], lines[0]
  run_dir = copy / 'results' / run_uri
  with open(run_dir / 'perfkitbenchmarker_results.json') as f:
    in_json = [json.loads(line) for line in f]
  with open(run_dir / 'results.csv') as f:
    in_csv = list(csv.DictReader(f))
  assert in_csv, 'no sample was kept'
  # The count shown is of the samples both files hold (the JSON line is
  # written first: it may hold the one the CSV file could not take).
  reported = [l for l in stdout.splitlines() if l.startswith('Samples: ')]
  assert reported and f'({len(in_csv)} samples)' in reported[0], stdout
  assert len(in_json) in (len(in_csv), len(in_csv) + 1)
  assert [r['metric'] for r in in_json[:len(in_csv)]] == [
      r['metric'] for r in in_csv]
  assert e2e.LeftoverProcesses(str(copy / 'results'), run_uri) == []
