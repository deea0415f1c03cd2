"""What a run owns on this machine and its VMs: directories, keys, its lock.

Workspaces. On each machine a run works in one workspace whose name nobody
can know in advance: `MakeTempDir` (mkdtemp) here, `RemoteWorkspaceScript`
(mktemp -d, scripts/workspace.sh) on a VM, /tmp/pkb-<run_uri>.XXXXXXXX (the
prefix is for people), mode 0700, in a root that passes `CheckRoot`'s rule
(on a VM, owned_paths.sh's: `RemoteRootFault`); each VM's scratch
directory (the shards' configs, the argv_secret library, probe files) is
<workspace>/<vm name>. Nobody can plant a directory at such a name first,
so it needs no check before use.
Its path goes into the run record before anything is put in it; cleanup,
teardown and the samplers (to which processes working in the workspace are
the run's own) take it from the VM or the record. A path read back from a
record (input that may be hostile) is used only with a workspace's shape
(`ScratchProblem`) and as the user's own (`CheckOwnDir`; on a VM,
scripts/own_dir.sh).

Fixed names. What must be found by name (results/runs/<run_uri>, the run's
key directory `RunKeyDir`, the lock root) is made by `MakeOwnDir`: 0700,
one component at a time below a root checked by `CheckRoot` (the user's or
root's, writable by other users (its mode or its ACL, owned_paths.Writable)
only with the sticky bit, so nobody can rename ours away and put theirs in
its place), never through a symlink; reused only as a real directory of
the user that group and others cannot write; else refused in one line
(`NotOwnDir`), nothing in it touched.

A directory of the run is removed (`RemoveOwnDir`; on a VM
scripts/clean_scratch.sh) only while no process works in it: a shard
that could not be stopped keeps its config and pidfile, so a later
teardown finds it.
"""

import contextlib
import fcntl
import itertools
import json
import os
import posixpath
import re
import shlex
import shutil
import socket
import stat
import tempfile
import time
from typing import Callable, List, NamedTuple, Optional, Tuple

from perfkitbenchmarker import errors
from perfkitbenchmarker import owned_paths
from perfkitbenchmarker import run_processes
from perfkitbenchmarker import shell_scripts
from perfkitbenchmarker import terminal_text
from perfkitbenchmarker import trusted_programs
from perfkitbenchmarker import waits

MODE = 0o700
_OTHERS_WRITE = stat.S_IWGRP | stat.S_IWOTH


class NotOwnDir(errors.UsageError):
  """A directory of the run exists and is not the running user's own."""


class DirInUse(errors.ResourceError):
  """A directory of the run is still some process's working directory."""


def Problem(st: os.stat_result) -> Optional[str]:
  """Why a directory with this (l)stat is not the run's own, or None."""
  uid = os.geteuid()
  if stat.S_ISLNK(st.st_mode):
    return 'it is a symlink'
  if not stat.S_ISDIR(st.st_mode):
    return 'it is not a directory'
  if st.st_uid != uid:
    return f'it is owned by uid {st.st_uid}, not {uid}'
  if st.st_mode & _OTHERS_WRITE:
    return (f'others can write to it (mode '
            f'{stat.S_IMODE(st.st_mode):04o})')
  return None


_OWN_ADVICE = ('Remove it (or chmod go-w it) if it is yours, or use another '
               '--run_uri.')
_ROOT_ADVICE = ('Remove it if it is yours, or keep runs elsewhere '
                '(--results_dir).')
TEMP_ADVICE = ('It is the temporary directory the run makes its private '
               'directories in (SSH control sockets, the --memtier_path '
               'check): set TMPDIR to a directory of your own, or to one '
               'with the sticky bit such as /tmp.')


def _Refuse(path: str, reason: str, advice: str = _OWN_ADVICE) -> NotOwnDir:
  return NotOwnDir(
      f'{path} is not this run\'s own directory ({reason}); left alone. '
      f'{advice}')


def CheckOwnDir(path: str) -> None:
  """Raises NotOwnDir unless path is a directory of the run's own (lstat)."""
  try:
    st = os.lstat(path)
  except OSError as e:
    raise _Refuse(path, e.strerror or str(e)) from None
  reason = Problem(st)
  if reason:
    raise _Refuse(path, reason)


def IsOwnDir(path: str) -> bool:
  """Whether path is a directory of the run's own (CheckOwnDir's rule)."""
  try:
    return bool(path) and Problem(os.lstat(path)) is None
  except OSError:
    return False


def _RootProblem(path: str, st: os.stat_result, trusted=()) -> Optional[str]:
  """Why the directory `path` (stat `st`) cannot hold a run's directories:
  another user owns it, or may write it (owned_paths.Writable: its mode's
  group or other bits, or its POSIX ACL) and it is not sticky, so they
  could rename a run's directory away and put theirs in its place. A
  sticky one (/tmp, 1777) passes: there only an entry's owner may."""
  if st.st_uid not in (os.geteuid(), 0, *trusted):
    return f'it is owned by uid {st.st_uid}'
  if st.st_mode & stat.S_ISVTX:
    return None
  writable = owned_paths.Writable(path, st)
  return f'it is {writable}, without the sticky bit' if writable else None


def CheckRoot(root: str, advice: Optional[str] = None) -> None:
  """Raises NotOwnDir unless `root` can hold a run's directories safely
  (`advice`: what the refusal tells the user to do)."""
  try:
    st = os.stat(root)
  except OSError as e:
    raise _Refuse(root, e.strerror or str(e), advice or _OWN_ADVICE) from None
  reason = (_RootProblem(root, st) if stat.S_ISDIR(st.st_mode) else
            'it is not a directory')
  if reason:
    raise _Refuse(root, reason, advice or _OWN_ADVICE)
  CheckAncestors(root, advice or _ROOT_ADVICE)


def CheckAncestors(path: str, advice: str = _ROOT_ADVICE) -> None:
  """Raises NotOwnDir when a directory above `path` is another user's:
  its owner could rename what is in it (an installed pkb's
  <tmp>/perfkitbenchmarker made by someone else first). Each existing
  component is checked unresolved (a symlink must be the user's or root's)
  and resolved; pkb's own code's directories and owner are trusted as the
  code is (a CI user's checkout run as root)."""
  code = os.path.realpath(os.path.dirname(os.path.abspath(__file__)))
  trusted = (os.stat(code).st_uid,)
  current = os.sep
  for part in os.path.abspath(path).split(os.sep):
    current = os.path.join(current, part)
    try:
      lst = os.lstat(current)
    except OSError:
      return  # Not made yet: what follows is made by the run itself.
    real = os.path.realpath(current)
    if code == real or code.startswith(real.rstrip(os.sep) + os.sep):
      continue
    if stat.S_ISLNK(lst.st_mode) and lst.st_uid not in (os.geteuid(), 0,
                                                          *trusted):
      raise _RefuseParent(current, f'it is a symlink of uid {lst.st_uid}',
                          advice)
    try:
      st = os.stat(current)
    except OSError:
      return  # A dangling symlink of ours: making the root fails on it.
    reason = (_RootProblem(current, st, trusted) if stat.S_ISDIR(st.st_mode)
              else None)
    if reason:
      raise _RefuseParent(current, reason, advice)


def _RefuseParent(path: str, reason: str,
                  advice: str = _ROOT_ADVICE) -> NotOwnDir:
  return NotOwnDir(
      f'{path} cannot hold this run\'s directories ({reason}): another '
      f'user could swap them; left alone. {advice}')


def CheckTempRoot() -> None:
  """Raises NotOwnDir unless MakeTempDir can make a private directory in
  TMPDIR (a refusal before anything of the run starts)."""
  CheckRoot(tempfile.gettempdir(), TEMP_ADVICE)


def MakeTempDir(prefix: str, root: Optional[str] = None,
                advice: Optional[str] = None) -> str:
  """A fresh directory (mkdtemp: 0700, an unguessable name) in `root`
  (default TMPDIR), made if missing, which must pass CheckRoot; checked
  again once made (a default ACL, a umask). `advice`: what a refusal of
  `root` tells the user to do."""
  advice = advice or (None if root else TEMP_ADVICE)
  root = root or tempfile.gettempdir()
  with contextlib.suppress(OSError):  # CheckRoot says why.
    os.makedirs(root, exist_ok=True)
  CheckRoot(root, advice)
  try:
    path = tempfile.mkdtemp(prefix=prefix, dir=root)
  except OSError as e:
    # CheckRoot passed: not whose it is but the disk (full, no inodes
    # left, read-only), which 'its owner could swap them' misnamed.
    raise errors.Error(
        f'could not make a directory in {root}: {e.strerror or e}; free '
        f'space there. {advice or _ROOT_ADVICE}') from None
  CheckOwnDir(path)
  return path


def WorkspacePrefix(run_uri: str) -> str:  # No run_uri has a '.'.
  return f'pkb-{run_uri}.'


# What a run_uri is (pkb's --run_uri), and the random end mkdtemp gives
# a workspace's name (WorkspacePrefix + it).
RUN_URI_PATTERN = r'[a-z0-9]{1,12}'
_WORKSPACE_RANDOM = r'[A-Za-z0-9_]+'


def WorkspaceRun(path: str, root: str) -> Optional[str]:
  """The run_uri of a workspace of that shape directly under `root`
  (<root>/pkb-<run_uri>.<random>), else None."""
  found = re.fullmatch(re.escape(root.rstrip('/') + '/') +
                       WorkspacePrefix(f'({RUN_URI_PATTERN})').replace(
                           '.', r'\.') + _WORKSPACE_RANDOM, path)
  return found.group(1) if found else None


def ScratchProblem(path, root: str, run_uri: str) -> Optional[str]:
  """Why `path` is not a VM's scratch directory in a workspace of run
  `run_uri` under `root` (<root>/pkb-<run_uri>.<random>/<vm>), or None.
  Only its shape: whose it is is checked where it is (CheckOwnDir)."""
  if not isinstance(path, str) or '\0' in path or '\n' in path:
    return f'{path!r} is not a path'
  workspace = posixpath.dirname(path)
  if (posixpath.normpath(path) != path or
      posixpath.dirname(workspace) != root.rstrip('/') or
      not re.fullmatch(re.escape(WorkspacePrefix(run_uri)) + _WORKSPACE_RANDOM,
                       posixpath.basename(workspace))):
    return (f'{path} is not a scratch directory of run {run_uri} '
            f'({root.rstrip("/")}/{WorkspacePrefix(run_uri)}*/<vm>)')
  return None


def MakeOwnDir(path: str, root: Optional[str] = None,
               advice: Optional[str] = None) -> str:
  """Makes path (and its parents below `root`) the run's own; returns it.

  `root` (default: path's parent) is created if missing and must pass
  CheckRoot. Each component below it is made with mode 0700 or, when it
  exists, must already be the run's own; none is reached through a symlink.
  `advice`: what a refusal tells the user to do (default: for a run's own
  directory).
  """
  path = os.path.abspath(path)
  root = os.path.abspath(root or os.path.dirname(path))
  parts = os.path.relpath(path, root).split(os.sep)
  if not parts or parts[0] in ('.', '..') or '..' in parts:
    raise ValueError(f'{path} is not below {root}')
  CheckAncestors(root, advice or _ROOT_ADVICE)  # Before anything is made.
  try:
    os.makedirs(root, exist_ok=True)
  except OSError as e:
    raise _Refuse(root, e.strerror or str(e), advice or _OWN_ADVICE) from None
  CheckRoot(root, advice)
  fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
  current = root
  try:
    for part in parts:
      current = os.path.join(current, part)
      try:
        os.mkdir(part, MODE, dir_fd=fd)
      except FileExistsError:
        pass
      except OSError as e:
        raise _Refuse(current, e.strerror or str(e),
                      advice or _OWN_ADVICE) from None
      try:
        child = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW |
                        os.O_CLOEXEC, dir_fd=fd)
      except OSError:
        # A symlink (ELOOP), a file (ENOTDIR) or not ours to open (EACCES).
        reason = Problem(os.lstat(part, dir_fd=fd)) if os.path.lexists(
            current) else 'it vanished'
        raise _Refuse(current, reason or 'it cannot be opened',
                      advice or _OWN_ADVICE) from None
      os.close(fd)
      fd = child
      # Checked once made too: a umask, a default ACL or a race could have
      # left it other than asked.
      reason = Problem(os.fstat(fd))
      if reason:
        raise _Refuse(current, reason, advice or _OWN_ADVICE)
  finally:
    os.close(fd)
  return path


# scripts/workspace.sh's refusal of its root: its exit, and the marker
# before the fault ("REASON WORDS", owned_paths.FaultOf) on stderr.
ROOT_REFUSED = 4
_ROOT_MARKER = '\x1epkb-root\x1e'


def RemoteWorkspaceScript(run_uri: str, name: str, workspace: str = '',
                          root: str = '/tmp') -> str:
  """Shell that makes and prints VM `name`'s scratch directory: in
  `workspace` while that is a 0700 directory of the remote user, else in
  a new one made by mktemp -d under `root`, once `root` passed CheckRoot's
  rule there (scripts/workspace.sh; `RemoteRootFault` reads a refusal)."""
  return shlex.join(shell_scripts.Inline(
      'workspace.sh', root, WorkspacePrefix(run_uri), name, workspace))


def RemoteRootFault(rc: int, stderr: str) -> Optional[owned_paths.Fault]:
  """Why RemoteWorkspaceScript refused its root (exit ROOT_REFUSED), or
  None when it did not (or said no fault of a form known here)."""
  if rc != ROOT_REFUSED:
    return None
  for line in terminal_text.Lines(stderr):
    if line.startswith(_ROOT_MARKER):
      return owned_paths.FaultOf(line[len(_ROOT_MARKER):])
  return None


def RemoteRootRefusal(where: str, root: str,
                      fault: owned_paths.Fault) -> NotOwnDir:
  """The one line refusing `root` on the VM `where` (its name and address),
  where `RemoteRootFault` found `fault`."""
  return NotOwnDir(
      f'{where}: {root} there cannot hold the run\'s workspace ({fault}): '
      'another user could rename it away and put theirs in its place; '
      'nothing of this run was made there. Make it and the directories '
      'above it root\'s or the login user\'s, and sticky or writable by no '
      f'one else: {trusted_programs.Fix(fault.reason)}.')


def WorkingIn(path: str) -> List[Tuple[int, str]]:
  """(pid, command name) of each process whose working directory is `path`
  or below it, as far as this user can see (/proc/<pid>/cwd, read as is:
  a process in a deleted directory of the same name is not in this one)."""
  real = os.path.realpath(path)
  found = []
  for entry in os.listdir('/proc'):
    if not entry.isdigit():
      continue
    try:
      cwd = os.readlink(f'/proc/{entry}/cwd')
      # Any bytes but NUL (prctl, its executable's name).
      with open(f'/proc/{entry}/comm', errors='backslashreplace') as f:
        name = f.read().strip()
    except OSError:
      continue  # Gone, or another user's.
    if run_processes.WorksUnder(cwd, real):
      found.append((int(entry), name))
  return found


def InUse(path: str, pid: int, name: str) -> DirInUse:
  # `name` is the process's (any bytes: prctl, its executable's name).
  return DirInUse(
      f'{path} is still the working directory of PID {pid} '
      f'({terminal_text.Printable(name)}); left in '
      'place so it can still be found: stop that process, then tear down '
      'again.')


# A shell of a command of ours can still be exiting in a directory when
# the call that ran it has returned (over SSH: its ssh returned first;
# here: a subshell the command forked, which nothing waits for). On a
# loaded machine that takes a moment, so a directory is asked again for
# this long before it is called in use (ssh_vm's scratch cleaning too).
EXITING_S = 1.5
EXITING_POLL_S = 0.5


def RemoveOwnDir(path: str, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep) -> None:
  """Removes a directory of the run (NotOwnDir if it is not the run's own,
  DirInUse while a process works in it, EXITING_S after the first look)."""
  CheckOwnDir(path)
  _, busy = waits.Poll(lambda: WorkingIn(path), lambda found: not found,
                       timeout_s=EXITING_S, interval_s=EXITING_POLL_S,
                       clock=clock, sleep=sleep, inclusive=True)
  if busy:
    raise InUse(path, *busy[0])
  shutil.rmtree(path, ignore_errors=True)


# The run's private SSH key (cloud runs) lives outside results/ (what is
# meant to be shared): $PKB_KEY_DIR/<run_uri>/ (tests set it), else
# $XDG_STATE_HOME/pkb/keys/<run_uri>/, else ~/.local/state/pkb/keys/<run_uri>/.
# record_checks.LocalRunRoots counts it among the run's roots, so teardown
# (with the same environment) may delete the key and then the directory.
KEYS_ENV_VAR = 'PKB_KEY_DIR'


def KeysRoot() -> str:
  """The directory holding every run's key directory."""
  root = os.environ.get(KEYS_ENV_VAR)
  if not root:
    state = os.environ.get('XDG_STATE_HOME', '')
    if not os.path.isabs(state):
      # Unset, empty or relative (which the XDG spec says to ignore: it
      # would name another directory from each stage's working directory,
      # and a later stage would not find the run's key).
      state = os.path.join(os.path.expanduser('~'), '.local', 'state')
    root = os.path.join(state, 'pkb', 'keys')
  return os.path.abspath(root)


def RunKeyDir(run_uri: str) -> str:
  """The run's key directory (not created)."""
  return os.path.join(KeysRoot(), run_uri)


KEYS_ADVICE = ('It holds the runs\' SSH key directories (PKB_KEY_DIR, '
               'default ~/.local/state/pkb/keys): set PKB_KEY_DIR to a '
               'directory of your own.')


def MakePrivateDir(directory: str, advice: Optional[str] = None) -> str:
  """directory, made the run's own (MakeOwnDir) and 0700; `advice`: what
  a refusal tells the user to do."""
  MakeOwnDir(directory, advice=advice)
  os.chmod(directory, MODE)
  return directory


def RemoveKeyDirIfEmpty(key_path: str) -> None:
  """Removes the run's key directory holding key_path once it is empty
  (only one directly under KeysRoot(): an older run's key sits in its
  results directory, left alone)."""
  directory = os.path.dirname(os.path.abspath(key_path))
  if os.path.dirname(directory) == KeysRoot():
    with contextlib.suppress(OSError):  # Not empty or already gone.
      os.rmdir(directory)


# One pkb process per run_uri on this machine. The run_uri names the run's
# record, cloud resources and BigQuery rows whatever --results_dir says, so
# two processes with the same --run_uri never run at once (one would tear
# down what the other's record holds): the first takes `flock` on
# <LockRoot()>/<run_uri>.lock until it exits, a second is refused in one
# line naming the owner written in the file. The kernel drops a flock when
# its holder dies (even by SIGKILL), so a stale file never blocks a later
# stage. A holder removes the file as it releases it (one per run was left
# in /tmp for good), so a process that opened the name just before may lock
# a file no longer named: a lock counts only while its file still has the
# name (checked once taken), else the name is opened again. The file names
# its holder (pid, host, start) and the run's directory, so that another
# run can say where this one's record is (HeldRunLocks).
# LockRoot is the user's own (MakeOwnDir) in /tmp.
LOCK_PARENT = '/tmp'
# Most bytes of a lock file read back: its owner line and the run's
# directory (a path, at most PATH_MAX).
_LOCK_TEXT_BYTES = 8192
_HELD = {}  # Lock path -> RunLock held by this process.
# How many times a lock removed as it was taken is looked for again (each
# time another process took and released it in that moment). On a loaded
# machine a taker can lose that moment several times running (a new holder
# descheduled before it names itself makes the taker wait out its release):
# 5 was too few under a busy loop on each core; each try is at most 0.2 s.
_TAKE_ATTEMPTS = 20
# A run that takes its lock removes up to this many lock files nobody holds
# (left by runs killed by SIGKILL, which release nothing, and by versions
# that kept them), in the same way a holder removes its own.
_PRUNE_AT_MOST = 200
# Other runs hold a lock for a moment to look at it (HeldRunLocks' shared
# try, _PruneUnheld's exclusive one), a run's pkb for the run's life: a lock
# is taken for held only while it stays held this many tries this far apart.
# Its file says nothing about which: a holder names itself a moment after it
# takes it, and a file left by a run killed by SIGKILL still names that run.
_MOMENT_TRIES, _MOMENT_WAIT_S = 10, 0.02


def LockRoot() -> str:
  """The running user's directory of run locks."""
  return os.path.join(LOCK_PARENT, f'pkb-runs-{os.geteuid()}')


class HeldLock(NamedTuple):
  """A run whose pkb on this machine holds its lock (HeldRunLocks)."""
  run_uri: str
  owner: str  # 'pid N on HOST since TIME', as its pkb wrote it
  run_dir: Optional[str]  # its record's directory; None if not named


def _LockText(fd: int) -> Tuple[str, Optional[str]]:
  """The owner line and the run directory a lock file names (RunLock);
  no directory from a file without one (a pkb of before) or one that
  names no absolute path."""
  text = os.pread(fd, _LOCK_TEXT_BYTES, 0).decode(errors='replace')
  owner, _, rest = text.partition('\n')
  try:
    run_dir = json.loads(rest).get('run_dir')
  except (ValueError, AttributeError):
    run_dir = None
  if not (isinstance(run_dir, str) and os.path.isabs(run_dir)):
    run_dir = None
  return owner.strip()[:200], run_dir


class RunLock:
  """Holds the run's lock for as long as the object (and process) lives.
  `run_dir`, the directory of the run's record, is written in the file for
  other runs to read (HeldRunLocks)."""

  def __init__(self, run_uri: str, root: Optional[str] = None,
               run_dir: Optional[str] = None):
    self.root = root or LockRoot()
    self.path = os.path.join(self.root, f'{run_uri}.lock')
    self.run_uri = run_uri
    self.run_dir = os.path.abspath(run_dir) if run_dir else None
    self._fd: Optional[int] = None

  def Acquire(self) -> 'RunLock':
    if self.path in _HELD:  # This process has it already (in-process runs).
      return _HELD[self.path]
    for _ in range(_TAKE_ATTEMPTS):
      fd = self._Take()
      if _StillNamed(fd, self.path):
        break
      os.close(fd)  # Released and removed by its holder as we opened it.
    else:
      raise errors.UsageError(f'The run lock {self.path} was removed each '
                              'time it was taken; try again.')
    started = time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())
    os.ftruncate(fd, 0)
    os.pwrite(fd, f'pid {os.getpid()} on {socket.gethostname()} since '
              f'{started}\n{json.dumps({"run_dir": self.run_dir})}\n'
              .encode(), 0)
    _PruneUnheld(self.root, keep=self.path)
    self._fd = fd
    _HELD[self.path] = self
    return self

  def _Take(self) -> int:
    """The lock file's descriptor, locked; refused in one line while
    another process holds it."""
    fd = self._Open()
    owner = ''
    try:
      # Held by another run looking at it for a moment, or by this run's
      # pkb: asked again (_MOMENT_TRIES). Refused at once when the file
      # named an owner, a SIGKILLed run's later stage was refused for a
      # look of another run's (157 of 3000 takes beside two looking).
      for attempt in range(_MOMENT_TRIES):
        try:
          fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
          return fd
        except BlockingIOError:
          owner, _ = _LockText(fd)
          if attempt + 1 < _MOMENT_TRIES:
            time.sleep(_MOMENT_WAIT_S)
            if not _StillNamed(fd, self.path):
              # Its holder released it, and removed it first: the file
              # to take now is the name's.
              fresh = self._Open()
              os.close(fd)
              fd = fresh
    except BaseException:
      os.close(fd)
      raise
    os.close(fd)
    raise errors.UsageError(
        f'Run {self.run_uri} is in use by {owner or "another pkb"}; wait '
        'for it to finish or use another --run_uri.')

  def _Open(self) -> int:
    MakeOwnDir(self.root, os.path.dirname(self.root), advice=(
        'It holds your runs\' locks: remove it if it is yours; if another '
        'user made it, root must remove it.'))
    try:
      # O_CLOEXEC (Python's default) keeps the lock out of child processes:
      # a daemonized redis-server must not hold the run's lock after pkb.
      return os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW,
                     0o600)
    except OSError as e:
      raise errors.UsageError(
          f'Cannot create the run lock {self.path}: {e.strerror}.') from None

  def Release(self) -> None:
    """Removes the lock file, then drops the lock (see the module doc)."""
    if self._fd is not None:
      with contextlib.suppress(OSError):
        os.ftruncate(self._fd, 0)  # No owner named once nobody holds it.
        if _StillNamed(self._fd, self.path):
          os.unlink(self.path)
      os.close(self._fd)  # Closing the last descriptor drops the flock.
      self._fd = None
      _HELD.pop(self.path, None)


def _StillNamed(fd: int, path: str) -> bool:
  """Whether `path` still names the file open as `fd`."""
  try:
    named = os.stat(path, follow_symlinks=False)
  except OSError:
    return False
  mine = os.fstat(fd)
  return (named.st_dev, named.st_ino) == (mine.st_dev, mine.st_ino)


def _LockNames(root: str) -> List[str]:
  """The names of the lock files in `root`, at most _PRUNE_AT_MOST of its
  first entries (each costs an open and a lock try); none when it cannot
  be read."""
  try:
    with os.scandir(root) as entries:
      names = [e.name for e in itertools.islice(entries, _PRUNE_AT_MOST + 1)
               if e.name.endswith('.lock')]
  except OSError:
    return []
  return names[:_PRUNE_AT_MOST]


def _PruneUnheld(root: str, keep: str) -> None:
  """Removes lock files in `root` that no process holds, but `keep`: each
  taken first, then removed while held and still named, as Release does."""
  for name in _LockNames(root):
    path = os.path.join(root, name)
    if path == keep:
      continue
    try:
      fd = os.open(path, os.O_RDWR | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
      continue  # Gone, or not a file to open.
    try:
      fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
      found = os.fstat(fd)
      if (stat.S_ISREG(found.st_mode) and found.st_uid == os.geteuid() and
          _StillNamed(fd, path)):
        os.unlink(path)
    except OSError:
      pass  # Held by a run (BlockingIOError), or gone.
    finally:
      os.close(fd)


def HeldRunLocks(root: Optional[str] = None) -> List[HeldLock]:
  """Each run whose pkb on this machine holds its lock now (a run from its
  start to its end, whatever stage: one still provisioning too), with the
  owner and run directory its file names, of the lock files _PruneUnheld
  reads (_LockNames); each lock tried shared and let go at once, the file
  never removed. A
  lock held only for a moment (another run's look or prune: _MOMENT_TRIES)
  or whose file lost its name meanwhile (pruned) is no run's: a file left
  by a killed run was taken for a live one while another run pruned it."""
  root = root or LockRoot()
  pending = {}  # run_uri -> (path, descriptor) of a lock held so far.
  try:
    for name in _LockNames(root):
      run_uri = name[:-len('.lock')]
      if re.fullmatch(RUN_URI_PATTERN, run_uri):
        path = os.path.join(root, name)
        try:
          fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError:
          continue  # Gone, or not a file to open.
        pending[run_uri] = (path, fd)
    for attempt in range(_MOMENT_TRIES):
      for run_uri, (_, fd) in list(pending.items()):
        try:
          fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
          continue
        except OSError:
          pass
        del pending[run_uri]
        os.close(fd)  # Drops the shared lock.
      if not pending or attempt + 1 == _MOMENT_TRIES:
        break
      time.sleep(_MOMENT_WAIT_S)
    return [HeldLock(run_uri, *_LockText(fd))
            for run_uri, (path, fd) in pending.items()
            if _StillNamed(fd, path)]
  finally:
    for _, fd in pending.values():
      os.close(fd)


def ReleaseAll() -> None:
  """Every lock this process holds, released."""
  for lock in list(_HELD.values()):
    lock.Release()
