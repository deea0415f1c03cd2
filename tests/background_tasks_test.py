"""background_tasks.RunInLanes: lanes run at once, one lane in order.

Concurrency is shown with barriers (a barrier of N parties only opens when N
calls are inside it at once), never with wall-clock timings.
"""

import threading

import pytest

from perfkitbenchmarker import background_tasks
from perfkitbenchmarker import errors

BARRIER_TIMEOUT_S = 10


def test_different_lanes_run_at_once():
  barrier = threading.Barrier(4, timeout=BARRIER_TIMEOUT_S)

  def Meet(item):
    barrier.wait()  # BrokenBarrierError unless all 4 are here together.
    return item * 10

  assert background_tasks.RunThreaded(Meet, [1, 2, 3, 4]) == [10, 20, 30, 40]


def test_one_lane_runs_in_order_never_overlapping():
  inside = {'a': 0, 'b': 0}
  most = {'a': 0, 'b': 0}
  order = []
  lock = threading.Lock()
  both_lanes = threading.Barrier(2, timeout=BARRIER_TIMEOUT_S)

  def Work(item):
    lane, n = item
    with lock:
      inside[lane] += 1
      most[lane] = max(most[lane], inside[lane])
      order.append(item)
    if n == 0:
      both_lanes.wait()  # The two lanes' first items meet: lanes overlap.
    with lock:
      inside[lane] -= 1

  items = [('a', 0), ('b', 0), ('a', 1), ('b', 1), ('a', 2)]
  background_tasks.RunEach(Work, items, lane=lambda item: item[0])
  assert most == {'a': 1, 'b': 1}
  assert [i for i in order if i[0] == 'a'] == [('a', 0), ('a', 1), ('a', 2)]


def test_max_workers_bounds_the_lanes_running():
  running = 0
  most = 0
  lock = threading.Lock()

  def Work(_):
    nonlocal running, most
    with lock:
      running += 1
      most = max(most, running)
    threading.Event().wait(0.01)
    with lock:
      running -= 1

  background_tasks.RunEach(Work, range(12), max_concurrent_threads=3)
  assert 1 <= most <= 3


def test_every_item_runs_and_failures_are_collected():
  ran = []

  def Work(item):
    ran.append(item)
    if item % 2:
      raise errors.ProcessError(f'vm-{item} failed')
    return item

  outcomes = background_tasks.RunInLanes(Work, range(5),
                                         lane=lambda item: 'one')
  assert sorted(ran) == [0, 1, 2, 3, 4]
  assert [o.error is None for o in outcomes] == [True, False, True, False,
                                                  True]
  with pytest.raises(background_tasks.ParallelError) as raised:
    background_tasks.RaiseFirst(outcomes)
  assert str(raised.value) == '2 failed: vm-1 failed; vm-3 failed'
  assert '\n' not in str(raised.value)
  assert isinstance(raised.value, errors.Error)  # One line from the driver.


def test_a_single_failure_is_raised_as_itself():
  with pytest.raises(errors.PrerequisiteError, match='vm-2 has no apt'):
    background_tasks.RunThreaded(
        lambda i: (_ for _ in ()).throw(
            errors.PrerequisiteError(f'vm-{i} has no apt')) if i == 2 else i,
        [1, 2, 3])


def test_a_bug_keeps_its_own_type_and_traceback():

  def Work(item):
    if item == 1:
      raise errors.ProcessError('vm-1 failed')
    if item == 2:
      raise KeyError('bug')
    return item

  with pytest.raises(KeyError):
    background_tasks.RunThreaded(Work, [0, 1, 2])


def test_names_prefix_each_failure_when_given():
  with pytest.raises(background_tasks.ParallelError,
                     match=r'^2 failed: x: no; y: no$'):
    background_tasks.RunThreaded(
        lambda i: (_ for _ in ()).throw(errors.ProcessError('no')),
        ['x', 'y'], name=str)


def test_failures_that_are_all_bad_input_are_bad_input_in_one_bounded_line():
  # Two static machines each refusing their login key (ssh_vm.KeyRefused,
  # a UsageError: exit 2 alone) made a ParallelError, exit 1, as if the run
  # had failed.
  names = [f'servers-{i}' for i in range(5)]
  with pytest.raises(errors.UsageError) as raised:
    background_tasks.RunThreaded(
        lambda n: (_ for _ in ()).throw(errors.UsageError(f'{n} refused')),
        names)
  assert isinstance(raised.value, background_tasks.ParallelError)
  assert str(raised.value) == (
      '5 failed: servers-0 refused; servers-1 refused; servers-2 refused; '
      'and 2 more (every one is in pkb.log)')

  # One failure that is not bad input keeps them a failure (exit 1).
  def Work(item):
    if item == 'a':
      raise errors.UsageError('a refused')
    raise errors.ProcessError(f'{item} failed')

  with pytest.raises(background_tasks.ParallelError) as raised:
    background_tasks.RunThreaded(Work, ['a', 'b'])
  assert not isinstance(raised.value, errors.UsageError)
  assert str(raised.value) == '2 failed: a refused; b failed'


def test_nothing_to_do():
  assert background_tasks.RunThreaded(lambda i: i, []) == []


def test_a_stopped_run_starts_no_further_item_in_any_lane():
  from perfkitbenchmarker import vm_util  # pylint: disable=g-import-not-at-top
  ran = []

  def Work(item):
    ran.append(item)
    if item == 'stop':
      vm_util.StopChildren()  # What a signal or the deadline does.

  outcomes = background_tasks.RunInLanes(
      Work, ['stop', 'after'], lane=lambda item: 'one lane')
  assert ran == ['stop']
  assert outcomes[0].error is None
  assert 'not started: the run was stopped' in str(outcomes[1].error)


def test_items_left_running_by_an_interrupted_caller_are_awaited(
    monkeypatch):
  started = threading.Event()
  release = threading.Event()
  ran = []

  def Work(item):
    if item == 'slow':
      started.set()
      release.wait(BARRIER_TIMEOUT_S)
    ran.append(item)

  def InterruptedWait(futures):
    del futures
    started.wait(BARRIER_TIMEOUT_S)
    raise KeyboardInterrupt  # Ctrl-C while the caller waits.

  monkeypatch.setattr(background_tasks.concurrent.futures, 'wait',
                      InterruptedWait)
  with pytest.raises(KeyboardInterrupt):
    background_tasks.RunInLanes(
        Work, ['slow', 'next', 'other'],
        lane=lambda item: 'b' if item == 'other' else 'a')
  assert background_tasks.Stragglers() >= 1  # 'slow' at least.
  release.set()
  assert background_tasks.AwaitStragglers(BARRIER_TIMEOUT_S) == 0
  assert background_tasks.Stragglers() == 0
  # The lane's next item never started: its caller had stopped waiting.
  assert 'slow' in ran and 'next' not in ran
