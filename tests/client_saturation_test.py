"""A CPU-saturated load generator is flagged, reported and never hidden.

The load generator reports its threads' on-CPU time over the probe (a
client_cpu.ClientCpu with its attribution side); the VM and the load
generator here are test doubles at that boundary (counters and a
measurement chosen by the test), the driver, the rule (attribution.py), the
samples, the adaptive search and the result samples are the real code. The
VM's busy share alone never flags a probe: other processes fill it too
(issue 23).
"""

import dataclasses
import io

import pytest

from perfkitbenchmarker import attribution
from perfkitbenchmarker import benchmark_spec
from perfkitbenchmarker import measurement
from perfkitbenchmarker import price_performance
from perfkitbenchmarker import pricing
from perfkitbenchmarker import reporting
from perfkitbenchmarker.linux_benchmarks import redis_memtier_benchmark as bench
from perfkitbenchmarker.load_generators import base
from perfkitbenchmarker.load_generators import client_cpu
from perfkitbenchmarker.load_generators import driver
from perfkitbenchmarker.search import adaptive
from perfkitbenchmarker.study import results
from perfkitbenchmarker.search import driver as search_driver
from perfkitbenchmarker.search import linear

Load = measurement.Load


class CountersVm:
  """A client VM (its generator measures its own CPU)."""

  def __init__(self, busy: float, name: str = 'clients-0'):
    self.name = name
    self._busy = busy
    self._total = 0.0


def _Cpu(on_cpu: float, busy: float) -> client_cpu.ClientCpu:
  """The client's figures: its one thread on a CPU `on_cpu` of the window,
  its VM `busy`."""
  side = attribution.SideCpu(
      'client', (attribution.ThreadCpu('memtier', on_cpu, 0.0, True),), 2.0,
      cores=1)
  return client_cpu.ClientCpu(2.0, busy, busiest_thread='memtier',
                              busiest_thread_fraction=on_cpu,
                              busiest_thread_runnable_fraction=on_cpu,
                              side=side, window_start=0.0, window_end=2.0)


class ClosedLoopGenerator(base.LoadGenerator):
  """A load generator double: a client-bound closed loop at `ceiling` ops/s,
  its thread on a CPU `on_cpu` of each probe."""

  NAME = 'double'
  MEASURES_CLIENT_CPU = True

  def __init__(self, ceiling: float = 90000.0, on_cpu: float = 0.95,
               busy: float = 0.95):
    self.ceiling = ceiling
    self.on_cpu = on_cpu
    self.busy = busy

  def Version(self):
    return '0'

  def Preload(self, endpoints, password, workload):
    return 0

  def Probe(self, endpoints, password, workload, load, duration_s):
    throughput = min(self.ceiling, 6000.0 * load.connections)
    cpu = _Cpu(self.on_cpu, self.busy)
    return measurement.Measurement(
        load, throughput, load.outstanding_requests / throughput * 1000,
        duration_s=duration_s, ops=int(throughput * duration_s),
        client_cpu=cpu, client_cpu_busy_fraction=self.busy)


def _Driver(on_cpu, busy=None):
  busy = busy or on_cpu
  vms = [CountersVm(b, f'clients-{i}') for i, b in enumerate(busy)]
  return driver.ProbeDriver(
      vms, [ClosedLoopGenerator(on_cpu=o, busy=b)
            for o, b in zip(on_cpu, busy)],
      [base.Endpoint('127.0.0.1', 7001)], 'pw', base.Workload(), 1)


def test_saturated_probe_is_flagged_with_its_busy_share():
  m = _Driver([0.95])(Load(1, 32))
  assert m.client_saturated
  assert m.metadata['limit'] == attribution.CLIENT_CPU
  assert m.client_cpu_busy_fraction == pytest.approx(0.95)
  calm = _Driver([0.5])(Load(1, 32))
  assert not calm.client_saturated
  assert calm.metadata['limit'] == attribution.LATENCY
  assert calm.client_cpu_busy_fraction == pytest.approx(0.5)


def test_a_busy_vm_whose_thread_is_not_on_a_cpu_is_not_client_bound():
  # The VM 99 % busy (others' processes), the load generator's thread on a
  # CPU 20 % of the time: the old VM rule said client-bound; it is not.
  m = _Driver([0.2], [0.99])(Load(1, 32))
  assert not m.client_saturated
  assert m.metadata['limit'] != attribution.CLIENT_CPU


def test_probe_samples_carry_saturation_and_busy_percent():
  m = _Driver([0.95])(Load(1, 32))
  for s in price_performance.ProbeSamples(0, m, 1.0):
    assert s.metadata['client_saturated'] is True
    assert s.metadata['limit'] == 'client_cpu'
    assert s.metadata['client_busiest_thread_pct'] == pytest.approx(95.0)
    assert s.metadata['client_cpu_busy_pct'] == pytest.approx(95.0)


def test_several_clients_keep_the_busiest_share():
  m = _Driver([0.4, 0.93])(Load(1, 32))
  assert m.client_saturated
  assert m.client_cpu_busy_fraction == pytest.approx(0.93)
  assert m.metadata['client_busiest_thread_pct'] == pytest.approx(93.0)


def test_adaptive_search_reports_the_client_limit():
  result = search_driver.FindLatencyCappedMaximum(
      _Driver([0.95]), 1.0, adaptive.AdaptiveStepPolicy(
          min_connections=4, start_connections=32, confirm_repeats=2))
  assert result.client_limited
  assert 'load generator CPU saturated' in result.stop_reason
  assert 'lower bound' in result.stop_reason
  assert result.best is not None


def _Spec(pkb_flags, run_uri, out):
  """A Local spec of the memtier study that says its lines into `out`."""
  return benchmark_spec.BenchmarkSpec(
      bench, bench.GetConfig({}), run_uri, 'Local', None, pkb_flags,
      pricing.PriceCatalog.Load(), lambda s: None,
      reporter=reporting.ConsoleReporter(out))


def test_result_samples_say_client_limited_and_the_run_warns(pkb_flags):
  out = io.StringIO()
  spec = _Spec(pkb_flags, 'sat', out)
  result = search_driver.FindLatencyCappedMaximum(
      _Driver([0.95]), 1.0, linear.LinearStepPolicy(1, 4, 1, 8))
  samples = results.ResultSamples(spec, result, 1.0)
  capped = next(s for s in samples
                if s.metric == price_performance.CAPPED_THROUGHPUT)
  assert capped.metadata['client_limited'] is True
  assert capped.metadata['client_saturated'] is True
  assert 'WARNING: the load generator was the limit' in out.getvalue()


class _SecondsGenerator(ClosedLoopGenerator):
  """ClosedLoopGenerator with a per-second series: one second a second."""

  def Probe(self, endpoints, password, workload, load, duration_s):
    m = super().Probe(endpoints, password, workload, load, duration_s)
    return dataclasses.replace(m, per_second=tuple(
        measurement.SecondStats(i, int(m.throughput), m.average_latency_ms)
        for i in range(int(duration_s))))


def test_a_hold_the_runs_deadline_cut_short_says_so(pkb_flags):
  """The run's deadline left the 10 s hold 3 s: its words blamed the load
  generator ('7 s not measured: the load generator ended before'), and its
  first line said it held for 10 s."""
  from perfkitbenchmarker.study import options as options_lib  # pylint: disable=g-import-not-at-top
  from perfkitbenchmarker.study import search_runner  # pylint: disable=g-import-not-at-top
  out = io.StringIO()
  spec = _Spec(pkb_flags, 'cut', out)
  probe_driver = driver.ProbeDriver(
      [CountersVm(0.5)], [_SecondsGenerator(on_cpu=0.5, busy=0.5)],
      [base.Endpoint('127.0.0.1', 7001)], 'pw', base.Workload(), 1,
      duration_limit=lambda: 3.0)
  result = search_driver.FindLatencyCappedMaximum(
      probe_driver, 1.0, linear.LinearStepPolicy(1, 1, 1, 4))
  pkb_flags.memtier_hold_duration = 10
  opts = options_lib.RedisStudyOptions.FromFlags(pkb_flags)
  _, held = search_runner.HoldAnswer(
      spec, probe_driver, opts, result.reported.load,
      result.reported.throughput, len(result.probes), {})
  assert (held.seconds, held.held, held.missing) == (10, 3, 7)
  assert held.Words().endswith(
      "(7 s not measured: the run's deadline (--timeout_minutes) left it "
      '3 s)')
  assert ("for 10 s (the run's deadline (--timeout_minutes) left it 3 s):"
          in out.getvalue())
