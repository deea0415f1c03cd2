"""A stop (Ctrl-C, the deadline) while a cloud call retries or waits.

A create retried after a rate limit pauses up to 30 s, and a GCP operation
is waited on up to 900 s; a stop ends both (the pause within a step, the
wait at its next answer), so no thread is left for teardown to wait out,
while teardown's own deletes, which begin after the stop, still retry and
wait. Scripted clocks, sleeps and Compute clients: no process, no network.
"""

import types

import pytest

from perfkitbenchmarker import errors
from perfkitbenchmarker import resource
from perfkitbenchmarker import run_processes


class FakeTime:
  """A clock that moves only when slept on; the run is stopped once it
  passes `stop_at`."""

  def __init__(self, stop_at=None):
    self.now = 0.0
    self.stop_at = stop_at
    self.sleeps = []

  def clock(self):
    return self.now

  def sleep(self, seconds):
    self.sleeps.append(seconds)
    self.now += seconds
    if self.stop_at is not None and self.now - seconds < self.stop_at <= (
        self.now):
      run_processes.CountStop()  # What a signal's StopChildren counts.


class RateLimited(resource.BaseResource):
  """A resource whose every create and delete call is rate limited."""

  KIND = 'test_rate_limited'
  # Enough attempts for a long pause: 1, 2, 4, 8, 16 s between them.
  CREATE_RETRIES = DELETE_RETRIES = 6

  def __init__(self, time, stop_after_attempt=None):
    super().__init__('limited', sleep=time.sleep, clock=time.clock)
    self.attempts = []
    self._time = time
    self._stop_after_attempt = stop_after_attempt

  def _Call(self, what):
    self.attempts.append((what, self._time.now))
    if len(self.attempts) == self._stop_after_attempt:
      run_processes.CountStop()
    raise resource.RetryableError(f'{what}: 429 Rate Limit Exceeded')

  def _Create(self):
    self._Call('create')

  def _Delete(self):
    self._Call('delete')


def test_a_stop_wakes_a_create_from_its_retry_pause():
  # The stop lands 4.5 s into the 16 s pause before the sixth attempt.
  time = FakeTime(stop_at=1 + 2 + 4 + 8 + 4.5)
  limited = RateLimited(time)
  with pytest.raises(errors.ResourceError, match='the run was stopped'):
    limited.Launch()
  assert [what for what, _ in limited.attempts] == ['create'] * 5
  # Woken at the end of the step the stop landed in (waits.PAUSE_STEP_S:
  # 1 s), not at the end of the pause (31 s).
  assert time.now == 20


def test_a_stop_during_an_attempt_starts_no_pause_and_no_attempt():
  time = FakeTime()
  limited = RateLimited(time, stop_after_attempt=2)
  with pytest.raises(errors.ResourceError, match='not tried again'):
    limited.Launch()
  assert len(limited.attempts) == 2
  assert time.sleeps == [1.0]  # Only the pause before the second attempt.


def test_teardowns_delete_after_a_stop_still_retries_with_its_pauses():
  run_processes.CountStop()  # The run was stopped; teardown began after.
  time = FakeTime()
  limited = RateLimited(time)
  with pytest.raises(errors.ResourceError, match='after 6 attempts'):
    limited.Delete()
  assert [what for what, _ in limited.attempts] == ['delete'] * 6
  assert time.now == 1 + 2 + 4 + 8 + 16
