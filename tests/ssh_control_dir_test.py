"""The SSH control sockets' directory is the run's own for as long as it is used.

The attack (issue 24 point 3): with TMPDIR a world-writable directory
without the sticky bit, user nobody renamed root's `pkb-ssh-*` control
directory away, made their own under the same name and listened on the
`%C` socket name (anyone can compute it): root's ssh handed that socket its
remote command, stdin, stdout and stderr. The control directory is now made
by run_scope.MakeTempDir, which refuses such a TMPDIR in one line before
anything of the run starts; in a sticky TMPDIR (as /tmp is) nobody cannot
rename it.
"""

import glob
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile

import pytest

import e2e_support as e2e
from perfkitbenchmarker import run_scope
from perfkitbenchmarker import ssh_vm
from perfkitbenchmarker import virtual_machine

from sshd_fixture import FreePort
from sshd_fixture import sshd  # pylint: disable=unused-import  (fixture)

IS_ROOT = os.geteuid() == 0
SPEC = virtual_machine.VmSpec(cloud='Static', machine_type='static')
_ROOT_AND_NOBODY = e2e.Needs(
    'root and runuser (to act as user nobody)',
    lambda: IS_ROOT and shutil.which('runuser') is not None,
    'run the tests as root, as CI does')


@pytest.fixture
def tmpdir_env(monkeypatch):
  """Sets TMPDIR for this process (tempfile's cache and ssh_vm's control
  directory reset); the control directory made is closed after."""

  def Set(path):
    monkeypatch.setenv('TMPDIR', str(path))
    monkeypatch.setattr(tempfile, 'tempdir', None)
    monkeypatch.setattr(ssh_vm, '_control_dir', None)

  yield Set
  ssh_vm.CloseAllConnections()


def _SharedDir(mode):
  """A directory in /tmp that user nobody can reach (pytest's are 0700)."""
  path = tempfile.mkdtemp(prefix='pkb-shared-', dir='/tmp')
  os.chmod(path, mode)
  return path


def _Vm(**kwargs):
  kwargs.setdefault('user', 'pkb')
  kwargs.setdefault('ip_address', '127.0.0.1')
  kwargs.setdefault('known_hosts_file', '/dev/null')
  return ssh_vm.SshVirtualMachine(SPEC, 'vm-0', 'servers', run_uri='ctl',
                                  **kwargs)


def test_a_tmpdir_others_can_rename_in_is_refused(tmp_path, tmpdir_env):
  shared = tmp_path / 'shared'
  shared.mkdir()
  os.chmod(shared, 0o777)  # Anyone can write, no sticky bit.
  tmpdir_env(shared)
  for check in (lambda: _Vm().control_dir, lambda: _Vm().SshOptions(),
                ssh_vm.CheckRunDirs):
    with pytest.raises(run_scope.NotOwnDir) as refused:
      check()
    message = str(refused.value)
    assert '\n' not in message, message
    assert str(shared) in message and 'sticky' in message, message
    assert 'TMPDIR' in message, message
  assert os.listdir(shared) == []  # No control directory was made there.


def test_the_memtier_path_check_refuses_such_a_tmpdir_too(tmp_path,
                                                         tmpdir_env):
  """A Local run's --memtier_path check built argv_secret's library in a
  TemporaryDirectory of TMPDIR and preloaded it into the tool: in a TMPDIR
  anyone can rename things in, the directory could be swapped for another
  user's between the build and the load. Refused first, as here."""
  from perfkitbenchmarker.linux_packages import memtier  # pylint: disable=g-import-not-at-top
  shared = tmp_path / 'shared'
  shared.mkdir()
  os.chmod(shared, 0o777)  # Anyone can write, no sticky bit.
  tmpdir_env(shared)
  with pytest.raises(run_scope.NotOwnDir) as refused:
    memtier.CheckLocalPath('/bin/true')
  message = str(refused.value)
  assert 'sticky' in message and 'TMPDIR' in message, message
  assert os.listdir(shared) == []


def test_a_sticky_or_own_tmpdir_gives_a_private_unguessable_dir(
    tmp_path, tmpdir_env):
  for mode in (0o1777, 0o700):
    shared = tmp_path / f'tmp-{mode:o}'
    shared.mkdir()
    os.chmod(shared, mode)
    tmpdir_env(shared)
    ssh_vm.CheckRunDirs()
    directory = _Vm().control_dir
    assert os.path.dirname(directory) == str(shared)
    st = os.lstat(directory)
    assert stat.S_ISDIR(st.st_mode) and st.st_uid == os.geteuid()
    assert stat.S_IMODE(st.st_mode) == 0o700
    assert _Vm().control_dir == directory  # One per process.
    ssh_vm.CloseAllConnections()
    assert not os.path.exists(directory)


@pytest.mark.e2e
@_ROOT_AND_NOBODY
def test_a_root_run_refuses_a_tmpdir_nobody_could_swap_its_sockets_in(
    tmp_path):
  """The reported setting, as a user meets it: ./pkb.py on a static machine
  with TMPDIR world-writable and not sticky. Refused in one line (exit 2)
  before anything is made: no run directory, no control directory."""
  shared = _SharedDir(0o777)
  try:
    key = tmp_path / 'id_test'
    key.write_text('not a key\n')
    key.chmod(0o600)
    machine = {'ip_address': '127.0.0.1', 'user_name': 'pkb',
               'keyfile_path': str(key), 'ssh_port': FreePort()}
    static = tmp_path / 'static.json'
    static.write_text(json.dumps([machine, machine]))
    results = tmp_path / 'results'
    proc, run_uri = e2e.Run(
        ['--memtier_run_duration=1', f'--static_vm_file={static}'],
        str(results), env=dict(os.environ, TMPDIR=shared))
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    # The plan's warning (the file's one machine is server and client)
    # comes first.
    lines = [l for l in proc.stderr.splitlines()
             if not l.startswith('WARNING')]
    assert len(lines) == 1 and shared in lines[0], proc.stderr
    assert 'sticky' in lines[0] and 'TMPDIR' in lines[0], lines[0]
    assert glob.glob(os.path.join(shared, 'pkb-ssh-*')) == []
    assert not os.path.exists(results / run_uri)
  finally:
    shutil.rmtree(shared, ignore_errors=True)


@pytest.mark.e2e
@_ROOT_AND_NOBODY
def test_nobody_cannot_swap_the_control_dir_in_a_sticky_tmpdir(
    sshd, tmpdir_env):  # pylint: disable=redefined-outer-name
  """The accepted setting (a shared sticky TMPDIR, as /tmp): root's control
  directory cannot be renamed away by user nobody, and nobody cannot make
  a socket in it; root's commands go to the real sshd."""
  shared = _SharedDir(0o1777)
  try:
    tmpdir_env(shared)
    vm = _Vm(user=sshd.user, ip_address=sshd.host, keyfile=sshd.user_key,
             port=sshd.port, known_hosts_file=os.path.join(shared, 'kh'))
    assert vm.RemoteCommand('echo ours')[0] == 'ours\n'
    directory = vm.control_dir
    # The master's %C socket, beside the file naming the process that made
    # the directory.
    (socket_name,) = set(os.listdir(directory)) - {'maker'}
    attempt = subprocess.run(
        ['runuser', '-u', 'nobody', '--', 'bash', '-c',
         'mv -- "$1" "$1.away" || exit 3; mkdir -- "$1"', '-', directory],
        capture_output=True, text=True, timeout=30)
    assert attempt.returncode == 3, attempt.stderr
    assert os.lstat(directory).st_uid == os.geteuid()
    assert sorted(os.listdir(directory)) == sorted([socket_name, 'maker'])
    assert vm.RemoteCommand('echo still ours')[0] == 'still ours\n'
  finally:
    ssh_vm.CloseAllConnections()
    shutil.rmtree(shared, ignore_errors=True)


# A process that makes its control directory, says where, and waits.
_MAKES_ONE = ('import time; from perfkitbenchmarker import ssh_vm; '
              'print(ssh_vm._DefaultControlDir(), flush=True); time.sleep(120)')


def _MakesOne(env):
  return subprocess.Popen([sys.executable, '-c', _MAKES_ONE], cwd=e2e.REPO,
                          env=env, stdout=subprocess.PIPE, text=True)


@pytest.mark.e2e
def test_a_killed_processs_control_dir_goes_with_the_next_one(tmp_path):
  """A run killed by SIGKILL runs no exit handler: its control directory
  stayed in TMPDIR (one per CI run, from static_host_settings_test's
  killed run, torn down from its record). The next process that makes a
  control directory removes it; a running process's stays, and so does a
  directory its name does not tie to a process here."""
  root = tmp_path / 'tmp'
  root.mkdir(mode=0o700)
  env = dict(os.environ, TMPDIR=str(root))
  killed, live = _MakesOne(env), _MakesOne(env)
  try:
    dead_dir = killed.stdout.readline().strip()
    live_dir = live.stdout.readline().strip()
    killed.kill()
    killed.wait()
    assert os.path.isdir(dead_dir) and os.path.isdir(live_dir)
    # Made by no process it names, or in another PID namespace.
    others = [root / 'pkb-ssh-nomaker1', root / 'pkb-ssh-elsewhere']
    for other in others:
      other.mkdir(mode=0o700)
    (others[1] / 'maker').write_text('pid:[1] 1 1\n')
    done = subprocess.run(
        [sys.executable, '-c', 'from perfkitbenchmarker import ssh_vm; '
         'print(ssh_vm._DefaultControlDir())'], cwd=e2e.REPO, env=env,
        capture_output=True, text=True, timeout=60, check=True)
    assert not os.path.exists(done.stdout.strip())  # Its own, at its exit.
    assert not os.path.exists(dead_dir)
    assert os.path.isdir(live_dir)
    assert all(other.is_dir() for other in others)
  finally:
    for proc in (killed, live):
      proc.kill()
      proc.wait()
