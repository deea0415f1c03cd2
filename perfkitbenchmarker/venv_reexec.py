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
  if (os.path.exists(python) and
      os.path.realpath(sys.prefix) != os.path.realpath(venv) and
      not os.environ.get('PKB_NO_VENV_REEXEC')):
    os.execv(python, [python, os.path.abspath(script)] + sys.argv[1:])
