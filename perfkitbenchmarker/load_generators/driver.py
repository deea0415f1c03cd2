"""Runs one probe across every client VM at once and combines the results.

Each client VM runs its load generator against every shard endpoint (or, in
cluster mode, against the cluster through one seed endpoint). Throughputs add
up; average latency is weighted by operation counts; percentiles are the worst
client's (a conservative merge, labelled as such). The client's CPU is sampled
around the probe so a saturated client is flagged, not mistaken for the
server's limit.
"""

import concurrent.futures
import dataclasses
from typing import Callable, List, Optional, Sequence

from perfkitbenchmarker import measurement
from perfkitbenchmarker.load_generators import base

SATURATED_BUSY_FRACTION = 0.9


def Combine(parts: Sequence[measurement.Measurement],
            load: measurement.Load) -> measurement.Measurement:
  """One Measurement for processes that ran side by side."""
  if len(parts) == 1:
    return parts[0]
  throughput = sum(p.throughput for p in parts)
  weights = [p.ops or p.throughput for p in parts]
  total_weight = sum(weights) or 1.0
  average = sum(w * p.average_latency_ms for w, p in zip(weights, parts)
                ) / total_weight

  def Worst(attr: str) -> Optional[float]:
    values = [getattr(p, attr) for p in parts if getattr(p, attr) is not None]
    return max(values) if values else None

  metadata = dict(parts[0].metadata)
  metadata['percentile_merge'] = 'max over client processes'
  metadata['client_processes'] = len(parts)
  return measurement.Measurement(
      load=load, throughput=throughput, average_latency_ms=average,
      p50_latency_ms=Worst('p50_latency_ms'),
      p99_latency_ms=Worst('p99_latency_ms'),
      p999_latency_ms=Worst('p999_latency_ms'),
      duration_s=max(p.duration_s for p in parts),
      ops=sum(p.ops for p in parts),
      client_saturated=any(p.client_saturated for p in parts),
      client_cpu_busy_fraction=Worst('client_cpu_busy_fraction'),
      metadata=metadata)


class ProbeDriver:
  """measure(load) for the search: all client VMs, all endpoints."""

  def __init__(self, client_vms: Sequence, generators: Sequence[base.LoadGenerator],
               endpoints: Sequence[base.Endpoint], password: str,
               workload: base.Workload, duration_s: float,
               duration_limit: Callable[[], float] = lambda: float('inf')):
    self.client_vms = list(client_vms)
    self.generators = list(generators)
    self.endpoints = list(endpoints)
    self.password = password
    self.workload = workload
    self.duration_s = duration_s
    self._duration_limit = duration_limit

  def _ProbeOne(self, vm, generator, load, duration_s):
    before = vm.CpuTimes()
    m = generator.Probe(self.endpoints, self.password, self.workload, load,
                        duration_s)
    after = vm.CpuTimes()
    total = after[1] - before[1]
    busy = (after[0] - before[0]) / total if total > 0 else None
    saturated = busy is not None and busy > SATURATED_BUSY_FRACTION
    return dataclasses.replace(
        m, client_cpu_busy_fraction=busy,
        client_saturated=m.client_saturated or saturated)

  def __call__(self, load: measurement.Load) -> measurement.Measurement:
    # Never let one probe run past the run's deadline.
    duration = max(1.0, min(self.duration_s, self._duration_limit()))
    if len(self.client_vms) == 1:
      return self._ProbeOne(self.client_vms[0], self.generators[0], load,
                            duration)
    with concurrent.futures.ThreadPoolExecutor(len(self.client_vms)) as pool:
      futures = [pool.submit(self._ProbeOne, vm, gen, load, duration)
                 for vm, gen in zip(self.client_vms, self.generators)]
      parts: List[measurement.Measurement] = [f.result() for f in futures]
    return Combine(parts, load)
