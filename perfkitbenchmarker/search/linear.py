"""The linear step-up policy: +N threads per probe until the cap.

This is how the published Redis-on-T2D study searched (one more memtier
thread per 30 s probe until average latency passed 1 ms); it is kept to
reproduce such studies and as the baseline the adaptive policy is measured
against. Pure: no flags, VMs, I/O or clock.
"""

import dataclasses
from typing import ClassVar

from perfkitbenchmarker import measurement
from perfkitbenchmarker.search import driver
from perfkitbenchmarker.search import repeats

Load = measurement.Load

@dataclasses.dataclass(frozen=True)
class LinearStepPolicy:
  """Adds threads at a fixed step until the cap, as the Redis-on-T2D study did.

  Probes min_threads, min_threads + thread_increment, ... up to max_threads,
  each with `clients` connections per thread, and stops after the first
  probe at or over the cap. The answer is the highest-throughput probe under
  the cap anywhere in the walk (a dip does not hide an earlier peak). A first
  step over the cap steps down instead, halving the connections down to
  `min_connections` (2 for a tool that needs one per command of a mix).
  `confirm_repeats` > 0 repeats the answer's load (repeats.RepeatRule) and
  reports their mean; 0, as the published study did, the single probe:
  `unconfirmed` by design.
  """
  NAME: ClassVar[str] = 'linear'

  min_threads: int
  max_threads: int
  thread_increment: int
  clients: int
  pipeline: int = 1
  confirm_repeats: int = 0
  min_connections: int = 1

  def __post_init__(self):
    driver.CheckWholeNumbers(
        vars(self), min_threads=1, max_threads=1, thread_increment=1,
        clients=1, pipeline=1, confirm_repeats=0, min_connections=1)
    if self.min_threads > self.max_threads:
      raise driver.InvalidSearchArgument(
          f'min_threads={self.min_threads} is above max_threads='
          f'{self.max_threads}; lower min_threads or raise max_threads.')

  def Steps(self, cap_ms: float) -> driver.PolicySteps:
    records = []
    threads = self.min_threads
    while True:
      load = Load(threads, self.clients, self.pipeline)
      record = yield driver.ProbeRequest(load, driver.ROLE_SEARCH,
                                         f'{threads} threads')
      records.append(record)
      if not record.under_cap:
        reason = (f'{measurement.StatisticName(record.statistic)} latency '
                  f'{record.latency_ms:.3f} ms reached the {cap_ms} ms cap at '
                  f'{load.Describe()}')
        if (record.latency_ms < cap_ms and
            record.worst_second_ms is not None):
          # Over in a second only (driver._HeldUnderCap): the whole's
          # figure did not reach the cap, its worst second's did.
          reason = (f'{measurement.StatisticName(record.statistic)} latency '
                    f'{record.latency_ms:.3f} ms at {load.Describe()}, under '
                    f'the {cap_ms} ms cap as a whole, but its worst second\'s '
                    f'{record.worst_second_ms:.3f} ms reached it')
        break
      if threads + self.thread_increment > self.max_threads:
        reason = (f'reached max_threads={self.max_threads} without reaching '
                  f'the {cap_ms} ms cap')
        break
      threads += self.thread_increment
    if len(records) == 1 and not records[0].under_cap:
      step_down = yield from self._StepDown(records[0].load)
      records += step_down
      under = [r for r in step_down if r.under_cap]
      reason += ('; the first step was over the cap, so the walk stepped '
                 'down, halving connections: ' + (
                     f'under it at {under[0].load.Describe()}' if under
                     else f'still over at {step_down[-1].load.Describe()}'
                     if step_down else 'nothing lower to try'))
    best_index = driver.HighestUnderCapIndex(records)
    if best_index is None:
      reason += '; no probe was under the cap'
    if best_index is None or not self.confirm_repeats:
      return driver.Outcome(stop_reason=reason, best_index=best_index)
    load = records[best_index].load
    rule = repeats.RepeatRule.Fixed(self.confirm_repeats)
    done = yield from rule.Run(load, after_disturbed=records[-1].disturbed)
    over = sum(1 for r in done.counted if not r.under_cap)
    reason += (f'; {done.Describe()} at {load.Describe()}, {over} over the '
               'cap')
    unconfirmed = None
    if done.latency_ms >= cap_ms:
      unconfirmed = (f'repeats at {load.Describe()} {done.LatencyWords()}, '
                     f'not under the {cap_ms:g} ms cap')
    return driver.Outcome(stop_reason=reason, best_index=best_index,
                   confirmation_indices=tuple(r.index for r in done.counted),
                   excluded_indices=tuple(r.index for r in done.excluded),
                   unconfirmed_reason=unconfirmed)

  def _StepDown(self, over: Load):
    """Halves the connections of an over-cap first step until a probe is
    under the cap or `min_connections` is reached: clients per thread first,
    then threads. Returns the probes it took."""
    records = []
    threads, clients = over.threads, over.clients
    while threads * clients > self.min_connections:
      if clients > 1:
        clients = max(clients // 2,
                      -(-self.min_connections // threads))  # ceil
      else:
        threads = max(threads // 2, self.min_connections)
      load = Load(threads, clients, self.pipeline)
      record = yield driver.ProbeRequest(load, driver.ROLE_SEARCH,
                                         f'step-down to {load.Describe()}')
      records.append(record)
      if record.under_cap:
        break
    return records
