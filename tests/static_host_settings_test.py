"""A machine lent for a run (Static) is given back with its settings.

Issue 35 class 7: on existing machines the run's system tuning changed
host-wide settings (transparent huge pages, somaxconn, overcommit) and
never put them back. Now the values in force are recorded in the run
record before the tuning (old value first) and written back at teardown,
whatever ended the run: a finished run and a killed one torn down from its
record. Over the loopback sshd the static VM tests use, so the machine
tuned is this one: each test puts back what it read first, whatever
happens, and checks the machine is as it was.
"""

import json
import os
import re
import shlex
import subprocess

import pytest

import e2e_support as e2e
from perfkitbenchmarker import errors
from perfkitbenchmarker import record_checks
from perfkitbenchmarker import run_record
from perfkitbenchmarker import run_scope
from perfkitbenchmarker import ssh_vm
from perfkitbenchmarker import system_tuning
from perfkitbenchmarker import virtual_machine
from perfkitbenchmarker.providers.static import provider

from sshd_fixture import sshd  # pylint: disable=unused-import  (fixture)

# What the static VM test's runs use: short probes, a fast search.
_RUN = ['--memtier_run_duration=1', '--memtier_max_threads=3',
        '--memtier_latency_capped_search=linear', '--memtier_clients=4',
        e2e.LOAD_PROOF_CAP_FLAG, '--memtier_key_maximum=20000',
        '--timeout_minutes=4', '--load_generator=redis_benchmark']


def _InForce():
  """This machine's restorable settings, read the way a run reads them."""
  out = subprocess.run(['bash', '-c', system_tuning.SnapshotCommand()],
                       capture_output=True, text=True, check=True,
                       timeout=30).stdout
  return system_tuning.ParseSnapshot(out)


# The run tunes (and the fixture puts back) this machine's settings. Not
# `alone`: no other test changes them (cloud_rehearsal_test tunes its hosts'
# private copies; every other static run passes --nosystem_tuning) or
# asserts their values; this file's tests take turns on the machine
# (`machine`), whatever worker runs them.
_ROOT = e2e.Needs('root (to tune this machine)', lambda: os.geteuid() == 0,
                  'run the tests as root')


def _Script(command):
  return subprocess.run(['bash', '-c', command], capture_output=True,
                        text=True, timeout=30, check=False).stdout


# Held by a test while it tunes this machine: the settings are the
# machine's, so two of these tests side by side (pytest -n without
# ./scripts/test.sh's --dist loadfile hands one file's tests to several
# workers; another checkout runs this file too) each see the other's
# tuning and lease place, and the first torn down gives nothing back. The
# runs' own lock (run_scope.RunLock, under a name no run_uri has: it has
# '-'), so its file goes with its holder; the tests run as root, so every
# checkout's take the one in root's lock directory.
_MACHINE_LOCK = 'static-host-settings-test'


def _TakeMachine() -> run_scope.RunLock:
  """The machine lock, once the test holding it (if any) lets it go."""
  lock = run_scope.RunLock(_MACHINE_LOCK)

  def Took():
    try:
      lock.Acquire()
    except errors.UsageError:  # Held: another test tunes the machine.
      return False
    return True

  e2e.WaitFor(Took, 'turn on this machine (the other tests tuning it)',
              timeout=600)
  return lock


@pytest.fixture
def machine(shipped_scripts):
  """This machine's settings before the test, taken in turn with the other
  tests tuning it (_TakeMachine), put back after it whatever happened
  (the test checks the run did that itself, first) by the tuning's own
  restore: a lease of the values before, held by the fixture alone; the
  tuning's script found where shipped_scripts put it."""
  del shipped_scripts  # In the environment.
  lock = _TakeMachine()
  try:
    assert not os.path.lexists(system_tuning.LEASE_FILE), (
        'a tuning is in force on this machine; tear its run down first')
    before = _InForce()
    yield before
    with open(system_tuning.LEASE_FILE, 'w') as f:
      f.write(''.join(f'{k}={v}\n' for k, v in before.items()) +
              'holder=fixture\n')
    _Script(system_tuning.RestoreCommand('fixture'))
    assert _InForce() == before
    assert not os.path.lexists(system_tuning.LEASE_FILE)
  finally:
    lock.Release()


def _StaticFile(tmp_path, server):
  """This machine over the loopback sshd, as the server and the client."""
  path = tmp_path / 'static.json'
  path.write_text(json.dumps([{
      'ip_address': server.host, 'user_name': server.user,
      'keyfile_path': server.user_key, 'ssh_port': server.port}] * 2))
  return str(path)


def _StaticRun(tmp_path, sshd, *extra):
  """(results dir, argv) of a run on the loopback sshd's static machine."""
  return (str(tmp_path / 'results'),
          _RUN + [f'--static_vm_file={_StaticFile(tmp_path, sshd)}',
                  *extra])


def _Entries(results, run_uri):
  return [e for e in e2e.Record(results, run_uri)['resources']
          if e['kind'] == provider.HostSettings.KIND]


def test_recorded_values_are_input_checked_before_they_reach_a_root_shell():
  good = {'vm_overcommit_memory': '0', 'transparent_hugepage': 'madvise',
          'limits_file': 'absent'}
  assert system_tuning.RestoreProblem(good) == ''
  for bad in ({'vm_overcommit_memory': '0; touch /tmp/pwned'},
              {'transparent_hugepage': '$(id)'},
              {'/etc/shadow': '1'}, {'limits_file': 'gone'}):
    assert system_tuning.RestoreProblem(bad), bad
  entry = {'kind': provider.HostSettings.KIND, 'name': 'servers-0',
           'status': 'created',
           'data': {'vm_name': 'servers-0',
                    'old': {'net_core_somaxconn': '1 > /etc/passwd'}}}
  with pytest.raises(errors.ResourceError, match='no value of that setting'):
    provider.HostSettings.FromRecord(entry, None)
  entry['data'] = {'vm_name': 'servers-0', 'old': good,
                   'machine': {'vm_overcommit_memory': '$(reboot)'}}
  with pytest.raises(errors.ResourceError, match='no value of that setting'):
    provider.HostSettings.FromRecord(entry, None)


class _NoSudoVm:
  """A lent machine whose user has no passwordless sudo: the tuning's
  `sudo -n` is refused, so the settings are what `in_force` says, and the
  lease's holders what `holders` says."""

  name = 'servers-0'
  run_uri = 'ta1b2c3d'

  def __init__(self, in_force, holders=()):
    self.in_force = in_force
    self.holders = holders
    self.sudo_calls = []

  def Sudo(self, command):
    return f'sudo -n bash -c {command!r}'

  def RemoteCommand(self, command, timeout=None, what=None):
    del timeout, what
    assert command == system_tuning.SnapshotCommand()
    return ''.join([f'{k}={v}\n' for k, v in self.in_force.items()] +
                   [f'holder={h}\n' for h in self.holders]), ''

  def RemoteCommandWithReturnCode(self, command, timeout=None):
    del timeout
    self.sudo_calls.append(command)
    return '', 'sudo: a password is required\n', 1


def test_a_machine_the_tuning_never_changed_is_given_back_without_sudo():
  # Before: teardown ran restore under sudo whatever was in force, so every
  # teardown of such a machine failed ('could not put back the settings on
  # servers-0 (sudo: a password is required)') and left it live.
  old = {'transparent_hugepage': 'madvise', 'net_core_somaxconn': '4096',
         'limits_file': 'absent'}
  vm = _NoSudoVm(dict(old))
  provider.HostSettings(vm, old)._Delete()  # pylint: disable=protected-access
  assert vm.sudo_calls == []
  # Another run's tuning in force is not this run's to put back.
  vm = _NoSudoVm(dict(old, net_core_somaxconn='65535'),
                 holders=['tb4c5d6e/servers-0'])
  provider.HostSettings(vm, old)._Delete()  # pylint: disable=protected-access
  assert vm.sudo_calls == []
  # A tuning the run holds is still given back, and a refusal said.
  vm = _NoSudoVm(dict(old, net_core_somaxconn='65535'),
                 holders=['ta1b2c3d/servers-0'])
  with pytest.raises(errors.ResourceError, match=(
      r'could not put back the settings on servers-0 \(sudo: a password is '
      r'required\)')):
    provider.HostSettings(vm, old)._Delete()  # pylint: disable=protected-access
  assert len(vm.sudo_calls) == 1


def _GivenBack(proc, results, run_uri, machine):
  """The run (or its teardown) ended well, the machine is as it was and
  the record held what it was."""
  assert proc.returncode == 0, proc.stderr[-2000:]
  assert _InForce() == machine
  entry, = _Entries(results, run_uri)
  assert entry['data']['old'] == machine and entry['status'] == 'deleted'


@pytest.mark.e2e
@_ROOT
def test_a_finished_run_gives_the_machine_back_as_it_was(
    tmp_path, sshd, machine):  # pylint: disable=redefined-outer-name
  results, argv = _StaticRun(tmp_path, sshd)
  proc, run_uri = e2e.Run(argv, results)
  _GivenBack(proc, results, run_uri, machine)


@pytest.mark.e2e
@_ROOT
def test_a_killed_run_torn_down_from_its_record_puts_them_back(
    tmp_path, sshd, machine):  # pylint: disable=redefined-outer-name
  results, argv = _StaticRun(tmp_path, sshd)
  run_uri = e2e.NewRunUri()
  proc = e2e.StartUntil(argv, run_uri, results)
  try:
    tuned = _InForce()
    os.killpg(os.getpgid(proc.pid), 0)  # Still running: killed below.
  finally:
    teardown = e2e.KillAndTearDown(proc, run_uri, results)
  assert tuned['net_core_somaxconn'] == '65535', tuned
  _GivenBack(teardown, results, run_uri, machine)


@pytest.mark.e2e
@_ROOT
def test_nosystem_tuning_changes_nothing_and_records_nothing(
    tmp_path, sshd, machine):  # pylint: disable=redefined-outer-name
  results, argv = _StaticRun(tmp_path, sshd, '--nosystem_tuning')
  proc, run_uri = e2e.Run(argv, results)
  assert proc.returncode == 0, proc.stderr[-2000:]
  assert _InForce() == machine and _Entries(results, run_uri) == []


def _LentVm(sshd, run_uri,  # pylint: disable=redefined-outer-name
            kind=provider.StaticVirtualMachine, record=None):
  """servers-0 of run `run_uri` on this machine, reached over the sshd."""
  vm = kind(
      virtual_machine.VmSpec(cloud=provider.CLOUD, machine_type='static'),
      'servers-0', 'servers', user=sshd.user, ip_address=sshd.host,
      keyfile=sshd.user_key, port=sshd.port, run_uri=run_uri, record=record)
  vm.WaitForSsh(30)
  return vm


def _RunsABC(sshd, runs):  # pylint: disable=redefined-outer-name
  """Runs A and B with records under `runs` (A's lists its VM's scratch
  directory in its workspace, as a run records it), and C with none: the
  machine's servers-0 of each."""
  a_uri, b_uri, c_uri = (f'{x}{os.getpid()}' for x in 'abc')
  a = _LentVm(sshd, a_uri, record=run_record.RunRecord.Create(
      str(runs / a_uri), a_uri))
  a.record.AddResource(a.KIND, a.name, **a.RecordData())
  b = _LentVm(sshd, b_uri, record=run_record.RunRecord.Create(
      str(runs / b_uri), b_uri))
  return a, b, _LentVm(sshd, c_uri)


def _Tuned(vm):
  """Tunes as a run's prepare does; returns the run's HostSettings."""
  vm.ApplySystemTuning(True)
  return provider.HostSettings(vm, {})


@pytest.mark.e2e
@_ROOT
def test_two_runs_on_one_machine_give_it_back_as_before_the_first(
    sshd, machine, caplog):  # pylint: disable=redefined-outer-name
  # Before: run B, started while A's tuning was in force, recorded A's
  # values as the machine's (somaxconn 65535, overcommit 1, THP never);
  # A's teardown put the lender's back under B's measurements, and B's
  # teardown wrote A's tuning back: the machine stayed tuned for good.
  tuned = {'net_core_somaxconn': '65535', 'vm_overcommit_memory': '1',
           'limits_file': 'present'}
  a, b, c = (_LentVm(sshd, f'{x}{os.getpid()}') for x in 'abc')
  cloud = _LentVm(sshd, f'd{os.getpid()}', ssh_vm.SshVirtualMachine)
  try:
    # Side by side, the first torn down first.
    a_settings = _Tuned(a)
    b_settings = _Tuned(b)
    assert f'the tuning of a{os.getpid()}/servers-0 is in force' in caplog.text
    a_settings.Delete()
    assert tuned.items() <= _InForce().items()  # B still measures under it.
    assert f'while the tuning of b{os.getpid()}/servers-0' in caplog.text
    b_settings.Delete()
    assert _InForce() == machine
    # One after another; then one never torn down while another is.
    _Tuned(a).Delete()
    assert _InForce() == machine
    a_settings, c_settings = _Tuned(a), _Tuned(c)
    c_settings.Delete()
    assert tuned.items() <= _InForce().items()
    a_settings.Delete()  # Its teardown, late.
    assert _InForce() == machine
    a_settings.Delete()  # Given up already: nothing to do, no sudo.
    assert _InForce() == machine
    # A machine deleted with the run (a cloud VM) holds no place: none
    # would ever give it up.
    cloud.ApplySystemTuning(True)
    assert tuned.items() <= _InForce().items()
    assert not os.path.lexists(system_tuning.LEASE_FILE)
  finally:
    for vm in (a, b, c, cloud):
      vm.Delete()



@pytest.mark.e2e
@_ROOT
def test_a_run_that_came_while_another_tuned_records_the_machines_own(
    tmp_path, sshd, machine):  # pylint: disable=redefined-outer-name
  """Run B came while A's tuning was in force. Before: B's record held
  A's tuned values as those before it ('old': somaxconn 65535, THP
  never), the lender's nowhere in it. Now it holds both: those it found
  ('old') and the machine's own (the lease's, 'machine')."""
  a = _LentVm(sshd, f'a{os.getpid()}')
  b_uri = f'b{os.getpid()}'
  b = _LentVm(sshd, b_uri, record=run_record.RunRecord.Create(
      str(tmp_path / 'runs' / b_uri), b_uri))
  try:
    a_settings = _Tuned(a)
    tuned = _InForce()
    b.ApplySystemTuning(True)
    entry, = [e for e in b.record.Resources()
              if e['kind'] == provider.HostSettings.KIND]
    assert entry['data']['old'] == tuned != machine
    assert entry['data']['machine'] == machine
    provider.HostSettings(b, entry['data']['old'],
                          entry['data']['machine']).Delete()
    a_settings.Delete()
    assert _InForce() == machine
  finally:
    for vm in (a, b):
      vm.Delete()


@pytest.mark.e2e
@_ROOT
def test_a_run_whose_record_is_lost_is_named_with_how_to_give_it_back(
    tmp_path, sshd, machine, caplog):  # pylint: disable=redefined-outer-name
  """Run A tuned the machine and lost its record (and its workspace: no
  teardown ran); run B came while A's tuning was in force. Before: every
  later teardown said only that the settings stay tuned while A's tuning
  is in force, with a teardown of A that cannot run (no record): the
  machine stayed tuned for good. Now B's teardown names A as a run with
  nothing on the machine, with the command that gives A's place up; that
  command gives the machine back."""
  a = _LentVm(sshd, f'a{os.getpid()}')
  b_uri = f'b{os.getpid()}'
  b = _LentVm(sshd, b_uri, record=run_record.RunRecord.Create(
      str(tmp_path / 'runs' / b_uri), b_uri))
  try:
    a.ApplySystemTuning(True)
    a.CleanUpScratch()  # A's workspace gone: a run ended, record lost.
    tuned = _InForce()
    b.ApplySystemTuning(True)
    entry, = [e for e in b.record.Resources()
              if e['kind'] == provider.HostSettings.KIND]
    provider.HostSettings(b, entry['data']['old'],
                          entry['data']['machine']).Delete()
    assert _InForce() == tuned  # A's place is still held.
    said, = [r.getMessage() for r in caplog.records
             if f'stay tuned for a{os.getpid()}/servers-0,' in r.getMessage()]
    assert 'whose run has no workspace there' in said, said
    command = said.partition('give its place up: ')[2]
    assert command == (
        f'ssh -p {sshd.port} -i {sshd.user_key} {sshd.user}@{sshd.host} '
        f'sudo bash -s restore a{os.getpid()}/servers-0 '
        '< perfkitbenchmarker/scripts/system_tuning.sh'), said
    # As the user would run it (this test's sshd key is unknown to ssh).
    done = subprocess.run(
        ['bash', '-c', command.replace(
            'ssh ', 'ssh -o StrictHostKeyChecking=no -o BatchMode=yes '
            '-o UserKnownHostsFile=/dev/null ', 1)],
        cwd=e2e.REPO, capture_output=True, text=True, timeout=60,
        check=False)
    assert done.returncode == 0, done.stderr
    assert _InForce() == machine
    assert not os.path.lexists(system_tuning.LEASE_FILE)
  finally:
    for vm in (a, b):
      vm.Delete()


@pytest.mark.e2e
@_ROOT
def test_a_run_whose_tuning_stays_is_named_with_its_teardown(
    tmp_path, sshd, machine, caplog):  # pylint: disable=redefined-outer-name
  """Runs A and C tuned the machine and are not torn down; B's teardown
  leaves the settings tuned for them. Before: it told the user to run a
  placeholder (./pkb.py --run_stage=teardown --run_uri=<run_uri>), which
  for A, whose record is kept off the default results directory, looks
  for it where it is not. Now A's teardown is named with its
  --results_dir (its record, beside B's, lists its workspace there), and
  C, whose record is nowhere this runner looks, is said to be torn down
  where it was started."""
  runs = tmp_path / 'runs'
  a, b, c = _RunsABC(sshd, runs)
  a_uri, c_uri = a.run_uri, c.run_uri
  try:
    a.ApplySystemTuning(True)
    c_settings = _Tuned(c)
    b.ApplySystemTuning(True)
    entry, = [e for e in b.record.Resources()
              if e['kind'] == provider.HostSettings.KIND]
    provider.HostSettings(b, entry['data']['old'],
                          entry['data']['machine']).Delete()
    said, = [r.getMessage() for r in caplog.records
             if 'stay tuned while the tuning of' in r.getMessage()]
    assert said == (
        f'Settings on servers-0 stay tuned while the tuning of '
        f'{a_uri}/servers-0, {c_uri}/servers-0 is in force (<run_uri>/<vm>: '
        f'running, or not torn down: ./pkb.py --run_stage=teardown '
        f'--run_uri={a_uri} --results_dir={shlex.quote(str(runs))}; run '
        f'{c_uri} where it was started (its results directory is not known '
        'here)); the last one torn down puts back the values before the '
        'first.'), said
    c_settings.Delete()
    entry, = [e for e in a.record.Resources()
              if e['kind'] == provider.HostSettings.KIND]
    provider.HostSettings(a, entry['data']['old'],
                          entry['data']['machine']).Delete()
    assert _InForce() == machine
  finally:
    for vm in (a, b, c):
      vm.Delete()


@pytest.mark.e2e
@_ROOT
def test_a_run_that_tunes_beside_others_names_their_teardowns(
    tmp_path, sshd, machine, caplog):  # pylint: disable=redefined-outer-name
  """Runs A and C tuned the machine and are not torn down; B's tuning
  finds theirs in force. Before: B's prepare said their tunings are in
  force there too with a placeholder (<run_uri>/<vm>) and no teardown to
  run. Now it names A's teardown with its --results_dir (its record,
  beside B's, lists its workspace there) and says C, whose record is
  nowhere this runner looks, is torn down where it was started: the same
  advice B's teardown gives."""
  runs = tmp_path / 'runs'
  a, b, c = _RunsABC(sshd, runs)
  a_uri, c_uri = a.run_uri, c.run_uri
  try:
    settings = [_Tuned(a), _Tuned(c)]
    caplog.clear()
    settings.append(_Tuned(b))
    said, = [r.getMessage() for r in caplog.records
             if 'is in force there too' in r.getMessage()]
    assert said == (
        f'System tuning on servers-0: the tuning of {a_uri}/servers-0, '
        f'{c_uri}/servers-0 is in force there too (<run_uri>/<vm>: running, '
        f'or not torn down: ./pkb.py --run_stage=teardown --run_uri={a_uri} '
        f'--results_dir={shlex.quote(str(runs))}; run {c_uri} where it was '
        'started (its results directory is not known here)); the settings '
        'go back as they were before the first when the last is torn '
        'down.'), said
    # The workspaces the tuning named are no setting of the metadata.
    assert not {'tuning_shared', 'tuning_workspace'} & set(b.tuning), b.tuning
    for held in settings:
      held.Delete()
    assert _InForce() == machine
  finally:
    for vm in (a, b, c):
      vm.Delete()


@pytest.mark.e2e
@_ROOT
def test_a_run_that_tunes_beside_a_lost_run_says_how_to_give_its_place_up(
    sshd, machine, caplog):  # pylint: disable=redefined-outer-name
  """Run A tuned the machine and lost its workspace (and record: no
  teardown ran); C tuned it and is not torn down; B's tuning finds both in
  force. Before: B's prepare told the user to run A's teardown where it
  was started, which cannot run, while B's teardown gave the command that
  gives A's place up. Now B's prepare says of A what its teardown says,
  and C's advice is as before."""
  a_uri, b_uri, c_uri = (f'{x}{os.getpid()}' for x in 'abc')
  a, b, c = (_LentVm(sshd, uri) for uri in (a_uri, b_uri, c_uri))
  try:
    a.ApplySystemTuning(True)
    c_settings = _Tuned(c)
    a.CleanUpScratch()  # A's workspace gone: a run ended, record lost.
    caplog.clear()
    b_settings = _Tuned(b)
    said = [r.getMessage() for r in caplog.records
            if r.getMessage().startswith('System tuning on servers-0')]
    lost = (f'{a_uri}/servers-0, whose run has no workspace there '
            f'({record_checks.REMOTE_SCRATCH_ROOT}/pkb-{a_uri}.*): nothing '
            'of it runs there. If no teardown of that run can run (its run '
            'record lost), give its place up: '
            f'ssh -p {sshd.port} -i {sshd.user_key} {sshd.user}@{sshd.host} '
            f'sudo bash -s restore {a_uri}/servers-0 '
            '< perfkitbenchmarker/scripts/system_tuning.sh')
    assert said == [
        f'System tuning on servers-0 shares the settings with {lost}',
        f'System tuning on servers-0: the tuning of {c_uri}/servers-0 is in '
        f'force there too (<run_uri>/<vm>: running, or not torn down: run '
        f'{c_uri} where it was started (its results directory is not known '
        'here)); the settings go back as they were before the first when '
        'the last is torn down.'], said
    # The same words as B's teardown says of A.
    b_settings.Delete()
    assert f'Settings on servers-0 stay tuned for {lost}' in [
        r.getMessage() for r in caplog.records], caplog.text
    assert 'tuning_unseen' not in b.tuning, b.tuning
    c_settings.Delete()
    _Script(system_tuning.RestoreCommand(f'{a_uri}/servers-0'))  # As said.
    assert _InForce() == machine
  finally:
    for vm in (a, b, c):
      vm.Delete()


@pytest.mark.e2e
@_ROOT
def test_a_run_under_way_started_later_is_found_wherever_its_results_are(
    tmp_path, sshd, machine, caplog):  # pylint: disable=redefined-outer-name
  """Run D, started on this runner after B provisioned, keeps its results
  in a directory of its own and tunes the machine; B tunes it, then is
  torn down, while D is under way. Before: B looked D's record up only
  where the runs under way when B provisioned said (none: D was not yet)
  and beside B's and in the default results directory, so both its
  warnings said D is torn down where it was started. Now the run lock D's
  pkb holds on this runner names D's results, and both give D's teardown
  with its --results_dir."""
  elsewhere = tmp_path / 'elsewhere'
  b_uri, d_uri = (f'{x}{os.getpid()}' for x in 'bd')
  b = _LentVm(sshd, b_uri, record=run_record.RunRecord.Create(
      str(tmp_path / 'runs' / b_uri), b_uri))
  d_lock = run_scope.RunLock(d_uri, run_dir=str(elsewhere / d_uri)).Acquire()
  try:
    d = _LentVm(sshd, d_uri, record=run_record.RunRecord.Create(
        str(elsewhere / d_uri), d_uri))
    try:
      d.record.AddResource(d.KIND, d.name, **d.RecordData())
      d_settings = _Tuned(d)
      b_settings = _Tuned(b)
      b_settings.Delete()
      teardown = (f'./pkb.py --run_stage=teardown --run_uri={d_uri} '
                  f'--results_dir={shlex.quote(str(elsewhere))}')
      said = [r.getMessage() for r in caplog.records
              if f'the tuning of {d_uri}/servers-0 is in force'
              in r.getMessage()]
      assert len(said) == 2 and all(
          f'(<run_uri>/<vm>: running, or not torn down: {teardown});'
          in line for line in said), said
      d_settings.Delete()
      assert _InForce() == machine
    finally:
      d.Delete()
  finally:
    b.Delete()
    d_lock.Release()


@pytest.mark.e2e
def test_a_workspace_name_another_user_chose_adds_no_line(tmp_path):
  """system_tuning.sh's workspaces: the names under the workspaces' root
  are any user's. One with a newline in it was read as two (compgen's
  lines), its second a line of its own to the runner; one of other than
  plain characters is now not said, though it counts as found."""
  script = os.path.join(os.path.dirname(os.path.dirname(
      os.path.abspath(__file__))), 'perfkitbenchmarker', 'scripts',
                        'system_tuning.sh')
  with open(script) as f:
    function = re.search(r'^workspaces\(\) \{\n.*?^\}\n', f.read(),
                         re.M | re.S).group(0)

  def Said(holder):
    done = subprocess.run(
        ['bash', '-c', function + 'workspaces tuning_workspace "$@"', 'x',
         str(tmp_path), holder], capture_output=True, text=True, timeout=30,
        check=False)
    return done.returncode, done.stdout.split('\n')

  (tmp_path / 'pkb-ab1.Xy12').mkdir()
  assert Said('ab1/servers-0') == (
      0, [f'tuning_workspace=ab1/servers-0 {tmp_path}/pkb-ab1.Xy12', ''])
  (tmp_path / 'pkb-ab1.Xy12').rmdir()
  (tmp_path / 'pkb-ab1.q\ntuning_failed=lease').mkdir()
  assert Said('ab1/servers-0') == (0, [''])  # found, not said
  assert Said('zz9/servers-0')[0] == 1  # none
