"""Signals and the deadline during cleanup: cleanup and teardown still finish.

A run is provisioned and prepared with several shards, one of them stalled
(SIGSTOP) so that stopping it holds cleanup; `--run_stage=cleanup,teardown`
is signalled once cleanup is inside that stop (the shard's SIGTERM is
pending), and the shard is let go (SIGCONT: it then exits on that SIGTERM)
once pkb has taken the signal, so cleanup goes on at once instead of after
the stop's 5 s bound and SIGKILL (that path: teardown_record_test).
"""

import os
import shlex
import signal
import subprocess
import time

import psutil
import pytest

import e2e_support as e2e
import pkb_forkserver
from perfkitbenchmarker import paths
from perfkitbenchmarker import run_signals
from perfkitbenchmarker.providers.local import provider as local

# Every test here starts a process (tests/tier_guard.py).
pytestmark = pytest.mark.e2e

SHARDS = ['--redis_total_num_processes=6', '--memtier_key_maximum=1000']


def _Prepared(results):
  """A prepared run whose cleanup will wait on its first stop, and the PID
  of the shard it waits on.

  Its newest shard is stopped (SIGSTOP): cleanup stops shards newest first,
  so cleanup waits for the stalled one to exit (up to 5 s, then kills it),
  and signals sent then land inside cleanup.
  """
  proc, run_uri = e2e.Run(SHARDS + ['--run_stage=provision,prepare'], results)
  assert proc.returncode == 0, proc.stderr
  stalled = _Shards(results, run_uri)[-1]['data']['pid']
  os.kill(stalled, signal.SIGSTOP)
  return run_uri, stalled


@pytest.fixture
def prepared(tmp_path):
  """_Prepared's run in tmp_path: (results, run_uri, stalled PID). What a
  failed test left running (a stopped shard, shards cleanup never reached)
  is let go and torn down after it."""
  results = str(tmp_path)
  run_uri, stalled = _Prepared(results)
  yield results, run_uri, stalled
  if _LiveShards(results, run_uri):
    _LetGo(stalled)
    e2e.Run(['--run_stage=teardown'], results, run_uri=run_uri)


def _Shards(results, run_uri):
  return [e for e in e2e.Record(results, run_uri)['resources']
          if e['kind'] == 'redis_process']


def _ShardsDeleted(results, run_uri):
  record = e2e.Record(results, run_uri)
  return sum(1 for e in record['resources']
             if e['kind'] == 'redis_process' and e['status'] == 'deleted')


def _TermPending(pid):
  """True once the stalled shard holds an undelivered SIGTERM: cleanup has
  signalled it and is waiting for its exit."""
  with open(f'/proc/{pid}/status') as f:
    for line in f:
      if line.startswith(('ShdPnd:', 'SigPnd:')) and (
          int(line.split()[1], 16) >> (signal.SIGTERM - 1)) & 1:
        return True
  return False


def _InCleanup(proc, results, run_uri, stalled):
  """Waits until cleanup is inside the stop of the stalled shard."""
  e2e.WaitFor(lambda: _TermPending(stalled), 'SIGTERM to the stalled shard',
           proc)
  assert _ShardsDeleted(results, run_uri) < len(_Shards(results, run_uri))


def _Noted(results, run_uri, sig):
  """True once pkb logged that it took `sig` and finishes cleanup first."""
  return (f'{sig.name}: finishing cleanup and teardown first' in
          _Log(results, run_uri))


def _LetGo(stalled):
  """SIGCONT to the stalled shard (gone if the stop's bound ran out on a
  loaded machine: then cleanup killed it)."""
  try:
    os.kill(stalled, signal.SIGCONT)
  except ProcessLookupError:
    pass


def _InCleanupRun(results, run_uri, stalled, *extra):
  """Starts --run_stage=cleanup,teardown (plus `extra` flags) and returns
  its Popen once cleanup waits on the stalled shard (killed if not)."""
  proc = pkb_forkserver.Popen(
      e2e.Command(['--run_stage=cleanup,teardown'] + list(extra), run_uri,
                  results),
      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=e2e.REPO)
  try:
    assert proc.stdout.readline().startswith(f'Run {run_uri}')
    _InCleanup(proc, results, run_uri, stalled)
  except BaseException:
    proc.kill()
    proc.communicate()
    raise
  return proc


def _CleanUpAndSignal(results, run_uri, stalled, sig, hang_up=False):
  """Runs cleanup,teardown, sends `sig` inside cleanup (the stalled shard's
  stop) and lets the shard go once pkb noted the signal."""
  proc = _InCleanupRun(results, run_uri, stalled)
  try:
    if hang_up:  # The terminal is gone: nobody reads pkb's output any more.
      proc.stdout.close()
      proc.stderr.close()
    proc.send_signal(sig)
    e2e.WaitFor(lambda: _Noted(results, run_uri, sig), f'{sig.name} noted', proc)
    _LetGo(stalled)
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
  # Within half a second of pkb's exit (nothing comes back once gone).
  deadline = time.monotonic() + 0.5
  while (_LiveShards(results, run_uri) or
         e2e.Workspaces(run_uri, local.SCRATCH_ROOT)) and (
             time.monotonic() < deadline):
    time.sleep(0.05)
  assert _LiveShards(results, run_uri) == []
  assert e2e.Workspaces(run_uri, local.SCRATCH_ROOT) == []


def _Log(results, run_uri):
  with open(os.path.join(results, run_uri, 'pkb.log')) as f:
    return f.read()


def test_signal_during_cleanup_lets_it_finish(prepared):
  # SIGTERM; a first SIGINT during cleanup takes the same handler path
  # (run_signals.Interrupts, one handler for every signal) in
  # test_second_signal_cuts_short_and_names_teardown.
  results, run_uri, stalled = prepared
  rc, err = _CleanUpAndSignal(results, run_uri, stalled, signal.SIGTERM)
  assert rc == 130, err
  assert 'Traceback' not in err
  assert 'interrupted by SIGTERM' in err
  _AssertNothingLeft(results, run_uri)
  record = e2e.Record(results, run_uri)
  assert record['status'] == 'interrupted'
  assert all(r['status'] == 'deleted' for r in record['resources'])


def test_sighup_with_terminal_gone_cleans_up(prepared):
  results, run_uri, stalled = prepared
  rc, _ = _CleanUpAndSignal(results, run_uri, stalled, signal.SIGHUP,
                            hang_up=True)
  assert rc == 130
  _AssertNothingLeft(results, run_uri)
  assert e2e.Record(results, run_uri)['status'] == 'interrupted'
  log = _Log(results, run_uri)
  assert 'SIGHUP' in log and 'Traceback' not in log


def test_second_signal_cuts_short_and_names_teardown(prepared):
  results, run_uri, stalled = prepared
  proc = _InCleanupRun(results, run_uri, stalled)
  try:
    proc.send_signal(signal.SIGINT)
    e2e.WaitFor(lambda: _Noted(results, run_uri, signal.SIGINT), 'SIGINT noted',
             proc)
    proc.send_signal(signal.SIGINT)  # Cleanup still waits on the shard.
    _, err = proc.communicate(timeout=60)
  finally:
    if proc.poll() is None:
      proc.kill()
  assert proc.returncode == 130, err
  assert 'Traceback' not in err
  # The run's results are not in the default directory: the command names
  # them (without, it looked for the run's record where it is not).
  named = (f'./pkb.py --run_stage=teardown --run_uri={run_uri} '
           f'--results_dir={shlex.quote(results)}')
  assert named in err, err
  assert e2e.Record(results, run_uri)['status'] == 'interrupted'
  # Cut short: shards beside the stalled one are left for teardown.
  assert len(_LiveShards(results, run_uri)) >= 2
  # The command it names deletes the rest (the stalled shard, let go, exits
  # on the SIGTERM the cut-short cleanup sent).
  _LetGo(stalled)
  proc, _ = e2e.Run(['--run_stage=teardown'], results, run_uri=run_uri)
  assert proc.returncode == 0, proc.stderr
  _AssertNothingLeft(results, run_uri)


def test_deadline_during_cleanup_does_not_stop_it(prepared):
  results, run_uri, stalled = prepared
  # A deadline of 1.2 s: past the start, inside the stop of the stalled shard.
  proc = _InCleanupRun(results, run_uri, stalled, '--timeout_minutes=0.02')
  try:
    # pkb set its deadline before cleanup began, so it has passed 1.2 s on
    # (and a bit) while cleanup still waits on the shard.
    held = time.monotonic() + 1.2 + 0.3
    e2e.WaitFor(lambda: time.monotonic() > held, 'deadline passed', proc)
    _LetGo(stalled)
    _, err = proc.communicate(timeout=60)
  finally:
    if proc.poll() is None:
      proc.kill()
  assert proc.returncode == 0, err
  _AssertNothingLeft(results, run_uri)
  assert e2e.Record(results, run_uri)['status'] == 'succeeded'


def test_a_signal_during_teardown_from_the_record_lets_it_finish(prepared):
  """`--run_stage=teardown --run_uri=X` had no handlers: a SIGHUP (the
  terminal closing) killed it at once, exit 129 and no line, the record's
  resources all still live and the run's scratch directory left."""
  results, run_uri, stalled = prepared
  proc = pkb_forkserver.Popen(
      e2e.Command(['--run_stage=teardown'], run_uri, results),
      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=e2e.REPO)
  try:
    e2e.WaitFor(lambda: _TermPending(stalled), 'SIGTERM to the stalled shard',
                proc)
    proc.send_signal(signal.SIGHUP)
    e2e.WaitFor(lambda: _Noted(results, run_uri, signal.SIGHUP),
                'SIGHUP noted', proc)
    _LetGo(stalled)
    _, err = proc.communicate(timeout=60)
  finally:
    if proc.poll() is None:
      proc.kill()
  assert proc.returncode == 130, err
  assert err.strip().splitlines()[-1] == (
      'pkb: interrupted by SIGHUP; teardown ran to its end first.'), err
  _AssertNothingLeft(results, run_uri)
  record = e2e.Record(results, run_uri)
  # Its teardown is done; the signal it took makes the run interrupted,
  # as one during its cleanup does (test_signal_during_cleanup_lets_it_finish).
  assert record['stages_done'][-1] == 'teardown'
  assert record['status'] == 'interrupted'
  assert all(r['status'] == 'deleted' for r in record['resources'])


def test_a_teardown_command_names_a_results_dir_only_off_the_default():
  default = os.path.join(paths.RunsDir(), 'ab1')
  assert run_signals.TeardownCommand('ab1', default) == (
      './pkb.py --run_stage=teardown --run_uri=ab1')
  assert run_signals.TeardownCommand('ab1', '/srv/my runs/ab1') == (
      './pkb.py --run_stage=teardown --run_uri=ab1 '
      '--results_dir=\'/srv/my runs\'')
