"""Runs an entry script of a checkout in the checkout's .venv.

./pkb.py and the scripts in scripts/ may be started by any python3; when
the virtualenv made by scripts/setup.sh exists and is not the one running,
they re-exec themselves in it. Standard library only: this runs before the
project's dependencies can be imported. PKB_NO_VENV_REEXEC=1 turns it off.
Either way, Python's search paths lose what other users can write first
(KeepSafeCodePaths).
"""

import os
import sys
from typing import List, Optional

from perfkitbenchmarker import owned_paths

# Where Python finds code before the venv's own (PYTHONPATH, before the
# standard library and site-packages), and the other files it runs: a
# directory there that another user can write would have its yaml.py or
# absl/ run in pkb, as root with the run's password.
CODE_PATHS = ('PYTHONPATH', 'PYTHONHOME', 'PYTHONSTARTUP', 'PYTHONUSERBASE')


def KeepSafeCodePaths() -> List[str]:
  """Leaves out of os.environ's CODE_PATHS (so of the venv's python pkb
  re-execs into and of every python it starts) and out of sys.path each
  entry another user could write (owned_paths.KeepSafe); returns each one
  left out, as "VARIABLE's entry (why)". What the python running this read
  before (its sitecustomize) it read already."""
  given = os.environ.get('PYTHONPATH')
  left_out = owned_paths.KeepSafe(CODE_PATHS)
  if given:
    kept = os.environ.get('PYTHONPATH')
    kept = kept.split(os.pathsep) if kept is not None else []
    dropped = {_Absolute(e) for e in given.split(os.pathsep)
               if e not in kept}
    # This python put them on sys.path too, as given or made absolute.
    sys.path[:] = [p for p in sys.path if _Absolute(p) not in dropped]
  return left_out


def _Absolute(path: str) -> Optional[str]:
  """`path` made absolute ('' is the current directory); None when the
  current directory is gone."""
  try:
    return os.path.abspath(path or os.curdir)
  except OSError:
    return None


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
