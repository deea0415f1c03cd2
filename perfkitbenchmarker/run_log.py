"""Where a run's log goes: the console (warnings) and <run dir>/pkb.log (all).

pkb.log keeps everything: the debug detail of every module, and every line
the console showed (probe lines, warnings, the summary, teardown, the error
lines), each with its time and `stdout |` or `stderr |`. Once a run has its
directory, sys.stdout and sys.stderr are `ConsoleTee`s that pass text on to
the terminal unchanged and log each complete line to pkb.log; lines printed
before that (`Capture` at the start: the plan's warnings) are kept and
written first. `TearDown` puts the streams back.

A log file that cannot be written (a full disk, a quota, a read-only remount)
must not print Python's "--- Logging error ---" and a traceback for every
later line, nor stop a run whose log is only its diary. The file handler
gives up at its first failed write and keeps the cause; `Failure` is the
driver's one line about it. The run record and the results files report
their own write failures (run_record.py, publishers/).
"""

import contextlib
import logging
import os
import sys
import time
from typing import Optional

from perfkitbenchmarker import errors
from perfkitbenchmarker import run_record
from perfkitbenchmarker import run_scope
from perfkitbenchmarker import terminal_text
from perfkitbenchmarker import vm_util

LOG_FILE = 'pkb.log'
CONSOLE_LOGGER = 'pkb.console'
CREDENTIAL_LOGGER = 'botocore'  # Kept out of pkb.log below INFO.
_DETAIL = logging.Formatter(
    '%(asctime)s %(levelname)s %(module)s:%(lineno)d %(message)s')
_CONSOLE = logging.Formatter('%(asctime)s %(stream)s | %(message)s')
# In UTC, as samples, run records and compare's nights are (a log read
# beside them, or on another machine, needs no zone to match them).
_DETAIL.converter = _CONSOLE.converter = time.gmtime


class _RunLogFormatter(logging.Formatter):
  """Module and line for log records; the stream for console lines."""

  def format(self, record: logging.LogRecord) -> str:
    if record.name == CONSOLE_LOGGER:
      return _CONSOLE.format(record)
    return _DETAIL.format(record)


class ConsoleTee:
  """A console stream that also logs each complete line to pkb.log."""

  def __init__(self, stream, name: str):
    self.wrapped = stream
    self._name = name
    self._partial = ''

  def write(self, text: str) -> int:
    written = self.wrapped.write(text)
    try:
      lines = (self._partial + text).split('\n')
      self._partial = lines.pop()
      for line in lines:
        logging.getLogger(CONSOLE_LOGGER).info(line,
                                               extra={'stream': self._name})
    except Exception:  # pylint: disable=broad-except
      pass  # The log is the run's diary, never a reason to stop it.
    return written

  def flush(self) -> None:
    self.wrapped.flush()

  def __getattr__(self, name):
    return getattr(self.wrapped, name)


_EARLY_LINES = 1000  # Console lines kept before the run has its log.


class _EarlyLines(logging.Handler):
  """Console lines from before pkb.log exists, for SetUp to write first."""

  def __init__(self):
    super().__init__(logging.INFO)
    self.records = []

  def emit(self, record: logging.LogRecord) -> None:
    if len(self.records) < _EARLY_LINES:
      self.records.append(record)


def _ConsoleLines() -> logging.Logger:
  logger = logging.getLogger(CONSOLE_LOGGER)
  logger.propagate = False
  logger.setLevel(logging.INFO)
  return logger


def _TeeStreams() -> None:
  sys.stdout = ConsoleTee(sys.stdout, 'stdout')
  sys.stderr = ConsoleTee(sys.stderr, 'stderr')


class _ConsoleFormatter(logging.Formatter):
  """'LEVEL: message', its controls shown as text (a warning may quote what
  a machine or a file said), its line breaks and tabs kept."""

  def format(self, record: logging.LogRecord) -> str:
    return terminal_text.PrintableLines(super().format(record))


class _Console(logging.StreamHandler):
  """The console's log lines ('WARNING: ...'; INFO and up with
  PKB_VERBOSE), on whatever sys.stderr is when each is written (the tee
  into pkb.log, or the terminal)."""

  def __init__(self):
    super().__init__()
    self.setLevel(logging.INFO if os.environ.get('PKB_VERBOSE') else
                  logging.WARNING)
    self.setFormatter(_ConsoleFormatter('%(levelname)s: %(message)s'))

  @property
  def stream(self):
    return sys.stderr

  @stream.setter
  def stream(self, value):
    del value  # Always sys.stderr as it is then.


def Capture() -> None:
  """From the start of pkb: console lines are kept until pkb.log exists,
  and a warning logged before SetUp has the console's form (logging's own
  default said 'WARNING:root:...')."""
  _Untee()
  logger = _ConsoleLines()
  for h in list(logger.handlers):
    logger.removeHandler(h)
  logger.addHandler(_EarlyLines())
  root = logging.getLogger()
  if not root.handlers:
    root.addHandler(_Console())
  _TeeStreams()


def _Untee() -> None:
  for name in ('stdout', 'stderr'):
    stream = getattr(sys, name)
    while isinstance(stream, ConsoleTee):
      if stream._partial:  # pylint: disable=protected-access
        stream.write('\n')
      stream = stream.wrapped
    setattr(sys, name, stream)


class RunLogHandler(logging.FileHandler):
  """pkb.log: stops at the first write that fails and remembers why."""

  def __init__(self, path: str):
    super().__init__(path)
    self.failure: Optional[str] = None

  def _open(self):
    # Never appended through a symlink left at that name (a downloaded run
    # directory may hold one to any file of the user's), nor blocked on a
    # FIFO: either is an OSError, one line from SetUp.
    fd = os.open(self.baseFilename, os.O_WRONLY | os.O_APPEND | os.O_CREAT |
                 os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, 0o666)
    os.set_blocking(fd, True)
    return open(fd, self.mode, encoding=self.encoding, errors=self.errors)

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
    # Its unwritten buffer would fail again at exit.
    with contextlib.suppress(OSError, ValueError):
      stream.close()


def SetUp(run_dir: Optional[str]) -> None:
  """Console at WARNING (INFO with PKB_VERBOSE); pkb.log in run_dir."""
  _Untee()
  root = logging.getLogger()
  console_lines = _ConsoleLines()
  early = [r for h in console_lines.handlers if isinstance(h, _EarlyLines)
           for r in h.records]
  for logger in (root, console_lines):
    for h in list(logger.handlers):
      logger.removeHandler(h)
  root.setLevel(logging.DEBUG)
  # botocore's DEBUG lines give each request's headers: the access key id,
  # the signature and a session's X-Amz-Security-Token. Its INFO and up.
  logging.getLogger(CREDENTIAL_LOGGER).setLevel(logging.INFO)
  root.addHandler(_Console())
  if run_dir:
    path = os.path.join(run_dir, LOG_FILE)
    try:
      run_scope.MakeOwnDir(run_dir)
      handler = RunLogHandler(path)
    except OSError as e:
      raise errors.ResultsFileError(
          f'{run_record.WriteFailure("the log", path, e)}; nothing was '
          'started.') from None
    handler.setLevel(logging.DEBUG)
    handler.setFormatter(_RunLogFormatter())
    root.addHandler(handler)
    console_lines.addHandler(handler)
    vm_util.InstallSecretFilter()
    for record in early:
      handler.handle(record)
    _TeeStreams()
  vm_util.InstallSecretFilter()


def TearDown() -> None:
  """The console streams back as they were; pkb.log closed."""
  _Untee()
  for logger in (logging.getLogger(), logging.getLogger(CONSOLE_LOGGER)):
    for h in list(logger.handlers):
      if isinstance(h, (RunLogHandler, _EarlyLines)):
        logger.removeHandler(h)
        h.close()


def Bug(what: str) -> str:
  """Logs the exception being handled, a bug rather than bad input: its
  traceback into pkb.log at INFO (below the console's WARNING) while
  pkb.log is being written, else on the console, the one place left for
  it (before pkb.log exists, or after a write to it failed). Returns what
  the error's one line adds: ' (traceback in PATH)', or ''."""
  for h in logging.getLogger().handlers:
    if isinstance(h, RunLogHandler) and h.failure is None:
      logging.info(what, exc_info=True)
      return f' (traceback in {h.baseFilename})'
  logging.exception(what)
  return ''


def Failure() -> Optional[str]:
  """The one line saying pkb.log could not be written, if it could not."""
  for h in logging.getLogger().handlers:
    if isinstance(h, RunLogHandler) and h.failure:
      return f'{h.failure}; the log stops there.'
  return None
