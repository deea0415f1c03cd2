"""run_processes: the ownership rule, identities and the one escalation.

The rule in Python (WorksUnder) is checked on paths; the bash half
(scripts/run_processes.sh, through run_processes.Command) on real processes
this test starts: a stop signals only what a live identity leads, TERM
first, KILL for what outlives it, and a session's members in other groups
too. KillProcess, probe groups and detached jobs use these verbs: their
own adversarial tests are teardown_record_test, probe_signals_test and
ssh_vm_test.
"""

import contextlib
import itertools
import os
import shutil
import signal
import subprocess
import time

import psutil
import pytest

import e2e_support as e2e
from perfkitbenchmarker import run_processes
from perfkitbenchmarker import run_scope


@pytest.mark.parametrize('cwd, root, ours', [
    ('/tmp/pkb-x.own', '/tmp/pkb-x.own', True),
    ('/tmp/pkb-x.own/servers-0/deep', '/tmp/pkb-x.own', True),
    ('/tmp/pkb-x.own/servers-0', '/tmp/pkb-x.own/', True),
    ('/tmp/pkb-x.owner', '/tmp/pkb-x.own', False),  # Starts the same.
    ('/tmp', '/tmp/pkb-x.own', False),
    ('/tmp/pkb-x.own (deleted)', '/tmp/pkb-x.own', False),
])
def test_the_ownership_rule(cwd, root, ours):
  assert run_processes.WorksUnder(cwd, root) is ours


def test_commands_carry_values_as_arguments_only():
  """A value with shell syntax in it stays one argument of the script."""
  command = run_processes.Command('busy', '/tmp/a b; touch x')
  assert command.endswith("run_processes.sh busy '/tmp/a b; touch x'")
  assert run_processes.Identity(12, 345, 'session').StopCommand(1.5).endswith(
      'run_processes.sh stop 12 345 session 1500')


def _Run(command, cwd=None):
  return subprocess.run(['bash', '-c', command], capture_output=True,
                        text=True, timeout=60, cwd=cwd)


@contextlib.contextmanager
def _Started(script):
  """bash running `script` in a session of its own, once it has as many
  children as it starts ('&' count); its group killed at the end."""
  proc = subprocess.Popen(['bash', '-c', script], start_new_session=True)
  try:
    deadline = time.monotonic() + 10
    while len(psutil.Process(proc.pid).children()) < script.count('&'):
      assert time.monotonic() < deadline
      time.sleep(0.02)
    yield proc
  finally:
    run_processes.KillStartedGroup(proc.pid)
    proc.wait()


def _Identity(proc, leads=run_processes.GROUP):
  return run_processes.Identity(proc.pid, int(e2e.StartTicks(proc.pid)),
                                leads)


@pytest.mark.e2e
@pytest.mark.usefixtures('shipped_scripts')
def test_a_stop_signals_only_the_identity_it_names():
  """Another start time (the PID reused, or a forged record) is left
  alone; the true one's group goes, TERM-ignoring members included."""
  # Ignores TERM, as its child does: only the escalation's KILL ends them.
  with _Started('trap "" TERM; sleep 120 & exec sleep 121') as proc:
    child = psutil.Process(proc.pid).children()[0]
    forged = run_processes.Identity(proc.pid, _Identity(proc).start_ticks + 1)
    assert _Run(forged.StopCommand(0.2)).returncode == 0
    assert proc.poll() is None and child.is_running()
    started = time.monotonic()
    stop = _Run(_Identity(proc).StopCommand(0.2))
    assert stop.returncode == 0, stop.stderr
    assert proc.wait(timeout=5) == -signal.SIGKILL
    _, alive = psutil.wait_procs([child], timeout=5)
    assert not alive
    # TERM, a bounded wait, KILL: not the whole of any fixed pause.
    assert time.monotonic() - started < 30


@pytest.mark.e2e
@pytest.mark.usefixtures('shipped_scripts')
def test_term_is_enough_for_a_process_that_heeds_it():
  with _Started('sleep 120 & wait') as proc:
    assert _Run(_Identity(proc).StopCommand(5)).returncode == 0
    assert proc.wait(timeout=5) == -signal.SIGTERM


@pytest.mark.e2e
@pytest.mark.usefixtures('shipped_scripts')
def test_a_session_stop_reaches_members_of_its_other_groups():
  """A detached job's session holds groups of its own (`timeout` makes
  one): stopping the session reaches them; a group stop would not."""
  script = 'trap "" TERM; timeout 120 sleep 120 & exec sleep 121'
  with _Started(script) as proc:
    deadline = time.monotonic() + 10
    while True:  # Until `timeout` has made its own group.
      member = psutil.Process(proc.pid).children()[0]
      if member.name() == 'timeout' and os.getpgid(member.pid) != proc.pid:
        break
      assert time.monotonic() < deadline
      time.sleep(0.02)
    stop = _Run(_Identity(proc, run_processes.SESSION).StopCommand(0.2))
    assert stop.returncode == 0, stop.stderr
    proc.wait(timeout=5)
    _, alive = psutil.wait_procs([member], timeout=5)
    assert not alive


@pytest.mark.e2e
@pytest.mark.usefixtures('shipped_scripts')
def test_wait_sends_nothing_and_says_whether_it_ended():
  with _Started('trap "" TERM; exec sleep 121') as proc:
    identity = _Identity(proc)
    assert _Run(identity.WaitCommand(0.1)).returncode == (
        run_processes.OUTLIVED)
    assert proc.poll() is None
  assert _Run(identity.WaitCommand(0.1)).returncode == 0


@pytest.mark.e2e
@pytest.mark.usefixtures('shipped_scripts')
def test_busy_names_a_process_under_the_directory_and_no_other(tmp_path):
  """The rule in bash agrees with WorksUnder: below counts, a neighbour
  whose name starts the same does not, nor does the shell that asks (it
  works there too, as remote commands start in the scratch directory)."""
  top, neighbour = tmp_path / 'top', tmp_path / 'top-neighbour'
  (top / 'deep').mkdir(parents=True)
  neighbour.mkdir()
  busy = run_processes.Command('busy', str(top))
  elsewhere = subprocess.Popen(['sleep', '120'], cwd=neighbour)
  try:
    assert _Run(busy, cwd=top).returncode == 0
    below = subprocess.Popen(['sleep', '120'], cwd=top / 'deep')
    try:
      found = _Run(busy, cwd=top)
      assert found.returncode == run_processes.BUSY
      assert found.stdout == f'{below.pid} sleep\n'
      assert run_processes.WorksUnder(os.readlink(f'/proc/{below.pid}/cwd'),
                                      str(top))
    finally:
      below.kill()
      below.wait()
  finally:
    elsewhere.kill()
    elsewhere.wait()


@pytest.mark.e2e
@pytest.mark.usefixtures('shipped_scripts')
def test_a_process_whose_name_holds_a_newline_is_named_on_one_line(
    tmp_path):
  """A process's name is any bytes but NUL (here its executable's, a
  copy of sleep): busy printed it raw, so a newline in it made a line of
  its own among other_runs.sh's lines; the run's own check (WorkingIn)
  put it raw in the refusal. Now both say its control characters
  escaped."""
  top = tmp_path / 'top'
  top.mkdir(mode=0o700)
  program = tmp_path / 'sl\neep\x1b[2J'
  shutil.copy('/bin/sleep', program)
  named = subprocess.Popen([str(program), '120'], cwd=top)
  try:
    found = _Run(run_processes.Command('busy', str(top)))
    assert (found.returncode, found.stdout) == (
        run_processes.BUSY, f'{named.pid} sl\\x0aeep\\x1b[2J\n')
    ticks = itertools.count(0, 10)
    with pytest.raises(run_scope.DirInUse) as refused:
      run_scope.RemoveOwnDir(str(top), clock=lambda: next(ticks),
                             sleep=lambda _: None)
    assert f'of PID {named.pid} (sl\\neep\\x1b[2J); left' in str(
        refused.value)
  finally:
    named.kill()
    named.wait()


@pytest.mark.e2e
@pytest.mark.usefixtures('shipped_scripts')
def test_what_outlives_its_leader_in_the_group_is_killed_too():
  """The leader heeds TERM, a member it forked ignores it: the member is
  still the group's (no other group can take the ID while one of it
  lives), so the escalation's KILL reaches it."""
  with _Started('(trap "" TERM; exec sleep 120) & wait') as proc:
    member = psutil.Process(proc.pid).children()[0]
    stop = _Run(_Identity(proc).StopCommand(0.3))
    assert stop.returncode == 0, stop.stderr
    assert proc.wait(timeout=5) == -signal.SIGTERM
    _, alive = psutil.wait_procs([member], timeout=5)
    assert not alive
