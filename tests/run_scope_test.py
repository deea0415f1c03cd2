"""A run's directories are its own: made 0700, reused only when ours.

The attack these tests replay: another user makes a directory where the run
will work first, writable by all or as a symlink, and waits for the run to
put (or load) things there. At a name they can guess (/tmp/pkb-<run_uri>,
where scratch directories used to be) the run does not work any more: it
works in a workspace nobody could name in advance. Where a run must use a
known name (results/runs/<run_uri>) `./pkb.py` refuses in one line before
anything starts and touches nothing; teardown leaves a directory a run
record names that is not the run's own alone, and says so.
"""

import functools
import logging
import os
import shutil
import stat
import subprocess
import tempfile
import time

import pytest

import e2e_support as e2e
from perfkitbenchmarker import matrix_runner
from perfkitbenchmarker import owned_paths
from perfkitbenchmarker import paths
from perfkitbenchmarker import resource
from perfkitbenchmarker import run_log
from perfkitbenchmarker import run_record
from perfkitbenchmarker import run_scope
from perfkitbenchmarker import shell_scripts
from perfkitbenchmarker import ssh_vm
from perfkitbenchmarker.providers.local import provider as local

IS_ROOT = os.geteuid() == 0


def _Snapshot(top):
  """Every entry under top with its owner, mode and (for files) content."""
  found = {}
  for parent, dirs, files in os.walk(top):
    for name in [''] + dirs + files:
      path = os.path.join(parent, name)
      st = os.lstat(path)
      content = None
      if stat.S_ISREG(st.st_mode):
        with open(path, 'rb') as f:
          content = f.read()
      found[path] = (st.st_uid, st.st_mode, st.st_mtime_ns, content)
  return found


def _AsNobody(script):
  subprocess.run(['runuser', '-u', 'nobody', '--', 'bash', '-c', script],
                 check=True, timeout=30)


def _Pkb(run_uri, results, *args, scratch=None):
  env = dict(os.environ)
  if scratch is not None:
    env['PKB_LOCAL_SCRATCH'] = str(scratch)
  # e2e.FAST: these tests are about where a run works, not its answer.
  proc, _ = e2e.Run(e2e.FAST + list(args), str(results), run_uri=run_uri,
                    env=env)
  return proc


def _AssertRefused(proc, path):
  assert proc.returncode == 2, (proc.stdout, proc.stderr)
  assert proc.stdout == ''
  lines = proc.stderr.splitlines()
  assert len(lines) == 1, proc.stderr
  assert path in lines[0] and 'left alone' in lines[0], lines[0]


def _AssertRanElsewhere(proc, results, run_uri, planted):
  """The run succeeded in a workspace of its own, not under `planted`, and
  removed it at the end."""
  assert proc.returncode == 0, proc.stderr[-2000:]
  for vm in ('servers-0', 'clients-0'):
    scratch = e2e.ScratchDir(str(results), run_uri, vm)
    assert not scratch.startswith(f'{planted}/'), scratch
    assert os.path.basename(os.path.dirname(scratch)).startswith(
        f'pkb-{run_uri}.')
  assert not os.path.exists(scratch)


@pytest.mark.e2e
@e2e.Needs('root and runuser (to act as user nobody)',
           lambda: IS_ROOT and shutil.which('runuser') is not None,
           'run the tests as root, as CI does')
def test_another_users_planted_scratch_dirs_are_not_used_by_a_root_run(
    tmp_path):
  """The reported attack, as written: nobody pre-creates the scratch
  directories a run used to take (/tmp/pkb-<run_uri>/<vm>, mode 777, a
  library planted in one); a root run makes its own workspace, with a name
  nobody could know, and neither uses nor touches theirs."""
  run_uri = 'evil' + e2e.NewRunUri()
  top = f'/tmp/pkb-{run_uri}'
  try:
    _AsNobody(f'mkdir -p {top}/clients-0 {top}/servers-0 && '
              f'echo planted > {top}/servers-0/argv_secret.so && '
              f'chmod -R 777 {top}')
    before = _Snapshot(top)
    proc = _Pkb(run_uri, tmp_path / 'results')
    _AssertRanElsewhere(proc, tmp_path / 'results', run_uri, top)
    assert _Snapshot(top) == before
  finally:
    shutil.rmtree(top, ignore_errors=True)


@pytest.mark.e2e
def test_scratch_dirs_planted_at_the_guessable_name_are_not_used(tmp_path):
  """The same for any user: the guessable name a symlink to elsewhere, or
  a directory others can write to."""
  run_uri = e2e.NewRunUri()
  scratch = tmp_path / 'scratch'
  scratch.mkdir()
  elsewhere = tmp_path / 'elsewhere'
  elsewhere.mkdir(mode=0o700)
  os.symlink(elsewhere, scratch / f'pkb-{run_uri}')
  (scratch / f'pkb-{run_uri}-open' / 'servers-0').mkdir(parents=True)
  os.chmod(scratch / f'pkb-{run_uri}-open', 0o777)

  def Planted():  # Everything but the scratch root itself (its mtime).
    found = _Snapshot(scratch)
    del found[f'{scratch}/']
    return found, _Snapshot(elsewhere)

  before = Planted()
  proc = _Pkb(run_uri, tmp_path / 'results', scratch=scratch)
  _AssertRanElsewhere(proc, tmp_path / 'results', run_uri, elsewhere)
  assert Planted() == before


@pytest.mark.e2e
def test_run_directory_of_another_shape_is_refused(tmp_path):
  """results/runs/<run_uri> as a symlink to somewhere else: refused, and
  nothing is written through it."""
  run_uri = e2e.NewRunUri()
  results = tmp_path / 'results'
  results.mkdir()
  target = tmp_path / 'target'
  target.mkdir(mode=0o700)
  os.symlink(target, results / run_uri)
  proc = _Pkb(run_uri, results, scratch=tmp_path / 'scratch')
  _AssertRefused(proc, str(results / run_uri))
  assert os.listdir(target) == []


def test_teardown_leaves_a_foreign_scratch_dir_alone(tmp_path, monkeypatch):
  """A record whose local VM's scratch directory is writable by others:
  teardown reports it in one line and removes nothing (in-process: the
  refusal is teardown's own, the driver's line is tested elsewhere)."""
  monkeypatch.setattr(local, 'SCRATCH_ROOT', str(tmp_path / 'scratch'))
  run_uri = e2e.NewRunUri()
  # The right shape, so only whose it is can refuse it.
  vm_dir = tmp_path / 'scratch' / f'pkb-{run_uri}.planted' / 'servers-0'
  vm_dir.mkdir(parents=True)
  (vm_dir / 'precious').write_text('keep me')
  os.chmod(vm_dir, 0o777)
  record = run_record.RunRecord.Create(str(tmp_path / 'results' / run_uri),
                                       run_uri)
  record.AddResource('local_vm', 'servers-0', group='servers',
                     scratch_dir=str(vm_dir))
  record.UpdateResource('local_vm', 'servers-0', status='created')
  failures = resource.TeardownFromRecord(record)
  assert len(failures) == 1 and 'others can write to it' in failures[0]
  assert (vm_dir / 'precious').read_text() == 'keep me'


def test_make_own_dir(tmp_path):
  made = run_scope.MakeOwnDir(str(tmp_path / 'a' / 'b'), str(tmp_path))
  for path in (tmp_path / 'a', tmp_path / 'a' / 'b'):
    assert stat.S_IMODE(os.lstat(path).st_mode) == 0o700
  # A resumed stage: the same directories, still ours, are reused.
  assert run_scope.MakeOwnDir(made, str(tmp_path)) == made
  os.chmod(tmp_path / 'a', 0o770)
  with pytest.raises(run_scope.NotOwnDir, match='others can write'):
    run_scope.MakeOwnDir(made, str(tmp_path))
  os.chmod(tmp_path / 'a', 0o700)
  (tmp_path / 'file').write_text('')
  with pytest.raises(run_scope.NotOwnDir, match='not a directory'):
    run_scope.MakeOwnDir(str(tmp_path / 'file' / 'x'), str(tmp_path))
  # A root anyone can write to without the sticky bit: ours could be
  # renamed away and replaced.
  open_root = tmp_path / 'open'
  open_root.mkdir()
  os.chmod(open_root, 0o777)
  with pytest.raises(run_scope.NotOwnDir, match='sticky'):
    run_scope.MakeOwnDir(str(open_root / 'x'))
  os.chmod(open_root, 0o1777)
  run_scope.MakeOwnDir(str(open_root / 'x'))


@pytest.mark.e2e
def test_remote_workspace_and_own_scripts(tmp_path, shipped_scripts):
  """The shell forms (VMs over SSH): a workspace made by mktemp -d, shared
  while it is still ours; removal (scripts/clean_scratch.sh) refused for a
  directory not ours, nothing of it removed."""
  del shipped_scripts  # In the environment.

  def Bash(script):
    return subprocess.run(['bash', '-c', script], capture_output=True,
                          text=True, timeout=10)

  def Clean(path):
    return Bash(shell_scripts.Command('clean_scratch.sh', str(path)))

  root = str(tmp_path)
  made = Bash(run_scope.RemoteWorkspaceScript('r1', 'servers-0', '', root))
  path = made.stdout.strip()
  assert run_scope.ScratchProblem(path, root, 'r1') is None
  workspace = os.path.dirname(path)
  assert stat.S_IMODE(os.stat(workspace).st_mode) == 0o700
  again = Bash(run_scope.RemoteWorkspaceScript('r1', 'clients-0', workspace,
                                              root))
  assert again.stdout.strip() == f'{workspace}/clients-0'  # Shared.
  os.chmod(workspace, 0o777)  # No longer the run's own: not shared ...
  fresh = Bash(run_scope.RemoteWorkspaceScript('r1', 'clients-1', workspace,
                                              root)).stdout.strip()
  assert os.path.dirname(fresh) not in ('', workspace)
  refused = Clean(path)  # ... or removed.
  assert refused.returncode == 3 and 'left alone' in refused.stderr
  assert os.path.isdir(path)
  own = tmp_path / 'own'
  own.mkdir(mode=0o700)
  os.symlink(path, own / 'link')
  assert Clean(own / 'link').returncode == 3 and os.path.isdir(path)
  assert Clean(own / 'gone').returncode == 0
  os.chmod(workspace, 0o700)
  assert Clean(path).returncode == 0
  assert not os.path.exists(path) and os.path.isdir(f'{workspace}/clients-0')


@pytest.mark.e2e
def test_a_process_named_in_no_utf8_is_found_working_in_a_directory(
    tmp_path):
  """A process's name is any bytes but NUL (here its executable's, a copy
  of sleep): WorkingIn read every process's name as UTF-8, so one of
  other bytes anywhere on the runner (any user's) stopped the removal of
  each run directory with a UnicodeDecodeError traceback. Now its bytes
  are named as escapes."""
  top = tmp_path / 'top'
  top.mkdir(mode=0o700)
  program = os.path.join(os.fsencode(tmp_path), b'sleep\xff')
  shutil.copy('/bin/sleep', program)
  named = subprocess.Popen([program, b'120'], cwd=top)
  try:
    assert run_scope.WorkingIn(str(top)) == [(named.pid, 'sleep\\xff')]
  finally:
    named.kill()
    named.wait()


@pytest.mark.e2e
def test_a_vms_workspace_root_others_control_is_refused_there(tmp_path):
  """A VM's workspaces go in /tmp there (record_checks.REMOTE_SCRATCH_ROOT),
  which nothing checked as CheckRoot checks the runner's roots: made in a
  root another user may write without the sticky bit (its mode or its
  ACL), or one another user owns, the run's workspace could be renamed
  away and replaced. workspace.sh refuses such a root with the fault's
  reason and words, making nothing; a sticky one (/tmp's 1777) passes."""

  def Make(root):
    ran = subprocess.run(
        ['bash', '-c', run_scope.RemoteWorkspaceScript('r1', 'vm-0', '',
                                                        str(root))],
        capture_output=True, text=True, timeout=30, check=False)
    return ran, run_scope.RemoteRootFault(ran.returncode, ran.stderr)

  root = tmp_path / 'root'
  root.mkdir(mode=0o755)
  os.chmod(root, 0o777)
  ran, fault = Make(root)
  assert ran.returncode == run_scope.ROOT_REFUSED and ran.stdout == ''
  assert (fault, fault.reason) == (
      f'{root} is writable by other users (mode 0777)',
      owned_paths.Reason.MODE), ran.stderr
  assert os.listdir(root) == []
  # The one line a VM's refusal says, the VM and the root named.
  assert str(run_scope.RemoteRootRefusal('vm-0 (u@h port 22)', str(root),
                                         fault)) == (
      f'vm-0 (u@h port 22): {root} there cannot hold the run\'s workspace '
      f'({root} is writable by other users (mode 0777)): another user could '
      'rename it away and put theirs in its place; nothing of this run was '
      'made there. Make it and the directories above it root\'s or the '
      'login user\'s, and sticky or writable by no one else: fix the owner '
      'and mode.')
  os.chmod(root, 0o1777)  # Sticky, as /tmp: only an entry's owner renames.
  ran, fault = Make(root)
  assert ran.returncode == 0 and fault is None, ran.stderr
  assert run_scope.ScratchProblem(ran.stdout.strip(), str(root), 'r1') is None
  ran, fault = Make(root / 'missing')
  assert fault and fault.reason is owned_paths.Reason.UNREADABLE, ran.stderr
  if os.geteuid() != 0:
    return
  os.chmod(root, 0o755)
  os.chown(root, 65534, -1)
  ran, fault = Make(root)
  assert (fault, fault.reason) == (
      f'{root} is owned by uid 65534', owned_paths.Reason.OWNER)
  os.chown(root, 0, 0)
  os.chmod(root, 0o775)  # Root's group: writable through an ACL only.
  e2e.SetAcl(str(root), ('user', 65534, 7))
  ran, fault = Make(root)
  assert fault.reason is owned_paths.Reason.ACL, ran.stderr
  assert 'its ACL lets uid 65534 write' in fault
  assert str(run_scope.RemoteRootRefusal('vm-0', str(root), fault)).endswith(
      'remove the ACL (setfacl -b on the path named).')


def test_a_root_inside_a_directory_others_control_is_refused(tmp_path):
  """An installed pkb keeps runs in <tmp>/perfkitbenchmarker/runs: made
  inside a directory anyone can rename things in (world-writable, not
  sticky), the runs root and everything under it could be swapped for
  another user's. Refused before anything is made there."""
  open_dir = tmp_path / 'open'
  open_dir.mkdir()
  os.chmod(open_dir, 0o777)
  runs = open_dir / 'perfkitbenchmarker' / 'runs'
  with pytest.raises(run_scope.NotOwnDir, match='sticky'):
    run_scope.MakeOwnDir(str(runs / 'r1'))
  assert not (runs / 'r1').exists()
  os.chmod(open_dir, 0o1777)  # As /tmp is: ours cannot be renamed away.
  run_scope.MakeOwnDir(str(runs / 'r1'))
  assert stat.S_IMODE(os.lstat(runs / 'r1').st_mode) == 0o700


def _Group(path, gid):
  """Gives `path` group `gid` (only root can give any group)."""
  if os.stat(path).st_gid != gid:
    if not IS_ROOT:
      pytest.skip(f'chowns to gid {gid}')
    os.chown(path, -1, gid)


def test_a_root_a_group_or_an_acl_lets_others_write_is_refused(
    tmp_path, monkeypatch):
  """A scratch root (PKB_LOCAL_SCRATCH, TMPDIR, the runs root) another user
  can write through its group or a POSIX ACL, without the sticky bit: they
  could rename a run's directory away and put theirs in its place. Only
  the others' write bit was looked at, so 0770 of group nogroup and 0775
  with an ACL letting nobody write passed. Sticky ones pass, as /tmp."""
  group_dir = tmp_path / 'group'
  group_dir.mkdir()
  os.chmod(group_dir, 0o770)
  _Group(group_dir, 65534)
  acl_dir = tmp_path / 'acl'
  acl_dir.mkdir(mode=0o755)
  _Group(acl_dir, 0)  # Root's group may write (owned_paths' rule).
  e2e.SetAcl(acl_dir, ('user', 65534, 7))
  assert stat.S_IMODE(os.stat(acl_dir).st_mode) == 0o775
  for root, words in ((group_dir, 'writable by other users (mode 0770)'),
                      (acl_dir, 'writable by other users (its ACL lets')):
    for make in (functools.partial(run_scope.MakeTempDir, 'pkb-r1.',
                                   str(root)),
                 functools.partial(run_scope.MakeOwnDir,
                                   str(root / 'runs' / 'r1'))):
      with pytest.raises(run_scope.NotOwnDir) as refused:
        make()
      message = str(refused.value)
      assert str(root) in message and words in message, message
      assert 'sticky' in message and '\n' not in message, message
      assert os.listdir(root) == []
    os.chmod(root, stat.S_IMODE(os.stat(root).st_mode) | stat.S_ISVTX)
    assert run_scope.MakeTempDir('pkb-r1.', str(root)).startswith(
        f'{root}/pkb-r1.')
    run_scope.MakeOwnDir(str(root / 'runs' / 'r1'))
  # /tmp (1777, root's) holds them, as it always did.
  monkeypatch.setattr(tempfile, 'tempdir', '/tmp')
  run_scope.CheckTempRoot()


def test_a_scratch_root_refused_names_pkb_local_scratch(tmp_path,
                                                       monkeypatch):
  # PKB_LOCAL_SCRATCH naming a directory anyone can rename things in was
  # refused with "... or use another --run_uri", which meets the same root.
  open_dir = tmp_path / 'open'
  open_dir.mkdir()
  os.chmod(open_dir, 0o777)
  monkeypatch.setattr(local, 'SCRATCH_ROOT', str(open_dir))
  for check in (local.CheckRunDirs,
                lambda: run_scope.MakeTempDir('pkb-r1.', str(open_dir),
                                              local.SCRATCH_ADVICE)):
    with pytest.raises(run_scope.NotOwnDir) as refused:
      check()
    message = str(refused.value)
    assert 'sticky' in message and 'set PKB_LOCAL_SCRATCH' in message
    assert '--run_uri' not in message
  assert os.listdir(open_dir) == []


def test_a_full_scratch_disk_is_said_as_such(tmp_path, monkeypatch):
  """PKB_LOCAL_SCRATCH on a disk with no inode left: the workspace's
  mkdtemp was refused as '... cannot hold this run's directories (No space
  left on device): its owner could swap them; left alone' (exit 2), and a
  VM's own mkdir in it was 'internal error OSError' with a traceback."""
  import errno  # pylint: disable=g-import-not-at-top
  from perfkitbenchmarker import errors  # pylint: disable=g-import-not-at-top
  from perfkitbenchmarker import virtual_machine  # pylint: disable=g-import-not-at-top
  monkeypatch.setattr(local, 'SCRATCH_ROOT', str(tmp_path))
  real_mkdir = os.mkdir

  def FullFor(suffix):
    def Mkdir(path, *args, **kwargs):
      if str(path).endswith(suffix):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
      return real_mkdir(path, *args, **kwargs)
    return Mkdir

  def Create():
    local.LocalVirtualMachine(
        virtual_machine.VmSpec(cloud='Local', machine_type='local'),
        'servers-0', 'servers', run_uri='r1').Create()

  for failing in ('', '/servers-0'):  # The workspace, then the VM's own.
    with monkeypatch.context() as patched:
      patched.setattr(os, 'mkdir', FullFor(failing))
      with pytest.raises(errors.Error) as refused:
        Create()
    message = str(refused.value)
    assert not isinstance(refused.value, errors.UsageError), message
    assert 'No space left on device' in message, message
    assert 'swap' not in message and 'PKB_LOCAL_SCRATCH' in message, message
    assert os.listdir(tmp_path) == []  # No empty workspace left.


def test_a_keys_root_refused_names_pkb_key_dir(tmp_path, monkeypatch):
  # A cloud run's PKB_KEY_DIR anyone can rename things in was refused at
  # provision with '... or keep runs elsewhere (--results_dir)', which does
  # not move the keys.
  open_dir = tmp_path / 'open'
  open_dir.mkdir()
  os.chmod(open_dir, 0o777)
  monkeypatch.setenv(run_scope.KEYS_ENV_VAR, str(open_dir))
  with pytest.raises(run_scope.NotOwnDir) as refused:
    ssh_vm.GenerateKeyPair(run_scope.RunKeyDir('r1'))
  message = str(refused.value)
  assert 'sticky' in message and 'set PKB_KEY_DIR' in message, message
  assert '--results_dir' not in message
  assert os.listdir(open_dir) == []


def test_a_keys_root_inside_the_results_is_refused(tmp_path, monkeypatch,
                                                   capsys):
  """PKB_KEY_DIR inside the results directory put a cloud run's private
  key in its run directory (<results>/<run_uri>/pkb_ssh_key), with what
  is meant to be shared; docs/secrets.md says it is never under results/.
  Refused for a dry run as for a run; Local makes no key."""
  from perfkitbenchmarker import flags as pkb_flags  # pylint: disable=g-import-not-at-top
  from perfkitbenchmarker import pkb  # pylint: disable=g-import-not-at-top
  results = tmp_path / 'results'
  gcp = ['--cloud=GCP', '--project=p', '--zone=us-central1-a']
  umask = os.umask(0o022)  # pkb.Main sets the process's; given back.
  try:
    for keys, cloud, code in [(results, gcp, pkb.EXIT_USAGE),
                              (results / 'keys', gcp, pkb.EXIT_USAGE),
                              (tmp_path / 'keys', gcp, pkb.EXIT_OK),
                              (results, [], pkb.EXIT_OK)]:
      monkeypatch.setenv(run_scope.KEYS_ENV_VAR, str(keys))
      pkb_flags.FLAGS.unparse_flags()  # Each as its own command line.
      assert pkb.Main(['pkb.py', f'--results_dir={results}', '--dry_run'] +
                      cloud) == code, (keys, cloud)
      err = capsys.readouterr().err
      assert ('private SSH key' in err) == (code == pkb.EXIT_USAGE), err
  finally:
    os.umask(umask)
    pkb_flags.FLAGS.unparse_flags()


@e2e.Needs('root (to give a directory and a symlink to user nobody)',
           lambda: IS_ROOT, 'run the tests as root, as CI does')
@pytest.mark.parametrize('planted', ['directory', 'symlink'])
def test_another_users_parent_of_the_runs_root_is_refused(tmp_path, planted):
  """The installed pkb's attack: nobody makes <tmp>/perfkitbenchmarker
  first (a directory of theirs, or a symlink of theirs to a directory of
  root's); a root run must not make its runs root in or through it."""
  sticky = tmp_path / 'tmp'
  sticky.mkdir()
  os.chmod(sticky, 0o1777)
  planted_path = sticky / 'perfkitbenchmarker'
  target = tmp_path / 'roots'
  target.mkdir()
  if planted == 'directory':
    planted_path.mkdir()
    os.chown(planted_path, 65534, 65534)
  else:
    os.symlink(target, planted_path)
    os.lchown(planted_path, 65534, 65534)
  with pytest.raises(run_scope.NotOwnDir, match='uid 65534'):
    run_scope.MakeOwnDir(str(planted_path / 'runs' / 'r1'))
  assert not os.path.lexists(planted_path / 'runs')
  assert os.listdir(target) == []


def test_a_relative_keys_root_is_refused_for_every_stage(
    tmp_path, monkeypatch, capsys):
  """A relative PKB_KEY_DIR was each stage's working directory's: a GCP
  run provisioned from one directory and torn down from another left its
  private SSH key on disk ('directory path <a>/keys/abc123 ... is outside
  the run's directories (..., <b>/keys/abc123); left alone')."""
  from perfkitbenchmarker import flags as pkb_flags  # pylint: disable=g-import-not-at-top
  from perfkitbenchmarker import pkb  # pylint: disable=g-import-not-at-top
  monkeypatch.chdir(tmp_path)
  monkeypatch.setenv(run_scope.KEYS_ENV_VAR, 'keys')
  umask = os.umask(0o022)  # pkb.Main sets the process's; given back.
  try:
    for argv in (['--dry_run', '--cloud=GCP', '--project=p',
                  '--zone=us-central1-a'],
                 ['--run_stage=teardown', '--run_uri=abc123']):
      pkb_flags.FLAGS.unparse_flags()  # Each as its own command line.
      assert pkb.Main(['pkb.py', f'--results_dir={tmp_path}/results'] +
                      argv) == pkb.EXIT_USAGE, argv
      err = capsys.readouterr().err
      assert err == (
          'pkb: PKB_KEY_DIR=keys is a relative path, which each stage of a '
          'run would read from its own working directory (a teardown started '
          'elsewhere leaves the run\'s SSH key behind); give an absolute '
          f'path, e.g. PKB_KEY_DIR={tmp_path}/keys.\n'), err
  finally:
    os.umask(umask)
    pkb_flags.FLAGS.unparse_flags()
  assert not os.path.exists(tmp_path / 'keys')


def test_a_path_is_shown_once_the_current_directory_is_gone(
    tmp_path, monkeypatch):
  # A run started in a directory removed while it ran (a CI job's
  # workspace) ended, its samples written, in 'pkb: internal error
  # FileNotFoundError' at its 'Samples:' line, exit 1: relpath asks for the
  # current directory.
  gone = tmp_path / 'gone'
  gone.mkdir()
  monkeypatch.chdir(gone)
  gone.rmdir()
  assert paths.Shown(f'{tmp_path}/results/x') == f'{tmp_path}/results/x'


def test_a_relative_xdg_state_home_is_ignored(tmp_path, monkeypatch):
  # XDG_STATE_HOME=st put a cloud run's key under <working directory>/st:
  # a later stage started elsewhere (--run_stage=teardown) looked for it
  # in another directory. The XDG spec says a relative value is ignored.
  monkeypatch.delenv('PKB_KEY_DIR', raising=False)
  monkeypatch.setenv('HOME', str(tmp_path / 'home'))
  monkeypatch.chdir(tmp_path)
  monkeypatch.setenv('XDG_STATE_HOME', 'st')
  assert run_scope.KeysRoot() == str(
      tmp_path / 'home' / '.local' / 'state' / 'pkb' / 'keys')
  monkeypatch.setenv('XDG_STATE_HOME', str(tmp_path / 'state'))
  assert run_scope.KeysRoot() == str(tmp_path / 'state' / 'pkb' / 'keys')


@pytest.fixture
def far_from_utc(monkeypatch):
  """The process's local time zone 9 hours ahead of UTC, then back."""
  monkeypatch.setenv('TZ', 'Asia/Tokyo')
  time.tzset()
  yield
  monkeypatch.undo()
  time.tzset()


def test_what_a_run_stamps_with_the_time_is_in_utc(tmp_path, far_from_utc):  # pylint: disable=redefined-outer-name,unused-argument
  # With TZ=Asia/Tokyo at 02:21 UTC, pkb.log's lines read '2026-12-01
  # 11:21:11,603 stdout | Run tz7d: ...' and the run lock 'since 2026-12-01
  # 11:21:08', while the same run's samples and record are in UTC.
  before = time.time()
  lock = run_scope.RunLock('utc1', str(tmp_path)).Acquire()
  try:
    with open(lock.path) as f:
      since = f.readline().strip().split(' since ')[1]  # Its owner line.
  finally:
    lock.Release()
  stamp = lambda t, form: time.strftime(form, time.gmtime(t))
  assert since in {stamp(t, '%Y-%m-%d %H:%M:%S UTC')
                   for t in (before, time.time())}
  record = logging.LogRecord('pkb.console', logging.INFO, 'x', 1, 'Run x',
                             None, None)
  record.stream = 'stdout'
  record.created, record.msecs = 1796091671.6, 600
  assert run_log._RunLogFormatter().format(record) == (  # pylint: disable=protected-access
      '2026-12-01 02:21:11,600 stdout | Run x')
  runner = matrix_runner._Runner([], None, str(tmp_path), lambda: 'abcd', 1,  # pylint: disable=protected-access
                                 None)
  name = os.path.basename(runner.matrix_dir)
  assert name in {stamp(t, '%Y%m%d-%H%M%SZ-abcd')
                  for t in (before, time.time())}


def test_workspace_run_reads_only_a_workspace_directly_under_the_root():
  # other_runs.sh's answers are the machine's: a path of any other shape
  # names no run.
  assert run_scope.WorkspaceRun('/tmp/pkb-r1.AbC_9x', '/tmp/') == 'r1'
  for path in ('/tmp/pkb-r1.AbC/servers-0', '/tmp/x/pkb-r1.AbC',
               '/tmp/pkb-r1.A/../pkb-r2.B', '/tmp/pkb-R1.AbC', '/tmp/pkb-r1',
               '/tmp/pkb-ssh-abc', '/var/tmp/pkb-r1.AbC',
               '/tmp/pkb-r1.AbC\n', '/tmp/pkb-abcdefghijklm.x'):
    assert run_scope.WorkspaceRun(path, '/tmp') is None, path
