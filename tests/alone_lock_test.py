"""The suite's lock between pytest-xdist workers (conftest._Alone): what may
run beside what. Each worker is an _Alone of its own on the same directory
(flock locks are per open file, so two in one process exclude each other as
two processes' do); a worker's Enter runs on a thread, and whether it
returns within a moment says whether the lock let it in."""

import os
import threading
import time

import conftest

_MOMENT_S = 0.3  # Long enough to see an Enter that is let in return.
_GUARD_S = 10  # A hang guard for an Enter that must return.


def _Enters(worker, alone=False, own_cgroups=False):
  """Starts worker.Enter on a thread; returns the event it sets once in."""
  entered = threading.Event()

  def Enter():
    worker.Enter(alone, own_cgroups)
    entered.set()
  threading.Thread(target=Enter, daemon=True).start()
  return entered


def _Workers(tmp_path, n):
  return [conftest._Alone(str(tmp_path)) for _ in range(n)]  # pylint: disable=protected-access


def test_own_cgroups_tests_take_turns_beside_ordinary_ones(tmp_path):
  first, second, plain = _Workers(tmp_path, 3)
  first.Enter(False, own_cgroups=True)
  waiting = _Enters(second, own_cgroups=True)
  # An ordinary test runs beside an own_cgroups one; another waits.
  assert _Enters(plain).wait(_GUARD_S)
  assert not waiting.wait(_MOMENT_S)
  first.Leave(next_alone=False)
  assert waiting.wait(_GUARD_S)
  second.Leave(next_alone=False)
  plain.Leave(next_alone=False)


def test_an_alone_test_waits_for_an_own_cgroups_one_and_keeps_it_out(
    tmp_path):
  measuring, alone, later = _Workers(tmp_path, 3)
  measuring.Enter(False, own_cgroups=True)
  alone_in = _Enters(alone, alone=True)
  assert not alone_in.wait(_MOMENT_S)
  measuring.Leave(next_alone=False)
  assert alone_in.wait(_GUARD_S)
  later_in = _Enters(later, own_cgroups=True)
  assert not later_in.wait(_MOMENT_S)
  alone.Leave(next_alone=False)
  assert later_in.wait(_GUARD_S)
  later.Leave(next_alone=False)


def _QueueHolders(tmp_path):
  """How many hold the queue shared (an `alone` test running or queued):
  its file's granted READ flocks in /proc/locks. (Whether any does was not
  enough: the `alone` test running holds it too, so a test that had not
  yet queued looked queued, and under load the ordinary test went first.)"""
  inode = os.stat(tmp_path / 'alone.queue').st_ino
  with open('/proc/locks') as f:
    return sum(1 for line in f
               if '->' not in line and ' READ ' in line and
               line.split()[5].rsplit(':', 1)[-1] == str(inode))


def _Until(condition):
  deadline = time.monotonic() + _GUARD_S
  while not condition():
    assert time.monotonic() < deadline
    time.sleep(0.01)


def test_a_queued_alone_test_goes_before_an_ordinary_one(tmp_path):
  # The race this rules out: the worker whose `alone` test ends takes the
  # gate back for its next, ordinary, test (or another worker waiting for
  # one does) before the queued `alone` test does, which then waits out
  # that test with the other workers idle. Rounds, as the race went
  # either way (without the queue, _Until(_QueueHolders) a 0.1 s sleep: 6 runs
  # of 5 rounds failed, 4 of 6 runs of 3).
  finished, queued, ordinary = _Workers(tmp_path, 3)
  for _ in range(5):
    finished.Enter(alone=True)
    queued_in = _Enters(queued, alone=True)
    _Until(lambda: _QueueHolders(tmp_path) == 2)  # `finished`, `queued`
    ordinary_in = _Enters(ordinary)
    finished.Leave(next_alone=False)
    finished_in = _Enters(finished)
    _Until(lambda: queued_in.is_set() or ordinary_in.is_set() or
           finished_in.is_set())
    assert queued_in.is_set()
    assert not ordinary_in.wait(0.05) and not finished_in.is_set()
    queued.Leave(next_alone=False)
    assert ordinary_in.wait(_GUARD_S) and finished_in.wait(_GUARD_S)
    ordinary.Leave(next_alone=False)
    finished.Leave(next_alone=False)
