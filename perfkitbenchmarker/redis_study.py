"""The steps of the Redis price-performance study, for its benchmark module.

redis_memtier_benchmark.py stays a thin orchestrator; the steps it wires live
here: validating workload flags, choosing the load generator, starting shards
(and the cluster), preloading and verifying, building the probe driver and
the result samples, and printing the summary and the dry-run plan.
"""

import re
from typing import Any, Dict, List

from perfkitbenchmarker import errors
from perfkitbenchmarker import latency_search
from perfkitbenchmarker import price_performance
from perfkitbenchmarker import resource
from perfkitbenchmarker import sample as sample_lib
from perfkitbenchmarker.linux_packages import memtier as memtier_package
from perfkitbenchmarker.linux_packages import redis_server
from perfkitbenchmarker.load_generators import base
from perfkitbenchmarker.load_generators import driver
from perfkitbenchmarker.load_generators import flags as _  # pylint: disable=unused-import
from perfkitbenchmarker.load_generators import memtier
from perfkitbenchmarker.load_generators import redis_benchmark

# Seconds a probe costs beyond its own duration (process start, CPU reads).
PROBE_OVERHEAD_S = 1.0


def CheckWorkloadFlags(f) -> None:
  if not re.fullmatch(r'\d+:\d+', f.memtier_ratio) or f.memtier_ratio == '0:0':
    raise errors.UsageError(
        f'--memtier_ratio="{f.memtier_ratio}" must be SET:GET like 1:1 or '
        '1:10, not both zero.')
  if f.memtier_key_minimum > f.memtier_key_maximum:
    raise errors.UsageError(
        f'--memtier_key_minimum={f.memtier_key_minimum} is above '
        f'--memtier_key_maximum={f.memtier_key_maximum}.')
  if not re.fullmatch(r'[RSGP]:[RSGP]', f.memtier_key_pattern):
    raise errors.UsageError(
        f'--memtier_key_pattern="{f.memtier_key_pattern}" must be two of '
        'R, S, G, P joined by ":", e.g. R:R.')


def Workload(f) -> base.Workload:
  set_ratio, get_ratio = (int(x) for x in f.memtier_ratio.split(':'))
  return base.Workload(
      set_ratio=set_ratio, get_ratio=get_ratio, data_size=f.memtier_data_size,
      key_minimum=f.memtier_key_minimum, key_maximum=f.memtier_key_maximum,
      key_pattern=f.memtier_key_pattern,
      cluster_mode=f.redis_server_cluster_mode)


def ChooseGenerator(vm, f) -> base.LoadGenerator:
  """memtier when asked for or installed; otherwise redis-benchmark."""
  want = f.load_generator
  if want == 'memtier' or (want == 'auto' and memtier_package.IsAvailable(vm)):
    vm.Install('memtier')
    return memtier.MemtierGenerator(
        vm, memtier_package.Path(), load_key_pattern=f.memtier_load_key_pattern,
        warmup_s=f.memtier_warmup_seconds)
  vm.Install('redis_benchmark')
  return redis_benchmark.RedisBenchmarkGenerator(vm)


def PrepareServers(spec, f) -> None:
  servers = spec.vm_groups['servers']
  clients = spec.vm_groups['clients']
  for vm in servers:
    vm.Install('redis_server')
    if hasattr(vm, 'ApplySystemTuning'):
      vm.ApplySystemTuning()
  generators = [ChooseGenerator(vm, f) for vm in clients]
  spec.state['generators'] = generators
  password = redis_server.NewPassword()
  spec.state['password'] = password
  shards_per_vm = f.redis_total_num_processes
  processes = spec.state.setdefault('redis_processes', [])
  for vm in servers:
    options = redis_server.ShardOptions(
        cluster_mode=f.redis_server_cluster_mode,
        maxmemory_mb=redis_server.MaxMemoryPerShardMb(
            vm.memory_mib or 1024, shards_per_vm, f.redis_memory_fraction),
        extra_config=tuple(f.redis_server_options),
        # Only the address the run's clients use: on an existing machine a
        # wildcard bind would expose Redis on every interface.
        bind=vm.internal_ip or '127.0.0.1')
    processes.extend(redis_server.StartShards(
        vm, shards_per_vm, password, options, spec.record,
        start_port=f.redis_start_port))
  shards = [redis_server.Shard(p.vm.name, p.vm.internal_ip, p.port, p.pid,
                               p.config_path) for p in processes]
  spec.state['shards'] = shards
  if f.redis_server_cluster_mode:
    redis_server.CreateCluster(servers[0], shards, password,
                               replicas=f.redis_cluster_replicas)
  _SetMetadata(spec, f)


def _SetMetadata(spec, f) -> None:
  shards = spec.state['shards']
  generators = spec.state['generators']
  servers = spec.vm_groups['servers']
  primaries = (len(shards) // (1 + f.redis_cluster_replicas)
               if f.redis_server_cluster_mode else len(shards))
  spec.metadata.update(spec.GroupMetadata())
  for group, vms in spec.vm_groups.items():
    if vms and hasattr(vms[0], 'SystemMetadata'):
      spec.metadata.update({f'{group}_{k}': v
                            for k, v in vms[0].SystemMetadata().items()})
  spec.metadata.update({
      'redis_server_version': redis_server.GetVersion(servers[0]),
      'redis_total_num_processes': len(shards) // len(servers),
      'redis_shards_total': len(shards),
      'redis_primaries': primaries,
      'redis_server_cluster_mode': f.redis_server_cluster_mode,
      'load_generator': generators[0].NAME,
      'load_generator_version': generators[0].Version(),
      'memtier_ratio': f.memtier_ratio,
      'memtier_data_size': f.memtier_data_size,
      'memtier_key_maximum': f.memtier_key_maximum,
      'memtier_key_pattern': f.memtier_key_pattern,
  })
  if spec.cloud == 'Local':
    price = spec.GroupPrice('servers')
    spec.metadata['local_priced_as'] = f'{price.cloud}:{price.machine_type}'


def RestoreState(spec, f) -> None:
  """Rebuilds shards, password and generators for a resumed run.

  `--run_stage=run --run_uri=X` starts with none of what `prepare` made in an
  earlier invocation; the shards are in the run record and the password is in
  their config files on the server VMs (it is never written to the record).
  """
  if 'shards' in spec.state:
    return
  processes = [resource.FromRecord(e, spec.record)
               for e in spec.record.Resources()
               if e['kind'] == redis_server.RedisProcess.KIND and
               e['status'] == 'created']
  if not processes:
    raise errors.UsageError(
        f'Run {spec.run_uri} has no running shards; run --run_stage=prepare '
        'first.')
  config = processes[0].vm.ReadFile(processes[0].config_path)
  match = re.search(r'^requirepass (\S+)$', config, re.M)
  if not match:
    raise errors.ProcessError('The shards\' config has no password.')
  password = match.group(1)
  redis_server.RegisterPassword(password)
  for p in processes:
    p.password = password
  spec.state['password'] = password
  spec.state['redis_processes'] = processes
  spec.state['shards'] = [
      redis_server.Shard(p.vm.name, p.vm.internal_ip, p.port, p.pid,
                         p.config_path) for p in processes]
  spec.state['generators'] = [ChooseGenerator(vm, f)
                              for vm in spec.vm_groups['clients']]
  _SetMetadata(spec, f)


def Endpoints(spec, f) -> List[base.Endpoint]:
  shards = spec.state['shards']
  if f.redis_server_cluster_mode:
    return [base.Endpoint(shards[0].host, shards[0].port)]
  return [base.Endpoint(s.host, s.port) for s in shards]


def Preload(spec, f) -> None:
  """Writes exactly the configured keys and checks DBSIZE over all shards."""
  workload = Workload(f)
  password = spec.state['password']
  shards = spec.state['shards']
  generator = spec.state['generators'][0]
  spec.reporter.Line(f'Preloading {workload.key_count:,} keys of '
                     f'{workload.data_size} bytes with {generator.NAME}...')
  expected = generator.Preload(Endpoints(spec, f), password, workload)
  server = spec.vm_groups['servers'][0]
  found = redis_server.DbSize(server, shards, password)
  if found != expected:
    raise errors.ProcessError(
        f'Preload left {found:,} keys but {expected:,} were expected; check '
        'the shards\' maxmemory and logs.')
  spec.metadata['preloaded_keys'] = found
  spec.reporter.Line(f'Preload verified: DBSIZE {found:,} over '
                     f'{len(shards)} shard(s).')


def ProbeDriver(spec, f) -> driver.ProbeDriver:
  RestoreState(spec, f)
  return driver.ProbeDriver(
      spec.vm_groups['clients'], spec.state['generators'], Endpoints(spec, f),
      spec.state['password'], Workload(f), f.memtier_run_duration,
      duration_limit=lambda: spec.deadline.Remaining() - 10)


def _GroupCosts(spec):
  counts = spec.GroupCounts()
  server = price_performance.GroupCost('servers', counts['servers'],
                                       spec.GroupPrice('servers'))
  others = [price_performance.GroupCost(g, counts[g], spec.GroupPrice(g))
            for g in counts if g != 'servers']
  return server, others


def ResultSamples(spec, result: latency_search.SearchResult, cap: float,
                  f) -> List[sample_lib.Sample]:
  """Capped throughput, hourly costs and price-performance samples."""
  extra: Dict[str, Any] = {
      'search_policy': result.policy,
      'search_probes': len(result.probes),
      'search_probe_seconds': round(sum(
          p.measurement.duration_s for p in result.probes), 2),
      'search_stop_reason': result.stop_reason,
      'client_limited': result.client_limited,
  }
  value = result.best.throughput
  if result.confirmed_throughput_mean is not None:
    value = result.confirmed_throughput_mean
    extra['confirmation_repeats'] = len(result.confirmation_probes)
    extra['throughput_ci95_ops'] = result.confirmed_throughput_ci95
    extra['confirmed_average_latency_ms'] = result.confirmed_latency_mean_ms
  samples = price_performance.CappedSamples(result.best, cap, value, extra)
  server, others = _GroupCosts(spec)
  samples += price_performance.CostSamples(server, others)
  samples.append(price_performance.PricePerformanceSample(
      value, server, others, {'latency_cap_ms': cap, **extra}))
  if result.client_limited:
    spec.reporter.Line('WARNING: the client was CPU-saturated in some probes; '
                       'the capped throughput may be the client\'s limit.')
  return samples


def PrintSummary(spec, samples: List[sample_lib.Sample]) -> None:
  by_metric = {s.metric: s for s in samples}
  capped = by_metric[price_performance.CAPPED_THROUGHPUT]
  perf = by_metric[price_performance.PRICE_PERFORMANCE]
  machine = spec.vm_groups['servers'][0].machine_type
  if spec.cloud == 'Local':
    machine = f'local (priced as {spec.metadata.get("local_priced_as")})'
  rows = [{
      'machine_type': machine,
      'throughput': capped.value,
      'throughput_ci95': capped.metadata.get('throughput_ci95_ops'),
      'average_latency_ms': capped.metadata.get(
          'confirmed_average_latency_ms') or capped.metadata.get(
              'average_latency_ms'),
      'p99_latency_ms': capped.metadata.get('p99_latency_ms'),
      'usd_per_hour': perf.metadata['servers_usd_per_hour_total'],
      'price_performance': perf.value,
      'price_basis': (f'{perf.metadata["price_basis"]} '
                      f'(x{spec.GroupCounts()["servers"]})'),
  }]
  spec.reporter.Summary(rows)


def AdaptivePolicy(f):
  """--memtier_adaptive_*_connections at --memtier_min_threads threads.

  The thread flags of the linear walk span too few loads (1..8 x 32), so the
  adaptive search takes its connection range from its own flags; it starts
  at the walk's first load unless told otherwise.
  """
  from perfkitbenchmarker import adaptive_search  # pylint: disable=g-import-not-at-top
  return adaptive_search.AdaptivePolicy.FromConnectionRange(
      threads=f.memtier_min_threads,
      min_connections=f.memtier_adaptive_min_connections,
      max_connections=f.memtier_adaptive_max_connections,
      start_connections=(f.memtier_adaptive_start_connections or
                         f.memtier_min_threads * f.memtier_clients),
      pipeline=f.memtier_pipeline, cap_margin=f.memtier_cap_margin,
      confirm_repeats=f.memtier_confirm_repeats)


def DescribePlan(spec, f) -> List[str]:
  """Software and workload lines of the dry-run plan (the search adds its own)."""
  counts = spec.GroupCounts()
  shards = f.redis_total_num_processes * counts['servers']
  mode = 'one Redis Cluster' if f.redis_server_cluster_mode else 'standalone'
  return [
      'Software:',
      f'  servers: redis-server ({f.redis_server_version}), '
      f'{f.redis_total_num_processes} shard(s) per VM, {shards} in all, '
      f'{mode}; per-run password; no persistence',
      f'  clients: load generator {f.load_generator} (memtier_benchmark when '
      'installed, else redis-benchmark)',
      'Workload:',
      f'  preload {f.memtier_key_maximum - f.memtier_key_minimum + 1:,} keys '
      f'x {f.memtier_data_size} B; probes SET:GET {f.memtier_ratio}, '
      f'keys {f.memtier_key_pattern}',
  ]
