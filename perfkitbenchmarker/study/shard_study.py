"""Shard-count optimisation for OSS Redis: one capped search per shard count.

--redis_optimize_shards hill-climbs the number of redis-server processes per
server VM (`search.shards.OptimizeShardCount`) from half the server VM's
vCPUs, a full latency-capped search per point. Between points only the
shards change (restarted, preloaded, DBSIZE verified); an adaptive search
may start at the best point's load so far, scaled so that the connections
over all shards stay the same. Every point's samples carry
`shard_search_role: point`; the best point's answer samples are emitted
again with `shard_search_role: optimum`, next to `optimal_shard_count`.

Extension seam: `OptimizeShards` takes the search as a callable
`search(driver, extra_metadata, start_connections) -> (SearchResult,
samples)`, so the benchmark module decides how each point is searched; the
shards are restarted through the engine interface (deployment.Restart).
"""

import dataclasses
from typing import Any, Callable, Dict, List, Optional, Tuple

from perfkitbenchmarker import errors
from perfkitbenchmarker import price_performance
from perfkitbenchmarker import sample as sample_lib
from perfkitbenchmarker import verdict as verdict_lib
from perfkitbenchmarker.search import driver as search_driver
from perfkitbenchmarker.search import shards as shard_search
from perfkitbenchmarker.study import deployment as deployment_lib
from perfkitbenchmarker.study import options as options_lib
from perfkitbenchmarker.study import results
from perfkitbenchmarker.study import search_options

OPTIMAL_SHARD_COUNT = 'optimal_shard_count'
ROLE_POINT, ROLE_OPTIMUM = 'point', 'optimum'
# Samples of the best point that are repeated as the optimum.
_OPTIMUM_METRICS = (price_performance.CAPPED_THROUGHPUT,
                    price_performance.PKB_UNDER_1MS,
                    price_performance.PRICE_PERFORMANCE)

Search = Callable[..., Tuple[search_driver.SearchResult,
                             List[sample_lib.Sample]]]


@dataclasses.dataclass(frozen=True)
class _Point:
  shards: int
  index: int
  extra: Dict[str, Any]
  samples: Tuple[sample_lib.Sample, ...]
  result: search_driver.SearchResult


def _StartConnections(sh: search_options.ShardSearchOptions,
                      previous: Optional[_Point],
                      shards: int) -> Optional[int]:
  """The previous best load, scaled to keep all shards' connections."""
  if (not sh.reuse_load or previous is None or
      previous.result.best is None):
    return None
  per_process = previous.result.best.load.connections
  return max(1, round(per_process * previous.shards / shards))


def OptimizeShards(spec, deployment: deployment_lib.Deployment,
                   opts: options_lib.RedisStudyOptions, engine,
                   search: Search) -> shard_search.ShardSearchResult:
  """Hill-climbs the shard count; emits every point and the optimum.

  Raises:
    errors.NoResultError: no shard count had a load under the cap.
  """
  servers = spec.vm_groups['servers']
  low, start, high = opts.shards.Bounds(servers[0].num_cpus)
  points: List[_Point] = []
  # Prepare preloaded the first deployment already.
  current = {'deployment': deployment,
             'preloaded': spec.metadata.get('preloaded_keys')}
  # Fresh ports for every restart: the run record names a shard by VM and
  # port, so a reused port would make two records of one name.
  next_port = [max([opts.server.start_port] +
                   [p.port + 1 for p in deployment.processes])]

  def Evaluate(shards: int) -> Optional[search_driver.SearchResult]:
    spec.reporter.Line(f'Shard search point {len(points)}: {shards} shard(s) '
                       f'per server VM (range {low}..{high}).')
    d = current['deployment']
    if d.shards_per_vm != shards or current['preloaded'] is None:
      if d.shards_per_vm != shards:
        d = deployment_lib.Restart(spec, d, opts, engine, shards,
                                   next_port[0])
        next_port[0] = max(p.port for p in d.processes) + 1
        current['deployment'] = d
        spec.metadata.update({'redis_total_num_processes': shards,
                              'redis_shards_total': len(d.processes),
                              'redis_primaries': d.primaries})
      current['preloaded'] = deployment_lib.Preload(spec, d, opts, engine)
      spec.metadata['preloaded_keys'] = current['preloaded']
    extra = {
        'redis_total_num_processes': shards,
        'redis_shards_total': len(d.processes),
        'preloaded_keys': current['preloaded'],
        'shard_search_point': len(points),
        'shard_search_role': ROLE_POINT,
    }
    best = max((p for p in points if p.result.best is not None),
               key=lambda p: p.result.capped_throughput, default=None)
    result, samples = search(deployment_lib.ProbeDriver(spec, d, opts), extra,
                             _StartConnections(opts.shards, best, shards))
    points.append(_Point(shards, len(points), extra, tuple(samples), result))
    if result.best is None:
      spec.reporter.Line(f'  {shards} shard(s): no load under the cap.')
    return result

  climb = shard_search.OptimizeShardCount(
      Evaluate, start, min_shards=low, max_shards=high,
      min_improvement=opts.shards.min_improvement,
      max_evaluations=opts.shards.max_points)
  _Report(spec, points, climb)
  if climb.best is None:
    raise errors.NoLoadUnderCapError(
        f'No shard count in {", ".join(map(str, climb.evaluated_shards))} had '
        'a load under the latency cap.')
  best = next(p for p in points if p.shards == climb.best.shards)
  optimum = [s.WithMetadata(shard_search_role=ROLE_OPTIMUM)
             for s in best.samples if s.metric in _OPTIMUM_METRICS]
  optimum.append(OptimalShardCountSample(climb, best))
  spec.EmitSamples(optimum)
  results.PrintSummary(spec, list(best.samples))
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
  metadata.update(verdict_lib.OfSearch(best.result).Metadata())
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
    if value is not None:
      text += f' ({verdict_lib.WORDS[verdict_lib.OfSearch(p.result).name]})'
    mark = '  <- best' if p.shards == best else ''
    spec.reporter.Line(f'  point {p.index}: {p.shards:3d} shard(s)  '
                       f'{text}{mark}')
  spec.reporter.Line(f'  {climb.stop_reason}')
