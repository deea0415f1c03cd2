#!/usr/bin/env python3
"""Runs the Redis price-performance study: ./pkb.py [--flags]."""

import os
import signal
import sys


def _InterruptedWhileStarting(signum, frame):  # pylint: disable=unused-argument
  # Nothing of a run exists yet (only imports ran): one line, no traceback.
  sys.stderr.write('pkb: interrupted\n')
  sys.stderr.flush()
  os._exit(130)  # pylint: disable=protected-access


signal.signal(signal.SIGINT, _InterruptedWhileStarting)
# A descriptor 0-2 the caller closed (./pkb.py >&-) would be the next file
# pkb opens, its log or a results file, where every child's output and
# error would go: /dev/null takes its place (the lowest free descriptor).
for _fd in (0, 1, 2):
  try:
    os.fstat(_fd)
  except OSError:
    os.open(os.devnull, os.O_RDWR)
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, _HERE)
# Use the virtualenv made by scripts/setup.sh, whichever python3 started us.
from perfkitbenchmarker import venv_reexec  # pylint: disable=g-import-not-at-top
venv_reexec.UseRepoVenv(_HERE, __file__)

from perfkitbenchmarker import pkb  # pylint: disable=g-import-not-at-top

# From here on the driver's own handling (run_signals, KeyboardInterrupt);
# SIGTERM and SIGHUP too until run_signals takes them (unless ignored, as
# under nohup), so what the start makes goes with it: killed by their
# default action there, a --memtier_path check left /tmp/pkb-check-*.
signal.signal(signal.SIGINT, signal.default_int_handler)
for _signum in (signal.SIGTERM, signal.SIGHUP):
  if signal.getsignal(_signum) == signal.SIG_DFL:
    signal.signal(_signum, signal.default_int_handler)

if __name__ == '__main__':
  try:
    sys.exit(pkb.Main())
  except KeyboardInterrupt:  # Before Main reports its own (flag parsing).
    _InterruptedWhileStarting(None, None)
