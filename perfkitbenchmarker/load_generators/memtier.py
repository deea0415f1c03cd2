"""memtier_benchmark as a load generator.

One memtier process per shard endpoint (or one with --cluster-mode against a
cluster), all side by side; throughput comes from operation counts and the
real duration, never memtier's printed Ops/sec (see memtier_results.py).

Warm-up: a probe of d seconds runs d + warmup_s; the parser leaves the first
warmup_s seconds out of the figures and keeps them, tagged, in `per_second`.

Staircase (memtier >= 2.3, `--clients-start/--clients-step/--step-duration`):
one process per endpoint walks all the client steps of a search in one run;
`Staircase` returns one Measurement per step (memtier_staircase.StaircaseSteps).

Credentials: memtier takes a password only as `-a`, so its argv carries
argv_secret.TOKEN and linux_packages/argv_secret.py hands memtier the real
one out of `ps`'s sight. It logs in as the run's restricted load user
(redis_shard.py), never with the run's password; memtier copies `-a`
into its JSON (`authenticate`), which is masked as soon as it is read.
"""

import dataclasses
from typing import Any, List, Optional, Sequence

from perfkitbenchmarker import errors
from perfkitbenchmarker import evidence
from perfkitbenchmarker import measurement
from perfkitbenchmarker import redis_shard
from perfkitbenchmarker import vm_util
from perfkitbenchmarker.linux_packages import argv_secret
from perfkitbenchmarker.linux_packages import memtier as memtier_package
from perfkitbenchmarker.linux_packages import package_commands
from perfkitbenchmarker.load_generators import base
from perfkitbenchmarker.load_generators import commands
from perfkitbenchmarker.load_generators import concurrent
from perfkitbenchmarker.load_generators import memtier_results
from perfkitbenchmarker.load_generators import memtier_staircase

PRELOAD_THREADS, PRELOAD_CLIENTS = 1, 4
# The first release with --clients-start/--clients-step/--step-duration.
STAIRCASE_VERSION = (2, 3, 0)


def SupportsStaircase(version: str) -> Optional[bool]:
  """Whether a memtier version string has the staircase options.

  None when the string is no version (source builds between releases print
  the placeholder 255.255.255, which compares as new enough).
  """
  parsed = package_commands.ParseVersion(version)
  return None if parsed is None else parsed >= STAIRCASE_VERSION


def PreloadClients(key_count: int) -> int:
  """P:P preload clients for `key_count` keys: PRELOAD_CLIENTS, fewer when
  the keys are too few for every client to get a share of its own (a small
  client VM's slice: commands.PreloadFits)."""
  return next((c for c in range(PRELOAD_CLIENTS, 1, -1)
               if commands.PreloadFits(key_count, PRELOAD_THREADS * c)), 1)


def Manifest(load: measurement.Load, json_paths: Sequence[str],
             test_time_s: Optional[float], warmup_s: int,
             staircase: Optional[commands.StaircaseSpec] = None) -> dict:
  """What recomputing a probe from its evidence needs (evidence.MANIFEST):
  memtier_results.Measure's arguments, the outputs named by part key."""
  return {'load_generator': memtier_results.LOAD_GENERATOR,
          'load': [load.threads, load.clients, load.pipeline],
          'json': [evidence.FileKey(p) for p in json_paths],
          'stdout': [f'out.{i}' for i in range(len(json_paths))],
          'test_time_s': test_time_s, 'warmup_s': warmup_s,
          'staircase': staircase is not None}


def RefuseUnserved(vm, outputs: Sequence[concurrent.ProcessOutput]) -> None:
  """errors.ProcessError when the server did not serve requests of these
  memtier processes: error replies, which memtier counts as operations, so
  its figures would count what the server refused as served; or a lost
  connection (a shard gone), whose requests and restarted thread's figures
  memtier leaves out."""
  concurrent.RefuseErrorReplies(
      vm, outputs, memtier_results.LOAD_GENERATOR,
      memtier_results.ErrorReplies, 'memtier counts them as operations',
      lambda first: ("check the shards' maxmemory (--redis_memory_fraction, "
                     "--redis_server_options) and logs"
                     if first.startswith('-OOM') else "check the shards' logs"))
  lost = next(filter(None, (memtier_results.ConnectionLost(o.stderr)
                            for o in outputs)), None)
  if lost:
    raise errors.ProcessError(
        f'{memtier_results.LOAD_GENERATOR} on {vm.name} lost its connection '
        f'to the server ({vm_util.Mask(lost[:200])}): memtier leaves out '
        'what that connection had in flight and the figures of a thread it '
        'restarts, so they are not what the server served; check that every '
        "shard still runs (the shards' logs).")


class MemtierGenerator(base.LoadGenerator):
  """Drives memtier_benchmark on one client VM."""

  NAME = memtier_results.LOAD_GENERATOR
  MEASURES_CLIENT_CPU = True  # Probe sets client_cpu (the probe driver reads it).
  RATE_LIMITS = True  # --rate-limiting: requests/s per connection.

  def __init__(self, vm, path: str, load_key_pattern: str = 'P:P',
               warmup_s: int = 0, processes_per_endpoint: int = 1,
               requests: Optional[int] = None):
    """`processes_per_endpoint` memtier processes each offer the whole load;
    with `requests`, each client sends that many (-n) instead of a timed run
    (the probe's duration is then only its time limit)."""
    self.vm = vm
    self.path = path
    self.load_key_pattern = load_key_pattern
    self.warmup_s = warmup_s
    self.processes_per_endpoint = processes_per_endpoint
    self.requests = requests
    self._version = None
    self._probes = 0
    self.last_cpu = None  # The last probe's client_cpu.ClientCpu.
    self.last_raw_output = None  # Where the last probe's evidence is kept.

  def Version(self) -> str:
    if self._version is None:
      self._version = memtier_package.GetVersion(self.vm, self.path)
    return self._version

  def Preload(self, endpoints: Sequence[base.Endpoint], password: str,
              workload: base.Workload,
              key_slice: Optional[base.KeySlice] = None,
              setup: Any = None) -> int:
    del setup  # memtier needs nothing done once for all client VMs.
    keys = workload.Slice(key_slice)
    # memtier's keys are the range's own numbers, so a slice is a range.
    workload = dataclasses.replace(workload, key_minimum=keys.first,
                                   key_maximum=keys.last)
    clients = (1 if self.load_key_pattern == 'S:S' else
               PreloadClients(keys.count))
    json_paths = [f'{self.vm.scratch_dir}/preload-{e.port}.json'
                  for e in endpoints]
    argvs = [commands.MemtierPreloadCommand(
        self.path, e, argv_secret.TOKEN, workload,
        threads=PRELOAD_THREADS, clients=clients,
        key_pattern=self.load_key_pattern, json_out=path,
        user=redis_shard.LOAD_USER)
             for e, path in zip(endpoints, json_paths)]
    timeout = 120 + workload.key_count / 5000
    # Its JSON comes back too, to be kept with the probes' (evidence.py).
    outputs = concurrent.RunSideBySide(
        self.vm, 'memtier-preload', argvs, timeout,
        secret=redis_shard.LoadPassword(password), files=json_paths,
        manifest=dict(Manifest(measurement.Load(PRELOAD_THREADS, clients),
                               json_paths, None, 0), preload=True))
    RefuseUnserved(self.vm, outputs)
    # Every standalone shard is its own database: each gets the slice.
    return workload.key_count * (1 if workload.cluster_mode else
                                 len(endpoints))

  def _Run(self, endpoints, password, workload, load, test_time, staircase):
    """Runs one memtier per endpoint (and process); returns the JSON texts
    (credentials masked), the stdouts and the client's busy fraction over the
    test time or None."""
    self._probes += 1
    requests = None if staircase else self.requests
    targets = [(e, i) for e in endpoints
               for i in range(self.processes_per_endpoint)]
    json_paths = [f'{self.vm.scratch_dir}/probe-{self._probes}-{e.port}'
                  f'{f"-{i}" if i else ""}.json' for e, i in targets]
    argvs = [commands.MemtierProbeCommand(
        self.path, e, argv_secret.TOKEN, workload, load, test_time, path,
        staircase=staircase, user=redis_shard.LOAD_USER, requests=requests)
             for (e, _), path in zip(targets, json_paths)]
    # A request-count run lasts what its requests take; the probe's length
    # only bounds it, so a timeout names the flag that sets the bound.
    hint = ('' if requests is None else
            f' (the bound of --memtier_requests={requests} a client: 3 x '
            '--memtier_run_duration + 30 s; give a longer '
            '--memtier_run_duration or fewer requests)')
    run = concurrent.RunProbe(
        self.vm, f'memtier-{self._probes}', argvs, test_time * 3 + 30,
        cpu_window_s=None if requests else test_time,
        secret=redis_shard.LoadPassword(password), files=json_paths,
        sample_every_s=concurrent.SampleEvery(test_time),
        manifest=Manifest(load, json_paths, None if requests else test_time,
                          0 if requests else self.warmup_s, staircase),
        timeout_hint=hint)
    self.last_raw_output = run.raw_output
    RefuseUnserved(self.vm, run.outputs)
    # The window the CPU was measured over (the test time, not the
    # processes' life with memtier's idle tail), kept for the samples.
    self.last_cpu = run.cpu
    return ([vm_util.Mask(run.files[path]) for path in json_paths],
            [out.stdout for out in run.outputs],
            run.cpu.busy_fraction if run.cpu else None)

  def _Facts(self, endpoints, load) -> dict:
    # Every process offered `load`; the whole probe offered it per process.
    processes = len(endpoints) * self.processes_per_endpoint
    total = measurement.Load(load.threads * processes, load.clients,
                             load.pipeline)
    facts = {'load_generator_version': self.Version(),
             'client_processes': processes,
             'connections_total': total.connections,
             'warmup_supported': True}
    if self.requests is not None:
      facts['requests_per_client'] = self.requests
    return facts

  def _TestTime(self, duration_s: float) -> int:
    # The warm-up comes on top, so the measured part lasts duration_s.
    return max(1, int(round(duration_s))) + self.warmup_s

  def LoadWindowS(self, duration_s: float) -> Optional[float]:
    # memtier idles about a second after its test time (its last second).
    return None if self.requests else float(self._TestTime(duration_s))

  def Probe(self, endpoints: Sequence[base.Endpoint], password: str,
            workload: base.Workload, load: measurement.Load,
            duration_s: float) -> measurement.Measurement:
    test_time = self._TestTime(duration_s)
    texts, stdouts, busy = self._Run(endpoints, password, workload, load,
                                     test_time, None)
    facts = self._Facts(endpoints, load)
    if self.last_cpu is not None and self.last_cpu.window_s is not None:
      facts['client_cpu_window_s'] = round(self.last_cpu.window_s, 3)
    if self.last_raw_output:
      facts[evidence.METADATA_KEY] = self.last_raw_output
    # A request-count run lasts what it lasts: its JSON's start/finish span.
    m = memtier_results.Measure(
        texts, stdouts, load, None if self.requests else test_time,
        0 if self.requests else self.warmup_s, facts)
    return dataclasses.replace(m, client_cpu_busy_fraction=busy,
                               client_cpu=self.last_cpu)

  def Staircase(self, endpoints: Sequence[base.Endpoint], password: str,
                workload: base.Workload, load: measurement.Load,
                staircase: commands.StaircaseSpec,
                warmup_s_per_step: int = 0) -> List[measurement.Measurement]:
    """Walks clients from staircase.clients_start up to load.clients.

    Returns one Measurement per step, in order, each for the whole probe
    (all endpoints' processes summed at that step).
    """
    test_time = staircase.TestTime(load.clients)
    texts, _, _ = self._Run(endpoints, password, workload, load, test_time,
                            staircase)
    per_process = [memtier_staircase.StaircaseSteps(
        text, staircase.clients_start, staircase.clients_step,
        staircase.step_duration_s, load.threads, load.pipeline,
        warmup_s_per_step) for text in texts]
    # Match steps by clients: a step with no operations is left out.
    by_clients = [{m.load.clients: m for m in steps} for steps in per_process]
    steps = []
    for clients in sorted(set.intersection(*(set(d) for d in by_clients))):
      parts = [d[clients] for d in by_clients]
      step_load = parts[0].load
      facts = dict(self._Facts(endpoints, step_load),
                   staircase_clients_start=staircase.clients_start,
                   staircase_clients_step=staircase.clients_step,
                   staircase_step_duration_s=staircase.step_duration_s)
      if self.last_raw_output:
        facts[evidence.METADATA_KEY] = self.last_raw_output
      # Processes side by side: rates add, latency is weighted by
      # operations, percentiles are the worst process's (labelled).
      step = measurement.Combine(parts, step_load)
      steps.append(dataclasses.replace(step,
                                       metadata={**step.metadata, **facts}))
    return steps

