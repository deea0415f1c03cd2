#!/usr/bin/env python3
"""Runs the Redis price-performance study: ./pkb.py [--flags]."""

import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
_VENV_PYTHON = os.path.join(_HERE, '.venv', 'bin', 'python')

# Use the virtualenv made by scripts/setup.sh, whichever python3 started us.
if (os.path.exists(_VENV_PYTHON) and
    os.path.realpath(sys.prefix) != os.path.realpath(
        os.path.join(_HERE, '.venv')) and
    not os.environ.get('PKB_NO_VENV_REEXEC')):
  os.execv(_VENV_PYTHON, [_VENV_PYTHON, os.path.abspath(__file__)] +
           sys.argv[1:])

sys.path.insert(0, _HERE)

from perfkitbenchmarker import pkb  # pylint: disable=g-import-not-at-top

if __name__ == '__main__':
  sys.exit(pkb.Main())
