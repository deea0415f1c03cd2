"""Results files: a resumed run appends to the CSV; a full disk fails cleanly.

Both with real pkb runs (memtier on loopback, short settings). The full disk
is a tiny tmpfs the test mounts (root only) holding --json_path and
--csv_path; the run directory (record, log) is elsewhere so the record can
say what happened.
"""

import csv
import json
import os
import subprocess

import pytest

import e2e_support as e2e
import secrets_ps_test
from perfkitbenchmarker.publishers import csv_publisher

SHORT = ['--load_generator=memtier', '--memtier_run_duration=1',
         '--memtier_latency_cap=100', '--memtier_confirm_repeats=2',
         '--memtier_max_probes=3', '--memtier_key_maximum=20000']


def _CsvRows(path):
  with open(path, newline='') as f:
    return list(csv.DictReader(f))


def _JsonRows(path):
  with open(path) as f:
    return [json.loads(line) for line in f]


def test_csv_publisher_keeps_rows_already_in_the_file(tmp_path):
  path = str(tmp_path / 'results.csv')
  first = csv_publisher.CSVPublisher(path)
  first.Publish({'metric': 'a', 'value': 1, 'metadata': {'x': 'old'}})
  second = csv_publisher.CSVPublisher(path)  # A later stage of the run.
  second.Publish({'metric': 'b', 'value': 2, 'metadata': {'y': 'new'}})
  rows = _CsvRows(path)
  assert [(r['metric'], r['value'], r['x'], r['y']) for r in rows] == [
      ('a', '1', 'old', ''), ('b', '2', '', 'new')]
  assert not os.path.exists(path + '.tmp')


def test_resumed_run_stage_appends_to_the_csv(tmp_path):
  """provision,prepare / run / run again / cleanup,teardown: no row lost."""
  memtier = secrets_ps_test.MemtierOrSkip()
  results = str(tmp_path)
  run_uri = e2e.NewRunUri()
  args = SHORT + [f'--memtier_path={memtier}']
  for stages in ('provision,prepare', 'run', 'run', 'cleanup,teardown'):
    proc, _ = e2e.Run(args + [f'--run_stage={stages}'], results,
                      run_uri=run_uri)
    assert proc.returncode == 0, (stages, proc.stderr)
  run_dir = os.path.join(results, run_uri)
  json_rows = _JsonRows(os.path.join(run_dir,
                                     'perfkitbenchmarker_results.json'))
  csv_rows = _CsvRows(os.path.join(run_dir, 'results.csv'))
  runs = [r for r in json_rows if r['metric'] == 'latency_capped_throughput']
  assert len(runs) == 2  # Both run stages published.
  assert len(csv_rows) == len(json_rows)
  assert ([r['sample_uri'] for r in csv_rows] ==
          [r['sample_uri'] for r in json_rows])
  assert not e2e.LeftoverProcesses(results, run_uri)


@pytest.fixture
def full_disk(tmp_path):
  mount = tmp_path / 'full'
  mount.mkdir()
  proc = subprocess.run(['mount', '-t', 'tmpfs', '-o', 'size=16k', 'tmpfs',
                         str(mount)], capture_output=True, text=True)
  if proc.returncode != 0:
    if os.environ.get('CI') == 'true':
      pytest.fail(f'cannot mount a tmpfs for the full disk: {proc.stderr}')
    pytest.skip(f'cannot mount a tmpfs (root needed): {proc.stderr.strip()}')
  try:
    yield str(mount)
  finally:
    subprocess.run(['umount', '-l', str(mount)], check=False)


def test_full_disk_is_one_line_and_the_run_still_cleans_up(tmp_path,
                                                           full_disk):
  memtier = secrets_ps_test.MemtierOrSkip()
  results = str(tmp_path / 'results')
  json_path = os.path.join(full_disk, 'results.json')
  csv_path = os.path.join(full_disk, 'results.csv')
  proc, run_uri = e2e.Run(
      SHORT + [f'--memtier_path={memtier}', f'--json_path={json_path}',
               f'--csv_path={csv_path}'], results)
  assert proc.returncode not in (0, 130), proc.stderr
  assert 'Traceback' not in proc.stderr + proc.stdout
  lines = [l for l in proc.stderr.splitlines() if l.strip()]
  assert len(lines) == 1, proc.stderr
  assert 'No space left on device' in lines[0]
  assert json_path in lines[0] or csv_path in lines[0], lines
  # Samples written before are kept, whole; no partial copy is left.
  assert sorted(os.listdir(full_disk)) == ['results.csv', 'results.json']
  kept = _JsonRows(json_path)
  assert kept and all(r['run_uri'] for r in kept)
  assert 1 <= len(_CsvRows(csv_path)) <= len(kept)
  # Cleanup and teardown ran; the record says the run failed.
  assert not e2e.LeftoverProcesses(results, run_uri)
  record = e2e.Record(results, run_uri)
  assert record['status'] == 'failed'
  shards = [e for e in record['resources'] if e['kind'] in e2e.SHARD_KINDS]
  assert shards and all(e['status'] == 'deleted' for e in shards)
