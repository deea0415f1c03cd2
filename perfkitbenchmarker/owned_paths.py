"""The rule of what no other user can change, for code pkb runs as root.

pkb often runs as root (Local runs, prepare's installs), and it hands the
programs it starts the run's password. A program another user can write,
or one in a directory another user can write (who could then replace it or
a directory on the way to it), would run that user's code as root with the
password. So, as sudo and sshd check the files they trust, a file pkb runs
or reads code from must be owned by root or by the user pkb runs as and be
writable by no one else, and so must every directory on its path, as
given and with its symbolic links resolved; each symbolic link met on the
way (one pointing at another, a directory that is one) must be owned by
root or that user, and the directories above it pass the same rule. A
directory others may write but whose sticky bit is set (/tmp) passes on
the way: there only an entry's owner can replace it, and the entry below
is checked in its turn. Group write permission is accepted for root's own
group only, and a POSIX ACL is read as the permission bits are: one whose
named users or groups (other than root, this user and root's group) may
write, through its mask, makes the path writable by other users (`ls -l`
shows such a path's mode with a '+'; its group bits are the mask).

`Problem` says why a path breaks the rule (a `Fault`: the words, and the
`Reason` code acts on, as trusted_programs.Fix picks its advice by);
`DirectoryProblem` why a search path's directory does (there a sticky one
others can write fails: anyone may add a file of any name to it);
`KeepSafe` leaves such directories out of this process's search paths;
`Writable` is the rule's "no one else can write it" alone (run_scope's
roots, which weigh their owner and sticky bit themselves). Standard
library only: venv_reexec uses it before the project's dependencies can be
imported (trusted_programs, for programs, on this machine and others, uses
it too). On a VM the rule is scripts/owned_paths.sh's (trusted.sh for a
program, ssh_command.sh for the login's PATH, workspace.sh for the root of
the run's workspace), which answers with the same reasons (`FaultOf`
reads its "REASON WORDS").
"""

import enum
import errno
import os
import stat
import struct
from typing import Iterator, List, Optional, Sequence, Tuple


class Reason(enum.Enum):
  """What kind of fault a `Fault` names, so what mends it; each value is
  owned_paths.sh's word for it too (the first word of trusted.sh's
  answer)."""
  OWNER = 'owner'  # Another user owns it: chown.
  LINK = 'link'  # A symbolic link on the way is another user's.
  MODE = 'mode'  # Its mode lets other users write it: chmod.
  # Its POSIX ACL lets other users write it, or may (it could not be
  # read): a mode does not take it away (setfacl -b does).
  ACL = 'acl'
  UNREADABLE = 'unreadable'  # It cannot be read, so cannot be checked.


class Fault(str):
  """A path's fault: the words saying it (a str, which every message
  quotes as it is) and its `reason`, which code reads instead of the
  words."""

  reason: Reason

  def __new__(cls, words: str, reason: Reason) -> 'Fault':
    fault = super().__new__(cls, words)
    fault.reason = reason
    return fault

  def __getnewargs__(self) -> Tuple[str, Reason]:  # copy, pickle
    return str(self), self.reason


def FaultOf(answer: str) -> Optional[Fault]:
  """The Fault a line of owned_paths.sh's says, "REASON WORDS" (trusted.sh's
  answer, workspace.sh's refusal of its root), or None when the line is
  not in that form (no reason known, or no words)."""
  word, _, words = answer.partition(' ')
  try:
    reason = Reason(word)
  except ValueError:
    return None
  return Fault(words, reason) if words.strip() else None


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


def _GroupName(gid: int) -> str:
  """The name of group `gid`, for a message ('gid N' without one)."""
  try:
    import grp  # pylint: disable=g-import-not-at-top
    return grp.getgrgid(gid).gr_name
  except (ImportError, KeyError):
    return f'gid {gid}'


# The kernel's form of an access ACL (the system.posix_acl_access extended
# attribute, acl(5)): a version, then (tag, permissions, id) entries.
_ACL_ATTRIBUTE = 'system.posix_acl_access'
_ACL_VERSION = struct.Struct('<I')
_ACL_ENTRY = struct.Struct('<HHI')
_ACL_USER, _ACL_GROUP, _ACL_MASK = 0x02, 0x08, 0x10
_ACL_WRITE = 0x02
# A file system or kernel without ACLs, or a path with none.
_NO_ACL = {errno.ENODATA, errno.ENOTSUP, errno.EOPNOTSUPP}


def _AclWriter(where: str) -> Optional[str]:
  """Who other than root, this user and root's group the POSIX ACL of
  `where` lets write it (a named entry with write, not masked off), in
  words ('nobody', 'group nogroup'), or None. Read without getfacl: the
  attribute itself. ValueError when it cannot be read."""
  if not hasattr(os, 'getxattr'):
    return None
  try:
    data = os.getxattr(where, _ACL_ATTRIBUTE)
  except OSError as e:
    if e.errno in _NO_ACL:
      return None
    raise ValueError(e.strerror) from None
  size = _ACL_VERSION.size
  if len(data) < size or (len(data) - size) % _ACL_ENTRY.size:
    raise ValueError('not in the kernel\'s form')
  entries = list(_ACL_ENTRY.iter_unpack(data[size:]))
  mask = next((perm for tag, perm, _ in entries if tag == _ACL_MASK), 0o7)
  for tag, perm, who in entries:
    if not perm & mask & _ACL_WRITE:
      continue
    if tag == _ACL_USER and who not in (0, os.geteuid()):
      return UserName(who)
    if tag == _ACL_GROUP and who != 0:
      return f'group {_GroupName(who)}'
  return None


def Writable(where: str, info: os.stat_result) -> Optional[Fault]:
  """Why another user may write the file or directory at `where` (stat
  `info`), or None: its mode, or its ACL (module doc). Whose it is and a
  sticky bit are the caller's to weigh (run_scope's roots too)."""
  mode = info.st_mode
  if mode & stat.S_IWOTH or (mode & stat.S_IWGRP and info.st_gid != 0):
    return Fault(f'writable by other users (mode {stat.S_IMODE(mode):04o})',
                 Reason.MODE)
  if not mode & stat.S_IWGRP:
    # An ACL's mask is the group bits: no named entry may write either.
    return None
  try:
    writer = _AclWriter(where)
  except ValueError as e:
    return Fault('writable by other users as far as can be told (its ACL '
                 f'cannot be read: {e})', Reason.ACL)
  if writer:
    return Fault(f'writable by other users (its ACL lets {writer} write)',
                 Reason.ACL)
  return None


def _Unsafe(where: str, info: os.stat_result) -> Optional[Fault]:
  """Why a file or directory at `where` with stat `info` is not safe, or
  None."""
  if info.st_uid not in (0, os.geteuid()):
    return Fault(f'owned by {UserName(info.st_uid)}', Reason.OWNER)
  mode = info.st_mode
  if stat.S_ISDIR(mode) and mode & stat.S_ISVTX:
    return None
  return Writable(where, info)


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


def Problem(path: str) -> Optional[Fault]:
  """Why `path` (a program, or a directory of them) is not safe to run as
  root here, or None when it is.

  `path` is absolute or relative to the current directory; a missing or
  unreadable file is a problem too.
  """
  given = os.path.abspath(path)
  try:  # Each place once, in order.
    places = list(dict.fromkeys(_Places(given)))
  except OSError as e:  # A link on the way this user may not read
    # (realpath's readlink: /proc/<another user's pid>/root).
    return Fault(f'{e.filename or given} cannot be read ({e.strerror})',
                 Reason.UNREADABLE)
  for where, is_link in places:
    try:
      info = os.lstat(where) if is_link else os.stat(where)
    except OSError as e:
      return Fault(f'{where} cannot be read ({e.strerror})',
                   Reason.UNREADABLE)
    if is_link:
      # Its owner may point it elsewhere whatever the directory's mode (a
      # link another user made in a sticky /tmp); its own mode means nothing.
      if info.st_uid not in (0, os.geteuid()):
        return Fault(f'{where} is a symbolic link owned by '
                     f'{UserName(info.st_uid)}', Reason.LINK)
      continue
    unsafe = _Unsafe(where, info)
    if unsafe:
      return Fault(f'{where} is {unsafe}', unsafe.reason)
  return None


def DirectoryProblem(entry: str) -> Optional[Fault]:
  """Why the search path entry `entry` lets another user choose what runs,
  or None. Unlike a program's directory, a sticky one others can write fails
  here: anyone may add a program of any name to it (bash, base64, taskset:
  the tools the run's commands name, which nothing else checks). A
  relative entry ('' or '.' too) is the directory a command runs in, pkb's
  own when it runs here (a run's scratch directories are its own); a
  missing one can be made by whoever can write the nearest one above it."""
  try:
    where = os.path.abspath(entry or os.curdir)
  except FileNotFoundError:  # A relative entry, in a directory removed.
    return Fault('the current directory is gone', Reason.UNREADABLE)
  while not os.path.lexists(where):
    where = os.path.dirname(where)
  problem = Problem(where)
  if problem:
    return problem
  writable = Writable(where, os.stat(where))
  return Fault(f'{where} is {writable}', writable.reason) if writable else None


def KeepSafe(variables: Sequence[str]) -> List[str]:
  """Leaves out of each of this process's environment `variables` (lists
  of directories, or of files: PYTHONSTARTUP), and so of every command it
  runs, each entry another user could add to or change
  (DirectoryProblem). Returns each entry left out, as "VARIABLE's entry
  (why)"; a variable not set is left as it is (no PATH is the system's
  default path, os.defpath), one left with no entry is unset."""
  left_out = []
  for variable in variables:
    if variable not in os.environ:
      continue
    kept = []
    for entry in os.environ[variable].split(os.pathsep):
      problem = DirectoryProblem(entry)
      if problem:
        left_out.append(f'{variable}\'s '
                        f'{entry or "(empty: the current directory)"} '
                        f'({problem})')
      else:
        kept.append(entry)
    if len(kept) < len(os.environ[variable].split(os.pathsep)):
      if kept:
        os.environ[variable] = os.pathsep.join(kept)
      else:
        del os.environ[variable]
  return left_out
