"""Stop conditions for tenacity's retries and waits, on an injected clock.

Every retry and wait of the harness goes through tenacity (`Retrying` with
`sleep=` the caller's injected sleep). tenacity measures time with its own
clock, so these stops read the caller's instead: tests drive a wait with a
fake clock and sleep, and every wait is bounded by a deadline on that clock
or by the run being stopped (its --timeout_minutes deadline, a signal).
A retry's pause goes through `Pause`, so a stop wakes it too.
"""

from typing import Callable, Tuple, TypeVar

import tenacity

from perfkitbenchmarker import run_processes

# The longest a pause sleeps before it looks at the run's stop again. The
# stop is only counted (run_processes.CountStop, from a signal handler, where
# setting a threading.Event could block on a lock the interrupted main
# thread holds), so a pause in another thread sees it at its next step.
PAUSE_STEP_S = 1.0


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


def Pause(seconds: float, sleep: Callable[[float], None],
          stopped: Callable[[], bool], step_s: float = PAUSE_STEP_S) -> bool:
  """sleep(seconds) in steps of at most step_s that ends at the first step
  after stopped() (a RunStopped): a retry's pause that a stop wakes within a
  step instead of sleeping out (up to 30 s after a rate limit). Returns
  whether it paused the whole time."""
  left = seconds
  while left > 0:
    if stopped():
      return False
    step = min(step_s, left)
    sleep(step)
    left -= step
  return not stopped()


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
