"""redis_enterprise on a cloud: the cluster, its databases, the step-up.

Redis Enterprise installed on the server VMs and formed into a cluster
(engines/redis_enterprise.py), databases through the REST API, the load
user's access, a preload sliced over every client VM, then the thread walk
(study_steps.Search) from every client VM at once, optionally over shard
count and proxy threads (enterprise/optimizer.py). Every step is sampled for
steal time as redis_memtier's probes are.

Seam: `Prepare` and `Run` take the frozen options; the benchmark module
calls them for clouds and enterprise/local_run.py's for Local.
"""

from typing import List, Optional

from perfkitbenchmarker import errors
from perfkitbenchmarker import redis_shard
from perfkitbenchmarker.engines import redis_enterprise
from perfkitbenchmarker.enterprise import optimizer
from perfkitbenchmarker.enterprise import study_steps
from perfkitbenchmarker.load_generators import base
from perfkitbenchmarker.load_generators import driver as driver_lib
from perfkitbenchmarker.load_generators import interference
from perfkitbenchmarker.study import deployment


def _Cluster(spec, opts):
  if getattr(spec, 'enterprise_password', None) is None:
    spec.enterprise_password = redis_shard.NewPassword()
  return redis_enterprise.RedisEnterpriseCluster(
      opts, spec.vm_groups['servers'], spec.enterprise_password)


def _Endpoints(pairs) -> List[base.Endpoint]:
  return [base.Endpoint(host, port) for host, port in pairs]


def Prepare(spec, opts) -> None:
  cluster = _Cluster(spec, opts)
  # Kept before anything is created on the cluster, so Cleanup deletes
  # whatever this prepare made even when a later step fails.
  spec.deployment = {'cluster': cluster}
  study = study_steps.StudyOptions(opts, opts.load_records, opts.min_threads,
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
  spec.metadata.update({**spec.GroupMetadata(), **opts.Metadata(),
                        'engine': redis_enterprise.NAME,
                        'engine_version': opts.version,
                        'load_generator': generators[0].NAME,
                        'load_generator_version': generators[0].Version()})
  Preload(spec, opts)


def Preload(spec, opts) -> None:
  d = spec.deployment
  # Every database holds the whole range, written in slices by every client
  # VM at once (as the dry-run estimate assumes).
  deployment.PreloadOnClients(spec.vm_groups['clients'], d['generators'],
                              d['endpoints'], spec.enterprise_password,
                              d['study'].workload)
  spec.reporter.Line(f'Preloaded {opts.load_records:,} keys into each of '
                     f'{len(d["endpoints"])} database(s).')


def Run(spec, opts, vcpus: int) -> None:
  d = spec.deployment
  study = d['study']

  def Evaluate(shards: int, proxies: int) -> Optional[float]:
    cluster = d['cluster']
    if shards != d['shards']:
      cluster.DeleteDatabases()
      d['endpoints'] = _Endpoints(cluster.CreateDatabases(shards))
      d['shards'] = shards
      Preload(spec, opts)
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
            measured=deployment.MeasuringClients(
                spec, d['generators'])))
    return study_steps.Search(
        spec, study, probe_driver,
        {'db_shard_count': shards, 'redis_proxy_threads': proxies})

  if not opts.optimize_throughput:
    if Evaluate(opts.shards_per_db, opts.proxy_threads) is None:
      raise errors.NoLoadUnderCapError(study_steps.NoResult(opts))
    return
  shard_axis, proxy_axis = optimizer.Bounds(vcpus, opts.shard_count,
                                            opts.proxy_threads)
  outcome = optimizer.Optimize(
      Evaluate, optimizer.StartPoint(vcpus, shard_axis, proxy_axis),
      shard_axis, proxy_axis, opts.optimizer_max_points)
  study_steps.Report(spec, opts, outcome)
