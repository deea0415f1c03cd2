"""One adaptive search's state machine: the phases behind `AdaptiveStepPolicy`.

`adaptive.AdaptiveStepPolicy` holds the parameters, the load mapping and
the probe estimate; `AdaptiveRun` is what one search does with them, phase
by phase (grow or shrink, approach the target, decide and confirm), yielding
`driver.ProbeRequest`s. The seam: a new phase or a new decision rule changes
this module only, and reads the policy's parameters through its public
attributes and methods (`LoadForClients`, `GrownClients`, `HalvedClients`,
`most_repeats`, ...). Pure: no flags, VMs, I/O, sleep or clock.
"""

import math
import statistics
from typing import Dict, List, Optional, TYPE_CHECKING

from perfkitbenchmarker import measurement
from perfkitbenchmarker.search import driver

if TYPE_CHECKING:  # pragma: no cover
  from perfkitbenchmarker.search import adaptive  # pylint: disable=g-bad-import-order

ProbeRecord = driver.ProbeRecord


def RelativeNoise(result: measurement.Measurement, floor: float) -> float:
  """A probe's throughput noise as a fraction, never below `floor`.

  It is the coefficient of variation of the per-second operation counts,
  warm-up seconds left out. The CV rather than the standard error of the mean:
  what separates two probes is run-to-run variation (process placement,
  neighbours), which the within-probe spread bounds from below far better
  than the standard error does. The floor covers short or missing series.

  A probe flagged `interference` (foreign processes took a share f of the
  run's cores, `foreign_cpu_pct`) may be off by up to that share, so its
  noise is at least f: comparing it with another probe cannot show a gain
  that the foreign load could have made (issue 23: on a busy machine the
  search bisected on such "gains", spending probes on noise).
  """
  if result.metadata.get('interference'):
    foreign = result.metadata.get('foreign_cpu_pct')
    if isinstance(foreign, (int, float)) and foreign > 0:
      floor = max(floor, min(0.9, foreign / 100))
  ops = [s.ops for s in result.per_second if not s.warmup]
  if len(ops) < 2:
    return floor
  mean = statistics.fmean(ops)
  if mean <= 0:
    return floor
  return max(floor, statistics.stdev(ops) / mean)


# Loads whose repeats decide one round (see `AdaptiveRun._Contenders`): the
# top load and the two ends of its noise band.
MAX_CONTENDERS = 3
# For `ProbeCounts.typical`: loads confirmed in a typical search.
TYPICAL_CONTENDERS = 2


class AdaptiveRun:
  """The state of one search. Loads are counted in clients per thread.

  A bracket (lo, hi) holds the most clients known under the target and the
  fewest known at or over it (None: not found yet).
  """

  def __init__(self, policy: 'adaptive.AdaptiveStepPolicy', cap_ms: float):
    self._policy = policy
    self._cap_ms = cap_ms
    self._target_ms = cap_ms * policy.cap_margin
    self._min = policy.min_clients
    self._max = policy.max_clients
    self._start = policy.start_clients
    self._search: Dict[int, ProbeRecord] = {}
    self._notes: List[str] = []
    self._reruns_left = policy.confirm_max_reruns

  def Run(self) -> driver.PolicySteps:
    first = yield from self._Probe(self._start, 'start')
    if self._UnderTarget(first):
      lo, hi = yield from self._Grow(self._start)
    else:
      lo, hi = yield from self._Shrink(self._start)
    if lo is not None:
      lo, hi = yield from self._ApproachTarget(lo, hi)
    saturated = sorted(c for c, r in self._search.items()
                       if r.measurement.client_saturated)
    if saturated:
      self._notes.append(
          f'load generator CPU saturated from {self._Conns(saturated[0])} '
          'connections: the plateau there is the client\'s, not the '
          'server\'s; treat the result as a lower bound')
    return (yield from self._DecideAndConfirm())

  # Phases.

  def _Grow(self, clients: int):
    """Multiplies the load until the target, a plateau or the maximum."""
    while clients < self._max:
      grown = self._policy.GrownClients(clients)
      before = self._search[clients]
      record = yield from self._Probe(grown, 'growth')
      if not self._UnderTarget(record):
        self._notes.append(
            f'target {self._target_ms:.3g} ms crossed between '
            f'{self._Conns(clients)} and {self._Conns(grown)} connections')
        return clients, grown
      if not self._Gained(before, record):
        self._notes.append(
            f'throughput plateaued near {record.throughput:,.0f} ops/s at '
            f'{self._Conns(grown)} connections')
        return grown, None
      clients = grown
    self._notes.append(f'reached max_connections={self._policy.max_connections}'
                       ' still under the target')
    return clients, None

  def _Shrink(self, clients: int):
    """Halves an over-target start down to the minimum."""
    hi = clients
    while clients > self._min:
      clients = self._policy.HalvedClients(clients)
      record = yield from self._Probe(clients, 'halving')
      if self._UnderTarget(record):
        self._notes.append(
            f'start was over the target; under it at {self._Conns(clients)} '
            'connections')
        return clients, hi
      hi = clients
    self._notes.append(
        f'over the {self._target_ms:.3g} ms target down to min_connections='
        f'{self._policy.min_connections}')
    return None, hi

  def _ApproachTarget(self, lo: int, hi: Optional[int]):
    """Closes in on the target from a plateau or a rising bracket."""
    if hi is not None and self._Gained(self._search[lo], self._search[hi]):
      self._notes.append('throughput still rising at the target: bisecting')
      return (yield from self._Bisect(lo, hi))
    # Extrapolate from whichever end is nearer the target in latency.
    anchor = min((self._search[c] for c in (lo, hi) if c is not None),
                 key=lambda r: abs(math.log(max(r.latency_ms, 1e-9) /
                                            self._target_ms)))
    predictions = 0
    for attempt in range(1 + self._policy.max_corrections):
      predicted = self._LittlePrediction(anchor)
      if predicted is None:
        break
      if hi is None:
        predicted = min(predicted, self._max)
      elif predicted >= hi:
        break  # Inconsistent with what hi measured; leave it to bisection.
      if predicted <= lo or predicted in self._search:
        break
      record = yield from self._Probe(
          predicted, 'Little prediction' if attempt == 0 else
          'Little correction')
      predictions += 1
      if self._UnderTarget(record):
        lo = predicted
        # Close enough: within the tolerance, or within the probe's own
        # noise (a disturbed probe's latency is as uncertain as its foreign
        # share: another correction would chase that noise).
        slack = max(self._policy.bracket_tolerance,
                    RelativeNoise(record.measurement, 0.0))
        close = record.latency_ms >= self._target_ms * (1 - slack)
        if close or lo == self._max:
          break
      else:
        hi = predicted
      if hi is not None and self._Narrow(lo, hi):
        break
      anchor = record
    if predictions:
      over = f', over it at {self._Conns(hi)}' if hi is not None else ''
      self._notes.append(
          f'{predictions} Little\'s-law probe(s): under the target at '
          f'{self._Conns(lo)} connections{over}')
    if (hi is not None and not self._Narrow(lo, hi) and
        self._Gained(self._search[lo], self._search[hi])):
      lo, hi = yield from self._Bisect(lo, hi)
    return lo, hi

  def _Bisect(self, lo: int, hi: int):
    for _ in range(self._policy.max_bisections):
      if self._Narrow(lo, hi):
        break
      middle = (lo + hi) // 2
      if middle in self._search:
        break
      record = yield from self._Probe(middle, 'bisection')
      if self._UnderTarget(record):
        lo = middle
      else:
        hi = middle
    return lo, hi

  def _DecideAndConfirm(self):
    ceiling = self._max + 1  # loads at or above a failed confirmation are out
    held = {}  # clients -> RepeatSet whose average latency was under the cap
    failed = {}  # clients -> RepeatSet whose average was at or over it
    for attempt in range(1 + self._policy.max_backoffs):
      candidates = self._Candidates(ceiling)
      if not candidates:
        break
      contenders = self._Contenders(candidates)
      if not self._policy.confirm_repeats:
        top = max(candidates.values(), key=lambda r: r.throughput)
        self._notes.append(f'chose {top.load.Describe()} unconfirmed')
        return driver.Outcome('; '.join(self._notes), top.index)
      round_failed = {}
      for clients in contenders:
        if clients in held or clients in failed:
          continue
        if held and not self._WorthAnotherSet(clients, held):
          continue
        repeats = yield from self._Confirm(clients)
        if repeats.latency_ms < self._cap_ms:
          held[clients] = repeats
        else:
          failed[clients] = round_failed[clients] = repeats
          self._notes.append(
              f'repeats at {self._Conns(clients)} connections averaged '
              f'{repeats.latency_ms:.3f} ms, not under the {self._cap_ms} ms '
              'cap')
      if not round_failed:
        break
      ceiling = min(round_failed)
      backed_off = yield from self._BackOff(
          ceiling, round_failed[ceiling].latency_ms)
      if held and not backed_off:
        break
    excluded = tuple(r.index for s in list(held.values()) +
                     list(failed.values()) for r in s.excluded)
    if not held:
      if not failed:
        self._notes.append(
            f'every probe was at or over the {self._cap_ms} ms cap: no '
            'capped throughput')
        return driver.Outcome('; '.join(self._notes))
      # An answer all the same, unconfirmed: the repeated load that came
      # nearest to holding, its figure the mean of every probe there.
      clients = min(failed, key=lambda c: failed[c].latency_ms)
      reason = (f'no load held under the {self._cap_ms:g} ms cap when '
                f'repeated (nearest: {self._Conns(clients)} connections, '
                f'{failed[clients].latency_ms:.3f} ms)')
      self._notes.append(reason)
      return driver.Outcome('; '.join(self._notes),
                            self._search[clients].index,
                            tuple(r.index for r in failed[clients].counted),
                            excluded, unconfirmed_reason=reason)
    # Every held load is a valid answer; the repeats, free of the selection
    # bias of the search probes, pick among them.
    clients = max(held, key=lambda c: held[c].mean)
    self._notes.append(
        f'confirmed {self._policy.LoadForClients(clients).Describe()} '
        f'({self._Conns(clients)} connections): '
        f'{held[clients].Describe()}, averaging '
        f'{held[clients].latency_ms:.3f} ms')
    return driver.Outcome('; '.join(self._notes),
                          self._search[clients].index,
                          tuple(r.index for r in held[clients].counted),
                          excluded)

  def _WorthAnotherSet(self, clients: int, held) -> bool:
    """Whether a further contender could beat what is held.

    Only when its search probe lies more than one probe's noise (the held
    repeats' standard deviation) above the best held mean: within that, a
    single probe says nothing about which load is better. On a quiet server
    the spread is small and the noise band's ends are still repeated; on a
    noisy one they fall within it, which saves whole sets of repeats.
    """
    if not self._policy.noise_aware:
      return True
    best = max(held.values(), key=lambda s: s.mean)
    spread = best.stdev
    if self._search[clients].throughput > best.mean + spread:
      return True
    self._notes.append(
        f'{self._Conns(clients)} connections not repeated: its probe '
        f'({self._search[clients].throughput:,.0f} ops/s) is within one '
        f'repeat\'s spread ({spread:,.0f}) of the held {best.mean:,.0f}')
    return False

  def _BackOff(self, failed: int, latency_ms: float):
    """Probes where Little's law puts the target below a failed load.

    Only when that lies above every load already known under it; otherwise
    the next round simply falls back to those loads.
    """
    lower = [c for c in self._search if c < failed]
    clients = max(self._min, math.floor(failed * self._target_ms / latency_ms))
    if clients < failed and clients not in self._search and (
        not lower or clients > max(lower)):
      yield from self._Probe(clients, 'back-off')
      return True
    return False

  # Helpers.

  def _Probe(self, clients: int, note: str,
             role: str = driver.ROLE_SEARCH):
    record = yield driver.ProbeRequest(
        self._policy.LoadForClients(clients), role, note)
    if role == driver.ROLE_SEARCH:
      self._search[clients] = record
    return record

  def _Confirm(self, clients: int):
    """Repeats one load by the policy's RepeatRule (search/repeats.py);
    re-runs of disturbed repeats are a budget of the whole search."""
    done = yield from self._policy.repeat_rule.Run(
        self._policy.LoadForClients(clients), reruns_left=self._reruns_left)
    self._reruns_left = done.reruns_left
    return done

  def _Candidates(self, ceiling: int) -> Dict[int, ProbeRecord]:
    """Search probes below `ceiling` under the target, else under the cap."""
    below = {c: r for c, r in self._search.items() if c < ceiling}
    return ({c: r for c, r in below.items() if self._UnderTarget(r)} or
            {c: r for c, r in below.items() if r.under_cap})

  def _Contenders(self, candidates: Dict[int, ProbeRecord]) -> List[int]:
    """The top load by throughput and the loads at the ends of its noise band.

    Single probes within the noise of the top cannot be told apart, so the
    repeats decide among them. On a plateau the true maximum lies at an end of
    that band (its first load when throughput then sags, its last when it
    keeps creeping up) or at the top, so only those are worth repeats.
    """
    top = max(candidates, key=lambda c: candidates[c].throughput)
    noise = RelativeNoise(candidates[top].measurement,
                          self._policy.noise_floor)
    floor = candidates[top].throughput * (1 - noise)
    band = [c for c, r in candidates.items() if r.throughput >= floor]
    # The top first: the others are repeated only if they could beat it
    # (_WorthAnotherSet).
    return sorted({top, min(band), max(band)},
                  key=lambda c: -candidates[c].throughput)

  def _Gained(self, before: ProbeRecord, after: ProbeRecord) -> bool:
    """Whether `after` has more throughput than `before`, beyond noise."""
    noise = max(RelativeNoise(before.measurement, self._policy.noise_floor),
                RelativeNoise(after.measurement, self._policy.noise_floor))
    return after.throughput > before.throughput * (1 + noise)

  def _LittlePrediction(self, record: ProbeRecord) -> Optional[int]:
    """Clients per thread at which Little's law puts the target latency.

    Uses the throughput the probe's own latency implies (outstanding /
    latency), so a load generator whose latency misses some client-side wait
    still extrapolates consistently. Rounds down to stay under the target.
    """
    if record.latency_ms <= 0:
      return None
    outstanding = (record.load.outstanding_requests * self._target_ms /
                   record.latency_ms)
    per_client = self._policy.unit * self._policy.pipeline
    return max(self._min, math.floor(outstanding / per_client))

  def _Narrow(self, lo: int, hi: int) -> bool:
    return hi - lo <= 1 or hi / lo - 1 <= self._policy.bracket_tolerance

  def _UnderTarget(self, record: ProbeRecord) -> bool:
    return record.under_cap and record.latency_ms < self._target_ms

  def _Conns(self, clients: int) -> int:
    return self._policy.LoadForClients(clients).connections
