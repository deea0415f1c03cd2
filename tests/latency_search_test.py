"""Tests for the latency-capped search driver and the linear policy."""

import math
import statistics
import unittest

from perfkitbenchmarker import errors
from perfkitbenchmarker import measurement
from perfkitbenchmarker import verdict
from perfkitbenchmarker.search import driver as search_driver
from perfkitbenchmarker.search import linear
from perfkitbenchmarker.search import stats

Load = measurement.Load


def MachineThroughput(connections: int) -> float:
  """Shaped like this machine: ~134k ops/s from 8-16 connections on."""
  throughput = 134000 * (1 - math.exp(-connections / 4))
  if connections > 32:
    throughput *= 1 - 0.0005 * (connections - 32)
  return throughput


class Script:
  """A `measure` callable that answers from a table or a curve.

  `points` maps threads to (throughput, latency ms); without it the machine
  curve gives throughput and Little's law the latency.
  """

  def __init__(self, points=None, duration_s=5.0):
    self._points = points
    self._duration_s = duration_s
    self.loads = []

  def __call__(self, load: Load) -> measurement.Measurement:
    self.loads.append(load)
    if self._points is not None:
      throughput, latency = self._points[load.threads]
    else:
      throughput = MachineThroughput(load.connections)
      latency = load.outstanding_requests / throughput * 1000
    return measurement.Measurement(
        load=load, throughput=throughput, average_latency_ms=latency,
        duration_s=self._duration_s, ops=int(throughput * self._duration_s))


def Linear(measure, cap_ms=1.0, max_probes=search_driver.DEFAULT_MAX_PROBES,
           **kwargs):
  arguments = dict(min_threads=1, max_threads=10, thread_increment=1,
                   clients=4)
  arguments.update(kwargs)
  return search_driver.FindLatencyCappedMaximum(
      measure, cap_ms, linear.LinearStepPolicy(**arguments),
      max_probes=max_probes)


class LinearStepPolicyTest(unittest.TestCase):

  def testRepeatsTheAnswersLoadAndConfirmsByTheAdaptiveRule(self):
    """confirm_repeats: the answer's load measured again; the verdict is
    confirmed only when the repeats hold under the cap, as for adaptive."""
    points = {1: (50e3, 0.2), 3: (90e3, 0.5), 5: (120e3, 0.8),
              7: (125e3, 1.1)}
    single = Linear(Script(points), thread_increment=2)
    self.assertEqual(verdict.OfSearch(single).name, verdict.UNCONFIRMED)
    script = Script(points)
    result = Linear(script, thread_increment=2, confirm_repeats=3)
    self.assertEqual([l.threads for l in script.loads], [1, 3, 5, 7, 5, 5, 5])
    self.assertEqual([p.role for p in result.confirmation_probes],
                     [search_driver.ROLE_CONFIRM] * 3)
    self.assertEqual(result.capped_throughput, 120e3)
    self.assertIsNotNone(result.confirmed_throughput_ci95)
    self.assertTrue(verdict.OfSearch(result).confirmed)
    self.assertIn('3 repeats, 95 % interval +-0.0 % at 5x4, 0 over the cap',
                  result.stop_reason)
    # Repeats that do not hold under the cap leave it unconfirmed.
    seen = []

    def Drifting(load):
      seen.append(load)
      m = Script(points)(load)
      if len(seen) > 4:  # the repeats drift over the cap
        return measurement.Measurement(load=load, throughput=m.throughput,
                                       average_latency_ms=1.3, duration_s=5.0,
                                       ops=m.ops)
      return m
    drifted = Linear(Drifting, thread_increment=2, confirm_repeats=3)
    self.assertEqual(verdict.OfSearch(drifted).name, verdict.UNCONFIRMED)
    self.assertIn('repeats at 5x4 averaged 1.300 ms, not under the 1 ms cap',
                  verdict.OfSearch(drifted).reason)
    # Its figure is the mean of every probe at the answer's load.
    self.assertEqual(drifted.reported_indices, (2, 4, 5, 6))
    # No answer under the cap: nothing to repeat.
    none = Script({1: (50e3, 1.5)})
    self.assertIsNone(Linear(none, confirm_repeats=3).best)
    # 1x4 over the cap, then the step-down 1x2 and 1x1: no repeats.
    self.assertEqual([l.Describe() for l in none.loads], ['1x4', '1x2', '1x1'])
    with self.assertRaises(search_driver.InvalidSearchArgument):
      linear.LinearStepPolicy(1, 4, 1, 8, confirm_repeats=-1)

  def testWalksUntilLatencyReachesCap(self):
    script = Script({1: (50e3, 0.2), 3: (90e3, 0.5), 5: (120e3, 0.8),
                     7: (125e3, 1.1), 9: (130e3, 1.5)})
    result = Linear(script, thread_increment=2)
    self.assertEqual([l.threads for l in script.loads], [1, 3, 5, 7])
    self.assertTrue(all(l.clients == 4 and l.pipeline == 1
                        for l in script.loads))
    self.assertEqual(result.best.load, Load(5, 4))
    self.assertEqual(result.best_index, 2)
    self.assertEqual([p.under_cap for p in result.probes],
                     [True, True, True, False])
    self.assertIn('reached the 1.0 ms cap at 7x4', result.stop_reason)
    self.assertEqual(result.policy, 'linear')
    self.assertEqual(result.capped_throughput, 120e3)
    self.assertIsNone(result.confirmed)
    self.assertEqual(result.confirmation_probes, ())

  def testLatencyEqualToCapStopsAndIsNotAnAnswer(self):
    script = Script({1: (50e3, 0.5), 2: (140e3, 1.0), 3: (150e3, 0.9)})
    result = Linear(script)
    self.assertEqual(len(result.probes), 2)
    self.assertFalse(result.probes[1].under_cap)
    self.assertEqual(result.best.throughput, 50e3)

  def testAnswerIsHighestThroughputUnderCapNotTheLast(self):
    # A dip before the cap must not hide the earlier peak.
    script = Script({1: (100e3, 0.3), 2: (134e3, 0.5), 3: (110e3, 0.8),
                     4: (120e3, 0.95), 5: (125e3, 1.2)})
    result = Linear(script)
    self.assertEqual(result.best.load.threads, 2)
    self.assertEqual(len(result.probes), 5)

  def testStopsAtMaxThreadsWithoutStretchingTheLastStep(self):
    script = Script({t: (10e3 * t, 0.1 * t) for t in range(1, 20)})
    result = Linear(script, min_threads=1, max_threads=8, thread_increment=3)
    self.assertEqual([l.threads for l in script.loads], [1, 4, 7])
    self.assertIn('reached max_threads=8', result.stop_reason)
    self.assertEqual(result.best.load.threads, 7)

  def testSingleProbeWhenMinEqualsMax(self):
    script = Script({3: (10e3, 0.1)})
    result = Linear(script, min_threads=3, max_threads=3)
    self.assertEqual(len(result.probes), 1)
    self.assertEqual(result.best.load, Load(3, 4))

  def testFirstProbeOverCapStepsDownHalvingConnections(self):
    # Latency by Little's law at 40k ops/s: 8 connections 0.2 ms, 16 0.4,
    # 32 0.8, 64 1.6. The first step (2 threads x 32) is over a 0.5 ms cap;
    # the walk halves clients per thread until a probe is under it.
    class Closed:
      def __init__(self):
        self.loads = []

      def __call__(self, load):
        self.loads.append(load)
        return measurement.Measurement(
            load, 40e3, load.connections / 40e3 * 1000, duration_s=2,
            ops=80e3)

    script = Closed()
    result = Linear(script, cap_ms=0.5, min_threads=2, max_threads=8,
                    clients=32)
    self.assertEqual([l.Describe() for l in script.loads],
                     ['2x32', '2x16', '2x8'])
    self.assertEqual(result.best.load, Load(2, 8))
    self.assertIn('stepped down', result.stop_reason)
    self.assertEqual(result.capped_throughput, 40e3)

  def testStepDownGoesToOneConnectionThenGivesUp(self):
    script = Script({t: (10e3, 2.5) for t in range(1, 5)})
    result = Linear(script, min_threads=4, max_threads=8, clients=2)
    # 4x2 -> 4x1 -> 2x1 -> 1x1, every one over the cap.
    self.assertEqual([l.Describe() for l in script.loads],
                     ['4x2', '4x1', '2x1', '1x1'])
    self.assertIsNone(result.best)
    self.assertIsNone(result.capped_throughput)
    self.assertTrue(result.all_over_cap)
    self.assertIn('still over at 1x1', result.stop_reason)
    self.assertIn('no probe was under the cap', result.stop_reason)

  def testMachineCurveWalk(self):
    script = Script()
    result = Linear(script, max_threads=64, pipeline=1)
    crossing_threads = next(
        t for t in range(1, 65) if 4e3 * t / MachineThroughput(4 * t) >= 1.0)
    self.assertEqual(len(result.probes), crossing_threads)
    self.assertEqual(result.best.load.connections, 32)  # the peak
    self.assertEqual(result.probe_seconds, 5.0 * crossing_threads)

  def testPipelineIsPassedThrough(self):
    script = Script({1: (10e3, 0.5), 2: (10e3, 1.5)})
    Linear(script, pipeline=8)
    self.assertEqual(script.loads[0], Load(1, 4, 8))

  def testPolicyIsReusable(self):
    policy = linear.LinearStepPolicy(1, 64, 1, 4)
    first = search_driver.FindLatencyCappedMaximum(Script(), 1.0, policy)
    second = search_driver.FindLatencyCappedMaximum(Script(), 1.0, policy)
    self.assertEqual(first, second)


class LinearValidationTest(unittest.TestCase):

  def assertRejects(self, fragment, **kwargs):
    arguments = dict(min_threads=1, max_threads=10, thread_increment=1,
                     clients=4)
    arguments.update(kwargs)
    with self.assertRaises(ValueError) as context:
      linear.LinearStepPolicy(**arguments)
    self.assertIn(fragment, str(context.exception))

  def testBadArguments(self):
    self.assertRejects('min_threads=5 is above max_threads=2', min_threads=5,
                       max_threads=2)
    self.assertRejects('thread_increment=0', thread_increment=0)
    self.assertRejects('thread_increment=-2', thread_increment=-2)
    self.assertRejects('min_threads=0', min_threads=0)
    self.assertRejects('clients=0', clients=0)
    self.assertRejects('pipeline=0', pipeline=0)
    self.assertRejects('thread_increment=1.5', thread_increment=1.5)

  def testBadCap(self):
    for cap in (0, -1.0, float('nan'), float('inf')):
      script = Script()
      with self.assertRaises(ValueError) as context:
        Linear(script, cap_ms=cap)
      self.assertIn(f'cap_ms={cap!r}', str(context.exception))
      self.assertEqual(script.loads, [])

  def testBadBudget(self):
    with self.assertRaisesRegex(ValueError, 'max_probes=0'):
      Linear(Script(), max_probes=0)

  def testErrorIsAlsoAUsageError(self):
    # pkb shows UsageErrors as one line before provisioning anything.
    with self.assertRaises(errors.UsageError):
      linear.LinearStepPolicy(2, 1, 1, 1)


class _EndlessPolicy:
  """Never stops on its own: only the driver's budget ends it."""
  NAME = 'endless'

  def Steps(self, cap_ms):
    threads = 1
    while True:
      yield search_driver.ProbeRequest(Load(threads, 1))
      threads += 1


class _ScriptedPolicy:
  """Asks for fixed loads, then returns a fixed Outcome."""
  NAME = 'scripted'

  def __init__(self, loads, outcome, roles=None):
    self._loads = loads
    self._outcome = outcome
    self._roles = roles or [search_driver.ROLE_SEARCH] * len(loads)

  def Steps(self, cap_ms):
    for load, role in zip(self._loads, self._roles):
      yield search_driver.ProbeRequest(load, role, 'scripted')
    return self._outcome


class DriverTest(unittest.TestCase):

  def testProbeBudgetEndsAPolicyThatNeverStops(self):
    script = Script({t: (1000.0 * t, 0.1 * t) for t in range(1, 100)})
    result = search_driver.FindLatencyCappedMaximum(
        script, 1.0, _EndlessPolicy(), max_probes=15)
    self.assertEqual(len(result.probes), 15)
    self.assertIn('probe budget of 15 exhausted', result.stop_reason)
    self.assertEqual(result.best.load.threads, 9)  # 0.9 ms; 1.0 is not under
    self.assertEqual([p.index for p in result.probes], list(range(15)))

  def testProbeBudgetWithNothingUnderTheCapNamesNoLoad(self):
    script = Script({t: (1000.0 * t, 2.0) for t in range(1, 100)})
    result = search_driver.FindLatencyCappedMaximum(
        script, 1.0, _EndlessPolicy(), max_probes=3)
    self.assertIsNone(result.best)
    self.assertIn('probe budget of 3 exhausted', result.stop_reason)
    self.assertIn('no probe was under the cap', result.stop_reason)
    self.assertNotIn('the answer is the load', result.stop_reason)

  def testConfirmationStatistics(self):
    script = Script({1: (100e3, 0.5), 2: (110e3, 0.6), 3: (120e3, 0.7),
                     4: (90e3, 0.9)})
    roles = ['search'] + ['confirm'] * 3
    outcome = search_driver.Outcome('done', 0, (1, 2, 3))
    result = search_driver.FindLatencyCappedMaximum(
        script, 1.0, _ScriptedPolicy([Load(t, 1) for t in (1, 2, 3, 4)],
                                     outcome, roles))
    self.assertAlmostEqual(result.confirmed.throughput, 320e3 / 3)
    # t(0.975, 2) = 4.30265 (scipy), sd of the three repeats, sqrt(3).
    expected_ci = 4.30265 * statistics.stdev([110e3, 120e3, 90e3]) / math.sqrt(3)
    self.assertAlmostEqual(result.confirmed_throughput_ci95, expected_ci,
                           delta=1.0)
    self.assertAlmostEqual(result.confirmed.average_latency_ms,
                           (110 * 0.6 + 120 * 0.7 + 90 * 0.9) / 320)
    self.assertEqual(result.capped_throughput,
                     result.confirmed.throughput)
    self.assertEqual(len(result.search_probes), 1)
    self.assertEqual(result.probe_seconds, 20.0)
    self.assertEqual(result.probes[1].note, 'scripted')

  def testPolicyMayNotNameAnOverCapAnswer(self):
    script = Script({1: (100e3, 1.5)})
    policy = _ScriptedPolicy([Load(1, 1)], search_driver.Outcome('x', 0))
    with self.assertRaisesRegex(ValueError, 'not under the 1.0 ms cap'):
      search_driver.FindLatencyCappedMaximum(script, 1.0, policy)

  def testPolicyMayNotAskForAnEmptyLoad(self):
    policy = _ScriptedPolicy([Load(1, 0)], search_driver.Outcome('x'))
    with self.assertRaisesRegex(ValueError, 'at least 1'):
      search_driver.FindLatencyCappedMaximum(Script(), 1.0, policy)

  def testPolicyMustReturnAnOutcome(self):
    policy = _ScriptedPolicy([Load(1, 1)], None)
    with self.assertRaisesRegex(TypeError, 'Outcome'):
      search_driver.FindLatencyCappedMaximum(Script(), 1.0, policy)

  def testMeasureErrorsPropagate(self):
    def Broken(load):
      raise RuntimeError('memtier died')
    with self.assertRaisesRegex(RuntimeError, 'memtier died'):
      search_driver.FindLatencyCappedMaximum(Broken, 1.0, _EndlessPolicy())

  def testResultIsFrozen(self):
    result = Linear(Script({1: (10e3, 2.0)}))
    with self.assertRaises(AttributeError):
      result.best = None


class StatisticsTest(unittest.TestCase):

  def testStudentT(self):
    self.assertAlmostEqual(stats.StudentT95(2), 4.303, places=3)
    self.assertAlmostEqual(stats.StudentT95(30), 2.042, places=3)
    self.assertAlmostEqual(stats.StudentT95(60), 2.000, delta=0.003)
    self.assertAlmostEqual(stats.StudentT95(120), 1.980, delta=0.003)
    with self.assertRaises(ValueError):
      stats.StudentT95(0)

  def testStudentTIsScipyStatsValue(self):
    # StudentT95 uses scipy.special (a lighter import); scipy.stats' t.ppf
    # is the reference it must equal. Imported here: not at every collection.
    from scipy import stats as scipy_stats  # pylint: disable=g-import-not-at-top
    for df in list(range(1, 101)) + [250, 1000, 10**6]:
      self.assertAlmostEqual(stats.StudentT95(df),
                             scipy_stats.t.ppf(0.975, df), places=12, msg=df)

  def testMeanAndCi(self):
    mean, half_width = stats.MeanAndCi95([1.0, 2.0, 3.0])
    self.assertEqual(mean, 2.0)
    self.assertAlmostEqual(half_width, 4.303 / math.sqrt(3), places=3)
    self.assertEqual(stats.MeanAndCi95([5.0]), (5.0, None))

  def testWeightedLatencyWithoutCountsUsesThroughputTimesDuration(self):
    results = [measurement.Measurement(Load(1, 1), 1.0, 1.0, duration_s=1),
               measurement.Measurement(Load(1, 1), 3.0, 3.0, duration_s=1)]
    # 1 op at 1 ms and 3 ops at 3 ms: (1 + 9) / 4.
    self.assertEqual(measurement.WeightedAverageLatencyMs(results), 2.5)

  def testWeightedLatencyWeightsByOperationCounts(self):
    results = [measurement.Measurement(Load(1, 1), 100.0, 1.0, ops=100),
               measurement.Measurement(Load(1, 1), 300.0, 3.0, ops=300)]
    self.assertEqual(measurement.WeightedAverageLatencyMs(results), 2.5)


if __name__ == '__main__':
  unittest.main()
