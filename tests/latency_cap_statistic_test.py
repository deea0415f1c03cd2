"""The cap on a chosen latency statistic (issue 34 point 1), pure.

Scripted measurements where the average and the tail disagree: a server
still gaining throughput where its latency reaches the cap (the adaptive
tests' rising curve, average = outstanding / throughput by Little's law) and
whose p99 is three times its average, as with a server that stalls now and
then. Each probe carries an HDR-like histogram (97 % of requests at the
average's bucket, 3 % at the tail's), so repeats merge their percentiles.
"""

import io
import os
import re

import pytest

import sigterm_stand_in

from perfkitbenchmarker import latency_histogram
from perfkitbenchmarker import measurement
from perfkitbenchmarker import price_performance
from perfkitbenchmarker import reporting
from perfkitbenchmarker import verdict
from perfkitbenchmarker.search import adaptive
from perfkitbenchmarker.search import driver as search_driver
from perfkitbenchmarker.search import linear
from perfkitbenchmarker.search import staircase
from tests import capped_result_test
import script_modules

TAIL_FACTOR = 3.0
SECONDS = 2


def RisingThroughput(outstanding: int) -> float:
  return 1000 * outstanding / (0.2 + 0.006 * outstanding)


def Stalling(load: measurement.Load) -> measurement.Measurement:
  """A probe of the stalling server: p99 is TAIL_FACTOR x the average."""
  outstanding = load.outstanding_requests
  throughput = RisingThroughput(outstanding)
  average = outstanding / throughput * 1000
  tail = average * TAIL_FACTOR
  ops = int(throughput * SECONDS)
  histogram = latency_histogram.LatencyHistogram(
      ((round(average * 1000), ops - ops * 3 // 100),
       (round(tail * 1000), ops * 3 // 100)))
  return measurement.Measurement(
      load=load, throughput=throughput, average_latency_ms=average,
      duration_s=SECONDS, ops=ops, histogram=histogram,
      **measurement.PercentileFields(histogram.ValueAtPercentile))


def _Adaptive(cap):
  return search_driver.FindLatencyCappedMaximum(
      Stalling, cap, adaptive.AdaptiveStepPolicy())


def _Linear(cap):
  return search_driver.FindLatencyCappedMaximum(
      Stalling, cap, linear.LinearStepPolicy(
          min_threads=1, max_threads=256, thread_increment=1, clients=4,
          confirm_repeats=3))


def test_cap_describes_and_validates_its_statistic():
  assert measurement.LatencyCap(1.0).Describe() == '1 ms average'
  assert measurement.LatencyCap(1, 'p99').Describe() == '1 ms p99'
  assert measurement.LatencyCap(0.5, 'p99.9').Describe() == '0.5 ms p99.9'
  assert measurement.STATISTICS == ('avg', 'p50', 'p90', 'p95', 'p99',
                                    'p99.9')
  for bad in ({'ms': 0}, {'ms': float('inf')}, {'ms': True},
              {'ms': 1.0, 'statistic': 'p98'},
              {'ms': 1.0, 'statistic': 'mean'}):
    with pytest.raises(measurement.InvalidLatencyCap):
      measurement.LatencyCap(**bad)


def test_a_percentile_nobody_measured_is_never_under_a_cap():
  m = measurement.Measurement(measurement.Load(1, 4), 1000.0, 0.1,
                              p99_latency_ms=0.2)
  assert m.UnderCap(1.0) and m.UnderCap(measurement.LatencyCap(1.0, 'p99'))
  assert m.LatencyMs('p95') is None
  assert not m.UnderCap(measurement.LatencyCap(1.0, 'p95'))
  with pytest.raises(measurement.InvalidLatencyCap):
    m.LatencyMs('p98')


def test_a_bare_number_and_an_average_cap_search_alike():
  """The default (avg) is today's search, record for record."""
  assert _Adaptive(1.0) == _Adaptive(measurement.LatencyCap(1.0, 'avg'))


def _Staircase(cap):
  """Steps of 16 connections up to 256, then ordinary repeats."""
  steps = [Stalling(measurement.Load(1, c)) for c in range(16, 257, 16)]
  return search_driver.FindLatencyCappedMaximum(
      staircase.ReplayThenMeasure(steps, Stalling), cap,
      staircase.StaircasePolicy(tuple(m.load for m in steps),
                                confirm_repeats=3))


@pytest.mark.parametrize('search', [_Adaptive, _Linear, _Staircase])
def test_the_p99_answer_is_lower_and_its_repeats_hold_p99(search):
  by_average = search(1.0)
  by_p99 = search(measurement.LatencyCap(1.0, 'p99'))
  assert by_p99.statistic == 'p99' and by_average.statistic == 'avg'
  assert by_p99.cap == measurement.LatencyCap(1.0, 'p99')
  # Both confirmed: repeats that count, none unconfirmed.
  for result in (by_average, by_p99):
    assert result.confirmed is not None and not result.unconfirmed_reason
  # The average answer's tail is over a 1 ms p99 cap; the p99 answer's
  # merged p99 over its repeats is under it, and so is every repeat's.
  assert by_average.confirmed.p99_latency_ms > 1.0
  assert by_p99.confirmed.p99_latency_ms < 1.0
  assert all(p.measurement.p99_latency_ms < 1.0
             for p in by_p99.confirmation_probes)
  assert by_p99.confirmed.metadata['percentile_merge'] == 'merged_histograms'
  # Each probe judged on p99, so the answer sits well below the average's.
  assert all(p.under_cap == (p.measurement.p99_latency_ms < 1.0)
             for p in by_p99.probes)
  assert by_p99.capped_throughput < 0.7 * by_average.capped_throughput
  # The answer is near the best load the p99 cap allows (within a step).
  best = max(RisingThroughput(n) for n in range(1, 1025)
             if TAIL_FACTOR * n / RisingThroughput(n) * 1000 < 1.0)
  assert by_p99.capped_throughput == pytest.approx(best, rel=0.25)
  assert by_p99.capped_throughput <= best


def test_the_notes_name_the_statistic():
  by_p99 = _Linear(measurement.LatencyCap(1.0, 'p99'))
  assert 'p99 latency' in by_p99.stop_reason
  assert 'average latency' not in by_p99.stop_reason
  assert 'average latency' in _Linear(1.0).stop_reason


def test_the_repeats_p99_is_from_merged_histograms_not_a_mean():
  """Three repeats, one with a bad tail: the merged p99 is the tail's (3 %
  of the repeats' requests are over 2 ms), where a mean of the repeats'
  p99s would claim it held."""
  load = measurement.Load(1, 4)
  quiet = latency_histogram.LatencyHistogram(((500, 1000),))
  stalled = latency_histogram.LatencyHistogram(((500, 910), (2500, 90)))
  parts = [measurement.Measurement(
      load, 500.0, 0.5, duration_s=2, ops=1000, histogram=h,
      **measurement.PercentileFields(h.ValueAtPercentile))
           for h in (quiet, quiet, stalled)]
  combined = measurement.CombineRepeats(parts)
  assert sum(p.p99_latency_ms for p in parts) / 3 < 1.5
  assert combined.p99_latency_ms == 2.5
  assert not combined.UnderCap(measurement.LatencyCap(1.5, 'p99'))
  assert combined.p95_latency_ms == 0.5


def test_capped_samples_name_the_statistic_and_its_value():
  m = Stalling(measurement.Load(1, 8))
  cap = measurement.LatencyCap(1.0, 'p99')
  samples = price_performance.CappedSamples(m, cap)
  # Upstream's 1 ms metric is an average completion latency: not for p99.
  assert [s.metric for s in samples] == [price_performance.CAPPED_THROUGHPUT]
  md = samples[0].metadata
  assert md['latency_cap_statistic'] == 'p99'
  assert md['latency_cap_ms'] == 1.0
  assert md['capped_latency_ms'] == m.p99_latency_ms
  assert md['p95_latency_ms'] == m.p95_latency_ms
  assert md['p90_latency_ms'] == m.p90_latency_ms
  by_average = price_performance.CappedSamples(m, 1.0)
  assert [s.metric for s in by_average] == [
      price_performance.CAPPED_THROUGHPUT, price_performance.PKB_UNDER_1MS]
  assert by_average[0].metadata['latency_cap_statistic'] == 'avg'
  assert by_average[0].metadata['capped_latency_ms'] == m.average_latency_ms
  probe = price_performance.ProbeSamples(0, m, cap)[0].metadata
  assert probe['latency_cap_statistic'] == 'p99'
  assert probe['under_latency_cap'] == (m.p99_latency_ms < 1.0)


def _Line(m, cap):
  out = io.StringIO()
  reporting.ConsoleReporter(out).Probe(3, m, cap)
  return out.getvalue()


def test_probe_line_shows_the_capped_statistic():
  m = Stalling(measurement.Load(1, 8))  # avg 0.248, p99 0.744 ms
  by_average = _Line(m, 1.0)
  assert re.search(r'avg  0\.248 ms  p99  0\.744 ms  cap  -75\.2%$',
                   by_average.rstrip()), by_average
  by_p99 = _Line(m, measurement.LatencyCap(1.0, 'p99'))
  assert re.search(r'avg  0\.248 ms  p99  0\.744 ms  p99 cap  -25\.6%$',
                   by_p99.rstrip()), by_p99
  by_p95 = _Line(m, measurement.LatencyCap(0.5, 'p95'))
  assert 'p95  0.248 ms  p95 cap  -50.4%' in by_p95, by_p95
  over = _Line(m, measurement.LatencyCap(0.5, 'p99'))
  assert 'OVER CAP' in over and 'OVER CAP' not in by_p99


def test_summary_header_says_which_latency_is_capped():
  row = {'machine_type': 'local', 'throughput': 1000.0,
         'average_latency_ms': 0.25, 'p99_latency_ms': 0.74}
  def Table(**extra):
    out = io.StringIO()
    reporting.ConsoleReporter(out).Summary([dict(row, **extra)])
    return out.getvalue().splitlines()[1]
  assert 'avg ms    p99 ms' in Table() and '(cap)' not in Table()
  assert 'p99 ms (cap)' in Table(cap_statistic='p99')
  header = Table(cap_statistic='p95', capped_latency_ms=0.5)
  assert 'p95 ms (cap)' in header and 'p99 ms (cap)' not in header


def test_verdict_holds_the_repeats_merged_percentile_to_the_cap():
  """Two of three repeats under a 1 ms p99 cap, but together (merged
  histograms) their p99 is over it: not confirmed."""
  quiet = latency_histogram.LatencyHistogram(((500, 990), (900, 10)))
  stalled = latency_histogram.LatencyHistogram(((500, 950), (3000, 50)))
  load = capped_result_test.LOAD
  script = iter([measurement.Measurement(
      load, 500.0 + i, 0.5, duration_s=2, ops=1000, histogram=h,
      **measurement.PercentileFields(h.ValueAtPercentile))
                 for i, h in enumerate((quiet, quiet, quiet, stalled))])
  # Probe 0 is the search, 1-3 its repeats.
  Policy = capped_result_test._Policy  # pylint: disable=protected-access

  cap = measurement.LatencyCap(1.0, 'p99')
  result = search_driver.FindLatencyCappedMaximum(
      lambda _: next(script), cap, Policy())
  assert [p.under_cap for p in result.confirmation_probes] == [
      True, True, False]
  assert result.confirmed.p99_latency_ms == 3.0
  found = verdict.OfSearch(result)
  assert not found.confirmed
  assert ('the 3 repeats together have p99 latency 3.000 ms, not under the '
          '1 ms p99 cap') in found.reason
  # The same repeats on the average are confirmed, as before.
  script = iter([measurement.Measurement(
      load, 500.0 + i, 0.5, duration_s=2, ops=1000) for i in range(4)])
  by_average = search_driver.FindLatencyCappedMaximum(
      lambda _: next(script), 1.0, Policy())
  assert verdict.OfSearch(by_average).confirmed


def _BenchCapStatistics():
  """scripts/bench_cap_statistics.py as a module, run in this process."""
  path = os.path.join(os.path.dirname(os.path.dirname(
      os.path.abspath(__file__))), 'scripts', 'bench_cap_statistics.py')
  return script_modules.Load(path, 'bench_cap_statistics')


@pytest.mark.parametrize('bad', [['--cap=-1'], ['--cap=nan'],
                                 ['--statistics=avg,p42']])
def test_bench_cap_statistics_refuses_a_bad_cap_in_one_line(capsys, bad):
  """Its check of the caps raised InvalidLatencyCap out of main: a
  traceback, exit 1, for --cap=-1."""
  code = _BenchCapStatistics().main(['--memtier_path=/nonexistent'] + bad)
  err = capsys.readouterr().err
  assert code == 2
  assert err.startswith('bench_cap_statistics: ')
  assert len(err.strip().splitlines()) == 1 and 'Traceback' not in err


def test_bench_cap_statistics_sigterm_stops_its_pkb_and_removes_results(
    tmp_path, monkeypatch, capsys):
  """The bench killed alone (kill PID) left its pkb run going on and
  /tmp/bench-cap-statistics-... behind; a SIGTERM now interrupts it as
  Ctrl-C does, its pkb is terminated (pkb tears down on SIGTERM; the
  SIGKILL subprocess.run sends on an interruption or its 1800 s bound
  would leave pkb's shards running) and the results removed. In process:
  a stand-in pkb whose wait calls the handler in force."""
  bench = _BenchCapStatistics()
  seen = {}

  Pkb = sigterm_stand_in.PkbPopen(seen)

  monkeypatch.setattr(bench.pkb_child.subprocess, 'Popen', Pkb)
  # Not subprocess.run, whose SIGKILL would leave pkb's shards.
  monkeypatch.setattr(bench.pkb_child.subprocess, 'run', None)
  monkeypatch.setattr(bench.tempfile, 'tempdir', str(tmp_path))
  assert sigterm_stand_in.Main(bench.main, ['--memtier_path=/bin/true']) == 130
  assert seen['terminated'] and os.listdir(tmp_path) == []
  assert capsys.readouterr().err == (
      'bench_cap_statistics: interrupted; its pkb run was stopped and the '
      'results removed\n')


def test_bench_cap_statistics_exits_1_when_a_run_failed(tmp_path,
                                                       monkeypatch, capsys):
  """'--memtier_path=/nonexistent': every pkb run refused it (exit 2), the
  table said 'no answer' for each, and the bench exited 0."""
  bench = _BenchCapStatistics()
  codes = iter([4, 2])  # avg unconfirmed (measured), p99 refused.

  class Pkb:

    def __init__(self, unused_argv, **unused_kwargs):
      self.returncode = next(codes)

    def communicate(self, timeout=None):
      del timeout
      return '', 'pkb: refused\n'

    def poll(self):
      return self.returncode

  monkeypatch.setattr(bench.pkb_child.subprocess, 'Popen', Pkb)
  monkeypatch.setattr(bench.tempfile, 'tempdir', str(tmp_path))
  assert bench.main(['--memtier_path=/bin/true',
                     '--statistics=avg,p99']) == 1
  err = capsys.readouterr().err
  assert err == ('bench_cap_statistics: the run of p99 failed (its line '
                 'above says why)\n')


def _TailOverWhenRepeated():
  """A server whose p99 is under 1 ms on a load's first probe and 1.2 ms
  on every repeat of it (its average always well under)."""
  seen = []

  def Measure(load):
    conns = load.connections
    ops = 100e3 * min(conns, 64) / 64
    average = conns / ops * 1000 / 4
    p99 = 1.2 if load in seen else average * 2
    seen.append(load)
    return measurement.Measurement(load, ops, average, p99_latency_ms=p99,
                                   duration_s=1.0, ops=int(ops))
  return Measure


def test_no_load_held_names_the_capped_statistic():
  """The unconfirmed reason (the answer's verdict_reason) said 'no load
  held under the 1 ms cap' of a p99 cap: the cap without its statistic."""
  cap = measurement.LatencyCap(1.0, 'p99')
  result = search_driver.FindLatencyCappedMaximum(
      _TailOverWhenRepeated(), cap, adaptive.AdaptiveStepPolicy(
          threads=1, start_connections=8, max_connections=512))
  assert result.best is not None
  found = verdict.OfSearch(result)
  assert found.name == verdict.UNCONFIRMED
  assert found.reason.startswith(
      'no load held under the 1 ms p99 cap when repeated')
  steps = [measurement.Measurement(measurement.Load(1, c), t, 0.2,
                                   p99_latency_ms=p99, duration_s=1.0,
                                   ops=int(t))
           for c, t, p99 in ((16, 100e3, 0.3), (32, 120e3, 0.8),
                             (48, 121e3, 1.2))]
  stepped = search_driver.FindLatencyCappedMaximum(
      staircase.ReplayThenMeasure(steps, lambda load: measurement.Measurement(
          load, 90e3, 0.2, p99_latency_ms=1.1, duration_s=1.0, ops=90000)),
      cap, staircase.StaircasePolicy(tuple(m.load for m in steps),
                                     confirm_repeats=2))
  assert 'no step held under the 1 ms p99 cap when repeated' in (
      stepped.unconfirmed_reason)
