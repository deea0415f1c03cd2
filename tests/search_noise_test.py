"""Searches that end well under noise (issue 23 point 5), scripted.

The stop rule of confirmation repeats, disturbed repeats run again, the
figure of an unconfirmed answer (the mean at its load), no load held under
the cap as an unconfirmed answer, and the staircase stopping past the cap.
Every measurement is scripted, so each rule is checked exactly.
"""

import dataclasses
import io
import re

import pytest

from perfkitbenchmarker import benchmark_spec
from perfkitbenchmarker import errors
from perfkitbenchmarker import measurement
from perfkitbenchmarker import pricing
from perfkitbenchmarker import reporting
from perfkitbenchmarker import steadiness
from perfkitbenchmarker import verdict
from perfkitbenchmarker.linux_benchmarks import redis_memtier_benchmark as bench
from perfkitbenchmarker.search import adaptive
from perfkitbenchmarker.search import driver as search_driver
from perfkitbenchmarker.search import linear as linear_policy
from perfkitbenchmarker.search import repeats
from perfkitbenchmarker.search import staircase
from perfkitbenchmarker.search import stats
from perfkitbenchmarker.study import results

Load = measurement.Load


def _M(load, ops, latency, **metadata):
  return measurement.Measurement(load, ops, latency, duration_s=1.0,
                                 ops=int(ops), metadata=metadata)


class _Repeat:
  """A policy that only repeats one load by a RepeatRule."""
  NAME = 'repeat'

  def __init__(self, rule, load=Load(1, 8)):
    self.rule, self.load = rule, load

  def Steps(self, cap_ms):
    del cap_ms
    first = yield search_driver.ProbeRequest(self.load)
    done = yield from self.rule.Run(self.load,
                                    after_disturbed=first.disturbed)
    return search_driver.Outcome(
        done.Describe(), first.index, tuple(r.index for r in done.counted),
        tuple(r.index for r in done.excluded))


def _Scripted(throughputs, disturbed=(), latency=0.5):
  """measure() answering with the given throughputs in order; calls whose
  position is in `disturbed` carry interference (42 % foreign CPU)."""
  calls = []

  def Measure(load):
    i = len(calls)
    calls.append(load)
    extra = ({'interference': True, 'foreign_cpu_pct': 42.0}
             if i in disturbed else {'interference': False,
                                     'foreign_cpu_pct': 1.0})
    return _M(load, throughputs[i], latency, **extra)
  return Measure, calls


# The stop rule.

def test_quiet_repeats_stop_at_the_least_once_within_the_target():
  rule = repeats.RepeatRule(least=3, most=6, ci_target=0.02)
  assert rule.Stop([100.0, 100.2]) == (None, None)  # fewer than the least
  assert rule.Stop([100.0, 100.2, 99.9]) == (repeats.STOP_PRECISE, None)


def test_noisy_repeats_stop_when_the_target_is_out_of_reach():
  # 10 % spread: 6 repeats would give about +-10.5 %, not 2 %: stop at 3
  # and report the interval reached, instead of running to 6.
  values = [90.0, 100.0, 110.0]
  stop, projected = repeats.RepeatRule(3, 6, 0.02).Stop(values)
  assert stop == repeats.STOP_OUT_OF_REACH
  mean, _ = stats.MeanAndCi95(values)
  assert projected == pytest.approx(
      100 * stats.StudentT95(5) * 10.0 / 6 ** 0.5 / mean)
  measure, calls = _Scripted([100.0, 90.0, 100.0, 110.0] + [100.0] * 10)
  result = search_driver.FindLatencyCappedMaximum(
      measure, 1.0, _Repeat(repeats.RepeatRule(3, 6, 0.02)))
  assert len(calls) == 4 and len(result.confirmation_probes) == 3
  assert 'target out of reach at this noise' in result.stop_reason
  assert '95 % interval +-24.8 %' in result.stop_reason  # 4.30 x 10 / 1.73
  assert result.confirmed_throughput_ci95 == pytest.approx(
      stats.StudentT95(2) * 10.0 / 3 ** 0.5)


def test_repeats_continue_while_the_target_is_within_reach():
  # 1.2 % spread: 3 repeats give +-3 %, 6 would give about +-1.3 %: repeat.
  rule = repeats.RepeatRule(3, 6, 0.02)
  assert rule.Stop([100.0, 101.2, 98.8]) == (None, None)
  # ... until the interval is within 2 %.
  assert rule.Stop([100.0, 101.2, 98.8, 100.0])[0] == repeats.STOP_PRECISE
  # Never past the most, and exactly the least without a target.
  assert rule.Stop([100.0, 101.2, 98.8, 100.0, 101.2, 98.8, 100.0][:6]
                  )[0] in (repeats.STOP_PRECISE, repeats.STOP_MOST)
  assert repeats.RepeatRule(3, 6, 0).Stop([1.0, 50.0, 99.0])[0] == (
      repeats.STOP_FIXED)
  assert repeats.RepeatRule(3, 6, 0.02).Stop([100, 130, 70, 100, 130, 70])[
      0] == repeats.STOP_MOST


def test_bad_rules_are_refused():
  with pytest.raises(ValueError, match='least=0'):
    repeats.RepeatRule(least=0)
  with pytest.raises(ValueError, match='ci_target'):
    repeats.RepeatRule(ci_target=1.5)


# Disturbed repeats.

def test_a_disturbed_repeat_is_run_again_and_left_out_of_the_interval():
  # Probe 0 searches; repeat 2 (probe 2) is disturbed and far off.
  measure, calls = _Scripted([100.0, 100.0, 40.0, 100.1, 99.9],
                             disturbed={2})
  result = search_driver.FindLatencyCappedMaximum(
      measure, 1.0, _Repeat(repeats.RepeatRule(3, 6, 0.02)))
  assert len(calls) == 5
  assert [p.index for p in result.confirmation_probes] == [1, 3, 4]
  assert [p.index for p in result.excluded_probes] == [2]
  assert result.probes[2].disturbed  # kept among the probes, marked
  assert result.capped_throughput == pytest.approx(100.0)
  found = verdict.OfSearch(result)
  assert found.confirmed, found.reason  # judged on the repeats that count
  assert '1 disturbed repeat(s) run again and left out' in result.stop_reason


def test_a_lasting_disturbance_is_not_chased_with_reruns():
  # Every repeat disturbed: the first is run again; that re-run is disturbed
  # too, so the disturbance lasts and the rest count (verdict: disturbed).
  measure, calls = _Scripted([100.0] * 10, disturbed=set(range(1, 10)))
  result = search_driver.FindLatencyCappedMaximum(
      measure, 1.0, _Repeat(repeats.RepeatRule(3, 6, 0.02, max_reruns=3)))
  assert len(calls) == 1 + 1 + 3
  assert len(result.excluded_probes) == 1
  assert verdict.OfSearch(result).flags == (verdict.DISTURBED,)


def test_a_disturbed_repeat_right_after_a_disturbed_probe_counts():
  # The search probe and the first repeat both disturbed: the disturbance
  # outlasted a probe, so a re-run would meet it again. No re-run; the
  # repeats count and the verdict says disturbed.
  measure, calls = _Scripted([100.0] * 10, disturbed={0, 1})
  result = search_driver.FindLatencyCappedMaximum(
      measure, 1.0, _Repeat(repeats.RepeatRule(3, 6, 0.02, max_reruns=3)))
  assert len(calls) == 1 + 3 and not result.excluded_probes
  assert verdict.OfSearch(result).flags == (verdict.DISTURBED,)
  # One that came and went after a quiet repeat is still run again.
  measure, calls = _Scripted([100.0] * 10, disturbed={0, 2})
  result = search_driver.FindLatencyCappedMaximum(
      measure, 1.0, _Repeat(repeats.RepeatRule(3, 6, 0.02, max_reruns=3)))
  assert [p.index for p in result.excluded_probes] == [2]
  assert verdict.OfSearch(result).confirmed


def test_the_linear_walk_takes_the_same_rule_from_its_last_step():
  from perfkitbenchmarker.search import linear  # pylint: disable=g-import-not-at-top
  policy = linear.LinearStepPolicy(min_threads=1, max_threads=1,
                                   thread_increment=1, clients=8,
                                   confirm_repeats=3)
  # Its only step disturbed, then the first repeat: no re-run.
  measure, calls = _Scripted([100.0] * 10, disturbed={0, 1})
  result = search_driver.FindLatencyCappedMaximum(measure, 1.0, policy)
  assert len(calls) == 1 + 3 and not result.excluded_probes
  # A quiet step, then a disturbed repeat: run again.
  measure, calls = _Scripted([100.0] * 10, disturbed={1})
  result = search_driver.FindLatencyCappedMaximum(measure, 1.0, policy)
  assert len(calls) == 1 + 4
  assert [p.index for p in result.excluded_probes] == [1]


def test_reruns_are_a_budget_of_the_whole_search():
  rule = repeats.RepeatRule(3, 3, 0, max_reruns=2)

  class TwoSets:
    NAME = 'two_sets'

    def Steps(self, cap_ms):
      del cap_ms
      first = yield search_driver.ProbeRequest(Load(1, 8))
      one = yield from rule.Run(Load(1, 8))
      two = yield from rule.Run(Load(1, 4), reruns_left=one.reruns_left)
      self.left = (one.reruns_left, two.reruns_left)
      return search_driver.Outcome(
          'two sets', first.index, tuple(r.index for r in two.counted),
          tuple(r.index for r in one.excluded + two.excluded))

  # Disturbed: probe 1 (set one), probes 5 and 7 (set two), each alone.
  measure, calls = _Scripted([100.0] * 12, disturbed={1, 5, 7})
  policy = TwoSets()
  result = search_driver.FindLatencyCappedMaximum(measure, 1.0, policy)
  # Set one re-runs probe 1 (1 left); set two re-runs probe 5 (0 left), so
  # probe 7 counts.
  assert policy.left == (1, 0)
  assert [p.index for p in result.excluded_probes] == [1, 5]
  assert len(calls) == 1 + 4 + 4
  assert verdict.OfSearch(result).flags == (verdict.DISTURBED,)


def test_adaptive_reruns_a_disturbed_repeat_instead_of_losing_the_answer():
  def Measure(load, seen=[]):  # pylint: disable=dangerous-default-value
    seen.append(load)
    conns = load.connections
    ops = 100e3 * min(conns, 64) / 64
    repeat = seen.count(load) > 1
    disturbed = repeat and seen.count(load) == 3  # the second repeat
    return _M(load, ops, conns / ops * 1000, interference=disturbed,
              foreign_cpu_pct=40.0 if disturbed else 0.0)

  result = search_driver.FindLatencyCappedMaximum(
      Measure, 1.0, adaptive.AdaptiveStepPolicy(
          threads=1, start_connections=8, max_connections=512))
  assert len(result.excluded_probes) == 1
  assert not any(p.disturbed for p in result.confirmation_probes)
  assert verdict.OfSearch(result).confirmed


# The figure of an unconfirmed answer.

def test_an_unconfirmed_answer_is_the_mean_at_its_load_not_the_best_probe():
  load = Load(1, 32)

  class Policy:
    NAME = 'scripted'

    def Steps(self, cap_ms):
      del cap_ms
      yield search_driver.ProbeRequest(load, 'search')
      yield search_driver.ProbeRequest(Load(1, 16), 'search')
      for _ in range(3):
        yield search_driver.ProbeRequest(load, 'confirm')
      return search_driver.Outcome('done', 0, (2, 3, 4))

  # Probe 0 (1x32) is lucky at 38,837; the repeats at 1x32 run out of budget.
  script = iter([_M(load, 38837, 0.8), _M(Load(1, 16), 30e3, 0.5),
                 _M(load, 31e3, 0.9), _M(load, 29.8e3, 0.95)])
  result = search_driver.FindLatencyCappedMaximum(
      lambda _: next(script), 1.0, Policy(), max_probes=4)
  assert result.budget_exhausted
  assert result.best.throughput == 38837
  assert result.reported_indices == (0, 2, 3)
  assert result.capped_throughput == pytest.approx((38837 + 31e3 + 29.8e3) / 3)
  assert result.reported_ci95 is not None
  assert verdict.OfSearch(result).name == verdict.UNCONFIRMED


def test_unconfirmed_samples_carry_the_mean_and_its_interval(pkb_flags):
  load = Load(1, 32)

  class Policy:
    NAME = 'scripted'

    def Steps(self, cap_ms):
      del cap_ms
      for role in ('search', 'confirm', 'confirm'):
        yield search_driver.ProbeRequest(load, role)
      return search_driver.Outcome('done', 0, (1, 2), unconfirmed_reason=(
          'no load held under the 1 ms cap when repeated'))

  script = iter([_M(load, 40e3, 0.8), _M(load, 30e3, 1.2),
                 _M(load, 32e3, 1.1)])
  result = search_driver.FindLatencyCappedMaximum(lambda _: next(script), 1.0,
                                                  Policy())
  spec = benchmark_spec.BenchmarkSpec(
      bench, bench.GetConfig({}), 'noise', 'Local', None, pkb_flags,
      pricing.PriceCatalog.Load(), lambda s: None,
      reporter=reporting.ConsoleReporter(io.StringIO()))
  samples = results.ResultSamples(spec, result, 1.0)
  capped = next(s for s in samples if s.metric == 'latency_capped_throughput')
  assert capped.value == pytest.approx(34e3)
  assert capped.metadata['verdict'] == 'unconfirmed'
  assert capped.metadata['verdict_reason'] == (
      'no load held under the 1 ms cap when repeated')
  assert capped.metadata['answer_probes'] == 3
  assert capped.metadata['throughput_ci95_ops'] == pytest.approx(
      stats.MeanAndCi95([40e3, 30e3, 32e3])[1])
  perf = next(s for s in samples if s.metric == 'price_performance')
  assert perf.value == pytest.approx(34e3 / 0.084492, rel=1e-6)


# No load held under the cap.

def test_no_load_held_under_the_cap_is_an_unconfirmed_answer():
  seen = []

  def Measure(load):
    conns = load.connections
    ops = 100e3 * min(conns, 64) / 64
    latency = conns / ops * 1000
    if load in seen:
      latency = 1.2  # every repeat over the 1 ms cap
    seen.append(load)
    return _M(load, ops, latency)

  result = search_driver.FindLatencyCappedMaximum(
      Measure, 1.0, adaptive.AdaptiveStepPolicy(
          threads=1, start_connections=8, max_connections=512))
  assert result.best is not None
  assert 'no load held under the 1 ms cap when repeated' in (
      result.unconfirmed_reason)
  found = verdict.OfSearch(result)
  assert found.name == verdict.UNCONFIRMED
  assert found.reason.startswith('no load held under the 1 ms cap')
  # The reason's figure is the repeats' alone (each 1.2 ms), the published
  # one every probe at that load (the search probe's under-cap one too):
  # two figures, each saying what it is.
  nearest = re.search(r'its (\d+) repeats merged: avg ([\d.]+) ms; the '
                      r"answer's figures merge every probe at that load",
                      result.unconfirmed_reason)
  assert nearest, result.unconfirmed_reason
  assert float(nearest.group(2)) == pytest.approx(1.2)
  assert result.reported.average_latency_ms < 1.2
  at_load = [p for p in result.probes if p.load == result.best.load]
  assert result.reported_indices == tuple(p.index for p in at_load)
  assert result.capped_throughput == pytest.approx(
      sum(p.throughput for p in at_load) / len(at_load))


def test_staircase_no_step_held_is_an_unconfirmed_answer():
  steps = [_M(Load(1, c), t, lat) for c, t, lat in
           ((16, 100e3, 0.3), (32, 120e3, 0.8), (48, 121e3, 1.2))]
  result = search_driver.FindLatencyCappedMaximum(
      staircase.ReplayThenMeasure(steps, lambda load: _M(load, 90e3, 1.1)),
      1.0, staircase.StaircasePolicy(tuple(m.load for m in steps),
                                     confirm_repeats=2))
  assert result.best is not None
  assert verdict.OfSearch(result).name == verdict.UNCONFIRMED
  assert 'no step held under the 1 ms cap' in result.unconfirmed_reason


# The staircase stops past the cap.

def test_staircase_stops_walking_at_the_first_step_over_the_cap():
  loads = tuple(Load(1, c) for c in range(16, 257, 16))
  steps = [_M(l, 100e3, 0.3 * (i + 1)) for i, l in enumerate(loads)]
  repeated = []

  def Measure(load):
    repeated.append(load)
    return _M(load, 101e3, 0.6)

  result = search_driver.FindLatencyCappedMaximum(
      staircase.ReplayThenMeasure(steps, Measure), 1.0,
      staircase.StaircasePolicy(loads, confirm_repeats=2))
  # Steps 16, 32, 48 under (0.3-0.9 ms), 64 over (1.2 ms): no step past it.
  assert [p.load.clients for p in result.search_probes] == [16, 32, 48, 64]
  assert 'stopped at step 3 of 16' in result.stop_reason
  assert repeated == [result.best.load] * 2
  assert verdict.OfSearch(result).confirmed


# Disturbed search probes.

def test_a_disturbed_probe_is_as_noisy_as_its_foreign_share():
  disturbed = _M(Load(1, 8), 100e3, 0.5, interference=True,
                 foreign_cpu_pct=40.0)
  assert adaptive.RelativeNoise(disturbed, 0.03) == pytest.approx(0.4)
  quiet = _M(Load(1, 8), 100e3, 0.5, interference=False,
             foreign_cpu_pct=4.0)
  assert adaptive.RelativeNoise(quiet, 0.03) == 0.03


def test_no_bisection_on_gains_within_a_disturbance():
  # Throughput still rising at the cap (a bigger server): with quiet probes
  # the search bisects; when foreign processes took half the cores in every
  # probe, a 10-20 % "gain" is within what they could have made, so it
  # predicts by Little's law instead and spends fewer probes.
  def Curve(foreign):
    def Measure(load):
      n = load.connections
      ops = 1000 * n / (0.2 + 0.006 * n)
      return _M(load, ops, n / ops * 1000, interference=foreign > 10,
                foreign_cpu_pct=float(foreign))
    return Measure

  policy = adaptive.AdaptiveStepPolicy(threads=1, start_connections=32,
                                       max_connections=1024,
                                       confirm_max_reruns=0)
  quiet = search_driver.FindLatencyCappedMaximum(Curve(2), 1.0, policy)
  busy = search_driver.FindLatencyCappedMaximum(Curve(50), 1.0, policy)
  assert 'bisecting' in quiet.stop_reason
  assert 'bisecting' not in busy.stop_reason
  assert len(busy.search_probes) < len(quiet.search_probes)


def test_no_little_correction_within_a_disturbed_probes_noise():
  # A plateau that falls off past 40 connections, so Little's law misses:
  # its first correction lands 21 % under the target. Quiet, the search
  # corrects again; with half the cores taken by others, a probe that far
  # under is within its own noise: no second correction.
  def Curve(foreign):
    def Measure(load):
      n = load.connections
      ops = 100e3 * min(n, 16) / 16 * (1 if n <= 40 else 40 / n) ** 0.5
      return _M(load, ops, n / ops * 1000, interference=foreign > 10,
                foreign_cpu_pct=float(foreign))
    return Measure

  policy = adaptive.AdaptiveStepPolicy(threads=1, start_connections=16,
                                       max_connections=1024,
                                       confirm_max_reruns=0)
  quiet = search_driver.FindLatencyCappedMaximum(Curve(2), 1.0, policy)
  busy = search_driver.FindLatencyCappedMaximum(Curve(50), 1.0, policy)
  corrections = lambda r: [p.note for p in r.search_probes].count(
      'Little correction')
  # Quiet: 95 over, 61 under by 21 %, 76 over. Busy: 61 is close enough.
  assert (corrections(quiet), corrections(busy)) == (2, 1)
  assert len(busy.search_probes) == len(quiet.search_probes) - 1


def test_no_little_probe_within_the_noise_of_the_load_under_the_target():
  # Issue 23's busy machine: the start (32) over the target, 16 under it
  # on a 25,000 ops/s plateau. Quiet, Little's law's 23 connections could
  # gain 44 % and is probed; with half the cores taken by others in every
  # probe, a 44 % step is within 16's noise (50 %): by Little's law it could
  # gain no more than that, so it is not probed, and no repeat is re-run
  # (each follows a disturbed probe). The old rules took 3 + 1 + 3 probes.
  def Curve(foreign):
    def Measure(load):
      n = load.connections
      ops = 25e3 * min(n, 8) / 8
      return _M(load, ops, n / ops * 1000, interference=foreign > 10,
                foreign_cpu_pct=float(foreign))
    return Measure

  policy = adaptive.AdaptiveStepPolicy(threads=1, start_connections=32,
                                       max_connections=1024)
  quiet = search_driver.FindLatencyCappedMaximum(Curve(2), 1.0, policy)
  busy = search_driver.FindLatencyCappedMaximum(Curve(50), 1.0, policy)
  assert [p.load.connections for p in quiet.search_probes] == [32, 16, 23]
  assert [p.load.connections for p in busy.search_probes] == [32, 16]
  assert 'within the noise of 16 (+-50 %): not probed' in busy.stop_reason
  assert (len(quiet.probes), len(busy.probes)) == (6, 5)
  assert not busy.excluded_probes
  assert verdict.OfSearch(quiet).confirmed
  assert verdict.OfSearch(busy).flags == (verdict.DISTURBED,)
  # The rules before issue 23 (noise_aware=False) still probe it.
  before = search_driver.FindLatencyCappedMaximum(
      Curve(50), 1.0, dataclasses.replace(policy, noise_aware=False))
  assert [p.load.connections for p in before.search_probes] == [32, 16, 23]


def test_no_answer_lines_name_the_flag_to_change():
  from perfkitbenchmarker.search import linear  # pylint: disable=g-import-not-at-top
  from perfkitbenchmarker.study import search_runner  # pylint: disable=g-import-not-at-top

  def Over(load):
    return _M(load, 10e3, 5.0)

  walk = linear.LinearStepPolicy(min_threads=1, max_threads=4,
                                 thread_increment=1, clients=8,
                                 min_connections=2)
  result = search_driver.FindLatencyCappedMaximum(Over, 1.0, walk)
  assert [p.load.connections for p in result.probes] == [8, 4, 2]
  error = search_runner.NoResultError(result, 1.0, 2)
  # Every probe over the cap, by the walk's end or by the budget's: one
  # class, which pkb exits 4 for, as for an unconfirmed answer.
  assert isinstance(error, errors.NoLoadUnderCapError)
  line = str(error)
  assert line.startswith('Every probe was over the 1 ms cap, down to 2 '
                         'connections (lowest average 5.000 ms at 1x8)')
  assert line.endswith('raise --memtier_latency_cap.')
  cut = search_driver.FindLatencyCappedMaximum(
      Over, 1.0, adaptive.AdaptiveStepPolicy(start_connections=32),
      max_probes=2)
  error = search_runner.NoResultError(cut, 1.0, 2)
  assert isinstance(error, errors.NoLoadUnderCapError)
  line = str(error)
  assert 'when the probe budget of 2 ran out: raise --memtier_max_probes' in (
      line)
  # The adaptive search's first load is its start, not its lowest: lowering
  # --memtier_adaptive_min_connections started it at 32 again.
  assert 'lower --memtier_adaptive_start_connections' in line


def test_no_answer_line_says_when_others_took_the_cpu_instead_of_the_server():
  """Under a CPU hog on both cores, every probe of './pkb.py
  --latency_cap_statistic=p99.9 --memtier_latency_cap=0.5 ...' read
  disturbed (foreign CPU 61-100 %), and the line blamed the server: 'this
  server cannot answer that fast here'. What was measured was the others'
  load as much as the server: the line says so, as the verdicts do."""
  from perfkitbenchmarker.search import linear  # pylint: disable=g-import-not-at-top
  from perfkitbenchmarker.study import search_runner  # pylint: disable=g-import-not-at-top
  walk = linear.LinearStepPolicy(min_threads=1, max_threads=4,
                                 thread_increment=1, clients=8,
                                 min_connections=2)
  foreign = {8: 61.5, 4: 100.0, 2: 98.0}

  def Disturbed(load):
    return _M(load, 10e3, 5.0, limit='disturbed',
              foreign_cpu_pct=foreign[load.connections])

  result = search_driver.FindLatencyCappedMaximum(Disturbed, 1.0, walk)
  line = str(search_runner.NoResultError(result, 1.0, 2))
  assert line.startswith('Every probe was over the 1 ms cap, down to 2 '
                         'connections (lowest average 5.000 ms at 1x8)')
  assert 'this server cannot answer that fast' not in line
  assert line.endswith(
      ': others took CPU the run\'s threads waited for in 3 of the 3 probes '
      '(foreign CPU up to 100 %): not the server\'s figure alone; stop the '
      'other load and run again, or raise --memtier_latency_cap.')


def test_the_search_aims_the_worst_second_under_the_target():
  # A closed loop's seconds read above its whole: here the first second of
  # every probe 11 % over it (redis-benchmark's worst of 2-3 seconds was
  # 1-11 % over the whole against a server under the 2-core quota), and
  # the repeats 8 % slower than the probe that picked their load. Aimed by
  # the whole alone, the search ended at 53 connections (whole 0.836 ms,
  # first second 0.929 ms) and its repeats' first seconds crossed the
  # 1 ms cap: unconfirmed, as 1 of 3 quiet first runs was ('1 of 2 s over
  # the 1 ms avg cap (worst s0: 1.016 ms)'). Aimed by its worst second, it
  # ends where that second is under the 0.85 ms target, and the repeats
  # hold every second.
  seen = []

  def Measure(load):
    n = load.connections
    ops = 60000 * (1 + 0.001 * n)
    if load in seen:
      ops /= 1.08
    seen.append(load)
    per_second = tuple(
        measurement.SecondStats(s, int(ops * share), n / (ops * share) * 1e3)
        for s, share in enumerate((0.9, 1.1)))
    m = measurement.Measurement(load, ops, n / ops * 1e3, duration_s=2.0,
                                ops=int(2 * ops), per_second=per_second)
    return steadiness.Marked(m, measurement.LatencyCap(1.0))

  policy = adaptive.AdaptiveStepPolicy(threads=1, start_connections=32,
                                       max_connections=1024, cap_margin=0.85)
  result = search_driver.FindLatencyCappedMaximum(Measure, 1.0, policy)
  assert steadiness.WorstSecondMs(result.best.per_second) < 0.85
  assert result.best.load.connections == 48
  assert all(steadiness.WorstSecondMs(p.measurement.per_second) < 1.0
             for p in result.confirmation_probes)
  assert verdict.OfSearch(result).confirmed


def test_an_unconfirmed_figure_leaves_out_the_disturbed_repeat_set_aside():
  # A linear walk confirming with 2 repeats: the first repeat (probe 1) is
  # disturbed and run again; the 2 counted repeats are over the cap, so the
  # answer is unconfirmed. Its figure is the mean at its load of the probes
  # that count (0, 2, 3), not dragged to 85 ops/s by the disturbed 40.
  script = [(100.0, 0.5, False), (40.0, 0.5, True), (100.0, 1.2, False),
            (100.0, 1.2, False)]

  def Measure(load):
    ops, latency, disturbed = script.pop(0)
    return _M(load, ops, latency, interference=disturbed,
              foreign_cpu_pct=42.0 if disturbed else 1.0)
  policy = linear_policy.LinearStepPolicy(
      min_threads=1, max_threads=1, thread_increment=1, clients=8,
      confirm_repeats=2)
  result = search_driver.FindLatencyCappedMaximum(Measure, 1.0, policy)
  assert not script  # every scripted probe ran
  assert [p.index for p in result.excluded_probes] == [1]
  assert result.unconfirmed_reason
  assert result.at_load_indices == (0, 2, 3)
  assert result.capped_throughput == pytest.approx(100.0)
  assert not verdict.OfSearch(result).confirmed


def test_an_unconfirmed_figure_of_only_set_aside_probes_keeps_them_all():
  # The one rule's fallback: when every probe at the load was set aside,
  # the figure is still their mean rather than none.
  measure, _ = _Scripted([100.0])

  class _SetAside:
    NAME = 'set-aside'

    def Steps(self, cap_ms):
      del cap_ms
      yield search_driver.ProbeRequest(Load(1, 8))
      return search_driver.Outcome('scripted', 0, (), (0,), 'scripted')
  result = search_driver.FindLatencyCappedMaximum(measure, 1.0, _SetAside())
  assert result.at_load_indices == (0,)
  assert result.capped_throughput == pytest.approx(100.0)


# The probe budget running out: the policy's set-aside rule still holds.

def _LinearWalk(script, max_threads=1, confirm_repeats=2):
  """measure() answering (ops, latency, disturbed) in order, and a linear
  walk from 1 thread confirming with `confirm_repeats` repeats."""
  def Measure(load):
    ops, latency, disturbed = script.pop(0)
    return _M(load, ops, latency, interference=disturbed,
              foreign_cpu_pct=42.0 if disturbed else 1.0)
  return Measure, linear_policy.LinearStepPolicy(
      min_threads=1, max_threads=max_threads, thread_increment=1, clients=8,
      confirm_repeats=confirm_repeats)


def test_a_spent_budget_leaves_out_the_disturbed_repeat_set_aside(pkb_flags):
  # The walk's one probe (100 ops/s), then its first repeat is disturbed
  # (40 ops/s) and set aside to run again, but the budget of 2 ends the
  # search first. The figure is the probe that counts, 100 ops/s, not the
  # 70 the disturbed repeat dragged it to; the samples name it as set aside,
  # as when a policy finishes.
  script = [(100.0, 0.5, False), (40.0, 0.5, True)]
  measure, policy = _LinearWalk(script)
  result = search_driver.FindLatencyCappedMaximum(measure, 1.0, policy,
                                                  max_probes=2)
  assert not script and result.budget_exhausted
  assert [p.index for p in result.excluded_probes] == [1]
  assert result.at_load_indices == (0,)
  assert result.capped_throughput == pytest.approx(100.0)
  assert 'set aside to run again: probe(s) 1' in result.stop_reason
  spec = benchmark_spec.BenchmarkSpec(
      bench, bench.GetConfig({}), 'noise', 'Local', None, pkb_flags,
      pricing.PriceCatalog.Load(), lambda s: None,
      reporter=reporting.ConsoleReporter(io.StringIO()))
  capped = next(s for s in results.ResultSamples(spec, result, 1.0)
                if s.metric == 'latency_capped_throughput')
  assert capped.value == pytest.approx(100.0)
  assert capped.metadata['disturbed_repeats_excluded'] == '1'
  assert capped.metadata['aggregated_probe_indices'] == '0'
  assert capped.metadata['verdict'] == 'unconfirmed'


def test_a_spent_budget_keeps_a_disturbed_repeat_the_policy_counted():
  # Disturbed twice running (the walk's probe, then its repeat): a re-run
  # would not escape it, so the policy counts the repeat, and so does the
  # figure when the budget ends the search.
  script = [(100.0, 0.5, True), (90.0, 0.5, True)]
  measure, policy = _LinearWalk(script)
  result = search_driver.FindLatencyCappedMaximum(measure, 1.0, policy,
                                                  max_probes=2)
  assert result.excluded_probes == ()
  assert result.at_load_indices == (0, 1)
  assert result.capped_throughput == pytest.approx(95.0)


def test_a_spent_budget_does_not_pick_the_load_by_a_disturbed_probe():
  # 1 thread: 100 ops/s; 2 threads: 150 ops/s, but others took the CPU.
  # The budget ends the walk there: the answer is the undisturbed load.
  script = [(100.0, 0.5, False), (150.0, 0.5, True)]
  measure, policy = _LinearWalk(script, max_threads=3)
  result = search_driver.FindLatencyCappedMaximum(measure, 1.0, policy,
                                                  max_probes=2)
  assert result.best_index == 0
  assert result.capped_throughput == pytest.approx(100.0)
  assert 'highest-throughput undisturbed probe' in result.stop_reason


def test_a_spent_budget_with_only_disturbed_probes_under_the_cap_answers():
  script = [(100.0, 0.5, True), (150.0, 0.5, True)]
  measure, policy = _LinearWalk(script, max_threads=3)
  result = search_driver.FindLatencyCappedMaximum(measure, 1.0, policy,
                                                  max_probes=2)
  assert result.best_index == 1
  assert result.capped_throughput == pytest.approx(150.0)
  assert 'every one was disturbed' in result.stop_reason


def test_a_policy_running_again_a_probe_that_never_ran_is_refused():
  class _Bad:
    NAME = 'bad'

    def Steps(self, cap_ms):
      del cap_ms
      yield search_driver.ProbeRequest(Load(1, 8))
      yield search_driver.ProbeRequest(Load(1, 8), runs_again=5)
      return search_driver.Outcome('never')
  measure, _ = _Scripted([100.0, 100.0])
  with pytest.raises(search_driver.InvalidSearchArgument,
                     match='run probe 5 again but only 1 probes ran'):
    search_driver.FindLatencyCappedMaximum(measure, 1.0, _Bad())
