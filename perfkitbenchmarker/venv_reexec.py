"""Runs an entry script of a checkout in the checkout's .venv.

./pkb.py and the scripts in scripts/ may be started by any python3; when
the virtualenv made by scripts/setup.sh exists and is not the one running,
they re-exec themselves in it. Standard library only: this runs before the
project's dependencies can be imported. PKB_NO_VENV_REEXEC=1 turns it off.
"""

import os
import sys


def UseRepoVenv(repo: str, script: str) -> None:
  """Re-execs `script` in `repo`/.venv unless that venv already runs it.

  The caller has put `repo` on sys.path to import this module.
  """
  venv = os.path.join(repo, '.venv')
  python = os.path.join(venv, 'bin', 'python')
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
