"""Hill-climb over the number of Redis shards per server VM.

Redis is single-threaded, so a server VM's capped throughput depends on how
many redis-server processes (shards) share its vCPUs: too few leave cores
idle, too many fight over them and over the network interrupts. Each point
of this curve costs a full latency-capped search, so the climb evaluates as
few counts as it can: search/hill_climb.py climbs from where callers expect
the optimum (vCPUs // 2) with a first step of half that, moving to the first
neighbour that improves, so it never evaluates a count twice.

Extension seam: `evaluate(shards)` is injected and may return a
`driver.SearchResult` (its `capped_throughput` is the score) or a
plain number. Pure: no flags, VMs, I/O, sleeping or clock.
"""

import dataclasses
import math
from typing import Callable, Optional, Tuple, Union

from perfkitbenchmarker.search import driver
from perfkitbenchmarker.search import hill_climb

Evaluation = Union[driver.SearchResult, float, int, None]

DEFAULT_MAX_EVALUATIONS = 12


@dataclasses.dataclass(frozen=True)
class ShardPoint:
  """One evaluated shard count per server VM: its capped throughput (None:
  no load under the cap) and the search behind it, if any."""
  shards: int
  throughput: Optional[float]
  search: Optional[driver.SearchResult] = None


@dataclasses.dataclass(frozen=True)
class ShardSearchResult:
  """Every shard count evaluated, in order, and the best of them (the
  highest throughput, fewest shards on ties; None if none had one)."""
  points: Tuple[ShardPoint, ...]
  best: Optional[ShardPoint]
  stop_reason: str

  @property
  def evaluated_shards(self) -> Tuple[int, ...]:
    return tuple(p.shards for p in self.points)


def _Score(shards: int, value: Evaluation) -> ShardPoint:
  if isinstance(value, driver.SearchResult):
    return ShardPoint(shards, value.capped_throughput, value)
  if value is None:
    return ShardPoint(shards, None)
  if isinstance(value, bool) or not isinstance(value, (int, float)):
    raise TypeError(f'evaluate({shards}) returned {value!r}; it must return '
                    'a driver.SearchResult, a number or None.')
  return ShardPoint(shards, float(value) if math.isfinite(value) else None)


def OptimizeShardCount(
    evaluate: Callable[[int], Evaluation],
    start: int,
    *,
    max_shards: int,
    min_shards: int = 1,
    initial_step: Optional[int] = None,
    min_improvement: float = 0.0,
    max_evaluations: int = DEFAULT_MAX_EVALUATIONS) -> ShardSearchResult:
  """Finds a locally best shard count by pattern search.

  `max_shards` is keyword-only: there is no safe default. `initial_step`
  defaults to start // 2 (at least 1), so the first moves are coarse. A
  neighbour must beat the current count by `min_improvement` (set it to the
  run-to-run noise so the climb does not chase noise). `max_evaluations`
  bounds the calls to `evaluate`. Raises InvalidSearchArgument for bounds
  that exclude `start` or are not positive.
  """
  driver.CheckWholeNumbers(
      dict(min_shards=min_shards, max_evaluations=max_evaluations),
      min_shards=1, max_evaluations=1)
  if not isinstance(max_shards, int) or max_shards < min_shards:
    raise driver.InvalidSearchArgument(
        f'max_shards={max_shards!r} is below min_shards={min_shards}; raise '
        'max_shards.')
  if not isinstance(start, int) or not min_shards <= start <= max_shards:
    raise driver.InvalidSearchArgument(
        f'start={start!r} is outside [{min_shards}, {max_shards}]; start '
        'inside the bounds, e.g. at vCPUs // 2.')
  step = max(1, start // 2) if initial_step is None else initial_step
  driver.CheckWholeNumbers(dict(initial_step=step), initial_step=1)
  if not min_improvement >= 0:
    raise driver.InvalidSearchArgument(
        f'min_improvement={min_improvement!r}: must be a fraction of at least '
        '0, e.g. 0.03 for 3 % noise.')

  points = {}  # each count's ShardPoint, with the search behind its score

  def Measure(point: hill_climb.Point) -> Optional[float]:
    points[point[0]] = _Score(point[0], evaluate(point[0]))
    return points[point[0]].throughput

  climb = hill_climb.HillClimb(
      Measure, (start,), moves=((1,), (-1,)),  # more shards first
      allowed=lambda point: min_shards <= point[0] <= max_shards,
      max_evaluations=max_evaluations, step=step,
      min_improvement=min_improvement)
  evaluated = tuple(points[point[0]] for point, _ in climb.scores)
  if climb.stop == hill_climb.BUDGET_SPENT:
    stop_reason = (f'evaluation budget of {max_evaluations} spent at step '
                   f'{climb.step}')
  else:
    stop_reason = (f'local maximum at {climb.at[0]} shards: no neighbour one '
                   'shard away is better')
  scored = [p for p in evaluated if p.throughput is not None]
  best = max(scored, key=lambda p: (p.throughput, -p.shards), default=None)
  return ShardSearchResult(evaluated, best, stop_reason)
