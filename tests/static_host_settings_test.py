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
import subprocess

import pytest

import e2e_support as e2e
from perfkitbenchmarker import errors
from perfkitbenchmarker import system_tuning
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
# private copies) or asserts their values, and this file's tests run one
# after another on one worker.
_ROOT = e2e.Needs('root (to tune this machine)', lambda: os.geteuid() == 0,
                  'run the tests as root')


@pytest.fixture
def machine(shipped_scripts):
  """This machine's settings before the test, put back after it whatever
  happened (the test checks the run did that itself, first); the tuning's
  script found where shipped_scripts put it."""
  del shipped_scripts  # In the environment.
  before = _InForce()
  yield before
  subprocess.run(['bash', '-c', system_tuning.RestoreCommand(before)],
                 capture_output=True, timeout=30, check=False)
  assert _InForce() == before


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


class _NoSudoVm:
  """A lent machine whose user has no passwordless sudo: the tuning's
  `sudo -n` is refused, so the settings are what `in_force` says."""

  name = 'servers-0'

  def __init__(self, in_force):
    self.in_force = in_force
    self.sudo_calls = []

  def Sudo(self, command):
    return f'sudo -n bash -c {command!r}'

  def RemoteCommand(self, command, timeout=None, what=None):
    del timeout, what
    assert command == system_tuning.SnapshotCommand()
    return ''.join(f'{k}={v}\n' for k, v in self.in_force.items()), ''

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
  # A value the run did change is still put back, and a refusal said.
  vm = _NoSudoVm(dict(old, net_core_somaxconn='65535'))
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
