"""Latency-capped search over a staircase run: pick a step, then confirm it.

memtier's staircase mode measures every client step of a ramp in one run,
one process start instead of one per load. `StaircasePolicy` takes each
step as a search probe up to the first at or over the cap and confirms the
best one under it; `ReplayThenMeasure` is its `measure` (the steps first,
then the real probe driver); `Parts` splits a ramp into runs of a few steps,
so the runner can stop after the run that crossed the cap. Any tool that
measures a ramp in one run can feed its per-step Measurements here. Pure:
no flags, VMs, I/O or clock.
"""

import dataclasses
from typing import Callable, ClassVar, List, Sequence, Tuple

from perfkitbenchmarker import measurement
from perfkitbenchmarker.search import driver
from perfkitbenchmarker.search import repeats

Load = measurement.Load


# Client steps per memtier run: the ramp runs in parts so that it can stop
# after the part that crossed the cap (each part is one more process start,
# about 0.4 s here; a whole 16-step ramp that crosses at its second step
# spends 28 s on steps past it).
STEPS_PER_RUN = 4


def Parts(clients_start: int, clients_step: int, max_clients: int,
          steps_per_run: int = STEPS_PER_RUN) -> List[Tuple[int, int]]:
  """(first, last) clients per thread of each memtier run of a ramp.

  The ramp's steps are clients_start, + clients_step, ... and max_clients
  last (memtier caps the last step at -c); each run covers up to
  `steps_per_run` of them, at least two (memtier needs --clients-start
  below -c), so a lone last step joins the run before it.
  """
  if clients_start >= max_clients or clients_step < 1 or steps_per_run < 2:
    raise driver.InvalidSearchArgument(
        f'a staircase from {clients_start} to {max_clients} clients by '
        f'{clients_step}, {steps_per_run} steps per run: the start must be '
        'below the top, the step and the steps per run positive (2 or more).')
  steps = list(range(clients_start, max_clients, clients_step)) + [
      max_clients]
  parts = [steps[i:i + steps_per_run]
           for i in range(0, len(steps), steps_per_run)]
  if len(parts) > 1 and len(parts[-1]) == 1:
    last = parts.pop()
    parts[-1] += last
  return [(part[0], part[-1]) for part in parts]


@dataclasses.dataclass(frozen=True)
class StaircasePolicy:
  """Replays staircase steps as search probes and confirms the best.

  Attributes:
    steps: the loads of the staircase's steps, in the order they ran.
    confirm_repeats: ordinary probes at the chosen step's load (0: take the
      step's own figures).
    max_backoffs: lower steps tried when a confirmation fails.
  """
  NAME: ClassVar[str] = 'staircase'

  steps: Tuple[Load, ...]
  confirm_repeats: int = 0
  max_backoffs: int = 2

  def __post_init__(self):
    if not self.steps:
      raise driver.InvalidSearchArgument('a staircase needs at least one step.')
    driver.CheckWholeNumbers(vars(self), confirm_repeats=0, max_backoffs=0)

  def Steps(self, cap_ms: float) -> driver.PolicySteps:
    records = []
    for i, load in enumerate(self.steps):
      record = yield driver.ProbeRequest(
          load, driver.ROLE_SEARCH, f'staircase step {i}')
      records.append(record)
      if not record.under_cap:
        break  # past the cap: higher steps only queue more
    under = [r for r in records if r.under_cap]
    if not under:
      return driver.Outcome(
          f'the first of the {len(self.steps)} staircase steps was at or over '
          f'the {cap_ms} ms cap')
    best = max(under, key=lambda r: r.throughput)
    notes = [f'best staircase step under the cap: {best.load.Describe()} '
             f'({best.throughput:,.0f} ops/s, {best.latency_ms:.3f} ms)']
    if len(records) < len(self.steps):
      notes.append(f'stopped at step {len(records) - 1} of '
                   f'{len(self.steps)}, the first over the cap')
    if not self.confirm_repeats:
      return driver.Outcome('; '.join(notes + ['unconfirmed']),
                            best.index)
    rule = repeats.RepeatRule.Fixed(self.confirm_repeats)
    candidate = best
    tried = []
    left = rule.max_reruns
    last_disturbed = records[-1].disturbed
    for _ in range(1 + self.max_backoffs):
      done = yield from rule.Run(candidate.load, reruns_left=left,
                                 after_disturbed=last_disturbed)
      left, last_disturbed = done.reruns_left, done.counted[-1].disturbed
      tried.append((candidate, done))
      if done.latency_ms < cap_ms:
        notes.append(f'confirmed {candidate.load.Describe()}: '
                     f'{done.Describe()}, {done.LatencyWords("averaging")}')
        return driver.Outcome(
            '; '.join(notes), candidate.index,
            tuple(r.index for r in done.counted),
            tuple(r.index for _, d in tried for r in d.excluded))
      notes.append(f'repeats at {candidate.load.Describe()} '
                   f'{done.LatencyWords()}, not under the {cap_ms} ms cap')
      lower = [r for r in under if r.load.connections <
               candidate.load.connections]
      if not lower:
        break
      candidate = max(lower, key=lambda r: r.throughput)
    # An answer all the same, unconfirmed: the step whose repeats came
    # nearest to holding, its figure the mean of every probe at its load
    # but the disturbed repeats set aside (driver._Result).
    nearest, done = min(tried, key=lambda t: t[1].latency_ms)
    # The cap with its statistic ('1 ms p99'): the verdict's reason.
    cap = measurement.LatencyCap(cap_ms, done.counted[0].statistic).Short()
    reason = (f'no step held under the {cap} cap when repeated '
              f'(nearest: {nearest.load.Describe()}, {done.MergedWords()})')
    notes.append(reason)
    return driver.Outcome(
        '; '.join(notes), nearest.index, tuple(r.index for r in done.counted),
        tuple(r.index for _, d in tried for r in d.excluded),
        unconfirmed_reason=reason)


class ReplayThenMeasure:
  """`measure` that serves the staircase's steps first, then real probes.

  The n-th call for n < len(steps) must ask for the n-th step's load (as
  StaircasePolicy does) and gets that step's measurement; later calls, and
  a call for an earlier step's load (a repeat: the policy stopped walking),
  go to `measure`.
  """

  def __init__(self, steps: Sequence[measurement.Measurement],
               measure: Callable[[Load], measurement.Measurement]):
    self._steps: List[measurement.Measurement] = list(steps)
    self._measure = measure
    self._served = 0

  def __call__(self, load: Load) -> measurement.Measurement:
    if self._served < len(self._steps):
      step = self._steps[self._served]
      if step.load == load:
        self._served += 1
        return step
      if not any(s.load == load for s in self._steps[:self._served]):
        raise driver.InvalidSearchArgument(
            f'staircase step {self._served} measured {step.load.Describe()} '
            f'but {load.Describe()} was asked for; replay the steps in order.')
      # A repeat of a served step: the policy stopped walking (past the
      # cap), so the remaining steps are not wanted.
      self._served = len(self._steps)
    return self._measure(load)
