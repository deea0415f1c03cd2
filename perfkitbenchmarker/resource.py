"""One lifecycle shape for everything a run creates (as PKB's BaseResource).

A resource has `_Create`, `_Exists`, `_Delete` and optionally `_IsReady`;
`Create()` and `Delete()` wrap them once with recording, retries and waiting,
so teardown can always walk the run record. Extension seam: a provider
subclasses `BaseResource` for each kind of cloud object and registers a
`FromRecord` constructor with `RegisterKind`, so a later
`--run_stage=teardown` can rebuild and delete it from the record alone.
"""

import abc
import logging
import time
from typing import Any, Callable, Dict, Optional

from perfkitbenchmarker import errors
from perfkitbenchmarker import run_record as run_record_lib

# kind -> callable(record_entry) -> BaseResource, for teardown from the record.
# The factory also gets the whole record, to find resources it depends on.
_KINDS: Dict[str, Callable[..., 'BaseResource']] = {}


def RegisterKind(kind: str, from_record: Callable[..., 'BaseResource']):
  _KINDS[kind] = from_record


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


class BaseResource(abc.ABC):
  """A thing that is created, checked, waited for and deleted."""

  KIND = 'resource'
  CREATE_RETRIES = 3
  DELETE_RETRIES = 5
  READY_TIMEOUT_S = 600

  def __init__(self, name: str,
               record: Optional[run_record_lib.RunRecord] = None,
               sleep: Callable[[float], None] = time.sleep,
               clock: Callable[[], float] = time.monotonic):
    self.name = name
    self.record = record
    self._sleep = sleep
    self._clock = clock
    self.created = False
    self.deleted = False

  # Subclass hooks -------------------------------------------------------------

  @abc.abstractmethod
  def _Create(self) -> None:
    """Creates the resource; raise RetryableError for transient failures."""

  @abc.abstractmethod
  def _Delete(self) -> None:
    """Deletes the resource; must succeed if it is already gone."""

  def _Exists(self) -> bool:
    return self.created and not self.deleted

  def _IsReady(self) -> bool:
    return True

  def RecordData(self) -> Dict[str, Any]:
    """What teardown needs to find and delete this resource later."""
    return {}

  def Remember(self, **data: Any) -> None:
    """Sets attributes and writes them to the run record at once.

    For facts learnt while creating (an instance id, a PID) that teardown
    needs even if the run dies before Create() returns.
    """
    for key, value in data.items():
      setattr(self, key, value)
    if self.record is not None and self.record.FindResource(self.KIND,
                                                            self.name):
      self.record.UpdateResource(self.KIND, self.name, **data)

  # Lifecycle ------------------------------------------------------------------

  def _Retry(self, operation: Callable[[], None], retries: int,
             what: str) -> None:
    delay = 1.0
    for attempt in range(1, retries + 1):
      try:
        operation()
        return
      except RetryableError as e:
        if attempt == retries:
          raise errors.ResourceError(
              f'{what} {self.KIND} {self.name} failed after {retries} '
              f'attempts: {e}') from None
        logging.warning('%s %s %s failed (%s); retrying in %.0fs', what,
                        self.KIND, self.name, e, delay)
        self._sleep(delay)
        delay = min(delay * 2, 30)

  def Create(self) -> None:
    if self.record is not None:
      self.record.AddResource(self.KIND, self.name, **self.RecordData())
    self._Retry(self._Create, self.CREATE_RETRIES, 'Creating')
    self.created = True
    self.WaitUntilReady()
    if self.record is not None:
      self.record.UpdateResource(self.KIND, self.name, status='created',
                                 **self.RecordData())

  def WaitUntilReady(self) -> None:
    deadline = self._clock() + self.READY_TIMEOUT_S
    while not self._IsReady():
      if self._clock() > deadline:
        raise errors.ResourceError(
            f'{self.KIND} {self.name} was not ready after '
            f'{self.READY_TIMEOUT_S}s.')
      self._sleep(1)

  def Delete(self) -> None:
    self._Retry(self._Delete, self.DELETE_RETRIES, 'Deleting')
    self.deleted = True
    if self.record is not None and self.record.FindResource(
        self.KIND, self.name):
      self.record.UpdateResource(self.KIND, self.name, status='deleted')


def TeardownFromRecord(record: run_record_lib.RunRecord) -> list:
  """Deletes every live resource in the record, newest first.

  Returns a list of one-line failure descriptions (empty when all went).
  """
  failures = []
  for entry in list(record.LiveResources()):
    try:
      res = FromRecord(entry, record)
      res.record = record
      res.Delete()
    except Exception as e:  # pylint: disable=broad-except
      # One line each, whatever the (possibly hostile) record held.
      failures.append(f'{entry["kind"]} {entry["name"]}: {e}'.replace(
          '\n', '\\n'))
  return failures
