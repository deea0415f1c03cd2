"""redis_benchmark_results on outputs recorded from redis-benchmark 7.0.15."""

import glob
import os

import pytest

from perfkitbenchmarker import measurement
from perfkitbenchmarker.load_generators import redis_benchmark_results as rb

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'data')


def _Read(name):
  # newline='' keeps the carriage returns between progress lines.
  with open(os.path.join(DATA, name), newline='') as f:
    return f.read()


def _ByTest(results):
  return {r.test: r for r in results}


EXPECTED_RPS = {
    'redis-benchmark_cluster3_c32_n400000.csv': (82884.38, 81119.45),
    'redis-benchmark_single_t1c32_n400000.csv': (109200.11, 104438.64),
    'redis-benchmark_single_t1c32_n400000_plain.txt': (106016.43, 110283.98),
    'redis-benchmark_single_t1c32_n400000_q.txt': (108371.72, 108049.70),
    'redis-benchmark_single_t2c256_n400000_over1ms.csv': (113927.66,
                                                           113571.83),
    'redis-benchmark_single_t2c256_n400000_over1ms_plain.txt': (122812.41,
                                                                 122661.77),
}


def test_every_redis_benchmark_fixture_is_covered():
  names = {os.path.basename(p)
           for p in glob.glob(os.path.join(DATA, 'redis-benchmark*'))}
  assert names == set(EXPECTED_RPS)


@pytest.mark.parametrize('name', sorted(EXPECTED_RPS))
def test_parse_output_detects_shape(name):
  results = rb.ParseOutput(_Read(name))
  assert [r.test for r in results] == ['SET', 'GET']
  assert [r.rps for r in results] == pytest.approx(list(EXPECTED_RPS[name]))
  shape = ('csv' if name.endswith('.csv') else
           'quiet' if name.endswith('_q.txt') else 'plain')
  assert {r.source for r in results} == {shape}


def test_csv_single():
  results = _ByTest(
      rb.ParseCsv(_Read('redis-benchmark_single_t1c32_n400000.csv')))
  s = results['SET']
  assert (s.avg_latency_ms, s.min_latency_ms, s.p50_latency_ms,
          s.p95_latency_ms, s.p99_latency_ms, s.max_latency_ms) == (
              0.157, 0.056, 0.151, 0.191, 0.335, 6.127)
  assert s.p999_latency_ms is None  # CSV has no p99.9.
  assert results['GET'].p99_latency_ms == 0.367


def test_csv_cluster_preamble_is_skipped():
  text = _Read('redis-benchmark_cluster3_c32_n400000.csv')
  assert text.startswith('Cluster has 3 master nodes:')
  results = _ByTest(rb.ParseCsv(text))
  assert set(results) == {'SET', 'GET'}
  assert results['SET'].avg_latency_ms == 0.213
  assert results['GET'].max_latency_ms == 5.583


def test_csv_over_cap():
  results = _ByTest(rb.ParseCsv(
      _Read('redis-benchmark_single_t2c256_n400000_over1ms.csv')))
  assert results['SET'].avg_latency_ms == 1.671
  assert results['GET'].p50_latency_ms == 1.119


def test_csv_without_header_is_refused():
  with pytest.raises(ValueError):
    rb.ParseCsv('Cluster has 3 master nodes:\n')


def test_plain_single():
  results = _ByTest(rb.ParsePlain(
      _Read('redis-benchmark_single_t1c32_n400000_plain.txt')))
  s = results['SET']
  assert (s.requests, s.seconds, s.clients) == (400000, 3.77, 32)
  assert (s.avg_latency_ms, s.min_latency_ms, s.p50_latency_ms,
          s.p95_latency_ms, s.p99_latency_ms, s.max_latency_ms) == (
              0.160, 0.048, 0.159, 0.199, 0.311, 3.127)
  # First distribution line at or past 99.9 % is '99.902% <= 0.519'; the
  # cumulative table below it ('99.897% <= 0.503') must not be used.
  assert s.p999_latency_ms == 0.519
  g = results['GET']
  assert g.p999_latency_ms == 0.471
  assert g.seconds == 3.63
  assert g.avg_latency_ms == 0.154


def test_plain_over_cap():
  results = _ByTest(rb.ParsePlain(
      _Read('redis-benchmark_single_t2c256_n400000_over1ms_plain.txt')))
  assert results['SET'].clients == 256
  assert results['SET'].p999_latency_ms == 5.759
  assert results['GET'].p999_latency_ms == 5.615
  assert results['GET'].avg_latency_ms == 1.617
  assert results['SET'].p99_latency_ms == 4.415


def test_quiet_output():
  results = _ByTest(rb.ParseQuiet(
      _Read('redis-benchmark_single_t1c32_n400000_q.txt')))
  assert results['SET'].rps == 108371.72
  assert results['SET'].p50_latency_ms == 0.159
  assert results['GET'].rps == 108049.70
  # -q prints no final average; the last progress line's overall one is used.
  assert results['SET'].avg_latency_ms == 0.158
  assert results['GET'].avg_latency_ms == 0.158


def test_last_progress_of_whole_and_truncated_output():
  text = _Read('redis-benchmark_single_t1c32_n400000_q.txt')
  last = rb.LastProgress(text)
  assert (last.test, last.rps, last.overall_rps, last.avg_latency_ms,
          last.overall_avg_latency_ms) == ('GET', 110661.4, 108009.1, 0.153,
                                           0.158)
  last_set = rb.LastProgress(text, 'SET')
  assert (last_set.overall_rps, last_set.overall_avg_latency_ms) == (
      108256.1, 0.158)
  # Stopped by a deadline in the middle of a line: that line is ignored.
  cut = text.index('SET: rps=110212.0')
  partial = text[:cut + len('SET: rps=110212.0 (overall: 108')]
  assert rb.LastProgress(partial).overall_rps != 108256.1
  assert rb.LastProgress(partial).test == 'SET'
  # Only the '-nan' first update: nothing usable.
  assert rb.LastProgress(text[:text.index('SET: rps=110308.0')]) is None
  assert rb.LastProgress('') is None


def test_last_progress_of_plain_output():
  text = _Read('redis-benchmark_single_t1c32_n400000_plain.txt')
  last_set = rb.LastProgress(text, 'SET')
  assert (last_set.overall_rps, last_set.overall_avg_latency_ms) == (
      106053.0, 0.160)


def test_tool_latency_leaves_out_client_queueing():
  # README: requests/s x average latency comes to about connections / 2.
  for result in rb.ParseCsv(_Read('redis-benchmark_single_t1c32_n400000.csv')):
    in_flight = result.rps * result.avg_latency_ms / 1000
    assert in_flight == pytest.approx(32 / 2, rel=0.15)


def test_combine_concurrent_uses_closed_loop_latency():
  results = rb.ParseCsv(_Read('redis-benchmark_single_t1c32_n400000.csv'))
  load = measurement.Load(threads=1, clients=64, pipeline=1)
  m = rb.CombineConcurrent(results, load, duration_s=4.0,
                           metadata={'tool_version': '7.0.15'})
  throughput = 109200.11 + 104438.64
  assert m.throughput == pytest.approx(throughput)
  assert m.average_latency_ms == pytest.approx(64 / throughput * 1000)
  assert m.metadata['latency_basis'] == 'closed_loop_littles_law'
  assert m.metadata['reported_average_latency_ms'] == pytest.approx(
      (109200.11 * 0.157 + 104438.64 * 0.164) / throughput)
  assert m.metadata['reported_average_latency_ms'] < m.average_latency_ms
  assert 'tool_reported' in m.metadata['percentile_basis']
  assert m.p50_latency_ms == 0.159 and m.p99_latency_ms == 0.367
  assert m.metadata['reported_max_latency_ms'] == 6.127
  assert m.metadata['tests'] == 'SET,GET'
  assert m.metadata['tool_version'] == '7.0.15'
  assert m.ops == round(throughput * 4.0)
  assert m.load == load


def test_combine_over_cap_and_plain_requests():
  plain = rb.ParsePlain(
      _Read('redis-benchmark_single_t2c256_n400000_over1ms_plain.txt'))
  load = measurement.Load(threads=2, clients=128, pipeline=1)
  m = rb.CombineConcurrent(plain[:1], load, duration_s=3.26)
  assert m.average_latency_ms == pytest.approx(256 / 122812.41 * 1000)
  assert not m.UnderCap(1.0)
  assert m.ops == 400000
  assert m.p999_latency_ms == 5.759
  assert m.metadata['tool_clients'] == 256
  # The tool's own average (1.637) hides how far past the cap this is.
  assert m.metadata['reported_average_latency_ms'] == pytest.approx(1.637)


def test_combine_refuses_nothing():
  with pytest.raises(ValueError):
    rb.CombineConcurrent([], measurement.Load(1, 1), 1.0)
