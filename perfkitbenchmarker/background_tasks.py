"""Runs one function over many VMs or resources at once (PKB's name).

`RunInLanes` is the one way this code base does work on several VMs or
cloud resources side by side: installs on every VM of a run, deleting a
run's resources kind by kind. Items that share a lane run one after another
in the order given (two "VMs" that are one machine must not run apt at the
same time; shards on one VM share its SSH connection), different lanes run
at once, at most `max_workers` at a time. It waits for every item, so the
caller's run record stays true, and returns each item's outcome in the
order given; `RaiseFirst` turns failures into one exception naming every
failed item.

Extension seam: a caller picks the lane (`lane(item) -> hashable`); the
default puts every item in a lane of its own.

A stopped run (a signal, the deadline: vm_util.StopChildren, counted by
run_processes.StopCount) starts no new item, in any lane: a create or a
shard start never begins after the stop, when teardown may already have
read the record. A caller interrupted while it waits (the signal's exception) leaves the items already started
running in their threads; they are counted, and `AwaitStragglers` (which
teardown calls first) waits for them, so nothing a straggler makes appears
after teardown looked.
"""

import concurrent.futures
import dataclasses
import logging
import threading
import time
from typing import (Any, Callable, Dict, Hashable, List, Optional, Sequence,
                    Tuple)

from perfkitbenchmarker import errors
from perfkitbenchmarker import run_processes

MAX_WORKERS = 16
# How many failures a ParallelError's line names; the rest are counted
# ('and N more') and each is in pkb.log.
SHOWN_FAILURES = 3
# How long teardown waits for items a stopped caller left running (an API
# call under way; a retry's pause ends at the stop: waits.Pause) before it
# goes on.
STRAGGLER_WAIT_S = 120.0

# thread ident -> how many lanes that thread runs now (nested RunInLanes).
_RUNNING: Dict[int, int] = {}
_RUNNING_CHANGED = threading.Condition()


@dataclasses.dataclass(frozen=True)
class Outcome:
  item: Any
  result: Any = None
  error: Optional[BaseException] = None


class ParallelError(errors.VmUtil.ThreadException):
  """Several items failed with errors.Error; one line naming each, the
  first SHOWN_FAILURES of them and how many more (upstream PKB's
  errors.VmUtil.ThreadException)."""

  def __init__(self, failures: Sequence[Outcome],
               name: Optional[Callable[[Any], str]] = None):
    self.failures = tuple(failures)
    # Every failure's line (pkb.log has them all).
    self.lines = parts = [f'{name(o.item)}: {o.error}' if name else
                          str(o.error) for o in self.failures]
    if len(parts) == 1:
      super().__init__(parts[0])
      return
    text = '; '.join(parts[:SHOWN_FAILURES])
    if len(parts) > SHOWN_FAILURES:
      text += (f'; and {len(parts) - SHOWN_FAILURES:,} more (every one is in '
               'pkb.log)')
    super().__init__(f'{len(parts)} failed: {text}')


class ParallelUsageError(ParallelError, errors.UsageError):
  """Several items failed, every one with bad input (errors.UsageError: each
  static machine refusing its login key): a refusal, exit 2, as one of them
  alone is; a ParallelError of them exited 1, as if the run had failed."""


def RunInLanes(function: Callable[[Any], Any], items: Sequence[Any],
               lane: Optional[Callable[[Any], Hashable]] = None,
               max_workers: int = MAX_WORKERS) -> List[Outcome]:
  """Calls `function(item)` for every item; see the module docstring.

  An item's exception is caught into its Outcome and the rest of its lane
  still runs. A KeyboardInterrupt (or any BaseException) in the caller's
  thread cancels the lanes not yet started and is re-raised.
  """
  items = list(items)
  if not items:
    return []
  lanes: Dict[Hashable, List[int]] = {}
  for index, item in enumerate(items):
    key = lane(item) if lane else index
    lanes.setdefault(key, []).append(index)
  outcomes: List[Optional[Outcome]] = [None] * len(items)
  stops = run_processes.StopCount()
  abandoned = threading.Event()  # The caller stopped waiting.

  def RunLane(indices: List[int]) -> None:
    for i in indices:
      if abandoned.is_set() or run_processes.StopCount() != stops:
        outcomes[i] = Outcome(items[i], error=errors.Error(
            'not started: the run was stopped'))
        continue
      try:
        outcomes[i] = Outcome(items[i], result=function(items[i]))
      except Exception as e:  # pylint: disable=broad-except
        outcomes[i] = Outcome(items[i], error=e)

  def CountedLane(indices: List[int]) -> None:
    me = threading.get_ident()
    with _RUNNING_CHANGED:
      _RUNNING[me] = _RUNNING.get(me, 0) + 1
    try:
      RunLane(indices)  # Checks `abandoned` after the count went up.
    finally:
      with _RUNNING_CHANGED:
        _RUNNING[me] -= 1
        if not _RUNNING[me]:
          del _RUNNING[me]
        _RUNNING_CHANGED.notify_all()

  if len(lanes) == 1:
    RunLane(next(iter(lanes.values())))
    return list(outcomes)
  pool = concurrent.futures.ThreadPoolExecutor(
      min(max(1, max_workers), len(lanes)))
  try:
    running = [pool.submit(CountedLane, indices)
               for indices in lanes.values()]
    concurrent.futures.wait(running)
  except BaseException:
    # Lanes not yet started never start; those running finish their
    # current item only (AwaitStragglers waits for them).
    abandoned.set()
    pool.shutdown(wait=False, cancel_futures=True)
    raise
  pool.shutdown()
  for future in running:
    if future.exception() is not None:  # A BaseException out of a lane.
      raise future.exception()
  return list(outcomes)


def Stragglers() -> int:
  """How many lanes run now in threads other than this one."""
  me = threading.get_ident()
  with _RUNNING_CHANGED:
    return sum(n for ident, n in _RUNNING.items() if ident != me)


def AwaitStragglers(timeout_s: float = STRAGGLER_WAIT_S) -> int:
  """Waits (at most timeout_s) until no lane runs in another thread: the
  items an interrupted RunInLanes left running. Returns how many still run
  (0 when every one ended)."""
  left = Stragglers()
  if not left:
    return 0
  logging.warning('Waiting for %d task(s) already under way (a create, a '
                  'start) to end before teardown.', left)
  end = time.monotonic() + timeout_s
  with _RUNNING_CHANGED:
    while True:
      left = Stragglers()
      remaining = end - time.monotonic()
      if not left or remaining <= 0:
        break
      _RUNNING_CHANGED.wait(min(1.0, remaining))
  if left:
    logging.warning('%d task(s) still under way after %.0f s; teardown goes '
                    'on without them.', left, timeout_s)
  return left


def RaiseFirst(outcomes: Sequence[Outcome],
               name: Optional[Callable[[Any], str]] = None) -> List[Any]:
  """The results in order, or a ParallelError chained to the first error.

  A single failure, or one that is not an errors.Error (a bug, whose
  traceback the driver logs), is re-raised as itself; this code base's
  errors already name their VM or resource. Failures that are all bad
  input (errors.UsageError) raise a ParallelUsageError: the driver's exit
  2, as for one of them alone.
  """
  failures = [o for o in outcomes if o.error is not None]
  for o in failures:
    if len(failures) == 1 or not isinstance(o.error, errors.Error):
      raise o.error
  if failures:
    usage = all(isinstance(o.error, errors.UsageError) for o in failures)
    error = (ParallelUsageError if usage else ParallelError)(failures, name)
    if len(failures) > SHOWN_FAILURES:  # Its line names the first few.
      logging.info('%d failed:\n%s', len(failures), '\n'.join(error.lines))
    raise error from failures[0].error
  return [o.result for o in outcomes]


def RunEach(target: Callable[[Any], Any], items: Sequence[Any],
            max_concurrent_threads: Optional[int] = None,
            post_task_delay: float = 0, *,
            lane: Optional[Callable[[Any], Hashable]] = None,
            name: Optional[Callable[[Any], str]] = None) -> List[Any]:
  """RunInLanes, then RaiseFirst: target(item) for every item (whatever it
  is: this code base's tuples are one argument), then failures raise.

  At most max_concurrent_threads at once (default MAX_WORKERS); item i
  starts no sooner than i * post_task_delay seconds after the first. The
  results come back in the items' order.
  """
  numbered = list(enumerate(items))
  start = time.monotonic()

  def Run(pair: Tuple[int, Any]) -> Any:
    if post_task_delay:
      time.sleep(max(0.0, start + pair[0] * post_task_delay -
                     time.monotonic()))
    return target(pair[1])

  outcomes = RunInLanes(Run, numbered,
                        lane and (lambda pair: lane(pair[1])),
                        max_concurrent_threads or MAX_WORKERS)
  return RaiseFirst([dataclasses.replace(o, item=o.item[1])
                     for o in outcomes], name)


def RunThreaded(target: Callable[..., Any], thread_params: List[Any],
                max_concurrent_threads: Optional[int] = None,
                post_task_delay: float = 0, *,
                lane: Optional[Callable[[Any], Hashable]] = None,
                name: Optional[Callable[[Any], str]] = None) -> List[Any]:
  """Upstream PKB's RunThreaded: RunEach over `thread_params`, read as
  upstream reads them. They must be a list (ValueError); its first item
  decides: a tuple makes every item an (args, kwargs) pair, called as
  target(*args, **kwargs) (ValueError if the first is not a tuple and a
  dict), anything else makes each item the one argument (a later pair
  too). A tuple of items, or (1, 2) items, ran here as upstream's refuse
  them; [vm, ((x,), {})] called target(x) for the second.
  """
  if not isinstance(thread_params, list):
    raise ValueError('Param "thread_params" must be a list')
  if thread_params and isinstance(thread_params[0], tuple):
    first = thread_params[0]
    if not (len(first) == 2 and isinstance(first[0], tuple) and
            isinstance(first[1], dict)):
      raise ValueError('If Param is a tuple, the tuple must be (tuple, dict)')
    call = lambda pair: target(*pair[0], **pair[1])
  else:
    call = target
  return RunEach(call, thread_params, max_concurrent_threads,
                 post_task_delay, lane=lane, name=name)
