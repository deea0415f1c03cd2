"""Directories that are a run's own: made fresh, or reused only when ours.

A run keeps what matters in directories whose names anyone can know in
advance (run URIs are chosen in staged runs and CI): its results directory
(results/runs/<run_uri>), its key directory and, on every VM, its scratch
directory (/tmp/pkb-<run_uri>/<vm name>), where the shards' config files and
the argv_secret library live. A directory another user made there first, or
can write to, would let that user plant what the run then reads or loads
(a library preloaded into the load generators, a pidfile naming a process
to kill). So each directory of the run is

  * made by the run with mode 0700, one component at a time below a trusted
    root, never through a symlink (O_NOFOLLOW on every component), and
    checked again once made;
  * reused (a resumed stage: --run_stage=run --run_uri=X) only when it is a
    real directory owned by the running user that neither its group nor
    others can write;
  * otherwise refused in one line (`NotOwnDir`), and nothing in it touched.

The root a run's directories hang from (/tmp, results/runs, the keys root)
must be the running user's or root's, and writable by all only with the
sticky bit (as /tmp is), so nobody can rename our directory away and put
theirs in its place.

A directory whose name need not be known in advance (the SSH control
sockets' directory) is made by `MakeTempDir`: an unguessable name
(mkdtemp) under a root that passes the same check, so the temporary
directory (TMPDIR) counts as a run root too. This is the one way a run
makes a private workspace on this machine.

A directory of the run is removed (`RemoveOwnDir`, `RemoteBusyScript`
before `rm` on a VM) only when it is the run's own and no process works in
it (its cwd is there): a shard that could not be stopped keeps its
directory, config and pidfile, so a later teardown can still find it,
rather than running on in a deleted directory nothing can recognise.

Extension seam: `MakeOwnDir` / `CheckOwnDir` / `MakeTempDir` /
`RemoveOwnDir` on this machine; `RemoteMakeScript` and `RemoteBusyScript`
are the same rules as shell text for a VM reached by SSH.
"""

import os
import shlex
import shutil
import stat
import tempfile
from typing import List, Optional, Tuple

from perfkitbenchmarker import errors

MODE = 0o700
_OTHERS_WRITE = stat.S_IWGRP | stat.S_IWOTH


class NotOwnDir(errors.UsageError):
  """A directory of the run exists and is not the running user's own."""


class DirInUse(errors.ResourceError):
  """A directory of the run is still some process's working directory."""


def Problem(st: os.stat_result, uid: Optional[int] = None) -> Optional[str]:
  """Why a directory with this (l)stat is not the run's own, or None."""
  uid = os.geteuid() if uid is None else uid
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
               'directories in (SSH control sockets): set TMPDIR to a '
               'directory of your own, or to one with the sticky bit such as '
               '/tmp.')


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


def CheckOwnDirIfExists(path: str) -> None:
  """CheckOwnDir for a path that may not exist yet (then nothing to check)."""
  if os.path.lexists(path):
    CheckOwnDir(path)


def _RootProblem(st: os.stat_result, trusted=()) -> Optional[str]:
  """Why a directory with this stat cannot hold a run's directories."""
  if st.st_uid not in (os.geteuid(), 0, *trusted):
    return f'it is owned by uid {st.st_uid}'
  if st.st_mode & stat.S_IWOTH and not st.st_mode & stat.S_ISVTX:
    return (f'anyone can write to it without the sticky bit '
            f'(mode {stat.S_IMODE(st.st_mode):04o})')
  return None


def CheckRoot(root: str, advice: Optional[str] = None) -> None:
  """Raises NotOwnDir unless `root` can hold a run's directories safely
  (`advice`: what the refusal tells the user to do)."""
  try:
    st = os.stat(root)
  except OSError as e:
    raise _Refuse(root, e.strerror or str(e), advice or _OWN_ADVICE) from None
  if not stat.S_ISDIR(st.st_mode):
    raise _Refuse(root, 'it is not a directory', advice or _OWN_ADVICE)
  reason = _RootProblem(st)
  if reason:
    raise _Refuse(root, reason, advice or _OWN_ADVICE)
  CheckAncestors(root, advice or _ROOT_ADVICE)


def CheckAncestors(path: str, advice: str = _ROOT_ADVICE) -> None:
  """Raises NotOwnDir when a directory above `path` is another user's.

  Whoever owns a directory (or, without the sticky bit, anyone who can
  write to it) can rename what is in it, so a root made inside another
  user's directory (an installed pkb's <tmp>/perfkitbenchmarker made by
  someone else first), or reached through their symlink, is theirs to swap.
  Each existing component of path's absolute name is checked unresolved
  (lstat: a symlink must be the user's or root's) and resolved. The
  directories holding pkb's own code, and those of the code's owner, are
  trusted as the code is (a checkout of a CI user's run as root: that user
  could change the code itself).
  """
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
    reason = _RootProblem(st, trusted) if stat.S_ISDIR(st.st_mode) else None
    if reason:
      raise _RefuseParent(current, reason, advice)


def _RefuseParent(path: str, reason: str,
                  advice: str = _ROOT_ADVICE) -> NotOwnDir:
  return NotOwnDir(
      f'{path} cannot hold this run\'s directories ({reason}): its owner '
      f'could swap them; left alone. {advice}')


def TempRoot() -> str:
  """Where MakeTempDir makes directories: TMPDIR, else the system's."""
  return tempfile.gettempdir()


def CheckTempRoot() -> None:
  """Raises NotOwnDir unless MakeTempDir can make a private directory
  (for a refusal before anything of the run starts)."""
  CheckRoot(TempRoot(), TEMP_ADVICE)


def MakeTempDir(prefix: str) -> str:
  """A fresh directory of the run's own with an unguessable name.

  mkdtemp (mode 0700) in TempRoot(), which must pass CheckRoot: in a
  directory anyone can write to without the sticky bit, another user could
  rename ours away and put theirs (with a socket listening in it) under the
  same name. Checked again once made (a default ACL, a umask).
  """
  CheckTempRoot()
  root = TempRoot()
  try:
    path = tempfile.mkdtemp(prefix=prefix, dir=root)
  except OSError as e:
    raise _RefuseParent(root, e.strerror or str(e), TEMP_ADVICE) from None
  CheckOwnDir(path)
  return path


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


def RemoteMakeScript(root: str, path: str, make: bool = True) -> str:
  """Shell making `path` (below `root`, normal paths) the run's own on a VM.

  The same rule as MakeOwnDir: each component made 0700 or, when it exists,
  a real directory of the remote user that group and others cannot write;
  else one line on stderr and exit 3. With make=False it only checks the
  components that exist (before removing them).
  """
  root = root.rstrip('/')
  rel = path[len(root) + 1:]
  if not path.startswith(root + '/') or not rel or any(
      part in ('', '.', '..') for part in rel.split('/')):
    raise ValueError(f'{path} is not below {root}')
  lines, current = [], root
  for part in rel.split('/'):
    current = f'{current}/{part}'
    p = shlex.quote(current)
    check = (f'if [ -L {p} ] || [ ! -d {p} ] || [ ! -O {p} ] || '
             f'[ $(( 8#$(stat -c %a -- {p}) & 8#022 )) -ne 0 ]; then '
             f'echo {p}"{REMOTE_REFUSAL}" >&2; exit {REMOTE_REFUSED}; fi')
    lines.append(f'mkdir -m 700 -- {p} 2>/dev/null; {check}' if make else
                 f'if [ -e {p} ] || [ -L {p} ]; then {check}; fi')
  return '\n'.join(lines)


REMOTE_REFUSED = 3  # RemoteMakeScript's exit status when it refuses.
REMOTE_REFUSAL = (
    ' is not this run\'s own directory (a symlink, not ours, or writable by '
    'others); left alone. Remove it (or chmod go-w it) if it is yours, or '
    'use another --run_uri.')


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
      with open(f'/proc/{entry}/comm') as f:
        name = f.read().strip()
    except OSError:
      continue  # Gone, or another user's.
    if cwd == real or cwd.startswith(real.rstrip(os.sep) + os.sep):
      found.append((int(entry), name))
  return found


def _InUse(path: str, pid: int, name: str) -> DirInUse:
  return DirInUse(
      f'{path} is still the working directory of PID {pid} ({name}); left in '
      'place so it can still be found: stop that process, then tear down '
      'again.')


def RemoveOwnDir(path: str) -> None:
  """Removes a directory of the run (NotOwnDir if it is not the run's own,
  DirInUse while a process works in it)."""
  CheckOwnDir(path)
  busy = WorkingIn(path)
  if busy:
    raise _InUse(path, *busy[0])
  shutil.rmtree(path, ignore_errors=True)


def RemoteBusyScript(path: str) -> str:
  """Shell that exits 3 with RemoveOwnDir's line on stderr while a process
  on the VM works in `path` (its cwd there or below), for the VM's removal
  of a run's directory."""
  p = shlex.quote(path.rstrip('/'))
  message = _InUse('$d', 0, '$n').args[0].replace('PID 0', 'PID ${p#/proc/}')
  # Remote commands start in the scratch directory: this shell and the
  # `timeout` above it (remote_shell.CommandScript) are not what is meant.
  return (f'd={p}; cd /; for p in /proc/[0-9]*; do '
          'case ${p#/proc/} in $$|$PPID) continue;; esac; '
          'c=$(readlink "$p/cwd" 2>/dev/null) || continue; '
          'case "$c" in "$d"|"$d"/*) n=$(cat "$p/comm" 2>/dev/null); '
          f'echo "{message}" >&2; exit 3;; esac; done')
