"""Shard-count optimisation for OSS Redis: one capped search per shard count.

--redis_optimize_shards hill-climbs the number of redis-server processes per
server VM with `shard_search.OptimizeShardCount`, starting at half the server
VM's vCPUs (at least 1). Each point of the climb is a full latency-capped
search. Between points only the shards change: the VMs, the client's load
generators and the run's password stay; the previous point's shards are
stopped (so the record shows them deleted), the new count is started (and
joined into a cluster in cluster mode), preloaded and its DBSIZE verified.
An adaptive search may start at the best point's load so far (the count
the climb is moving from), scaled so that the connections over all shards
stay the same.

Every point's samples carry `redis_total_num_processes`,
`shard_search_point` and `shard_search_role: point`; at the end the best
point's latency_capped_throughput and price_performance samples are emitted
again with `shard_search_role: optimum`, next to an `optimal_shard_count`
sample.

Extension seam: `OptimizeShards` takes the search as a callable
`search(driver, extra_metadata, start_connections) -> (SearchResult,
samples)`, so the benchmark module decides how each point is searched.
"""

import dataclasses
from typing import Any, Callable, Dict, List, Optional, Tuple

from absl import flags

from perfkitbenchmarker import errors
from perfkitbenchmarker import latency_search
from perfkitbenchmarker import price_performance
from perfkitbenchmarker import sample as sample_lib
from perfkitbenchmarker import shard_search
from perfkitbenchmarker import redis_study as setup
from perfkitbenchmarker.linux_packages import redis_server

flags.DEFINE_boolean('redis_optimize_shards', False,
                     'Search the number of shards per server VM for the '
                     'best capped throughput (a capped search per count, '
                     'hill-climbing from vCPUs / 2).')
flags.DEFINE_integer('redis_min_shards', 1,
                     'Fewest shards per server VM --redis_optimize_shards '
                     'tries.', lower_bound=1)
flags.DEFINE_integer('redis_max_shards', None,
                     'Most shards per server VM --redis_optimize_shards '
                     'tries (default: the server VM\'s vCPUs, at least 2).',
                     lower_bound=1)
flags.DEFINE_float('redis_shard_min_improvement', 0.02,
                   'A shard count must beat the current one by this fraction '
                   'to count as better (set it to the run-to-run noise).',
                   lower_bound=0)
flags.DEFINE_integer('redis_shard_max_points', 8,
                     'Most shard counts --redis_optimize_shards evaluates.',
                     lower_bound=1)
flags.DEFINE_boolean('redis_shard_reuse_load', True,
                     'Start each point\'s adaptive search at the previous '
                     'point\'s best load (same connections over all shards).')

OPTIMAL_SHARD_COUNT = 'optimal_shard_count'
ROLE_POINT, ROLE_OPTIMUM = 'point', 'optimum'
# Samples of the best point that are repeated as the optimum.
_OPTIMUM_METRICS = (price_performance.CAPPED_THROUGHPUT,
                    price_performance.PKB_UNDER_1MS,
                    price_performance.PRICE_PERFORMANCE)

Search = Callable[..., Tuple[latency_search.SearchResult,
                             List[sample_lib.Sample]]]


def CheckFlags(f) -> None:
  if not f.redis_optimize_shards:
    return
  if f.redis_max_shards is not None and f.redis_max_shards < f.redis_min_shards:
    raise errors.UsageError(
        f'--redis_max_shards={f.redis_max_shards} is below '
        f'--redis_min_shards={f.redis_min_shards}.')
  if f.redis_server_cluster_mode and f.redis_cluster_replicas:
    raise errors.UsageError(
        '--redis_optimize_shards with --redis_cluster_replicas would search '
        'counts a cluster with replicas cannot have; use replicas 0.')


def Bounds(f, vcpus: Optional[int]) -> Tuple[int, int, int]:
  """(min, start, max) shards per server VM for a VM with `vcpus`."""
  vcpus = vcpus or 1
  low = f.redis_min_shards
  high = f.redis_max_shards or max(low, 2, vcpus)
  start = min(high, max(low, vcpus // 2, 1))
  return low, start, high


def PlanLine(f) -> str:
  low = f.redis_min_shards
  high = f.redis_max_shards or 'vCPUs'
  return (f'shards per server VM hill-climbed in [{low}, {high}] from '
          f'vCPUs / 2; at most {f.redis_shard_max_points} counts')


def TypicalPoints(f) -> int:
  """Counts a climb usually evaluates: the start, both neighbours, a move."""
  return min(f.redis_shard_max_points, 4)


@dataclasses.dataclass(frozen=True)
class _Point:
  shards: int
  index: int
  extra: Dict[str, Any]
  samples: Tuple[sample_lib.Sample, ...]
  result: latency_search.SearchResult


def _ShardsPerVm(spec) -> int:
  return len(spec.state['shards']) // len(spec.vm_groups['servers'])


def RestartShards(spec, f, shards_per_vm: int) -> None:
  """Replaces every server VM's shards by `shards_per_vm` new ones.

  Keeps the run's password and each VM's shard options (bind address, extra
  config), re-splitting maxmemory over the new count.
  """
  password = spec.state['password']
  old = list(spec.state.get('redis_processes', []))
  options = {p.vm.name: p.options for p in old}
  # Fresh ports: the run record names a shard by VM and port, so a reused
  # port would make two records of one name.
  start_port = max([f.redis_start_port] + [p.port + 1 for p in old] +
                   [spec.state.get('shard_study_next_port', 0)])
  for proc in reversed(old):
    proc.Delete()
  spec.state['redis_processes'] = processes = []
  for vm in spec.vm_groups['servers']:
    base = options.get(vm.name) or redis_server.ShardOptions(
        cluster_mode=f.redis_server_cluster_mode,
        bind='127.0.0.1' if vm.CLOUD == 'Local' else '0.0.0.0')
    vm_options = dataclasses.replace(
        base, maxmemory_mb=redis_server.MaxMemoryPerShardMb(
            vm.memory_mib or 1024, shards_per_vm, f.redis_memory_fraction))
    processes.extend(redis_server.StartShards(
        vm, shards_per_vm, password, vm_options, spec.record,
        start_port=start_port))
  spec.state['shard_study_next_port'] = max(p.port for p in processes) + 1
  shards = [redis_server.Shard(p.vm.name, p.vm.internal_ip, p.port, p.pid,
                               p.config_path) for p in processes]
  spec.state['shards'] = shards
  if f.redis_server_cluster_mode:
    redis_server.CreateCluster(spec.vm_groups['servers'][0], shards, password)
  spec.metadata.update({'redis_total_num_processes': shards_per_vm,
                        'redis_shards_total': len(shards),
                        'redis_primaries': len(shards)})


def _StartConnections(f, previous: Optional[_Point],
                      shards: int) -> Optional[int]:
  """The previous best load, scaled to keep all shards' connections."""
  if (not f.redis_shard_reuse_load or previous is None or
      previous.result.best is None):
    return None
  per_process = previous.result.best.load.connections
  return max(1, round(per_process * previous.shards / shards))


def OptimizeShards(spec, f, search: Search) -> shard_search.ShardSearchResult:
  """Hill-climbs the shard count; emits every point and the optimum.

  Raises:
    errors.NoResultError: no shard count had a load under the cap.
  """
  servers = spec.vm_groups['servers']
  low, start, high = Bounds(f, servers[0].num_cpus)
  points: List[_Point] = []

  def Evaluate(shards: int) -> Optional[latency_search.SearchResult]:
    spec.reporter.Line(f'Shard search point {len(points)}: {shards} shard(s) '
                       f'per server VM (range {low}..{high}).')
    if 'shards' not in spec.state or _ShardsPerVm(spec) != shards:
      RestartShards(spec, f, shards)
      setup.Preload(spec, f)
    extra = {
        'redis_total_num_processes': shards,
        'redis_shards_total': len(spec.state['shards']),
        'preloaded_keys': spec.metadata.get('preloaded_keys'),
        'shard_search_point': len(points),
        'shard_search_role': ROLE_POINT,
    }
    best = max((p for p in points if p.result.best is not None),
               key=lambda p: p.result.capped_throughput, default=None)
    result, samples = search(setup.ProbeDriver(spec, f), extra,
                             _StartConnections(f, best, shards))
    points.append(_Point(shards, len(points), extra, tuple(samples), result))
    if result.best is None:
      spec.reporter.Line(f'  {shards} shard(s): no load under the cap.')
    return result

  climb = shard_search.OptimizeShardCount(
      Evaluate, start, min_shards=low, max_shards=high,
      min_improvement=f.redis_shard_min_improvement,
      max_evaluations=f.redis_shard_max_points)
  _Report(spec, points, climb)
  if climb.best is None:
    raise errors.NoResultError(
        f'No shard count in {", ".join(map(str, climb.evaluated_shards))} had '
        'a load under the latency cap.')
  best = next(p for p in points if p.shards == climb.best.shards)
  optimum = [s.WithMetadata(shard_search_role=ROLE_OPTIMUM)
             for s in best.samples if s.metric in _OPTIMUM_METRICS]
  optimum.append(OptimalShardCountSample(climb, best))
  spec.EmitSamples(optimum)
  setup.PrintSummary(spec, list(best.samples))
  return climb


def OptimalShardCountSample(climb: shard_search.ShardSearchResult,
                            best: _Point) -> sample_lib.Sample:
  metadata = dict(best.extra)
  metadata.update({
      'shard_search_role': ROLE_OPTIMUM,
      'latency_capped_throughput': best.result.capped_throughput,
      'throughput_ci95_ops': best.result.confirmed_throughput_ci95,
      'shard_counts_evaluated': ','.join(map(str, climb.evaluated_shards)),
      'shard_search_throughputs': ','.join(
          'none' if p.throughput is None else f'{p.throughput:.0f}'
          for p in climb.points),
      'shard_search_stop_reason': climb.stop_reason,
  })
  return sample_lib.Sample(OPTIMAL_SHARD_COUNT, best.shards, 'shards',
                           metadata)


def _Report(spec, points: List[_Point],
            climb: shard_search.ShardSearchResult) -> None:
  spec.reporter.Line('')
  spec.reporter.Line('Shard search (capped ops/s per shard count):')
  best = climb.best.shards if climb.best else None
  for p in points:
    value = p.result.capped_throughput
    ci = p.result.confirmed_throughput_ci95
    text = 'no load under the cap' if value is None else f'{value:,.0f} ops/s'
    if value is not None and ci is not None:
      text += f' +- {ci:,.0f}'
    mark = '  <- best' if p.shards == best else ''
    spec.reporter.Line(f'  point {p.index}: {p.shards:3d} shard(s)  '
                       f'{text}{mark}')
  spec.reporter.Line(f'  {climb.stop_reason}')
