"""Smoke test of the search bench on the server model (no Redis, seconds).

Runs every model scenario of scripts/bench_search.py a few times with the
stored quiet sweep's fit, checks the model's shape (Little's law, the
client limit), the fit's error, upstream PKB's search as a policy, and that
ours stays within the issue's targets on the model.
"""

import os
import random
import sys

import pytest

_SCRIPTS = os.path.join(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))), 'scripts')
sys.path.insert(0, _SCRIPTS)

# pylint: disable=g-import-not-at-top,wrong-import-position
import bench_search
import search_model
from perfkitbenchmarker import measurement
from perfkitbenchmarker.search import driver as search_driver


@pytest.fixture(scope='module')
def fit():
  points, _ = search_model.LoadSweep(bench_search.FIXTURE)
  return search_model.Fit(points)


def test_fit_to_the_stored_sweep_is_within_five_percent(fit):
  assert fit.throughput_rms_pct < 5
  assert fit.latency_rms_pct < 5
  assert 'fit error' in fit.Lines()[-1]


def test_model_obeys_littles_law_and_the_client_limit():
  model = search_model.ServerModel('m', peak_ops=1e6, base_latency_ms=0.2,
                                   client_ops_per_thread=3e5,
                                   client_max_threads=2)
  light = measurement.Load(1, 2, 1)
  ops, latency, _ = model.Expected(light)
  assert latency == pytest.approx(2 / ops * 1000)
  assert latency == pytest.approx(0.2, rel=0.1)
  heavy = measurement.Load(8, 400, 1)  # client limit: 2 threads x 300k
  ops, _, busy = model.Expected(heavy)
  assert ops < 6e5 and busy > search_model.SATURATED_FRACTION
  probe = model.Measure(heavy, 5, random.Random(1))
  assert probe.client_saturated and len(probe.per_second) == 5


def test_pkb_policy_binary_searches_pipeline_then_clients():
  model = search_model.ServerModel('m', peak_ops=1e6, base_latency_ms=0.2,
                                   run_noise=0, second_noise=0)
  result = search_driver.FindLatencyCappedMaximum(
      model.Measurer(60, random.Random(1)), 1.0,
      search_model.PkbMemtierPolicy(max_threads=4, max_clients=30))
  loads = [p.load for p in result.probes]
  assert loads[0] == measurement.Load(1, 1, 2500)
  assert loads[1] == measurement.Load(1, 1, 1250)  # 2500 was over the cap
  clients_phase = [l for l in loads if l.pipeline == 1]
  assert clients_phase[0] == measurement.Load(2, 30, 1)
  assert 10 <= len(result.probes) <= 25
  assert result.best is not None


def test_every_model_scenario_meets_the_targets(fit):
  for scenario in search_model.Scenarios(fit.model):
    truth, _, rows = bench_search.RunScenario(scenario, 6, seed=3)
    ours, step = rows['adaptive'], rows['stepup']
    assert truth > 0, scenario.name
    assert ours['found_pct'] >= 96, (scenario.name, ours)
    assert ours['probe_s'] <= 0.2 * step['probe_s'], (scenario.name, ours)
    cv_limit = scenario.model.ProbeCv(scenario.ours_seconds) * 100 * 1.5
    assert ours['cv_pct'] <= cv_limit, (scenario.name, ours)
    line = bench_search.SummaryLine(rows, f'scenario={scenario.name} ')
    assert line.startswith(f'scenario={scenario.name} found_pct=')
