"""Stop conditions for tenacity's retries and waits, on an injected clock.

Every retry and wait of the harness goes through tenacity (`Retrying` with
`sleep=` the caller's injected sleep). tenacity measures time with its own
clock, so these stops read the caller's instead: tests drive a wait with a
fake clock and sleep, and every wait is bounded by a deadline on that clock
or by the run being stopped (its --timeout_minutes deadline, a signal).
"""

from typing import Callable

import tenacity

from perfkitbenchmarker import vm_util


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
    self._stops = vm_util.StopCount()

  def __call__(self, retry_state: tenacity.RetryCallState = None) -> bool:
    return vm_util.StopCount() != self._stops
