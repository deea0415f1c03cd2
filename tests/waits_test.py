"""waits.py: tenacity stops on an injected clock, and Poll."""

from perfkitbenchmarker import vm_util
from perfkitbenchmarker import waits


class FakeTime:
  """A clock that moves only when slept on."""

  def __init__(self):
    self.now = 100.0
    self.sleeps = []

  def clock(self):
    return self.now

  def sleep(self, seconds):
    self.sleeps.append(seconds)
    self.now += seconds


def test_poll_returns_the_first_result_that_is_done():
  t = FakeTime()
  answers = iter([1, 2, 3, 4])
  assert waits.Poll(lambda: next(answers), lambda n: n >= 3, 60, 5, t.clock,
                    t.sleep) == (True, 3)
  assert t.sleeps == [5, 5]


def test_poll_gives_up_past_its_deadline_on_the_injected_clock():
  t = FakeTime()
  calls = []
  done, last = waits.Poll(lambda: calls.append(t.now) or len(calls),
                          lambda n: False, 10, 4, t.clock, t.sleep)
  assert not done and last == len(calls)
  # Checked at 100, 104, 108 and 112 (past 110): no sleep after the last.
  assert calls == [100, 104, 108, 112] and t.sleeps == [4, 4, 4]


def test_poll_inclusive_stops_at_the_deadline_itself():
  t = FakeTime()
  calls = []
  waits.Poll(lambda: calls.append(t.now), lambda _: False, 10, 5, t.clock,
             t.sleep, inclusive=True)
  assert calls == [100, 105, 110]


def test_an_exception_from_the_check_ends_the_wait_at_once():
  t = FakeTime()

  def Check():
    raise ValueError('broken')

  try:
    waits.Poll(Check, bool, 60, 1, t.clock, t.sleep)
  except ValueError as e:
    assert str(e) == 'broken'
  else:
    raise AssertionError('no exception')
  assert t.sleeps == []


def test_run_stopped_sees_a_stop_made_after_it():
  stopped = waits.RunStopped()
  assert not stopped()
  vm_util.StopChildren()  # No command of this test runs: it only counts.
  assert stopped()
  assert not waits.RunStopped()()


def test_pause_sleeps_its_whole_time_in_steps_when_not_stopped():
  t = FakeTime()
  assert waits.Pause(2.5, t.sleep, waits.RunStopped(), step_s=1.0)
  assert t.sleeps == [1.0, 1.0, 0.5]


def test_pause_ends_at_the_step_after_a_stop():
  t = FakeTime()
  stopped = waits.RunStopped()

  def Sleep(seconds):
    t.sleep(seconds)
    if t.now >= 102:  # The stop lands in the second step of 30 s.
      vm_util.StopChildren()

  assert not waits.Pause(30, Sleep, stopped, step_s=1.0)
  assert t.sleeps == [1.0, 1.0]
