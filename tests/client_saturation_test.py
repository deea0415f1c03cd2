"""A CPU-saturated load generator is flagged, reported and never hidden.

The probe driver reads the client VM's CPU counters around each probe; the
VM and the load generator here are test doubles at that boundary (counters
and a measurement chosen by the test), the driver, the samples, the adaptive
search and the result samples are the real code.
"""

import io

import pytest

from perfkitbenchmarker import benchmark_spec
from perfkitbenchmarker import measurement
from perfkitbenchmarker import price_performance
from perfkitbenchmarker import pricing
from perfkitbenchmarker import reporting
from perfkitbenchmarker.linux_benchmarks import redis_memtier_benchmark as bench
from perfkitbenchmarker.load_generators import base
from perfkitbenchmarker.load_generators import driver
from perfkitbenchmarker.search import adaptive
from perfkitbenchmarker.study import results
from perfkitbenchmarker.search import driver as search_driver
from perfkitbenchmarker.search import linear

Load = measurement.Load


class CountersVm:
  """A client VM whose CPU counters advance `busy` of each 1000 jiffies."""

  def __init__(self, busy: float, name: str = 'clients-0'):
    self.name = name
    self._busy = busy
    self._total = 0.0

  def CpuTimes(self):
    self._total += 1000
    return self._total * self._busy, self._total


class ClosedLoopGenerator(base.LoadGenerator):
  """A load generator double: a client-bound closed loop at `ceiling` ops/s."""

  NAME = 'double'

  def __init__(self, ceiling: float = 90000.0):
    self.ceiling = ceiling

  def Version(self):
    return '0'

  def Preload(self, endpoints, password, workload):
    return 0

  def Probe(self, endpoints, password, workload, load, duration_s):
    throughput = min(self.ceiling, 6000.0 * load.connections)
    return measurement.Measurement(
        load, throughput, load.outstanding_requests / throughput * 1000,
        duration_s=duration_s, ops=int(throughput * duration_s))


def _Driver(busy_fractions):
  vms = [CountersVm(b, f'clients-{i}') for i, b in enumerate(busy_fractions)]
  return driver.ProbeDriver(vms, [ClosedLoopGenerator() for _ in vms],
                            [base.Endpoint('127.0.0.1', 7001)], 'pw',
                            base.Workload(), 1)


def test_saturated_probe_is_flagged_with_its_busy_share():
  m = _Driver([0.95])(Load(1, 32))
  assert m.client_saturated
  assert m.client_cpu_busy_fraction == pytest.approx(0.95)
  calm = _Driver([0.5])(Load(1, 32))
  assert not calm.client_saturated
  assert calm.client_cpu_busy_fraction == pytest.approx(0.5)


def test_probe_samples_carry_saturation_and_busy_percent():
  m = _Driver([0.95])(Load(1, 32))
  for s in price_performance.ProbeSamples(0, m, 1.0):
    assert s.metadata['client_saturated'] is True
    assert s.metadata['client_cpu_busy_pct'] == pytest.approx(95.0)


def test_several_clients_keep_the_busiest_share():
  m = _Driver([0.4, 0.93])(Load(1, 32))
  assert m.client_saturated
  assert m.client_cpu_busy_fraction == pytest.approx(0.93)


def test_adaptive_search_reports_the_client_limit():
  result = search_driver.FindLatencyCappedMaximum(
      _Driver([0.95]), 1.0, adaptive.AdaptiveStepPolicy(
          min_connections=4, start_connections=32, confirm_repeats=2))
  assert result.client_limited
  assert 'load generator CPU saturated' in result.stop_reason
  assert 'lower bound' in result.stop_reason
  assert result.best is not None


def test_result_samples_say_client_limited_and_the_run_warns(pkb_flags):
  out = io.StringIO()
  spec = benchmark_spec.BenchmarkSpec(
      bench, bench.GetConfig({}), 'sat', 'Local', None, pkb_flags,
      pricing.PriceCatalog.Load(), lambda s: None,
      reporter=reporting.ConsoleReporter(out))
  result = search_driver.FindLatencyCappedMaximum(
      _Driver([0.95]), 1.0, linear.LinearStepPolicy(1, 4, 1, 8))
  samples = results.ResultSamples(spec, result, 1.0)
  capped = next(s for s in samples
                if s.metric == price_performance.CAPPED_THROUGHPUT)
  assert capped.metadata['client_limited'] is True
  assert capped.metadata['client_saturated'] is True
  assert 'WARNING: the client was CPU-saturated' in out.getvalue()
