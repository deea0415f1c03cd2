"""Stop conditions for tenacity's retries and waits, on an injected clock.

Every retry and wait of the harness goes through tenacity (`Retrying` with
`sleep=` the caller's injected sleep). tenacity measures time with its own
clock, so these stops read the caller's instead: tests drive a wait with a
fake clock and sleep, and every wait is bounded by a deadline on that clock
or by the run being stopped (its --timeout_minutes deadline, a signal).
"""

from typing import Callable, Tuple, TypeVar

import tenacity

from perfkitbenchmarker import run_processes


class PastDeadline(tenacity.stop.stop_base):
  """Stops once `clock()` is past `deadline` (or at it, `inclusive`)."""

  def __init__(self, clock: Callable[[], float], deadline: float,
               inclusive: bool = False):
    self._clock = clock
    self.deadline = deadline
    self._inclusive = inclusive

  def __call__(self, retry_state: tenacity.RetryCallState) -> bool:
    now = self._clock()
    return now >= self.deadline if self._inclusive else now > self.deadline


class RunStopped(tenacity.stop.stop_base):
  """Stops once the run's commands were stopped (vm_util.StopChildren: the
  run's deadline, a signal) since this stop was made."""

  def __init__(self):
    self._stops = run_processes.StopCount()

  def __call__(self, retry_state: tenacity.RetryCallState = None) -> bool:
    return run_processes.StopCount() != self._stops


T = TypeVar('T')


def Poll(check: Callable[[], T], done: Callable[[T], bool], timeout_s: float,
         interval_s: float, clock: Callable[[], float],
         sleep: Callable[[float], None], inclusive: bool = False
         ) -> Tuple[bool, T]:
  """check() every interval_s until done(its result) or timeout_s passed.

  Returns (whether done, the last result). An exception from check ends the
  wait at once. The deadline is on `clock` (PastDeadline, `inclusive` as
  there).
  """
  try:
    return True, tenacity.Retrying(
        retry=tenacity.retry_if_not_result(done),
        stop=PastDeadline(clock, clock() + timeout_s, inclusive),
        wait=tenacity.wait_fixed(interval_s), sleep=sleep)(check)
  except tenacity.RetryError as e:
    return False, e.last_attempt.result()
