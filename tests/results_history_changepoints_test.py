"""Change points on histories generated from real sample rows.

Each history replays the real runs in tests/data/history night after night
with 2-3 % night-to-night noise per cell (tests/synthetic_history.py); one has a 10 % step
in one cell. The detector must flag exactly that cell's throughput series
(capped throughput and ops/s per $/hr, which move together) at exactly that
night, and nothing on noise alone. The same histories also go through
scripts/compare.py as PKB JSON-lines files.
"""

import os
import sys
import warnings

import pandas as pd
import pytest

from perfkitbenchmarker.results_history import changepoints
from perfkitbenchmarker.results_history import leaderboard
from perfkitbenchmarker.results_history import loader
from perfkitbenchmarker.results_history import nights
from perfkitbenchmarker.results_history import report
import synthetic_history as synthetic
import script_modules

HERE = os.path.dirname(os.path.abspath(__file__))
HISTORY = os.path.join(HERE, 'data', 'history')
COMPARE = os.path.join(os.path.dirname(HERE), 'scripts', 'compare.py')
STEP_NIGHT = 20
NIGHTS = 30


@pytest.fixture(scope='module')
def templates():
  return synthetic.TemplateRuns(leaderboard.Prepare(loader.Load([HISTORY])))


@pytest.fixture(scope='module')
def compare():
  return script_modules.Load(COMPARE, 'compare_script')


def _History(templates, seed, step_cell=None, step=-0.10):
  spec = synthetic.HistorySpec(nights=NIGHTS, step_cell=step_cell,
                               step_night=STEP_NIGHT, step=step, seed=seed)
  return nights.AssignNights(synthetic.Generate(templates, spec))


def _Detect(history):
  with warnings.catch_warnings():
    warnings.simplefilter('ignore', RuntimeWarning)
    # The recorded runs are client-bound (2 cores): counted only when asked.
    return changepoints.Detect(changepoints.HistoryPoints(
        history, include_unconfirmed=True))


@pytest.mark.parametrize('seed', [11, 12, 13])
def test_a_ten_percent_step_is_flagged_in_exactly_its_series_and_night(
    templates, seed):
  cell = sorted(templates['cell'].unique())[seed % 5]
  history = _History(templates, seed, step_cell=cell)
  found = _Detect(history)
  step_night = nights.Nights(history)[STEP_NIGHT]
  assert {(c.cell, c.metric) for c in found} == synthetic.SeriesOf(cell)
  assert {c.night for c in found} == {step_night}
  for c in found:
    assert c.regression and c.direction == 'regression'
    assert -14 < c.change_pct < -6
    assert c.pvalue < 1e-4
    assert c.nights_ago == NIGHTS - 1 - STEP_NIGHT
    assert 1.0 < c.noise_pct < 4.5  # the 2-3 % noise, measured


@pytest.mark.parametrize('seed', [21, 22, 23, 24])
def test_noise_alone_flags_nothing(templates, seed):
  assert _Detect(_History(templates, seed)) == []


def test_a_rise_in_throughput_is_an_improvement(templates):
  cell = sorted(templates['cell'].unique())[0]
  found = _Detect(_History(templates, 31, step_cell=cell, step=0.10))
  assert found and all(not c.regression for c in found)
  assert {c.metric for c in found} == {'latency_capped_throughput',
                                       'price_performance'}


def _Points(values_by_cell, metric):
  rows = []
  for cell, values in values_by_cell.items():
    for i, value in enumerate(values):
      start = pd.Timestamp('2026-01-01', tz='UTC') + pd.Timedelta(days=i)
      rows.append({'machine_type': cell, 'engine': 'redis', 'topology': 't',
                   'workload': 'w', 'cell': cell, 'metric': metric,
                   'night': start.strftime('%Y-%m-%d'), 'night_start': start,
                   'value': value, 'runs': 1})
  return pd.DataFrame(rows)


def test_higher_latency_and_cost_are_regressions_latest_first():
  flat = [1.0, 1.02, 0.99, 1.01, 0.98, 1.0, 1.01, 0.99]
  later_up = flat + [1.5, 1.52, 1.49, 1.5]
  earlier_up = flat[:4] + [1.5, 1.52, 1.49, 1.5, 1.51, 1.5, 1.49, 1.5]
  latency = _Points({'late': later_up, 'early': earlier_up}, 'p99_latency_ms')
  cost = _Points({'price': [0.5] * 6 + [0.45] * 6}, 'hourly_cost')
  found = changepoints.Detect(pd.concat([latency, cost], ignore_index=True))
  assert [(c.cell, c.regression) for c in found] == [
      ('late', True), ('early', True), ('price', False)]
  assert found[0].night == '2026-01-09' and found[0].nights_ago == 3
  assert found[2].change_pct == pytest.approx(-10.0)


def test_a_history_too_short_for_any_series_needs_no_otava(monkeypatch):
  """otava (and scipy under it, 0.8 CPU-s) is imported only for a series of
  changepoints.MIN_NIGHTS nights or more: most reports, of a night or a few,
  never need it."""
  short = [1.0] * (changepoints.MIN_NIGHTS - 1)
  points = _Points({'a': short, 'b': short}, 'p99_latency_ms')
  for name in ('otava', 'otava.series'):  # Importing them fails.
    monkeypatch.setitem(sys.modules, name, None)
  assert changepoints.Detect(points) == []
  with pytest.raises(ImportError):
    changepoints.Detect(_Points({'a': short + [1.0]}, 'p99_latency_ms'))


def test_compare_flags_the_step_from_files_and_fails_on_it(
    templates, compare, tmp_path, capsys):
  cell = sorted(templates['cell'].unique())[2]
  history = _History(templates, 12, step_cell=cell)
  synthetic.WriteJsonLines(history, str(tmp_path / 'history.json'))
  step_night = nights.Nights(history)[STEP_NIGHT]
  # Every run replays client-bound recordings: left out of change points
  # unless asked for, so the step alone does not fail the night.
  assert compare.Main(['compare', str(tmp_path / 'history.json'),
                       '--fail_on_regression', '--recent_nights=10']) == 0
  assert 'REGRESSION ' not in capsys.readouterr().out
  code = compare.Main(['compare', str(tmp_path / 'history.json'),
                       '--fail_on_regression', '--recent_nights=10',
                       '--include_unconfirmed'])
  out = capsys.readouterr().out
  assert code == compare.EXIT_REGRESSION
  flagged = [l for l in out.splitlines() if l.startswith('REGRESSION ')]
  assert len(flagged) == 2
  machine, topology = cell.split(' | ')[0], cell.split(' | ')[2]
  for line in flagged:
    assert step_night in line and machine in line and topology in line
  # The step is 9 nights old: outside a 5-night window it no longer fails.
  assert compare.Main(['compare', str(tmp_path / 'history.json'),
                       '--fail_on_regression', '--recent_nights=5',
                       '--include_unconfirmed']) == 0
  # Without the flag a regression is reported but the exit code stays 0.
  assert compare.Main(['compare', str(tmp_path / 'history.json'),
                       '--include_unconfirmed']) == 0


def test_compare_on_noise_only_exits_zero(templates, compare, tmp_path,
                                          capsys):
  synthetic.WriteJsonLines(_History(templates, 22),
                           str(tmp_path / 'history.json'))
  code = compare.Main(['compare', str(tmp_path / 'history.json'),
                       '--fail_on_regression', '--include_unconfirmed'])
  out = capsys.readouterr().out
  assert code == 0
  assert 'No significant regression' in out and 'REGRESSION' not in out


def test_nights_ago_counts_the_nights_with_no_confirmed_answer(templates):
  # A stepped history whose answers were confirmed, then three nights whose
  # answers were not (the recorded runs' own verdict, client_bound): those
  # nights are the latest of the history, so the step is three nights older
  # than among the confirmed nights alone, and out of a window that short.
  spec = synthetic.HistorySpec(nights=NIGHTS + 3, step_cell=sorted(
      templates['cell'].unique())[0], step_night=STEP_NIGHT, seed=11)
  history = nights.AssignNights(synthetic.Generate(templates, spec))
  confirmed = history[nights.NIGHT_COLUMN].isin(
      nights.Nights(history)[:NIGHTS])
  history = history.assign(verdict=confirmed.map({True: 'confirmed',
                                                   False: None}))
  with warnings.catch_warnings():
    warnings.simplefilter('ignore', RuntimeWarning)
    analysis = report.Analyze(history, report.Settings(
        recent_nights=NIGHTS - STEP_NIGHT + 1))
  assert analysis.change_points
  assert {c.nights_ago for c in analysis.change_points} == {
      NIGHTS + 3 - 1 - STEP_NIGHT}
  assert analysis.recent_regressions == []
