"""Adaptive latency-capped search: grow, predict with Little's law, confirm.

A closed-loop Redis server reaches its throughput plateau with a few dozen
connections but crosses a 1 ms cap only past a hundred, so a linear walk
spends most probes on the flat part. This policy instead
1. doubles the connections until throughput stops growing by more than the
   noise the probes show, or latency reaches the target (cap x margin);
2. on a plateau, predicts with Little's law (outstanding requests =
   throughput x latency) where the target is reached and probes there,
   correcting a miss with the same law from the newest probe;
3. bisects between the last load under the target and the first over it only
   while throughput still rises across that bracket;
4. confirms the answer with repeats (mean and 95 % interval), backing off to
   a lower load if they average at or over the cap. At least
   `confirm_repeats`; more, up to `confirm_max_repeats`, while the interval's
   half-width is wider than `confirm_ci_target` of the mean and the
   remaining repeats can still bring it there (repeats.RepeatRule: a noisy
   server stops at the least and reports the interval reached); a repeat
   disturbed by foreign CPU is run again rather than counted. Another load
   of the plateau's noise band is repeated only when its probe lies above
   the held mean's interval.
With `max_threads` above `threads`, a load is a connection count spread over
up to `max_threads` threads (one client each until the threads run out), so
a client that needs many threads to be fast is still offered fine steps.
Decisions use the target, not the cap, so a probe that landed under the cap
by luck does not become the answer; the repeats are checked against the cap.
A saturated load generator is reported (`client_limited`, stop reason), never
passed off as the server's plateau.

Extension seam: `AdaptiveStepPolicy` is a `driver.StepPolicy`;
`LoadForConnections` (fixed threads, variable clients) is the one place that
maps a connection count to a Load; `EstimateProbes` is what a plan or a cost
estimate may assume, derived from the same parameters as the search, so a
change to a phase here changes the estimate too. The phases themselves (one
search's state) live in `adaptive_run.AdaptiveRun`. Pure: no flags, VMs,
I/O, sleep or clock.
"""

import dataclasses
import math
from typing import ClassVar, Optional

from perfkitbenchmarker import measurement
from perfkitbenchmarker.search import adaptive_run
from perfkitbenchmarker.search import driver
from perfkitbenchmarker.search import repeats

Load = measurement.Load
ProbeRecord = driver.ProbeRecord
InvalidSearchArgument = driver.InvalidSearchArgument


# Re-exported: plans, estimates and tests know them by this module.
RelativeNoise = adaptive_run.RelativeNoise
MAX_CONTENDERS = adaptive_run.MAX_CONTENDERS
TYPICAL_CONTENDERS = adaptive_run.TYPICAL_CONTENDERS


@dataclasses.dataclass(frozen=True)
class ProbeCounts:
  """Probes one search takes: at fewest, typically and at most.

  Attributes:
    fewest: a search with an answer whose first probes settle it and whose
      one confirmed load stops at the minimum of repeats (a quiet server); a
      search that finds nothing under the cap can stop sooner.
    typical: the figure for time and cost estimates (see
      `AdaptiveStepPolicy.EstimateProbes` for what it assumes).
    most: every phase runs to its bound (before any probe budget).
  """
  fewest: int
  typical: int
  most: int

  def Capped(self, max_probes: int) -> 'ProbeCounts':
    """The counts under a probe budget, which ends a search early."""
    return ProbeCounts(min(self.fewest, max_probes),
                       min(self.typical, max_probes),
                       min(self.most, max_probes))


@dataclasses.dataclass(frozen=True)
class AdaptiveStepPolicy:
  """Geometric growth, Little's-law prediction, bisection, confirmation.

  Attributes:
    threads: load generator threads; connections vary through clients.
    pipeline: requests in flight per connection.
    min_connections: the floor when the first probe is already over target.
    start_connections: the first probe.
    max_connections: never offer more.
    growth_factor: connections multiply by this while throughput grows.
    cap_margin: decisions aim under cap_ms x cap_margin (the target).
    noise_floor: smallest relative throughput noise assumed.
    bracket_tolerance: stop refining when the bracket's relative width, or a
      probe's distance below the target, is within this.
    max_corrections: Little's-law re-predictions after the first prediction.
    max_bisections: bisection probes at most.
    confirm_repeats: repeats of the chosen load at least (0 skips
      confirming).
    confirm_max_repeats: repeats at most; more than confirm_repeats only
      while the 95 % interval is wider than confirm_ci_target.
    confirm_ci_target: stop repeating once the interval's half-width is at
      most this fraction of the mean (0: always confirm_repeats).
    max_threads: threads may grow up to this (None: always `threads`).
    max_backoffs: lower loads tried when a confirmation fails.
    confirm_max_reruns: disturbed repeats run again per search.
    noise_aware: the rules of issue 23 (repeats stop when the target is out
      of reach; another contender only above the held mean's spread).
      False restores the rule before it, for scripts/bench_search_floor.py
      to measure side by side; not a benchmark flag.
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
    for name in ('threads', 'pipeline', 'min_connections',
                 'start_connections', 'max_connections'):
      value = getattr(self, name)
      if not isinstance(value, int) or value < 1:
        raise InvalidSearchArgument(
            f'{name}={value!r}: must be a whole number of at least 1.')
    for name in ('max_corrections', 'max_bisections', 'confirm_repeats',
                 'confirm_max_repeats', 'max_backoffs',
                 'confirm_max_reruns'):
      value = getattr(self, name)
      if not isinstance(value, int) or value < 0:
        raise InvalidSearchArgument(
            f'{name}={value!r}: must be a whole number of at least 0.')
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
    """The adaptive policy over an explicit range of connections.

    A linear walk's thread settings span too narrow a range for this policy
    (1..8 threads x 32 clients cannot go below 32 or above 256 connections),
    so the connection range is given directly and only the thread count is
    shared with the walk. A start outside the range is moved into it; None
    starts at the range's lower end.
    """
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
  def most_repeats(self) -> int:
    """Repeats of one load at most; the interval stops them earlier."""
    if not self.confirm_ci_target:
      return self.confirm_repeats
    return max(self.confirm_repeats, self.confirm_max_repeats)

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
    """Probes a search with these parameters takes, from its phases' bounds.

    Search probes: the start, then growth up to `max_connections` or halving
    down to `min_connections` (whichever is longer), a Little's-law
    prediction with `max_corrections` corrections and `max_bisections`
    bisections at most. Confirmation: `confirm_repeats`..`most_repeats`
    repeats for each of up to MAX_CONTENDERS loads, in up to 1 +
    `max_backoffs` rounds with a back-off probe between rounds, and
    `confirm_max_reruns` re-runs of disturbed repeats.

    `typical` assumes the knee halfway (in growth steps) between the start
    and `max_connections`, a prediction with all its corrections, no
    bisection, TYPICAL_CONTENDERS loads confirmed in one round with
    `confirm_repeats` repeats each (the 2 % target is met or out of reach
    there at the noise of the model and of this machine; without
    `noise_aware`, halfway between the bounds). On the server model of
    docs/search.md that is 13-14 probes where the searches averaged
    10.9-14.5.
    """
    start = self.start_clients
    growth, clients = 0, start
    while clients < self.max_clients:
      clients = self.GrownClients(clients)
      growth += 1
    halvings, clients = 0, start
    while clients > self.min_clients:
      clients = self.HalvedClients(clients)
      halvings += 1
    search_most = (1 + max(growth, halvings) + 1 + self.max_corrections +
                   self.max_bisections)
    search_fewest = 1 if start in (self.min_clients, self.max_clients) else 2
    search_typical = 1 + math.ceil(growth / 2) + 1 + self.max_corrections
    repeats = self.confirm_repeats
    if repeats:
      rounds = 1 + self.max_backoffs
      confirm_most = (rounds * MAX_CONTENDERS * self.most_repeats +
                      self.max_backoffs + self.confirm_max_reruns)
      per_load = (repeats if self.noise_aware else
                  math.ceil((repeats + self.most_repeats) / 2))
      confirm_typical = TYPICAL_CONTENDERS * per_load
    else:
      confirm_most = confirm_typical = 0
    fewest = search_fewest + repeats
    most = search_most + confirm_most
    typical = min(most, max(fewest, search_typical + confirm_typical))
    return ProbeCounts(fewest, typical, most)

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

  def LoadForConnections(self, connections: int) -> Load:
    """The load closest to `connections` that this policy can offer."""
    clients = round(connections / self.unit)
    return self.LoadForClients(
        min(self.max_clients, max(self.min_clients, clients)))

  def Steps(self, cap_ms: float) -> driver.PolicySteps:
    return adaptive_run.AdaptiveRun(self, cap_ms).Run()


# The name the benchmark module knows it by.
AdaptivePolicy = AdaptiveStepPolicy
