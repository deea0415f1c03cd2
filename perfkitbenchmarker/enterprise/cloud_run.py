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

import dataclasses
from typing import Optional, Tuple

from perfkitbenchmarker import errors
from perfkitbenchmarker import redis_shard
from perfkitbenchmarker.engines import redis_enterprise
from perfkitbenchmarker.enterprise import optimizer
from perfkitbenchmarker.enterprise import study_steps
from perfkitbenchmarker.load_generators import base
from perfkitbenchmarker.study import deployment
from perfkitbenchmarker.study import options as study_options


@dataclasses.dataclass(frozen=True)
class EnterpriseDeployment:
  """The cluster and what prepare made on it (spec.deployment on a cloud).
  Prepare keeps the cluster alone before it creates anything there, so
  Cleanup deletes whatever was made even when a later step fails; the
  databases' endpoints, the shard count and the proxy threads change as the
  optimizer moves. The password is never in repr, logs or the record."""
  cluster: redis_enterprise.RedisEnterpriseCluster
  password: str = dataclasses.field(repr=False)
  study: Optional[study_options.RedisStudyOptions] = None
  generators: Tuple[base.LoadGenerator, ...] = ()
  endpoints: Tuple[base.Endpoint, ...] = ()
  shards: int = 0
  proxies: int = 0


def _Endpoints(pairs) -> Tuple[base.Endpoint, ...]:
  return tuple(base.Endpoint(host, port) for host, port in pairs)


def Prepare(spec, opts) -> None:
  password = redis_shard.NewPassword()
  cluster = redis_enterprise.RedisEnterpriseCluster(
      opts, spec.vm_groups['servers'], password)
  spec.deployment = EnterpriseDeployment(cluster, password)
  study = study_steps.StudyOptions(opts, opts.load_records, opts.min_threads,
                                  opts.max_threads)
  # Redis Enterprise on the servers and memtier on the clients, all at once.
  generators = tuple(deployment.PrepareVms(
      spec.vm_groups['servers'], spec.vm_groups['clients'], cluster.InstallOn,
      lambda vm: deployment.ChooseGenerator(vm, study.generator)))
  cluster.Form()
  cluster.TuneProxies(opts.proxy_threads)
  cluster.CreateLoadAccess()
  spec.deployment = dataclasses.replace(
      spec.deployment, study=study, generators=generators,
      endpoints=_Endpoints(cluster.CreateDatabases(opts.shards_per_db)),
      shards=opts.shards_per_db, proxies=opts.proxy_threads)
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
  deployment.PreloadOnClients(spec.vm_groups['clients'], d.generators,
                              d.endpoints, d.password, d.study.workload)
  spec.reporter.Line(f'Preloaded {opts.load_records:,} keys into each of '
                     f'{len(d.endpoints)} database(s).')


def Run(spec, opts, vcpus: int) -> None:
  study = spec.deployment.study

  def Evaluate(shards: int, proxies: int) -> Optional[float]:
    cluster = spec.deployment.cluster
    if shards != spec.deployment.shards:
      cluster.DeleteDatabases()
      spec.deployment = dataclasses.replace(
          spec.deployment, shards=shards,
          endpoints=_Endpoints(cluster.CreateDatabases(shards)))
      Preload(spec, opts)
    if proxies != spec.deployment.proxies:  # Prepare tuned the first point.
      cluster.TuneProxies(proxies)
      spec.deployment = dataclasses.replace(spec.deployment, proxies=proxies)
    d = spec.deployment
    # Each step sampled like the study's probes: steal time on every VM.
    probe_driver = deployment.Driver(spec, d.generators, d.endpoints,
                                     d.password, study)
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
