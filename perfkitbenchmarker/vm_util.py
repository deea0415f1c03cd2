"""Process running and secret masking shared by every VM implementation.

Every local command runs through `RunLocal` in a process group of its own,
listed in a registry while it runs; `StopChildren` kills every listed group
at once. The signal and deadline handler (run_signals) calls it, so a command
that another thread is waiting for (a YCSB JVM, a probe on another client
VM, an ssh session) stops within the second a signal arrives instead of
running to its end.

Secrets (Redis passwords, keys) are registered once with `RegisterSecret`; the
logging filter installed by `InstallSecretFilter` and `Mask` replace them with
'****' everywhere text leaves the process (logs, errors, results).

Upstream PKB's names for benchmark modules written for it: `IssueCommand`
(an argument list through `RunLocal`), `Retry` (a decorator over tenacity,
ended early by a stopped run too) and `RunThreaded` (background_tasks').
"""

import contextlib
import functools
import ipaddress
import logging
import os
import random
import re
import shlex
import subprocess
import threading
import time
import urllib.parse
from typing import (Callable, Dict, Iterable, Optional, Sequence, Tuple,
                    Type, Union)

import tenacity

from perfkitbenchmarker import background_tasks
from perfkitbenchmarker import errors
from perfkitbenchmarker import run_processes
from perfkitbenchmarker.terminal_text import Lines
from perfkitbenchmarker.terminal_text import Printable

_SECRETS: set = set()
_SECRETS_LOCK = threading.Lock()
MASK = '****'

# A command's stdin: text, or chunks of text streamed to it one at a time (a
# preload of millions of keys is never built whole in memory). An iterable is
# iterated once per attempt, so pass a re-iterable one where retries happen.
Stdin = Optional[Union[str, Iterable[str]]]
STREAM_JOIN_S = 5.0  # Bound on waiting for the stream threads after exit.
# pid (= process group id) -> Popen of every RunLocal command still running.
# Plain dict operations only (atomic under the GIL): StopChildren runs in a
# signal handler, which may interrupt a thread that is adding or removing.
_CHILDREN: dict = {}


def RegisterSecret(secret: str) -> None:
  if secret:
    with _SECRETS_LOCK:
      _SECRETS.add(secret)


def Mask(text: str) -> str:
  if not isinstance(text, str):
    return text
  with _SECRETS_LOCK:
    secrets = sorted(_SECRETS, key=len, reverse=True)
  for secret in secrets:
    text = text.replace(secret, MASK)
  return text


class SecretFilter(logging.Filter):
  """Masks registered secrets in every log record, its traceback too."""

  def filter(self, record: logging.LogRecord) -> bool:
    message = record.getMessage()
    masked = Mask(message)
    if masked != message:
      record.msg = masked
      record.args = None
    # A traceback (run_log.Bug's, exc_info=True) quotes its exception's
    # message, which may hold a secret the message above does not. Its text
    # is made here, masked, and the formatter uses it as it is.
    if record.exc_info and not record.exc_text:
      record.exc_text = logging.Formatter().formatException(record.exc_info)
    if record.exc_text:
      record.exc_text = Mask(record.exc_text)
    if record.stack_info:
      record.stack_info = Mask(record.stack_info)
    return True


def InstallSecretFilter() -> None:
  for handler in logging.getLogger().handlers:
    if not any(isinstance(f, SecretFilter) for f in handler.filters):
      handler.addFilter(SecretFilter())


def Tail(text: str, lines: int = 5) -> str:
  """The last `lines` lines of `text` (a command's output: Lines) that are
  not blank, on one line (' | ' between them) for an error or a warning:
  secrets masked, then every control or unprintable character escaped
  (Printable), so none acts on the terminal the line is printed on (a lone
  \r rewrote the line before it), whether or not the caller escapes it
  too."""
  kept = [l for l in Lines(text) if l.strip()]
  return Printable(Mask(' | '.join(kept[-lines:])))


def RunLocal(command: str, cwd: Optional[str] = None,
             timeout: Optional[float] = None,
             env: Optional[dict] = None,
             stdin: Stdin = None) -> Tuple[str, str, int]:
  """Runs a shell command in its own process group and waits for it.

  Whatever happens while waiting (timeout, SIGINT, a deadline exception), the
  whole process group is killed before this returns or raises, so nothing it
  started is left running. `stdin` may be text or an iterable of text chunks,
  written to the command as it reads them.

  Returns:
    (stdout, stderr, returncode); returncode is -9 after a timeout.
  """
  full_env = {**os.environ, **(env or {})}
  stops = run_processes.StopCount()
  proc = subprocess.Popen(
      ['bash', '-c', command], cwd=cwd, env=full_env, text=True,
      stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
      stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
  try:
    _CHILDREN[proc.pid] = proc
    # A stop landed as it started, maybe unseen by StopChildren (it
    # counts, then looks).
    if run_processes.StopCount() != stops:
      run_processes.KillStartedGroup(proc.pid)
    if stdin is not None and not isinstance(stdin, str):
      return _CommunicateStreaming(proc, stdin, timeout)
    return _Communicate(proc, stdin, timeout)
  except subprocess.TimeoutExpired:
    run_processes.KillStartedGroup(proc.pid)
    try:  # Bounded: see _Communicate.
      out, err = proc.communicate(timeout=STREAM_JOIN_S)
    except subprocess.TimeoutExpired:
      out, err = '', ''
    return out, err, -9
  except BaseException:
    run_processes.KillStartedGroup(proc.pid)
    with contextlib.suppress(Exception):
      proc.communicate(timeout=5)
    raise
  finally:
    _CHILDREN.pop(proc.pid, None)


def _Communicate(proc: subprocess.Popen, stdin: Optional[str],
                 timeout: Optional[float]) -> Tuple[str, str, int]:
  """proc.communicate(stdin, timeout), which also ends when the run is
  stopped (StopChildren) and the command is gone, whoever still holds its
  pipes: an ssh client run through a master connection hands its streams to
  the master, which keeps them open until the remote command ends.
  """
  if stdin is not None:
    # communicate() cannot be resumed with input (CPython writes the rest
    # only when given it again, and refuses it then): one call. Commands
    # given text are short (a file written, a job started).
    out, err = proc.communicate(input=stdin, timeout=timeout)
    return out, err, proc.returncode
  stops = run_processes.StopCount()
  end = None if timeout is None else time.monotonic() + timeout
  while True:
    step = 1.0 if end is None else max(0.0, min(1.0, end - time.monotonic()))
    try:
      out, err = proc.communicate(timeout=step)
      return out, err, proc.returncode
    except subprocess.TimeoutExpired:
      if end is not None and time.monotonic() >= end:
        raise
      if run_processes.StopCount() != stops and proc.poll() is not None:
        return '', '', proc.returncode


def StopChildren() -> int:
  """Kills the process group of every RunLocal command still running (in
  any thread); returns how many. Safe in a signal handler.

  Also counts the stop (run_processes.StopCount): a loop that retries or
  keeps waiting (an SSH connection, a detached command's collector) ends
  when the count moved since it began, instead of starting its command
  again.
  """
  run_processes.CountStop()
  pids = list(_CHILDREN)
  for pid in pids:
    run_processes.KillStartedGroup(pid)
  return len(pids)


def _CommunicateStreaming(proc: subprocess.Popen, chunks: Iterable[str],
                          timeout: Optional[float]) -> Tuple[str, str, int]:
  """proc.communicate with stdin written chunk by chunk from `chunks`.

  A thread writes the chunks (blocking while the command is busy, so at most
  one chunk and the pipe's buffer are in flight) and two threads drain
  stdout and stderr. Raises like proc.communicate; the caller kills the
  process group on any exception.
  """
  outputs = {'out': [], 'err': []}

  def Feed():
    try:
      # An error: the command exited or was killed (its status tells why).
      with contextlib.suppress(OSError, ValueError):
        for chunk in chunks:
          proc.stdin.write(chunk)
    finally:
      with contextlib.suppress(OSError):
        proc.stdin.close()

  def Drain(stream, key):
    outputs[key].append(stream.read())

  threads = [threading.Thread(target=Feed, daemon=True),
             threading.Thread(target=Drain, args=(proc.stdout, 'out'),
                              daemon=True),
             threading.Thread(target=Drain, args=(proc.stderr, 'err'),
                              daemon=True)]
  stops = run_processes.StopCount()
  for thread in threads:
    thread.start()
  try:
    returncode = proc.wait(timeout=timeout)
  except subprocess.TimeoutExpired:
    run_processes.KillStartedGroup(proc.pid)
    proc.wait()
    returncode = -9
  # Bounded, and not waited for once the run is stopped: an ssh client of a
  # master connection hands its streams to the master (see _Communicate).
  end = time.monotonic() + (
      STREAM_JOIN_S if run_processes.StopCount() == stops else 0)
  for thread in threads:
    thread.join(max(0.0, end - time.monotonic()))
  return (''.join(outputs['out']), ''.join(outputs['err']), returncode)


def CheckedOutput(out: str, err: str, rc: int, command: str,
                  what: Optional[str] = None,
                  error: Type[errors.ProcessError] = errors.ProcessError
                  ) -> str:
  if rc != 0:
    name = what or (command.split() or ['a command'])[0]
    reason = 'timed out' if rc == -9 else f'exited with status {rc}'
    # A module written for upstream PKB runs sudo freely; where sudo is
    # missing or would prompt (a Local run's machine), say what to do.
    hint = ('; sudo is missing or wants a password here: give the user '
            'passwordless sudo, or drop sudo (a Local VM\'s commands run as '
            'the user running pkb)' if re.search(
                r'sudo: (a password is required|a terminal is required|'
                r'command not found|not found)', err or '') else '')
    raise error(
        f'{name} {reason}: {Tail(err) or Tail(out) or "no output"}{hint}')
  return out


def QuoteAll(argv: Sequence[str]) -> str:
  return ' '.join(shlex.quote(str(a)) for a in argv)


def IsLoopbackEndpoint(endpoint: Optional[str]) -> bool:
  """True for an API endpoint on this machine (a local fake in tests), with
  or without a scheme: localhost, 127.0.0.0/8 or ::1."""
  if not endpoint:
    return False
  try:
    host = urllib.parse.urlsplit(
        endpoint if '//' in endpoint else f'//{endpoint}').hostname or ''
  except ValueError:  # A '[' without its ']' ('Invalid IPv6 URL').
    return False
  if host == 'localhost':
    return True
  try:
    return ipaddress.ip_address(host).is_loopback
  except ValueError:
    return False


# Upstream PKB's module API ---------------------------------------------------

DEFAULT_TIMEOUT = 300  # IssueCommand's, in seconds
POLL_INTERVAL = 30  # Retry's, in seconds
TIMEOUT = 1200  # Retry's when given none (upstream's --default_timeout)
FUZZ = 0.5
MAX_RETRIES = -1

RunThreaded = background_tasks.RunThreaded


def IssueCommand(cmd: Sequence[str], env: Optional[Dict[str, str]] = None,
                 timeout: Optional[float] = DEFAULT_TIMEOUT,
                 cwd: Optional[str] = None, should_pre_log: bool = True,
                 raise_on_failure: bool = True,
                 suppress_failure: Optional[Callable[[str, str, int],
                                                     bool]] = None,
                 suppress_logging: bool = False,
                 raise_on_timeout: bool = True,
                 stack_level: int = 1,
                 log_to_short_log: bool = True) -> Tuple[str, str, int]:
  """Runs a local command given as an argument list; upstream PKB's.

  It runs through RunLocal (its own process group, killed at its timeout or
  when the run is stopped). `env` is added to this process's environment
  (upstream's replaces it). Returns (stdout, stderr, retcode); a timeout
  raises errors.VmUtil.IssueCommandTimeoutError unless raise_on_timeout is
  False (then retcode is -9), a non-zero exit raises
  errors.VmUtil.IssueCommandError when raise_on_failure, unless
  suppress_failure(stdout, stderr, retcode) says it is expected (then it
  returns (stdout, '', 0), as upstream does).
  """
  del stack_level, log_to_short_log  # Upstream's logging knobs.
  if isinstance(cmd, str):
    raise ValueError(f'IssueCommand takes a list of arguments, not the '
                     f'string {cmd!r}')
  argv = [str(arg) for arg in cmd]
  line = Mask(' '.join(argv))
  if should_pre_log:
    logging.info('Running: %s', line)
  out, err, rc = RunLocal(QuoteAll(argv), cwd=cwd, timeout=timeout, env=env)
  if not suppress_logging:
    logging.debug('Ran: %s\nReturnCode: %s\nSTDOUT: %s\nSTDERR: %s', line,
                  rc, Mask(out), Mask(err))
  if rc == -9 and timeout is not None and raise_on_timeout:
    raise errors.VmUtil.IssueCommandTimeoutError(
        f'{argv[0]} ran past its {timeout:g} s timeout and was killed: '
        f'{Tail(err) or Tail(out) or "no output"}')
  if rc and suppress_failure and suppress_failure(out, err, rc):
    return out, '', 0
  if rc and raise_on_failure:
    raise errors.VmUtil.IssueCommandError(
        f'{argv[0]} exited with status {rc}: '
        f'{Tail(err) or Tail(out) or "no output"}')
  return out, err, rc


class RetryError(errors.Error):
  """A function Retry wrapped still failed when its retries ended."""


class TimeoutExceededRetryError(RetryError):
  pass


class RetriesExceededRetryError(RetryError):
  pass


def Retry(poll_interval: float = POLL_INTERVAL,
          max_retries: int = MAX_RETRIES, timeout: Optional[float] = None,
          fuzz: float = FUZZ, log_errors: bool = True,
          retryable_exceptions: Union[None, Type[BaseException],
                                      Tuple[Type[BaseException], ...]] = None
          ) -> Callable[[Callable], Callable]:
  """Upstream PKB's retry decorator, over tenacity.

  The wrapped function is called again while it raises one of
  `retryable_exceptions` (default: any Exception), after poll_interval
  seconds less a random part of up to `fuzz` of it, until the next wait
  would end past `timeout` seconds from the first call (None: TIMEOUT; -1:
  no time limit), which raises TimeoutExceededRetryError, or more than
  max_retries retries were made (-1: no limit), which raises
  RetriesExceededRetryError; either is chained to the last exception. A
  stopped run (its deadline, a signal: StopChildren) ends the retries too.
  """
  retryable = retryable_exceptions or Exception

  def Wrap(function: Callable) -> Callable:

    @functools.wraps(function)
    def Wrapped(*args, **kwargs):
      limit = TIMEOUT if timeout is None else timeout
      deadline = time.time() + limit if limit >= 0 else float('inf')
      stops = run_processes.StopCount()

      def Wait(unused_state) -> float:
        return poll_interval * (1 - fuzz + random.random() * fuzz)

      def Stop(state: tenacity.RetryCallState) -> bool:
        return (time.time() + state.upcoming_sleep >= deadline or
                0 <= max_retries < state.attempt_number or
                run_processes.StopCount() != stops)

      def Log(state: tenacity.RetryCallState) -> None:
        if log_errors:
          logging.info('Retrying %s: %r', function.__qualname__,
                       state.outcome.exception())

      def GaveUp(state: tenacity.RetryCallState):
        last = state.outcome.exception()
        kind = (RetriesExceededRetryError
                if 0 <= max_retries < state.attempt_number
                else TimeoutExceededRetryError)
        raise kind(f'{function.__qualname__} still failed after '
                   f'{state.attempt_number} tries: {type(last).__name__}: '
                   f'{last}') from last

      return tenacity.Retrying(
          retry=tenacity.retry_if_exception_type(retryable), wait=Wait,
          stop=Stop, before_sleep=Log, retry_error_callback=GaveUp,
          sleep=time.sleep)(function, *args, **kwargs)

    return Wrapped

  return Wrap
