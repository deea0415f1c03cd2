#!/usr/bin/env python3
"""Recomputes a run's published figures from its kept raw files (installed:
`pkb-recompute`).

  ./scripts/recompute.py RUN_DIR [--verbose]

Everything is in perfkitbenchmarker/recompute.py: exit 0 when every figure
agrees, 1 with a line per difference, 2 for bad input.
"""

import os
import signal
import sys


def _Interrupted(unused_signum, unused_frame):
  # While the modules load (a C extension's start-up turns a
  # KeyboardInterrupt into an ImportError); recompute.Main takes over.
  os.write(2, b'pkb-recompute: interrupted\n')
  os._exit(130)  # pylint: disable=protected-access


signal.signal(signal.SIGINT, _Interrupted)
_REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, _REPO)
from perfkitbenchmarker import venv_reexec  # pylint: disable=g-import-not-at-top,wrong-import-position
venv_reexec.UseRepoVenv(_REPO, __file__)

# pylint: disable=g-import-not-at-top,wrong-import-position
from perfkitbenchmarker import recompute

if __name__ == '__main__':
  sys.exit(recompute.Main())
