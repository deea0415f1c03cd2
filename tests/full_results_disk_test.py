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


# In a private mount namespace: a 64 KiB tmpfs at $1, a run directory in
# it whose probes' raw output fills it (and a log the rest), then the run
# record and a sample written. Prints what happened, as JSON.
_FILL_THEN_WRITE = r'''
import json, os, sys, types
from perfkitbenchmarker import evidence, run_record, sample
from perfkitbenchmarker.publishers import csv_publisher, json_publisher
from perfkitbenchmarker.publishers import publisher
run_dir = os.path.join(sys.argv[1], 'tfull0001')
record = run_record.RunRecord.Create(run_dir, 'tfull0001')
vm = types.SimpleNamespace(name='clients-0', record=record)
kept = []
while True:  # Incompressible 5 KB parts, as a busy machine's CPU scans.
  rel = evidence.Keep(vm, f'probe-{len(kept)}', ['memtier ...'],
                      {'out.0': os.urandom(2500).hex()})
  if rel is None:
    break
  kept.append(rel)
log = os.open(os.path.join(run_dir, 'pkb.log'), os.O_WRONLY | os.O_CREAT)
try:  # What evidence left, the log takes: the disk is full.
  while True:
    os.write(log, b'x' * 512)
except OSError:
  os.close(log)
out = {'kept': kept}
try:
  record.AddResource('local_vm', 'servers-0')
  collector = publisher.SampleCollector(
      [json_publisher.JSONPublisher(os.path.join(run_dir, 'r.json')),
       csv_publisher.CSVPublisher(os.path.join(run_dir, 'r.csv'))],
      publisher.RunInfo(run_uri='tfull0001', owner='t'),
      lambda path, write: evidence.WithRoom(run_dir, path, write))
  collector.Add([sample.Sample('throughput', 1.0, 'ops/sec', {'a': 1})], 't')
  out['samples'] = len(collector.samples)
except Exception as e:
  out['error'] = f'{type(e).__name__}: {e}'
out['left'] = sorted(r for r in kept if os.path.isdir(os.path.join(run_dir, r)))
out['failure'] = evidence.Failure(run_dir)
out['after'] = evidence.Keep(vm, 'later', ['x'], {'out.0': 'y'})
with open(os.path.join(run_dir, 'run_record.json')) as f:
  out['recorded'] = [r['name'] for r in json.load(f)['resources']]
print(json.dumps(out))
'''


@e2e.Needs('root and unshare (it mounts a tmpfs in a private mount '
           'namespace)',
           lambda: os.geteuid() == 0 and bool(shutil.which('unshare')))
def test_raw_output_that_filled_the_disk_gives_room_to_record_and_samples(
    tmp_path):
  # The run test above, under load (hunt 8): a busy machine's CPU scans
  # (one line per foreign process) made the pilot's raw output 35 KB where
  # a quiet one's is 10 KB; it filled the disk and the run record's next
  # write failed, 0 samples kept. Here the disk is full on purpose.
  done = subprocess.run(
      ['unshare', '-m', '--propagation', 'private', 'bash', '-c',
       'mount -t tmpfs -o size=64k tmpfs "$1" || exit 99; shift; "$@"',
       'fill', str(tmp_path), sys.executable, '-c', _FILL_THEN_WRITE,
       str(tmp_path)],
      capture_output=True, text=True, timeout=60, cwd=e2e.REPO, check=False)
  assert done.returncode == 0, done.stderr
  out = json.loads(done.stdout)
  assert len(out['kept']) >= 3, out
  # The record and the sample were written: the oldest raw output made room.
  assert 'error' not in out, out
  assert out['samples'] == 1 and out['recorded'] == ['servers-0']
  removed = [r for r in out['kept'] if r not in out['left']]
  assert removed and removed == out['kept'][:len(removed)], out
  assert f'the raw output of {len(removed)} earlier probe' in out['failure']
  assert 'to make room for the samples and the run record' in out['failure']
  assert out['after'] is None  # None kept after: it would take the room.
