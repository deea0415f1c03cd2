"""One lifecycle shape for everything a run creates (as PKB's BaseResource).

A resource has `_Create`, `_Delete` and optionally `_IsReady`;
`Create()` and `Delete()` wrap them once with recording, retries and waiting,
so teardown can always walk the run record. Extension seam: a provider
subclasses `BaseResource` for each kind of cloud object and registers a
`FromRecord` constructor with `RegisterKind`, which reads the entry's data
through the kind's `Fields` model (record_checks), so a later
`--run_stage=teardown` can rebuild and delete it from the record alone.

Teardown goes in waves: the record's live resources, newest first, split
wherever the kind changes (the shards, then the VMs, then firewall rules,
subnetworks, the network...). A wave's resources are deleted at once through
`background_tasks.RunInLanes` and the next wave starts only when the whole
wave is done, since an older kind may depend on a newer one. Within a wave,
resources that must not be deleted at the same time share a lane and go one
after another in the record's order: `TeardownLane()` picks it. The default
is a lane of the resource's own (cloud API calls run side by side, at most
`background_tasks.MAX_WORKERS` at a time); a resource that works over a VM's
one SSH connection (a shard process, the VM's own scratch clean-up) returns
the VM's `CommandLane()`, so sshd's per-connection session limit is never
reached while different VMs still go in parallel.
"""

import abc
import contextvars
import itertools
import logging
import time
from typing import (Any, Callable, Collection, Dict, Hashable, List,
                    Optional, Tuple, Type, TypeVar)

import tenacity

from perfkitbenchmarker import background_tasks
from perfkitbenchmarker import errors
from perfkitbenchmarker import run_record as run_record_lib
from perfkitbenchmarker import run_signals
from perfkitbenchmarker import terminal_text
from perfkitbenchmarker import waits

# A failure line is cut (in the middle) to this length; a report names this
# many failures.
MAX_FAILURE_CHARS = 400
MAX_FAILURES_SHOWN = 5

# kind -> callable(record_entry) -> BaseResource, for teardown from the record.
# The factory also gets the whole record, to find resources it depends on.
_KINDS: Dict[str, Callable[..., 'BaseResource']] = {}


# What one TeardownFromRecord's FromRecord calls share (TeardownShared).
_TEARDOWN_SHARED: contextvars.ContextVar[Optional[Dict[Hashable, Any]]] = (
    contextvars.ContextVar('teardown_shared', default=None))


def RegisterKind(kind: str, from_record: Callable[..., 'BaseResource']):
  _KINDS[kind] = from_record


def TeardownShared(key: Hashable, make: Callable[[], Any]) -> Any:
  """make()'s result, made once per `key` within one TeardownFromRecord
  (a FromRecord's API clients, per endpoint: not once per entry); made
  anew outside one. Nothing outlives the teardown, so no later one (another
  run's, in the same process) gets what this one made."""
  shared = _TEARDOWN_SHARED.get()
  if shared is None:
    return make()
  if key not in shared:
    shared[key] = make()
  return shared[key]


def FromRecord(entry: Dict[str, Any],
               record: run_record_lib.RunRecord) -> 'BaseResource':
  try:
    factory = _KINDS[entry['kind']]
  except KeyError:
    raise errors.ResourceError(
        f'Run record holds a resource of unknown kind "{entry["kind"]}"; '
        'delete it by hand.') from None
  return factory(entry, record)


class RetryableError(Exception):
  """A transient failure; the operation is retried."""


class _Stopped(Exception):
  """The run was stopped before an attempt (Retried)."""


class GaveUp(Exception):
  """Retried ended without an answer: `last`, the last error it retried
  (None when the run was stopped before the first attempt); `stopped`,
  whether the run was stopped since it began; `before_attempt`, whether it
  ended at an attempt the stop kept from starting."""

  def __init__(self, last: Optional[Exception], stopped: bool,
               before_attempt: bool):
    super().__init__(str(last))
    self.last = last
    self.stopped = stopped
    self.before_attempt = before_attempt


T = TypeVar('T')


def Retried(call: Callable[[], T], sleep: Callable[[float], None],
            warn: Callable[[Exception, float], None], *,
            attempts: Optional[int] = None,
            deadline: Optional[float] = None,
            clock: Callable[[], float] = time.monotonic,
            wait: Optional[Callable[[tenacity.RetryCallState], float]] = None,
            retry_on: Tuple[Type[Exception], ...] = (RetryableError,)) -> T:
  """call() until it raises none of `retry_on`, at most `attempts` times
  and/or until `deadline` on `clock` (a budget: no attempt starts at or
  after it, no pause ends past it), pausing as `wait` says (default 1, 2,
  4 ... 30 s; warn(error, pause) before each); raises GaveUp. None is
  started once the run is stopped (a signal, the deadline) since this
  call, and the pause before an attempt ends at the stop
  (waits.Pause on `sleep`, the caller's): a thread in it is no straggler
  that teardown waits out, while teardown's own calls, which begin after
  the run's stop, still retry and pause. The one retry loop of cloud
  calls: a resource's create and delete (BaseResource._Retry), a GCP
  delete's budget (compute_api) and the providers' reads."""
  if attempts is None and deadline is None:
    raise ValueError('Retried needs a bound: attempts or deadline')
  stopped = waits.RunStopped()
  stop = stopped
  if attempts is not None:
    stop = tenacity.stop_after_attempt(attempts) | stop
  pause = wait or tenacity.wait_exponential(max=30)
  if deadline is not None:
    stop = waits.PastDeadline(clock, deadline, inclusive=True) | stop
    paused = pause
    # The last attempt goes out at the deadline, not a pause after it.
    pause = lambda state: max(0.0, min(paused(state), deadline - clock()))
  last: List[Exception] = []

  def Attempt() -> T:
    if stopped():  # It came during the pause before this attempt.
      raise _Stopped()
    try:
      return call()
    except retry_on as e:
      last[:] = [e]
      raise

  try:
    return tenacity.Retrying(
        retry=tenacity.retry_if_exception_type(retry_on), stop=stop,
        wait=pause,
        sleep=lambda seconds: waits.Pause(seconds, sleep, stopped),
        before_sleep=lambda state: warn(state.outcome.exception(),
                                        state.next_action.sleep),
        reraise=True)(Attempt)
  except retry_on:
    raise GaveUp(last[0], stopped(), False) from None
  except _Stopped:
    raise GaveUp(last[0] if last else None, True, True) from None


def RetriedRead(what: str, read: Callable[[], T], attempts: int,
                sleep: Callable[[float], None],
                deadline: Optional[float] = None,
                clock: Callable[[], float] = time.monotonic) -> T:
  """Retried for a provider's read (a get): it gives up in one line, the
  last error's (or `what`'s, when a stop came before the first attempt),
  a ResourceError, never a RetryableError, so a create's or delete's own
  retry does not multiply it. Given a `deadline` on `clock` (a caller's
  own bound), no pause ends past it and no attempt starts after it."""

  def Warn(error: Exception, pause: float) -> None:
    logging.warning('%s (retrying in %.0fs)', error, pause)

  try:
    return Retried(read, sleep, Warn, attempts=attempts, deadline=deadline,
                   clock=clock)
  except GaveUp as e:
    error = e.last or what
    if e.stopped:
      raise errors.ResourceError(
          f'{error}; not tried again, the run being stopped') from None
    if deadline is not None and clock() >= deadline:
      raise errors.ResourceError(
          f'{error} (still failing at its deadline)') from None
    raise errors.ResourceError(
        f'{error} (after {attempts} attempts)') from None


class BaseResource(abc.ABC):
  """A thing that is created, checked, waited for and deleted."""

  KIND = 'resource'
  CREATE_RETRIES = 3
  DELETE_RETRIES = 5
  READY_TIMEOUT_S = 600
  run_uri = ''  # A subclass's, when it knows its run's without a record.

  def __init__(self, name: str,
               record: Optional[run_record_lib.RunRecord] = None,
               sleep: Callable[[float], None] = time.sleep,
               clock: Callable[[], float] = time.monotonic):
    self.name = name
    self.record = record
    self._sleep = sleep
    self._clock = clock
    self.created = False

  # Subclass hooks -------------------------------------------------------------

  @abc.abstractmethod
  def _Create(self) -> None:
    """Creates the resource; raise RetryableError for transient failures."""

  @abc.abstractmethod
  def _Delete(self) -> None:
    """Deletes the resource; must succeed if it is already gone."""

  def _IsReady(self) -> bool:
    return True

  def RecordData(self) -> Dict[str, Any]:
    """What teardown needs to find and delete this resource later."""
    return {}

  def TeardownLane(self) -> Hashable:
    """The lane this resource is deleted in, within its teardown wave
    (module docstring); by default its own."""
    return self

  def TeardownCommand(self) -> str:
    """The run's command that deletes what it left (run_signals'): its
    record, given at construction, says where the run keeps its results (a
    --results_dir off the default); without one, the run_uri a subclass
    knows, else a placeholder."""
    if self.record is None:
      return run_signals.TeardownCommand(self.run_uri or '<run_uri>')
    return run_signals.TeardownCommand(self.run_uri or self.record.run_uri,
                                       self.record.run_dir)

  def Remember(self, **data: Any) -> None:
    """Sets attributes and writes them to the run record at once.

    For facts learnt while creating (an instance id, a PID) that teardown
    needs even if the run dies before Create() returns.
    """
    for key, value in data.items():
      setattr(self, key, value)
    self._Record(**data)

  def _Record(self, **data: Any) -> None:
    """Writes `data` into this resource's run record entry, if it has one."""
    if self.record is not None and self.record.FindResource(self.KIND,
                                                            self.name):
      self.record.UpdateResource(self.KIND, self.name, **data)

  # Lifecycle ------------------------------------------------------------------

  def _Retry(self, operation: Callable[[], None], retries: int,
             what: str) -> None:
    """operation() until it does not raise RetryableError, at most `retries`
    times; none is started once the run is stopped (a signal, the
    deadline): teardown may have read the record by then, and a create
    sent after it would be left behind (Retried)."""

    def Warn(error: Exception, pause: float) -> None:
      logging.warning('%s %s %s failed (%s); retrying in %.0fs', what,
                      self.KIND, self.name, error, pause)

    try:
      Retried(operation, self._sleep, Warn, attempts=retries)
    except GaveUp as e:
      if e.before_attempt:
        raise errors.ResourceError(
            f'{what} {self.KIND} {self.name} not tried again: the run was '
            'stopped') from None
      if e.stopped:
        raise errors.ResourceError(
            f'{what} {self.KIND} {self.name} not tried again, the run being '
            f'stopped: {e.last}') from None
      raise errors.ResourceError(
          f'{what} {self.KIND} {self.name} failed after {retries} '
          f'attempts: {e.last}') from None

  def Create(self) -> None:
    stopped = waits.RunStopped()
    self.Launch()
    self.AwaitReady(stopped)

  def Launch(self) -> None:
    """Create() up to the create call: recorded first, then _Create (so a
    provider can start many before it waits for the first)."""
    if self.record is not None:
      self.record.AddResource(self.KIND, self.name, **self.RecordData())
    self._Retry(self._Create, self.CREATE_RETRIES, 'Creating')
    self.created = True

  def AwaitReady(self, stopped: Optional[waits.RunStopped] = None) -> None:
    """The rest of Create(): ready, then recorded as created. A stopped run
    (since `stopped` was made; by default since this call) stops waiting:
    teardown deletes the resource from its record entry."""
    stopped = stopped or waits.RunStopped()

    def Ready() -> bool:
      if stopped():
        raise errors.ResourceError(
            f'{self.KIND} {self.name} not waited for: the run was stopped')
      return self._IsReady()

    if not waits.Poll(Ready, bool, self.READY_TIMEOUT_S, 1,
                      self._clock, self._sleep)[0]:
      raise errors.ResourceError(
          f'{self.KIND} {self.name} was not ready after '
          f'{self.READY_TIMEOUT_S}s.')
    if self.record is not None:
      self.record.UpdateResource(self.KIND, self.name, status='created',
                                 **self.RecordData())

  def Delete(self) -> None:
    self._Retry(self._Delete, self.DELETE_RETRIES, 'Deleting')
    if self.record is not None and self.record.FindResource(
        self.KIND, self.name):
      self.record.UpdateResource(self.KIND, self.name, status='deleted')


def TeardownFromRecord(record: run_record_lib.RunRecord,
                       kinds: Optional[Collection[str]] = None) -> List[str]:
  """Deletes every live resource in the record (of `kinds`, when given) in
  waves (module docstring); returns one line per resource left live, newest
  first. A failure does not stop the rest of its wave or the later waves.
  """
  # What a stopped run's parallel creates still do ends first: a create
  # already sent can make a resource after the record was read.
  background_tasks.AwaitStragglers()
  failures: Dict[int, str] = {}

  def Failed(index: int, entry: Dict[str, Any], error: BaseException) -> None:
    # One printable line each, whatever the (possibly hostile) record held:
    # terminal escapes and line breaks are escaped, the line is bounded.
    line = terminal_text.Printable(f'{entry["kind"]} {entry["name"]}: {error}')
    half = MAX_FAILURE_CHARS // 2  # The end says what was done about it.
    failures[index] = (line if len(line) <= MAX_FAILURE_CHARS else
                       f'{line[:half]}...{line[-half:]}')

  live = [entry for entry in record.LiveResources()
          if kinds is None or entry.get('kind') in kinds]
  shared = _TEARDOWN_SHARED.set({})  # TeardownShared's, for this one only.
  try:
    for wave in _Waves(live):
      to_delete = []  # (index, entry, resource, lane)
      for index, entry in wave:
        try:
          res = FromRecord(entry, record)
          res.record = record
          lane = res.TeardownLane()
          hash(lane)  # RunInLanes keys a dict by it: fail here, for this one.
        except Exception as e:  # pylint: disable=broad-except
          Failed(index, entry, e)
          continue
        to_delete.append((index, entry, res, lane))
      outcomes = background_tasks.RunInLanes(
          lambda item: item[2].Delete(), to_delete, lane=lambda item: item[3])
      for outcome in outcomes:
        if outcome.error is not None:
          Failed(outcome.item[0], outcome.item[1], outcome.error)
  finally:
    _TEARDOWN_SHARED.reset(shared)
  lines = [failures[index] for index in sorted(failures)]
  if lines:  # Every one in pkb.log (a report shows the first few).
    logging.info('Teardown left %d resource(s):\n%s', len(lines),
                 '\n'.join(f'Teardown: {line}' for line in lines))
  return lines


def FailureSummary(failures: List[str], shown: int = MAX_FAILURES_SHOWN
                   ) -> str:
  """The failures for one terminal line: the first `shown` of them, then
  how many more (each one is in pkb.log), so a record of 50,000 entries
  never prints megabytes."""
  text = '; '.join(failures[:shown])
  if len(failures) > shown:
    text += (f'; and {len(failures) - shown:,} more (every one is in '
             'pkb.log)')
  return text


def _Waves(entries: List[Dict[str, Any]]) -> List[List[tuple]]:
  """(index, entry) pairs, split where the kind changes."""
  return [list(wave) for _, wave in itertools.groupby(
      enumerate(entries), key=lambda pair: pair[1]['kind'])]
