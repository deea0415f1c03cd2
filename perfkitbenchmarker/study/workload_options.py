"""The studies' memtier workloads and the fixed-load mode, as frozen options.

Built once from flags (`FixedLoadOptions.FromFlags`, `KeyDistributionFromFlags`)
inside `RedisStudyOptions.FromFlags`, checked by `CheckWorkload`; nothing
below reads a flag. The request shape (seeds, Gaussian keys) lives on
`base.Workload`, the run shape (request count, processes per client VM) on
`GeneratorOptions`, the sweep here.

Extension seam: a new memtier-only setting is named in `MemtierOnlyFeatures`,
so a redis-benchmark run refuses it in one line instead of ignoring it.
"""

import dataclasses
import re
from typing import List, Optional, Sequence, Tuple

from perfkitbenchmarker import errors
from perfkitbenchmarker import flag_util
from perfkitbenchmarker.load_generators import base
from perfkitbenchmarker.load_generators import key_distribution
from perfkitbenchmarker.load_generators import memtier_workload_flags as _  # pylint: disable=unused-import

_RATIO = re.compile(r'\d+:\d+')
# Most runs a fixed load may sweep, counted before they are listed: each
# runs a second at least, so more never end before --timeout_minutes' most
# (a week); three lists of 1,000 values asked for 10^9 runs, and listing
# them filled the memory ('internal error MemoryError').
MAX_FIXED_RUNS = 7 * 24 * 3600


# memtier_benchmark keeps each side of --ratio in an unsigned int: a
# larger one wraps (4294967296:1 ran GETs only, its JSON saying 0:1).
MAX_RATIO_SIDE = 2**32 - 1


def ParseRatio(text: str, flag: str) -> Tuple[int, int]:
  """'SET:GET' as two ints; a UsageError naming `flag` otherwise."""
  parts = tuple(int(x) for x in text.split(':')) if _RATIO.fullmatch(
      text) else (0, 0)
  if not any(parts):
    raise errors.UsageError(
        f'--{flag}="{text}" must be SET:GET like 1:1 or 0:1, not both zero.')
  if max(parts) > MAX_RATIO_SIDE:
    raise errors.UsageError(
        f'--{flag}="{text}": memtier_benchmark counts each side up to '
        f'{MAX_RATIO_SIDE:,} (a larger one wraps round); give a smaller '
        'ratio of the same mix.')
  return parts


def _PositiveInts(values: Sequence[str], flag: str) -> Tuple[int, ...]:
  try:
    numbers = tuple(int(value) for value in values)
    valid = all(number >= 1 for number in numbers)
  except ValueError:
    valid = False
  if not valid:
    raise errors.UsageError(
        f'--{flag}={",".join(values)}: every entry must be a whole number '
        'of at least 1.')
  return numbers


@dataclasses.dataclass(frozen=True)
class FixedLoadOptions:
  """--memtier_fixed_load: every ratio x threads x pipeline, no search."""
  enabled: bool = False
  ratios: Tuple[Tuple[int, int], ...] = ()
  threads: Tuple[int, ...] = ()
  pipelines: Tuple[int, ...] = ()
  clients: Tuple[int, ...] = (1,)
  threads_given: bool = False  # --memtier_threads set (fixed load only)

  @classmethod
  def FromFlags(cls, f) -> 'FixedLoadOptions':
    ratios = tuple(ParseRatio(r, 'memtier_ratios') for r in f.memtier_ratios)
    pipelines = _PositiveInts(f.memtier_pipelines, 'memtier_pipelines')
    if pipelines and flag_util.IsGiven(f, 'memtier_pipeline'):
      raise errors.UsageError(
          '--memtier_pipelines and --memtier_pipeline both list pipelines; '
          'give one of them (--memtier_pipeline takes a list too).')
    ratios = ratios or (ParseRatio(f.memtier_ratio, 'memtier_ratio'),)
    pipelines = pipelines or tuple(f.memtier_pipeline)
    threads = tuple(f.memtier_threads or (f.memtier_min_threads,))
    runs = (len(ratios) * len(pipelines) * len(f.memtier_clients) *
            len(threads))
    if runs > MAX_FIXED_RUNS:
      raise errors.UsageError(
          f'{len(ratios):,} ratio(s) x {len(pipelines):,} pipeline(s) x '
          f'{len(f.memtier_clients):,} client count(s) x {len(threads):,} '
          f'thread count(s) are {runs:,} fixed-load runs of a second or more '
          f'each; at most {MAX_FIXED_RUNS:,} (a week of seconds, '
          '--timeout_minutes\' most): give fewer values.')
    return cls(
        enabled=f.memtier_fixed_load,
        ratios=ratios, threads=threads, pipelines=pipelines,
        clients=tuple(f.memtier_clients),
        threads_given=f.memtier_threads is not None)

  @property
  def swept(self) -> bool:
    """Whether more than one run was asked for."""
    return len(self.Runs()) > 1

  def Runs(self) -> List[Tuple[Tuple[int, int], int, int, int]]:
    """(ratio, threads, clients, pipeline) per run, ratio outermost (one
    preload); one run per value of each list, as upstream PKB's memtier."""
    return [(ratio, threads, clients, pipeline) for ratio in self.ratios
            for pipeline in self.pipelines for clients in self.clients
            for threads in self.threads]


def KeyDistributionFromFlags(f) -> dict:
  """Workload fields of the key distribution and seeds, from flags.

  --memtier_ram_hit_ratio derives --key-stddev (key_distribution.py).
  """
  stddev = f.memtier_key_stddev
  if f.memtier_ram_hit_ratio is not None:
    if f.memtier_ram_fraction is None or stddev is not None:
      raise errors.UsageError(
          '--memtier_ram_hit_ratio needs --memtier_ram_fraction and derives '
          '--memtier_key_stddev; give the first two, not the third.')
    if 'G' not in f.memtier_key_pattern:
      raise errors.UsageError(
          '--memtier_ram_hit_ratio shapes a Gaussian key pattern; set '
          '--memtier_key_pattern=G:G.')
    try:
      stddev = key_distribution.GaussianForHitRatio(
          f.memtier_key_minimum, f.memtier_key_maximum,
          f.memtier_ram_fraction, f.memtier_ram_hit_ratio,
          f.memtier_key_median).stddev
    except ValueError as e:
      raise errors.UsageError(f'--memtier_ram_hit_ratio: {e}') from None
  elif f.memtier_ram_fraction is not None:
    raise errors.UsageError(
        '--memtier_ram_fraction is only used with --memtier_ram_hit_ratio.')
  return dict(key_stddev=stddev, key_median=f.memtier_key_median,
              distinct_client_seed=f.memtier_distinct_client_seed,
              randomize=f.memtier_randomize)


def MemtierOnlyFeatures(workload: base.Workload, requests: Optional[int],
                        processes_per_client: int) -> List[str]:
  """What of this run only memtier_benchmark can do, as flag names."""
  wanted = []
  if 'G' in workload.key_pattern:
    wanted.append(f'--memtier_key_pattern={workload.key_pattern}')
  for name, on in (('memtier_key_stddev', workload.key_stddev is not None),
                   ('memtier_key_median', workload.key_median is not None),
                   ('memtier_distinct_client_seed',
                    workload.distinct_client_seed),
                   ('memtier_randomize', workload.randomize),
                   ('memtier_requests', requests is not None),
                   ('memtier_processes_per_client',
                    processes_per_client > 1)):
    if on:
      wanted.append(f'--{name}')
  return wanted


def CheckWorkload(opts) -> None:
  """Refuses combinations the studies' workloads cannot run, in one line."""
  w, g, fixed = opts.workload, opts.generator, opts.fixed
  if (w.key_stddev is not None or w.key_median is not None) and (
      'G' not in w.key_pattern):
    raise errors.UsageError(
        '--memtier_key_stddev/--memtier_key_median shape a Gaussian key '
        f'pattern, but --memtier_key_pattern={w.key_pattern}; use G:G.')
  if w.key_median is not None and not (
      w.key_minimum <= w.key_median <= w.key_maximum):
    raise errors.UsageError(
        f'--memtier_key_median={w.key_median:g} is outside the key range '
        f'[{w.key_minimum}, {w.key_maximum}].')
  if g.choice == 'redis_benchmark' and not opts.search.cap.is_average:
    raise PercentileCapRefusal(opts, 'redis-benchmark')
  if g.choice == 'redis_benchmark':
    wanted = MemtierOnlyFeatures(w, g.requests, g.processes_per_client)
    if wanted:
      raise errors.UsageError(
          f'{_NeedMemtier(wanted)}; redis-benchmark cannot do '
          f'{"it" if len(wanted) == 1 else "them"}: drop '
          '--load_generator=redis_benchmark (give --memtier_path) or '
          f'{"that flag" if len(wanted) == 1 else "those flags"}.')
  if not fixed.enabled:
    if g.requests is not None:
      raise errors.UsageError(
          '--memtier_requests sets a fixed request count; a capped search '
          'times its probes (--memtier_run_duration). Add '
          '--memtier_fixed_load or drop --memtier_requests.')
    if fixed.threads_given and not fixed.swept:
      raise errors.UsageError(
          '--memtier_threads sets a fixed load\'s threads; a capped search '
          'varies them itself from --memtier_min_threads to '
          '--memtier_max_threads. Add --memtier_fixed_load or give those.')
    if fixed.swept:
      raise errors.UsageError(
          'several --memtier_ratios/--memtier_pipeline(s)/--memtier_threads/'
          '--memtier_clients values are swept by --memtier_fixed_load (one '
          'run per value); a capped search finds the load itself from '
          'one --memtier_ratio, --memtier_pipeline and --memtier_clients.')
    return
  if g.requests is not None and g.warmup_s:
    # memtier's -n run has no test time to put a warm-up on top of: the
    # probe dropped it and said nothing (its samples: warmup_s 0).
    raise errors.UsageError(
        f'--memtier_warmup_seconds={g.warmup_s} leaves a timed run\'s first '
        'seconds out, but --memtier_requests runs a request count, which '
        'keeps every request: drop one of the two.')
  if opts.search.staircase is not None or opts.shards.enabled:
    raise errors.UsageError(
        '--memtier_fixed_load runs the given load without a search; drop '
        '--memtier_staircase/--redis_optimize_shards.')


def PercentileCapRefusal(opts, generator: str) -> errors.Error:
  """Why a percentile cap cannot run on `generator` (redis-benchmark), in
  one line: its percentiles leave out the time a reply waits for the busy
  client (README "Load generators"), so they would not be the p99 a client
  sees, and the average is never quietly capped in their place."""
  cap = opts.search.cap
  # A memtier on PATH or at --memtier_path is not used while
  # --load_generator names redis-benchmark: that flag is what to drop.
  memtier = ('drop --load_generator=redis_benchmark (memtier_benchmark is '
             'then used: on PATH or --memtier_path=<memtier_benchmark built '
             'from RedisLabs\' source>)'
             if opts.generator.choice == 'redis_benchmark' else
             'give --memtier_path=<memtier_benchmark built from RedisLabs\' '
             'source> (or install it on PATH)')
  return errors.UsageError(
      f'--latency_cap_statistic={cap.statistic} needs memtier_benchmark, but '
      f'the load generator here is {generator}, whose percentiles leave out '
      f'client queueing (README "Load generators"): {memtier}, or cap the '
      'average with --latency_cap_statistic=avg.')


def RequirePercentileGenerator(generators, opts) -> None:
  """At prepare (where the plan could not know the clients' tool, e.g.
  static VMs without --memtier_path): a percentile cap runs on memtier
  only; refused before any probe, as bad input (exit 2, README), as the
  plan refuses it where it can tell."""
  names = sorted({g.NAME for g in generators} - {'memtier_benchmark'})
  if names and not opts.search.cap.is_average:
    raise PercentileCapRefusal(opts, ', '.join(names))


def RequireMemtier(generators, opts) -> List[str]:
  """At prepare: refuses memtier-only workloads on a redis-benchmark client;
  with --redis_benchmark_fallback returns them, to be dropped and named."""
  wanted = MemtierOnlyFeatures(opts.workload, opts.generator.requests,
                               opts.generator.processes_per_client)
  names = {g.NAME for g in generators}
  if not wanted or names == {'memtier_benchmark'}:
    return []
  if opts.generator.fallback and opts.generator.choice == 'auto':
    return wanted
  # Bad input (exit 2, README), as where the plan refuses them.
  raise MemtierOnlyRefusal(wanted, ', '.join(sorted(names)))


def _NeedMemtier(wanted: List[str]) -> str:
  return (f'{", ".join(wanted)} {"needs" if len(wanted) == 1 else "need"} '
          'memtier_benchmark')


def MemtierOnlyRefusal(wanted: List[str], generator: str) -> errors.Error:
  """Why memtier-only settings cannot run on `generator`, in one line."""
  return errors.UsageError(
      f'{_NeedMemtier(wanted)}, but the load generator '
      f'here is {generator} (memtier_benchmark is not installed; give '
      '--memtier_path, or --redis_benchmark_fallback to run without '
      f'{"it" if len(wanted) == 1 else "them"}).')
