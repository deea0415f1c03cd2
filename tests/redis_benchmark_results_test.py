"""redis_benchmark_results on outputs recorded from redis-benchmark 7.0.15."""

import dataclasses
import glob
import io
import os
import re

import pytest

from perfkitbenchmarker import measurement
from perfkitbenchmarker import reporting
from perfkitbenchmarker.load_generators import driver
from perfkitbenchmarker.load_generators import redis_benchmark_results as rb

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'data')


def _Read(name):
  # newline='' keeps the carriage returns between progress lines.
  with open(os.path.join(DATA, name), newline='') as f:
    return f.read()


def _ByTest(results):
  return {r.test: r for r in results}


EXPECTED_RPS = {
    'redis-benchmark_cluster3_c32_n400000_plain.txt': (97967.18, 101317.12),
    'redis-benchmark_single_t1c32_n400000_plain.txt': (106016.43, 110283.98),
    'redis-benchmark_single_t2c256_n400000_over1ms_plain.txt': (122812.41,
                                                                 122661.77),
}


# One GET process whose first progress line, a millisecond after its start,
# already counted the replies of that millisecond ('rps=0.0 (overall:
# 24000.0)'); recorded 2026-11-29 with `redis-benchmark -h 127.0.0.1 -p
# 16398 -t get -c 24 -n 120000 -P 1 -d 100 -r 100000 --threads 1` against
# redis-server 7.0.15 under the 2-core split's quota (1000 us per 2000 us),
# beside a SET process with the other 24 connections.
START_LINE = 'redis-benchmark_single_t1c24_n120000_quota_startline.txt'


# A SET process of a cluster probe (--cluster, 3 masters) during which one
# master gave up 201 of its slots for 2 s: its stdout ('77504 requests
# completed in 10.45 seconds', 24 of them at 3,000 ms) and its stderr; see
# tests/data/README.md.
CLUSTERDOWN = 'redis-benchmark_cluster3_c24_n77504_clusterdown'

# A GET process (-c 16 -n 160000) planned from the 70,022 ops/s its load
# ran at before the shard's CPU quota was cut to a tenth, stopped by the
# probe at its 3.5 s time bound (SIGTERM: no report), the evidence of
# tests/steady_quota_test.py's probe case; see tests/data/README.md.
STOPPED = 'redis-benchmark_single_t1c16_n160000_quota_stopped.txt'


def test_every_redis_benchmark_fixture_is_covered():
  names = {os.path.basename(p)
           for p in glob.glob(os.path.join(DATA, 'redis-benchmark*'))}
  assert names == set(EXPECTED_RPS) | {START_LINE, CLUSTERDOWN + '.txt',
                                       CLUSTERDOWN + '.err', STOPPED}


def test_a_process_stopped_at_its_bound_counts_its_whole_seconds():
  text = _Read(STOPPED)
  assert rb.ParseOutput(text) == []
  load = measurement.Load(1, 16)
  # Not stopped by the probe: a process with no report is no result.
  with pytest.raises(ValueError, match='printed no result'):
    rb.Measure([text], ['127.0.0.1:7001'], [3.72], load)
  m = rb.Measure([text], ['127.0.0.1:7001'], [3.72], load, stopped=[16])
  # The start line left out, 14 quarter seconds: 3 whole seconds, the last
  # two quarters no second.
  ticks = [float(t) for t in re.findall(r'rps=([\d.]+)', text)][1:]
  assert len(ticks) == 14
  ops = [round(sum(ticks[4 * i:4 * i + 4]) * rb.TICK_S) for i in range(3)]
  assert [s.ops for s in m.per_second] == ops
  assert m.ops == sum(ops)
  assert m.throughput == pytest.approx(sum(ops) / 3)
  # Closed loop as any probe: 16 outstanding over that rate.
  assert m.average_latency_ms == pytest.approx(16 / (sum(ops) / 3) * 1000)
  assert m.metadata['reported_average_latency_ms'] == pytest.approx(1.700)
  assert m.p99_latency_ms is None and m.p50_latency_ms is None
  assert m.metadata[rb.STOPPED_PROCESSES_KEY] == 1
  result = rb.ProcessResult(text, 16)
  assert (result.test, result.requests, result.seconds, result.clients,
          result.stopped) == ('GET', sum(ops), 3.0, 16, True)
  # A process stopped before a whole second has no figure to give.
  with pytest.raises(ValueError, match='before a whole second'):
    rb.StoppedResult(text[:text.index('rps=7016.0')], 16)
  # The probe's line says it was stopped, and that it has no p99.
  m = dataclasses.replace(m, metadata={
      **m.metadata, measurement.STOPPED_AT_KEY: 3.5})
  printed = io.StringIO()
  reporting.ConsoleReporter(printed).Probe(3, m, 20.0, 'confirm')
  line = printed.getvalue()
  assert 'p99    n/a ms' in line, line
  assert line.rstrip().endswith(
      '[stopped at 3.5 s, slower than planned, confirm]'), line


def test_error_replies_it_went_on_after_are_read_from_stderr():
  """In cluster mode redis-benchmark counts a CLUSTERDOWN reply as a
  request done, after a second's wait: the recorded process's report reads
  like any other (77,504 requests completed); only stderr says 8 were
  refused."""
  result, = rb.ParseOutput(_Read(CLUSTERDOWN + '.txt'))
  assert result.requests == 77504
  assert rb.ErrorReplies(_Read(CLUSTERDOWN + '.err')) == (
      8, 'Error from server 127.0.0.1:7001: CLUSTERDOWN The cluster is down.')
  assert rb.ErrorReplies('WARNING: Could not fetch server CONFIG\n') == (
      0, None)


def test_the_start_line_is_no_quarter_second_of_load():
  text = _Read(START_LINE)
  assert text.lstrip().startswith('GET: rps=0.0 (overall: 24000.0)')
  result, = rb.ParseOutput(text)
  assert result.rps == pytest.approx(29702.97)
  seconds = rb.ProcessSeconds(text, 24)
  assert len(seconds) == 4  # 4.04 s: the lines after the start line.
  # Every second near the process's rate: the first is not a quarter
  # short (it was, 22,800 ops, its latency a third over the others').
  for s in seconds:
    assert s.ops == pytest.approx(result.rps, rel=0.15), seconds
  first, *rest = (s.average_latency_ms for s in seconds)
  assert first < 1.1 * max(rest)
  # The older recording's GET test starts with 'rps=190.5 (overall:
  # 4000.0)' (its first second read 84,277 ops beside 108,143 and 112,126);
  # its SET test with '-nan', not a line that counts: its first second
  # stays.
  text = _Read('redis-benchmark_single_t1c32_n400000_plain.txt')
  get = rb.ProcessSeconds(text, 32)
  assert get[0].ops == pytest.approx(get[1].ops, rel=0.1), get
  set_lines = text[:text.index('====== SET')]
  assert 'rps=0.0 (overall: -nan)' in set_lines
  rates = [float(r) for r in re.findall(r'rps=([\d.]+) \(overall: [\d.]+',
                                        set_lines)]
  assert rb.ProcessSeconds(set_lines, 32)[0].ops == round(
      sum(rates[:4]) * rb.TICK_S)


@pytest.mark.parametrize('name', sorted(EXPECTED_RPS))
def test_parse_output(name):
  results = rb.ParseOutput(_Read(name))
  assert [r.test for r in results] == ['SET', 'GET']
  assert [r.rps for r in results] == pytest.approx(list(EXPECTED_RPS[name]))


def test_cluster_preamble_is_skipped():
  text = _Read('redis-benchmark_cluster3_c32_n400000_plain.txt')
  assert text.startswith('Cluster has 3 master nodes:')
  results = _ByTest(rb.ParseOutput(text))
  s = results['SET']
  assert (s.requests, s.seconds, s.clients) == (400000, 4.08, 32)
  assert s.p999_latency_ms == 4.735


def test_plain_single():
  results = _ByTest(rb.ParseOutput(
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
  results = _ByTest(rb.ParseOutput(
      _Read('redis-benchmark_single_t2c256_n400000_over1ms_plain.txt')))
  assert results['SET'].clients == 256
  assert results['SET'].p999_latency_ms == 5.759
  assert results['GET'].p999_latency_ms == 5.615
  assert results['GET'].avg_latency_ms == 1.617
  assert results['SET'].p99_latency_ms == 4.415


def test_tool_latency_leaves_out_client_queueing():
  # README: requests/s x average latency comes to about connections / 2.
  for result in rb.ParseOutput(
      _Read('redis-benchmark_single_t1c32_n400000_plain.txt')):
    in_flight = result.rps * result.avg_latency_ms / 1000
    assert in_flight == pytest.approx(32 / 2, rel=0.15)


def test_combine_concurrent_uses_closed_loop_latency():
  results = rb.ParseOutput(
      _Read('redis-benchmark_single_t1c32_n400000_plain.txt'))
  load = measurement.Load(threads=1, clients=64, pipeline=1)
  m = rb.CombineConcurrent(results, load, duration_s=4.0,
                           metadata={'tool_version': '7.0.15'})
  rates = 106016.43 + 110283.98
  # Each ran 400,000 requests and ended when they were done: SET's 3.77 s
  # is the span of the two (measurement.SideBySideRate), not their rates'
  # sum; each one's closed loop is its 32 connections / its rate.
  assert m.throughput == pytest.approx(800000 / (400000 / 106016.43))
  assert m.average_latency_ms == pytest.approx(
      (32 / 106016.43 + 32 / 110283.98) / 2 * 1000)
  assert m.metadata['latency_basis'] == 'closed_loop_littles_law'
  assert m.metadata['reported_average_latency_ms'] == pytest.approx(
      (106016.43 * 0.160 + 110283.98 * 0.154) / rates)
  assert m.metadata['reported_average_latency_ms'] < m.average_latency_ms
  assert 'tool_reported' in m.metadata['percentile_basis']
  assert m.p50_latency_ms == 0.159 and m.p99_latency_ms == 0.311
  assert m.p999_latency_ms == 0.519
  assert m.metadata['reported_max_latency_ms'] == 4.303
  assert m.metadata['tests'] == 'SET,GET'
  assert m.metadata['tool_version'] == '7.0.15'
  assert m.ops == 800000  # the tool's own request counts
  assert m.load == load


def test_combine_over_cap_and_plain_requests():
  plain = rb.ParseOutput(
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


def test_a_probe_over_two_shards_reports_both_shards_figures():
  """Each shard (group) ran the recorded GET at 1x32: the probe's
  outstanding requests, the tool's clients and its per-test rate are both
  shards', not the first's (outstanding_requests 32, tool_clients 32 and
  test_rps GET=110283.98 beside a throughput of 220,567.96)."""
  text = _Read('redis-benchmark_single_t1c32_n400000_plain.txt')
  m = rb.Measure([text, text], ['127.0.0.1:7001', '127.0.0.1:7002'],
                 [3.63, 3.63], measurement.Load(1, 32))
  assert m.throughput == pytest.approx(2 * 110283.98)
  assert m.metadata['outstanding_requests'] == 64
  assert m.metadata['tool_clients'] == 64
  assert m.metadata['test_rps'] == 'GET=220567.96'
  assert m.metadata['reported_p99_latency_ms'] == m.p99_latency_ms


def test_processes_that_end_apart_served_their_requests_over_the_longest():
  """A request count ends when its requests are done: the recorded GET of
  400,000 at 110,283.98/s (3.63 s) beside the one of 120,000 at
  29,702.97/s (4.04 s) served 520,000 requests in 4.04 s, 128,713 a
  second, not the 139,987 of their rates summed (each over its own span),
  as two processes of a client VM or as two client VMs."""
  plain = _Read('redis-benchmark_single_t1c32_n400000_plain.txt')
  quota = _Read(START_LINE)
  served = 520000 / (120000 / 29702.97)
  # Each process's closed loop (its connections / its rate), weighted by
  # its requests: the one that ran alone at the end counts for its own.
  latency = (400000 * 32 / 110283.98 + 120000 * 24 / 29702.97) / 520000
  processes = rb.Measure([plain, quota], ['127.0.0.1:7001'] * 2,
                         [3.7, 4.1], measurement.Load(1, 56))
  assert processes.throughput == pytest.approx(served)
  assert processes.ops == 520000
  assert processes.average_latency_ms == pytest.approx(latency * 1000)
  vms = driver.CombineClientVms(
      [rb.Measure([text], ['127.0.0.1:7001'], [seconds],
                  measurement.Load(1, connections))
       for text, seconds, connections in ((plain, 3.7, 32), (quota, 4.1, 24))],
      measurement.Load(2, 28))
  assert vms.throughput == pytest.approx(served)
  assert vms.average_latency_ms == pytest.approx(latency * 1000)
  # Shards (groups) that end apart too.
  shards = rb.Measure([plain, quota], ['127.0.0.1:7001', '127.0.0.1:7002'],
                      [3.7, 4.1], measurement.Load(1, 56))
  assert shards.throughput == pytest.approx(served)


def test_a_probe_over_two_client_vms_reports_both_vms_figures():
  """Each client VM ran one recorded GET: the probe's test_rps and the
  tool's reported percentiles, maximum and average are both VMs', not the
  first VM's ('./pkb.py --load_generator=redis_benchmark ... vm_count=2'
  said clients-0's test_rps and a reported max of 8.055 ms where
  clients-1's GET had 14.999)."""
  plain = _Read('redis-benchmark_single_t1c32_n400000_plain.txt')
  quota = _Read(START_LINE)
  tool = [rb.ParseOutput(text)[-1] for text in (plain, quota)]
  vms = driver.CombineClientVms(
      [rb.Measure([text], ['127.0.0.1:7001'], [4.0],
                  measurement.Load(1, connections))
       for text, connections in ((plain, 32), (quota, 24))],
      measurement.Load(2, 28))
  assert vms.metadata['test_rps'] == 'GET=139986.95'
  for name in ('p50', 'p95', 'p99', 'p999', 'max'):
    assert vms.metadata[f'reported_{name}_latency_ms'] == max(
        getattr(r, f'{name}_latency_ms') for r in tool), name
  assert vms.metadata['reported_average_latency_ms'] == pytest.approx(
      (400000 * tool[0].avg_latency_ms + 120000 * tool[1].avg_latency_ms) /
      520000)
