"""A run forked by tests/pkb_forkserver.py ends as the same script started
with `python SCRIPT` does: the same exit status, stdout and stderr, also
when the test signals it."""

import os
import signal
import subprocess
import sys

import pytest

import e2e_support as e2e
import pkb_forkserver
import tier_guard

# Each way a Python program ends, and what it sees of its start.
_SCRIPT = r'''
import atexit, os, sys, threading, time
what = sys.argv[1]
print('argv', sys.argv[1:], 'cwd', os.getcwd(), 'umask', oct(os.umask(0)))
print('env', os.environ.get('FS_TEST'), 'path0', sys.path[0])
print('stdin', repr(sys.stdin.read()))
atexit.register(lambda: print('atexit ran', flush=True))
if what == 'thread':
  threading.Thread(target=lambda: (time.sleep(0.2), print('thread done'))
                   ).start()
elif what == 'exit3':
  sys.exit(3)
elif what == 'exit_text':
  sys.exit('refused: because')
elif what == 'raise':
  raise ValueError('boom')
elif what == 'interrupt':
  raise KeyboardInterrupt
print('end', file=sys.stderr)
'''


# Waits for a signal: SIGTERM handled (exit 7), SIGINT and SIGHUP Python's
# and the system's own.
_SIGNALLED = r'''
import os, signal, sys, time
def Term(signum, frame):
  print('handled', signal.Signals(signum).name, flush=True)
  sys.exit(7)
signal.signal(signal.SIGTERM, Term)
print('ready, session leader:', os.getsid(0) == os.getpid(), flush=True)
time.sleep(60)
'''


def _Script(tmp_path, monkeypatch, text):
  path = str(tmp_path / 'script.py')
  with open(path, 'w') as f:
    f.write(text)
  monkeypatch.setitem(pkb_forkserver.PRELOADS, path, 'json')
  return path


@pytest.fixture
def script(tmp_path, monkeypatch):
  return _Script(tmp_path, monkeypatch, _SCRIPT)


@pytest.fixture
def signalled(tmp_path, monkeypatch):
  return _Script(tmp_path, monkeypatch, _SIGNALLED)


@pytest.mark.e2e
@pytest.mark.parametrize('what', ['plain', 'thread', 'exit3', 'exit_text',
                                  'raise', 'interrupt'])
def test_a_forked_run_ends_as_the_script_started_alone(script, tmp_path,
                                                      what):
  argv = [sys.executable, script, what, 'x y']
  env = dict(os.environ, FS_TEST='set for this run')
  umask = os.umask(0o027)
  try:
    alone = subprocess.run(argv, capture_output=True, text=True, env=env,
                           cwd=tmp_path, timeout=60, stdin=subprocess.DEVNULL)
    stdin = os.dup(0)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)  # The caller's stdin is the run's.
    try:
      forked = pkb_forkserver.Run(argv, env=env, cwd=tmp_path, timeout=60)
    finally:
      os.dup2(stdin, 0)
      os.close(stdin)
      os.close(devnull)
  finally:
    os.umask(umask)
  assert forked.returncode == alone.returncode
  assert forked.stdout == alone.stdout
  assert forked.stderr == alone.stderr
  assert f"cwd {tmp_path} umask 0o27" in forked.stdout
  assert 'env set for this run' in forked.stdout


@pytest.mark.e2e
def test_pkb_answers_alike_both_ways(tmp_path):
  for args in (['--dry_run'], ['--timeout_minutes=-1'], ['not-a-flag']):
    argv = [sys.executable, pkb_forkserver.PKB,
            f'--results_dir={tmp_path}'] + args
    alone = subprocess.run(argv, capture_output=True, text=True,
                           cwd=pkb_forkserver.REPO, timeout=120)
    forked = pkb_forkserver.Run(argv, cwd=pkb_forkserver.REPO, timeout=120)
    assert (forked.returncode, forked.stdout, forked.stderr) == (
        alone.returncode, alone.stdout, alone.stderr), args


def _Signalled(start, argv, sig, new_session):
  proc = start(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
               text=True, cwd=pkb_forkserver.REPO,
               start_new_session=new_session)
  with proc:
    ready = proc.stdout.readline()
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=60)
  # The signal may land while print is still returning, so the traceback's
  # line is timing; its last line (the exception) is the behaviour.
  return proc.returncode, ready + out, err.splitlines()[-1:]


@pytest.mark.e2e
@pytest.mark.parametrize('sig,new_session', [
    (signal.SIGTERM, False), (signal.SIGINT, False), (signal.SIGHUP, True)])
def test_a_signalled_run_ends_as_the_script_started_alone(signalled, sig,
                                                         new_session):
  argv = [sys.executable, signalled]
  alone = _Signalled(subprocess.Popen, argv, sig, new_session)
  forked = _Signalled(pkb_forkserver.Popen, argv, sig, new_session)
  assert forked == alone
  assert f'session leader: {new_session}' in forked[1]


def _State(pid):
  try:
    with open(f'/proc/{pid}/stat') as f:
      return f.read().rpartition(')')[2].split()[0]
  except FileNotFoundError:
    return None


@pytest.mark.e2e
def test_an_ended_run_keeps_its_pid_until_the_test_reads_its_end(script):
  """As a Popen's child does, so a signal sent late reaches no other
  process under a reused pid."""
  proc = pkb_forkserver.Popen([sys.executable, script, 'exit3'],
                              stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL,
                              stdin=subprocess.DEVNULL)
  assert isinstance(proc, subprocess.Popen) and proc.pid != os.getpid()
  e2e.WaitFor(lambda: _State(proc.pid) == 'Z', 'the run ended')
  proc.send_signal(signal.SIGKILL)  # Ended: not sent.
  assert proc.wait(timeout=60) == 3
  e2e.WaitFor(lambda: _State(proc.pid) is None, 'the run reaped')


@pytest.mark.e2e
def test_a_run_past_its_timeout_is_killed(script):
  with pytest.raises(subprocess.TimeoutExpired):
    pkb_forkserver.Run([sys.executable, script, 'thread'], timeout=0.05)


def test_the_fast_tier_may_not_fork_a_run():
  # A server an earlier e2e test left idle starts nothing the guard sees.
  with pytest.raises(tier_guard.TierViolation):
    pkb_forkserver.Run([sys.executable, pkb_forkserver.PKB, '--dry_run'])
  assert tier_guard.GUARD.Take()  # Taken: this test does not fail for it.
