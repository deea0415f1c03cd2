"""A program the run executes must be one no other user can change.

Issue 35 class 4: `--memtier_path` inside a directory writable by `nobody`
passed every check, and nobody's script ran as root with the load password
in its arguments. Every program the run executes on this machine (load
generators, server binaries, java and its jars, any `--*_path`) must be
owned by root or the invoking user and writable by no one else, and so
must each directory above it (trusted_programs.py); otherwise one line,
exit 2, before anything runs. The programs this checkout really runs (the
venv's python, the wheels' servers, /usr/bin's tools) pass.
"""

import grp
import importlib.util
import json
import os
import re
import shlex
import shutil
import stat
import subprocess
import sys

import pytest

import e2e_support as e2e
from sshd_fixture import sshd  # pylint: disable=unused-import  (fixture)
from perfkitbenchmarker import errors
from perfkitbenchmarker import owned_paths
from perfkitbenchmarker import remote_shell
from perfkitbenchmarker import trusted_programs
from perfkitbenchmarker import venv_reexec
from perfkitbenchmarker.linux_packages import local_redis_builds
from perfkitbenchmarker.linux_packages import remote_install
from perfkitbenchmarker.linux_packages import valkey_server

NOBODY = 65534
_IS_ROOT = os.geteuid() == 0


def _Program(directory, name='tool', mode=0o755):
  path = os.path.join(directory, name)
  with open(path, 'w') as f:
    f.write('#!/bin/sh\nexit 0\n')
  os.chmod(path, mode)
  return path


def _RootsGroup(path):
  """Gives `path` root's group, whose write the rule accepts (root only)."""
  if os.stat(path).st_gid != 0:
    if not _IS_ROOT:
      pytest.skip("chowns to root's group")
    os.chown(path, -1, 0)


@pytest.fixture
def safe_dir(tmp_path):
  """A directory only its owner (this user) can write, under pytest's own
  (0700) base."""
  os.chmod(tmp_path, 0o755)
  return str(tmp_path)


def test_the_programs_this_checkout_runs_pass():
  assert trusted_programs.Problem(sys.executable) is None
  for program in ('bash', 'redis-server', 'redis-cli', 'redis-benchmark'):
    found = shutil.which(program)
    if found:
      assert trusted_programs.Problem(found) is None, found
  wheel_servers = [valkey_server.WheelServerPath()]
  for module, relative in local_redis_builds.WHEELS.values():
    spec = importlib.util.find_spec(module)
    if spec is not None:
      wheel_servers.append(os.path.join(
          list(spec.submodule_search_locations)[0], relative))
  for path in wheel_servers:
    assert trusted_programs.Problem(path) is None, path


def test_a_safe_program_passes_and_keeps_its_path(safe_dir):
  path = _Program(safe_dir)
  assert trusted_programs.Check(path, '--x_path') == path


@pytest.mark.parametrize('mode', [0o777, 0o775, 0o757])
def test_a_program_others_can_write_is_refused(safe_dir, mode):
  path = _Program(safe_dir, mode=mode)
  if mode == 0o775 and os.stat(path).st_gid == 0:
    if not _IS_ROOT:
      pytest.skip("root's own group may write (as sudo allows)")
    os.chown(path, -1, NOBODY)  # nogroup
  with pytest.raises(errors.UsageError, match='writable by other users'):
    trusted_programs.Check(path, '--x_path')


def test_a_directory_others_can_write_is_refused_at_any_depth(safe_dir):
  open_dir = os.path.join(safe_dir, 'open')
  os.makedirs(os.path.join(open_dir, 'deep', 'er'))
  os.chmod(open_dir, 0o777)
  path = _Program(os.path.join(open_dir, 'deep', 'er'))
  with pytest.raises(errors.UsageError) as e:
    trusted_programs.Check(path, f'--memtier_path={path}')
  message = str(e.value)
  assert '\n' not in message
  assert message.startswith(f'--memtier_path={path}: {open_dir} is writable')


def test_a_sticky_directory_is_fine_but_what_others_own_in_it_is_not(
    safe_dir):
  sticky = os.path.join(safe_dir, 'sticky')
  os.mkdir(sticky)
  os.chmod(sticky, 0o1777)  # As /tmp.
  mine = os.path.join(sticky, 'mine')
  os.mkdir(mine, 0o755)
  assert trusted_programs.Problem(_Program(mine)) is None


def test_an_acl_that_lets_another_user_write_is_refused(safe_dir):
  # Mode 0775 and root's group passed, whoever the ACL (the '+' of `ls -l`,
  # its mask in the group bits) let write: setfacl -m u:nobody:rwx.
  acl_dir = os.path.join(safe_dir, 'acl-user')
  os.mkdir(acl_dir, 0o755)
  _RootsGroup(acl_dir)
  e2e.SetAcl(acl_dir, ('user', NOBODY, 7))
  assert stat.S_IMODE(os.stat(acl_dir).st_mode) == 0o775
  with pytest.raises(errors.UsageError) as e:
    trusted_programs.Check(_Program(acl_dir), '--memtier_path=x')
  assert str(e.value).startswith(
      f'--memtier_path=x: {acl_dir} is writable by other users (its ACL '
      f'lets {owned_paths.UserName(NOBODY)} write); ')
  # A mode does not take an ACL away: the advice names setfacl -b.
  assert str(e.value).endswith(
      'or fix the owner and mode, and remove the ACL (setfacl -b on the '
      'path named).')
  group_program = _Program(safe_dir, 'group-acl')
  _RootsGroup(group_program)
  e2e.SetAcl(group_program, ('group', NOBODY, 6))
  assert trusted_programs.Problem(group_program) == (
      f'{group_program} is writable by other users (its ACL lets group '
      f'{grp.getgrgid(NOBODY).gr_name} write)')
  assert owned_paths.DirectoryProblem(acl_dir).startswith(
      f'{acl_dir} is writable by other users (its ACL')


def test_each_problem_names_its_reason_which_fix_reads(safe_dir):
  """Fix picked its advice by the words "its ACL" in a problem: an ACL said
  otherwise (the shell's 'it has an ACL', unread without getfacl) got only
  owner-and-mode advice. A problem carries its reason; Fix reads that."""
  open_dir = os.path.join(safe_dir, 'open')
  os.mkdir(open_dir)
  os.chmod(open_dir, 0o777)
  assert trusted_programs.Problem(_Program(open_dir)).reason is (
      owned_paths.Reason.MODE)
  acl_dir = os.path.join(safe_dir, 'acl')
  os.mkdir(acl_dir, 0o755)
  _RootsGroup(acl_dir)
  e2e.SetAcl(acl_dir, ('user', NOBODY, 7))
  assert trusted_programs.Problem(_Program(acl_dir)).reason is (
      owned_paths.Reason.ACL)
  assert owned_paths.DirectoryProblem(acl_dir).reason is (
      owned_paths.Reason.ACL)
  if _IS_ROOT:
    nobodys = os.path.join(safe_dir, 'nobodys')
    os.mkdir(nobodys, 0o755)
    os.chown(nobodys, NOBODY, -1)
    assert trusted_programs.Problem(_Program(nobodys)).reason is (
        owned_paths.Reason.OWNER)
  setfacl = 'remove the ACL (setfacl -b on the path named)'
  assert setfacl in trusted_programs.Fix(owned_paths.Reason.ACL)
  for reason in set(owned_paths.Reason) - {owned_paths.Reason.ACL}:
    assert trusted_programs.Fix(reason) == 'fix the owner and mode', reason


class _Answers:
  """A VM whose trusted.sh prints `answer` (exit 0)."""
  name = 'vm-1'

  def __init__(self, answer):
    self.answer = answer

  def RemoteCommandWithReturnCode(self, command):
    del command
    return self.answer, '', 0


_SETFACL = ('or fix the owner and mode, and remove the ACL (setfacl -b on '
            'the path named).')


@pytest.mark.parametrize('answer,ending', [
    ('acl /d is writable by other users as far as can be told (it has an '
     'ACL, and getfacl, of package acl, is not installed to read it)\n',
     _SETFACL),
    ('acl /d is writable by other users (its ACL lets uid 65534 write)\n',
     _SETFACL),
    ('mode /d is writable by other users (mode 0777)\n',
     'or fix the owner and mode.'),
    ('owner /d is owned by uid 65534\n', 'or fix the owner and mode.'),
], ids=['acl-unread', 'acl-read', 'mode', 'owner'])
def test_a_vms_answer_is_advised_by_its_reason_not_its_words(answer, ending):
  with pytest.raises(errors.UsageError) as refused:
    trusted_programs.CheckOn(_Answers(answer), '/d/tool', 'x')
  line = str(refused.value)
  assert line.startswith(f'x on vm-1: {answer.split(" ", 1)[1].strip()}; ')
  assert line.endswith(ending), line


@pytest.mark.parametrize('answer', [
    '/d is writable by other users (its ACL lets uid 65534 write)',
    'acl', 'acl ', 'sideways /d is fine'])
def test_a_vms_answer_without_a_reason_is_an_error_never_a_pass(answer):
  # A reason with no words would read as "nothing is wrong" ('').
  with pytest.raises(errors.ProcessError) as broken:
    trusted_programs.CheckOn(_Answers(answer + '\n'), '/d/tool', 'x')
  line = str(broken.value)
  assert line.startswith('Checking /d/tool on vm-1 failed (trusted.sh '
                         'answered '), line
  assert '\n' not in line


def test_an_acl_that_lets_no_other_user_write_passes(safe_dir):
  for name, named, mask in (
      ('reads', [('user', NOBODY, 5), ('group', NOBODY, 5)], None),
      # Write given, but the mask takes it away.
      ('masked', [('user', NOBODY, 7)], 5),
      ('roots', [('user', 0, 7), ('user', os.geteuid(), 7),
                 ('group', 0, 7)], None)):
    directory = os.path.join(safe_dir, name)
    os.mkdir(directory, 0o755)
    _RootsGroup(directory)
    e2e.SetAcl(directory, *named, mask=mask)
    assert trusted_programs.Problem(_Program(directory)) is None, name
    assert owned_paths.DirectoryProblem(directory) is None, name


def test_path_entries_others_can_add_programs_to_are_left_out(
    safe_dir, monkeypatch):
  # PATH=/tmp/h7b/ww:$PATH (mode 0777) ran that directory's bash, base64,
  # chmod and taskset as root for the run's commands: only the programs pkb
  # names (redis-*, memtier, cc) were checked. A sticky directory others
  # can write passes as a program's directory, not as one PATH searches:
  # anyone may add a program of any name to it.
  def Dir(name, mode):
    path = os.path.join(safe_dir, name)
    os.mkdir(path)
    os.chmod(path, mode)
    return path
  mine, open_dir, sticky = (Dir('mine', 0o755), Dir('open', 0o777),
                            Dir('sticky', 0o1777))
  missing = os.path.join(sticky, 'not-made-yet', 'bin')
  monkeypatch.chdir(open_dir)
  monkeypatch.setenv('PATH', os.pathsep.join(
      [open_dir, mine, sticky, missing, '', '.', os.path.join(mine, 'gone')]))
  # LD_LIBRARY_PATH=/tmp/h7b/ww: a liblzf.so.1 put there ran in every
  # redis-server and redis-benchmark of the run (16 times).
  monkeypatch.setenv('LD_LIBRARY_PATH', f'{mine}{os.pathsep}{open_dir}')
  left_out = trusted_programs.KeepSafePath()
  assert os.environ['PATH'] == os.pathsep.join(
      [mine, os.path.join(mine, 'gone')])
  assert os.environ['LD_LIBRARY_PATH'] == mine
  assert left_out == [
      f'PATH\'s {open_dir} ({open_dir} is writable by other users (mode '
      '0777))',
      f'PATH\'s {sticky} ({sticky} is writable by other users (mode 1777))',
      f'PATH\'s {missing} ({sticky} is writable by other users (mode 1777))',
      f'PATH\'s (empty: the current directory) ({open_dir} is writable by '
      'other users (mode 0777))',
      f'PATH\'s . ({open_dir} is writable by other users (mode 0777))',
      f'LD_LIBRARY_PATH\'s {open_dir} ({open_dir} is writable by other '
      'users (mode 0777))']
  assert trusted_programs.KeepSafePath() == []  # What is left is kept.
  # Started in a directory since removed, a relative entry names nothing.
  gone = os.path.join(mine, 'gone-now')
  os.mkdir(gone)
  monkeypatch.chdir(gone)
  os.rmdir(gone)
  monkeypatch.setenv('PATH', f'.{os.pathsep}{mine}')
  monkeypatch.delenv('LD_LIBRARY_PATH')
  assert trusted_programs.KeepSafePath() == [
      'PATH\'s . (the current directory is gone)']
  assert os.environ['PATH'] == mine


def test_pkb_leaves_them_out_before_anything_runs(
    pkb_main, safe_dir, monkeypatch, capsys):
  open_dir = os.path.join(safe_dir, 'open')
  os.mkdir(open_dir)
  os.chmod(open_dir, 0o777)
  path = os.environ['PATH']
  monkeypatch.setenv('PATH', f'{open_dir}{os.pathsep}{path}')
  monkeypatch.delenv('LD_LIBRARY_PATH', raising=False)
  # BASH_ENV=<a file others can write>: a Local run's bashes sourced it 65
  # times, as root, the probe scripts holding the password among them.
  monkeypatch.setenv('BASH_ENV', os.path.join(open_dir, 'env.sh'))
  assert pkb_main(['--dry_run', f'--results_dir={safe_dir}/r']) == 0
  assert os.environ['PATH'] == path
  assert 'BASH_ENV' not in os.environ
  assert capsys.readouterr().err.startswith(
      'WARNING: directories other users can add programs or libraries to '
      f'are left out of the run\'s search paths: PATH\'s {open_dir} '
      f'({open_dir} is writable by other users (mode 0777)).\n')


def test_python_paths_others_can_write_are_left_out_of_the_venv_reexec(
    safe_dir, monkeypatch, capsys):
  # PYTHONPATH=/tmp/h7d/pp (mode 0777, a yaml.py in it): './pkb.py
  # --dry_run' imported that yaml.py as root in the venv's python it
  # re-execs into, before any of pkb's own checks.
  mine, open_dir = (os.path.join(safe_dir, n) for n in ('mine', 'open'))
  for path, mode in ((mine, 0o755), (open_dir, 0o777)):
    os.mkdir(path)
    os.chmod(path, mode)
  repo = os.path.join(safe_dir, 'repo')
  os.makedirs(os.path.join(repo, '.venv', 'bin'))
  _Program(os.path.join(repo, '.venv', 'bin'), 'python')
  monkeypatch.setenv('PYTHONPATH', os.pathsep.join([open_dir, mine]))
  monkeypatch.setenv('PYTHONSTARTUP', os.path.join(open_dir, 'startup.py'))
  monkeypatch.delenv('PKB_NO_VENV_REEXEC', raising=False)
  monkeypatch.setattr(sys, 'path', [open_dir, mine] + sys.path)
  execs = []
  monkeypatch.setattr(os, 'execv', lambda python, argv: execs.append(
      (python, dict(os.environ))))
  venv_reexec.UseRepoVenv(repo, os.path.join(repo, 'pkb.py'))
  (python, env), = execs
  assert python == os.path.join(repo, '.venv', 'bin', 'python')
  assert env['PYTHONPATH'] == mine and 'PYTHONSTARTUP' not in env
  assert open_dir not in sys.path and mine in sys.path
  assert capsys.readouterr().err == (
      'pkb: WARNING: directories other users can add Python modules to are '
      f'left out of its search path: PYTHONPATH\'s {open_dir} ({open_dir} '
      'is writable by other users (mode 0777)); PYTHONSTARTUP\'s '
      f'{open_dir}/startup.py ({open_dir} is writable by other users (mode '
      '0777)).\n')


def test_a_link_is_followed_and_both_paths_checked(safe_dir):
  open_dir = os.path.join(safe_dir, 'open')
  os.mkdir(open_dir)
  os.chmod(open_dir, 0o777)
  target = _Program(open_dir)
  link = os.path.join(safe_dir, 'link')
  os.symlink(target, link)
  assert 'writable by other users' in trusted_programs.Problem(link)
  # A safe program reached through a directory others can write: they
  # could point the link elsewhere.
  good = _Program(safe_dir, 'good')
  os.symlink(good, os.path.join(open_dir, 'to-good'))
  assert 'writable by other users' in trusted_programs.Problem(
      os.path.join(open_dir, 'to-good'))


def test_a_link_met_half_way_is_checked_where_it_lives(safe_dir):
  # safe/first -> open/second -> safe/good: the path as given and the one
  # resolved are both safe, but whoever may write open/ can point second
  # elsewhere between the check and the run (passed before).
  open_dir = os.path.join(safe_dir, 'open')
  os.mkdir(open_dir)
  os.chmod(open_dir, 0o777)
  good = _Program(safe_dir, 'good')
  os.symlink(good, os.path.join(open_dir, 'second'))
  first = os.path.join(safe_dir, 'first')
  os.symlink(os.path.join('open', 'second'), first)
  assert trusted_programs.Problem(first) == (
      f'{open_dir} is writable by other users (mode 0777)')
  # The same through a directory that is a link to a link.
  os.symlink(os.path.join(open_dir, 'to-safe'), os.path.join(safe_dir, 'dir'))
  os.symlink(safe_dir, os.path.join(open_dir, 'to-safe'))
  assert 'writable by other users' in trusted_programs.Problem(
      os.path.join(safe_dir, 'dir', 'good'))
  assert trusted_programs.Problem(good) is None


@e2e.Needs('root (chown to nobody)', lambda: _IS_ROOT, 'run the tests as root')
def test_a_link_another_user_owns_is_refused_even_in_a_sticky_directory(
    safe_dir):
  # As /tmp: nobody's link to a safe program passed (the sticky directory
  # and the resolved path were all that was checked), and nobody could
  # point it at a program of theirs after the check.
  sticky = os.path.join(safe_dir, 'sticky')
  os.mkdir(sticky)
  os.chmod(sticky, 0o1777)
  link = os.path.join(sticky, 'memtier_benchmark')
  os.symlink(_Program(safe_dir), link)
  assert trusted_programs.Problem(link) is None  # Its owner's own link.
  os.lchown(link, NOBODY, -1)
  assert trusted_programs.Problem(link) == (
      f'{link} is a symbolic link owned by nobody')


@e2e.Needs('root (chown to nobody)', lambda: _IS_ROOT, 'run the tests as root')
def test_a_program_or_directory_owned_by_another_user_is_refused(safe_dir):
  path = _Program(safe_dir)
  os.chown(path, NOBODY, -1)
  assert 'owned by' in trusted_programs.Problem(path)
  os.chown(path, 0, -1)
  assert trusted_programs.Problem(path) is None
  os.chown(safe_dir, NOBODY, -1)
  try:
    assert f'{safe_dir} is owned by' in trusted_programs.Problem(path)
  finally:
    os.chown(safe_dir, 0, -1)


def _PlantedMemtier(tmp_path):
  """What nobody could put in a directory of theirs: a "memtier" that
  leaves a trace of having run (and of its arguments) as whoever ran it;
  (its path, the trace's path)."""
  os.chmod(tmp_path, 0o755)
  planted = tmp_path / 'nobodys'
  planted.mkdir()
  os.chown(planted, NOBODY, -1)
  os.chmod(planted, 0o755)
  ran = tmp_path / 'ran'
  tool = planted / 'memtier_benchmark'
  tool.write_text(f'#!/bin/sh\necho "$(id -u) $*" >> {ran}\n'
                  'echo "memtier_benchmark 2.1.0"\n')
  tool.chmod(0o755)
  os.chown(tool, NOBODY, -1)
  return tool, ran


@pytest.mark.e2e
@pytest.mark.skipif(not _IS_ROOT, reason='makes a directory nobody owns')
@pytest.mark.parametrize('dry_run', [True, False])
def test_pkb_refuses_a_memtier_path_nobody_can_write_before_running_it(
    tmp_path, dry_run):
  tool, ran = _PlantedMemtier(tmp_path)
  planted = tool.parent
  results = tmp_path / 'results'
  proc, run_uri = e2e.Run(
      e2e.FAST + [f'--memtier_path={tool}'] +
      (['--dry_run'] if dry_run else []), str(results))
  assert not ran.exists(), ran.read_text()  # Never run, as anyone.
  assert proc.returncode == 2, (proc.stdout, proc.stderr)
  lines = proc.stderr.strip().splitlines()
  assert len(lines) == 1 and 'Traceback' not in proc.stderr, proc.stderr
  assert f'{planted} is owned by nobody' in lines[0], lines[0]
  assert not (results / run_uri).exists()


def _Tree(root):
  """Programs in places of every kind the rule tells apart."""
  os.chmod(root, 0o755)
  places = {}
  for name, mode in (('safe', 0o755), ('open', 0o777), ('sticky', 0o1777),
                     ('group', 0o775)):
    os.mkdir(os.path.join(root, name))
    os.chmod(os.path.join(root, name), mode)
    places[name] = _Program(os.path.join(root, name))
  places['writable_file'] = _Program(root, 'wf', mode=0o757)
  os.symlink(places['open'], os.path.join(root, 'safe', 'to-open'))
  places['link_to_open'] = os.path.join(root, 'safe', 'to-open')
  # safe/via-open -> open/to-safe -> safe/tool: a link met half way.
  os.symlink(places['safe'], os.path.join(root, 'open', 'to-safe'))
  os.symlink(os.path.join('..', 'open', 'to-safe'),
             os.path.join(root, 'safe', 'via-open'))
  places['link_via_open'] = os.path.join(root, 'safe', 'via-open')
  if _IS_ROOT:
    # ACLs on root's group: 0775 by their masks.
    for name, named, mask in (('acl_user', [('user', NOBODY, 7)], None),
                              ('acl_group', [('group', NOBODY, 7)], None),
                              ('acl_masked', [('user', NOBODY, 7)], 5)):
      os.mkdir(os.path.join(root, name), 0o755)
      places[name] = _Program(os.path.join(root, name))
      _RootsGroup(os.path.dirname(places[name]))
      e2e.SetAcl(os.path.dirname(places[name]), *named, mask=mask)
    places['acl_file'] = _Program(root, 'acl-file')
    _RootsGroup(places['acl_file'])
    e2e.SetAcl(places['acl_file'], ('user', NOBODY, 6))
    os.chown(os.path.join(root, 'group'), -1, NOBODY)
    nobodys = os.path.join(root, 'nobodys')
    os.mkdir(nobodys, 0o755)
    places['nobodys'] = _Program(nobodys)
    os.chown(nobodys, NOBODY, -1)
    nobodys_link = os.path.join(root, 'sticky', 'nobodys-link')
    os.symlink(places['safe'], nobodys_link)
    os.lchown(nobodys_link, NOBODY, -1)
    places['nobodys_link'] = nobodys_link
  return places


class _ThisMachineOverBash:
  name = 'this machine'

  def RemoteCommandWithReturnCode(self, command):
    proc = subprocess.run(['bash', '-c', command], capture_output=True,
                          text=True, timeout=30, check=False)
    return proc.stdout, proc.stderr, proc.returncode


@pytest.mark.e2e
@pytest.mark.usefixtures('shipped_scripts')
def test_the_shell_check_a_remote_vm_runs_agrees_with_python(tmp_path):
  """CheckOn (bash, on a static VM) and Check (Python, here) are one rule."""
  vm = _ThisMachineOverBash()
  for name, path in _Tree(str(tmp_path)).items():
    python = trusted_programs.Problem(path)
    try:
      trusted_programs.CheckOn(vm, path, name)
      shell = None
    except errors.UsageError as e:
      shell = str(e)
    assert (python is None) == (shell is None), (name, python, shell)
    if python:
      # Both name the same place at fault, and give the same advice.
      assert python.split(' is ')[0] in shell, (name, python, shell)
      assert shell.endswith(f'{trusted_programs.Fix(python.reason)}.'), (
          name, python, shell)
  assert trusted_programs.CheckOn(vm, 'bash', 'bash') == 'bash'


# What the shell says of an ACL whose mask lets write without getfacl.
_UNREAD_ACL = ('as far as can be told (it has an ACL, and getfacl, of package '
               'acl, is not installed to read it)')


class _WithoutGetfacl(_ThisMachineOverBash):
  """This machine over bash, its PATH only the tools trusted.sh needs but
  getfacl (an image without the acl package)."""

  def __init__(self, tools):
    self.tools = tools

  def RemoteCommandWithReturnCode(self, command):
    return super().RemoteCommandWithReturnCode(
        f'PATH={shlex.quote(self.tools)}; {command}')


@pytest.mark.e2e
@pytest.mark.skipif(not _IS_ROOT, reason='chowns to root\'s group')
@pytest.mark.usefixtures('shipped_scripts')
def test_without_getfacl_a_vm_refuses_an_acl_that_may_let_others_write(
    tmp_path):
  tools = tmp_path / 'tools'
  tools.mkdir()
  for tool in ('stat', 'ls'):
    os.symlink(shutil.which(tool), tools / tool)
  (tmp_path / "tree").mkdir()
  places = _Tree(str(tmp_path / "tree"))
  vm = _WithoutGetfacl(str(tools))
  with pytest.raises(errors.UsageError) as refused:
    trusted_programs.CheckOn(vm, places['acl_user'], 'x')
  assert str(refused.value).startswith(
      f'x on this machine: {os.path.dirname(places["acl_user"])} is '
      f'writable by other users {_UNREAD_ACL}; ')
  # An ACL unread is one still: a mode does not take it away.
  assert str(refused.value).endswith(_SETFACL), str(refused.value)
  # An ACL whose mask lets no one write needs no reading.
  assert trusted_programs.CheckOn(vm, places['acl_masked'], 'x')


@pytest.mark.e2e
def test_the_path_an_ssh_command_keeps_is_the_one_python_keeps(tmp_path):
  """ssh_command.sh's safe_path and KeepSafePath (owned_paths.sh and .py)
  are one rule. Before, safe_path checked a link's owner but not where a
  link met half way lives: safe/via-open-dir (-> open/dir -> safe) stayed
  on the command's PATH though whoever may write open/ could repoint it."""
  tree = str(tmp_path)
  places = _Tree(tree)
  via_open = os.path.join(tree, 'safe', 'via-open-dir')
  os.symlink(os.path.join(tree, 'safe'), os.path.join(tree, 'open', 'dir'))
  os.symlink(os.path.join('..', 'open', 'dir'), via_open)
  entries = [os.path.dirname(p) for p in places.values()] + [
      via_open, os.path.join(tree, 'safe', 'missing', 'bin'),
      os.path.join(tree, 'open', 'missing'), 'relative', '', '/usr/bin',
      '/bin']
  if _IS_ROOT:
    entries.append(places['nobodys_link'])
  login = ':'.join(entries)
  ran = subprocess.run(
      ['sh', '-c', remote_shell.CommandScript('echo "$PATH"', '/', 5)],
      env={'PATH': login}, capture_output=True, text=True, timeout=30,
      check=True)
  python = [e for e in entries
            if e.startswith('/') and not owned_paths.DirectoryProblem(e)]
  assert remote_shell.CommandStdout(ran.stdout).strip() == ':'.join(
      python), login
  # Each entry left out, said with the words Python gives (a uid for a
  # name: bash has no user database lookup) and Python's reason (none for
  # a relative entry, which names no one place).
  relative = 'relative: the directory each command runs in'
  expected = [
      f'{e or "(empty)"} ({owned_paths.DirectoryProblem(e) or relative})'
      .replace(' nobody', ' uid 65534').replace(' nogroup', ' gid 65534')
      for e in entries if e not in python]
  if not shutil.which('getfacl'):  # The shell cannot read an ACL then.
    expected = [re.sub(r'\(its ACL lets .* write\)', _UNREAD_ACL, e)
                for e in expected]
  left = remote_shell.LeftOutOfPath(ran.stderr)
  assert [out.entry for out in left] == expected
  reasons = [getattr(owned_paths.DirectoryProblem(e), 'reason', None)
             if e.startswith('/') else None
             for e in entries if e not in python]
  assert [out.reason for out in left] == reasons
  if _IS_ROOT:  # An ACL's reason said as such (the setfacl -b advice).
    assert owned_paths.Reason.ACL in reasons
  assert via_open not in python
  assert os.path.join(tree, 'safe') in python


class _PathFirst(_ThisMachineOverBash):
  """This machine over bash, logging in with `directory` first on PATH."""

  def __init__(self, directory):
    self.directory = directory

  def RemoteCommandWithReturnCode(self, command):
    return super().RemoteCommandWithReturnCode(
        f'PATH={shlex.quote(self.directory)}:$PATH; {command}')


@pytest.mark.e2e
@pytest.mark.usefixtures('shipped_scripts')
def test_a_program_a_vms_path_finds_where_others_can_write_is_refused(
    tmp_path):
  """Every VM's HasCommand but Local's (OnPath): the redis-server, java or
  redis-benchmark a static machine's PATH finds is run as the run logs in,
  with its password, so it is checked there as --memtier_path is."""
  places = _Tree(str(tmp_path))
  open_dir = os.path.dirname(places['open'])
  with pytest.raises(errors.UsageError) as refused:
    trusted_programs.OnPath(_PathFirst(open_dir), 'tool')
  line = str(refused.value)
  assert '\n' not in line
  assert line.startswith('tool (found on PATH) on this machine: '
                         f'{open_dir} is writable by other users'), line
  safe = _PathFirst(os.path.dirname(places['safe']))
  assert trusted_programs.OnPath(safe, 'tool') is True
  assert trusted_programs.OnPath(safe, 'bash') is True
  assert trusted_programs.OnPath(safe, 'no-such-program-here') is False


@pytest.mark.e2e
def test_a_check_that_did_not_run_is_an_error_not_a_missing_program(
    monkeypatch):
  """Before, any non-zero exit of the PATH check read as "not on PATH": a
  machine whose scripts were never shipped (or a refused login) looked
  like one without redis-server, and the run went on to install it."""
  monkeypatch.delenv('PKB_SCRIPTS', raising=False)
  with pytest.raises(errors.ProcessError) as broken:
    trusted_programs.OnPath(_ThisMachineOverBash(), 'bash')
  line = str(broken.value)
  assert '\n' not in line
  assert line.startswith('Checking bash on this machine failed (trusted.sh '
                         'exited with status 127: '), line
  assert 'PKB_SCRIPTS' in line
  with pytest.raises(errors.ProcessError, match='status 127'):
    trusted_programs.CheckOn(_ThisMachineOverBash(), '/bin/sh', 'sh')


class _StaticMachine(_PathFirst):
  """`_PathFirst` with a static machine's HasCommand (its PATH's program,
  checked there)."""

  def HasCommand(self, program):
    return trusted_programs.OnPath(self, program)


@pytest.mark.e2e
@pytest.mark.usefixtures('shipped_scripts')
def test_a_static_machines_redis_server_is_checked_before_it_runs(
    tmp_path):
  """The run installs redis-server on a machine reached over SSH unless the
  one PATH finds is already the version asked for: that one (asked for its
  version, then run as the server, with the run's password) is checked
  first. Before, `redis-server --version` ran whatever PATH found."""
  open_dir = os.path.dirname(_Tree(str(tmp_path))['open'])
  ran = tmp_path / 'ran'
  planted = os.path.join(open_dir, 'redis-server')
  with open(planted, 'w') as f:
    f.write(f'#!/bin/sh\necho "$(id -u) $*" >> {ran}\n'
            'echo "Redis server v=7.2.4 sha=00000000:0"\n')
  os.chmod(planted, 0o755)
  with pytest.raises(errors.UsageError) as refused:
    remote_install.InstallRedis(_StaticMachine(open_dir), 'distro')
  assert not ran.exists(), ran.read_text()
  line = str(refused.value)
  assert '\n' not in line
  assert line.startswith('redis-server (found on PATH) on this machine: '
                         f'{open_dir} is writable by other users'), line


@pytest.mark.e2e
@e2e.Needs('root (chown to nobody)', lambda: _IS_ROOT, 'run the tests as root')
def test_a_static_vms_memtier_path_nobody_can_write_is_refused_before_it_runs(
    tmp_path, sshd):  # pylint: disable=redefined-outer-name
  """The same on a machine pkb reaches over SSH (this one, by the loopback
  sshd the static VM tests use)."""
  tool, ran = _PlantedMemtier(tmp_path)
  static = tmp_path / 'static.json'
  static.write_text(json.dumps([{
      'ip_address': sshd.host, 'user_name': sshd.user,
      'keyfile_path': sshd.user_key, 'ssh_port': sshd.port}] * 2))
  proc, _ = e2e.Run(e2e.FAST + [
      f'--static_vm_file={static}', '--nosystem_tuning',
      '--load_generator=memtier', f'--memtier_path={tool}'],
                    str(tmp_path / 'results'))
  assert not ran.exists(), ran.read_text()
  # Refused in prepare (the machine is reached first), in one line, exit 2
  # (bad input, as before a run); the run stops there and tears down what
  # it made. The plan's warning (one machine is server and client) first.
  assert proc.returncode == 2, (proc.stdout, proc.stderr)
  lines = [l for l in proc.stderr.strip().splitlines()
           if not l.startswith('WARNING')]
  assert len(lines) == 1 and 'Traceback' not in proc.stderr, proc.stderr
  assert (f'--memtier_path={tool} on clients-0: {tool.parent} is owned by '
          'uid 65534') in lines[0], lines[0]


@pytest.mark.e2e
@e2e.Needs('root (it drops to nobody)', lambda: os.geteuid() == 0)
def test_a_link_this_user_may_not_read_is_a_problem_not_a_traceback():
  """/proc/1/root is a link only root may read: realpath's readlink raised
  PermissionError out of Problem (a PATH entry under it was a traceback
  at pkb's start for any other user). As nobody, in a child of this test."""
  read_end, write_end = os.pipe()
  pid = os.fork()
  if pid == 0:  # The child: nobody, the rule, its answers, exit.
    os.close(read_end)
    try:
      os.setgroups([])
      os.setresgid(65534, 65534, 65534)
      os.setresuid(65534, 65534, 65534)
      answers = [owned_paths.Problem('/proc/1/root/usr/bin'),
                 owned_paths.DirectoryProblem('/proc/1/root/usr/bin')]
      os.write(write_end, json.dumps(answers).encode())
    except BaseException as e:  # pylint: disable=broad-except
      os.write(write_end, json.dumps([repr(e)]).encode())
    finally:
      os._exit(0)  # pylint: disable=protected-access
  os.close(write_end)
  with os.fdopen(read_end, 'rb') as f:
    answers = json.loads(f.read())
  os.waitpid(pid, 0)
  assert answers == ['/proc/1/root cannot be read (Permission denied)'] * 2
