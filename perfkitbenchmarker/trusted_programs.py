"""Programs this machine runs for a run: only ones no other user can change.

pkb often runs as root (Local runs, prepare's installs), and it hands the
programs it starts the run's password. A program another user can write,
or one in a directory another user can write (who could then replace it or
a directory on the way to it), would run that user's code as root with the
password. So, as sudo and sshd check the files they trust, every program
the run executes here (load generators, server binaries, java, any
`--*_path`) must be owned by root or by the user pkb runs as and be
writable by no one else, and so must every directory on its path, as
given and with its symbolic links resolved; each symbolic link met on the
way (one pointing at another, a directory that is one) must be owned by
root or that user, and the directories above it pass the same rule. A
directory others may write but whose sticky bit is set (/tmp) passes:
there only an entry's owner can replace it, and the entry below is checked
in its turn. Group write
permission is accepted for root's own group only.

`KeepSafePath` leaves out of pkb's PATH (and LD_LIBRARY_PATH) the
directories others could add a program (or library) to, since the run's
commands name most tools bare.

`Check` refuses in one line (errors.UsageError, exit 2) before the program
is run; `Which` finds a program on PATH and checks it. On another machine
(a static VM) `CheckOn` runs the same rule there, in bash
(scripts/trusted.sh), as the user the run logs in as, and `OnPath` finds
and checks a program on its PATH (every VM's HasCommand but Local's, which
is `Which`).
"""

import os
import shutil
import stat
from typing import Iterator, List, Optional, Tuple

from perfkitbenchmarker import errors
from perfkitbenchmarker import shell_scripts
from perfkitbenchmarker import vm_util


def _Prefixes(path: str) -> Iterator[str]:
  """'/a/b/c' -> '/', '/a', '/a/b', '/a/b/c'."""
  parts = [p for p in path.split(os.sep) if p]
  yield os.sep
  for i in range(1, len(parts) + 1):
    yield os.sep + os.sep.join(parts[:i])


def UserName(uid: int) -> str:
  """The name of user `uid`, for a message ('uid N' without one)."""
  try:
    import pwd  # pylint: disable=g-import-not-at-top
    return pwd.getpwuid(uid).pw_name
  except (ImportError, KeyError):
    return f'uid {uid}'


def _Unsafe(info: os.stat_result) -> Optional[str]:
  """Why a file or directory with this stat is not safe, or None."""
  if info.st_uid not in (0, os.geteuid()):
    return f'owned by {UserName(info.st_uid)}'
  mode = info.st_mode
  if stat.S_ISDIR(mode) and mode & stat.S_ISVTX:
    return None
  if mode & stat.S_IWOTH or (mode & stat.S_IWGRP and info.st_gid != 0):
    return f'writable by other users (mode {stat.S_IMODE(mode):04o})'
  return None


# The most symbolic links one path's resolution follows (Linux's own bound).
_MAX_LINKS = 40


def _Links(path: str) -> List[str]:
  """The symbolic links resolving `path` (absolute) passes through, in
  order, each named in its directory with that directory's links resolved:
  a link met half way (a link to a link, a directory that is a link) is
  followed from wherever it lives, not only from the path as given or as
  resolved in the end."""
  links = []
  while len(links) < _MAX_LINKS:
    parts = [p for p in path.split(os.sep) if p]
    for i in range(len(parts)):
      prefix = os.sep + os.sep.join(parts[:i + 1])
      if os.path.islink(prefix):
        parent = os.path.realpath(os.path.dirname(prefix))
        links.append(os.path.join(parent, parts[i]))
        try:
          target = os.readlink(prefix)
        except OSError:
          return links
        # An absolute target replaces the parent (os.path.join).
        path = os.path.join(parent, target, *parts[i + 1:])
        break
    else:
      break
  return links


def _Places(given: str) -> Iterator[Tuple[str, bool]]:
  """(path, is a link) of everything whose owner could change what `given`
  runs, in the order they are checked: the directories of the path as
  given; each link met on the way, after the directories above it; the
  directories of the path resolved and the program."""
  for where in _Prefixes(os.path.dirname(given)):
    yield where, False
  for link in _Links(given):
    for where in _Prefixes(os.path.dirname(link)):
      yield where, False
    yield link, True
  for where in _Prefixes(os.path.realpath(given)):
    yield where, False


def Problem(path: str) -> Optional[str]:
  """Why `path` (a program, or a directory of them) is not safe to run as
  root here, or None when it is.

  `path` is absolute or relative to the current directory; a missing or
  unreadable file is a problem too.
  """
  # Each place once, in order.
  for where, is_link in dict.fromkeys(_Places(os.path.abspath(path))):
    try:
      info = os.lstat(where) if is_link else os.stat(where)
    except OSError as e:
      return f'{where} cannot be read ({e.strerror})'
    if is_link:
      # Its owner may point it elsewhere whatever the directory's mode (a
      # link another user made in a sticky /tmp); its own mode means nothing.
      if info.st_uid not in (0, os.geteuid()):
        return f'{where} is a symbolic link owned by {UserName(info.st_uid)}'
      continue
    unsafe = _Unsafe(info)
    if unsafe:
      return f'{where} is {unsafe}'
  return None


NOT_ON_PATH = 3  # trusted.sh's exit when PATH finds no such name.


def _AskOn(vm, program: str) -> Optional[str]:
  """trusted.sh's answer on `vm`: what is wrong with `program` ('' when
  nothing is), or None when PATH finds no such name.

  Raises:
    errors.ProcessError: the check itself did not run (no shipped scripts,
      a refused login), in one line with its exit status and last error;
      it never reads as "not there".
  """
  out, err, rc = vm.RemoteCommandWithReturnCode(
      shell_scripts.Command('trusted.sh', program))
  if rc == NOT_ON_PATH:
    return None
  if rc != 0:
    raise errors.ProcessError(
        f'Checking {program} on {vm.name} failed (trusted.sh exited with '
        f'status {rc}: {vm_util.Tail(err, 1) or "no message"}).')
  return vm_util.Tail(out, 1)


def CheckOn(vm, path: str, what: str) -> str:
  """`Check` on `vm` (any machine with bash, reached as the run reaches
  it): `path` itself when it is safe to run there.

  Raises:
    errors.UsageError: in one line, naming the VM and what is at fault.
    errors.ProcessError: the check did not run (_AskOn).
  """
  _Refuse(f'{what} on {vm.name}', _AskOn(vm, path))
  return path


def OnPath(vm, program: str) -> bool:
  """Whether `vm`'s PATH has `program` (as the run logs in), `CheckOn`'s
  rule applied to what it finds there, in the same round trip.

  Raises:
    errors.UsageError: found where another user could change it.
    errors.ProcessError: the check did not run (_AskOn).
  """
  problem = _AskOn(vm, program)
  _Refuse(f'{program} (found on PATH) on {vm.name}', problem)
  return problem is not None


def _Refuse(what: str, problem: Optional[str]) -> None:
  """errors.UsageError when `problem` says what is wrong with `what`."""
  if problem:
    raise errors.UsageError(
        f'{what}: {problem}; a program pkb runs (as root, with the run\'s '
        'password) must be owned by root or by you and writable by no one '
        'else, and so must every directory above it (as sudo and sshd '
        'require): install it in such a place (e.g. /usr/local/bin) or fix '
        'the owner and mode.')


def Check(path: str, what: str) -> str:
  """`path` itself when it is safe to run (module doc).

  Args:
    path: the program, absolute or relative to the current directory.
    what: how the user named it, for the message (e.g. '--memtier_path=x').

  Raises:
    errors.UsageError: in one line, naming the file or directory at fault.
  """
  _Refuse(what, Problem(path))
  return path


def _PathEntryProblem(entry: str) -> Optional[str]:
  """Why the PATH entry `entry` lets another user choose what runs, or
  None. Unlike a program's directory, a sticky one others can write fails
  here: anyone may add a program of any name to it (bash, base64, taskset:
  the tools the run's commands name, which nothing else checks). A
  relative entry ('' or '.' too) is the directory a command runs in, pkb's
  own when it runs here (a run's scratch directories are its own); a
  missing one can be made by whoever can write the nearest one above it."""
  try:
    where = os.path.abspath(entry or os.curdir)
  except FileNotFoundError:  # A relative entry, in a directory removed.
    return 'the current directory is gone'
  while not os.path.lexists(where):
    where = os.path.dirname(where)
  problem = Problem(where)
  if problem:
    return problem
  info = os.stat(where)
  if info.st_mode & stat.S_IWOTH or (info.st_mode & stat.S_IWGRP and
                                     info.st_gid != 0):
    return (f'{where} is writable by other users (mode '
            f'{stat.S_IMODE(info.st_mode):04o})')
  return None


# Where this process's commands find what they run: programs (PATH) and,
# for each program, its shared libraries (LD_LIBRARY_PATH: a liblzf.so.1
# put in such a directory ran in redis-server and redis-benchmark).
SEARCH_PATHS = ('PATH', 'LD_LIBRARY_PATH')


def KeepSafePath() -> List[str]:
  """Leaves out of this process's PATH and LD_LIBRARY_PATH, and so of
  every command it runs, each directory another user could add programs
  or libraries to (_PathEntryProblem): the run's commands name most tools
  bare (bash, base64, chmod, taskset) and the shell finds them there, as
  root with the run's password. Left out rather than refused: a CI
  runner's PATH can hold such a directory (a tool cache every job may
  write) that pkb needs nothing from. Returns each entry left out, as
  'VARIABLE's entry (why)'; a variable not set (no PATH is the system's
  default path, os.defpath) is left as it is."""
  left_out = []
  for variable in SEARCH_PATHS:
    if variable not in os.environ:
      continue
    kept, dropped = [], []
    for entry in os.environ[variable].split(os.pathsep):
      problem = _PathEntryProblem(entry)
      if problem:
        dropped.append(f'{variable}\'s '
                       f'{entry or "(empty: the current directory)"} '
                       f'({problem})')
      else:
        kept.append(entry)
    if dropped:
      os.environ[variable] = os.pathsep.join(kept)
    left_out += dropped
  return left_out


def Which(program: str, what: str = '') -> Optional[str]:
  """`program` as PATH finds it (None: not there), checked by `Check`."""
  found = shutil.which(program)
  if found is None:
    return None
  return Check(found, what or f'{program} (found on PATH at {found})')
