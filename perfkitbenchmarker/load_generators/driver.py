"""Runs one probe across every client VM at once and combines the results.

Each client VM runs its load generator against every shard endpoint (or, in
cluster mode, against the cluster through one seed endpoint). The client VMs'
measurements are combined by `measurement.Combine` (throughputs add up,
latency weighted by operation counts, histograms merged). The client's CPU is
measured over the load window (concurrent.RunSideBySide; around the probe when
a generator gives no window) so a saturated client is flagged, not mistaken
for the server's limit. With `interference` (load_generators/interference.py)
each probe is also bracketed by samplers of the CPU that processes foreign to
the run used on its cores (steal time on VMs): `foreign_cpu_pct` and
`interference` in the probe's metadata.
"""

import concurrent.futures
import dataclasses
from typing import Callable, List, Optional, Sequence

from perfkitbenchmarker import measurement
from perfkitbenchmarker.load_generators import base
from perfkitbenchmarker.load_generators import interference as interference_lib

SATURATED_BUSY_FRACTION = 0.9


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

  def _ProbeOne(self, vm, generator, load, duration_s):
    before = vm.CpuTimes()
    m = generator.Probe(self.endpoints, self.password, self.workload, load,
                        duration_s)
    # Prefer the generator's figure over the load window: around the whole
    # call, start-up and the tool's idle tail dilute a saturated core.
    busy = m.client_cpu_busy_fraction
    if busy is None:
      after = vm.CpuTimes()
      total = after[1] - before[1]
      busy = (after[0] - before[0]) / total if total > 0 else None
    saturated = busy is not None and busy > SATURATED_BUSY_FRACTION
    return dataclasses.replace(
        m, client_cpu_busy_fraction=busy,
        client_saturated=m.client_saturated or saturated)

  def __call__(self, load: measurement.Load) -> measurement.Measurement:
    return interference_lib.Sampled(self.interference, self._Measure)(load)

  def _Measure(self, load: measurement.Load) -> measurement.Measurement:
    # Never let one probe run past the run's deadline.
    duration = max(1.0, min(self.duration_s, self._duration_limit()))
    if len(self.client_vms) == 1:
      return self._ProbeOne(self.client_vms[0], self.generators[0], load,
                            duration)
    with concurrent.futures.ThreadPoolExecutor(len(self.client_vms)) as pool:
      futures = [pool.submit(self._ProbeOne, vm, gen, load, duration)
                 for vm, gen in zip(self.client_vms, self.generators)]
      parts: List[measurement.Measurement] = [f.result() for f in futures]
    return measurement.Combine(parts, load)
