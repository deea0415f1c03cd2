"""Where a run's log goes: the console (warnings) and <run dir>/pkb.log (all).

A log file that cannot be written (a full disk, a quota, a read-only remount)
must not print Python's "--- Logging error ---" and a traceback for every
later line, nor stop a run whose log is only its diary. The file handler
gives up at its first failed write and keeps the cause; `Failure` is the
driver's one line about it. The run record and the results files report
their own write failures (run_record.py, publishers/).
"""

import logging
import os
import sys
from typing import Optional

from perfkitbenchmarker import errors
from perfkitbenchmarker import own_dirs
from perfkitbenchmarker import run_record
from perfkitbenchmarker import vm_util

LOG_FILE = 'pkb.log'


class RunLogHandler(logging.FileHandler):
  """pkb.log: stops at the first write that fails and remembers why."""

  def __init__(self, path: str):
    super().__init__(path)
    self.failure: Optional[str] = None

  def emit(self, record: logging.LogRecord) -> None:
    if self.failure is None:
      super().emit(record)

  def handleError(self, record: logging.LogRecord) -> None:
    error = sys.exc_info()[1]
    if not isinstance(error, OSError):
      super().handleError(record)  # A bad log call: a bug worth seeing.
      return
    self.failure = run_record.WriteFailure('the log', self.baseFilename,
                                           error)
    stream, self.stream = self.stream, None
    try:  # Its unwritten buffer would fail again at exit.
      stream.close()
    except (OSError, ValueError):
      pass


def SetUp(run_dir: Optional[str]) -> None:
  """Console at WARNING (INFO with PKB_VERBOSE); pkb.log in run_dir."""
  root = logging.getLogger()
  for h in list(root.handlers):
    root.removeHandler(h)
  root.setLevel(logging.DEBUG)
  console = logging.StreamHandler(sys.stderr)
  console.setLevel(logging.INFO if os.environ.get('PKB_VERBOSE') else
                   logging.WARNING)
  console.setFormatter(logging.Formatter('%(levelname)s %(message)s'))
  root.addHandler(console)
  if run_dir:
    path = os.path.join(run_dir, LOG_FILE)
    try:
      own_dirs.MakeOwnDir(run_dir)
      handler = RunLogHandler(path)
    except OSError as e:
      raise errors.ResultsFileError(
          f'{run_record.WriteFailure("the log", path, e)}; nothing was '
          'started.') from None
    handler.setLevel(logging.DEBUG)
    handler.setFormatter(logging.Formatter(
        '%(asctime)s %(levelname)s %(module)s:%(lineno)d %(message)s'))
    root.addHandler(handler)
  vm_util.InstallSecretFilter()


def Failure() -> Optional[str]:
  """The one line saying pkb.log could not be written, if it could not."""
  for h in logging.getLogger().handlers:
    if isinstance(h, RunLogHandler) and h.failure:
      return f'{h.failure}; the log stops there.'
  return None
