"""Every SSH wait ends with the run: a frozen sshd cannot hold a run past
its deadline (issue 24 item 9).

A frozen server is a real sshd stopped with SIGSTOP: the kernel still
accepts the TCP connection, but no banner comes, so each ssh waits its whole
connect timeout (short here, injected through the VM's constructor).
"""

import os
import shutil
import signal
import tempfile
import threading
import time

import psutil
import pytest

import e2e_support

from perfkitbenchmarker import errors
from perfkitbenchmarker import ssh_vm
from perfkitbenchmarker import virtual_machine
from perfkitbenchmarker import vm_util

import sshd_fixture

# Every test here starts a process (tests/tier_guard.py).
pytestmark = pytest.mark.e2e

SPEC = virtual_machine.VmSpec(cloud='Static', machine_type='static')


@pytest.fixture
def server(tmp_path):
  if not sshd_fixture.Available():
    e2e_support.Unavailable('sshd', 'scripts/setup.sh installs openssh-server')
  sshd = sshd_fixture.Sshd(str(tmp_path / 'sshd')).Start()
  yield sshd
  _Thaw(sshd)
  sshd.Stop()


def _Processes(sshd):
  """The listening sshd and every session process it forked."""
  main = psutil.Process(sshd._proc.pid)  # pylint: disable=protected-access
  return [main] + main.children(recursive=True)


def _Freeze(sshd, sessions=False):
  for proc in _Processes(sshd) if sessions else _Processes(sshd)[:1]:
    proc.send_signal(signal.SIGSTOP)


def _Thaw(sshd):
  for proc in _Processes(sshd):
    try:
      proc.send_signal(signal.SIGCONT)
    except psutil.NoSuchProcess:
      pass


@pytest.fixture
def control_dir():
  # Short: a control socket's path must fit in 108 bytes.
  path = tempfile.mkdtemp(prefix='pkb-dl-')
  yield path
  shutil.rmtree(path, ignore_errors=True)


def _Vm(sshd, control, tmp_path, name='vm-0', **kwargs):
  return ssh_vm.SshVirtualMachine(
      SPEC, name, 'servers', user=sshd.user, ip_address=sshd.host,
      keyfile=sshd.user_key, port=sshd.port,
      known_hosts_file=str(tmp_path / 'known_hosts'),
      control_dir=control, run_uri=f'dl{os.getpid()}', **kwargs)


def _InThread(function):
  """Runs function in a thread; returns (thread, outcome dict)."""
  outcome = {}

  def Body():
    try:
      outcome['result'] = function()
    except BaseException as e:  # pylint: disable=broad-except
      outcome['error'] = e
    outcome['ended'] = time.monotonic()

  thread = threading.Thread(target=Body, daemon=True)
  thread.start()
  return thread, outcome


def test_a_stop_ends_connection_retries_in_any_thread(server, control_dir, tmp_path):  # pylint: disable=redefined-outer-name
  vm = _Vm(server, control_dir, tmp_path, connect_timeout=1, connect_retries=6,
           host_health=ssh_vm.HostHealth())
  _Freeze(server)
  thread, outcome = _InThread(lambda: vm.RemoteCommandWithReturnCode('true'))
  time.sleep(1.5)  # In its first attempts' connect timeout or pause.
  vm_util.StopChildren()  # What the deadline (or a signal) does.
  # Six attempts would take over 30 s: the stop ends them (the join is the
  # test's hang guard, far above what the stop takes).
  thread.join(20)
  assert not thread.is_alive()
  assert isinstance(outcome.get('error'), ssh_vm.SshError)


def test_a_host_that_did_not_answer_costs_one_connect_timeout(
    server, control_dir, tmp_path):  # pylint: disable=redefined-outer-name
  health = ssh_vm.HostHealth()
  _Freeze(server)
  first = _Vm(server, control_dir, tmp_path, connect_timeout=1, connect_retries=2,
              host_health=health)
  with pytest.raises(ssh_vm.SshError, match='banner exchange'):
    first.RemoteCommand('true')
  # Teardown rebuilds one VM object per record entry: each of the five
  # fails at once instead of waiting out its own connect timeouts: "did not
  # answer ... ago" is said only by that path, before any ssh is started (a
  # VM that tried would fail with the banner exchange's message).
  for i in range(5):
    vm = _Vm(server, control_dir, tmp_path, name=f'vm-{i}', connect_timeout=1,
             connect_retries=2, host_health=health)
    with pytest.raises(ssh_vm.SshError, match='did not answer') as raised:
      vm.RemoteCommand('true')
    assert '\n' not in str(raised.value)
  # Once it answers again, commands run again.
  _Thaw(server)
  time.sleep(1)  # Past the pause after its last failed attempt.
  assert first.RemoteCommand('echo back')[0] == 'back\n'
  assert not health.IsDown(first.CommandLane())
  first.StopMaster()


# Its connect timeout must be what is left of the 3 s wait, not 60 s: one
# 60 s attempt would break this hang guard (sshd's start included).
@pytest.mark.timeout(40)
def test_wait_for_ssh_never_outlasts_its_timeout(server, control_dir, tmp_path):  # pylint: disable=redefined-outer-name
  vm = _Vm(server, control_dir, tmp_path, connect_timeout=60,
           host_health=ssh_vm.HostHealth())
  _Freeze(server)
  with pytest.raises(ssh_vm.SshError, match='no SSH .* after 3s'):
    vm.WaitForSsh(3)


def test_a_stop_ends_the_wait_for_a_detached_command(server, control_dir, tmp_path):  # pylint: disable=redefined-outer-name
  vm = _Vm(server, control_dir, tmp_path, host_health=ssh_vm.HostHealth())
  vm.WaitForSsh(20)
  try:
    thread, outcome = _InThread(
        lambda: vm.RunDetached('sleep 30; echo done', timeout=60))
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and not _Sleepers():
      time.sleep(0.1)
    assert _Sleepers(), 'the detached command did not start'
    _Freeze(server, sessions=True)  # The collector's connection hangs.
    time.sleep(0.5)
    vm_util.StopChildren()
    _Thaw(server)
    thread.join(15)
    assert not thread.is_alive()
    assert isinstance(outcome.get('error'), errors.Error)
    # It did not wait for the 30 s command (nor reconnect until its own
    # deadline): it ended with the stop (the join above is the hang guard,
    # half the command), and the command was killed.
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and _Sleepers():
      time.sleep(0.1)
    assert not _Sleepers()
  finally:
    vm.CleanUpScratch()
    vm.StopMaster()


def _Sleepers():
  """This test's `sleep 30` processes (the detached command)."""
  found = []
  for proc in psutil.process_iter(['cmdline']):
    if (proc.info['cmdline'] or [])[:2] == ['sleep', '30']:
      try:
        if f'/pkb-dl{os.getpid()}.' in proc.cwd():
          found.append(proc)
      except psutil.Error:
        pass
  return found
