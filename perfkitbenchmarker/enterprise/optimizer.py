"""The throughput optimizer over shard count and proxy threads (pure).

--enterprise_redis_optimize_throughput: each point (shards per database,
proxy threads per server VM) costs a database rebuild, a preload and a whole
latency-capped step-up, so the search is a bounded hill climb, as upstream
PKB's: start at a heuristic point (a fifth of the vCPUs as shards, the rest
as proxy threads), measure its four neighbours (+-1 on each axis), move to
the best, stop at a local maximum or after `max_points` evaluations (the
climb is search/hill_climb.py's, which the Redis study's shard search
shares). An axis the user fixed (--enterprise_redis_shard_count or
_proxy_threads) does not move, which makes the climb a walk along the other
axis.

No flags, VMs or clock: `evaluate(shards, proxy_threads)` is injected and
returns the capped throughput (None when no step held under the cap).
"""

import dataclasses
from typing import Callable, Optional, Tuple

from perfkitbenchmarker.search import hill_climb

Point = Tuple[int, int]  # (shards per database, proxy threads per VM)


@dataclasses.dataclass(frozen=True)
class Axis:
  low: int
  high: int
  fixed: Optional[int] = None

  def Clamp(self, value: int) -> int:
    if self.fixed is not None:
      return self.fixed
    return min(self.high, max(self.low, value))

  def Contains(self, value: int) -> bool:
    if self.fixed is not None:
      return value == self.fixed
    return self.low <= value <= self.high


@dataclasses.dataclass(frozen=True)
class Evaluation:
  point: Point
  throughput: Optional[float]


@dataclasses.dataclass(frozen=True)
class OptimizerResult:
  best: Optional[Evaluation]
  evaluations: Tuple[Evaluation, ...]
  stop_reason: str


def StartPoint(vcpus: int, shards: Axis, proxies: Axis) -> Point:
  """Upstream's heuristic: a fifth of the vCPUs as shards, the rest proxies."""
  start_shards = max(vcpus // 5, 1)
  return (shards.Clamp(start_shards),
          proxies.Clamp(max(1, vcpus - start_shards)))


def Bounds(vcpus: int, shard_count: Optional[int],
           proxy_threads: Optional[int]) -> Tuple[Axis, Axis]:
  """Each axis from 1 to twice the vCPUs, or fixed where the user fixed it."""
  high = max(2, 2 * vcpus)
  return (Axis(1, high, shard_count), Axis(1, high, proxy_threads))


def Optimize(evaluate: Callable[[int, int], Optional[float]], start: Point,
             shards: Axis, proxies: Axis, max_points: int = 12
             ) -> OptimizerResult:
  """Hill-climbs to a local maximum of `evaluate` over the grid, measuring
  all four neighbours before each move (upstream's steepest ascent)."""
  climb = hill_climb.HillClimb(
      lambda point: evaluate(*point),
      (shards.Clamp(start[0]), proxies.Clamp(start[1])),
      moves=((0, -1), (0, 1), (-1, 0), (1, 0)),
      allowed=lambda point: (shards.Contains(point[0]) and
                             proxies.Contains(point[1])),
      max_evaluations=max_points, steepest=True)
  order = tuple(Evaluation(point, value) for point, value in climb.scores)
  reason = (f'evaluated max_points={max_points}'
            if climb.stop == hill_climb.BUDGET_SPENT else 'local maximum')
  best = max((e for e in order if e.throughput is not None),
             key=lambda e: e.throughput, default=None)
  return OptimizerResult(best, order, reason)
