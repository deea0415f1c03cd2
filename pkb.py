#!/usr/bin/env python3
"""Runs the Redis price-performance study: ./pkb.py [--flags]."""

import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, _HERE)
# Use the virtualenv made by scripts/setup.sh, whichever python3 started us.
from perfkitbenchmarker import venv_reexec  # pylint: disable=g-import-not-at-top
venv_reexec.UseRepoVenv(_HERE, __file__)

from perfkitbenchmarker import pkb  # pylint: disable=g-import-not-at-top

if __name__ == '__main__':
  sys.exit(pkb.Main())
