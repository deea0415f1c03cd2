"""Valkey, KeyDB and Dragonfly install errors name the VM they happened on.

Installs run on every VM of a run at once (study/deployment.py PrepareVms);
one failure is raised as itself and several are joined into one line, so
each message has to say which VM it is about. The pure script builders name
the OS; `Install` builds them through remote_install.ScriptFor, which puts
the VM's name in front, and its own commands say which VM they ran on. `ScriptedVm` is a real
BaseVirtualMachine (its RemoteCommand and Install are the real ones) whose
commands answer from a table instead of running anywhere.
"""

import dataclasses

import pytest

import e2e_support as e2e
from perfkitbenchmarker import engines
from perfkitbenchmarker import errors
from perfkitbenchmarker import providers
from perfkitbenchmarker import redis_shard
from perfkitbenchmarker import shell_scripts
from perfkitbenchmarker import system_info
from perfkitbenchmarker import trusted_programs
from perfkitbenchmarker import virtual_machine
from perfkitbenchmarker.linux_packages import argv_secret
from perfkitbenchmarker.linux_packages import dragonfly_server
from perfkitbenchmarker.linux_packages import keydb_server
from perfkitbenchmarker.linux_packages import redis_server
from perfkitbenchmarker.linux_packages import remote_install
from perfkitbenchmarker.linux_packages import valkey_server
from perfkitbenchmarker.linux_packages import ycsb
from perfkitbenchmarker.study import deployment

ALPINE = system_info.SystemInfo(
    os_id='alpine', os_version_id='3.20', os_pretty_name='Alpine Linux v3.20',
    arch='x86_64')
# A Debian-like OS whose /etc/os-release has no VERSION_CODENAME.
NO_CODENAME = system_info.SystemInfo(
    os_id='debian', os_version_id='13', os_pretty_name='Debian GNU/Linux 13',
    arch='x86_64', package_managers=('apt-get',))
DEBIAN = system_info.SystemInfo(
    os_id='debian', os_version_id='12', os_codename='bookworm',
    os_pretty_name='Debian GNU/Linux 12 (bookworm)', arch='x86_64',
    package_managers=('apt-get',))


class ScriptedVm(virtual_machine.BaseVirtualMachine):
  """A remote VM whose commands answer from `answers` (first prefix wins);
  anything else fails as "command not found" (and the PATH check,
  trusted.sh, answers as the real one does for a program PATH lacks).
  Nothing ever runs as root."""

  CLOUD = 'Static'

  def __init__(self, name, info=DEBIAN, answers=None, cloud='Static'):
    super().__init__(virtual_machine.VmSpec(cloud=cloud, machine_type='m'),
                     name, 'servers')
    self.CLOUD = cloud  # pylint: disable=invalid-name
    self.CAN = providers.CapabilitiesOf(cloud)  # pylint: disable=invalid-name
    self.info = info
    self.answers = dict(answers or {})
    self.commands = []
    self.root_scripts = []

  def RemoteCommandWithReturnCode(self, command, timeout=None, env=None,
                                  stdin=None):
    self.commands.append(command)
    for prefix, answer in self.answers.items():
      if command.startswith(prefix):
        return answer
    if '/trusted.sh ' in command:
      return '', '', trusted_programs.NOT_ON_PATH
    return '', f'bash: {command.split()[0]}: command not found', 127

  def _Create(self):
    raise AssertionError('a stand-in is never created')

  def _Delete(self):
    raise AssertionError('a stand-in is never deleted')

  def DetectSystem(self):
    return self.info

  def Sudo(self, command):
    return command

  def RunDetached(self, command, timeout, env=None, poll_interval_s=2.0):
    self.root_scripts.append(command)
    return '', '', 0


def _Message(function, *args, **kwargs) -> str:
  with pytest.raises(errors.Error) as caught:
    function(*args, **kwargs)
  message = str(caught.value)
  assert '\n' not in message
  return message


# --- The pure script builders name the OS; Install adds the VM -------------

def test_pure_builders_refuse_in_one_line_naming_the_os():
  assert _Message(valkey_server.InstallScript, ALPINE).startswith(
      'Cannot install Valkey on Alpine Linux v3.20: ')
  assert _Message(keydb_server.InstallScript, ALPINE).startswith(
      'Cannot install KeyDB on Alpine Linux v3.20: ')
  assert _Message(dragonfly_server.InstallScript, ALPINE,
                  'x86_64').startswith(
                      'Cannot install Dragonfly on Alpine Linux v3.20: ')
  assert 'on an unknown CPU' in _Message(dragonfly_server.AssetUrls, '',
                                         'distro')
  message = _Message(keydb_server.InstallScript, NO_CODENAME)
  assert 'no VERSION_CODENAME' in message
  assert f'--redis_server_version={keydb_server.SOURCE_RELEASE}' in message
  # A pinned release builds from source and needs no codename.
  assert 'build' in [step[0] for step in e2e.InstallSteps(
      keydb_server.InstallScript(NO_CODENAME, keydb_server.SOURCE_RELEASE))]


def test_installs_on_an_unsupported_os_name_the_vm():
  answers = {'uname -m': ('x86_64\n', '', 0)}
  for install, program in ((valkey_server.Install, 'Valkey'),
                           (keydb_server.Install, 'KeyDB'),
                           (dragonfly_server.Install, 'Dragonfly'),
                           (remote_install.InstallRedisTools, 'redis-tools'),
                           (remote_install.InstallMemtier, 'memtier'),
                           (lambda vm: remote_install.InstallRedis(
                               vm, 'distro'), 'Redis')):
    vm = ScriptedVm('servers-1', ALPINE, answers)
    message = _Message(install, vm)
    assert message.startswith('On servers-1: '), message
    assert 'Alpine Linux v3.20' in message and program in message
    assert not vm.root_scripts  # refused before anything ran as root


def test_ycsb_and_compiler_installs_name_the_vm():
  vm = ScriptedVm('clients-3', ALPINE)
  assert _Message(remote_install.ScriptFor, vm,
                  ycsb.JdkInstallScript).startswith('On clients-3: ')
  assert _Message(remote_install.ScriptFor, vm,
                  argv_secret.CompilerInstall).startswith('On clients-3: ')
  # What the builder returns passes through unchanged.
  assert remote_install.ScriptFor(
      ScriptedVm('clients-3'), argv_secret.CompilerInstall) == (
          argv_secret.CompilerInstall(DEBIAN))


def test_keydb_install_without_codename_names_the_vm():
  message = _Message(keydb_server.Install, ScriptedVm('servers-2',
                                                      NO_CODENAME))
  assert message.startswith('On servers-2: ')
  assert 'no VERSION_CODENAME' in message


def test_dragonfly_install_names_the_vm_on_an_unknown_cpu():
  vm = ScriptedVm('servers-4', dataclasses.replace(DEBIAN, arch='riscv64'))
  assert _Message(dragonfly_server.Install, vm).startswith(
      'On servers-4: Cannot install Dragonfly on riscv64: ')


def test_local_valkey_without_the_wheel_names_the_vm(monkeypatch):
  monkeypatch.setattr(valkey_server, 'WHEEL', 'pkb_no_such_wheel')
  vm = ScriptedVm('servers-0', cloud='Local')
  message = _Message(valkey_server.Install, vm)
  assert message.startswith('Cannot run Valkey on servers-0 (this machine): '
                            'pkb_no_such_wheel ')
  assert 'run ./scripts/setup.sh' in message


@pytest.mark.parametrize('engine,program', [
    ('valkey', 'valkey-server'), ('keydb', 'keydb-server'),
    ('dragonfly', 'dragonfly'), ('redis', 'redis-server')])
def test_version_reads_name_the_vm(engine, program):
  message = _Message(engines.Get(engine).Version, ScriptedVm('servers-5'))
  assert message.startswith(
      f'{program} --version on servers-5 exited with status 127: ')


# --- Several VMs at once: one line that names each --------------------------

def test_two_vms_failing_at_once_give_one_line_naming_both():
  installed = {'keydb-server --version': ('KeyDB server v=6.3.4', '', 0),
               # On PATH, and trusted (trusted_programs.OnPath).
               shell_scripts.Command('trusted.sh', 'keydb-server'): (
                   '', '', 0),
               shell_scripts.Command('trusted.sh', 'redis-cli'): (
                   '', '', 0)}
  servers = [ScriptedVm('servers-0', ALPINE),
             ScriptedVm('servers-1', NO_CODENAME),
             ScriptedVm('servers-2', DEBIAN, installed)]
  engine = engines.Get('keydb')
  message = _Message(deployment.PrepareVms, servers, (), engine.Install,
                     None)
  assert message.startswith('2 failed: ')
  assert 'On servers-0: Cannot install KeyDB on Alpine Linux v3.20' in message
  assert 'On servers-1: ' in message and 'no VERSION_CODENAME' in message
  assert 'servers-2' not in message  # KeyDB was there already
  assert servers[2].commands and not servers[2].root_scripts


@pytest.mark.parametrize('cloud,advice', [
    ('Local', 'set PKB_LOCAL_SCRATCH (default /tmp) to a directory on one'),
    ('Static', 'scratch directories are under /tmp there: mount it without '
     'noexec, or use another machine')])
def test_a_library_that_cannot_be_loaded_is_named_before_any_probe(
    monkeypatch, cloud, advice):
  # PKB_LOCAL_SCRATCH on a tmpfs mounted noexec (a hardened /tmp): ld.so
  # only warned, and the preload failed on WRONGPASS with the tool's
  # placeholder password, naming neither the library nor the mount.
  monkeypatch.setattr(argv_secret, '_LibraryReady', lambda vm: True)
  vm = ScriptedVm('clients-0', cloud=cloud, answers={'env LD_PRELOAD=': (
      'redis-benchmark 7.0.15\n',
      "ERROR: ld.so: object '/proc/self/fd/9' from LD_PRELOAD cannot be "
      'preloaded (failed to map segment from shared object): ignored.\n', 0)})
  vm.scratch_dir = '/tmp/pkb-x.y/clients-0'
  message = _Message(argv_secret.CheckTool, vm, 'redis-benchmark')
  assert message.startswith(
      '/tmp/pkb-x.y/clients-0/argv_secret.so on clients-0 cannot be loaded '
      "(ERROR: ld.so: object '/proc/self/fd/9' from LD_PRELOAD cannot be "
      'preloaded (failed to map segment from shared object): ignored.): its '
      'filesystem is likely mounted noexec; '), message
  assert advice in message


def test_no_free_port_says_which_ports_and_which_flag():
  # With a listener on each of 65530-65535, '--redis_start_port=65530'
  # stopped the run with 'No free port for redis-server on servers-0.'
  listening = ''.join(f'LISTEN 0 511 127.0.0.1:{port} 0.0.0.0:*\n'
                      for port in range(65530, 65536))
  vm = ScriptedVm('servers-0', answers={'ss -Htln': (listening, '', 0)})
  message = _Message(redis_server.StartShards, vm, 1, 'pw',
                     redis_shard.ShardOptions(), None, start_port=65530)
  assert message == (
      'No free port for redis-server on servers-0: the ports from 65530 to '
      '65535 are taken; give a lower --redis_start_port or free some of '
      'them.')
