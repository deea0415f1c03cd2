"""memtier's staircase mode: one run, one Measurement per client step.

A `--clients-start/--clients-step/--step-duration` run walks the clients per
thread up in steps; its per-second 'Time-Serie' says which step each second
belongs to. Pure parsing over memtier_results' records.
"""

import collections

from perfkitbenchmarker import json_input
from perfkitbenchmarker import measurement
from perfkitbenchmarker.load_generators.memtier_results import LOAD_GENERATOR
from perfkitbenchmarker.load_generators.memtier_results import MemtierCommandStats
from perfkitbenchmarker.load_generators.memtier_results import MixturePercentile


def StaircaseSteps(json_text: str, clients_start: int, clients_step: int,
                   step_duration_s: int, threads: int, pipeline: int,
                   warmup_s_per_step: int = 0) -> list[measurement.Measurement]:
  """One `Measurement` per client step of a `--clients-start` run.

  Second s ran with clients_start + clients_step * (s // step_duration_s)
  clients per thread (capped at --clients, as memtier does). Each step's
  figures come from its per-second Totals: throughput is its operations over
  its measured seconds, average latency is count-weighted, percentiles use
  `MixturePercentile`. The first `warmup_s_per_step` seconds of a step are
  kept in `per_second` but tagged as warm-up and left out of the figures.
  Seconds at or past the configured test time only drain replies in flight
  and are dropped. The run's last second is cut short (`_SecondLength`): it
  counts for its real length and is marked incomplete.
  """
  if not 0 <= warmup_s_per_step < step_duration_s:
    raise ValueError('warmup_s_per_step must be shorter than a step')
  doc = json_input.Loads(json_text)
  totals = MemtierCommandStats.FromJson(doc['ALL STATS']['Totals'])
  config = doc.get('configuration', {})
  max_clients, test_time = config.get('clients'), config.get('test_time')
  runtime = doc['ALL STATS'].get('Runtime', {})
  span_s = (runtime.get('Finish time', 0) - runtime.get('Start time', 0)) / 1000
  steps = collections.defaultdict(list)
  for s in totals.time_series:
    if test_time and s.second >= test_time:
      continue
    clients = clients_start + clients_step * (s.second // step_duration_s)
    steps[min(clients, max_clients) if max_clients else clients].append(s)
  found = []
  for index, clients in enumerate(sorted(steps)):
    seconds = steps[clients]
    first = seconds[0].second
    warm = {s.second for s in seconds if s.second - first < warmup_s_per_step}
    measured = [s for s in seconds if s.second not in warm]
    ops = sum(s.count for s in measured)
    duration_s = sum(_SecondLength(s.second, span_s) for s in measured)
    if not ops or duration_s <= 0:
      continue
    found.append(measurement.Measurement(
        load=measurement.Load(threads, clients, pipeline),
        throughput=ops / duration_s,
        average_latency_ms=sum(s.total_latency_ms for s in measured) / ops,
        **measurement.PercentileFields(
            lambda p, seconds=measured: MixturePercentile(seconds, p)),
        duration_s=duration_s, ops=ops,
        # Each second's percentiles too: a percentile cap holds every
        # second of a step to it, as it does a probe's.
        per_second=tuple(measurement.SecondStats(
            s.second, s.count, s.average_latency_ms, warmup=s.second in warm,
            percentiles=s.percentiles,
            complete=_SecondLength(s.second, span_s) >= 1) for s in seconds),
        metadata={'load_generator': LOAD_GENERATOR, 'staircase_step': index,
                  'warmup_s': warmup_s_per_step,
                  'latency_basis': 'per_second_accumulated_latency',
                  'percentile_basis': 'per_second_cdf_mixture'}))
  return found


def _SecondLength(second: int, span_s: float) -> float:
  """How long `second` of a staircase run was loaded, from the JSON's
  Start/Finish span (without a span: a whole second).

  memtier ends a staircase run once the wall clock's whole seconds since
  its start reach the test time (client.cpp, client::finished), so its last
  second lasts only what the start's fraction of a second left of it:
  0.88 s in tests/data's run, as little as a few ms. Counted as a whole
  second, it understated the last step's throughput (by up to half for a
  2 s step) and swung the step's seconds.
  """
  if span_s <= 0:
    return 1.0
  return min(1.0, max(0.0, span_s - second))
