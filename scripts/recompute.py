#!/usr/bin/env python3
"""Recomputes a run's published figures from its kept raw files (installed:
`pkb-recompute`).

  ./scripts/recompute.py RUN_DIR [--verbose]

Everything is in perfkitbenchmarker/recompute.py: exit 0 when every figure
agrees, 1 with a line per difference, 2 for bad input.
"""

import os
import sys

_REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, _REPO)
from perfkitbenchmarker import venv_reexec  # pylint: disable=g-import-not-at-top
venv_reexec.UseRepoVenv(_REPO, __file__)

# pylint: disable=g-import-not-at-top,wrong-import-position
from perfkitbenchmarker import recompute

if __name__ == '__main__':
  sys.exit(recompute.Main())
