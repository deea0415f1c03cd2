"""One bounded hill climb over a grid of whole numbers (pure).

Both shard searches climb with it: the Redis study's shard count per server
VM (search/shards.py, one axis) and the enterprise study's shards x proxy
threads (enterprise/optimizer.py, two axes). Every point costs a whole
latency-capped search, so the climb measures each point at most once and
never more than `max_evaluations` of them.

From `start` it looks `step` away along each move (`moves`, in order; after
a move its own direction is tried first, as a climber keeps going the way
that paid). `steepest` measures every neighbour and moves to the best one;
otherwise it moves to the first that beats the current point. A neighbour
must beat it by `min_improvement` (a fraction: the run-to-run noise). With
no better neighbour the step halves; at step 1 the climb stops at a local
maximum.

Extension seam: `measure(point) -> score or None` is injected (None: no load
held under the cap there, worse than any score). Pure: no flags, VMs, I/O,
sleeping or clock.
"""

import dataclasses
from typing import Callable, Optional, Sequence, Tuple

Point = Tuple[int, ...]

LOCAL_MAXIMUM = 'local maximum'
BUDGET_SPENT = 'budget spent'


@dataclasses.dataclass(frozen=True)
class Climb:
  """Every point measured, in order, with its score; why the climb stopped
  (LOCAL_MAXIMUM at `at`, or BUDGET_SPENT at step `step`)."""
  scores: Tuple[Tuple[Point, Optional[float]], ...]
  stop: str
  at: Point
  step: int


def _Better(candidate: Optional[float], incumbent: Optional[float],
            min_improvement: float) -> bool:
  if candidate is None:
    return False
  return incumbent is None or candidate > incumbent * (1 + min_improvement)


def HillClimb(measure: Callable[[Point], Optional[float]], start: Point, *,
              moves: Sequence[Point], allowed: Callable[[Point], bool],
              max_evaluations: int, step: int = 1, steepest: bool = False,
              min_improvement: float = 0.0) -> Climb:
  """Climbs from `start` (which must be `allowed`) to a local maximum of
  `measure`, or until `max_evaluations` points are measured."""
  scores = {}  # insertion order is measuring order

  def Score(point: Point) -> Optional[float]:
    if point not in scores:
      scores[point] = measure(point)
    return scores[point]

  current = start
  Score(current)
  moves = tuple(moves)
  while True:
    best, best_move = current, None
    for move in moves:
      point = tuple(c + step * m for c, m in zip(current, move))
      if point == current or not allowed(point):
        continue
      if point not in scores and len(scores) >= max_evaluations:
        return Climb(tuple(scores.items()), BUDGET_SPENT, current, step)
      if _Better(Score(point), scores[best], min_improvement):
        best, best_move = point, move
        if not steepest:
          break
    if best_move is not None:
      current = best
      if not steepest:
        moves = (best_move,) + tuple(m for m in moves if m != best_move)
    elif step == 1:
      return Climb(tuple(scores.items()), LOCAL_MAXIMUM, current, step)
    else:
      step //= 2
