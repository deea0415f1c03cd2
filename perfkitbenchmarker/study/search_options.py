"""The latency-capped search's options: policy, staircase, shard study.

Frozen records built by `FromFlags` (from options.RedisStudyOptions.FromFlags)
and their checks, each a one-line errors.UsageError. Extension seam: a new search setting is a field on `SearchOptions`, read in
its `FromFlags` and checked in `CheckSearch`; a new policy is a value of
`SearchOptions.policy` (search_runner.Policy maps it).
"""

import dataclasses
from typing import Optional, Tuple

from perfkitbenchmarker import errors
from perfkitbenchmarker import flag_util
from perfkitbenchmarker import latency_curve
from perfkitbenchmarker import measurement
from perfkitbenchmarker import providers
from perfkitbenchmarker import redis_shard
from perfkitbenchmarker.load_generators import commands


def RequireAverageCap(f, benchmark: str, why: str) -> None:
  """Refuses --latency_cap_statistic other than avg, in one line, for a
  benchmark whose cap is on the average (`why`)."""
  statistic = getattr(f, 'latency_cap_statistic', measurement.AVERAGE)
  if statistic != measurement.AVERAGE:
    raise errors.UsageError(
        f'--latency_cap_statistic={statistic} is not available for '
        f'{benchmark}: {why}; drop --latency_cap_statistic, or use '
        '--benchmarks=redis_memtier with memtier_benchmark.')


def RequireNoShardSearch(f, benchmark: str, instead: str) -> None:
  """Refuses --redis_optimize_shards, in one line, for a benchmark that
  runs no such search (it ran one shard count, and said nothing);
  `instead` says what to use."""
  if getattr(f, 'redis_optimize_shards', False):
    raise errors.UsageError(
        f'--redis_optimize_shards is not available for {benchmark} (it '
        'would run one shard count without saying so); drop it, or '
        f'{instead}.')


def RequireOneCappedAnswer(f) -> None:
  """Refuses the hold's and the curve's flags, given, in one line, for a
  run with no single capped answer to hold or to draw a curve under (a
  --memtier_fixed_load run, a --redis_optimize_shards search): they were
  accepted, and nothing was held or drawn, without a word."""
  runs = ('--memtier_fixed_load' if f.memtier_fixed_load else
          '--redis_optimize_shards' if f.redis_optimize_shards else None)
  asked = []
  if f.memtier_hold_duration:
    asked.append(f'--memtier_hold_duration={f.memtier_hold_duration}')
  if f.memtier_curve_rate_percents:
    asked.append('--memtier_curve_rate_percents=' +
                  ','.join(f.memtier_curve_rate_percents))
  if f.memtier_curve_run_duration is not None:
    asked.append(
        f'--memtier_curve_run_duration={f.memtier_curve_run_duration}')
  if runs and asked:
    raise errors.UsageError(
        f'{", ".join(asked)}: a {runs} run has no single capped answer to '
        'hold or to draw the latency-throughput curve under, so it would '
        f'run neither; drop {"it" if len(asked) == 1 else "them"} or '
        f'{runs}.')


# Seconds the answer's load is held by default: a minute on clouds and
# static VMs (burst credits and background work show within one), a few
# seconds on Local, whose default study must stay near its wall time.
CLOUD_HOLD_S = 60
LOCAL_HOLD_S = 3


@dataclasses.dataclass(frozen=True)
class SearchOptions:
  """The latency-capped search."""
  cap_ms: float = 1.0
  # Which latency statistic cap_ms bounds (measurement.STATISTICS).
  cap_statistic: str = measurement.AVERAGE
  policy: str = 'adaptive'  # adaptive | linear
  min_threads: int = 1
  max_threads: int = 8
  thread_increment: int = 1
  max_probes: int = 40
  adaptive_min_connections: int = 4
  adaptive_max_connections: int = 1024
  adaptive_start_connections: Optional[int] = None
  # Threads the adaptive search may grow to (None: always min_threads).
  adaptive_max_threads: Optional[int] = None
  # On cloud VMs with neither --memtier_adaptive_max_threads nor
  # --memtier_min_threads given: grow to the client VM's vCPUs, so that its
  # cores are used (one thread of 32 is 3 % of the VM).
  adaptive_threads_from_vcpus: bool = False
  confirm_repeats: int = 3
  linear_confirm_repeats: int = 0
  cap_margin: float = 0.95
  staircase: Optional[commands.StaircaseSpec] = None
  # Seconds the answer's load is held after the search (0: no hold).
  hold_s: int = 0

  @classmethod
  def FromFlags(cls, f) -> 'SearchOptions':
    staircase = None
    if f.memtier_staircase:
      staircase = commands.StaircaseSpec(f.memtier_staircase_clients_start,
                                         f.memtier_staircase_clients_step,
                                         f.memtier_staircase_step_seconds,
                                         f.memtier_staircase_max_clients)
    return cls(cap_ms=f.memtier_latency_cap,
               cap_statistic=f.latency_cap_statistic,
               policy=f.memtier_latency_capped_search,
               min_threads=f.memtier_min_threads,
               max_threads=f.memtier_max_threads,
               thread_increment=f.memtier_thread_increment,
               max_probes=f.memtier_max_probes,
               adaptive_min_connections=f.memtier_adaptive_min_connections,
               adaptive_max_connections=f.memtier_adaptive_max_connections,
               adaptive_start_connections=f.memtier_adaptive_start_connections,
               adaptive_max_threads=f.memtier_adaptive_max_threads,
               adaptive_threads_from_vcpus=(
                   providers.CapabilitiesOfRun(f).made_by_run and
                   f.memtier_adaptive_max_threads is None and
                   not flag_util.IsGiven(f, 'memtier_min_threads')),
               confirm_repeats=f.memtier_confirm_repeats,
               linear_confirm_repeats=f.memtier_linear_confirm_repeats,
               cap_margin=f.memtier_cap_margin, staircase=staircase,
               hold_s=_HoldSeconds(f))

  @property
  def name(self) -> str:
    return 'staircase' if self.staircase else self.policy

  @property
  def cap(self) -> measurement.LatencyCap:
    return measurement.LatencyCap(self.cap_ms, self.cap_statistic)


def _HoldSeconds(f) -> int:
  if f.memtier_hold_duration is not None:
    return f.memtier_hold_duration
  local = providers.CapabilitiesOfRun(f).is_runner_machine
  return LOCAL_HOLD_S if local else CLOUD_HOLD_S


@dataclasses.dataclass(frozen=True)
class CurveOptions:
  """The latency-throughput curve after the search (latency_curve.py):
  probes at these percents of the answer's throughput (none: no curve),
  `probe_s` seconds each (None: the search's probe duration)."""
  percents: Tuple[int, ...] = ()
  probe_s: Optional[int] = None

  @classmethod
  def FromFlags(cls, f) -> 'CurveOptions':
    local = providers.CapabilitiesOfRun(f).is_runner_machine
    probe_s = f.memtier_curve_run_duration
    if probe_s is None and local:
      probe_s = latency_curve.LOCAL_PROBE_S
    given = f.memtier_curve_rate_percents
    if given is None:
      return cls(latency_curve.LOCAL_PERCENTS if local else
                 latency_curve.DEFAULT_PERCENTS, probe_s)
    percents = []
    for text in given:
      text = text.strip()
      if not text.isdigit() or not 1 <= int(text) <= 99:
        raise errors.UsageError(
            f'--memtier_curve_rate_percents={",".join(given)}: "{text}" is '
            'not a whole percent from 1 to 99 of the answer\'s throughput; '
            'give e.g. 25,50,75,90, or nothing to run no curve.')
      if int(text) in percents:
        # A slip for another percent, most likely: said, not merged into
        # one probe fewer than the list reads.
        raise errors.UsageError(
            f'--memtier_curve_rate_percents={",".join(given)}: {int(text)} '
            'is given twice; give each percent once, e.g. 25,50,75,90.')
      percents.append(int(text))
    return cls(tuple(sorted(percents)), probe_s)

  def ProbeSeconds(self, search_probe_s: float) -> float:
    return search_probe_s if self.probe_s is None else self.probe_s

  @property
  def enabled(self) -> bool:
    return bool(self.percents)


@dataclasses.dataclass(frozen=True)
class ShardSearchOptions:
  """--redis_optimize_shards: a capped search per shard count."""
  enabled: bool = False
  min_shards: int = 1
  max_shards: Optional[int] = None
  min_improvement: float = 0.02
  max_points: int = 8
  reuse_load: bool = True

  @classmethod
  def FromFlags(cls, f) -> 'ShardSearchOptions':
    return cls(enabled=f.redis_optimize_shards, min_shards=f.redis_min_shards,
               max_shards=f.redis_max_shards,
               min_improvement=f.redis_shard_min_improvement,
               max_points=f.redis_shard_max_points,
               reuse_load=f.redis_shard_reuse_load)

  def Bounds(self, vcpus: Optional[int]) -> Tuple[int, int, int]:
    """(min, start, max) shards per server VM for a VM with `vcpus`."""
    vcpus = vcpus or 1
    low = self.min_shards
    high = self.max_shards or redis_shard.MostShardsSearched(low, vcpus)
    start = min(high, max(low, vcpus // 2, 1))
    return low, start, high

  def MostShardsStarted(self, vcpus: Optional[int]) -> Tuple[int, int]:
    """(counts, shards): the most shard counts a search evaluates on a
    server VM with `vcpus`, and the most shards it starts there over all
    of them (shard_study starts each count on ports of its own)."""
    low, _, high = self.Bounds(vcpus)
    return redis_shard.ShardsStartedBySearch(low, high, self.max_points)

  @property
  def typical_points(self) -> int:
    """Counts a climb usually evaluates: the start, both neighbours, a move."""
    return min(self.max_points, 4)


def _CheckAdaptiveStart(s: SearchOptions, g) -> None:
  """The adaptive search's first load within its range: refused above the
  top instead of being quietly lowered to it."""
  if s.policy != 'adaptive' or s.staircase is not None:
    return
  if s.adaptive_start_connections:
    start, source = (s.adaptive_start_connections,
                     '--memtier_adaptive_start_connections='
                     f'{s.adaptive_start_connections}')
  else:
    start = s.min_threads * g.clients
    source = (f'--memtier_min_threads x --memtier_clients ({s.min_threads} '
              f'x {g.clients} = {start:,} connections, the first load)')
  if start > s.adaptive_max_connections:
    raise errors.UsageError(
        f'{source} is above the adaptive search\'s limit '
        f'--memtier_adaptive_max_connections={s.adaptive_max_connections}; '
        'lower it or raise that limit.')


def CheckSearch(s: SearchOptions, g) -> None:
  """Rules across flags; each number's own bounds are on its definition."""
  if s.min_threads > s.max_threads:
    raise errors.UsageError(
        f'--memtier_min_threads={s.min_threads} is above '
        f'--memtier_max_threads={s.max_threads}; lower the first or raise '
        'the second.')
  if s.adaptive_min_connections > s.adaptive_max_connections:
    raise errors.UsageError(
        '--memtier_adaptive_min_connections='
        f'{s.adaptive_min_connections} is above '
        '--memtier_adaptive_max_connections='
        f'{s.adaptive_max_connections}.')
  _CheckAdaptiveStart(s, g)
  value = s.adaptive_max_threads
  if s.policy == 'adaptive' and value is not None and value < s.min_threads:
    raise errors.UsageError(
        f'--memtier_adaptive_max_threads={value} is below '
        f'--memtier_min_threads={s.min_threads}, the threads the adaptive '
        'search starts from; raise it or lower --memtier_min_threads.')
  if s.staircase is not None:
    _CheckStaircase(s.staircase, g)


def _CheckStaircase(st: commands.StaircaseSpec, g) -> None:
  if g.choice == 'redis_benchmark':
    raise errors.UsageError(
        '--memtier_staircase needs memtier_benchmark >= 2.3 (its '
        '--clients-start/--clients-step options); redis-benchmark has no '
        'staircase mode. Drop --load_generator=redis_benchmark or '
        '--memtier_staircase.')
  if st.clients_start >= st.max_clients:
    raise errors.UsageError(
        f'--memtier_staircase_clients_start={st.clients_start} must be below '
        f'--memtier_staircase_max_clients={st.max_clients} (memtier requires '
        'it).')
  if g.warmup_s >= st.step_duration_s:
    raise errors.UsageError(
        f'--memtier_warmup_seconds={g.warmup_s} leaves nothing of a '
        f'staircase step of --memtier_staircase_step_seconds='
        f'{st.step_duration_s}; the warm-up is per step.')


def CheckShards(sh: ShardSearchOptions, server) -> None:
  if not sh.enabled:
    return
  if sh.max_shards is not None and sh.max_shards < sh.min_shards:
    raise errors.UsageError(
        f'--redis_max_shards={sh.max_shards} is below --redis_min_shards='
        f'{sh.min_shards}.')
  if server.replicas_per_primary:
    raise errors.UsageError(
        '--redis_optimize_shards with --redis_replicas_per_primary is not '
        'supported; search shard counts without replicas.')
  if server.cluster_mode and server.cluster_replicas:
    raise errors.UsageError(
        '--redis_optimize_shards with --redis_cluster_replicas would search '
        'counts a cluster with replicas cannot have; use replicas 0.')
