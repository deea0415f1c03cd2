"""Tests for the shard-count hill-climb, with scripted evaluations."""

import unittest

from perfkitbenchmarker import measurement
from perfkitbenchmarker.search import driver as search_driver
from perfkitbenchmarker.search import linear
from perfkitbenchmarker.search import shards


class Recorder:
  """An `evaluate` callable answering from a function, remembering calls."""

  def __init__(self, function):
    self._function = function
    self.calls = []

  def __call__(self, shards):
    self.calls.append(shards)
    return self._function(shards)


def Peaked(peak, height=100e3, slope=8e3):
  """Capped throughput rising to `peak` shards, then falling off."""
  return lambda shards: height - slope * abs(shards - peak)


def CappedSearch(throughput, latency_ms=0.5):
  """A one-probe SearchResult whose probe has these figures."""
  def Measure(load):
    return measurement.Measurement(load, throughput, latency_ms, duration_s=5)
  return search_driver.FindLatencyCappedMaximum(
      Measure, 1.0, linear.LinearStepPolicy(1, 1, 1, 4))


class OptimizeShardCountTest(unittest.TestCase):

  def assertNoRepeats(self, recorder, result):
    self.assertEqual(len(set(recorder.calls)), len(recorder.calls))
    self.assertEqual(list(result.evaluated_shards), recorder.calls)

  def testClimbsToThePeak(self):
    for peak in (1, 3, 6, 8, 13, 16):
      recorder = Recorder(Peaked(peak))
      result = shards.OptimizeShardCount(recorder, 8, max_shards=16)
      self.assertEqual(result.best.shards, peak, result.evaluated_shards)
      self.assertIn(f'local maximum at {peak} shards', result.stop_reason)
      self.assertNoRepeats(recorder, result)
      self.assertLess(len(recorder.calls), 10)  # of 16 possible

  def testStartAtThePeakChecksOnlyNeighbours(self):
    recorder = Recorder(Peaked(4))
    result = shards.OptimizeShardCount(recorder, 4, max_shards=8)
    self.assertEqual(recorder.calls, [4, 6, 2, 5, 3])
    self.assertEqual(result.best.shards, 4)

  def testMonotonicGoesToTheBound(self):
    recorder = Recorder(lambda shards: 10e3 * shards)
    result = shards.OptimizeShardCount(recorder, 2, max_shards=7)
    self.assertEqual(result.best.shards, 7)
    self.assertNoRepeats(recorder, result)

  def testSmallImprovementsAreNoise(self):
    # Each extra shard adds 1 %: below a 2 % threshold the climb stays put.
    recorder = Recorder(lambda shards: 100e3 * (1 + 0.01 * shards))
    result = shards.OptimizeShardCount(
        recorder, 4, max_shards=5, initial_step=1, min_improvement=0.02)
    self.assertEqual(recorder.calls, [4, 5, 3])
    # The best point is still the highest measured.
    self.assertEqual(result.best.shards, 5)

  def testScoresSearchResults(self):
    figures = {1: 60e3, 2: 110e3, 3: 90e3}
    recorder = Recorder(lambda shards: CappedSearch(figures[shards]))
    result = shards.OptimizeShardCount(recorder, 1, max_shards=3)
    self.assertEqual(result.best.shards, 2)
    self.assertEqual(result.best.throughput, 110e3)
    self.assertIsInstance(result.best.search, search_driver.SearchResult)

  def testNoCappedThroughputIsWorst(self):
    # Too many shards: nothing got under the cap there.
    def Evaluate(shards):
      if shards >= 3:
        return CappedSearch(200e3, latency_ms=3.0)  # best is None
      return CappedSearch(50e3 * shards)
    recorder = Recorder(Evaluate)
    result = shards.OptimizeShardCount(recorder, 4, max_shards=6)
    self.assertEqual(result.best.shards, 2)
    self.assertIsNone(result.points[0].throughput)
    self.assertNoRepeats(recorder, result)

  def testNothingUnderCapAnywhere(self):
    recorder = Recorder(lambda shards: None)
    result = shards.OptimizeShardCount(recorder, 2, max_shards=3)
    self.assertIsNone(result.best)
    self.assertEqual(sorted(recorder.calls), [1, 2, 3])

  def testEvaluationBudget(self):
    recorder = Recorder(lambda shards: 10e3 * shards)
    result = shards.OptimizeShardCount(recorder, 1, max_shards=64,
                                             max_evaluations=3)
    self.assertEqual(len(recorder.calls), 3)
    self.assertIn('evaluation budget of 3', result.stop_reason)
    self.assertEqual(result.best.shards, max(recorder.calls))

  def testSingleAllowedCount(self):
    recorder = Recorder(Peaked(4))
    result = shards.OptimizeShardCount(recorder, 2, min_shards=2,
                                             max_shards=2)
    self.assertEqual(recorder.calls, [2])
    self.assertEqual(result.best.shards, 2)

  def testTiesPreferFewerShards(self):
    recorder = Recorder(lambda shards: 100e3)
    result = shards.OptimizeShardCount(recorder, 2, max_shards=4)
    self.assertEqual(result.best.shards, 1)

  def testBadArguments(self):
    evaluate = Recorder(Peaked(2))
    cases = [
        ('start=9 is outside [1, 8]', dict(start=9, max_shards=8)),
        ('start=0 is outside', dict(start=0, max_shards=8)),
        ('max_shards=1 is below min_shards=2',
         dict(start=2, min_shards=2, max_shards=1)),
        ('min_shards=0', dict(start=2, min_shards=0, max_shards=4)),
        ('initial_step=0', dict(start=2, max_shards=4, initial_step=0)),
        ('min_improvement=-0.1',
         dict(start=2, max_shards=4, min_improvement=-0.1)),
        ('max_evaluations=0', dict(start=2, max_shards=4, max_evaluations=0)),
    ]
    for fragment, kwargs in cases:
      with self.assertRaises(ValueError) as context:
        shards.OptimizeShardCount(evaluate, **kwargs)
      self.assertIn(fragment, str(context.exception))
    self.assertEqual(evaluate.calls, [])

  def testBadEvaluation(self):
    with self.assertRaisesRegex(TypeError, 'evaluate\\(2\\) returned'):
      shards.OptimizeShardCount(lambda s: 'fast', 2, max_shards=4)


if __name__ == '__main__':
  unittest.main()
