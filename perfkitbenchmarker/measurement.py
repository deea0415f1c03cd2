"""Load points and measurements shared by load generators and the search.

This module is pure data: no flags, no VMs, no I/O. Load generators turn their
tool's output into a `Measurement`; the latency-capped search reads only
`Measurement`s and proposes `Load`s. A new load generator plugs in by producing
these records; a new search policy by consuming them.
"""

import dataclasses
import functools
import math
from typing import (Callable, Dict, Mapping, Optional, Sequence, Tuple,
                    Union)

from perfkitbenchmarker import latency_histogram

def FiniteFloat(value) -> Optional[float]:
  """A number read from text (a tool's output, a file, a record) or a
  value: None when it is missing, no number, NaN or infinite (what every
  parser and reader of figures here counts as no figure)."""
  try:
    number = float(value)
  except (TypeError, ValueError):
    return None
  return number if math.isfinite(number) else None


# Metadata key naming where a measurement's raw evidence is kept (paths
# relative to the run directory, comma-separated; evidence.py).
RAW_OUTPUT_KEY = 'raw_output'

# Metadata key of a probe whose load generator was stopped at a time bound
# before its work was done (a request-count tool run slower than planned):
# the bound in seconds; its figures are of what it did until then.
STOPPED_AT_KEY = 'stopped_at_bound_s'

# The latency statistics a cap can bound (--latency_cap_statistic), each
# with the percentile it stands for (None: the operation-weighted mean).
AVERAGE = 'avg'
STATISTIC_PERCENTILES = {
    AVERAGE: None, 'p50': 50.0, 'p90': 90.0, 'p95': 95.0, 'p99': 99.0,
    'p99.9': 99.9}
STATISTICS = tuple(STATISTIC_PERCENTILES)
# The Measurement field holding each percentile.
_PERCENTILE_FIELDS = {
    50.0: 'p50_latency_ms', 90.0: 'p90_latency_ms', 95.0: 'p95_latency_ms',
    99.0: 'p99_latency_ms', 99.9: 'p999_latency_ms'}


class InvalidLatencyCap(ValueError):
  """A latency cap that is not a positive time or not a known statistic."""


@dataclasses.dataclass(frozen=True)
class LatencyCap:
  """What a capped figure's latency must stay strictly under.

  Attributes:
    ms: the bound in milliseconds (positive, finite).
    statistic: which latency statistic is bounded: 'avg' (the operation-
      weighted mean, the seed study's) or a percentile ('p50' .. 'p99.9').
  """
  ms: float
  statistic: str = AVERAGE

  def __post_init__(self):
    if (isinstance(self.ms, bool) or not isinstance(self.ms, (int, float))
        or not math.isfinite(self.ms) or self.ms <= 0):
      raise InvalidLatencyCap(
          f'latency cap {self.ms!r} ms: must be a positive, finite number of '
          'milliseconds, e.g. 1.0.')
    if self.statistic not in STATISTIC_PERCENTILES:
      raise InvalidLatencyCap(
          f'latency cap statistic {self.statistic!r}: must be one of '
          f'{", ".join(STATISTICS)}.')

  @property
  def is_average(self) -> bool:
    return self.statistic == AVERAGE

  def StatisticName(self) -> str:
    """'average' or the percentile's name ('p99'), for sentences."""
    return StatisticName(self.statistic)

  def Describe(self) -> str:
    """E.g. '1 ms average' or '1 ms p99'."""
    return f'{self.ms:g} ms {self.StatisticName()}'

  def Short(self) -> str:
    """'1 ms' for the average (the seed study's wording), '1 ms p99' for a
    percentile: for sentences such as 'over the 1 ms p99 cap'."""
    return f'{self.ms:g} ms' + ('' if self.is_average else
                                f' {self.statistic}')


def PercentileFields(value_at: Callable[[float], Optional[float]]
                     ) -> Dict[str, Optional[float]]:
  """Measurement's percentile fields, each from `value_at(percentile)`."""
  return {field: value_at(percentile)
          for percentile, field in _PERCENTILE_FIELDS.items()}


def StatisticName(statistic: str) -> str:
  return 'average' if statistic == AVERAGE else statistic


def AsCap(cap: Union[float, LatencyCap]) -> LatencyCap:
  """A bare number of ms is a cap on the average (the seed study's)."""
  return cap if isinstance(cap, LatencyCap) else LatencyCap(cap)


@dataclasses.dataclass(frozen=True, order=True)
class Load:
  """One point of offered load for a closed-loop load generator.

  Attributes:
    threads: load generator threads (memtier -t, redis-benchmark --threads).
    clients: connections per thread (memtier -c).
    pipeline: requests in flight per connection (memtier --pipeline, -P).
    rate_per_connection: requests per second each connection may send
      (memtier --rate-limiting); 0, the default, sends as fast as answers
      come back (a closed loop).
  """
  threads: int
  clients: int
  pipeline: int = 1
  rate_per_connection: int = 0

  @property
  def connections(self) -> int:
    return self.threads * self.clients

  @property
  def outstanding_requests(self) -> int:
    """Requests in flight at any moment in a closed loop."""
    return self.connections * self.pipeline

  def Describe(self) -> str:
    text = f'{self.threads}x{self.clients}'
    if self.pipeline != 1:
      text += f' p{self.pipeline}'
    if self.rate_per_connection:
      text += f' @{self.rate_per_connection}/s'
    return text


@dataclasses.dataclass(frozen=True)
class SecondStats:
  """One second of a probe, from the load generator's per-second series.

  Attributes:
    second: the second's index from the tool's start.
    ops: operations completed in it.
    average_latency_ms: their mean latency (None without operations).
    warmup: inside the configured warm-up (kept, left out of the figures).
    percentiles: (percentile, ms) the tool reported for this second; for
      several processes side by side the largest of theirs, an upper bound
      (a union's percentile never exceeds its largest part's).
    complete: the second was loaded from start to end (a run's last second
      holds only the replies still in flight; a request-count tool's
      processes end apart).
  """
  second: int
  ops: int
  average_latency_ms: Optional[float]
  warmup: bool = False
  percentiles: Tuple[Tuple[float, float], ...] = ()
  complete: bool = True

  def LatencyMs(self, statistic: str) -> Optional[float]:
    """This second's figure for a cap statistic ('avg', 'p99', ...), or
    None when the tool gave none for it."""
    if statistic == AVERAGE:
      return self.average_latency_ms
    wanted = STATISTIC_PERCENTILES.get(statistic)
    return next((ms for p, ms in self.percentiles
                 if wanted is not None and abs(p - wanted) < 1e-6), None)


def CombineSeconds(series: Sequence[Sequence[SecondStats]]
                   ) -> Tuple[SecondStats, ...]:
  """Per-second series of parts that ran side by side, second by second:
  operations add up, the mean is weighted by them, each percentile is the
  largest part's (an upper bound), and a second is complete only when every
  part has it complete."""
  series = [s for s in series if s]
  if len(series) == 1:
    return tuple(series[0])
  by_second: dict = {}
  for part in series:
    for s in part:
      by_second.setdefault(s.second, []).append(s)
  combined = []
  for second in sorted(by_second):
    parts = by_second[second]
    ops = sum(p.ops for p in parts)
    timed = [p for p in parts if p.ops and p.average_latency_ms is not None]
    weight = sum(p.ops for p in timed)
    average = (sum(p.ops * p.average_latency_ms for p in timed) / weight
               if weight else None)
    each = [dict(p.percentiles) for p in parts]  # Those every part has.
    percentiles = tuple((k, max(d[k] for d in each))
                        for k in sorted(set(each[0]).intersection(*each)))
    combined.append(SecondStats(
        second, ops, average, warmup=any(p.warmup for p in parts),
        percentiles=percentiles,
        complete=len(parts) == len(series) and all(p.complete
                                                    for p in parts)))
  return tuple(combined)


@dataclasses.dataclass(frozen=True)
class Measurement:
  """What one probe at one load measured.

  Attributes:
    load: the load the probe offered.
    throughput: operations per second over the measured (non-warm-up) part.
    average_latency_ms: mean request latency, weighted by operation counts.
    p50_latency_ms .. p999_latency_ms: percentiles (50, 90, 95, 99, 99.9),
      if known.
    duration_s: seconds the figures above cover.
    ops: operations counted in that span.
    per_second: per-second series (warm-up seconds kept but tagged).
    client_saturated: the load generator's CPU, not the server, was the limit.
    client_cpu_busy_fraction: busy share of the client's cores, if measured.
    client_cpu: the load generator's busiest thread and core, if measured.
    histogram: the latency histogram of the measured part, when the tool
      gives one (memtier without warm-up); lets `Combine` merge percentiles.
    metadata: load generator name and version and other facts for samples.
  """
  load: Load
  throughput: float
  average_latency_ms: float
  p50_latency_ms: Optional[float] = None
  p99_latency_ms: Optional[float] = None
  p999_latency_ms: Optional[float] = None
  duration_s: float = 0.0
  ops: int = 0
  per_second: Tuple[SecondStats, ...] = ()
  client_saturated: bool = False
  client_cpu_busy_fraction: Optional[float] = None
  histogram: Optional[latency_histogram.LatencyHistogram] = None
  # The load generator's threads and cores over the probe, when measured
  # (a load_generators.client_cpu.ClientCpu; the probe driver reads it).
  client_cpu: Optional[object] = None
  metadata: Mapping[str, object] = dataclasses.field(default_factory=dict)
  # Each client VM's load-generator side over the load window (an
  # attribution.SideCpu each) and the window's wall-clock (start, end):
  # the server's counters are read over the same span.
  client_sides: Tuple[object, ...] = ()
  load_window: Optional[Tuple[float, float]] = None
  # Last, so that records built positionally keep their meaning.
  p90_latency_ms: Optional[float] = None
  p95_latency_ms: Optional[float] = None
  # The tool ran a request count (redis-benchmark, memtier -n): it ended
  # when its requests were done, not at a test time (SideBySideRate).
  request_count: bool = False

  def LatencyMs(self, statistic: str = AVERAGE) -> Optional[float]:
    """The latency statistic a cap bounds ('avg', 'p99', ...); None for a
    percentile this measurement does not know."""
    if statistic not in STATISTIC_PERCENTILES:
      raise InvalidLatencyCap(
          f'latency statistic {statistic!r}: must be one of '
          f'{", ".join(STATISTICS)}.')
    percentile = STATISTIC_PERCENTILES[statistic]
    if percentile is None:
      return self.average_latency_ms
    return getattr(self, _PERCENTILE_FIELDS[percentile])

  def UnderCap(self, cap: Union[float, LatencyCap]) -> bool:
    """Whether the cap's statistic is strictly under it (a bare number caps
    the average). An unknown percentile is never under a cap: a figure
    nobody measured cannot hold one."""
    cap = AsCap(cap)
    value = self.LatencyMs(cap.statistic)
    return value is not None and value < cap.ms


def WeightedAverageLatencyMs(parts: Sequence[Measurement]) -> float:
  """Average latency of several measurements, weighted by operation counts.

  The one rule for every combination (client processes side by side, client
  VMs side by side, repeats of one load). A part that did not count its
  operations is weighted by throughput x duration, the count it implies.
  """
  if not parts:
    raise ValueError('WeightedAverageLatencyMs needs a measurement.')
  weights = [p.ops if p.ops > 0 else p.throughput * max(p.duration_s, 1e-9)
             for p in parts]
  total = sum(weights)
  if total <= 0:
    raise ValueError('WeightedAverageLatencyMs: no operations measured.')
  return sum(w * p.average_latency_ms for w, p in zip(weights, parts)) / total


def SideBySideRate(counts_and_rates: Sequence[Tuple[float, float]]) -> float:
  """Operations per second of request-count runs that started together:
  every run's operations over the longest one's span (its operations / its
  rate). Each ends when its requests are done, so the sum of their rates,
  each over its own span, is what the server served per second only if
  they ended together: on two client VMs, redis-benchmark's SET and GET
  processes of a 2 s probe ran 1.46 to 1.84 s, and their rates summed to
  94,421 ops/s where their 159,440 requests in 1.84 s were 86,651 a
  second."""
  spans = [count / rate for count, rate in counts_and_rates if rate > 0]
  if not spans or max(spans) <= 0:
    return sum(rate for _, rate in counts_and_rates)
  return sum(count for count, _ in counts_and_rates) / max(spans)


def Combine(parts: Sequence[Measurement], load: Load) -> Measurement:
  """One Measurement for measurements that ran side by side.

  Throughputs and operation counts add up (for request-count runs, every
  part's operations over the longest part's span: SideBySideRate, since
  they end apart); the average latency is weighted
  by operation counts; percentiles come from the merged histograms when
  every part has one (exact), else the worst part's (an upper bound), and
  `percentile_merge` says which.
  """
  if not parts:
    raise ValueError('Nothing to combine.')
  if len(parts) == 1:
    return dataclasses.replace(parts[0], load=load)
  histogram = None
  if all(p.histogram is not None for p in parts):
    histogram = functools.reduce(lambda a, b: a.Merge(b),
                                 (p.histogram for p in parts))

  def Percentile(percentile: float) -> Optional[float]:
    if histogram is not None:
      return histogram.ValueAtPercentile(percentile)
    values = [getattr(p, _PERCENTILE_FIELDS[percentile]) for p in parts]
    return max((v for v in values if v is not None), default=None)

  busy = [p.client_cpu_busy_fraction for p in parts
          if p.client_cpu_busy_fraction is not None]
  metadata = dict(parts[0].metadata)
  metadata['percentile_merge'] = ('merged_histograms' if histogram is not None
                                  else 'max_over_parts')
  metadata['client_processes'] = sum(
      int(p.metadata.get('client_processes', 1)) for p in parts)
  windows = [p.load_window for p in parts if p.load_window]
  window = None
  if windows:
    # The span every part was loading in; if none, the span of them all.
    start, end = max(w[0] for w in windows), min(w[1] for w in windows)
    window = ((start, end) if end > start else
              (min(w[0] for w in windows), max(w[1] for w in windows)))
  raw = [path for p in parts
         for path in str(p.metadata.get(RAW_OUTPUT_KEY) or '').split(',')
         if path]
  if raw:  # Every part's evidence, each named once.
    metadata[RAW_OUTPUT_KEY] = ','.join(dict.fromkeys(raw))
  request_count = all(p.request_count for p in parts)
  throughput = (SideBySideRate([(p.ops, p.throughput) for p in parts])
                if request_count and all(p.ops > 0 for p in parts)
                else sum(p.throughput for p in parts))
  return Measurement(
      load=load, throughput=throughput,
      average_latency_ms=WeightedAverageLatencyMs(parts),
      **PercentileFields(Percentile),
      duration_s=max(p.duration_s for p in parts),
      ops=sum(p.ops for p in parts),
      client_saturated=any(p.client_saturated for p in parts),
      client_cpu_busy_fraction=max(busy) if busy else None,
      per_second=CombineSeconds([p.per_second for p in parts]),
      histogram=histogram, metadata=metadata,
      client_sides=tuple(s for p in parts for s in p.client_sides),
      load_window=window, request_count=request_count)


# A load generator's facts of each repeat (memtier_results' metadata) that
# their combination gives over them all, as it does its figures: counts and
# seconds added up, rates their mean. Combine copies the first repeat's
# metadata, so an answer of 375,233 ops at 62,459 ops/s said set_ops 70,861
# and reported_ops_per_sec 70,801.88, its first repeat's.
_REPEATS_SUMMED = ('set_ops', 'get_ops', 'get_misses', 'real_duration_s',
                   'reported_duration_s')
_REPEATS_AVERAGED = ('reported_ops_per_sec', 'series_throughput',
                     'moved_per_sec', 'ask_per_sec')


def FactsCombined(metadata: Mapping[str, object],
                  parts: Sequence[Measurement], summed: Sequence[str] = (),
                  averaged: Sequence[str] = ()) -> Dict[str, object]:
  """`metadata` with each fact of `summed` and `averaged` that a part
  records given over all `parts` (their sum, their mean), or left out
  where some part lacks it or it is no number: the one rule for a load
  generator's counts and rates over parts, which Combine and CombineRepeats
  take from the first part alone (side by side: client VMs, shards;
  one after another: repeats)."""
  combined = dict(metadata)
  for keys, combine in ((summed, sum),
                        (averaged, lambda v: sum(v) / len(v))):
    for key in keys:
      values = [p.metadata.get(key) for p in parts]
      if all(v is None for v in values):
        continue
      combined.pop(key, None)
      if all(isinstance(v, (int, float)) and not isinstance(v, bool)
             for v in values):
        combined[key] = combine(values)
  return combined


def CombineRepeats(repeats: Sequence[Measurement]) -> Measurement:
  """One Measurement for repeats of one load that ran one after another.

  Latency and percentiles are aggregated as `Combine` does (operation-
  weighted average, merged histograms when every repeat has one); the
  throughput is the mean of the repeats' throughputs (the figure whose
  confidence interval the search reports), the duration and operation count
  are the totals, and `aggregated_repeats` says how many were combined.
  """
  if not repeats:
    raise ValueError('Nothing to combine.')
  combined = Combine(repeats, repeats[0].load)
  metadata = dict(combined.metadata)
  metadata['client_processes'] = repeats[0].metadata.get(
      'client_processes', 1)
  metadata['aggregated_repeats'] = len(repeats)
  # Interference is any repeat's, not the first one's (Combine copies the
  # first part's metadata): a disturbed repeat marks the combination.
  foreign = [r.metadata.get('foreign_cpu_pct') for r in repeats
             if isinstance(r.metadata.get('foreign_cpu_pct'), (int, float))]
  if foreign:
    metadata['foreign_cpu_pct'] = max(foreign)
  if any('interference' in r.metadata for r in repeats):
    metadata['interference'] = any(
        bool(r.metadata.get('interference')) for r in repeats)
  if len(repeats) == 1:
    metadata['percentile_merge'] = 'single_repeat'
  else:
    metadata = FactsCombined(metadata, repeats, _REPEATS_SUMMED,
                             _REPEATS_AVERAGED)
  return dataclasses.replace(
      combined,
      throughput=sum(r.throughput for r in repeats) / len(repeats),
      duration_s=sum(r.duration_s for r in repeats),
      ops=sum(r.ops for r in repeats),
      per_second=(),
      metadata=metadata)
