"""The suite's lock between pytest-xdist workers (conftest._Alone): what may
run beside what. Each worker is an _Alone of its own on the same directory
(flock locks are per open file, so two in one process exclude each other as
two processes' do); a worker's Enter runs on a thread, and whether it
returns within a moment says whether the lock let it in."""

import threading

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
