"""The throughput optimizer over shard count and proxy threads (pure).

--enterprise_redis_optimize_throughput: each point (shards per database,
proxy threads per server VM) costs a database rebuild, a preload and a whole
latency-capped step-up, so the search is a bounded hill climb, as upstream
PKB's: start at a heuristic point (a fifth of the vCPUs as shards, the rest
as proxy threads), measure its four neighbours (+-1 on each axis), move to
the best, stop at a local maximum or after `max_points` evaluations. An axis
the user fixed (--enterprise_redis_shard_count or _proxy_threads) does not
move, which makes the climb a walk along the other axis.

No flags, VMs or clock: `evaluate(shards, proxy_threads)` is injected and
returns the capped throughput (None when no step held under the cap).
"""

import dataclasses
from typing import Callable, Dict, List, Optional, Tuple

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


def Neighbours(point: Point, shards: Axis, proxies: Axis) -> List[Point]:
  s, p = point
  candidates = [(s, p - 1), (s, p + 1), (s - 1, p), (s + 1, p)]
  return [c for c in candidates
          if c != point and shards.Contains(c[0]) and proxies.Contains(c[1])]


def Optimize(evaluate: Callable[[int, int], Optional[float]], start: Point,
             shards: Axis, proxies: Axis, max_points: int = 12
             ) -> OptimizerResult:
  """Hill-climbs to a local maximum of `evaluate` over the grid."""
  start = (shards.Clamp(start[0]), proxies.Clamp(start[1]))
  seen: Dict[Point, Optional[float]] = {}
  order: List[Evaluation] = []

  def Value(point: Point) -> Optional[float]:
    if point not in seen:
      seen[point] = evaluate(*point)
      order.append(Evaluation(point, seen[point]))
    return seen[point]

  def Better(a: Optional[float], b: Optional[float]) -> bool:
    return a is not None and (b is None or a > b)

  current = start
  Value(current)
  reason = ''
  while not reason:
    best_point, best_value = current, seen[current]
    for neighbour in Neighbours(current, shards, proxies):
      if neighbour not in seen and len(seen) >= max_points:
        reason = f'evaluated max_points={max_points}'
        break
      value = Value(neighbour)
      if Better(value, best_value):
        best_point, best_value = neighbour, value
    if reason:
      break
    if best_point == current:
      reason = 'local maximum'
    current = best_point
  scored = [e for e in order if e.throughput is not None]
  best = max(scored, key=lambda e: e.throughput) if scored else None
  return OptimizerResult(best, tuple(order), reason)
