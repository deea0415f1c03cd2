"""The scripts a VM runs are shipped once and run by path, never run when
they are not the run's own.

A VM's commands name a shipped script (`shell_scripts.Command`) and its
arguments, not its text: the text goes to the VM once (ship.sh), into its
scratch directory, 0700 with 0500 files. Right before a command runs one,
the VM checks that directory (ssh_command.sh over SSH, `Problem` on a Local
VM): a file put in a script's place that is another user's, writable by
group or others, or a symlink is refused in one line and never runs; a
directory that is gone is shipped again. Over a real sshd and on Local VMs.
"""

import os
import shutil
import stat

import pytest

import e2e_support
from perfkitbenchmarker import run_processes
from perfkitbenchmarker import run_scope
from perfkitbenchmarker import shell_scripts
from perfkitbenchmarker import virtual_machine
from perfkitbenchmarker.providers.local import provider as local
from ssh_vm_test import make_vm  # pylint: disable=unused-import  (fixture)
from ssh_vm_test import RecordingRunner
from sshd_fixture import sshd  # pylint: disable=unused-import  (fixture)

NOBODY = 65534
_ROOT_ONLY = pytest.mark.skipif(
    os.geteuid() != 0, reason='only root can give a file to another user')


def _Shipped(directory):
  """(name, mode) of each file of a shipped directory, and its own mode."""
  return (stat.S_IMODE(os.stat(directory).st_mode),
          sorted((n, stat.S_IMODE(os.stat(os.path.join(directory, n)).st_mode))
                 for n in os.listdir(directory)))


# Problem's rule, on files this test makes (no process) ----------------------


def _Made(tmp_path):
  directory = tmp_path / 'shipped'
  directory.mkdir(mode=0o700)
  for name in ('a.sh', 'b.sh'):
    (directory / name).write_text('true\n')
    (directory / name).chmod(0o500)
  return directory


def test_a_directory_of_the_users_own_files_passes(tmp_path):
  assert shell_scripts.Problem(str(_Made(tmp_path))) is None
  assert shell_scripts.Problem(str(tmp_path / 'gone')) == shell_scripts.MISSING


@pytest.mark.parametrize('spoil, found', [
    (lambda d: (d / 'b.sh').chmod(0o520), 'b.sh (uid {uid}, mode 520, type f)'),
    (lambda d: (d / 'b.sh').chmod(0o502), 'b.sh (uid {uid}, mode 502, type f)'),
    (lambda d: d.chmod(0o770), 'shipped (uid {uid}, mode 770, type d)'),
    (lambda d: ((d / 'a.sh').unlink(), (d / 'a.sh').symlink_to('/bin/true')),
     'a.sh (uid {uid}, mode 777, type l)'),
    (lambda d: (d / 'sub.sh').mkdir(), 'sub.sh (uid {uid}, mode 755, type d)'),
])
def test_what_others_could_change_is_named(tmp_path, spoil, found):
  directory = _Made(tmp_path)
  spoil(directory)
  problem = shell_scripts.Problem(str(directory))
  assert problem.endswith(found.format(uid=os.geteuid())), problem


@_ROOT_ONLY
def test_another_users_file_is_named(tmp_path):
  directory = _Made(tmp_path)
  os.chown(directory / 'a.sh', NOBODY, NOBODY)
  assert shell_scripts.Problem(str(directory)).endswith(
      f'a.sh (uid {NOBODY}, mode 500, type f)')


def test_a_command_names_the_script_never_its_text():
  command = run_processes.Command('busy', '/tmp/x')
  assert command == '"${BASH:-bash}" "${PKB_SCRIPTS:?}"/run_processes.sh busy /tmp/x'
  assert shell_scripts.Uses(command)
  assert shell_scripts.Uses('bash -s', stdin=f'{command}\n')
  assert not shell_scripts.Uses('bash -s', stdin=iter([command]))  # Data.
  with pytest.raises(ValueError, match='inline'):
    shell_scripts.Command('ship.sh', '/tmp/x')


# Over SSH --------------------------------------------------------------------


def _Hostile(scratch_dir, name, how):
  """Puts, in the shipped `name`'s place, a script that would leave a
  `pwned` file in the scratch directory; `how` makes it not the run's."""
  shipped = shell_scripts.ShippedDir(scratch_dir)
  path = os.path.join(shipped, name)
  pwned = os.path.join(scratch_dir, 'pwned')
  os.chmod(shipped, 0o700)
  os.remove(path)
  if how == 'symlink':
    target = os.path.join(scratch_dir, 'elsewhere.sh')
    with open(target, 'w') as f:
      f.write(f'touch {pwned}\n')
    os.symlink(target, path)
  else:
    with open(path, 'w') as f:
      f.write(f'touch {pwned}\n')
    if how == 'group-writable':
      os.chmod(path, 0o770)
    elif how == 'another user':
      os.chown(path, NOBODY, NOBODY)
      os.chmod(path, 0o755)
    elif how == 'directory others write':
      os.chmod(path, 0o500)
      os.chmod(shipped, 0o777)
  return pwned


def _AssertRefusedNeverRun(vm, how):
  """A command of run_processes.sh, its file put there `how`: refused in
  one line naming the VM and the shipped directory, and it never ran."""
  pwned = _Hostile(vm.scratch_dir, 'run_processes.sh', how)
  with pytest.raises(run_scope.NotOwnDir) as refused:
    vm.RemoteCommandWithReturnCode(
        run_processes.Command('busy', vm.scratch_dir + '/none'))
  message = str(refused.value)
  assert '\n' not in message and vm.name in message, message
  assert shell_scripts.ShippedDir(vm.scratch_dir) in message, message
  assert 'none of them runs' in message, message
  assert not os.path.exists(pwned)


_HOW = ['group-writable', 'symlink', 'directory others write',
        pytest.param('another user', marks=_ROOT_ONLY)]


@pytest.mark.e2e
def test_scripts_go_once_and_commands_name_them(make_vm):
  runner = RecordingRunner()
  machine = make_vm(name='vm-ship', run_local=runner)
  machine.WaitForSsh(20)
  shipped = shell_scripts.ShippedDir(machine.scratch_dir)
  texts = {n: shell_scripts.Text(n) for n in os.listdir(shipped)}
  assert _Shipped(shipped) == (0o700, [(n, 0o500) for n in sorted(texts)])
  assert 'run_processes.sh' in texts and 'ship.sh' not in texts
  assert texts == {n: shell_scripts.Text(n) for n in texts}
  before = len(runner.commands)
  for _ in range(3):
    out, _, rc = machine.RemoteCommandWithReturnCode(
        run_processes.Command('busy', machine.scratch_dir + '/none'))
    assert (out, rc) == ('', 0)
  sent = runner.commands[before:]
  assert len(sent) == 3  # Nothing shipped again.
  # The script's name and arguments, not its text (its functions).
  assert not any('works_under()' in c or 'escalate()' in c for c in sent)
  assert 'works_under()' in texts['run_processes.sh']
  # A VM rebuilt for a later stage ships in its first trip that needs them,
  # finding them there: nothing replaced.
  again = make_vm(name='vm-ship', run_local=runner)
  again.scratch_dir = machine.scratch_dir
  mtime = os.stat(os.path.join(shipped, 'run_processes.sh')).st_mtime_ns
  assert again.RemoteCommandWithReturnCode(
      run_processes.Command('busy', machine.scratch_dir + '/none'))[2] == 0
  assert os.stat(os.path.join(shipped, 'run_processes.sh')).st_mtime_ns == (
      mtime)


@pytest.mark.e2e
@pytest.mark.parametrize('how', _HOW)
def test_a_script_not_the_runs_own_is_refused_never_run_over_ssh(
    make_vm, how):
  machine = make_vm(name='vm-hostile')
  machine.WaitForSsh(20)
  _AssertRefusedNeverRun(machine, how)
  # A command that runs none of them is not held up.
  assert machine.RemoteCommand('echo fine')[0] == 'fine\n'
  shutil.rmtree(shell_scripts.ShippedDir(machine.scratch_dir))


@pytest.mark.e2e
def test_scripts_gone_meanwhile_are_shipped_again_and_a_gone_scratch_is_clean(
    make_vm):
  machine = make_vm(name='vm-gone')
  machine.WaitForSsh(20)
  shutil.rmtree(shell_scripts.ShippedDir(machine.scratch_dir))
  assert machine.RemoteCommandWithReturnCode(
      run_processes.Command('busy', machine.scratch_dir + '/none'))[2] == 0
  assert os.path.isdir(shell_scripts.ShippedDir(machine.scratch_dir))
  machine.CleanUpScratch()
  assert not os.path.exists(machine.scratch_dir)
  rebuilt = make_vm(name='vm-gone')  # Teardown again: nothing left to do.
  rebuilt.scratch_dir = machine.scratch_dir
  rebuilt.CleanUpScratch()
  with pytest.raises(virtual_machine.ScratchGone):
    rebuilt.ShipScripts()


# On a Local VM ---------------------------------------------------------------


def _LocalVm(tmp_path):
  vm = local.LocalVirtualMachine(
      virtual_machine.VmSpec(cloud='Local', machine_type='local'),
      'servers-0', 'servers', 'shiptest')
  vm.scratch_dir = str(tmp_path / 'scratch')
  os.mkdir(vm.scratch_dir, 0o700)
  return vm


@pytest.mark.e2e
def test_a_local_vm_ships_on_first_use_and_gives_every_command_them(tmp_path):
  vm = _LocalVm(tmp_path)
  os.environ[shell_scripts.ENV] = '/nowhere'  # Never what runs.
  try:
    out, _ = vm.RemoteCommand('echo "$PKB_SCRIPTS"')
  finally:
    del os.environ[shell_scripts.ENV]
  shipped = shell_scripts.ShippedDir(vm.scratch_dir)
  assert out == shipped + '\n'
  assert _Shipped(shipped)[0] == 0o700
  # A script the VM's command writes and runs finds them too.
  with open(os.path.join(vm.scratch_dir, 'later.sh'), 'w') as f:
    f.write(run_processes.Command('busy', vm.scratch_dir + '/none') +
            ' && echo ran\n')
  assert vm.RemoteCommand('bash later.sh')[0] == 'ran\n'


@pytest.mark.e2e
@pytest.mark.parametrize('how', _HOW)
def test_a_script_not_the_runs_own_is_refused_never_run_locally(
    tmp_path, how):
  vm = _LocalVm(tmp_path)
  vm.RemoteCommand('true')  # Shipped.
  _AssertRefusedNeverRun(vm, how)
  shutil.rmtree(shell_scripts.ShippedDir(vm.scratch_dir))
