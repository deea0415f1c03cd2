"""The capped-throughput result reports one set of probes, aggregated right.

Issue 10 point 7: with confirmation repeats, the value of
latency_capped_throughput was the repeats' mean while its latency, p99 and
load came from search probe 0, and the summary paired the two. Here the
search probe and its repeats are scripted with very different latencies and
histograms, so any value borrowed from probe 0 shows.
"""

import dataclasses
import io

import pytest

from perfkitbenchmarker import benchmark_spec
from perfkitbenchmarker import latency_histogram
from perfkitbenchmarker import measurement
from perfkitbenchmarker import price_performance
from perfkitbenchmarker import pricing
from perfkitbenchmarker import reporting
from perfkitbenchmarker import verdict
from perfkitbenchmarker.linux_benchmarks import redis_memtier_benchmark as bench
from perfkitbenchmarker.search import driver as search_driver
from perfkitbenchmarker.study import results

Load = measurement.Load
LOAD = Load(2, 8)


def _Histogram(*buckets):
  return latency_histogram.LatencyHistogram(tuple(buckets))


# Probe 0 (search): fast p99; the repeats: slower, each with a histogram of
# 100 requests. Merged, their p99 is 2.0 ms (the worst repeat's is 2.5 ms,
# the upper bound `Combine` would give without histograms) and p99.9 2.5 ms.
_PROBES = [
    measurement.Measurement(LOAD, 150e3, 0.30, 0.2, 0.9, 1.0, 2.0, 300000,
                            histogram=_Histogram((200, 99), (900, 1))),
    measurement.Measurement(LOAD, 100e3, 0.60, 0.5, 2.0, 3.0, 2.0, 200000,
                            histogram=_Histogram((500, 98), (2000, 2))),
    measurement.Measurement(LOAD, 120e3, 0.70, 0.6, 2.5, 3.5, 2.0, 240000,
                            histogram=_Histogram((600, 98), (2500, 2))),
    measurement.Measurement(LOAD, 80e3, 0.90, 0.8, 1.5, 2.0, 2.0, 160000,
                            histogram=_Histogram((800, 99), (1500, 1))),
]


class _Policy:
  """Probe 0 is the search, probes 1-3 confirm it."""
  NAME = 'scripted'

  def Steps(self, cap_ms):
    del cap_ms
    for role in ('search', 'confirm', 'confirm', 'confirm'):
      yield search_driver.ProbeRequest(LOAD, role)
    return search_driver.Outcome('done', 0, (1, 2, 3))


def _Search():
  script = iter(_PROBES)
  return search_driver.FindLatencyCappedMaximum(lambda load: next(script),
                                                1.0, _Policy())


def _Spec(flag_values, out):
  return benchmark_spec.BenchmarkSpec(
      bench, bench.GetConfig({}), 'capped', 'Local', None, flag_values,
      pricing.PriceCatalog.Load(), lambda s: None,
      reporter=reporting.ConsoleReporter(out))


def _ExpectedLatency():
  ops = [200000, 240000, 160000]
  return (0.6 * ops[0] + 0.7 * ops[1] + 0.9 * ops[2]) / sum(ops)


def test_search_result_combines_the_repeats():
  confirmed = _Search().confirmed
  assert confirmed.throughput == pytest.approx(100e3)
  assert confirmed.average_latency_ms == pytest.approx(_ExpectedLatency())
  assert confirmed.p99_latency_ms == pytest.approx(2.0)  # merged, not max
  assert confirmed.p999_latency_ms == pytest.approx(2.5)
  assert confirmed.p50_latency_ms == pytest.approx(0.6)
  assert confirmed.ops == 600000
  assert confirmed.duration_s == pytest.approx(6.0)
  assert confirmed.metadata['percentile_merge'] == 'merged_histograms'


def test_capped_and_price_samples_come_from_the_repeats(pkb_flags):
  spec = _Spec(pkb_flags, io.StringIO())
  samples = results.ResultSamples(spec, _Search(), 1.0)
  by_metric = {s.metric: s for s in samples}
  for metric in (price_performance.CAPPED_THROUGHPUT,
                 price_performance.PKB_UNDER_1MS,
                 price_performance.PRICE_PERFORMANCE):
    md = by_metric[metric].metadata
    assert md['average_latency_ms'] == pytest.approx(_ExpectedLatency(),
                                                     abs=1e-5), metric
    assert md['p50_latency_ms'] == pytest.approx(0.6), metric
    assert md['p99_latency_ms'] == pytest.approx(2.0), metric
    assert md['p99.9_latency_ms'] == pytest.approx(2.5), metric
    assert md['connections'] == 16 and md['threads'] == 2, metric
    assert md['ops'] == 600000, metric
    assert md['aggregated_probe_indices'] == '1,2,3', metric
    assert md['throughput_ci95_ops'] > 0, metric
  assert by_metric[price_performance.CAPPED_THROUGHPUT].value == (
      pytest.approx(100e3))
  perf = by_metric[price_performance.PRICE_PERFORMANCE]
  assert perf.value == pytest.approx(
      100e3 / perf.metadata['servers_usd_per_hour_total'])


def test_summary_row_pairs_the_repeats_average_with_their_p99(pkb_flags):
  out = io.StringIO()
  spec = _Spec(pkb_flags, out)
  spec.metadata['local_priced_as'] = 'GCP:n2d-standard-2'
  samples = results.ResultSamples(spec, _Search(), 1.0)
  spec.vm_groups = {'servers': [type('Vm', (), {'machine_type': 'x'})()]}
  results.PrintSummary(spec, samples)
  lines = out.getvalue().strip().splitlines()
  row = next(l for l in lines if l.startswith('local (priced')).split()
  # local (priced as GCP:n2d-standard-2)  100,000 ± N  avg  p99  ...
  assert row[4] == '100,000'
  avg, p99 = row[7], row[8]
  assert avg == f'{_ExpectedLatency():.3f}'
  assert p99 == '2.000'
  # The verdict, then the limit (none measured by this search's doubles).
  assert row[-2:] == ['confirmed', 'n/a']
  assert lines[-1].startswith('Verdict: confirmed: 3 repeats under the 1 ms')


class _OneProbe:
  """A search policy of one probe at LOAD and no repeats: unconfirmed."""
  NAME = 'one'

  def Steps(self, cap_ms):
    del cap_ms
    yield search_driver.ProbeRequest(LOAD)
    return search_driver.Outcome('done', 0)


def test_without_repeats_the_chosen_probe_is_reported_alone(pkb_flags):
  result = search_driver.FindLatencyCappedMaximum(
      lambda load: _PROBES[0], 1.0, _OneProbe())
  assert result.confirmed is None
  samples = results.ResultSamples(_Spec(pkb_flags, io.StringIO()), result,
                                  1.0)
  capped = samples[0]
  assert capped.value == pytest.approx(150e3)
  assert capped.metadata['p99_latency_ms'] == pytest.approx(0.9)
  assert capped.metadata['aggregated_probe_indices'] == '0'
  assert 'throughput_ci95_ops' not in capped.metadata


def test_an_unconfirmed_summary_names_the_samples_that_are_not_official(
    pkb_flags):
  # It said 'none of its samples is official', while a probe's samples
  # stay official unless flagged (README "Verdicts") and End to End Runtime
  # carries no verdict.
  out = io.StringIO()
  spec = _Spec(pkb_flags, out)
  spec.vm_groups = {'servers': [type('Vm', (), {'machine_type': 'x'})()]}
  result = search_driver.FindLatencyCappedMaximum(
      lambda load: _PROBES[0], 1.0, _OneProbe())
  samples = results.ResultSamples(spec, result, 1.0)
  results.PrintSummary(spec, samples)
  line, = [l for l in out.getvalue().splitlines()
           if l.startswith('Not a confirmed server figure')]
  named = line.split('samples (')[1].split(')')[0].split(', ')
  assert set(named) == {s.metric for s in samples} >= {
      price_performance.CAPPED_THROUGHPUT, price_performance.HOURLY_COST,
      price_performance.PRICE_PERFORMANCE}
  assert not any(verdict.IsOfficial(s.metadata) for s in samples)
  assert line.endswith('are not official, compare leaves it out of '
                       'rankings, and pkb exits 4 unless '
                       '--accept_unconfirmed (README: "Verdicts").')


def test_a_fixed_load_probe_line_has_no_cap():
  # Issue 26 point 6: fixed loads printed 'cap +248% [OVER CAP]'.
  out = io.StringIO()
  over = measurement.Measurement(LOAD, 100e3, 3.48, 0.5, 9.0, 9.5, 2.0,
                                 200000)
  reporting.ConsoleReporter(out).Probe(0, over, 1.0, role='fixed')
  reporting.ConsoleReporter(out).Probe(1, over, 1.0)
  fixed, searched = out.getvalue().splitlines()
  assert 'cap' not in fixed and 'OVER CAP' not in fixed
  assert fixed.endswith('[fixed]')
  assert 'cap +248.0%' in searched and 'OVER CAP' in searched


def test_a_probe_line_counts_its_connections_with_a_separator():
  # 8x4096 printed '(32768 conn)' beside '1,234,567 ops/s'; a line under
  # 1,000 connections keeps its width.
  out = io.StringIO()
  for load in (measurement.Load(8, 4096), measurement.Load(1, 32)):
    reporting.ConsoleReporter(out).Probe(
        0, measurement.Measurement(load, 1234567.0, 0.5), 1.0)
  many, few = out.getvalue().splitlines()
  assert 'load    8x4096 (32,768 conn)    1,234,567 ops/s' in many
  assert 'load      1x32 (  32 conn)    1,234,567 ops/s' in few


def test_the_interference_warning_counts_the_hold_among_the_probes(
    pkb_flags):
  """The warning's 'N of M probes' counts every probe the run printed: it
  left the hold out, so a run whose 7 printed probes (4 here) were all
  disturbed said 'in 6 of 6 probes' ('3 of 3'), and the hold's share (the
  worst here) was not among those it named."""
  def Disturbed(m, pct):
    return dataclasses.replace(m, metadata={
        **m.metadata, 'foreign_cpu_pct': pct, 'interference': True})

  script = iter([Disturbed(p, 20.0) for p in _PROBES[:3]])

  def Hold(load, searched_ops, index):
    del load, searched_ops, index
    return Disturbed(_PROBES[3], 70.0), True

  class Policy(_Policy):

    def Steps(self, cap_ms):
      del cap_ms
      for role in ('search', 'confirm', 'confirm'):
        yield search_driver.ProbeRequest(LOAD, role)
      return search_driver.Outcome('done', 0, (1, 2))

  result = search_driver.FindLatencyCappedMaximum(
      lambda load: next(script), 1.0, Policy(), hold=Hold)
  assert [p.role for p in result.probes] == [
      'search', 'confirm', 'confirm', 'hold']
  out = io.StringIO()
  samples = results.ResultSamples(_Spec(pkb_flags, out), result, 1.0)
  assert ('WARNING: processes foreign to this run used up to 70 % of its '
          'cores in 4 of 4 probes') in out.getvalue()
  assert samples[0].metadata['interference_probes'] == 4
