"""Runs one probe across every client VM at once and combines the results.

Each client VM runs its load generator against every shard endpoint (or, in
cluster mode, against the cluster through one seed endpoint); the VMs'
measurements are combined by `measurement.Combine`. The client's CPU is
measured over the load window (client_cpu.py; around the probe when a
generator gives no window), and every probe is named its limit by the one
rule (attribution.py, through interference.Sampled, which also reads the
server VMs' side and the foreign CPU on the run's cores): a client limit is
flagged (`client_saturated`, `client_saturated_by`), not mistaken for the
server's.
"""

import concurrent.futures
import copy
import dataclasses
from typing import Callable, List, Optional, Sequence, Tuple, TypeVar

from perfkitbenchmarker import attribution
from perfkitbenchmarker import measurement
from perfkitbenchmarker.load_generators import base
from perfkitbenchmarker.load_generators import client_cpu
from perfkitbenchmarker.load_generators import interference as interference_lib
from perfkitbenchmarker.load_generators import redis_benchmark_results as rb

# Per-VM figures a probe over several client VMs reports at their worst.
# And how long the VMs' runs lasted, and whether memtier's duration bug
# showed on any (the first VM's alone were kept).
_WORST_OF = ('client_busiest_thread_pct', 'client_busiest_thread_runnable_pct',
             'client_busiest_core_pct', interference_lib.CLIENT_STEAL_KEY,
             'real_duration_s', 'reported_duration_s', 'duration_bug_detected',
             measurement.STOPPED_AT_KEY)
# Per-VM counts and rates of the load generators, which a probe over several
# client VMs reports summed (measurement.Combine keeps the first VM's
# metadata: two VMs of 8 connections each said connections_total 8, and
# set_ops and get_ops were half the probe's ops).
_SUM_OF = ('connections_total', 'set_ops', 'get_ops', 'get_misses',
           'reported_ops_per_sec', 'series_throughput', 'moved_per_sec',
           'ask_per_sec', 'processes', 'outstanding_requests', 'tool_clients',
           rb.STOPPED_PROCESSES_KEY)
_T = TypeVar('_T')


def WithClientCpu(m: measurement.Measurement) -> measurement.Measurement:
  """m with its client's side (attribution.SideCpu) and load window, its
  figures in the metadata, and flagged `client_saturated` when the client
  rules of attribution.Decide hold (its cgroup throttled it, or its threads
  were ON a CPU >= 90 % of what they may use; never by time spent waiting
  behind other processes, nor by the VM's or a core's busy share, which
  others' processes fill too)."""
  cpu = m.client_cpu
  metadata = dict(m.metadata)
  sides: tuple = m.client_sides
  window = m.load_window
  if cpu is not None:
    metadata.update(cpu.Metadata())
    if cpu.steal_pct is not None:
      metadata[interference_lib.CLIENT_STEAL_KEY] = round(cpu.steal_pct, 1)
    if cpu.side is not None and not sides:
      sides = (cpu.side,)
    if window is None and cpu.window_start is not None:
      window = (cpu.window_start, cpu.window_end)
  limit = attribution.Decide(sides, ()) if sides else None
  saturated = bool(limit and limit.client_limited)
  if saturated:
    metadata['client_saturated_by'] = limit.name
  return dataclasses.replace(m, client_saturated=saturated,
                             metadata=metadata, client_sides=sides,
                             load_window=window)


def BusyAround(vm, generator, call: Callable[[], _T]
               ) -> Tuple[_T, Optional[float]]:
  """call()'s result and the client VM's busy share of its cores around it,
  read from /proc/stat only for a generator that does not measure its own
  load window (MEASURES_CLIENT_CPU; over SSH each read is a round trip)."""
  if getattr(generator, 'MEASURES_CLIENT_CPU', False):
    return call(), None
  before = client_cpu.ProcStat(vm)
  result = call()
  return result, client_cpu.Measure(before, client_cpu.ProcStat(vm),
                                    vm.cpu_set).busy_fraction


class ProbeDriver:
  """measure(load) for the search: all client VMs, all endpoints."""

  def __init__(self, client_vms: Sequence, generators: Sequence[base.LoadGenerator],
               endpoints: Sequence[base.Endpoint], password: str,
               workload: base.Workload, duration_s: float,
               duration_limit: Callable[[], float] = lambda: float('inf'),
               interference: Optional[
                   interference_lib.ProbeInterference] = None):
    self.client_vms = list(client_vms)
    self.generators = list(generators)
    self.endpoints = list(endpoints)
    self.password = password
    self.workload = workload
    self.duration_s = duration_s
    self._duration_limit = duration_limit
    self.interference = interference

  def WithDuration(self, duration_s: float) -> 'ProbeDriver':
    """This driver with probes of `duration_s` (same VMs, tools, limits)."""
    other = copy.copy(self)
    other.duration_s = duration_s
    return other

  def DurationForSeconds(self, seconds: int) -> float:
    """A probe length giving every tool at least `seconds` whole seconds
    (base.LoadGenerator.DurationForSeconds)."""
    return max([float(seconds)] + [
        g.DurationForSeconds(seconds) for g in self.generators])

  def _ProbeOne(self, vm, generator, load, duration_s):
    m, busy = BusyAround(vm, generator, lambda: generator.Probe(
        self.endpoints, self.password, self.workload, load, duration_s))
    # The generator's figure is over the load window: around the whole
    # call, start-up and the tool's idle tail dilute a saturated core.
    if m.client_cpu_busy_fraction is None:
      m = dataclasses.replace(m, client_cpu_busy_fraction=busy)
    return WithClientCpu(m)

  def Duration(self, duration_s: Optional[float] = None) -> float:
    """How long a probe asked for `duration_s` (default: the search's probe
    length) runs: never past the run's deadline, at least 1 s."""
    return max(1.0, min(duration_s or self.duration_s,
                        self._duration_limit()))

  def __call__(self, load: measurement.Load,
               duration_s: Optional[float] = None) -> measurement.Measurement:
    """One probe of `duration_s` (default: the search's probe length)."""
    duration = self.Duration(duration_s)
    windows = [getattr(g, 'LoadWindowS', lambda _: None)(duration)
               for g in self.generators]
    window = (max(windows) if windows and None not in windows else None)
    return interference_lib.Sampled(
        self.interference, lambda l: self._Measure(l, duration),
        window)(load)

  def _Measure(self, load: measurement.Load, duration: float
               ) -> measurement.Measurement:
    if len(self.client_vms) == 1:
      return self._ProbeOne(self.client_vms[0], self.generators[0], load,
                            duration)
    with concurrent.futures.ThreadPoolExecutor(len(self.client_vms)) as pool:
      futures = [pool.submit(self._ProbeOne, vm, gen, load, duration)
                 for vm, gen in zip(self.client_vms, self.generators)]
      parts: List[measurement.Measurement] = [f.result() for f in futures]
    return CombineClientVms(parts, load)


def CombineClientVms(parts: Sequence[measurement.Measurement],
                     load: measurement.Load) -> measurement.Measurement:
  """One probe from its client VMs' measurements (side by side):
  measurement.Combine, with the VMs' CPU figures at their worst, their
  counts and rates summed (left out when a VM has none) and every client
  limit named."""
  combined = measurement.Combine(parts, load)
  metadata = measurement.FactsCombined(combined.metadata, parts, _SUM_OF)
  for key in _WORST_OF:
    values = [p.metadata[key] for p in parts
              if p.metadata.get(key) is not None]
    if values:
      metadata[key] = max(values)
  reasons = sorted({str(p.metadata['client_saturated_by']) for p in parts
                    if p.metadata.get('client_saturated_by')})
  if reasons:
    metadata['client_saturated_by'] = ','.join(reasons)
  if all(p.metadata.get('load_generator') == rb.LOAD_GENERATOR
         for p in parts):  # The tool's own figures, every VM's.
    metadata.update({k: v for k, v in rb.FiguresTogether(parts).items()
                     if v is not None})
  return dataclasses.replace(combined, metadata=metadata)
