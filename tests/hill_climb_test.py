"""The one hill climb both shard searches use, with scripted scores."""

from perfkitbenchmarker.search import hill_climb


def _Scripted(table):
  calls = []

  def Measure(point):
    calls.append(point)
    return table.get(point)
  return Measure, calls


def _Line(low, high):
  return lambda point: low <= point[0] <= high


def test_first_improvement_moves_before_measuring_the_other_side():
  measure, calls = _Scripted({(3,): 10.0, (4,): 20.0, (5,): 15.0, (2,): 30.0})
  climb = hill_climb.HillClimb(measure, (3,), moves=((1,), (-1,)),
                               allowed=_Line(1, 5), max_evaluations=10)
  # (4,) beat (3,), so the climb moved without measuring (2,); it stays a
  # local maximum found from there.
  assert calls == [(3,), (4,), (5,)]
  assert (climb.stop, climb.at) == (hill_climb.LOCAL_MAXIMUM, (4,))


def test_steepest_measures_every_neighbour_and_takes_the_best():
  measure, calls = _Scripted({(3,): 10.0, (4,): 20.0, (2,): 30.0, (1,): 5.0})
  climb = hill_climb.HillClimb(measure, (3,), moves=((1,), (-1,)),
                               allowed=_Line(1, 4), max_evaluations=10,
                               steepest=True)
  assert calls == [(3,), (4,), (2,), (1,)]
  assert climb.at == (2,)


def test_the_last_move_is_tried_first_and_the_step_halves():
  score = {(8,): 1.0, (12,): 0.5, (4,): 2.0, (0,): 0.1, (6,): 1.5,
           (2,): 3.0, (1,): 2.5, (3,): 2.9}
  measure, calls = _Scripted(score)
  climb = hill_climb.HillClimb(measure, (8,), moves=((1,), (-1,)),
                               allowed=_Line(1, 16), max_evaluations=20,
                               step=4)
  # Down from 8 by 4 paid, so down is tried first from then on: at 4 the
  # grid ends below and 8 is known, so the step halves to 2 and 2 (not 6)
  # is measured next; from 2 the step halves to 1.
  assert calls == [(8,), (12,), (4,), (2,), (1,), (3,)]
  assert climb.at == (2,) and climb.step == 1


def test_improvements_below_the_noise_do_not_move():
  measure, calls = _Scripted({(2,): 100.0, (3,): 101.0, (1,): 99.0})
  climb = hill_climb.HillClimb(measure, (2,), moves=((1,), (-1,)),
                               allowed=_Line(1, 3), max_evaluations=10,
                               min_improvement=0.02)
  assert climb.at == (2,) and calls == [(2,), (3,), (1,)]


def test_no_score_never_wins_and_the_budget_stops_the_climb():
  measure, calls = _Scripted({(1, 1): None, (1, 2): 5.0, (2, 2): 6.0})
  climb = hill_climb.HillClimb(
      measure, (1, 1), moves=((0, 1), (1, 0)),
      allowed=lambda p: min(p) >= 1, max_evaluations=2)
  assert calls == [(1, 1), (1, 2)]
  assert (climb.stop, climb.at) == (hill_climb.BUDGET_SPENT, (1, 2))
  assert climb.scores == (((1, 1), None), ((1, 2), 5.0))
