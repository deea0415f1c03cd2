"""Signals and the deadline during cleanup: cleanup and teardown still finish.

A run is provisioned and prepared with several shards, one of them stalled
(SIGSTOP) so that stopping it takes seconds; `--run_stage=cleanup,teardown`
is then signalled a second after it starts, i.e. in the middle of cleanup.
"""

import os
import signal
import subprocess
import time

import psutil
import pytest

import e2e_support as e2e
from perfkitbenchmarker.providers.local import provider as local

# Every test here starts a process (tests/tier_guard.py).
pytestmark = pytest.mark.e2e

SHARDS = ['--redis_total_num_processes=6', '--memtier_key_maximum=1000']


def _Prepared(results):
  """A prepared run whose cleanup will take seconds after its first stop.

  Its newest shard is stopped (SIGSTOP): cleanup stops shards newest first,
  so for its first seconds cleanup waits for the stalled one to exit (then
  kills it), and signals sent then land inside cleanup.
  """
  proc, run_uri = e2e.Run(SHARDS + ['--run_stage=provision,prepare'], results)
  assert proc.returncode == 0, proc.stderr
  os.kill(_Shards(results, run_uri)[-1]['data']['pid'], signal.SIGSTOP)
  return run_uri


def _Shards(results, run_uri):
  return [e for e in e2e.Record(results, run_uri)['resources']
          if e['kind'] == 'redis_process']


def _ShardsDeleted(results, run_uri):
  record = e2e.Record(results, run_uri)
  return sum(1 for e in record['resources']
             if e['kind'] == 'redis_process' and e['status'] == 'deleted')


def _CleanUpAndSignal(results, run_uri, sigs, hang_up=False, extra=()):
  """Runs cleanup,teardown and sends `sigs` once the first shard is gone."""
  proc = subprocess.Popen(
      e2e.Command(['--run_stage=cleanup,teardown'] + list(extra), run_uri,
                  results),
      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=e2e.REPO)
  try:
    assert proc.stdout.readline().startswith(f'Run {run_uri}')
    time.sleep(1.0)  # Cleanup has begun; it waits for the stalled shard.
    assert _ShardsDeleted(results, run_uri) < len(_Shards(results, run_uri))
    if hang_up:  # The terminal is gone: nobody reads pkb's output any more.
      proc.stdout.close()
      proc.stderr.close()
    for sig in sigs:
      proc.send_signal(sig)
      time.sleep(0.1)
    if hang_up:
      return proc.wait(timeout=60), ''
    _, err = proc.communicate(timeout=60)
    return proc.returncode, err
  finally:
    if proc.poll() is None:
      proc.kill()


def _LiveShards(results, run_uri):
  """The run's shards still alive, by PID and start time (ports get reused
  by other runs on this machine at once)."""
  live = []
  for entry in e2e.Record(results, run_uri)['resources']:
    data = entry['data']
    if entry['kind'] != 'redis_process' or not data.get('pid'):
      continue
    try:
      proc = psutil.Process(data['pid'])
      if (e2e.StartTicks(proc.pid) == data['start_time'] and
          proc.status() != psutil.STATUS_ZOMBIE):
        live.append(entry['name'])
    except psutil.NoSuchProcess:
      pass
  return live


def _AssertNothingLeft(results, run_uri):
  time.sleep(0.5)
  assert _LiveShards(results, run_uri) == []
  assert e2e.Workspaces(run_uri, local.SCRATCH_ROOT) == []


def _Log(results, run_uri):
  with open(os.path.join(results, run_uri, 'pkb.log')) as f:
    return f.read()


def test_signal_during_cleanup_lets_it_finish(tmp_path):
  # SIGTERM; a first SIGINT during cleanup takes the same handler path
  # (run_signals.Interrupts, one handler for every signal) in
  # test_second_signal_cuts_short_and_names_teardown.
  results = str(tmp_path)
  run_uri = _Prepared(results)
  rc, err = _CleanUpAndSignal(results, run_uri, [signal.SIGTERM])
  assert rc == 130, err
  assert 'Traceback' not in err
  assert 'interrupted by SIGTERM' in err
  _AssertNothingLeft(results, run_uri)
  record = e2e.Record(results, run_uri)
  assert record['status'] == 'interrupted'
  assert all(r['status'] == 'deleted' for r in record['resources'])


def test_sighup_with_terminal_gone_cleans_up(tmp_path):
  results = str(tmp_path)
  run_uri = _Prepared(results)
  rc, _ = _CleanUpAndSignal(results, run_uri, [signal.SIGHUP], hang_up=True)
  assert rc == 130
  _AssertNothingLeft(results, run_uri)
  assert e2e.Record(results, run_uri)['status'] == 'interrupted'
  log = _Log(results, run_uri)
  assert 'SIGHUP' in log and 'Traceback' not in log


def test_second_signal_cuts_short_and_names_teardown(tmp_path):
  results = str(tmp_path)
  run_uri = _Prepared(results)
  rc, err = _CleanUpAndSignal(results, run_uri,
                              [signal.SIGINT, signal.SIGINT])
  assert rc == 130, err
  assert 'Traceback' not in err
  assert f'./pkb.py --run_stage=teardown --run_uri={run_uri}' in err
  assert e2e.Record(results, run_uri)['status'] == 'interrupted'
  # The command it names deletes the rest.
  proc, _ = e2e.Run(['--run_stage=teardown'], results, run_uri=run_uri)
  assert proc.returncode == 0, proc.stderr
  _AssertNothingLeft(results, run_uri)


def test_deadline_during_cleanup_does_not_stop_it(tmp_path):
  results = str(tmp_path)
  run_uri = _Prepared(results)
  # 1.2 s: past the start, inside the stop of the stalled shard.
  proc, _ = e2e.Run(['--run_stage=cleanup,teardown', '--timeout_minutes=0.02'],
                    results, run_uri=run_uri, timeout=60)
  assert proc.returncode == 0, proc.stderr
  _AssertNothingLeft(results, run_uri)
  assert e2e.Record(results, run_uri)['status'] == 'succeeded'
