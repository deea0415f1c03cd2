"""Parses redis-benchmark's default report (redis-tools 7.0) into measurements.

`ParseOutput` yields one `RedisBenchmarkTestResult` per test block (the
shape the probes ask for: no `--csv`, no `-q`); `CombineConcurrent` turns the
results of processes run side by side into one `measurement.Measurement`.
Nothing here runs a tool or reads a flag.

Why the latency is recomputed: redis-benchmark is one event loop per thread
and saturates its own CPU near 100k requests/s; the latency it reports leaves
out the time a reply waits for the busy client, so requests/s x its average
latency comes to about connections / 2 instead of the connections a closed
loop must have in flight (Little's law). To compare with memtier, the average
latency of a `Measurement` is outstanding requests / throughput; the tool's
own figures are kept in the metadata, labelled as tool-reported.
"""

import dataclasses
import re
from typing import Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from perfkitbenchmarker import measurement

LOAD_GENERATOR = 'redis-benchmark'

_PERCENTILE_LINE = re.compile(r'([\d.]+)% <= ([\d.]+) milliseconds')
# A progress line (redis-benchmark 7.0 prints one every 250 ms, '\r'-ended):
# requests/s since the last line, then since the start. The first comes a
# millisecond after the start: overall '-nan' (not matched), or the few
# replies of that millisecond ('rps=0.0 (overall: 24000.0)', 'rps=190.5
# (overall: 4000.0)'): never 250 ms of load.
_PROGRESS_LINE = re.compile(
    r'rps=([\d.]+) \(overall: ([\d.]+)\) avg_msec=')
# An error reply redis-benchmark did not stop at: in cluster mode it follows
# MOVED and ASK without a word and, on CLUSTERDOWN, says so on stderr,
# waits a second, fetches the slots again and counts the request done
# ('Error from server 127.0.0.1:7001: CLUSTERDOWN The cluster is down.');
# any other error reply ends it with status 1.
ERROR_REPLY_WORDS = 'Error from server'
_ERROR_REPLY = re.compile(ERROR_REPLY_WORDS + r'[^\r\n]*')
TICK_S = 0.25
TICKS_PER_SECOND = 4
PER_SECOND_BASIS = 'progress_lines_250ms_closed_loop'
# What its progress line of a quarter second with no reply holds
# ('GET: rps=0.0 (overall: 21691.0) avg_msec=-nan (overall: 0.163)', a
# line every 250 ms while a SIGSTOPped server holds every request).
NO_REPLY_WORDS = 'rps=0.0 ('
# A process stopped before its request count was done prints no report:
# its figures are its progress lines' whole seconds (StoppedResult), and
# the probe's metadata says how many of its processes were
# (STOPPED_PROCESSES_KEY) at what bound (measurement.STOPPED_AT_KEY).
STOPPED_PROCESSES_KEY = 'stopped_processes'
_TEST_NAME = re.compile(r'([^\r\n:]+): rps=')
_OVERALL_AVERAGE = re.compile(r'avg_msec=\S+ \(overall: ([\d.]+)\)')


def ErrorReplies(stderr_text: Optional[str]) -> Tuple[int, Optional[str]]:
  """How many error replies redis-benchmark said on `stderr_text`, and the
  first (None when there was none)."""
  found = _ERROR_REPLY.findall(stderr_text or '')
  return len(found), (found[0].strip() if found else None)


@dataclasses.dataclass(frozen=True)
class RedisBenchmarkTestResult:
  """What redis-benchmark reported for one test (SET, GET, ...).

  Latencies are the tool's own (see the module docstring); None where the
  report does not carry them.
  """
  test: str
  rps: float
  avg_latency_ms: Optional[float] = None
  min_latency_ms: Optional[float] = None
  p50_latency_ms: Optional[float] = None
  p95_latency_ms: Optional[float] = None
  p99_latency_ms: Optional[float] = None
  p999_latency_ms: Optional[float] = None
  max_latency_ms: Optional[float] = None
  requests: Optional[int] = None
  seconds: Optional[float] = None
  clients: Optional[int] = None
  # Stopped before its request count was done: read off its progress
  # lines (StoppedResult).
  stopped: bool = False


def _PlainBlock(test: str, lines: Sequence[str]) -> RedisBenchmarkTestResult:
  """One '====== TEST ======' block of the default report."""
  fields = {}
  distribution = []
  section = None
  for i, line in enumerate(lines):
    if match := re.match(r'(\d+) requests completed in ([\d.]+) seconds', line):
      fields['requests'] = int(match.group(1))
      fields['seconds'] = float(match.group(2))
    elif match := re.match(r'(\d+) parallel clients', line):
      fields['clients'] = int(match.group(1))
    elif line.endswith(':') and not line.startswith('host configuration'):
      section = line
    elif section == 'Latency by percentile distribution:' and (
        match := _PERCENTILE_LINE.match(line)):
      distribution.append((float(match.group(1)), float(match.group(2))))
    elif match := re.match(r'throughput summary: ([\d.]+) requests', line):
      fields['rps'] = float(match.group(1))
    elif (section == 'latency summary (msec):' and line.startswith('avg')
          and i + 1 < len(lines)):
      for name, value in zip(line.split(), lines[i + 1].split()):
        if name in ('avg', 'min', 'p50', 'p95', 'p99', 'max'):
          fields[f'{name}_latency_ms'] = measurement.FiniteFloat(value)
  if 'rps' not in fields:
    raise ValueError(f'No throughput summary for redis-benchmark test {test}')
  # The first line at or past 99.9 % bounds p99.9 from above, like the tool's
  # own percentiles, which are read off the same histogram.
  p999 = next((ms for pct, ms in distribution if pct >= 99.9), None)
  return RedisBenchmarkTestResult(test=test, p999_latency_ms=p999, **fields)


def StoppedResult(text: str, clients: int) -> RedisBenchmarkTestResult:
  """The result of a process that was stopped before its request count
  was done (it prints no report then), from its progress lines: its whole
  seconds' requests (ProcessSeconds) over those seconds, and its own
  average so far (the last line's overall avg_msec); no percentiles.
  ValueError when it had no whole second."""
  seconds = ProcessSeconds(text, None)
  name = _TEST_NAME.search(text)
  if not seconds or not name:
    raise ValueError('redis-benchmark was stopped before a whole second of '
                     f'progress lines: {text[-200:]!r}')
  requests = sum(s.ops for s in seconds)
  averages = _OVERALL_AVERAGE.findall(text)
  return RedisBenchmarkTestResult(
      test=name.group(1).strip(), rps=requests / len(seconds),
      avg_latency_ms=(measurement.FiniteFloat(averages[-1]) if averages
                      else None),
      requests=requests, seconds=float(len(seconds)), clients=clients,
      stopped=True)


def ProcessResult(stdout: str, stopped: Optional[int] = None
                  ) -> RedisBenchmarkTestResult:
  """One process's result: its report's last test, else, when it was
  stopped at its time bound (`stopped`: its connections), its progress
  lines' (StoppedResult). ValueError when it printed neither."""
  parsed = ParseOutput(stdout)
  if parsed:
    return parsed[-1]
  if stopped:
    return StoppedResult(stdout, stopped)
  raise ValueError(f'redis-benchmark printed no result: {stdout[-200:]!r}')


def ParseOutput(text: str) -> List[RedisBenchmarkTestResult]:
  """One result per '====== TEST ======' block; progress lines and a
  cluster preamble are ignored."""
  blocks = []
  for line in (s.strip() for s in re.split(r'[\r\n]', text)):
    if match := re.fullmatch(r'====== (.+) ======', line):
      blocks.append((match.group(1), []))
    elif blocks and line:
      blocks[-1][1].append(line)
  return [_PlainBlock(test, lines) for test, lines in blocks]


def ProcessSeconds(text: str, outstanding: Optional[int]
                   ) -> Tuple[measurement.SecondStats, ...]:
  """One process's per-second series from its progress lines.

  What redis-benchmark can give: each line's requests/s over the last
  ~250 ms (taken as exactly 250 ms: the tool prints no time), four lines a
  second; a second is its four lines' operations. Its average latency is
  the closed-loop one, outstanding requests / that second's rate, as for
  the whole probe; the tool prints no per-second percentiles (its
  avg_msec leaves out client queueing), so a second has none. Only whole
  seconds are kept: the tool runs a request count, and its last part
  second is not a second of load.
  """
  headers = [m.start() for m in re.finditer(r'====== .+ ======', text)]
  if len(headers) > 1:  # Several tests: the last one's lines, after the
    text = text[headers[-2]:headers[-1]]  # report before them.
  elif headers:
    text = text[:headers[0]]
  lines = list(_PROGRESS_LINE.finditer(text))
  if lines and lines[0].start() == text.find('rps='):
    # The line at the start: counted as 250 ms of (almost) no replies, it
    # took up to a quarter of the first second's, whose latency then read
    # up to a third over the probe's (the first second of quiet probes
    # near the cap read over it, and the hold's first second too).
    lines.pop(0)
  ticks = [float(m.group(1)) for m in lines]
  seconds = []
  for second in range(len(ticks) // TICKS_PER_SECOND):
    rates = ticks[second * TICKS_PER_SECOND:(second + 1) * TICKS_PER_SECOND]
    ops = round(sum(rates) * TICK_S)
    average = (outstanding / ops * 1000 if outstanding and ops > 0
               else None)
    seconds.append(measurement.SecondStats(second, ops, average))
  return tuple(seconds)


def _Max(values: Iterable[Optional[float]]) -> Optional[float]:
  return max((v for v in values if v is not None), default=None)


def CombineConcurrent(results: Sequence[RedisBenchmarkTestResult],
                      load: measurement.Load, duration_s: float,
                      metadata: Optional[Mapping[str, object]] = None
                      ) -> measurement.Measurement:
  """One `Measurement` for redis-benchmark processes run side by side for
  `duration_s` with `load` together (-c split over --threads:
  Load(threads, c_total // threads, P)).

  Each process runs a request count and ends when it is done, so the
  throughput is every request over the longest process's span
  (measurement.SideBySideRate), not the sum of their rates. The average
  latency is closed-loop: each process's outstanding requests / its rate,
  weighted by its requests (outstanding requests / throughput when the
  report lacks counts); the tool's own average is kept as
  'reported_average_latency_ms'. Each percentile is the largest across
  processes (an upper bound for the processes together), the tool's, not
  closed-loop.
  """
  if not results:
    raise ValueError('Nothing to combine')
  rates = sum(r.rps for r in results)
  if rates <= 0 or duration_s <= 0:
    raise ValueError('redis-benchmark measured no throughput')
  counted = all(r.requests and r.rps > 0 for r in results)
  throughput = (measurement.SideBySideRate(
      [(r.requests, r.rps) for r in results]) if counted else rates)
  average = load.outstanding_requests / rates * 1000
  if counted and all(r.clients for r in results):
    average = sum(r.requests * r.clients * load.pipeline / r.rps
                  for r in results) / sum(r.requests for r in results) * 1000
  # The tool's own figures, combined as parts side by side are
  # (FiguresTogether; the processes share one window, so rps x window is
  # their count).
  reported = FiguresTogether([measurement.Measurement(
      load, r.rps, r.avg_latency_ms, duration_s=duration_s, metadata={
          'test_rps': f'{r.test}={r.rps:.2f}',
          'reported_average_latency_ms': r.avg_latency_ms,
          **{f'reported_{name}_latency_ms': getattr(r, f'{name}_latency_ms')
             for name in ('p50', 'p95', 'p99', 'p999', 'max')}})
      for r in results])
  requests = [r.requests for r in results]
  ops = (sum(requests) if None not in requests
         else round(throughput * duration_s))
  clients = [r.clients for r in results]
  facts = {
      'load_generator': LOAD_GENERATOR,
      'latency_basis': 'closed_loop_littles_law',
      'outstanding_requests': load.outstanding_requests,
      'percentile_basis': 'tool_reported_max_across_processes_not_closed_loop',
      **reported,
      'tests': ','.join(r.test for r in results),
      'tool_clients': None if None in clients else sum(clients),
  }
  facts = {k: v for k, v in facts.items() if v is not None}
  facts.update(metadata or {})
  return measurement.Measurement(
      load=load, throughput=throughput, average_latency_ms=average,
      p50_latency_ms=reported['reported_p50_latency_ms'],
      p99_latency_ms=reported['reported_p99_latency_ms'],
      p999_latency_ms=reported['reported_p999_latency_ms'],
      duration_s=float(duration_s), ops=ops, metadata=facts,
      request_count=True)


def FiguresTogether(parts: Sequence[measurement.Measurement]
                    ) -> Dict[str, object]:
  """The tool's figures of parts side by side (one endpoint's processes,
  one client VM's groups, one per endpoint, or client VMs), beyond its
  counts (measurement.FactsCombined): Combine keeps the first part's, so
  two shards of 1x32 each said test_rps and the reported percentiles of one
  shard where 64 connections ran, and two client VMs said clients-0's."""
  figures: Dict[str, object] = {}
  for name in ('p50', 'p95', 'p99', 'p999', 'max'):  # Each at its worst.
    figures[f'reported_{name}_latency_ms'] = _Max(
        p.metadata.get(f'reported_{name}_latency_ms') for p in parts)
  rates: Dict[str, float] = {}
  for part in parts:  # Every part's processes, each test's summed.
    for entry in str(part.metadata.get('test_rps') or '').split(','):
      test, _, text = entry.rpartition('=')
      rate = measurement.FiniteFloat(text)
      if test and rate is not None:
        rates[test] = rates.get(test, 0.0) + rate
  figures['test_rps'] = (','.join(f'{t}={r:.2f}' for t, r in rates.items())
                         or None)
  weighted = [dataclasses.replace(p, average_latency_ms=p.metadata[
      'reported_average_latency_ms']) for p in parts
              if p.metadata.get('reported_average_latency_ms') is not None]
  figures['reported_average_latency_ms'] = (
      measurement.WeightedAverageLatencyMs(weighted) if weighted else None)
  return figures


def Measure(stdouts: Sequence[str], groups: Sequence[str],
            seconds: Sequence[float], load: measurement.Load,
            metadata: Optional[Mapping[str, object]] = None,
            stopped: Sequence[Optional[int]] = ()
            ) -> measurement.Measurement:
  """One probe's Measurement from its redis-benchmark processes (side by
  side): `CombineConcurrent` per group of processes that loaded one endpoint
  (`groups`, one per process), the groups combined; the recomputation
  (scripts/recompute.py) uses it too. `stopped`: per process, its
  connections if the probe stopped it at its time bound (StoppedResult
  reads one that printed no report), else None. ValueError if a process
  printed no result."""
  by_group: Dict[str, List[RedisBenchmarkTestResult]] = {}
  series = []
  cut = 0
  for i, (stdout, group) in enumerate(zip(stdouts, groups)):
    result = ProcessResult(stdout, stopped[i] if i < len(stopped) else None)
    cut += result.stopped
    by_group.setdefault(group, []).append(result)
    clients = result.clients
    series.append(ProcessSeconds(
        stdout, clients * load.pipeline if clients else None))
  parts = [CombineConcurrent(results, load, max(seconds), metadata)
           for results in by_group.values()]
  combined = measurement.Combine(parts, load)
  if len(parts) > 1:
    together = measurement.FactsCombined(
        combined.metadata, parts, ('outstanding_requests', 'tool_clients'))
    together.update(FiguresTogether(parts))
    combined = dataclasses.replace(combined, metadata={
        k: v for k, v in together.items() if v is not None})
  # Every process side by side (the groups' closed loops together: the
  # op-weighted mean of outstanding / rate is their sum over the sum).
  if cut:
    combined = dataclasses.replace(combined, metadata={
        **combined.metadata, STOPPED_PROCESSES_KEY: cut})
  per_second = measurement.CombineSeconds(series)
  if not per_second:
    return combined
  return dataclasses.replace(
      combined, per_second=per_second,
      metadata={**combined.metadata, 'per_second_basis': PER_SECOND_BASIS})
