"""Error types. Anything derived from `Error` is shown to the user as one line.

`pkb.Main` catches `Error` and prints `str(error)` with no traceback, so every
message must name the problem and what to do about it.
"""

import errno
import re


class Error(Exception):
  """Base class for errors that are reported as a single line."""


class UsageError(Error):
  """Bad flags, config or other user input; raised before anything starts."""


class RestoreRefusal(UsageError):
  """A later stage's flags refused against what an earlier invocation of the
  run prepared (its shards, as its record and the servers say), before this
  invocation changed anything: no cleanup follows it unless asked for, so
  the run stays prepared and the same stage with prepare's flags goes on."""


class ConfigError(UsageError):
  """The benchmark configuration is malformed or names an unknown key."""


class PrerequisiteError(Error):
  """A program or resource the run needs is missing."""


class ProcessError(Error):
  """A program the run started failed."""


class ResultsFileError(Error):
  """A results file could not be written (full disk, permissions)."""


# What a write fails with when its file system has no room left.
NO_ROOM_ERRNOS = (errno.ENOSPC, errno.EDQUOT)


class NoRoomError(ResultsFileError):
  """A results file could not be written: its disk had no room left."""

  def __init__(self, message: str, strerror: str):
    super().__init__(message)
    self.strerror = strerror  # The write's own words, as OSError's.


def NoRoom(error: BaseException) -> bool:
  """Whether `error` is a write its disk had no room for."""
  return isinstance(error, NoRoomError) or (
      isinstance(error, OSError) and error.errno in NO_ROOM_ERRNOS)


class NoResultError(Error):
  """The run finished without a result it could report."""


class NoLoadUnderCapError(NoResultError):
  """The search ran and measured, but no load held under the latency cap.

  Not a failure of the run: an answer the user can act on (raise the cap,
  start lower, give more probes), so pkb exits as for an unconfirmed answer
  (verdict.EXIT_UNCONFIRMED), not as for an error.
  """


class RunInterrupted(BaseException):
  """The run was stopped by SIGINT/SIGTERM or by its deadline.

  A BaseException, like KeyboardInterrupt, because it is raised from a signal
  handler anywhere in the code: `except Exception` blocks (logging's among
  them) must not swallow it.
  """


class ResourceError(Error):
  """Creating or deleting a (cloud) resource failed."""


def Problems(error, shown: int = 3, quote: bool = True) -> str:
  """The first `shown` problems of a pydantic ValidationError (input read
  through a model), each with its field's path, for a one-line message.
  `quote=False` names no value (a file that may be someone else's: only
  the field and what is wrong with it)."""
  lines = []
  for problem in error.errors()[:shown]:
    where = ''.join(f'[{p}]' if isinstance(p, int) else f'.{p}'
                    for p in problem['loc']).lstrip('.') or 'it'
    if problem['type'] == 'missing':
      lines.append(f'{where} is missing')
    elif problem['type'] == 'extra_forbidden':
      lines.append(f'{where} is unknown')
    elif not quote:
      lines.append(f'{where} is not valid ({problem["type"]})')
    elif problem['type'] == 'value_error':  # Our checks name the value.
      message = problem['msg'].split(', ', 1)[-1].strip()
      # '="..." must be ...' (terminal_text.NotPrintable) follows the path
      # as it follows a flag's name.
      lines.append(where + ('' if message.startswith('=') else ' ') + message)
    else:
      message = re.sub(r' or instance of \w+', '', problem['msg'])
      lines.append(f'{where} {repr(problem["input"])[:80]}: '
                   f'{message[0].lower()}{message[1:]}')
  more = error.error_count() - len(lines)
  return '; '.join(lines) + (f' (and {more} more)' if more > 0 else '')


# Upstream PKB's error namespaces (errors.VirtualMachine.RemoteCommandError
# and the rest), for benchmark modules written for upstream. Each is one of
# the types above, so the driver shows it as one line and code that catches
# this project's types catches it too. docs/upstream_api.md lists them.


class Setup:
  """Errors of a run's setup (upstream's errors.Setup)."""

  class MissingExecutableError(PrerequisiteError):
    pass

  class InvalidSetupError(UsageError):
    pass

  class InvalidFlagConfigurationError(UsageError):
    pass

  class InvalidConfigurationError(ConfigError):
    pass


class VirtualMachine:
  """Errors of commands on a VM (upstream's errors.VirtualMachine)."""

  class RemoteCommandError(ProcessError):
    """A command on a VM failed (RemoteCommand without ignore_failure)."""

  class VirtualMachineError(ResourceError):
    pass

  class VmStateError(VirtualMachineError):
    pass


class VmUtil:
  """Errors of local commands and threads (upstream's errors.VmUtil)."""

  class ThreadException(Error):
    """Work run on several items at once failed (background_tasks)."""

  class CalledProcessException(ProcessError):
    pass

  class IssueCommandError(ProcessError):
    """A local command failed (vm_util.IssueCommand)."""

  class IssueCommandTimeoutError(ProcessError):
    """A local command ran past its timeout (vm_util.IssueCommand)."""


class RemoteCommandTimeoutError(VirtualMachine.RemoteCommandError,
                                VmUtil.IssueCommandTimeoutError):
  """A command on a VM ran past the timeout it was given. Upstream's
  RemoteCommand raises IssueCommandTimeoutError then (its IssueCommand's),
  which upstream's modules catch as an expected end; this harness's callers
  catch RemoteCommandError: it is both."""


class Benchmarks:
  """Errors a benchmark module raises (upstream's errors.Benchmarks)."""

  class PrepareException(Error):
    pass

  class RunError(Error):
    pass

  class UnsupportedConfigError(UsageError):
    pass

  class KnownIntermittentError(Error):
    pass


class Resource:
  """Errors of resources (upstream's errors.Resource)."""

  class CreationError(ResourceError):
    pass

  class CleanupError(ResourceError):
    pass


class Config:
  """Errors of a benchmark's config (upstream's errors.Config)."""

  class InvalidValue(ConfigError):
    pass

  class MissingOption(ConfigError):
    pass

  class ParseError(ConfigError):
    pass

  class UnrecognizedOption(ConfigError):
    pass
