"""Runs an entry script of a checkout in the checkout's .venv.

./pkb.py and the scripts in scripts/ may be started by any python3; when
the virtualenv made by scripts/setup.sh exists and is not the one running,
they re-exec themselves in it. Standard library only: this runs before the
project's dependencies can be imported. PKB_NO_VENV_REEXEC=1 turns it off.
Either way, Python's search paths lose what other users can write first
(KeepSafeCodePaths).
"""

import os
import stat
import sys
from typing import List, Optional

# Where Python finds code before the venv's own (PYTHONPATH, before the
# standard library and site-packages), and the other files it runs: a
# directory there that another user can write would have its yaml.py or
# absl/ run in pkb, as root with the run's password.
CODE_PATHS = ('PYTHONPATH', 'PYTHONHOME', 'PYTHONSTARTUP', 'PYTHONUSERBASE')


def _OthersCanWrite(entry: str) -> Optional[str]:
  """Why another user could change what Python reads at `entry` (or, when
  it is missing, make it), or None: trusted_programs.KeepSafePath's rule
  (this module may not import it): the nearest existing path, writable by
  no other user (group: root's only), every directory on its way as given
  and resolved owned by root or this user and writable by no one else but
  when sticky, every link on the way owned by root or this user. A
  relative entry ('' too) is the current directory's."""
  where = _Absolute(entry)
  if where is None:
    return 'the current directory is gone'
  while not os.path.lexists(where):
    where = os.path.dirname(where)
  parts = [p for p in where.split(os.sep) if p]
  given = [os.sep + os.sep.join(parts[:i]) for i in range(len(parts) + 1)]
  parts = [p for p in os.path.realpath(where).split(os.sep) if p]
  real = [os.sep + os.sep.join(parts[:i]) for i in range(len(parts) + 1)]
  try:
    for place in given:
      if os.path.islink(place) and os.lstat(place).st_uid not in (
          0, os.geteuid()):
        return f'{place} is a symbolic link owned by uid {os.lstat(place).st_uid}'
    for place in given + real:
      info = os.stat(place)
      mode = info.st_mode
      if info.st_uid not in (0, os.geteuid()):
        return f'{place} is owned by uid {info.st_uid}'
      if (stat.S_ISDIR(mode) and mode & stat.S_ISVTX and
          place not in (where, real[-1])):
        continue
      if mode & stat.S_IWOTH or (mode & stat.S_IWGRP and info.st_gid != 0):
        return (f'{place} is writable by other users (mode '
                f'{stat.S_IMODE(mode):04o})')
  except OSError as e:
    return f'{e.filename} cannot be read ({e.strerror})'
  return None


def _Absolute(path: str) -> Optional[str]:
  """`path` made absolute ('' is the current directory); None when the
  current directory is gone."""
  try:
    return os.path.abspath(path or os.curdir)
  except OSError:
    return None


def KeepSafeCodePaths() -> List[str]:
  """Leaves out of os.environ's CODE_PATHS (so of the venv's python pkb
  re-execs into and of every python it starts) and out of sys.path each
  entry another user could write (_OthersCanWrite); returns each one left
  out, as "VARIABLE's entry (why)". What the python running this read
  before (its sitecustomize) it read already."""
  left_out = []
  for variable in CODE_PATHS:
    value = os.environ.get(variable)
    if not value:
      continue
    entries = value.split(os.pathsep) if variable == 'PYTHONPATH' else [value]
    kept = []
    for entry in entries:
      problem = _OthersCanWrite(entry)
      if problem is None:
        kept.append(entry)
        continue
      left_out.append(f'{variable}\'s {entry or "(empty)"} ({problem})')
      if variable == 'PYTHONPATH':  # As given, or made absolute.
        sys.path[:] = [p for p in sys.path
                       if p != entry and _Absolute(p) != _Absolute(entry)]
    if len(kept) < len(entries):
      if kept:
        os.environ[variable] = os.pathsep.join(kept)
      else:
        del os.environ[variable]
  return left_out


def UseRepoVenv(repo: str, script: str) -> None:
  """Re-execs `script` in `repo`/.venv unless that venv already runs it,
  without the Python search paths others can write (KeepSafeCodePaths,
  said in one warning line).

  The caller has put `repo` on sys.path to import this module.
  """
  venv = os.path.join(repo, '.venv')
  python = os.path.join(venv, 'bin', 'python')
  left_out = KeepSafeCodePaths()
  if left_out:
    name = os.path.splitext(os.path.basename(script))[0]
    sys.stderr.write(
        f'{name}: WARNING: directories other users can add Python modules '
        f'to are left out of its search path: {"; ".join(left_out)}.\n')
  if (os.path.lexists(python) and not os.access(python, os.X_OK) and
      not os.environ.get('PKB_NO_VENV_REEXEC')):
    # The venv is there but this user cannot run its python: one made by
    # another user (root) from a python in their private home. Going on
    # with whatever python3 started us ends in a ModuleNotFoundError.
    name = os.path.splitext(os.path.basename(script))[0]
    sys.stderr.write(
        f'{name}: {venv} cannot be used by user {_User()}: its python '
        f'{os.path.realpath(python)} is not reachable (made with a python '
        'in another user\'s private directory); run ./scripts/setup.sh in a '
        'checkout of your own, or remake it with a python every user can '
        'run: rm -rf .venv; PYTHON=/usr/bin/python3 ./scripts/setup.sh\n')
    sys.exit(2)
  if (os.path.exists(python) and
      os.path.realpath(sys.prefix) != os.path.realpath(venv) and
      not os.environ.get('PKB_NO_VENV_REEXEC')):
    os.execv(python, [python, os.path.abspath(script)] + sys.argv[1:])


def _User() -> str:
  try:
    import pwd  # pylint: disable=g-import-not-at-top
    return pwd.getpwuid(os.geteuid()).pw_name
  except (ImportError, KeyError):
    return str(os.geteuid())
