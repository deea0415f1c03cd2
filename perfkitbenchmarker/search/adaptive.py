"""Adaptive latency-capped search: grow, predict with Little's law, confirm.

A closed-loop Redis server reaches its throughput plateau with a few dozen
connections but crosses a 1 ms cap only past a hundred, so a linear walk
spends most probes on the flat part. This policy doubles the connections
until a plateau or the target (cap x margin), predicts the target with
Little's law, bisects only while throughput still rises, and confirms the
answer with repeats (repeats.RepeatRule). Decisions use the target, not the
cap, so a probe that landed under the cap by luck does not become the answer.
The rules and why: docs/search.md ("Policies", "Searches under noise").

`AdaptiveRun` is one search's state, phase by phase: a new phase or
decision rule changes it alone. Pure: no flags, VMs, I/O, sleep or clock.
"""

import dataclasses
import math
import statistics
from typing import ClassVar, Dict, List, Optional, Tuple

from perfkitbenchmarker import measurement
from perfkitbenchmarker.search import driver
from perfkitbenchmarker.search import repeats

Load = measurement.Load
ProbeRecord = driver.ProbeRecord
InvalidSearchArgument = driver.InvalidSearchArgument


def RelativeNoise(result: measurement.Measurement, floor: float) -> float:
  """A probe's throughput noise as a fraction, never below `floor`.

  The coefficient of variation of the per-second operation counts (warm-up
  left out), not the standard error: what separates two probes is
  run-to-run variation, which the within-probe spread bounds far better. A
  probe flagged `interference` (foreign processes took a share f of the
  run's cores) has noise at least f, so no gain the foreign load could have
  made counts (issue 23: the search bisected on such "gains").
  """
  if result.metadata.get('interference'):
    foreign = result.metadata.get('foreign_cpu_pct')
    if isinstance(foreign, (int, float)) and foreign > 0:
      floor = max(floor, min(0.9, foreign / 100))
  # Complete seconds only: memtier's last holds only the replies still in
  # flight (tens of operations), which alone made every probe's noise ~0.85.
  ops = [s.ops for s in result.per_second if not s.warmup and s.complete]
  if len(ops) < 2 or statistics.fmean(ops) <= 0:
    return floor
  return max(floor, statistics.stdev(ops) / statistics.fmean(ops))


# Back-offs after a failed hold: one, then the answer stays (unconfirmed).
MAX_HOLD_BACKOFFS = 1
# Loads whose repeats decide one round (see `AdaptiveRun._Contenders`): the
# top load and the two ends of its noise band.
MAX_CONTENDERS = 3
# For `ProbeCounts.typical`, measured: the default search on local Redis
# took 2.2-2.5 search probes and one set of repeats (5.2-5.5 probes in all,
# 5-7 per search, with redis-benchmark and with memtier; docs/search.md,
# "Probes per study against the floor", scripts/bench_search_floor.py).
TYPICAL_SEARCH_PROBES = 3
TYPICAL_REPEAT_SETS = 1


@dataclasses.dataclass(frozen=True)
class ProbeCounts:
  """Probes one search takes: at fewest (a quiet server settled by its first
  probes), typically (for time and cost estimates) and at most (every phase
  to its bound, before any probe budget)."""
  fewest: int
  typical: int
  most: int

  def Capped(self, max_probes: int) -> 'ProbeCounts':
    """The counts under a probe budget, which ends a search early."""
    return ProbeCounts(*(min(n, max_probes)
                         for n in dataclasses.astuple(self)))


@dataclasses.dataclass(frozen=True)
class AdaptiveStepPolicy:
  """Geometric growth, Little's-law prediction, bisection, confirmation.

  Attributes (the rest are named for what they bound):
    threads: load generator threads; connections vary through clients.
    cap_margin: decisions aim under cap_ms x cap_margin (the target).
    noise_floor: smallest relative throughput noise assumed.
    bracket_tolerance: stop refining when the bracket's relative width, or a
      probe's distance below the target, is within this.
    confirm_repeats: repeats of the chosen load at least (0 skips
      confirming); more, up to confirm_max_repeats, only while the 95 %
      interval's half-width is over confirm_ci_target of the mean (0:
      always confirm_repeats).
    max_threads: threads may grow up to this (None: always `threads`).
    confirm_max_reruns: disturbed repeats run again per search.
    noise_aware: the rules of issue 23; False restores the rules before it,
      for scripts/bench_search_floor.py to measure side by side.
  """
  NAME: ClassVar[str] = 'adaptive'

  threads: int = 1
  pipeline: int = 1
  min_connections: int = 1
  start_connections: int = 4
  max_connections: int = 1024
  growth_factor: float = 2.0
  cap_margin: float = 0.95
  noise_floor: float = 0.03
  bracket_tolerance: float = 0.05
  max_corrections: int = 2
  max_bisections: int = 4
  confirm_repeats: int = 3
  confirm_max_repeats: int = 6
  confirm_ci_target: float = 0.02
  max_threads: Optional[int] = None
  max_backoffs: int = 2
  confirm_max_reruns: int = 3
  noise_aware: bool = True

  def __post_init__(self):
    driver.CheckWholeNumbers(
        vars(self), threads=1, pipeline=1, min_connections=1,
        start_connections=1, max_connections=1, max_corrections=0,
        max_bisections=0, confirm_repeats=0, confirm_max_repeats=0,
        max_backoffs=0, confirm_max_reruns=0)
    checks = (
        (self.min_connections <= self.max_connections,
         f'min_connections={self.min_connections} is above max_connections='
         f'{self.max_connections}; lower one or raise the other.'),
        (self.threads <= self.max_connections,
         f'max_connections={self.max_connections} is below threads='
         f'{self.threads}: every thread needs a connection; raise '
         'max_connections or use fewer threads.'),
        (self.min_clients <= self.max_clients,
         f'no multiple of threads={self.threads} lies between min_connections='
         f'{self.min_connections} and max_connections={self.max_connections};'
         ' widen the range.'),
        (self.growth_factor > 1,
         f'growth_factor={self.growth_factor!r}: must be above 1, e.g. 2.'),
        (0 < self.cap_margin <= 1,
         f'cap_margin={self.cap_margin!r}: must be in (0, 1], e.g. 0.95 to '
         'aim 5 % under the cap.'),
        (0 <= self.noise_floor < 1,
         f'noise_floor={self.noise_floor!r}: must be a fraction in [0, 1), '
         'e.g. 0.03.'),
        (self.max_threads is None or (isinstance(self.max_threads, int) and
                                      self.max_threads >= self.threads),
         f'max_threads={self.max_threads!r}: must be a whole number of at '
         f'least threads={self.threads}, or None.'),
        (0 <= self.confirm_ci_target < 1,
         f'confirm_ci_target={self.confirm_ci_target!r}: must be a fraction '
         'in [0, 1), e.g. 0.02; 0 repeats exactly confirm_repeats times.'),
        (0 < self.bracket_tolerance < 1,
         f'bracket_tolerance={self.bracket_tolerance!r}: must be a fraction '
         'in (0, 1), e.g. 0.05.'),
    )
    for holds, message in checks:
      if not holds:
        raise InvalidSearchArgument(message)

  @classmethod
  def FromConnectionRange(cls, threads: int, min_connections: int,
                          max_connections: int,
                          start_connections: Optional[int] = None,
                          pipeline: int = 1,
                          **overrides) -> 'AdaptiveStepPolicy':
    """The policy over a range of connections (a linear walk's thread range
    is too narrow for it); a start outside the range is moved into it, None
    starts at its lower end."""
    start = min_connections if start_connections is None else start_connections
    start = min(max_connections, max(min_connections, start))
    return cls(threads=threads, pipeline=pipeline,
               min_connections=min_connections,
               start_connections=start, max_connections=max_connections,
               **overrides)

  @property
  def repeat_rule(self) -> repeats.RepeatRule:
    """How each contender's repeats stop (search/repeats.py)."""
    return repeats.RepeatRule(
        least=max(1, self.confirm_repeats), most=self.confirm_max_repeats,
        ci_target=self.confirm_ci_target, max_reruns=self.confirm_max_reruns,
        stop_out_of_reach=self.noise_aware)

  @property
  def start_clients(self) -> int:
    """The first probe's load count."""
    return min(self.max_clients, max(self.min_clients, round(
        self.start_connections / self.unit)))

  def GrownClients(self, clients: int) -> int:
    """The next load of the growth phase."""
    return min(self.max_clients,
               max(clients + 1, round(clients * self.growth_factor)))

  def HalvedClients(self, clients: int) -> int:
    """The next load when the start was over the target."""
    return max(self.min_clients, clients // 2)

  def EstimateProbes(self) -> ProbeCounts:
    """Probes a search with these parameters takes: most from every phase's
    bound, typical from the measured TYPICAL_* counts."""
    start = self.start_clients
    growth, clients = 0, start
    while clients < self.max_clients:
      clients = self.GrownClients(clients)
      growth += 1
    halvings, clients = 0, start
    while clients > self.min_clients:
      clients = self.HalvedClients(clients)
      halvings += 1
    most = (1 + max(growth, halvings) + 1 + self.max_corrections +
            self.max_bisections)
    if self.confirm_repeats:
      # Each round of repeats, and a failed hold's back-off: a probe and
      # another round (the holds are not probes of the budget).
      round_ = ((1 + self.max_backoffs) * MAX_CONTENDERS *
                self.repeat_rule.upper + self.max_backoffs)
      most += (round_ + MAX_HOLD_BACKOFFS * (1 + round_) +
               self.confirm_max_reruns)
    fewest = (1 if start in (self.min_clients, self.max_clients) else 2
              ) + self.confirm_repeats
    typical = (TYPICAL_SEARCH_PROBES +
               TYPICAL_REPEAT_SETS * self.confirm_repeats)
    return ProbeCounts(fewest, min(most, max(fewest, typical)), most)

  @property
  def threads_vary(self) -> bool:
    return bool(self.max_threads) and self.max_threads > self.threads

  @property
  def unit(self) -> int:
    """Connections per step of the search's load count."""
    return 1 if self.threads_vary else self.threads

  @property
  def min_clients(self) -> int:
    return max(1, math.ceil(self.min_connections / self.unit))

  @property
  def max_clients(self) -> int:
    return self.max_connections // self.unit

  def LoadForClients(self, clients: int) -> Load:
    """The Load of a load count (clients per thread, or connections)."""
    if not self.threads_vary:
      return Load(self.threads, clients, self.pipeline)
    # Fewest clients per thread that fit, then the threads that come closest
    # to the connection count: steps stay about one client fine.
    per_thread = max(1, math.ceil(clients / self.max_threads))
    threads = min(self.max_threads,
                  max(self.threads, round(clients / per_thread)))
    return Load(threads, per_thread, self.pipeline)

  def Steps(self, cap_ms: float) -> driver.PolicySteps:
    return AdaptiveRun(self, cap_ms).Run()


class AdaptiveRun:
  """The state of one search. Loads are counted in clients per thread.

  A bracket (lo, hi) holds the most clients known under the target and the
  fewest known at or over it (None: not found yet).
  """

  def __init__(self, policy: 'AdaptiveStepPolicy', cap_ms: float):
    self._policy = policy
    self._cap_ms = cap_ms
    self._target_ms = cap_ms * policy.cap_margin
    self._min = policy.min_clients
    self._max = policy.max_clients
    self._start = policy.start_clients
    self._search: Dict[int, ProbeRecord] = {}
    self._notes: List[str] = []
    self._reruns_left = policy.confirm_max_reruns
    self._last_disturbed = False  # the newest probe's

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
                 key=lambda r: abs(math.log(max(r.aimed_latency_ms, 1e-9) /
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
      if (self._policy.noise_aware and
          predicted <= lo * (1 + self._Slack(self._search[lo]))):
        self._notes.append(
            f'Little\'s law puts the target at {self._Conns(predicted)} '
            f'connections, within the noise of {self._Conns(lo)} '
            f'(+-{100 * self._Slack(self._search[lo]):.0f} %): not probed')
        break
      record = yield from self._Probe(
          predicted, 'Little prediction' if attempt == 0 else
          'Little correction')
      predictions += 1
      if self._UnderTarget(record):
        lo = predicted
        close = record.aimed_latency_ms >= self._target_ms * (
            1 - self._Slack(record))
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
    held = {}  # clients -> RepeatSet whose capped latency was under the cap
    failed = {}  # clients -> RepeatSet whose capped latency was not
    not_held = {}  # clients -> (RepeatSet, hold record) whose hold failed
    dropped = []  # held sets at loads a failed hold put out of reach
    for _ in range(1 + MAX_HOLD_BACKOFFS):
      chosen = yield from self._ConfirmBelow(ceiling, held, failed, not_held)
      if chosen is not None or not held:
        break
      clients = max(held, key=lambda c: held[c].mean)
      hold = yield driver.ProbeRequest(
          self._policy.LoadForClients(clients), driver.ROLE_HOLD,
          f'hold of {self._Conns(clients)} connections',
          searched_ops=held[clients].mean)
      if hold is None or hold.under_cap:
        return self._Answer(clients, held, held, failed, not_held, dropped,
                            hold)
      not_held[clients] = (held.pop(clients), hold)
      ceiling = self._HoldCeiling(clients, hold)
      dropped += [held.pop(c) for c in sorted(held) if c >= ceiling]
      yield from self._BackOffUnder(ceiling)
    if chosen is not None:
      return chosen
    if not_held:
      # Repeats under the cap but seconds over it when held: the best such
      # load, its hold failed (the verdict says so, unconfirmed).
      sets = {c: done for c, (done, _) in not_held.items()}
      clients = max(sets, key=lambda c: sets[c].mean)
      self._notes.append(
          f'no load held under the cap for the hold: the answer stays at '
          f'{self._Conns(clients)} connections, not held')
      return self._Answer(clients, sets, held, failed, not_held, dropped,
                          not_held[clients][1])
    excluded = self._Excluded(held, failed, not_held, dropped)
    if not failed:
      self._notes.append(
          f'every probe was at or over the {self._cap_ms} ms cap: no '
          'capped throughput')
      return driver.Outcome('; '.join(self._notes))
    # An answer all the same, unconfirmed: the repeated load that came
    # nearest to holding, its figure the mean of every probe there
    # but the disturbed repeats set aside (driver._Result).
    clients = min(failed, key=lambda c: failed[c].latency_ms)
    # The cap with its statistic ('1 ms p99'): this is the verdict's
    # reason, on the answer's samples.
    cap = measurement.LatencyCap(
        self._cap_ms, failed[clients].counted[0].statistic).Short()
    reason = (f'no load held under the {cap} cap when '
              f'repeated (nearest: {self._Conns(clients)} connections, '
              f'{failed[clients].MergedWords()})')
    self._notes.append(reason)
    return driver.Outcome('; '.join(self._notes),
                          self._search[clients].index,
                          tuple(r.index for r in failed[clients].counted),
                          excluded, unconfirmed_reason=reason)

  def _ConfirmBelow(self, ceiling: int, held, failed, not_held):
    """Repeats the contenders under `ceiling` (and below any load whose
    repeats then fail), filling `held` and `failed`; an Outcome only when
    the policy confirms nothing (confirm_repeats 0)."""
    for _ in range(1 + self._policy.max_backoffs):
      candidates = {c: r for c, r in self._Candidates(ceiling).items()
                    if c not in not_held}
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
        done = yield from self._Confirm(clients)
        if done.latency_ms < self._cap_ms:
          held[clients] = done
        else:
          failed[clients] = round_failed[clients] = done
          self._notes.append(
              f'repeats at {self._Conns(clients)} connections '
              f'{done.LatencyWords()}, not under the {self._cap_ms} ms cap')
      if not round_failed:
        break
      ceiling = min(round_failed)
      backed_off = yield from self._BackOff(
          ceiling, round_failed[ceiling].latency_ms)
      if held and not backed_off:
        break
    return None

  def _HoldCeiling(self, clients: int, hold: ProbeRecord) -> int:
    """The loads a failed hold leaves (those below the returned count).

    A hold fails when the machine, for its seconds, served the load slower
    than its repeats did: on a plateau latency is connections over
    throughput (Little's law), so every load above where the hold's worst
    second puts the target would have failed it too (a quiet 2-core Local
    run: repeats at 27 connections averaged 0.82 ms, its hold's seconds
    1.04-1.18 ms at a fifth less throughput).
    """
    predicted = clients - 1
    if hold.aimed_latency_ms > 0 and math.isfinite(hold.aimed_latency_ms):
      predicted = math.floor(clients * self._target_ms /
                             hold.aimed_latency_ms)
    ceiling = max(self._min, min(clients - 1, predicted)) + 1
    self._notes.append(
        f'the hold of {self._Conns(clients)} connections failed '
        f'(its worst second '
        f'{driver.LatencyWords(hold.statistic, hold.aimed_latency_ms, "averaged")}'
        f'): loads from {self._Conns(ceiling)} connections are out')
    return ceiling

  def _BackOffUnder(self, ceiling: int):
    """Probes the highest load a failed hold left, if not probed yet."""
    clients = ceiling - 1
    if clients >= self._min and clients not in self._search:
      yield from self._Probe(clients, 'back-off after the hold')

  def _Excluded(self, *groups) -> Tuple[int, ...]:
    """The disturbed repeats every set put aside (sets in dicts, lists, or
    (set, hold) pairs)."""
    sets = []
    for group in groups:
      for item in (group.values() if isinstance(group, dict) else group):
        sets.append(item[0] if isinstance(item, tuple) else item)
    return tuple(r.index for done in sets for r in done.excluded)

  def _Answer(self, clients: int, sets, held, failed, not_held, dropped,
              hold: Optional[ProbeRecord]) -> driver.Outcome:
    """The Outcome of `sets[clients]`, held by `hold` (None: not held)."""
    done = sets[clients]
    if clients in held:
      self._notes.append(
          f'confirmed {self._policy.LoadForClients(clients).Describe()} '
          f'({self._Conns(clients)} connections): {done.Describe()}, '
          f'{done.LatencyWords("averaging")}')
    return driver.Outcome(
        '; '.join(self._notes), self._search[clients].index,
        tuple(r.index for r in done.counted),
        self._Excluded(held, failed, not_held, dropped),
        hold_index=hold.index if hold is not None else None)

  def _WorthAnotherSet(self, clients: int, held) -> bool:
    """Whether a further contender could beat what is held: only when its
    search probe lies more than the held repeats' standard deviation above
    the best held mean (within that, one probe cannot tell them apart)."""
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

  def _Probe(self, clients: int, note: str):
    record = yield driver.ProbeRequest(
        self._policy.LoadForClients(clients), driver.ROLE_SEARCH, note)
    self._search[clients] = record
    self._last_disturbed = record.disturbed
    return record

  def _Confirm(self, clients: int):
    """Repeats one load by the policy's RepeatRule (search/repeats.py);
    re-runs of disturbed repeats are a budget of the whole search."""
    done = yield from self._policy.repeat_rule.Run(
        self._policy.LoadForClients(clients), reruns_left=self._reruns_left,
        after_disturbed=self._last_disturbed)
    self._reruns_left = done.reruns_left
    self._last_disturbed = done.counted[-1].disturbed  # the set's last probe
    return done

  def _Candidates(self, ceiling: int) -> Dict[int, ProbeRecord]:
    """Search probes below `ceiling` under the target, else under the cap."""
    below = {c: r for c, r in self._search.items() if c < ceiling}
    return ({c: r for c, r in below.items() if self._UnderTarget(r)} or
            {c: r for c, r in below.items() if r.under_cap})

  def _Contenders(self, candidates: Dict[int, ProbeRecord]) -> List[int]:
    """The top load by throughput and the loads at the ends of its noise
    band: on a plateau the true maximum lies at the top or at an end of that
    band (throughput sags or creeps on), so only those are worth repeats."""
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
    still extrapolates consistently; the latency aimed under the target
    (the whole's or its worst second's), so the prediction's worst second
    lands there. Rounds down to stay under the target.
    """
    if record.aimed_latency_ms <= 0:
      return None
    outstanding = (record.load.outstanding_requests * self._target_ms /
                   record.aimed_latency_ms)
    per_client = self._policy.unit * self._policy.pipeline
    return max(self._min, math.floor(outstanding / per_client))

  def _Slack(self, record: ProbeRecord) -> float:
    """How far off a probe may be and still count as on the mark: the
    bracket tolerance, or the probe's own noise. A probe under the target by
    less is close enough, and a load less than this above one under the
    target is not worth a probe: by Little's law `k` times the connections
    gives at most `k` times the throughput, a gain no probe could show.
    """
    return max(self._policy.bracket_tolerance,
               RelativeNoise(record.measurement, 0.0))

  def _Narrow(self, lo: int, hi: int) -> bool:
    return hi - lo <= 1 or hi / lo - 1 <= self._policy.bracket_tolerance

  def _UnderTarget(self, record: ProbeRecord) -> bool:
    """Under the cap, and under the target as a whole and in its worst
    counted second (ProbeRecord.aimed_latency_ms)."""
    return record.under_cap and record.aimed_latency_ms < self._target_ms

  def _Conns(self, clients: int) -> int:
    return self._policy.LoadForClients(clients).connections

