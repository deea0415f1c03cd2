"""Signals and the deadline of a run, and output that survives a lost terminal.

SIGINT, SIGTERM, SIGHUP (the operator's terminal or SSH session closing) and
the --timeout_minutes alarm become one `RunInterrupted` while a run measures.
The same moment every local command still running is killed
(vm_util.StopChildren), in whatever thread it was started: a probe waited
for by a worker thread (YCSB's JVM, another client VM's memtier, an ssh
session) ends within a second instead of running to its end. Processes on
remote VMs are stopped by cleanup, from the run record (probe_processes).

The handlers are installed before the run record exists (`Install`), but a
signal is only noted until the stages start (`Arm`), which then raises at
once: a signal in between still ends the run as interrupted, never leaves a
record marked `running`. Once cleanup starts (`Protect`), they no longer stop
anything: the first one is noted (the run then ends as interrupted) and
cleanup and teardown run to the end; the deadline no longer applies. Only a
second signal cuts cleanup short, and its message names the command that
deletes what is left.
"""

import contextlib
import errno
import logging
import os
import shlex
import signal
import sys
from typing import Optional

from perfkitbenchmarker import errors
from perfkitbenchmarker import paths
from perfkitbenchmarker import vm_util

HANDLED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGALRM)


def TeardownCommand(run_uri: str, run_dir: Optional[str] = None) -> str:
  """The command that tears the run down from its record. A run whose
  directory (`run_dir`, <results_dir>/<run_uri>) is not under the default
  results directory names its --results_dir: without it the command looks
  for the record where it is not."""
  command = f'./pkb.py --run_stage=teardown --run_uri={run_uri}'
  if run_dir:
    results_dir = os.path.dirname(os.path.normpath(run_dir))
    if os.path.realpath(results_dir) != os.path.realpath(paths.RunsDir()):
      command += f' --results_dir={shlex.quote(results_dir)}'
  return command


class Interrupts:
  """Turns signals and the deadline into RunInterrupted, or defers them."""

  def __init__(self, run_uri: str = '', run_dir: Optional[str] = None):
    self.run_uri = run_uri
    self.run_dir = run_dir
    self.reason: Optional[str] = None
    self.cut_short = False
    # Until the first Arm() (the stages start) a signal is only noted.
    self._waiting = True
    self._protected = False
    self._finishing = 'cleanup and teardown'
    self._previous = {}

  def Install(self, timeout_s: Optional[float]) -> None:
    for sig in HANDLED:
      self._previous[sig] = signal.signal(sig, self._Handle)
    if timeout_s:
      signal.setitimer(signal.ITIMER_REAL, timeout_s)

  def Arm(self) -> None:
    """Signals stop the run again; raises at once if one came meanwhile."""
    self._waiting = False
    self._protected = False
    if self.reason is not None:
      raise errors.RunInterrupted(self.reason)

  def Protect(self, teardown: bool = True) -> None:
    """From here on (cleanup, teardown) a first signal is only noted;
    `teardown`: whether teardown follows (the stages asked for it)."""
    self._protected = True
    self._finishing = 'cleanup and teardown' if teardown else 'cleanup'
    signal.setitimer(signal.ITIMER_REAL, 0)  # The deadline is for measuring.

  def Pending(self) -> Optional[errors.RunInterrupted]:
    """The interrupt noted while protected, if any."""
    return None if self.reason is None else errors.RunInterrupted(self.reason)

  def _Handle(self, signum, frame):  # pylint: disable=unused-argument
    if self._waiting:  # Nothing started yet: Arm() raises it.
      if self.reason is None:
        self.reason = ('deadline (--timeout_minutes) reached'
                       if signum == signal.SIGALRM else
                       f'interrupted by {signal.Signals(signum).name}')
      return
    if signum == signal.SIGALRM:
      if self._protected or self.reason is not None:
        return  # The deadline never stops cleanup or teardown.
      self.reason = 'deadline (--timeout_minutes) reached'
      vm_util.StopChildren()
      raise errors.RunInterrupted(self.reason)
    name = signal.Signals(signum).name
    if self.reason is None:
      self.reason = f'interrupted by {name}'
      if not self._protected:
        vm_util.StopChildren()
        raise errors.RunInterrupted(self.reason)
      logging.warning('%s: finishing %s first (a second signal stops '
                      '%s).', name, self._finishing,
                      'them' if ' and ' in self._finishing else 'it')
      return
    if not self._protected or self.cut_short:
      logging.warning('Already stopping (%s); cleaning up, please wait.',
                      self.reason)
      return
    self.cut_short = True
    # Every thread's waits and retries too (a teardown thread's delete
    # loop), and the commands still running: cut short means now.
    vm_util.StopChildren()
    cut = ('cleanup and teardown were' if ' and ' in self._finishing
           else 'cleanup was')
    raise errors.RunInterrupted(
        f'{self.reason}, then {name} during cleanup: {cut} cut short; '
        'delete what is left with '
        f'{TeardownCommand(self.run_uri, self.run_dir)}')

  def Restore(self) -> None:
    signal.setitimer(signal.ITIMER_REAL, 0)
    for sig, handler in self._previous.items():
      signal.signal(sig, handler)
    self._previous = {}


class SafeStream:
  """A text stream whose writes never raise once the terminal is gone.

  After SIGHUP, or when the reader of a pipe exits, writing raises EIO or
  EPIPE. The first such error points the descriptor at /dev/null, so that
  later writes and the interpreter's final flush succeed quietly.
  """

  def __init__(self, stream):
    self._stream = stream

  def write(self, text):  # pylint: disable=invalid-name
    try:
      n = self._stream.write(text)
      self._stream.flush()
      return n
    except (OSError, ValueError) as e:
      self._Silence(e)
      return len(text)

  def flush(self):  # pylint: disable=invalid-name
    try:
      self._stream.flush()
    except (OSError, ValueError) as e:
      self._Silence(e)

  def _Silence(self, error) -> None:
    if isinstance(error, OSError) and error.errno not in (
        errno.EIO, errno.EPIPE, errno.ENXIO, errno.EBADF):
      raise error
    with contextlib.suppress(OSError, ValueError):
      null = os.open(os.devnull, os.O_WRONLY)
      os.dup2(null, self._stream.fileno())
      os.close(null)
      self._stream.flush()

  def __getattr__(self, name):
    return getattr(self._stream, name)


def GuardOutput() -> None:
  """Makes sys.stdout and sys.stderr SafeStreams (once); one Python left
  None (its descriptor was closed when it started: ./pkb.py >&-) writes to
  /dev/null, as one whose terminal is gone does."""
  for name in ('stdout', 'stderr'):
    stream = getattr(sys, name)
    if stream is None:
      stream = open(os.devnull, 'w')  # pylint: disable=consider-using-with
    if not isinstance(stream, SafeStream):
      setattr(sys, name, SafeStream(stream))
