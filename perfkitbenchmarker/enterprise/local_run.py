"""redis_enterprise on --cloud=Local: Redis OSS stands in, under its own name.

There is no Redis Enterprise here, so the benchmark's workload runs against
the local Redis OSS engine (options_lib.LOCAL_ENGINE), scaled to this
machine (options_lib.LocalScaling; one line per change). Its results are not
Redis Enterprise's and must never be read as such (issue 19 point 4): they
are published under the test name TEST_NAME instead of redis_enterprise (so
a BigQuery table or any `test` filter keeps them apart), and every sample
carries engine=redis and `stands_in_for=redis_enterprise` (so compare's
cells, results_history/cells.py, name them apart from real Enterprise rows
and from redis_memtier's Redis rows).

Seam: `Prepare` and `Run` take the frozen options and the scaling; the
benchmark module calls them for Local and enterprise/cloud_run.py's for
clouds.
"""

import dataclasses
from typing import Optional

from perfkitbenchmarker import engines
from perfkitbenchmarker import errors
from perfkitbenchmarker.enterprise import optimizer
from perfkitbenchmarker.enterprise import options as options_lib
from perfkitbenchmarker.enterprise import study_steps
from perfkitbenchmarker.study import deployment
from perfkitbenchmarker.study import results

TEST_NAME = 'redis_enterprise_local_oss'
STANDS_IN_FOR = 'redis_enterprise'
MIN_CLIENTS = 2  # Per thread, when halving clients to fit this machine.


def _SetMetadata(spec, opts, scaling, study) -> None:
  results.SetMetadata(spec, spec.deployment, study)
  # engine and engine_version are the stand-in's (results.EngineMetadata).
  spec.metadata.update({**opts.Metadata(), **scaling.Metadata(),
                        'stands_in_for': STANDS_IN_FOR})


def Prepare(spec, opts, scaling) -> None:
  for note in scaling.notes:
    spec.reporter.Line(f'Scaled to this machine: {note}.')
  spec.reporter.Line(
      'Local: Redis OSS (engine redis) stands in for Redis Enterprise; its '
      f'results are published as {TEST_NAME}, never as redis_enterprise; '
      'proxy, pinning and installer flags are recorded, not applied.')
  study = study_steps.StudyOptions(opts, scaling.records, scaling.min_threads,
                                  scaling.max_threads, scaling.shards_per_vm)
  engine = engines.Get(options_lib.LOCAL_ENGINE)
  spec.deployment = deployment.Deploy(spec, study, engine)
  _SetMetadata(spec, opts, scaling, study)
  spec.metadata.update({
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


def Run(spec, opts, scaling, vcpus: int) -> None:
  study = study_steps.StudyOptions(opts, scaling.records, scaling.min_threads,
                                  scaling.max_threads, scaling.shards_per_vm)
  engine = engines.Get(options_lib.LOCAL_ENGINE)
  if spec.deployment is None:
    spec.deployment = deployment.Restore(spec, study, engine)
    _SetMetadata(spec, opts, scaling, study)

  def Evaluate(shards: int, _proxies: int) -> Optional[float]:
    if shards != spec.deployment.shards_per_vm:
      spec.deployment = deployment.Restart(
          spec, spec.deployment, study, engine, shards,
          study.server.start_port)
      deployment.Preload(spec, spec.deployment, study, engine)
    probe_driver = deployment.ProbeDriver(spec, spec.deployment, study)
    # This machine may be too small for the first step (threads are
    # already scaled to its cores): halve the clients per thread until a
    # step holds under the cap, saying so. Bounded: log2(clients) retries,
    # down to MIN_CLIENTS (redis-benchmark's SET:GET mix needs one
    # connection for each).
    clients = opts.loadgen_clients
    while True:
      attempt = dataclasses.replace(study, generator=dataclasses.replace(
          study.generator, clients=clients))
      value = study_steps.Search(spec, attempt, probe_driver,
                                 {'db_shard_count': shards,
                                  'local_scaled_loadgen_clients': clients})
      if value is not None or clients <= MIN_CLIENTS:
        return value
      clients = max(MIN_CLIENTS, clients // 2)
      spec.reporter.Line(
          f'Scaled to this machine: clients per thread '
          f'{opts.loadgen_clients} -> {clients} (the first step was over '
          'the cap here); the walk runs again.')

  if not opts.optimize_throughput:
    if Evaluate(spec.deployment.shards_per_vm, 0) is None:
      raise errors.NoLoadUnderCapError(study_steps.NoResult(opts))
    return
  shard_axis = optimizer.Axis(1, vcpus)
  proxy_axis = optimizer.Axis(0, 0, fixed=0)  # Redis OSS has no proxies.
  outcome = optimizer.Optimize(
      Evaluate, (spec.deployment.shards_per_vm, 0), shard_axis, proxy_axis,
      opts.optimizer_max_points)
  study_steps.Report(spec, opts, outcome)
