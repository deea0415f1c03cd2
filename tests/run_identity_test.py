"""A run is its run_uri: one lock per run_uri, scratch kept while in use.

The audited case (issue 24 point 8): the same --run_uri with two different
--results_dir at once. The lock was the results directory's, but the
scratch directories (then /tmp/pkb-<run_uri>/<vm>) were the run_uri's: both
runs took them as their own, both failed (one with a traceback) and a shard was
left running in a deleted directory that no teardown could stop. Now the
lock is the run_uri's (run_scope), so the second is refused in one line;
and no teardown removes a scratch directory while a process still works in
it (run_scope.RemoveOwnDir here, run_scope.RemoteBusyScript over SSH), so a
shard that could not be stopped keeps what finds it.
"""

import os
import subprocess
import sys
import time

import pytest

import e2e_support as e2e
import pkb_forkserver
from perfkitbenchmarker import errors
from perfkitbenchmarker import resource
from perfkitbenchmarker import run_record
from perfkitbenchmarker import run_scope
from perfkitbenchmarker import ssh_vm
from perfkitbenchmarker import virtual_machine
from perfkitbenchmarker.providers.local import provider as local

from sshd_fixture import sshd  # pylint: disable=unused-import  (fixture)

# Every test here starts a process (tests/tier_guard.py).
pytestmark = pytest.mark.e2e


def test_the_same_run_uri_with_another_results_dir_is_refused(tmp_path):
  run_uri = e2e.NewRunUri()
  first_dir, second_dir = tmp_path / 'one', tmp_path / 'two'
  # FAST_CONFIRMED: its repeats keep it running while the second starts.
  first = e2e.StartUntil(e2e.FAST_CONFIRMED + ['--memtier_run_duration=2'],
                         run_uri, str(first_dir))
  try:
    assert first.poll() is None
    second = pkb_forkserver.Run(
        e2e.Command(e2e.FAST, run_uri, str(second_dir)), timeout=120,
        cwd=e2e.REPO)
    assert second.returncode == 2, (second.returncode, second.stderr)
    assert 'Traceback' not in second.stdout + second.stderr
    lines = second.stderr.splitlines()
    assert len(lines) == 1, second.stderr
    assert f'pid {first.pid} ' in lines[0] and 'in use' in lines[0], lines[0]
    assert not os.path.exists(second_dir / run_uri)
    out, err = first.communicate(timeout=300)
  finally:
    if first.poll() is None:
      first.kill()
      first.communicate()
  # The first run never noticed: it finished, and left nothing running.
  assert first.returncode == 0, out[-2000:] + err[-2000:]
  assert e2e.Record(str(first_dir), run_uri)['status'] == 'succeeded'
  assert e2e.LeftoverProcesses(str(first_dir), run_uri) == []
  assert e2e.Workspaces(run_uri, local.SCRATCH_ROOT) == []


def _Sleeper(cwd):
  """A process working in `cwd` (as a shard that would not stop does)."""
  return subprocess.Popen(['sleep', '300'], cwd=cwd, start_new_session=True)


def test_teardown_keeps_a_scratch_dir_a_process_still_works_in(
    tmp_path, monkeypatch):
  """A Local VM whose scratch directory is some process's working
  directory: teardown reports it in one line, removes nothing and keeps
  the VM in the record; once the process is gone, teardown removes it."""
  monkeypatch.setattr(local, 'SCRATCH_ROOT', str(tmp_path / 'scratch'))
  run_uri = e2e.NewRunUri()
  record = run_record.RunRecord.Create(str(tmp_path / 'results' / run_uri),
                                       run_uri)
  vm = local.LocalVirtualMachine(
      virtual_machine.VmSpec(cloud='Local', machine_type='local'), 'servers-0', 'servers',
      run_uri=run_uri, record=record)
  vm.Create()
  (open(os.path.join(vm.scratch_dir, 'redis-7001.conf'), 'w')).close()
  sleeper = _Sleeper(vm.scratch_dir)
  try:
    failures = resource.TeardownFromRecord(
        run_record.RunRecord.Load(record.run_dir, run_uri))
    assert len(failures) == 1, failures
    assert '\n' not in failures[0]
    assert (f'working directory of PID {sleeper.pid} (sleep)' in
            failures[0]), failures[0]
    assert os.listdir(vm.scratch_dir) == ['redis-7001.conf']
    reloaded = run_record.RunRecord.Load(record.run_dir, run_uri)
    assert [e['name'] for e in reloaded.LiveResources()] == ['servers-0']
  finally:
    sleeper.kill()
    sleeper.wait(timeout=10)
  assert resource.TeardownFromRecord(
      run_record.RunRecord.Load(record.run_dir, run_uri)) == []
  assert not os.path.exists(vm.scratch_dir)


def test_remove_own_dir_sees_processes_below_it_and_not_elsewhere(tmp_path):
  top = tmp_path / 'top'
  (top / 'deep').mkdir(parents=True)
  os.chmod(top, 0o700)
  neighbour = tmp_path / 'top-neighbour'  # A name that starts the same.
  neighbour.mkdir()
  elsewhere = _Sleeper(str(neighbour))
  below = _Sleeper(str(top / 'deep'))
  try:
    assert [pid for pid, _ in run_scope.WorkingIn(str(top))] == [below.pid]
    with pytest.raises(run_scope.DirInUse, match=f'PID {below.pid} '):
      run_scope.RemoveOwnDir(str(top))
    assert (top / 'deep').is_dir()
  finally:
    for proc in (below, elsewhere):
      proc.kill()
      proc.wait(timeout=10)
  run_scope.RemoveOwnDir(str(top))
  assert not top.exists() and neighbour.exists()


def test_an_ssh_vm_keeps_a_scratch_dir_a_process_still_works_in(
    sshd):  # pylint: disable=redefined-outer-name
  vm = ssh_vm.SshVirtualMachine(
      virtual_machine.VmSpec(cloud='Static', machine_type='static'),
      'servers-0', 'servers', user=sshd.user, ip_address=sshd.host,
      keyfile=sshd.user_key, port=sshd.port,
      run_uri=f'busy{os.getpid()}')
  try:
    vm.WaitForSsh(20)
    # A detached process started by a command: it works in the scratch
    # directory, as every process the run starts there does.
    out, _ = vm.RemoteCommand(
        'setsid sleep 300 </dev/null >/dev/null 2>&1 & echo $!')
    pid = int(out.strip())
    try:
      with pytest.raises(errors.Error) as kept:
        vm.CleanUpScratch()
      assert f'working directory of PID {pid} (sleep)' in str(kept.value)
      assert vm.RemoteCommand('test -d . && echo there')[0] == 'there\n'
    finally:
      vm.RemoteCommand(f'kill -9 {pid}')
    deadline = time.monotonic() + 20
    while True:  # A killed process may take a moment to go.
      try:
        vm.CleanUpScratch()
        break
      except errors.Error:
        assert time.monotonic() < deadline
        time.sleep(0.2)
    _, _, rc = vm.RemoteCommandWithReturnCode(
        f'test -e {vm.scratch_dir}')
    assert rc == 1
  finally:
    vm.StopMaster()


@e2e.Needs('root (to give the lock directory to user nobody)',
           lambda: os.geteuid() == 0, 'run the tests as root, as CI does')
def test_a_lock_directory_another_user_made_is_refused(tmp_path):
  """/tmp/pkb-runs-<uid> is a name anyone can take first: the lock is never
  taken in it (another user could swap the lock file), in one line."""
  root = tmp_path / f'pkb-runs-{os.geteuid()}'
  root.mkdir(mode=0o700)
  os.chown(root, 65534, 65534)
  with pytest.raises(run_scope.NotOwnDir) as refused:
    run_scope.RunLock('abc', root=str(root)).Acquire()
  message = str(refused.value)
  assert '\n' not in message and 'uid 65534' in message, message
  assert 'root must remove it' in message, message
  assert os.listdir(root) == []


def test_a_released_lock_leaves_no_file_and_is_taken_again(tmp_path):
  lock = run_scope.RunLock('abc', root=str(tmp_path / 'locks')).Acquire()
  path = lock.path
  with open(path) as f:
    assert f.read().startswith(f'pid {os.getpid()} on ')
  other = subprocess.run(
      [sys.executable, '-c',
       'import sys; from perfkitbenchmarker import run_scope, errors\n'
       'try:\n'
       '  run_scope.RunLock("abc", root=sys.argv[1]).Acquire()\n'
       'except errors.UsageError as e:\n'
       '  sys.exit(str(e))\n', str(tmp_path / 'locks')],
      capture_output=True, text=True, timeout=60, cwd=e2e.REPO)
  assert other.returncode == 1
  assert f'in use by pid {os.getpid()} ' in other.stderr, other.stderr
  run_scope.ReleaseAll()
  assert not os.path.lexists(path)  # Not one file a run left in /tmp.
  again = subprocess.run(
      [sys.executable, '-c',
       'import sys; from perfkitbenchmarker import run_scope\n'
       'run_scope.RunLock("abc", root=sys.argv[1]).Acquire()\n',
       str(tmp_path / 'locks')],
      capture_output=True, text=True, timeout=60, cwd=e2e.REPO)
  assert again.returncode == 0, again.stderr


def test_taking_a_lock_removes_those_nobody_holds_not_a_held_one(tmp_path):
  """A run killed by SIGKILL releases nothing: its lock file goes when a
  later run takes its own; one another live process holds stays."""
  root = str(tmp_path / 'locks')
  killed = subprocess.run(
      [sys.executable, '-c',
       'import os, sys; from perfkitbenchmarker import run_scope\n'
       'run_scope.RunLock("killed", root=sys.argv[1]).Acquire()\n'
       'os.kill(os.getpid(), 9)\n', root],
      capture_output=True, text=True, timeout=60, cwd=e2e.REPO)
  assert killed.returncode == -9, killed.stderr
  assert os.listdir(root) == ['killed.lock']
  holder = subprocess.Popen(
      [sys.executable, '-c',
       'import sys; from perfkitbenchmarker import run_scope\n'
       'run_scope.RunLock("live", root=sys.argv[1]).Acquire()\n'
       'print("held", flush=True); sys.stdin.read()\n'
       'run_scope.ReleaseAll()\n', root],
      stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
      cwd=e2e.REPO)
  try:
    assert holder.stdout.readline() == 'held\n'
    lock = run_scope.RunLock('mine', root=root).Acquire()
    assert sorted(os.listdir(root)) == ['live.lock', 'mine.lock']
    lock.Release()
  finally:
    holder.communicate('', timeout=60)
  assert os.listdir(root) == []


def _KilledRunsLock(root):
  """The lock file a run killed by SIGKILL left: its owner still named."""
  killed = subprocess.run(
      [sys.executable, '-c',
       'import os, sys; from perfkitbenchmarker import run_scope\n'
       'run_scope.RunLock("killed", root=sys.argv[1]).Acquire()\n'
       'os.kill(os.getpid(), 9)\n', root],
      capture_output=True, text=True, timeout=60, cwd=e2e.REPO)
  assert killed.returncode == -9, killed.stderr
  return os.path.join(root, 'killed.lock')


def _LookingFor(path, kind, seconds):
  """Another run looking at the lock at `path` for a moment (HeldRunLocks'
  shared try, `kind` -s; _PruneUnheld's exclusive one, -x), stretched to
  `seconds` by flock(1); returned once it holds it."""
  looker = subprocess.Popen(
      ['flock', '-n', kind, path, '-c', f'echo held; sleep {seconds}'],
      stdout=subprocess.PIPE, text=True)
  assert looker.stdout.readline() == 'held\n'
  return looker


def test_a_killed_runs_later_stage_takes_its_lock_while_another_run_looks(
    tmp_path):
  """Before: the file of a run killed by SIGKILL still names it, so a
  later stage of that run (its teardown) that found the lock held for a
  moment by another run's look (HeldRunLocks) was refused, 'in use by
  <the killed pkb>' (157 of 3000 takes beside two looking)."""
  root = str(tmp_path / 'locks')
  path = _KilledRunsLock(root)
  looker = _LookingFor(path, '-s', 0.1)
  try:
    lock = run_scope.RunLock('killed', root=root).Acquire()
    with open(path) as f:
      assert f.read().startswith(f'pid {os.getpid()} on ')
    lock.Release()
  finally:
    looker.communicate(timeout=60)


def test_held_run_locks_names_a_live_run_not_a_killed_one_being_pruned(
    tmp_path):
  """Before: a killed run's lock file that another run's prune held for
  that moment was named as a live run's (274 of 30000 looks beside a run
  taking and releasing its lock), which refused a run on a static machine
  where the killed run's workspace was left."""
  root = str(tmp_path / 'locks')
  holder = subprocess.Popen(
      [sys.executable, '-c',
       'import sys; from perfkitbenchmarker import run_scope\n'
       'run_scope.RunLock("live", root=sys.argv[1]).Acquire()\n'
       'print("held", flush=True); sys.stdin.read()\n'
       'run_scope.ReleaseAll()\n', root],
      stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
      cwd=e2e.REPO)
  try:
    assert holder.stdout.readline() == 'held\n'
    path = _KilledRunsLock(root)  # After the holder's take, which prunes.
    with open(path) as f:
      assert f.read().startswith('pid ')
    pruner = _LookingFor(path, '-x', 0.1)
    try:
      held = run_scope.HeldRunLocks(root)
    finally:
      pruner.communicate(timeout=60)
  finally:
    holder.communicate('', timeout=60)
  assert [lock.run_uri for lock in held] == ['live'], held
  assert held[0].owner.startswith(f'pid {holder.pid} on '), held


class _OpenedBeforeTheRelease(run_scope.RunLock):
  """A process that opened the lock's name just before its holder released
  it (and removed the file): its first descriptor is that file's."""

  def __init__(self, run_uri, root, early_fd):
    super().__init__(run_uri, root=root)
    self._early = [early_fd]

  def _Open(self):
    return self._early.pop() if self._early else super()._Open()


def test_a_lock_taken_on_a_file_just_removed_is_taken_again_by_name(
    tmp_path):
  root = str(tmp_path / 'locks')
  holder = run_scope.RunLock('abc', root=root).Acquire()
  early = os.open(holder.path, os.O_RDWR)
  holder.Release()
  assert not os.path.lexists(holder.path)
  late = _OpenedBeforeTheRelease('abc', root, early).Acquire()
  try:
    # The removed file was locked, found nameless, and the name opened
    # again: the lock held is the one a third process would find.
    assert os.path.exists(late.path)
    assert os.fstat(late._fd).st_ino == os.stat(late.path).st_ino  # pylint: disable=protected-access
    with pytest.raises(errors.UsageError, match='in use by pid'):
      run_scope.RunLock('abc', root=root)._Take()  # pylint: disable=protected-access
  finally:
    late.Release()


_CONTENDER = """
import os, sys, time
from perfkitbenchmarker import errors, run_scope
root, marker, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
run_uri = sys.argv[4] if len(sys.argv) > 4 else 'abc'
held = 0
for _ in range(rounds):
  lock = run_scope.RunLock(run_uri, root=root)
  if run_uri != 'abc':  # A run of its own: it only prunes the others.
    lock.Acquire()
    lock.Release()
    continue
  try:
    lock.Acquire()
  except errors.UsageError as e:
    if 'in use by' not in str(e):
      sys.exit(f'unexpected: {e}')
    continue
  try:
    fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
  except FileExistsError:
    sys.exit('two processes held the run lock at once')
  os.close(fd)
  time.sleep(0.001)
  os.unlink(marker)
  lock.Release()
  held += 1
print(held)
"""


def test_processes_taking_and_releasing_one_run_lock_never_hold_it_together(
    tmp_path):
  """Four processes take, hold and release the lock of one run_uri 300
  times each, the file removed at every release, while two runs of other
  run_uris take theirs (each time looking at every unheld lock file to
  remove it): never two holders at once."""
  root, marker = str(tmp_path / 'locks'), str(tmp_path / 'holder')
  procs = [subprocess.Popen(
      [sys.executable, '-c', _CONTENDER, root, marker, '300'] + other,
      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
      cwd=e2e.REPO) for other in ([], [], [], [], ['x'], ['y'])]
  held = []
  for proc in procs:
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err[-2000:]
    held.append(int(out))
  assert sum(held) > 0, held
  assert not os.path.lexists(marker)
  assert os.listdir(root) == []


def test_teardown_waits_a_moment_for_a_process_that_is_leaving(
    tmp_path, monkeypatch):
  """A process of the run still leaving the scratch directory as teardown
  comes (a shell a command forked, on a loaded machine: hunt 8's
  steady_quota run, 'still the working directory of PID 25784 (bash)')
  does not fail the teardown: the directory is asked again for
  run_scope.EXITING_S before it is called in use."""
  monkeypatch.setattr(local, 'SCRATCH_ROOT', str(tmp_path / 'scratch'))
  run_uri = e2e.NewRunUri()
  record = run_record.RunRecord.Create(str(tmp_path / 'results' / run_uri),
                                       run_uri)
  vm = local.LocalVirtualMachine(
      virtual_machine.VmSpec(cloud='Local', machine_type='local'),
      'servers-0', 'servers', run_uri=run_uri, record=record)
  vm.Create()
  leaving = subprocess.Popen(['bash', '-c', 'sleep 0.4'], cwd=vm.scratch_dir,
                             start_new_session=True)
  try:
    assert run_scope.WorkingIn(vm.scratch_dir)
    assert resource.TeardownFromRecord(
        run_record.RunRecord.Load(record.run_dir, run_uri)) == []
  finally:
    leaving.kill()
    leaving.wait(timeout=10)
  assert not os.path.exists(vm.scratch_dir)
