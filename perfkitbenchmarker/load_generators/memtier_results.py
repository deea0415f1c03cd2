"""Parses memtier_benchmark output into `measurement.Measurement`s.

Extension seam: `Measure` (JSON and stdout of the processes of one probe ->
one Measurement); a staircase run becomes one Measurement per step in
memtier_staircase.py. Nothing here runs a tool or reads a flag.

Facts about memtier's output this parser relies on (see tests/data):
  * The printed Ops/sec is Count / 'Total duration', and Total duration can be
    a whole second off either way (redis/memtier_benchmark PR #209), so
    throughput here is Count / the real run duration: the JSON's span
    corrected by that whole second (2.001-2.029 s for a real 2 s run, not
    the nominal 2 s), cross-checked with the per-second series. Clients
    that start either side of a second's boundary move it by a fraction of
    a second (924 ms for a 1 s run under a CPU hog): a timed probe is held
    between its test time and that plus its slowest reply.
  * JSON 'Average Latency' of Totals is truncated to whole ms in mixed runs;
    'Accumulated Latency' is the exact sum truncated to whole ms, so
    Accumulated Latency / Count is the mean.
  * The stdout 'Avg. Latency' is the HDR histogram mean (bucket midpoints),
    slightly above the exact mean; it is kept only as a reference figure.
  * JSON percentiles and the compressed HDR histogram are exact to the
    histogram's resolution; stdout prints the same percentiles.
  * An object of the JSON names each key once (memtier cuts a percentile's
    key to six characters: PRINT_PERCENTILES' p50.00 ... p99.90 differ in
    them), so a key given twice is damage, refused as in every file a run
    wrote (json_input).
"""

import collections
import dataclasses
import functools
import re
from typing import Dict, Mapping, Optional, Sequence, Tuple

from perfkitbenchmarker import json_input
from perfkitbenchmarker import latency_histogram
from perfkitbenchmarker import measurement

LOAD_GENERATOR = 'memtier_benchmark'
PERCENTILES = (50.0, 90.0, 95.0, 99.0, 99.9)
# memtier's --print-percentiles for PERCENTILES: every statistic a latency
# cap can bound (measurement.STATISTICS) is then in its JSON and stdout.
PRINT_PERCENTILES = '50,90,95,99,99.9'
# memtier's duration bug is up to a whole second (20 % of a 5 s run), while
# honest runs of seconds agree to a fraction of a percent. Its Ops/sec
# divides by the span, which is over the series' whole seconds by the
# slowest reply (up to 29 ms in real 2 s runs, more over the cap): 3-4 % of
# a 1 s run, so a short run is allowed more (_DurationBugTolerance).
DURATION_BUG_TOLERANCE = 0.01


def _DurationBugTolerance(duration_s: float) -> float:
  """How far Ops/sec may be off the series' rate before it says a whole
  second was lost: half of what a second lost or gained does to a run of
  `duration_s`, at least DURATION_BUG_TOLERANCE (a 1 % tolerance flagged
  honest 1 s runs whose span was 1.029 s)."""
  return max(DURATION_BUG_TOLERANCE, 0.5 / (duration_s + 1))

LatencyHistogram = latency_histogram.LatencyHistogram
Percentiles = Tuple[Tuple[float, float], ...]  # (percentile, latency ms)


def _ParsePercentiles(entry: Mapping[str, object]) -> Percentiles:
  """Reads keys such as 'p50.00' and 'p99.90'."""
  found = []
  for key, value in entry.items():
    match = re.fullmatch(r'p(\d+(?:\.\d+)?)', key)
    if match and isinstance(value, (int, float)):
      found.append((float(match.group(1)), float(value)))
  return tuple(sorted(found))


@dataclasses.dataclass(frozen=True)
class MemtierSecond:
  """One second of memtier's per-second 'Time-Serie'."""
  second: int
  count: int
  total_latency_ms: float
  min_latency_ms: Optional[float] = None
  max_latency_ms: Optional[float] = None
  percentiles: Percentiles = ()

  @property
  def average_latency_ms(self) -> Optional[float]:
    return self.total_latency_ms / self.count if self.count else None

  @classmethod
  def FromJson(cls, second: int, entry: Mapping) -> 'MemtierSecond':
    count = int(entry.get('Count', 0))
    accumulated = float(entry.get('Accumulated Latency', 0))
    average = entry.get('Average Latency')
    # The sum is truncated to whole ms and the average rounded to 1 us; for a
    # sparse second the average is the finer bound, for a busy one the sum.
    total = accumulated
    if average is not None:
      total = min(max(float(average) * count, accumulated), accumulated + 1)
    return cls(second, count, total, entry.get('Min Latency'),
               entry.get('Max Latency'), _ParsePercentiles(entry))


@dataclasses.dataclass(frozen=True)
class MemtierCommandStats:
  """Whole-run figures for one command type (Sets, Gets or Totals)."""
  count: int
  reported_ops_per_sec: float
  accumulated_latency_ms: float
  percentiles: Percentiles
  time_series: Tuple[MemtierSecond, ...]
  histogram: Optional[LatencyHistogram] = None
  # Keys asked for and not found (GETs only): counted as operations too.
  misses: int = 0

  @property
  def average_latency_ms(self) -> Optional[float]:
    return self.accumulated_latency_ms / self.count if self.count else None

  def Percentile(self, percentile: float) -> Optional[float]:
    return next((value for key, value in self.percentiles
                 if abs(key - percentile) < 1e-6), None)

  @classmethod
  def FromJson(cls, section: Mapping) -> 'MemtierCommandStats':
    latencies = section.get('Percentile Latencies', {})
    encoded = latencies.get('Histogram log format', {}).get(
        'Compressed Histogram')
    histogram = LatencyHistogram.FromCompressed(encoded) if encoded else None
    count = int(section.get('Count', 0))
    percentiles = dict(_ParsePercentiles(latencies)) if count else {}
    for percentile in PERCENTILES:  # Not printed unless asked for.
      if percentile not in percentiles and histogram and count:
        percentiles[percentile] = histogram.ValueAtPercentile(percentile)
    series = sorted((int(second), entry) for second, entry in
                    section.get('Time-Serie', {}).items())
    # Hits and misses are only given as rates over the (whole-second wrong)
    # Total duration; their ratio is exact.
    hits, missed = (measurement.FiniteFloat(section.get(key)) or 0.0
                    for key in ('Hits/sec', 'Misses/sec'))
    misses = (round(count * missed / (hits + missed))
              if hits + missed > 0 else 0)
    return cls(count, float(section.get('Ops/sec', 0.0)),
               float(section.get('Accumulated Latency', 0)),
               tuple(sorted(percentiles.items())),
               tuple(MemtierSecond.FromJson(s, e) for s, e in series),
               histogram, misses)


# memtier logs each error reply on its stderr (client::handle_response:
# 'server <host:port> handle error response: <reply>') and counts it in its
# JSON as an operation like a served one: every SET an -OOM refused, a
# -NOPERM, a -CLUSTERDOWN. (The MOVED and ASK it follows in cluster mode are
# not logged so.)
_ERROR_REPLY = re.compile(r'handle error response: ([^\r\n]*)')


def ErrorReplies(stderr_text: Optional[str]) -> Tuple[int, Optional[str]]:
  """How many error replies memtier logged on `stderr_text`, and the first
  (None when there was none)."""
  count, first = 0, None
  for match in _ERROR_REPLY.finditer(stderr_text or ''):
    count += 1
    first = first or match.group(1).strip()
  return count, first


# And what it logs when a connection fails (shard_connection: the server
# went away or stopped answering): it counts none of that connection's
# requests still unanswered, and a thread it restarts for it starts its
# figures again (a probe whose shard was killed read 0 operations).
_CONNECTION_LOST = re.compile(
    r'((?:Connection error|connection dropped|Connection timeout'
    r'|connect failed)[^\r\n]*)', re.IGNORECASE)


def ConnectionLost(stderr_text: Optional[str]) -> Optional[str]:
  """The first connection failure memtier logged on `stderr_text`, or
  None."""
  match = _CONNECTION_LOST.search(stderr_text or '')
  return match.group(1).strip() if match else None


# Its progress line, one a second on stderr ('[RUN #1 45%,   2 secs]  4
# threads: 1234 ops, 617 (avg: 617) ops/sec, ...'): it says 'conn errors'
# whatever happened and, in a run that hangs, buries the line that named
# what did.
_PROGRESS = '[RUN #'
_PROGRESS_OPS = re.compile(r'\[RUN #\d+ [^]]*\].*? ops, +(\d+) \(avg:')


def IsProgressLine(line: str) -> bool:
  return line.strip().startswith(_PROGRESS)


def IdleSeconds(stderr_text: Optional[str]) -> int:
  """How many of memtier's last progress lines on `stderr_text` say no
  operation was done that second (the server stopped answering)."""
  ops = [int(m.group(1)) for m in
         map(_PROGRESS_OPS.match, (stderr_text or '').splitlines()) if m]
  idle = 0
  while idle < len(ops) and ops[-1 - idle] == 0:
    idle += 1
  return idle


# What Redis answers a connection over its maxclients (any client prints
# it), and why it may be fewer than asked for: at start it lowers
# maxclients to its open-file limit less 32 when it cannot raise that limit
# ('ulimit -n 1024' made a probe of 1,024 connections fail so, and the run
# with it).
_MAXCLIENTS_ERROR = 'max number of clients reached'


def FailureHint(said: str) -> str:
  """What to do about a load generator's failure, when its words say
  (appended to them), else ''."""
  if _MAXCLIENTS_ERROR not in said:
    return ''
  return ('; the shard took no more connections: Redis lowers maxclients '
          'to its open-file limit less 32 when that limit is lower (ulimit '
          '-Hn where it runs); raise it for the run, or open fewer '
          'connections (--memtier_clients, '
          '--memtier_adaptive_max_connections)')


def ParseStdoutTable(stdout_text: str) -> Dict[str, Dict[str, Optional[float]]]:
  """The ALL STATS table of memtier's stdout, by row type then column name.

  Columns are found by header name, so cluster output (extra MOVED/sec and
  ASK/sec columns) and other percentile lists parse alike.
  """
  lines = stdout_text.splitlines()
  starts = [i for i, line in enumerate(lines) if line.strip() == 'ALL STATS']
  rows, header = {}, None
  for line in lines[starts[-1] if starts else 0:]:
    if line.startswith('Type ') and 'Ops/sec' in line:
      header = re.findall(r'\S+(?: Latency)?', line)
      continue
    fields = line.split()
    if header and len(fields) == len(header) and fields[0].isalpha():
      rows[fields[0]] = {
          name: None if value == '---' else float(value)
          for name, value in zip(header[1:], fields[1:])}
  return rows


def _Knots(second: MemtierSecond) -> Sequence[Tuple[float, float]]:
  """(latency, cumulative fraction) points known for one second's CDF."""
  points = [(p / 100, v) for p, v in second.percentiles]
  if second.min_latency_ms is not None:
    points.insert(0, (0.0, float(second.min_latency_ms)))
  if second.max_latency_ms is not None:
    points.append((1.0, float(second.max_latency_ms)))
  knots, floor = [], 0.0
  for fraction, latency in sorted(points):
    floor = max(floor, latency)  # Bucket rounding can put p50 above max.
    knots.append((floor, fraction))
  return knots


def _Cdf(knots: Sequence[Tuple[float, float]], latency: float) -> float:
  if latency < knots[0][0]:
    return 0.0
  for (x0, f0), (x1, f1) in zip(knots, knots[1:]):
    if x0 <= latency < x1:
      return f0 + (f1 - f0) * (latency - x0) / (x1 - x0)
  return knots[-1][1]


def MixturePercentile(seconds: Sequence[MemtierSecond],
                      percentile: float) -> Optional[float]:
  """A percentile of several seconds together, from per-second summaries.

  The CDF of a union of samples is the count-weighted mean of the parts'
  CDFs, so the union's percentile is where that mean crosses percentile/100.
  Each second's CDF is known at its min, reported percentiles and max and is
  taken as linear in between. The answer is exact when the seconds share a
  distribution and always lies between the smallest and largest per-second
  value at that percentile; averaging percentiles has neither property.
  """
  parts = [(s.count, _Knots(s)) for s in seconds if s.count and s.percentiles]
  if not parts:
    return None
  total = sum(count for count, _ in parts)
  target = percentile / 100

  def Mixture(latency):
    return sum(count * _Cdf(knots, latency) for count, knots in parts) / total

  latencies = sorted({x for _, knots in parts for x, _ in knots})
  prev_x, prev_f = latencies[0], Mixture(latencies[0])
  if prev_f >= target:
    return prev_x
  for x in latencies[1:]:
    f = Mixture(x)
    if f >= target:  # The mixture is linear between neighbouring knots.
      return prev_x + (x - prev_x) * (target - prev_f) / (f - prev_f)
    prev_x, prev_f = x, f
  return latencies[-1]


# A timed run outlasts its test time by the replies still in flight when it
# ends (1-29 ms in real 2 s runs), so its span is corrected towards the test
# time plus this.
_TAIL_S = 0.1


def _RealDuration(doc: Mapping, test_time_s: Optional[float]
                  ) -> Tuple[float, str, bool]:
  """Seconds the run really lasted, where that came from, and whether
  memtier's own span was not believed as it was.

  The span is the JSON's Finish time - Start time, each an average over
  memtier's clients whose seconds and microseconds are averaged apart with
  the seconds truncated (run_stats::merge), so either end can come out a
  whole second early: the span is off by -1, 0 or +1 s (the printed Ops/sec
  divides by it). It is corrected by the whole seconds that bring it
  nearest to the test time (given, else the JSON's) plus _TAIL_S; a
  request-count run (no test time) is brought into the second its
  per-second series ends in. Clients that start (or stop) either side of a
  second's boundary move the averages by a fraction of a second too, so a
  timed probe's (`test_time_s` given) is then held within what it can have
  lasted (_TimedBounds). An interrupted run keeps its span; a JSON without
  one gives the test time itself.
  """
  runtime = doc['ALL STATS'].get('Runtime', {})
  interrupted = str(runtime.get('Interrupted', 'false')).lower() == 'true'
  nominal = test_time_s or doc.get('configuration', {}).get('test_time') or 0
  span = (runtime.get('Finish time', 0) - runtime.get('Start time', 0)) / 1000
  if span <= 0:
    if nominal:
      return float(nominal), 'test_time_argument', False
    raise ValueError('memtier JSON has no usable run duration')
  if interrupted:
    return span, 'json_runtime_start_finish', False
  if nominal:
    target = float(nominal) + _TAIL_S
  else:
    seconds = [int(k) for k in doc['ALL STATS'].get('Totals', {}).get(
        'Time-Serie', {})]
    if not seconds:
      return span, 'json_runtime_start_finish', False
    target = max(seconds) + 0.5
  correction = round(target - span)
  duration = span + correction
  source = 'json_runtime_start_finish' + (
      '_whole_seconds_corrected' if correction else '')
  bounds = _TimedBounds(doc, test_time_s) if test_time_s else None
  if bounds and not bounds[0] <= duration <= bounds[1]:
    return (min(max(duration, bounds[0]), bounds[1]),
            source + '_bounded_by_test_time', True)
  return duration, source, bool(correction)


def _TimedBounds(doc: Mapping, test_time_s: float
                 ) -> Optional[Tuple[float, float]]:
  """The fewest and most seconds a timed run of `test_time_s` can have
  lasted, or None for a staircase (it stops on the wall clock's whole
  seconds) or a JSON without its slowest reply.

  memtier stops each client at its first reply once that client has run the
  test time (client::finished, which reads the second of the last reply),
  so every client ran at least the test time, and at most that plus the
  slowest reply (a reply's latency counts from its request's send, which
  came before the test time ended) and, under --rate-limiting, one wait for
  the limiter's next firing (memtier_benchmark.cpp: ceil(rate / 50)
  requests a firing, rate // that many firings a second).
  """
  config = doc.get('configuration', {})
  if config.get('clients_start'):
    return None
  slowest = measurement.FiniteFloat(
      doc['ALL STATS'].get('Totals', {}).get('Max Latency'))
  if slowest is None:
    return None
  rate = int(measurement.FiniteFloat(config.get('rate_limit')) or 0)
  wait = 1 / (rate // -(-rate // 50)) if rate >= 1 else 0.0
  return (float(test_time_s),
          test_time_s + max(0.0, slowest) / 1000 + wait)


# MemtierResult's percentile fields, named as Measurement names them.
_FIELDS = tuple(measurement.PercentileFields(lambda _: None))


def _SecondStats(seconds, warmup_s: int, real_duration_s: float
                 ) -> Tuple[measurement.SecondStats, ...]:
  """The per-second series with each second's percentiles; the seconds at
  and past the run's real end hold only replies still in flight, so they
  are marked incomplete."""
  whole = int(real_duration_s + 1e-9)
  return tuple(measurement.SecondStats(
      s.second, s.count, s.average_latency_ms, warmup=s.second < warmup_s,
      percentiles=s.percentiles, complete=s.second < whole)
               for s in seconds)


@dataclasses.dataclass(frozen=True)
class MemtierResult:
  """What one memtier run (or several, combined) measured.

  throughput, average_latency_ms, percentiles, ops and duration_s cover the
  run after the warm-up; `per_second` keeps every second, warm-up tagged.
  """
  sets: MemtierCommandStats
  gets: MemtierCommandStats
  totals: MemtierCommandStats
  throughput: float
  average_latency_ms: float
  p50_latency_ms: Optional[float]
  p99_latency_ms: Optional[float]
  p999_latency_ms: Optional[float]
  percentile_basis: str
  ops: int
  duration_s: float
  real_duration_s: float
  duration_source: str
  warmup_s: int
  per_second: Tuple[measurement.SecondStats, ...]
  reported_ops_per_sec: float
  reported_duration_s: float
  series_throughput: Optional[float]
  duration_bug_detected: bool
  histogram_mean_latency_ms: Optional[float] = None
  moved_per_sec: Optional[float] = None
  ask_per_sec: Optional[float] = None
  processes: int = 1
  # When the run started (ms since the epoch, memtier's clock): second 0 of
  # `per_second`.
  start_ms: Optional[int] = None
  p90_latency_ms: Optional[float] = None
  p95_latency_ms: Optional[float] = None

  @classmethod
  def FromOutputs(cls, json_text: str, stdout_text: Optional[str] = None,
                  test_time_s: Optional[float] = None,
                  warmup_s: int = 0) -> 'MemtierResult':
    """Parses one run from its --json-out-file text and, if kept, stdout
    (MOVED/ASK rates and the histogram mean). With `warmup_s`, percentiles
    come from the measured seconds' summaries (`MixturePercentile`): memtier
    keeps no per-second histogram."""
    doc = json_input.Loads(json_text)
    stats = doc['ALL STATS']
    sets, gets, totals = (MemtierCommandStats.FromJson(stats.get(name, {}))
                          for name in ('Sets', 'Gets', 'Totals'))
    real_duration_s, duration_source, span_disbelieved = _RealDuration(
        doc, test_time_s)
    row = ParseStdoutTable(stdout_text).get('Totals', {}) if stdout_text else {}
    measured = [s for s in totals.time_series if s.second >= warmup_s]
    if warmup_s:
      ops = sum(s.count for s in measured)
      total_latency = sum(s.total_latency_ms for s in measured)
      duration_s = real_duration_s - warmup_s
      basis = 'per_second_cdf_mixture_after_warmup'
      value_at = functools.partial(MixturePercentile, measured)
    else:
      ops, total_latency = totals.count, totals.accumulated_latency_ms
      duration_s = real_duration_s
      basis = 'whole_run_histogram'
      value_at = totals.Percentile
    if ops <= 0 or duration_s <= 0:
      raise ValueError(f'No operations measured after {warmup_s}s warm-up')
    # Complete seconds only: the last entry holds replies still in flight.
    full = [s.count for s in totals.time_series
            if s.second < int(real_duration_s + 1e-9)]
    series_throughput = sum(full) / len(full) if full else None
    reported = totals.reported_ops_per_sec
    bug = span_disbelieved or bool(
        series_throughput and abs(reported / series_throughput - 1) >
        _DurationBugTolerance(real_duration_s))
    runtime = stats.get('Runtime', {})
    return cls(
        sets=sets, gets=gets, totals=totals,
        throughput=ops / duration_s,
        average_latency_ms=total_latency / ops,
        **measurement.PercentileFields(value_at), percentile_basis=basis,
        ops=ops, duration_s=duration_s, real_duration_s=real_duration_s,
        duration_source=duration_source, warmup_s=warmup_s,
        per_second=_SecondStats(totals.time_series, warmup_s,
                                real_duration_s),
        reported_ops_per_sec=reported,
        reported_duration_s=float(runtime.get('Total duration', 0)) / 1000,
        series_throughput=series_throughput, duration_bug_detected=bug,
        histogram_mean_latency_ms=row.get('Avg. Latency'),
        moved_per_sec=row.get('MOVED/sec'), ask_per_sec=row.get('ASK/sec'),
        start_ms=runtime.get('Start time'))

  def ToMeasurement(self, load: measurement.Load,
                    metadata: Optional[Mapping[str, object]] = None
                    ) -> measurement.Measurement:
    """The result as a search `Measurement`; `metadata` entries win."""
    facts = {
        'load_generator': LOAD_GENERATOR,
        'histogram_mean_latency_ms': self.histogram_mean_latency_ms,
        'moved_per_sec': self.moved_per_sec,
        'ask_per_sec': self.ask_per_sec,
        'latency_basis': 'accumulated_latency_over_count',
        'percentile_basis': self.percentile_basis,
        'reported_ops_per_sec': self.reported_ops_per_sec,
        'reported_duration_s': self.reported_duration_s,
        'duration_bug_detected': self.duration_bug_detected,
        'real_duration_s': self.real_duration_s,
        'duration_source': self.duration_source,
        'series_throughput': self.series_throughput,
        'warmup_s': self.warmup_s,
        'processes': self.processes,
        'set_ops': self.sets.count,
        'get_ops': self.gets.count,
        'get_misses': self.gets.misses,
        'per_second_start_ms': self.start_ms,
    }
    facts = {k: v for k, v in facts.items() if v is not None}
    facts.update(metadata or {})
    return measurement.Measurement(
        load=load, throughput=self.throughput,
        average_latency_ms=self.average_latency_ms,
        **{field: getattr(self, field) for field in _FIELDS},
        duration_s=self.duration_s,
        ops=self.ops, per_second=self.per_second,
        histogram=self.totals.histogram if self.warmup_s == 0 else None,
        metadata=facts)


def _CombineCommandStats(parts: Sequence[MemtierCommandStats]):
  """Sums counts per second; per-second percentiles cannot be merged, so the
  combined series has none (combined percentiles use the parts' seconds)."""
  counts, latencies = collections.Counter(), collections.Counter()
  for s in (s for part in parts for s in part.time_series):
    counts[s.second] += s.count
    latencies[s.second] += s.total_latency_ms
  histogram = (functools.reduce(LatencyHistogram.Merge,
                                [part.histogram for part in parts])
               if all(part.histogram for part in parts) else None)
  keys = sorted({p for part in parts for p, _ in part.percentiles})
  if histogram:
    percentiles = tuple((p, histogram.ValueAtPercentile(p)) for p in keys)
  else:
    percentiles = tuple((p, max(part.Percentile(p) or 0 for part in parts))
                        for p in keys)
  return MemtierCommandStats(
      sum(p.count for p in parts), sum(p.reported_ops_per_sec for p in parts),
      sum(p.accumulated_latency_ms for p in parts), percentiles,
      tuple(MemtierSecond(s, counts[s], latencies[s]) for s in sorted(counts)),
      histogram, sum(p.misses for p in parts))


def CombineMemtierResults(results: Sequence[MemtierResult],
                          request_count: bool = False) -> MemtierResult:
  """Folds memtier processes that ran side by side into one result.

  Throughputs, counts and reported rates add up (with `request_count`, -n
  runs that end apart, the throughput is every operation over the longest
  run: measurement.SideBySideRate); average latency is weighted
  by operation counts. Percentiles come from the merged HDR histograms (exact)
  when there is no warm-up, else from the count-weighted CDF mixture of every
  process's measured seconds; `percentile_basis` records which.
  """
  if not results:
    raise ValueError('Nothing to combine')
  if len(results) == 1:
    return results[0]
  if len({r.warmup_s for r in results}) != 1:
    raise ValueError('Results with different warm-ups cannot be combined')
  warmup_s = results[0].warmup_s
  sets, gets, totals = (
      _CombineCommandStats([getattr(r, name) for r in results])
      for name in ('sets', 'gets', 'totals'))
  ops = sum(r.ops for r in results)
  if warmup_s == 0 and totals.histogram:
    basis = 'merged_histograms'
    value_at = totals.Percentile
  else:
    basis = 'per_second_cdf_mixture_across_processes'
    measured = [s for r in results for s in r.totals.time_series
                if s.second >= warmup_s]
    value_at = functools.partial(MixturePercentile, measured)
  series = [r.series_throughput for r in results]
  return MemtierResult(
      sets=sets, gets=gets, totals=totals,
      throughput=(measurement.SideBySideRate(
          [(r.ops, r.throughput) for r in results]) if request_count
                  else sum(r.throughput for r in results)),
      average_latency_ms=sum(r.average_latency_ms * r.ops
                             for r in results) / ops,
      **measurement.PercentileFields(value_at), percentile_basis=basis, ops=ops,
      duration_s=max(r.duration_s for r in results),
      real_duration_s=max(r.real_duration_s for r in results),
      duration_source=','.join(sorted({r.duration_source for r in results})),
      warmup_s=warmup_s,
      # Each process's seconds, then side by side (percentiles: the
      # largest process's, an upper bound).
      per_second=measurement.CombineSeconds([r.per_second for r in results]),
      reported_ops_per_sec=sum(r.reported_ops_per_sec for r in results),
      reported_duration_s=max(r.reported_duration_s for r in results),
      series_throughput=None if None in series else sum(series),
      duration_bug_detected=any(r.duration_bug_detected for r in results),
      processes=sum(r.processes for r in results),
      start_ms=min((r.start_ms for r in results if r.start_ms),
                   default=None))


def Measure(json_texts: Sequence[str], stdouts: Sequence[Optional[str]],
            load: measurement.Load, test_time_s: Optional[float],
            warmup_s: int = 0,
            metadata: Optional[Mapping[str, object]] = None
            ) -> measurement.Measurement:
  """One probe's Measurement from its memtier processes (side by side); the
  recomputation (scripts/recompute.py) uses it too.

  Raises:
    json_input.KeyTwice: a JSON text names a key twice; its `part` says
      which of `json_texts` (the caller knows its file).
    ValueError, KeyError, ...: a JSON text is not memtier's.
  """
  results = []
  for part, (text, stdout) in enumerate(zip(json_texts, stdouts)):
    try:
      results.append(MemtierResult.FromOutputs(text, stdout, test_time_s,
                                               warmup_s))
    except json_input.KeyTwice as e:
      raise json_input.KeyTwice(e.key, part) from None
  # No test time: each process ran a request count (-n).
  request_count = test_time_s is None
  return dataclasses.replace(
      CombineMemtierResults(results, request_count).ToMeasurement(
          load, metadata), request_count=request_count)
