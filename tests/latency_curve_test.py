"""The latency-throughput curve's planning and naming, in-process.

The rates memtier's limiter really offers (checked against its source,
memtier_benchmark.cpp: ceil(rate / 50) requests per wake-up, rate // that
wake-ups a second; and by a real memtier on loopback: --rate-limiting=75 on
32 connections sent 2,370 and 2,366 requests in its two whole seconds, 74
a connection), the points planned under an answer, `rate_not_achieved`
for a point that fell short, the flag, the memtier argv and the console
line.
"""

import io
import json
import types

import pytest

from perfkitbenchmarker import attribution
from perfkitbenchmarker import errors
from perfkitbenchmarker import latency_curve
from perfkitbenchmarker import measurement
from perfkitbenchmarker import reporting
from perfkitbenchmarker.load_generators import base
from perfkitbenchmarker.load_generators import commands
from perfkitbenchmarker.load_generators import memtier_results
from perfkitbenchmarker.study import curve_runner
from perfkitbenchmarker.study import options
from perfkitbenchmarker.study import search_options


@pytest.mark.parametrize('asked, offered', [
    (1, 1), (50, 50), (51, 50), (75, 74), (100, 100), (1010, 1008),
    (1852, 1824), (1850, 1850), (1862, 1862), (2451, 2450), (100000, 100000)])
def test_memtier_offers_whole_requests_per_wakeup(asked, offered):
  assert latency_curve.MemtierOfferedRate(asked) == offered


def test_no_rate_below_one():
  with pytest.raises(ValueError):
    latency_curve.MemtierOfferedRate(0)


@pytest.mark.parametrize('wanted', [1.0, 74.6, 99.5, 1851.7, 2449.0,
                                    33333.3])
def test_the_nearest_rate_is_nearest_of_every_rate_around_it(wanted):
  rate = latency_curve.NearestMemtierRate(wanted)
  best = min(abs(latency_curve.MemtierOfferedRate(r) - wanted)
             for r in range(1, int(wanted * 2) + 60))
  assert abs(latency_curve.MemtierOfferedRate(rate) - wanted) == best


def test_points_spread_each_percent_over_every_connection():
  # 118,506 ops/s on 32 connections (a replayed answer).
  points = latency_curve.PlanPoints(118506, 32, (90, 25, 50, 75))
  assert [p.percent for p in points] == [25, 50, 75, 90]
  for p in points:
    wanted = 118506 * p.percent / 100
    assert abs(p.offered_ops - wanted) / wanted < 0.01
    assert p.connections == 32
  assert points[1].rate_per_connection == 1850  # 37 x 50, offered exactly


def test_percents_that_come_to_one_rate_are_one_point():
  # 40 ops/s over 32 connections: every percent is 1 a second or less.
  points = latency_curve.PlanPoints(40, 32, (25, 50, 75))
  assert [(p.percent, p.rate_per_connection) for p in points] == [(25, 1)]


@pytest.mark.parametrize('answer, connections', [(0, 32), (1000, 0)])
def test_no_points_without_an_answer(answer, connections):
  assert latency_curve.PlanPoints(answer, connections, (50,)) == ()


def _Server(name='server_cpu'):
  return attribution.Limit(name, 'server main thread on a CPU 97 %',
                           (('server_main_thread_pct', 97.0),))


def test_a_point_that_achieved_its_rate_keeps_its_own_limit():
  point = latency_curve.CurvePoint(50, 1000, 32)  # 32,000 offered
  assert latency_curve.RateLimit(point, 31000, _Server()) is None
  assert latency_curve.RateLimit(point, 30400, None) is None  # 0.95


def test_a_point_short_of_its_rate_is_named_with_what_limited_it():
  point = latency_curve.CurvePoint(90, 1000, 32)
  limit = latency_curve.RateLimit(point, 26000, _Server())
  assert limit.name == attribution.RATE_NOT_ACHIEVED == 'rate_not_achieved'
  assert limit.detail.startswith(
      'achieved 26,000 of the 32,000 ops/s offered (81.2 %); server CPU: '
      'server main thread')
  assert dict(limit.figures) == {'server_main_thread_pct': 97.0,
                                 'limit_measured': 'server_cpu'}
  assert not limit.client_limited
  assert attribution.Short(limit.Metadata()) == 'rate not achieved'
  bare = latency_curve.RateLimit(point, 0, None)
  assert bare.detail == ('achieved 0 of the 32,000 ops/s offered (0.0 %)')


def test_curve_metadata_names_the_shortfall_over_the_probes_limit():
  point = latency_curve.CurvePoint(75, 1000, 32)
  m = measurement.Measurement(
      measurement.Load(1, 32, rate_per_connection=1000), 20000.0, 0.9,
      metadata={'limit': 'server_cpu', 'limit_detail': 'main thread 97 %'})
  meta = latency_curve.CurveMetadata(point, m)
  assert meta['limit'] == 'rate_not_achieved'
  assert meta['limit_measured'] == 'server_cpu'
  assert (meta['offered_ops_per_s'], meta['rate_achieved_pct'],
          meta['curve_percent'], meta['rate_per_connection']) == (
              32000.0, 62.5, 75, 1000)
  met = latency_curve.CurveMetadata(point, m.__class__(
      m.load, 31990.0, 0.2, metadata=m.metadata))
  assert 'limit' not in met and met['rate_achieved_pct'] == 100.0


def test_probe_connections_count_every_process():
  m = measurement.Measurement(measurement.Load(2, 16), 1.0, 0.1,
                              metadata={'client_processes': 3})
  assert latency_curve.ProbeConnections(m) == 96
  assert latency_curve.ProbeConnections(m, 3) == 288  # a 3-primary cluster
  deployment = types.SimpleNamespace(cluster_mode=True, primaries=3)
  assert curve_runner.RateLimitedConnections(deployment) == 3
  deployment.cluster_mode = False  # standalone: one endpoint a process
  assert curve_runner.RateLimitedConnections(deployment) == 1


def test_the_memtier_argv_carries_the_rate_per_connection():
  load = measurement.Load(2, 16, rate_per_connection=931)
  argv = commands.MemtierProbeCommand(
      'memtier_benchmark', base.Endpoint('127.0.0.1', 7001), None,
      base.Workload(), load, 2, '/tmp/x.json')
  assert argv[argv.index('--rate-limiting') + 1] == '931'
  closed = commands.MemtierProbeCommand(
      'memtier_benchmark', base.Endpoint('127.0.0.1', 7001), None,
      base.Workload(), measurement.Load(2, 16), 2, '/tmp/x.json')
  assert '--rate-limiting' not in closed
  with pytest.raises(ValueError):
    commands.MemtierProbeCommand(
        'memtier_benchmark', base.Endpoint('127.0.0.1', 7001), None,
        base.Workload(), load, 4, '/tmp/x.json',
        staircase=commands.StaircaseSpec(4, 4, 2))
  assert load.Describe() == '2x16 @931/s'


def test_the_console_line_says_offered_achieved_and_the_limit():
  out = io.StringIO()
  m = measurement.Measurement(
      measurement.Load(1, 32, rate_per_connection=1000), 26000.0, 0.812,
      p99_latency_ms=2.5, metadata={'limit': 'rate_not_achieved'})
  reporting.ConsoleReporter(out).CurvePoint(9, m, 90, 32000.0)
  assert out.getvalue() == (
      '  probe  9  curve 90 %  offered    32,000 ops/s  achieved    26,000 '
      'ops/s ( 81.2 %)  avg  0.812 ms  p99  2.500 ms  [rate not achieved]\n')
  # The cap's statistic, then p99 (once when it is the statistic).
  out = io.StringIO()
  m = measurement.Measurement(measurement.Load(1, 32), 26000.0, 0.812,
                              p95_latency_ms=1.25, p99_latency_ms=2.5)
  reporting.ConsoleReporter(out).CurvePoint(9, m, 90, 26000.0, 'p95')
  reporting.ConsoleReporter(out).CurvePoint(9, m, 90, 26000.0, 'p99')
  reporting.ConsoleReporter(out).CurvePoint(9, m, 90, 26000.0, 'p90')
  assert [line.split('(100.0 %)  ')[1] for line in
          out.getvalue().splitlines()] == [
              'p95  1.250 ms  p99  2.500 ms', 'p99  2.500 ms',
              'p90    n/a ms  p99  2.500 ms']


def _Curve(pkb_flags, **values):
  for name, value in values.items():
    setattr(pkb_flags, name, value)
  return options.RedisStudyOptions.FromFlags(pkb_flags).curve


def test_default_percents_and_seconds_local_and_elsewhere(pkb_flags):
  local = _Curve(pkb_flags)
  assert local.percents == latency_curve.LOCAL_PERCENTS == (50, 90)
  assert local.ProbeSeconds(2) == latency_curve.LOCAL_PROBE_S == 1
  cloud = _Curve(pkb_flags, cloud='GCP')
  assert cloud.percents == (25, 50, 75, 90)
  assert cloud.ProbeSeconds(30) == 30  # the search's probes'
  assert _Curve(pkb_flags, memtier_curve_run_duration=5).ProbeSeconds(30) == 5


def test_given_percents_and_empty_turns_it_off(pkb_flags):
  curve = _Curve(pkb_flags, memtier_curve_rate_percents=['90', '25'])
  assert curve.percents == (25, 90) and curve.enabled
  pkb_flags['memtier_curve_rate_percents'].parse('')
  assert not _Curve(pkb_flags).enabled


@pytest.mark.parametrize('value', ['0', '100', 'half', '50.5'])
def test_bad_percents_are_one_line(pkb_flags, value):
  with pytest.raises(errors.UsageError) as caught:
    _Curve(pkb_flags, memtier_curve_rate_percents=['50', value])
  message = str(caught.value)
  assert message.startswith(f'--memtier_curve_rate_percents=50,{value}: '
                            f'"{value}" is not a whole percent from 1 to 99')
  assert '\n' not in message


@pytest.mark.parametrize('values', [['50', '50'], ['90', '25', ' 25']])
def test_a_percent_given_twice_is_one_line(pkb_flags, values):
  # '--memtier_curve_rate_percents=50,50' planned one probe at 50 % ('1
  # probes after the search'), the second 50 dropped without a word.
  with pytest.raises(errors.UsageError) as caught:
    _Curve(pkb_flags, memtier_curve_rate_percents=values)
  assert str(caught.value) == (
      f'--memtier_curve_rate_percents={",".join(values)}: {values[-1].strip()} '
      'is given twice; give each percent once, e.g. 25,50,75,90.')


def test_a_recorded_rate_limited_run_parses_to_what_it_achieved(data_path):
  # A real memtier at --rate-limiting=200 on 32 connections (tests/data):
  # the parser reads the achieved rate from its counts and real duration,
  # never the offered one, and the point names the shortfall.
  with open(data_path('memtier_single_t1c32_tt2_rate200.json')) as f:
    text = f.read()
  with open(data_path('memtier_single_t1c32_tt2_rate200.txt')) as f:
    stdout = f.read()
  assert json.loads(text)['configuration']['rate_limit'] == 200
  load = measurement.Load(1, 32, rate_per_connection=200)
  m = memtier_results.Measure([text], [stdout], load, 2)
  assert m.load.rate_per_connection == 200
  assert m.ops == 12448
  assert m.throughput == pytest.approx(12448 / 2.007, rel=0.005)
  assert m.p95_latency_ms == pytest.approx(3.551)
  point = latency_curve.CurvePoint(50, 200, 32)
  assert point.offered_ops == 6400
  assert 0.95 < latency_curve.AchievedShare(point, m.throughput) < 0.98
  assert latency_curve.RateLimit(point, m.throughput, None) is None
  # Its whole second is exactly what the limiter lets out; the first
  # (connecting) and the partial last one less.
  assert [s.ops for s in m.per_second] == [6016, 6400, 32]


class _FirstProbe(Exception):
  """Stops RunCurve at its first probe: the header line is what is read."""


class _Driver:
  generators = [types.SimpleNamespace(NAME='memtier_benchmark',
                                      RATE_LIMITS=True)]
  duration_s = 1.0

  def WithDuration(self, _):
    return self

  def __call__(self, load):
    raise _FirstProbe(load)


@pytest.mark.parametrize('percents,header', [
    ((50,), '1 probe at fixed offered rates'),
    ((50, 90), '2 probes at fixed offered rates'),
])
def test_the_curve_header_counts_its_probes_in_words(percents, header):
  # '--memtier_curve_rate_percents=50' printed '1 probes at fixed offered
  # rates'.
  lines = []
  spec = types.SimpleNamespace(reporter=types.SimpleNamespace(
      Line=lines.append))
  answer = measurement.Measurement(measurement.Load(1, 32), 122665.0, 0.26)
  result = types.SimpleNamespace(best=answer, reported=answer)
  opts = types.SimpleNamespace(curve=search_options.CurveOptions(percents))
  with pytest.raises(_FirstProbe):
    curve_runner.RunCurve(spec, _Driver(), opts, result, {}, 4)
  assert lines == [f'Curve under the answer (122,665 ops/s at 1x32): '
                   f'{header}, memtier --rate-limiting per connection, '
                   '1 s each:']
