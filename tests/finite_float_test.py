"""One reader of an optional figure: measurement.FiniteFloat.

Five parsers had one each (results_history answers, recompute, ycsb and
redis-benchmark output, client_cpu's cgroup files), each with its own rule
for NaN and infinity; now a missing, unreadable, NaN or infinite figure is
no figure (None) everywhere.
"""

import math

import pytest

from perfkitbenchmarker import measurement
from perfkitbenchmarker import recompute
from perfkitbenchmarker.load_generators import redis_benchmark_results


@pytest.mark.parametrize('value, number', [
    ('1.5', 1.5), (' 2 ', 2.0), (3, 3.0), ('1e3', 1000.0), ('-0.25', -0.25),
    (None, None), ('', None), ('max', None), ('n/a', None), ([], None),
    ('nan', None), (math.nan, None), ('inf', None), ('-Infinity', None),
    (math.inf, None)])
def test_a_figure_or_none(value, number):
  assert measurement.FiniteFloat(value) == number


def test_no_figure_agrees_only_with_no_figure():
  assert recompute.Agree(None, 'nan') and recompute.Agree('nan', math.nan)
  assert not recompute.Agree(None, 0)
  assert recompute.Agree('100.0', 100)
  # An infinite figure was taken as agreeing with any finite one
  # (|inf - 5| <= 1e-6 x inf).
  assert not recompute.Agree(math.inf, 5)


def test_a_parser_reads_no_figure_as_none():
  # redis-benchmark's latency summary with a figure it could not give.
  result, = redis_benchmark_results.ParseOutput(
      '====== SET ======\n'
      'throughput summary: 1000.00 requests per second\n'
      'latency summary (msec):\n'
      '        avg       min       p50       p95       p99       max\n'
      '        nan     0.100     0.200     0.300     0.400       inf\n')
  assert result.rps == 1000.0
  assert (result.avg_latency_ms, result.min_latency_ms,
          result.max_latency_ms) == (None, 0.1, None)
