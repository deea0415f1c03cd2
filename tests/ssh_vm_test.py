"""SshVirtualMachine against a real sshd on 127.0.0.1, plus its pure parts."""

import os
import platform
import stat
import subprocess
import threading
import time

import psutil
import pytest

import e2e_support

from perfkitbenchmarker import errors
from perfkitbenchmarker import owned_paths
from perfkitbenchmarker import record_checks
from perfkitbenchmarker import remote_shell
from perfkitbenchmarker import run_processes
from perfkitbenchmarker import run_scope
from perfkitbenchmarker import ssh_vm
from perfkitbenchmarker import system_info
from perfkitbenchmarker import system_tuning
from perfkitbenchmarker import virtual_machine
from perfkitbenchmarker import vm_util
from perfkitbenchmarker.linux_packages import package_commands
from perfkitbenchmarker.linux_packages import remote_install

from sshd_fixture import FreePort
from sshd_fixture import sshd  # pylint: disable=unused-import  (fixture)

SPEC = virtual_machine.VmSpec(cloud='Static', machine_type='static')


class RecordingRunner:
  """vm_util.RunLocal that remembers each local command line."""

  def __init__(self):
    self.commands = []

  def __call__(self, command, **kwargs):
    self.commands.append(command)
    return vm_util.RunLocal(command, **kwargs)


@pytest.fixture
def make_vm(sshd, tmp_path):  # pylint: disable=redefined-outer-name
  made = []

  def Make(name='vm-0', **kwargs):
    kwargs.setdefault('user', sshd.user)
    kwargs.setdefault('ip_address', sshd.host)
    kwargs.setdefault('keyfile', sshd.user_key)
    kwargs.setdefault('port', sshd.port)
    kwargs.setdefault('known_hosts_file', str(tmp_path / 'known_hosts'))
    kwargs.setdefault('run_uri', f'st{os.getpid()}')  # parallel sessions
    vm = ssh_vm.SshVirtualMachine(SPEC, name, 'servers', **kwargs)
    made.append(vm)
    return vm

  yield Make
  for vm in made:
    if vm.port == sshd.port and vm.user == sshd.user:
      vm.CleanUpScratch()
      vm.StopMaster()


@pytest.fixture
def vm(make_vm):  # pylint: disable=redefined-outer-name
  machine = make_vm()
  machine.WaitForSsh(20)
  return machine


@pytest.mark.e2e
def test_command_output_exit_code_and_scratch_dir(vm):
  out, err, rc = vm.RemoteCommandWithReturnCode(
      'echo out; echo err >&2; echo "$BASH_VERSION" | cut -c1; pwd; exit 3')
  assert rc == 3
  assert out.splitlines() == ['out', out.splitlines()[1], vm.scratch_dir]
  assert out.splitlines()[1].isdigit()  # ran in bash, like Local VMs
  assert err == 'err\n'  # no started-marker, no ssh noise
  with pytest.raises(errors.ProcessError, match='exited with status 3'):
    vm.RemoteCommand('exit 3')
  assert stat.S_IMODE(os.stat(vm.known_hosts_file).st_mode) & 0o022 == 0
  with open(vm.known_hosts_file) as f:
    assert f'[127.0.0.1]:{vm.port}' in f.read()  # accept-new, per run


@pytest.mark.e2e
def test_stdin_and_secret_env_stay_out_of_argv(make_vm):
  runner = RecordingRunner()
  machine = make_vm(run_local=runner)
  secret = "s3cr3t value with 'quotes' and $dollars"
  out, _, rc = machine.RemoteCommandWithReturnCode(
      'printf "%s|" "$PKB_SECRET"; cat', env={'PKB_SECRET': secret},
      stdin='line one\nline two\n')
  assert rc == 0
  assert out == f'{secret}|line one\nline two\n'
  assert not any('s3cr3t' in c for c in runner.commands)
  out, _ = machine.RemoteCommand('wc -c', stdin='x' * 100000)
  assert out.strip() == '100000'


@pytest.mark.e2e
def test_timeout_kills_the_remote_command(vm):
  _, _, rc = vm.RemoteCommandWithReturnCode('sleep 41.5', timeout=1)
  assert rc == -9  # Killed at its timeout: a finished sleep gives 0.
  # Gone soon after (a kill lands once scheduled, later on a busy
  # machine), not after its 41.5 s.
  e2e_support.WaitFor(
      lambda: vm.RemoteCommandWithReturnCode(
          'pgrep -f "slee[p] 41.5"')[2] == 1,
      'end of the remote sleep', timeout=20)


@pytest.mark.e2e
def test_write_and_read_file_with_modes(vm):
  path = f'{vm.scratch_dir}/conf'
  vm.WriteFile(path, 'secret: 1\n')
  assert vm.RemoteCommand(f'stat -c %a {path}')[0].strip() == '600'
  vm.WriteFile(path, 'line\n' * 3, mode=0o644)
  assert vm.RemoteCommand(f'stat -c %a {path}')[0].strip() == '644'
  assert vm.ReadFile(path) == 'line\n' * 3
  with pytest.raises(errors.ProcessError):
    vm.WriteFile('/nonexistent-dir/x', 'y')


@pytest.mark.e2e
def test_closed_port_is_retried_then_one_line_error(make_vm):
  runner, sleeps = RecordingRunner(), []
  machine = make_vm(port=FreePort(), run_local=runner, sleep=sleeps.append,
                    connect_retries=3)
  with pytest.raises(ssh_vm.SshError) as raised:
    machine.RemoteCommandWithReturnCode('true')
  message = str(raised.value)
  assert '\n' not in message
  assert 'after 3 attempt(s)' in message and 'Connection refused' in message
  assert len(runner.commands) == 3
  assert sleeps == [1.0, 2.0]


@pytest.mark.e2e
def test_failing_commands_are_not_retried(make_vm):
  runner = RecordingRunner()
  machine = make_vm(run_local=runner, sleep=lambda s: None)
  assert machine.RemoteCommandWithReturnCode('exit 7')[2] == 7
  # 255 is ssh's own failure code too; the started marker tells them apart.
  assert machine.RemoteCommandWithReturnCode('exit 255')[2] == 255
  assert len(runner.commands) == 2


@pytest.mark.e2e
def test_wait_for_ssh_gives_up_at_its_timeout(make_vm):
  now = [0.0]

  def Sleep(seconds):
    now[0] += seconds

  machine = make_vm(port=FreePort(), clock=lambda: now[0], sleep=Sleep)
  with pytest.raises(ssh_vm.SshError, match=r'no SSH at .* after 7s'):
    machine.WaitForSsh(7)
  assert now[0] >= 7


def _MasterPid(machine):
  argv = (['ssh'] + machine.SshOptions() +
          ['-p', str(machine.port), '-O', 'check', machine._Target()])  # pylint: disable=protected-access
  check = subprocess.run(argv, capture_output=True, text=True, timeout=10)
  return int(check.stderr.split('pid=')[1].split(')')[0])


def _KilledMasterMidway(vm, **work):
  """Runs each of `work` (name -> call) in a thread of its own and kills the
  VM's SSH master connection 0.8 s in; name -> what each returned or
  raised."""
  results = {}

  def Run(name, call):
    try:
      results[name] = call()
    except errors.Error as e:
      results[name] = e

  threads = [threading.Thread(target=Run, args=item) for item in work.items()]
  for t in threads:
    t.start()
  time.sleep(0.8)
  os.kill(_MasterPid(vm), 9)
  for t in threads:
    t.join(60)
  return results


@pytest.mark.e2e
def test_run_detached_survives_a_killed_master_connection(vm):
  results = _KilledMasterMidway(
      vm,
      detached=lambda: vm.RunDetached('sleep 2; echo done; exit 4',
                                      timeout=30, env={'X': 'y'}),
      attached=lambda: vm.RemoteCommandWithReturnCode('sleep 2; echo x'))
  assert results['detached'] == ('done\n', '', 4)
  # The ordinary command lost its connection after starting: not retried.
  assert results['attached'][2] == 255


@pytest.mark.e2e
def test_robust_remote_command_survives_a_killed_master_connection(vm):
  """Upstream's RobustRemoteCommand: RunDetached under upstream's shape."""
  results = _KilledMasterMidway(
      vm, robust=lambda: vm.RobustRemoteCommand('sleep 2; echo done'),
      plain=lambda: vm.RemoteCommand('sleep 2; echo x'))
  assert results['robust'] == ('done\n', '')
  # Lost, as upstream's would be: its error type, the ssh status.
  assert isinstance(results['plain'], errors.VirtualMachine.RemoteCommandError)
  assert 'status 255' in str(results['plain'])


@pytest.mark.e2e
def test_upstream_file_methods_over_ssh(vm, tmp_path):
  source = tmp_path / 'tree'
  (source / 'sub').mkdir(parents=True)
  (source / 'sub' / 'blob').write_bytes(bytes(range(256)) * 64)
  (source / 'top.txt').write_text('top\n')
  vm.PushFile(str(source))  # Into the scratch directory, under its name.
  out, _ = vm.RemoteCommand('cat tree/top.txt; wc -c < tree/sub/blob')
  assert out.split() == ['top', '16384']
  back = tmp_path / 'back'
  back.mkdir()
  vm.PullFile(str(back), 'tree')
  assert (back / 'tree' / 'sub' / 'blob').read_bytes() == (
      source / 'sub' / 'blob').read_bytes()
  template = tmp_path / 'conf.j2'
  template.write_text('name={{ vm.name }} port={{ port }}\n')
  vm.RenderTemplate(str(template), 'conf', {'port': 6379})
  # Jinja2's default drops the final newline, as upstream's rendering does.
  assert vm.RemoteCommand('cat conf')[0] == 'name=vm-0 port=6379'
  vm.RemoveFile(f'{vm.GetScratchDir()}/tree')
  assert vm.RemoteCommandWithReturnCode('test -e tree')[2] == 1
  vm.InstallPackages('bash coreutils')  # There already: checked, no apt.


@pytest.mark.e2e
def test_master_connections_are_closed_at_exit(make_vm):
  machine = make_vm(name='vm-exit')
  machine.WaitForSsh(20)
  pid = _MasterPid(machine)
  directory = machine.control_dir
  ssh_vm.CloseAllConnections()  # what atexit runs
  assert not os.path.exists(directory)
  e2e_support.WaitFor(lambda: not e2e_support.ProcessAlive(pid),
                      'end of the master connection', timeout=20)
  assert machine.RemoteCommand('echo again')[0] == 'again\n'  # new master


@pytest.mark.e2e
def test_run_detached_timeout_kills_the_job(vm):
  out, _, rc = vm.RunDetached('echo started; sleep 42.5', timeout=1)
  # Killed at its timeout: a finished sleep gives 0.
  assert rc == -9 and out == 'started\n'
  _, _, alive = vm.RemoteCommandWithReturnCode('pgrep -f "slee[p] 42.5"')
  assert alive == 1


@pytest.mark.e2e
def test_key_pair_is_private_and_logs_in(
    tmp_path, sshd, make_vm):  # pylint: disable=redefined-outer-name
  pair = ssh_vm.GenerateKeyPair(str(tmp_path / 'run'), comment='pkb-test')
  assert stat.S_IMODE(os.stat(pair.private_key_path).st_mode) == 0o600
  assert pair.public_key.startswith('ssh-ed25519 ')
  assert pair.public_key.endswith('pkb-test')
  again = ssh_vm.GenerateKeyPair(str(tmp_path / 'run'))
  assert again == pair  # a resumed run keeps its key
  sshd.AuthorizeKey(pair.public_key)
  machine = make_vm(keyfile=pair.private_key_path)
  assert machine.RemoteCommand('echo ok')[0] == 'ok\n'


def _LocalOsRelease():
  with open('/etc/os-release') as f:
    return system_info.SystemInfo.Parse(f.read())


@pytest.mark.e2e
def test_detects_os_arch_and_kernel_of_this_machine(vm):
  info = vm.DetectSystem()
  local = _LocalOsRelease()
  assert info.os_id == local.os_id and info.family == local.family
  assert info.arch == platform.machine()
  assert info.kernel == platform.release()
  assert info.is_root == (os.geteuid() == 0)
  assert vm.num_cpus == os.cpu_count()
  if local.os_id == 'debian':
    assert info.package_manager == 'apt'
  metadata = vm.SystemMetadata()
  assert metadata['cpu_arch'] == platform.machine()
  assert metadata['kernel_version'] == platform.release()
  assert vm.GetResourceMetadata()['os_release'] == info.os_pretty_name


@pytest.mark.e2e
def test_system_tuning_read_only_on_this_machine(vm):
  settings = vm.ApplySystemTuning(enabled=False)  # harmless: reads only
  assert settings['system_tuning'] == 'off'
  assert settings['vm_overcommit_memory'] in ('0', '1', '2')
  assert settings['net_core_somaxconn'].isdigit()
  assert settings['nofile_limit'] not in ('', 'unknown')
  assert vm.SystemMetadata()['system_tuning'] == 'off'


@pytest.mark.e2e
def test_installs_do_nothing_when_software_is_there(make_vm):
  e2e_support.RequireTool('redis-server', 'scripts/setup.sh')
  runner = RecordingRunner()
  machine = make_vm(run_local=runner)
  machine.WaitForSsh(20)
  machine.Install('redis_server', version='distro')
  machine.Install('redis_benchmark')
  assert not any('setsid' in c or 'install.sh' in c for c in runner.commands)


@pytest.mark.e2e
def test_sudo_only_when_not_root(make_vm):
  machine = make_vm(user='pkb')
  machine.system_info = system_info.SystemInfo(uid=1000)
  assert machine.Sudo('id -u') == "sudo -n bash -c 'id -u'"
  machine.system_info = system_info.SystemInfo(uid=0)
  assert machine.Sudo('id -u') == 'id -u'
  assert make_vm(user='root').Sudo('x') == 'x'


# Pure parts -----------------------------------------------------------------

UBUNTU = system_info.SystemInfo.Parse(
    'NAME="Ubuntu"\nVERSION_ID="22.04"\nID=ubuntu\nID_LIKE=debian\n'
    'PRETTY_NAME="Ubuntu 22.04.4 LTS"\nVERSION_CODENAME=jammy\n'
    '__arch=aarch64\n__kernel=6.5.0-1016-aws\n__uid=1000\n__nproc=64\n'
    '__mem_kb=131072000\n__pm=apt-get\n')
AMAZON = system_info.SystemInfo.Parse(
    'NAME="Amazon Linux"\nVERSION_ID="2023"\nID="amzn"\n'
    'ID_LIKE="fedora"\nPRETTY_NAME="Amazon Linux 2023"\n__arch=x86_64\n'
    '__uid=0\n__pm=dnf\n__pm=yum\n')
UNKNOWN = system_info.SystemInfo.Parse('ID=alpine\n__pm=\n')


def test_parse_system_info():
  assert (UBUNTU.family, UBUNTU.package_manager, UBUNTU.os_codename) == (
      'debian', 'apt', 'jammy')
  assert (UBUNTU.arch, UBUNTU.num_cpus, UBUNTU.memory_mib) == (
      'aarch64', 64, 128000)
  assert not UBUNTU.is_root
  assert (AMAZON.family, AMAZON.package_manager, AMAZON.is_root) == (
      'rhel', 'dnf', True)
  assert UNKNOWN.family == 'unknown' and UNKNOWN.package_manager is None
  assert UBUNTU.Metadata() == {
      'os_release': 'Ubuntu 22.04.4 LTS', 'os_family': 'debian',
      'package_manager': 'apt', 'cpu_arch': 'aarch64',
      'kernel_version': '6.5.0-1016-aws'}


def _BashParses(script):
  subprocess.run(['bash', '-n', '-c', script], check=True)


def test_install_commands_refuse_clearly():
  with pytest.raises(errors.PrerequisiteError, match='APT repository.*'
                     'load_generator=redis_benchmark'):
    package_commands.MemtierInstall(AMAZON)
  with pytest.raises(errors.UsageError, match='redis_server_version=distro'):
    package_commands.RedisServerInstall(AMAZON, '7.2.4')
  with pytest.raises(errors.UsageError, match='must be "distro" or'):
    package_commands.RedisServerInstall(UBUNTU, 'latest; rm -rf /')
  with pytest.raises(errors.PrerequisiteError, match='only Debian'):
    package_commands.RedisServerInstall(UNKNOWN, 'distro')


def test_versions():
  assert remote_install.VersionMatches('7.2.4', '7.2')
  assert remote_install.VersionMatches('7.0.15', 'distro')
  assert not remote_install.VersionMatches('7.2.40', '7.2.4')
  assert not remote_install.VersionMatches('', 'distro')
  assert package_commands.MemtierVersionOk('memtier_benchmark 2.4.4')
  assert package_commands.MemtierVersionOk('memtier_benchmark 255.255.255')
  assert not package_commands.MemtierVersionOk('memtier_benchmark 2.1.0')
  assert package_commands.ServerVersion(
      'Redis server v=7.0.15 sha=00000000:0') == '7.0.15'


@pytest.mark.e2e
def test_system_tuning_commands(shipped_scripts):
  del shipped_scripts  # In the environment.
  for command in (system_tuning.ApplyCommand('t1/servers-0'),
                  system_tuning.ReadCommand(), system_tuning.SnapshotCommand(),
                  system_tuning.RestoreCommand('t1/servers-0')):
    assert '\n' not in command and 'system_tuning.sh' in command
  read = subprocess.run(['bash', '-c', system_tuning.ReadCommand()],
                        capture_output=True, text=True, timeout=30,
                        check=True).stdout
  # Every setting, by the names the metadata uses; read-only.
  assert [line.partition('=')[0] for line in read.splitlines()] == [
      s.name for s in system_tuning.SETTINGS]
  assert f'nofile_limit={os.sysconf("SC_OPEN_MAX")}' in read.splitlines()
  parsed = system_tuning.Parse(
      'tuning_failed=transparent_hugepage\ntuning_shared=t0/servers-0\n'
      'transparent_hugepage=madvise\nvm_overcommit_memory=1\nnofile_limit=\n',
      applied=True)
  assert parsed == {'transparent_hugepage': 'madvise',
                    'vm_overcommit_memory': '1', 'nofile_limit': 'unknown',
                    'system_tuning': 'applied',
                    'system_tuning_failed': 'transparent_hugepage'}


@pytest.mark.e2e
def test_remote_shell_quotes_and_bounds_the_command(tmp_path):
  script = remote_shell.CommandScript("echo 'a b'", '/tmp/pkb-x/vm-0', 2.5)
  assert script.startswith('/usr/bin/env -u BASH_ENV PATH=/usr/local/sbin:')
  # A login PATH (~/.bashrc, ~/.ssh/environment) whose first directory any
  # user can write: nothing of it runs, and the command's PATH leaves it out
  # (trusted_programs.KeepSafePath's rule, as a Local run's PATH).
  planted = tmp_path / 'anyone'
  planted.mkdir(mode=0o777)
  planted.chmod(0o777)
  for name in ('bash', 'timeout', 'stat', 'base64'):
    (planted / name).write_text(f'#!/bin/sh\necho {name} >> {planted}/ran\n')
    (planted / name).chmod(0o755)
  ran = subprocess.run(
      ['/bin/sh', '-c', remote_shell.CommandScript(
          'echo "$PATH"; command -v bash', '/', 5, env_on_stdin=True)],
      input=remote_shell.EnvLine({'PKB_X': 'x'}),
      env={'PATH': f'{planted}:/usr/bin:/bin'}, capture_output=True,
      text=True, timeout=30, check=False)
  assert not (planted / 'ran').exists()
  assert remote_shell.CommandStdout(ran.stdout).split('\n')[0] == (
      '/usr/bin:/bin'), ran.stderr
  # Run as the remote login shell runs it (sh): the marker first on stderr,
  # the command's quoting kept, the environment from stdin's first line.
  ran = subprocess.run(
      ['sh', '-c', remote_shell.CommandScript(
          'echo "$PKB_X"; exec cat', '/', 2.5, env_on_stdin=True)],
      input=remote_shell.EnvLine({'PKB_X': "a 'b' $c"}) + 'rest\n',
      capture_output=True, text=True, timeout=30, check=False)
  assert (ran.returncode, ran.stdout) == (
      0, remote_shell.STARTED_MARKER + "a 'b' $c\nrest\n")
  assert ran.stderr == remote_shell.STARTED_MARKER
  assert subprocess.run(['sh', '-c', script], capture_output=True,
                        text=True, timeout=30).stdout == (
                            remote_shell.STARTED_MARKER + 'a b\n')


@pytest.mark.e2e
def test_the_login_paths_safe_part_is_kept_in_the_runs_scratch(tmp_path):
  """safe_path cost 5-10 ms of CPU on every remote command (17 ms a
  command against 6 before it): its answer for a login PATH is kept in the
  scratch directory once that is checked the run's, and read back only
  from a file of this user's, for the same login PATH."""
  scratch = tmp_path / 'work' / 'vm-0'
  scratch.mkdir(parents=True)
  for place in (tmp_path, tmp_path / 'work', scratch):
    place.chmod(0o700)
  e2e_support.ShippedScripts(scratch)
  login = '/usr/bin:/bin'
  kept = scratch / '.pkb-safe-path'

  def PathOf(scripts=False):
    return remote_shell.CommandStdout(subprocess.run(
        ['sh', '-c', remote_shell.CommandScript(
            'echo "$PATH"', str(scratch), 5, scripts=scripts)],
        env={'PATH': login}, capture_output=True, text=True, timeout=30,
        check=True).stdout).strip()

  assert PathOf() == login and not kept.exists()  # Not checked: not kept.
  assert PathOf(scripts=True) == login
  assert kept.read_text() == f'{login}\n{login}\n'
  assert stat.S_IMODE(kept.stat().st_mode) == 0o600
  kept.write_text(f'{login}\n/usr/bin:/bin:/kept\n')  # Read back...
  assert PathOf() == '/usr/bin:/bin:/kept'
  kept.write_text('/other:/usr/bin\n/kept\n')  # ...for this PATH only,
  assert PathOf() == login
  kept.write_text(f'{login}\n/usr/bin:/bin:/kept\n')
  os.chown(kept, 65534, 65534)  # ...and from a file of this user's.
  assert PathOf() == login
  # Bounded: TERM once its 3 s (2.5 rounded up) are over.
  slow = subprocess.run(
      ['sh', '-c', remote_shell.CommandScript('sleep 20', '/', 2.5)],
      capture_output=True, text=True, timeout=30, check=False)
  assert slow.returncode == 124
  assert remote_shell.CleanStderr(
      'a greeting\n' + remote_shell.STARTED_MARKER + 'ControlSocket /x '
      'already exists, disabling multiplexing\nreal error\n') == (
          'real error\n')
  assert remote_shell.CleanStderr('no route to host\n') == (
      'no route to host\n')
  _BashParses(remote_shell.DetachedStartScript('/tmp/j k', 3, 2,
                                               ['/tmp/o l']))
  _BashParses(remote_shell.DetachedCollectScript('/tmp/j k', 3))
  assert remote_shell.ParseCollected('@pending\n') is None
  assert remote_shell.ParseCollected(
      '@rc 4\n@out ZG9uZQo=\n@err \n@pkb-job-done\n') == ('done\n', '', 4)
  with pytest.raises(ValueError):  # Cut short by a dropped connection.
    remote_shell.ParseCollected('@rc 4\n@out ZG9u')
  _BashParses(remote_shell.DetachedKillScript('/tmp/j k', 1.0))
  with pytest.raises(ValueError):
    remote_shell.EnvScript({'BAD NAME': 'x'})


def test_a_path_entry_left_out_for_its_acl_is_advised_setfacl(caplog):
  """ssh_command.sh's lines said no reason, so the warning advised the owner
  and mode alone for every entry, and a mode does not take an ACL away:
  each line carries owned_paths.sh's reason now, and the advice is
  trusted_programs.Fix's for it (an ACL's covers the owner and mode)."""
  acl = ('/opt/tools (/opt/tools is writable by other users (its ACL lets '
         'uid 65534 write))')
  mode = '/srv/open (/srv/open is writable by other users (mode 0777))'
  unread = ('/opt/more (/opt/more is writable by other users as far as can '
            'be told (it has an ACL, and getfacl, of package acl, is not '
            'installed to read it))')

  def Said(port, *lines):
    vm = ssh_vm.SshVirtualMachine(SPEC, f'vm-{port}', 'servers', user='u',
                                  ip_address='127.0.0.1', port=port)
    caplog.clear()
    vm._WarnLeftOutOfPath(  # pylint: disable=protected-access
        'motd\n' + remote_shell.STARTED_MARKER + ''.join(
            f'{remote_shell.PATH_MARKER}{line}\n' for line in lines))
    said, = [r.getMessage() for r in caplog.records
             if 'left out of the PATH' in r.getMessage()]
    return said

  assert [tuple(left) for left in remote_shell.LeftOutOfPath(
      f'{remote_shell.PATH_MARKER}acl {acl}\n'
      f'{remote_shell.PATH_MARKER}relative rel (relative: the directory '
      'each command runs in)\n')] == [
          (acl, owned_paths.Reason.ACL),
          ('rel (relative: the directory each command runs in)', None)]
  setfacl = ('writable by no one else: fix the owner and mode, and remove '
             'the ACL (setfacl -b on the path named).')
  said = Said(40001, f'mode {mode}', f'acl {acl}')
  assert f'with: {mode}; {acl}. A program' in said and said.endswith(
      setfacl), said
  # An ACL getfacl could not read is one still: its words differ, its
  # reason does not.
  assert Said(40002, f'acl {unread}').endswith(setfacl)
  assert Said(40003, f'mode {mode}').endswith(
      'writable by no one else: fix the owner and mode.')


@pytest.mark.e2e
def test_a_vms_workspace_root_another_user_may_write_is_refused_there(
    make_vm, tmp_path, monkeypatch):
  """A VM's workspace root (/tmp there) was never checked as CheckRoot
  checks the runner's: one others may write without the sticky bit got the
  run's workspace. Refused in one line naming the VM and the root; with
  the sticky bit (as /tmp's 1777) the workspace is made there."""
  root = tmp_path / 'root'
  root.mkdir()
  os.chmod(root, 0o777)
  monkeypatch.setattr(record_checks, 'REMOTE_SCRATCH_ROOT', str(root))
  vm = make_vm(run_uri=f'sw{os.getpid()}')
  with pytest.raises(run_scope.NotOwnDir) as refused:
    vm.WaitForSsh(20)
  line = str(refused.value)
  assert line.startswith(f'vm-0 ({vm.user}@{vm.ip_address} port {vm.port}): '
                         f'{root} there cannot hold the run\'s workspace'), line
  assert '\n' not in line and os.listdir(root) == []
  os.chmod(root, 0o1777)
  vm.WaitForSsh(20)
  assert os.path.dirname(os.path.dirname(vm.scratch_dir)) == str(root)


@pytest.mark.e2e
def test_a_login_path_entry_left_out_is_said_once_naming_it_and_why(
    sshd, make_vm, tmp_path, caplog):  # pylint: disable=redefined-outer-name
  # Before: a memtier_benchmark in a login PATH directory others can write
  # (here 0777) was "command not found" on every command, and nothing said
  # the directory had been left out, nor why.
  open_dir = tmp_path / 'open'
  open_dir.mkdir()
  open_dir.chmod(0o777)
  os.symlink('/bin/true', open_dir / 'memtier_benchmark')
  keyfile = sshd.AuthorizeStubbedKey(str(tmp_path / 'login'), {},
                                     path=[str(open_dir), 'rel'])
  vm = make_vm(keyfile=keyfile, run_uri=f'sp{os.getpid()}')
  vm.WaitForSsh(20)
  for _ in range(3):
    out, err, rc = vm.RemoteCommandWithReturnCode(
        'command -v memtier_benchmark || echo "$PATH"')
    assert rc == 0 and str(open_dir) not in out and err == ''
  said = [r.getMessage() for r in caplog.records
          if 'left out of the PATH' in r.getMessage()]
  # One line, each entry with the rule's own reason (owned_paths, as a
  # Local run words it).
  assert len(said) == 1, said
  assert (f'{open_dir} ({owned_paths.DirectoryProblem(str(open_dir))}); '
          'rel (relative: the directory each command runs in)') in said[0]
  assert said[0].startswith(f'On vm-0 ({sshd.user}@{sshd.host} port ')


@pytest.mark.e2e
def test_a_shell_that_fails_once_started_is_said_without_the_markers(
    sshd, make_vm, tmp_path):  # pylint: disable=redefined-outer-name
  # Before: the error's tail was taken of ssh's raw stderr, and
  # str.splitlines splits at the \x1e of ssh_command.sh's markers too, so
  # their words were lines of their own: "(exit 1): relative rel (relative:
  # the directory each command runs in) | timeout stand-in refuses" (a
  # login PATH entry left out), "pkb-started | ..." with nothing else.
  keyfile = sshd.AuthorizeStubbedKey(
      str(tmp_path / 'login'),
      {'timeout': '#!/bin/sh\necho timeout stand-in refuses >&2\nexit 1\n'},
      path=['rel'])
  vm = make_vm(keyfile=keyfile, run_uri=f'sf{os.getpid()}')
  with pytest.raises(ssh_vm.SshError) as failed:
    vm.WaitForSsh(20)
  assert str(failed.value) == (
      'vm-0: SSH works but the shell failed (exit 1): timeout stand-in '
      'refuses; the VM needs bash and coreutils `timeout`.'), failed.value


@pytest.mark.e2e
def test_a_logins_startup_files_neither_run_in_nor_garble_its_commands(
    sshd, make_vm, tmp_path):  # pylint: disable=redefined-outer-name
  # A login as sshd starts one on a lent machine: bash run by sshd at
  # shell level 1 reads ~/.bashrc (the fixture's SHLVL=1 keeps that off
  # for the other tests). Before: a ~/.bashrc greeting failed provision
  # ("mktemp gave 'Welcome to the lab\n/tmp/pkb-...' is not a path"), the
  # BASH_ENV it exports ran (and printed) in both of each command's bash,
  # and a ~/.bashrc ending in `exit 0` made every command a silent success
  # with no output.
  home = tmp_path / 'home'
  home.mkdir()
  ran = tmp_path / 'ran'
  bash_env, env = tmp_path / 'bash_env.sh', tmp_path / 'env.sh'
  bash_env.write_text(f'echo BASH_ENV >> {ran}\necho from BASH_ENV\n')
  env.write_text(f'echo ENV >> {ran}\n')
  bashrc = home / '.bashrc'
  bashrc.write_text(f'echo Welcome to the lab\necho motd >&2\n'
                    f'export BASH_ENV={bash_env}\n')
  keyfile = sshd.AuthorizeStubbedKey(
      str(tmp_path / 'login'), {}, env={
          'HOME': str(home), 'SHLVL': '0', 'ENV': str(env),
          'PROMPT_COMMAND': f'echo PROMPT_COMMAND >> {ran}'})
  vm = make_vm(keyfile=keyfile, run_uri=f'sl{os.getpid()}')
  vm.WaitForSsh(20)
  assert vm.RemoteCommandWithReturnCode(
      'echo out; echo err >&2; exit 5') == ('out\n', 'err\n', 5)
  assert vm.RemoteCommand('cat', stdin='a b\n')[0] == 'a b\n'
  # ENV and PROMPT_COMMAND are an interactive shell's; nothing ran.
  assert not ran.exists(), ran.read_text()
  bashrc.write_text('exit 0\n')
  try:
    with pytest.raises(ssh_vm.SshError) as ended:
      vm.RemoteCommand('true')
  finally:
    bashrc.write_text('')  # The fixture cleans up over this login.
  assert str(ended.value).startswith(
      f'vm-0: SSH works ({sshd.user}@{sshd.host} port {sshd.port}) but the '
      'login shell ended before running the command (exit 0: no output); '
      'its startup files (~/.bashrc'), ended.value


@pytest.mark.e2e
def test_the_detached_kill_stops_only_the_session_it_started(tmp_path):
  """The job's sid file names its session leader and its start time: a
  session whose leader started at another time (the id taken again since,
  or a forged file) is left alone; the job's own session goes, whole."""
  session = subprocess.Popen(['bash', '-c', 'sleep 60 & sleep 60; wait'],
                             start_new_session=True)
  try:
    start = e2e_support.StartTicks(session.pid)
    kill = ['bash', '-c', remote_shell.DetachedKillScript(str(tmp_path), 1.0)]
    shipped = e2e_support.ShippedScripts(tmp_path)
    (tmp_path / 'sid').write_text(f'{session.pid} {start + 1:.0f}\n')
    subprocess.run(kill, check=True, timeout=30, env=shipped)
    assert session.poll() is None
    members = psutil.Process(session.pid).children()
    (tmp_path / 'sid').write_text(f'{session.pid} {start:.0f}\n')
    subprocess.run(kill, check=True, timeout=30, env=shipped)
    assert session.wait(timeout=10) is not None
    _, alive = psutil.wait_procs(members, timeout=5)
    assert not alive
  finally:
    run_processes.KillStartedGroup(session.pid)
    session.wait()


@pytest.mark.e2e
def test_a_probe_is_one_trip_to_start_and_collect(make_vm):
  # pylint: disable=g-import-not-at-top
  from perfkitbenchmarker.load_generators import concurrent
  runner = RecordingRunner()
  machine = make_vm(name='vm-probe', run_local=runner)
  machine.WaitForSsh(20)
  path = f'{machine.scratch_dir}/probe-out.json'
  for attempt in range(2):
    before = len(runner.commands)
    # The load lasts until the probe's sampler has seen it (its snapshot
    # file, probe.sh's BASE.stat1, exists): an event, not a time, so no
    # machine load can end it before it is seen. Bounded by timeout_s.
    seen = f'{machine.scratch_dir}/probe{attempt}.stat1'
    run = concurrent.RunProbe(
        machine, f'probe{attempt}',
        [['sh', '-c', 'until [ -e "$0" ]; do sleep 0.05; done', seen],
         ['sh', '-c', f'echo {attempt} > {path}; echo hi']],
        timeout_s=30, files=[path], sample_every_s=0.2)
    # Everything (exit codes, outputs, the file, the CPU snapshots) came
    # back in the trip that started it.
    assert len(runner.commands) - before == 1, runner.commands[before:]
    assert run.outputs[1].stdout == 'hi\n'
    assert run.files[path] == f'{attempt}\n'
    assert run.cpu is not None and run.cpu.threads_seen >= 1
    assert run.cpu.busiest_thread == 'sh'


@pytest.mark.e2e
@pytest.mark.alone
def test_a_short_probe_is_seen_while_it_runs(make_vm):
  """Timing is the subject: the sampler's first snapshot comes 0.1 s in,
  before any foreign scan (which takes 0.2 s at load 20 here, seconds at
  worse), so a 0.3 s load is seen while it runs. Rules out a probe that
  ends before its first snapshot reporting no thread. `alone`: beside the
  suite's other workers a snapshot's few ms of CPU can be late by more
  than the load lasts; a busy loop per core is no problem (8 of 8 beside
  two and the flake hunt, load 15-21)."""
  # pylint: disable=g-import-not-at-top
  from perfkitbenchmarker.load_generators import concurrent
  machine = make_vm(name='vm-short')
  machine.WaitForSsh(20)
  run = concurrent.RunProbe(machine, 'short', [['sleep', '0.3']],
                            timeout_s=30, sample_every_s=1.0)
  assert run.cpu is not None and run.cpu.threads_seen == 1
  assert run.cpu.busiest_thread == 'sleep'
