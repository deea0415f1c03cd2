"""The redis_ycsb benchmark's steps: deploy, load, and search with YCSB.

Servers are deployed as redis_memtier's are (`deployment.StartShards`).
Client VMs get YCSB and PKB's binding, installed while the servers install
theirs, and a 0600 connection file with the run's restricted load user: the
password is never in argv. `Load` runs YCSB's load phase (records split
across client VMs) and checks the key count. `SearchWorkload` is the linear
search over threads with `YcsbProbe` as `measure(load)`: YCSB's transaction
phase on every client VM at once, sampled for interference like
redis_memtier's probes. A probe with any failed operation raises, so errors
never pass as results.
"""

import dataclasses
import logging
import os
from typing import Dict, List, Optional, Sequence, Tuple

from perfkitbenchmarker import background_tasks
from perfkitbenchmarker import errors
from perfkitbenchmarker import measurement
from perfkitbenchmarker import redis_shard
from perfkitbenchmarker import sample
from perfkitbenchmarker import vm_util
from perfkitbenchmarker.engines import base as engine_base
from perfkitbenchmarker.linux_packages import ycsb as ycsb_package
from perfkitbenchmarker.load_generators import concurrent as side_by_side
from perfkitbenchmarker.load_generators import driver as driver_lib
from perfkitbenchmarker.load_generators import interference as interference_lib
from perfkitbenchmarker.load_generators import ycsb_results
from perfkitbenchmarker.search import driver as search_driver
from perfkitbenchmarker.search import linear
from perfkitbenchmarker.study import deployment as deployment_lib
from perfkitbenchmarker.study import results
from perfkitbenchmarker.study import ycsb_options

CONNECTION_FILE = 'ycsb-connection.properties'
# Seconds a YCSB phase may take beyond what its operations need at a slow
# 1,000 ops/s per thread (JVM start, connections).
PHASE_SLACK_S = 60


@dataclasses.dataclass(frozen=True, kw_only=True)
class YcsbDeployment(deployment_lib.Servers):
  """The shards and the YCSB clients of one run; YCSB connects where the
  load goes (`endpoints`)."""
  clients: Tuple[object, ...]
  installs: Tuple[ycsb_package.Installation, ...]


def _InstallYcsb(vm, opts: ycsb_options.YcsbStudyOptions
                 ) -> ycsb_package.Installation:
  vm.Install('ycsb', build_dir=opts.build_dir)
  return vm.ycsb


def _WriteConnection(dep: YcsbDeployment,
                     opts: ycsb_options.YcsbStudyOptions) -> None:
  """Each client VM's 0600 connection file: the shards and the load user."""
  text = ycsb_package.ConnectionProperties(
      [(e.host, e.port) for e in dep.endpoints], redis_shard.LOAD_USER,
      redis_shard.LoadPassword(dep.password), dep.cluster_mode,
      opts.timeout_ms)
  for vm in dep.clients:
    vm.WriteFile(f'{vm.scratch_dir}/{CONNECTION_FILE}', text, mode=0o600)


def Deploy(spec, opts: ycsb_options.YcsbStudyOptions,
           engine: engine_base.ServerEngine) -> YcsbDeployment:
  """Installs the engine (and tuning) on the servers and YCSB on the
  clients, on every VM at once (`deployment.PrepareVms`); then starts the
  shards and writes the clients' credentials."""
  servers = spec.vm_groups['servers']
  installs = deployment_lib.PrepareVms(
      servers, spec.vm_groups['clients'],
      lambda vm: deployment_lib.PrepareServer(engine, vm,
                                              opts.server.system_tuning),
      lambda vm: _InstallYcsb(vm, opts))
  password = redis_shard.NewPassword()
  processes = deployment_lib.StartShards(
      engine, servers, opts.server.shards_per_vm, password, opts.server,
      spec.record, opts.server.start_port)
  deployed = _Connected(spec, opts, engine, processes, password, installs)
  deployment_lib.KeepServer(spec, deployed)  # For a later stage's Restore.
  return deployed


def Restore(spec, opts: ycsb_options.YcsbStudyOptions,
            engine: engine_base.ServerEngine) -> YcsbDeployment:
  """The deployment of an earlier invocation (--run_stage=run): YCSB found
  (or installed) on every client VM at once, credentials written again.
  Server and replica flags other than prepare's are refused, as
  redis_memtier's are (deployment.CheckRestored): the samples would name a
  server that was not measured, or the load would go to other shards than
  the primaries. Another --redis_total_num_processes is not: as
  redis_memtier's, the run measures the recorded shards and its samples
  name their count."""
  processes, password = deployment_lib.RecordedShards(spec, engine)
  installs = deployment_lib.PrepareVms(
      (), spec.vm_groups['clients'], None, lambda vm: _InstallYcsb(vm, opts))
  restored = _Connected(spec, opts, engine, processes, password, installs)
  deployment_lib.CheckRestored(spec, opts.server, restored)
  return restored


def _Connected(spec, opts, engine, processes, password,
               installs) -> YcsbDeployment:
  """The deployment, its clients' connection files written."""
  deployed = YcsbDeployment.Of(
      spec, opts.server, engine, processes, password,
      clients=tuple(spec.vm_groups['clients']), installs=tuple(installs))
  _WriteConnection(deployed, opts)
  return deployed


def SetMetadata(spec, dep: YcsbDeployment,
                opts: ycsb_options.YcsbStudyOptions) -> None:
  results.SetServerMetadata(spec, dep, dep.shards_per_vm)
  spec.metadata.update({
      'load_generator': ycsb_results.LOAD_GENERATOR,
      'load_generator_version': ycsb_package.YCSB_VERSION,
      'ycsb_binding': ycsb_package.DB_CLASS,
      'ycsb_command_group': opts.command_group,
      'ycsb_record_count': opts.record_count,
      'ycsb_operation_count': opts.operation_count,
      'ycsb_field_count': opts.field_count,
      'ycsb_field_length': opts.field_length,
      'ycsb_jvm_options': ' '.join(opts.jvm_options) or 'default',
  })


def _WorkloadOnVm(vm, name: str) -> str:
  """The workload file, written on the VM once (not a round trip a probe)."""
  local = ycsb_package.WorkloadFile(name)
  path = f'{vm.scratch_dir}/ycsb-{os.path.basename(local)}.properties'
  written = vm.__dict__.setdefault('_ycsb_workloads', {})
  if written.get(path) != local:
    vm.WriteFile(path, ycsb_package.WorkloadText(name), mode=0o644)
    written[path] = local
  return path


def RunPhase(vm, install: ycsb_package.Installation, phase: str,
             workload: str, properties: Dict[str, object], threads: int,
             expected_ops: int, timeout_s: float,
             jvm_options: Sequence[str] = ()) -> ycsb_results.YcsbResult:
  """One YCSB phase on one client VM, run as a probe (concurrent.RunProbe:
  its CPU measured while it runs); raises on any failed operation."""
  argv = ycsb_package.YcsbCommand(
      install, phase, _WorkloadOnVm(vm, workload),
      f'{vm.scratch_dir}/{CONNECTION_FILE}', properties, threads,
      jvm_options)
  logging.debug('[%s] %s', vm.name, vm_util.Mask(vm_util.QuoteAll(argv)))
  try:
    run = side_by_side.RunProbe(vm, f'ycsb-{phase}', [argv], timeout_s)
  except errors.ProcessError as e:
    raise errors.ProcessError(f'YCSB {phase} on {vm.name}: {e}') from None
  out = run.outputs[0]
  try:
    result = ycsb_results.YcsbResult.Parse(out.stdout, out.stderr)
  except ValueError as e:
    raise errors.ProcessError(f'YCSB {phase} on {vm.name}: {e}') from None
  problems = result.Errors(expected_ops)
  if problems:
    raise errors.ProcessError(
        f'YCSB {phase} ({workload}) on {vm.name} had errors: '
        + '; '.join(problems[:4]))
  return dataclasses.replace(result, cpu=run.cpu)


def _PhaseTimeout(ops: int, threads: int) -> float:
  return PHASE_SLACK_S + ops / (1000.0 * max(1, threads))


def _OnAllClients(dep: YcsbDeployment, fn):
  """fn(i, vm, install) on every client VM at once; results in order (a
  signal here does not wait for the others: run_signals kills their JVMs)."""
  pairs = list(enumerate(zip(dep.clients, dep.installs)))
  return background_tasks.RunEach(
      lambda ix: fn(ix[0], *ix[1]), pairs, name=lambda ix: ix[1][0].name)


def Load(spec, dep: YcsbDeployment, opts: ycsb_options.YcsbStudyOptions,
         engine: engine_base.ServerEngine) -> int:
  """YCSB's load phase (records split over client VMs); checks the keys."""
  workload = opts.workloads[0]
  n = len(dep.clients)
  spec.reporter.Line(
      f'Loading {opts.record_count:,} records as {opts.command_group} '
      f'({opts.field_count} x {opts.field_length} B) with YCSB...')

  def LoadOne(i, vm, install):
    start = i * opts.record_count // n
    count = (i + 1) * opts.record_count // n - start
    props = {**opts.size_properties, 'operationcount': opts.record_count,
             'insertstart': start, 'insertcount': count,
             **dict(opts.properties)}
    return vm, RunPhase(vm, install, 'load', workload, props,
                        opts.load_threads, count,
                        _PhaseTimeout(count, opts.load_threads),
                        opts.jvm_options)

  for vm, result in _OnAllClients(dep, LoadOne):
    spec.EmitSamples(result.Samples({'ycsb_phase': 'load',
                                     'ycsb_workload': workload,
                                     'client_vm': vm.name,
                                     'threads': opts.load_threads}))
  found = engine.KeyCount(spec.vm_groups['servers'][0],
                          tuple(map(redis_shard.Shard.Of, dep.processes)),
                          dep.password)
  if found != opts.record_count:
    raise errors.ProcessError(
        f'YCSB loaded {found:,} keys but {opts.record_count:,} were expected.')
  spec.reporter.Line(f'Load verified: {found:,} keys.')
  return found


def Interference(spec, dep: YcsbDeployment
                 ) -> interference_lib.ProbeInterference:
  """The run's samplers: foreign CPU on its VMs' cores (steal time on
  VMs)."""
  return interference_lib.ForRun(
      spec.vm_groups['servers'] + spec.vm_groups['clients'],
      measured=spec.vm_groups['clients'],
      server_pids=lambda vm: deployment_lib.ServerPids(dep, vm))


class YcsbProbe:
  """measure(load) for the search: YCSB `run` with load.threads threads on
  every client VM at once; publishes YCSB's samples for the probe."""

  def __init__(self, spec, dep: YcsbDeployment,
               opts: ycsb_options.YcsbStudyOptions, workload: str,
               interference: Optional[
                   interference_lib.ProbeInterference] = None):
    self.spec, self.dep, self.opts, self.workload = spec, dep, opts, workload
    self.interference = interference
    self.index = 0

  def __call__(self, load: measurement.Load) -> measurement.Measurement:
    opts = self.opts
    props = {**opts.size_properties, 'operationcount': opts.operation_count,
             **dict(opts.properties)}

    def RunOne(i, vm, install):
      return vm, RunPhase(vm, install, 'run', self.workload, props,
                          load.threads, opts.operation_count,
                          _PhaseTimeout(opts.operation_count, load.threads),
                          opts.jvm_options)

    runs, figures, server_sides = interference_lib.BracketSides(
        self.interference, lambda: _OnAllClients(self.dep, RunOne),
        lambda runs: [r.cpu for _, r in runs])
    parts = []
    for vm, result in runs:
      meta = {'ycsb_phase': 'run', 'ycsb_workload': self.workload,
              'client_vm': vm.name, 'threads': load.threads,
              'probe_index': self.index, **figures}
      m = result.ToMeasurement(load, {
          'load_generator_version': ycsb_package.YCSB_VERSION, **figures})
      m = driver_lib.WithClientCpu(dataclasses.replace(
          m, client_cpu=result.cpu, client_cpu_busy_fraction=(
              result.cpu.busy_fraction if result.cpu else None)))
      cpu_keys = {k: v for k, v in m.metadata.items()
                  if k.startswith('client_')}
      self.spec.EmitSamples(result.Samples({**meta, **cpu_keys}))
      parts.append(m)
    self.index += 1
    # Named its limit like every probe (attribution.py), over the run.
    return interference_lib.Attributed(measurement.Combine(parts, load),
                                       server_sides)


def SearchWorkload(spec, dep: YcsbDeployment,
                   opts: ycsb_options.YcsbStudyOptions,
                   workload: str) -> List[sample.Sample]:
  """The latency-capped search over threads for one workload."""
  extra = {'ycsb_workload': workload, 'ycsb_phase': 'run'}
  cap = opts.cap_ms

  def OnProbe(record: search_driver.ProbeRecord) -> None:
    results.PublishProbe(spec, record.index, record.measurement, cap,
                         record.role, extra)

  spec.reporter.Line(
      f'YCSB {workload} ({opts.command_group}): most ops/s under {cap:g} ms '
      f'average latency, {opts.min_threads}-{opts.max_threads} threads, '
      f'{opts.operation_count:,} operations per probe:')
  policy = linear.LinearStepPolicy(
      min_threads=opts.min_threads, max_threads=opts.max_threads,
      thread_increment=opts.thread_increment, clients=1)
  result = search_driver.FindLatencyCappedMaximum(
      YcsbProbe(spec, dep, opts, workload, Interference(spec, dep)), cap,
      policy, max_probes=opts.max_probes, on_probe=OnProbe)
  if result.best is None:
    lowest = min(p.measurement.average_latency_ms for p in result.probes)
    raise errors.NoLoadUnderCapError(
        f'YCSB {workload}: every probe was over the {cap:g} ms cap (lowest '
        f'average {lowest:.3f} ms); raise --ycsb_latency_cap or start lower.')
  return results.ResultSamples(spec, result, cap, extra)

