"""memtier_benchmark as a load generator.

One memtier process per shard endpoint (or one with --cluster-mode against a
cluster), all side by side; throughput comes from operation counts and the
real duration, never memtier's printed Ops/sec (see memtier_results.py).
"""

from typing import Sequence

from perfkitbenchmarker import measurement
from perfkitbenchmarker.linux_packages import memtier as memtier_package
from perfkitbenchmarker.load_generators import base
from perfkitbenchmarker.load_generators import commands
from perfkitbenchmarker.load_generators import concurrent
from perfkitbenchmarker.load_generators import memtier_results

PRELOAD_THREADS, PRELOAD_CLIENTS = 1, 4


class MemtierGenerator(base.LoadGenerator):
  """Drives memtier_benchmark on one client VM."""

  NAME = memtier_results.LOAD_GENERATOR

  def __init__(self, vm, path: str, load_key_pattern: str = 'P:P',
               warmup_s: int = 0):
    self.vm = vm
    self.path = path
    self.load_key_pattern = load_key_pattern
    self.warmup_s = warmup_s
    self._version = None
    self._probes = 0

  def Version(self) -> str:
    if self._version is None:
      self._version = memtier_package.GetVersion(self.vm)
    return self._version

  def Preload(self, endpoints: Sequence[base.Endpoint], password: str,
              workload: base.Workload) -> int:
    clients = 1 if self.load_key_pattern == 'S:S' else PRELOAD_CLIENTS
    argvs = [commands.MemtierPreloadCommand(
        self.path, e, password, workload, threads=PRELOAD_THREADS,
        clients=clients, key_pattern=self.load_key_pattern,
        json_out=f'{self.vm.scratch_dir}/preload-{e.port}.json')
             for e in endpoints]
    timeout = 120 + workload.key_count / 5000
    concurrent.RunSideBySide(self.vm, 'memtier-preload', argvs, timeout)
    # Every standalone shard is its own database holding the whole range.
    return workload.key_count * (1 if workload.cluster_mode else
                                 len(endpoints))

  def Probe(self, endpoints: Sequence[base.Endpoint], password: str,
            workload: base.Workload, load: measurement.Load,
            duration_s: float) -> measurement.Measurement:
    test_time = max(1, int(round(duration_s)))
    self._probes += 1
    json_paths = [f'{self.vm.scratch_dir}/probe-{self._probes}-{e.port}.json'
                  for e in endpoints]
    argvs = [commands.MemtierProbeCommand(self.path, e, password, workload,
                                          load, test_time, path)
             for e, path in zip(endpoints, json_paths)]
    outputs = concurrent.RunSideBySide(self.vm, f'memtier-{self._probes}',
                                       argvs, test_time * 3 + 30)
    results = [memtier_results.MemtierResult.FromOutputs(
        self.vm.ReadFile(path), out.stdout, test_time, self.warmup_s)
               for path, out in zip(json_paths, outputs)]
    combined = memtier_results.CombineMemtierResults(results)
    # Every process offered `load`; the whole probe offered it per endpoint.
    total = measurement.Load(load.threads * len(endpoints), load.clients,
                             load.pipeline)
    return combined.ToMeasurement(load, {
        'load_generator_version': self.Version(),
        'client_processes': len(endpoints),
        'connections_total': total.connections,
    })
