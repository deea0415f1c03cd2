"""Redis Enterprise latency-capped throughput (upstream PKB's redis_enterprise).

Reproduces the Google Cloud T2D study's command lines verbatim: a Redis
Enterprise cluster on the server VMs (your installer tarball and licence,
created and joined through the REST API's bootstrap requests, `rladmin`
proxy tuning and worker pinning), databases through the REST API, a memtier
preload, then from every client VM a thread step-up
(+--enterprise_redis_thread_increment threads per step, 24 clients per
thread, pipeline 9) until average latency passes 1 ms; the answer is the
most ops/s under it. --enterprise_redis_optimize_throughput repeats that over
shard count and proxy threads (enterprise/optimizer.py).

On --cloud=Local the same workload runs against the local Redis OSS engine
(engines.Get('redis')), scaled to this machine where the flags ask for more
(one line each, and `local_scaled_*` metadata); its samples say
engine=redis. A retired --os_type (the study's centos7) boots its named
successor; samples record both (enterprise/options.py).

Every step is sampled for interference as redis_memtier's probes are
(foreign CPU on the run's cores on Local, steal time on cloud VMs;
`foreign_cpu_pct` and `interference` in its samples, a summary warning).

Flags become one frozen EnterpriseOptions (enterprise/options.py); this
module only wires the enterprise/ layer, the study's deployment, probe driver
and search runner.
"""

import dataclasses
import os
from typing import Dict, List, Optional, Sequence

from absl import flags

from perfkitbenchmarker import configs
from perfkitbenchmarker import engines
from perfkitbenchmarker import errors
from perfkitbenchmarker import sample
from perfkitbenchmarker.enterprise import optimizer
from perfkitbenchmarker.enterprise import options as options_lib
from perfkitbenchmarker.enterprise import plan
from perfkitbenchmarker.linux_packages import redis_server
from perfkitbenchmarker.load_generators import base
from perfkitbenchmarker.load_generators import driver as driver_lib
from perfkitbenchmarker.load_generators import interference
from perfkitbenchmarker.study import deployment
from perfkitbenchmarker.study import options as study_options
from perfkitbenchmarker.study import results
from perfkitbenchmarker.study import search_runner

BENCHMARK_NAME = 'redis_enterprise'
BENCHMARK_CONFIG = """
redis_enterprise:
  description: >
    Latency-capped throughput of Redis Enterprise (Redis OSS on Local),
    memtier thread step-up from every client VM.
  vm_groups:
    servers:
      vm_spec:
        Local:
          machine_type: local
          num_cpus: 1
        GCP:
          machine_type: t2d-standard-16
          zone: us-central1-a
        AWS:
          machine_type: c6gn.16xlarge
          zone: us-east-1a
      vm_count: 1
    clients:
      vm_spec:
        Local:
          machine_type: local
          num_cpus: 1
        GCP:
          machine_type: n2-standard-32
          zone: us-central1-a
        AWS:
          machine_type: c6gn.16xlarge
          zone: us-east-1a
      vm_count: 2
  flags:
    # Databases listen from here, inside the 10000-19999 of PEER_TCP_PORTS.
    redis_start_port: 12000
"""

# TCP ports Redis Enterprise's nodes (and the clients, for the databases)
# need between the run's VMs; the GCP and AWS providers open them from the
# run's own VMs only, beside the usual Redis range. From Redis's "Network
# port configurations" page, Redis Enterprise Software 6.2 (our default
# 6.2.4) with the additions of the 7.x pages (rhel9 tarballs are 7.x):
# every TCP port whose connection source is Internal, less the Active-Active
# ones (9081; the benchmark makes no Active-Active databases). The
# documented UDP (DNS/mDNS) and ICMP entries are not opened: the cluster is
# addressed by IP and the providers open TCP only.
PEER_TCP_PORTS = (
    (1968, 1968),    # proxy traffic
    # Internode 3333-3344 (6.2); REST API 3346 and metrics 3347-3349 (7.x);
    # one range, so 3345 comes with it.
    (3333, 3349),
    (8000, 8002),    # metrics 8000 (7.x), discovery service 8001, health 8002
    (8004, 8004),    # health monitoring (envoy management server)
    (8006, 8006),    # health monitoring (gossip envoy admin)
    (8070, 8071),    # metrics through the web proxy
    (8080, 8080),    # REST API (HTTP)
    (8443, 8444),    # management UI; web proxy to cnm_http/cm
    (9080, 9080),    # web proxy to cnm_http/cm
    (9082, 9082),    # cluster API internal port (7.x)
    (9091, 9091),    # internal metrics (7.x)
    (9125, 9125),    # internal metrics (7.x)
    (9443, 9443),    # REST API (a joining node calls the cluster's)
    (10000, 19999),  # database endpoints (and Zabbix's 10050 in 7.x)
    (20000, 29999),  # database shards
    (36379, 36380),  # internode communication
)

FLAGS = flags.FLAGS
# Where GetConfig keeps the VM counts asked for before Local scaling.
_REQUESTED_KEY = 'enterprise_requested_vm_counts'


def _Options(spec=None) -> options_lib.EnterpriseOptions:
  build = lambda: options_lib.EnterpriseOptions.FromFlags(FLAGS)
  return build() if spec is None else spec.CachedOptions(build)


def _Cores() -> int:
  return len(os.sched_getaffinity(0))


def GetConfig(user_config):
  """Merges config file and overrides; applies the OS and Local decisions."""
  config = configs.BenchmarkConfig(BENCHMARK_NAME, BENCHMARK_CONFIG,
                                  user_config, FLAGS)
  opts = _Options()
  groups = config.get('vm_groups') or {}
  if opts.os.substituted and not opts.local:
    for name, group in groups.items():  # The successor image, unless pinned.
      if isinstance(group, dict) and not group.get('os_type'):
        group['os_type'] = (options_lib.MEMTIER_CLIENT_OS if
                            name == 'clients' and not opts.memtier_path
                            else opts.os.used)
  if opts.local:
    requested = {g: (c or {}).get('vm_count', 1) for g, c in groups.items()}
    config[_REQUESTED_KEY] = requested
    scaling = _Scaling(opts, config)
    groups['servers']['vm_count'] = scaling.server_vms
    groups['clients']['vm_count'] = scaling.client_vms
  return config


def _Scaling(opts, config) -> options_lib.LocalScaling:
  requested = config.get(_REQUESTED_KEY) or {}
  servers, clients = requested.get('servers', 1), requested.get('clients', 1)
  if not all(isinstance(n, int) and n > 0 for n in (servers, clients)):
    raise errors.ConfigError(
        'vm_groups.servers/clients.vm_count must be positive integers.')
  return options_lib.LocalScaling.For(opts, servers, clients, _Cores())


def CheckPrerequisites(config):
  """Refuses what cannot run, before anything is created."""
  opts = _Options()
  groups = config.get('vm_groups') or {}
  if set(groups) != {'servers', 'clients'}:
    raise errors.ConfigError(
        'redis_enterprise needs exactly the vm_groups servers and clients.')
  if not opts.local and not opts.dry_run:
    opts.CheckInstallerFiles()
  if opts.cloud == 'AWS' and opts.os.used not in ('ubuntu2204', 'ubuntu2404',
                                                  'debian12'):
    raise errors.UsageError(
        f'--os_type={opts.os.requested}: redis_enterprise on AWS boots '
        'Ubuntu or Debian images here; give --os_type=ubuntu2204 (and the '
        'matching Redis Enterprise tarball).')


def ClientLoadGenerator(spec) -> Optional[str]:
  return plan.ClientLoadGenerator(_Options(spec))  # prepare_checks


def RealRunNeeds(spec) -> List[str]:
  return plan.RealRunNeeds(_Options(spec))  # prepare_checks


def DatasetEstimate(spec):
  return plan.DatasetEstimate(_Options(spec))  # prepare_checks


def _Vcpus(spec) -> int:
  if spec.cloud == 'Local':
    return max(1, _Cores() // 2 // spec.GroupCounts()['servers'])
  price = spec.GroupPrice('servers')
  return getattr(price, 'vcpus', None) or _VcpusFromName(
      spec.GroupSpecs()['servers'].machine_type)


def _VcpusFromName(machine_type: str) -> int:
  tail = machine_type.rsplit('-', 1)[-1]
  return int(tail) if tail.isdigit() else 16


def DescribePlan(spec) -> List[str]:
  opts = _Options(spec)
  scaling = _Scaling(opts, spec.config) if spec.cloud == 'Local' else None
  return plan.DescribePlan(spec, opts, scaling, _Vcpus(spec), PEER_TCP_PORTS)


def EstimatedMinutes(spec) -> float:
  opts = _Options(spec)
  if spec.cloud == 'Local':
    s = _Scaling(opts, spec.config)
    steps = len(opts.Steps(s.min_threads, s.max_threads))
    return (plan.EstimatedSeconds(opts, steps, _Vcpus(spec)) + 60) / 60
  return (plan.EstimatedSeconds(opts, len(opts.Steps())) + 60) / 60


def EstimatedPreloadKeys(spec) -> int:
  opts = _Options(spec)
  if spec.cloud == 'Local':
    return _Scaling(opts, spec.config).records
  return opts.load_records * opts.db_count


# The study's pieces, configured from the enterprise options ----------------


def _StudyOptions(opts: options_lib.EnterpriseOptions, records: int,
                  min_threads: int, max_threads: int,
                  shards_per_vm: int = 1) -> study_options.RedisStudyOptions:
  """The redis_memtier study's options for this workload (no flags read)."""
  steps = len(opts.Steps(min_threads, max_threads))
  return study_options.RedisStudyOptions(
      server=study_options.ServerOptions(
          cluster_mode=opts.cluster_api, shards_per_vm=shards_per_vm),
      workload=base.Workload(
          set_ratio=1, get_ratio=1, data_size=opts.data_size_bytes,
          key_minimum=1, key_maximum=records, key_pattern='R:R',
          cluster_mode=opts.cluster_api),
      generator=study_options.GeneratorOptions(
          choice='auto' if opts.local else 'memtier',
          memtier_path=opts.memtier_path, load_key_pattern='S:S',
          run_duration_s=opts.probe_seconds, clients=opts.loadgen_clients,
          pipeline=opts.pipeline),
      search=study_options.SearchOptions(
          cap_ms=opts.cap_ms, policy='linear', min_threads=min_threads,
          max_threads=max_threads, thread_increment=opts.thread_increment,
          max_probes=steps, confirm_repeats=0),
      shards=study_options.ShardSearchOptions())


def _Search(spec, study, probe_driver, extra: Dict) -> Optional[float]:
  result, samples = search_runner.Search(spec, probe_driver, study, extra)
  if result.best is None:
    spec.reporter.Line(f'  no step held under {study.search.cap_ms:g} ms.')
    return None
  results.PrintSummary(spec, samples)
  return result.reported.throughput


# Local: Redis OSS stands in -------------------------------------------------


def _PrepareLocal(spec, opts) -> None:
  scaling = _Scaling(opts, spec.config)
  for note in scaling.notes:
    spec.reporter.Line(f'Scaled to this machine: {note}.')
  spec.reporter.Line('Local: Redis OSS (engine redis) stands in for Redis '
                     'Enterprise; the samples say engine=redis; proxy, '
                     'pinning and installer flags are recorded, not '
                     'applied.')
  study = _StudyOptions(opts, scaling.records, scaling.min_threads,
                        scaling.max_threads, scaling.shards_per_vm)
  engine = engines.Get(options_lib.LOCAL_ENGINE)
  spec.deployment = deployment.Deploy(spec, study, engine)
  results.SetMetadata(spec, spec.deployment, study)
  spec.metadata.update(opts.Metadata())
  spec.metadata.update(scaling.Metadata())
  spec.metadata.update({
      'engine': spec.deployment.engine,
      'engine_version': spec.deployment.engine_version,
      # Proxy, pinning and installer settings are Redis Enterprise's: they
      # are recorded as asked but nothing here applies them.
      'enterprise_settings_applied': False,
      'servers_os_type': opts.os.used,
      'clients_os_type': opts.os.used,
      'memtier_key_maximum': scaling.records,
      'db_count': scaling.databases,
      'replication': scaling.replication,
  })
  spec.metadata['preloaded_keys'] = deployment.Preload(
      spec, spec.deployment, study, engine)


def _RunLocal(spec, opts) -> None:
  scaling = _Scaling(opts, spec.config)
  study = _StudyOptions(opts, scaling.records, scaling.min_threads,
                        scaling.max_threads, scaling.shards_per_vm)
  engine = engines.Get(options_lib.LOCAL_ENGINE)
  if spec.deployment is None:
    spec.deployment = deployment.Restore(spec, study, engine)
    results.SetMetadata(spec, spec.deployment, study)
    spec.metadata.update(opts.Metadata())
    spec.metadata.update(scaling.Metadata())
    spec.metadata.update({'engine': spec.deployment.engine,
                          'engine_version': spec.deployment.engine_version})

  def Evaluate(shards: int, _proxies: int) -> Optional[float]:
    if shards != spec.deployment.shards_per_vm:
      spec.deployment = deployment.Restart(
          spec, spec.deployment, study, engine, shards,
          study.server.start_port)
      deployment.Preload(spec, spec.deployment, study, engine)
    probe_driver = deployment.ProbeDriver(spec, spec.deployment, study)
    # This machine may be too small for the first step (threads are
    # already scaled to its cores): halve the clients per thread until a
    # step holds under the cap, saying so. Bounded: log2(clients) retries.
    clients = opts.loadgen_clients
    while True:
      attempt = dataclasses.replace(study, generator=dataclasses.replace(
          study.generator, clients=clients))
      value = _Search(spec, attempt, probe_driver,
                      {'db_shard_count': shards,
                       'local_scaled_loadgen_clients': clients})
      if value is not None or clients == 1:
        return value
      clients = max(1, clients // 2)
      spec.reporter.Line(
          f'Scaled to this machine: clients per thread '
          f'{opts.loadgen_clients} -> {clients} (the first step was over '
          'the cap here); the walk runs again.')

  if not opts.optimize_throughput:
    if Evaluate(spec.deployment.shards_per_vm, 0) is None:
      raise errors.NoResultError(_NoResult(opts))
    return
  vcpus = _Vcpus(spec)
  shard_axis = optimizer.Axis(1, vcpus)
  proxy_axis = optimizer.Axis(0, 0, fixed=0)  # Redis OSS has no proxies.
  outcome = optimizer.Optimize(
      Evaluate, (spec.deployment.shards_per_vm, 0), shard_axis, proxy_axis,
      opts.optimizer_max_points)
  _Report(spec, outcome)


def _NoResult(opts) -> str:
  return (f'no step held average latency under {opts.cap_ms:g} ms; start '
          'lower (--enterprise_redis_min_threads) or use fewer clients '
          '(--enterprise_redis_loadgen_clients).')


def _Report(spec, outcome: optimizer.OptimizerResult) -> None:
  if outcome.best is None:
    raise errors.NoResultError(_NoResult(spec.options))
  shards, proxies = outcome.best.point
  spec.reporter.Line(
      f'Optimizer: best {outcome.best.throughput:,.0f} ops/s at {shards} '
      f'shard(s) x {proxies or "-"} proxy thread(s) after '
      f'{len(outcome.evaluations)} point(s) ({outcome.stop_reason}).')
  spec.EmitSamples([sample.Sample(
      'optimized_latency_capped_throughput', outcome.best.throughput,
      'ops/sec', {'db_shard_count': shards, 'redis_proxy_threads': proxies,
                  'optimizer_points': len(outcome.evaluations),
                  'optimizer_stop_reason': outcome.stop_reason,
                  'optimizer_path': ';'.join(
                      f'{e.point[0]}x{e.point[1]}:'
                      f'{e.throughput or 0:.0f}'
                      for e in outcome.evaluations)})])


# Cloud: Redis Enterprise on the server VMs ----------------------------------


def _Cluster(spec, opts):
  from perfkitbenchmarker.engines import redis_enterprise  # pylint: disable=g-import-not-at-top
  if getattr(spec, 'enterprise_password', None) is None:
    spec.enterprise_password = redis_server.NewPassword()
  return redis_enterprise.RedisEnterpriseCluster(
      opts, spec.vm_groups['servers'], spec.enterprise_password)


def _Endpoints(pairs) -> List[base.Endpoint]:
  return [base.Endpoint(host, port) for host, port in pairs]


def _PrepareCloud(spec, opts) -> None:
  from perfkitbenchmarker.engines import redis_enterprise  # pylint: disable=g-import-not-at-top
  cluster = _Cluster(spec, opts)
  # Kept before anything is created on the cluster, so Cleanup deletes
  # whatever this prepare made even when a later step fails.
  spec.deployment = {'cluster': cluster}
  study = _StudyOptions(opts, opts.load_records, opts.min_threads,
                        opts.max_threads)
  # Redis Enterprise on the servers and memtier on the clients, all at once.
  generators = tuple(deployment.PrepareVms(
      spec.vm_groups['servers'], spec.vm_groups['clients'], cluster.InstallOn,
      lambda vm: deployment.ChooseGenerator(vm, study.generator)))
  cluster.Form()
  cluster.TuneProxies(opts.proxy_threads)
  cluster.CreateLoadAccess()
  endpoints = _Endpoints(cluster.CreateDatabases(opts.shards_per_db))
  spec.deployment.update({'endpoints': endpoints, 'generators': generators,
                          'study': study, 'shards': opts.shards_per_db,
                          'proxies': opts.proxy_threads})
  spec.metadata.update(spec.GroupMetadata())
  spec.metadata.update(opts.Metadata())
  spec.metadata.update({'engine': redis_enterprise.NAME,
                        'engine_version': opts.version,
                        'load_generator': generators[0].NAME,
                        'load_generator_version': generators[0].Version()})
  _PreloadCloud(spec, opts)


def _PreloadCloud(spec, opts) -> None:
  d = spec.deployment
  # Every database holds the whole range, written in slices by every client
  # VM at once (as the dry-run estimate assumes).
  deployment.PreloadOnClients(spec.vm_groups['clients'], d['generators'],
                              d['endpoints'], spec.enterprise_password,
                              d['study'].workload)
  spec.reporter.Line(f'Preloaded {opts.load_records:,} keys into each of '
                     f'{len(d["endpoints"])} database(s).')


def _RunCloud(spec, opts) -> None:
  d = spec.deployment
  study = d['study']

  def Evaluate(shards: int, proxies: int) -> Optional[float]:
    cluster = d['cluster']
    if shards != d['shards']:
      cluster.DeleteDatabases()
      d['endpoints'] = _Endpoints(cluster.CreateDatabases(shards))
      d['shards'] = shards
      _PreloadCloud(spec, opts)
    if proxies != d['proxies']:  # Prepare tuned them to the first point.
      cluster.TuneProxies(proxies)
      d['proxies'] = proxies
    # Each step sampled like the study's probes: steal time on every VM.
    probe_driver = driver_lib.ProbeDriver(
        spec.vm_groups['clients'], d['generators'], d['endpoints'],
        spec.enterprise_password, study.workload, opts.probe_seconds,
        duration_limit=lambda: spec.deadline.Remaining() - 10,
        interference=interference.ForRun(
            spec.cloud, spec.vm_groups['servers'] + spec.vm_groups['clients'],
            tuple, measured=deployment.MeasuringClients(
                spec, d['generators'])),
        server_machines=deployment.ServerMachines(spec))
    return _Search(spec, study, probe_driver,
                   {'db_shard_count': shards, 'redis_proxy_threads': proxies})

  if not opts.optimize_throughput:
    if Evaluate(opts.shards_per_db, opts.proxy_threads) is None:
      raise errors.NoResultError(_NoResult(opts))
    return
  vcpus = _Vcpus(spec)
  shard_axis, proxy_axis = optimizer.Bounds(vcpus, opts.shard_count,
                                            opts.proxy_threads)
  outcome = optimizer.Optimize(
      Evaluate, optimizer.StartPoint(vcpus, shard_axis, proxy_axis),
      shard_axis, proxy_axis, opts.optimizer_max_points)
  _Report(spec, outcome)


# PKB's contract -------------------------------------------------------------


def Prepare(spec):
  opts = _Options(spec)
  if spec.cloud == 'Local':
    _PrepareLocal(spec, opts)
  else:
    _PrepareCloud(spec, opts)


def Run(spec) -> Sequence[sample.Sample]:
  opts = _Options(spec)
  if spec.cloud == 'Local':
    _RunLocal(spec, opts)
  else:
    if not (spec.deployment or {}).get('study'):
      raise errors.UsageError(
          'redis_enterprise on a cloud runs prepare and run in one '
          'invocation (the cluster password is not kept); use '
          '--run_stage=provision,prepare,run.')
    _RunCloud(spec, opts)
  return spec.published


def Cleanup(spec):
  """Stops local shards (by PID, from the record); deletes cloud databases
  and the load generators' user."""
  if spec.cloud == 'Local':
    deployment.StopAll(spec.record)
  elif isinstance(spec.deployment, dict):
    cluster = spec.deployment['cluster']
    if cluster.formed:  # Before that there is no API to ask.
      try:
        cluster.DeleteDatabases()
      finally:
        cluster.DeleteLoadAccess()
  spec.deployment = None


def UsedOsType(requested: str, cloud: str) -> Optional[str]:
  """The image a run boots for --os_type=requested (input_checks and the
  providers check this one); None on Local, where it is only recorded."""
  return options_lib.UsedOsType(requested, cloud)
