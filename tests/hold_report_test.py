"""The hold in compare's views (issue 34 point 4): the board says how many
seconds each run's answer held, and the HTML page draws every hold second
by second (results_history/hold_chart.py), from two real recorded runs
(tests/data/hold_runs; README there)."""

import os

from perfkitbenchmarker.results_history import answers
from perfkitbenchmarker.results_history import hold_chart
from perfkitbenchmarker.results_history import html_page
from perfkitbenchmarker.results_history import leaderboard
from perfkitbenchmarker.results_history import loader
from perfkitbenchmarker.results_history import report

RUNS = os.path.join(os.path.dirname(__file__), 'data', 'hold_runs')


def _Frame():
  return leaderboard.Prepare(loader.Load([RUNS], keys=report.HistoryKeys()))


def test_each_runs_hold_is_its_seconds_and_words():
  holds = hold_chart.HoldSeries(_Frame()).set_index('run_uri')
  memtier = holds.loc['09a2fbfa']
  assert len(memtier['ops']) == len(memtier['latency']) == 10
  # 6 of its 10 seconds at or over the 5 ms cap, as its words say.
  assert sum(ms >= memtier['cap'] for ms in memtier['latency']) == 6
  assert memtier['words'].startswith('held 4 of 10 s under the 5 ms avg cap')
  assert abs(memtier['searched'] - 14972) < 1  # its capped figure
  quota = holds.loc['sqbec38ed9']
  assert quota['words'].startswith('held 3 of 3 s')
  assert len(quota['ops']) == 3


def test_board_and_page_show_the_hold():
  frame = _Frame()
  runs = answers.RunAnswers(frame).set_index('run_uri')
  assert runs.loc['sqbec38ed9', 'hold'].startswith('held 3 of 3 s')
  assert answers.HoldSummary(runs.loc[['sqbec38ed9']]) == 'held 3 of 3 s'
  analysis = report.Analyze(frame, report.Settings(include_unconfirmed=True))
  rows = report.LeaderboardCells(analysis.board)
  assert any('held 3 of 3 s' in r['answer'] for r in rows), rows
  assert any('held 4 of 10 s' in r['answer'] for r in rows), rows
  html = html_page.RenderHtml(analysis)
  assert '<h2 id="hold">The answer held</h2>' in html
  fig = hold_chart.HoldFigure(analysis.night_frame)
  crosses = [c for ax in fig.axes for c in ax.collections]
  assert sum(len(c.get_offsets()) for c in crosses) == 6  # seconds over cap


def test_no_hold_no_chart():
  frame = _Frame()
  without = frame[frame['probe_role'] != 'hold']
  assert hold_chart.HoldChart(without) is None


def test_the_chart_draws_the_answers_own_hold_of_several():
  # A search that backed off from a failed hold held two loads; when the
  # back-off's hold failed too, the answer stayed the first load, so its
  # hold is not the run's last one. The chart draws the answer's (its
  # samples' hold_probe_index), not whichever hold came last.
  import pandas as pd  # pylint: disable=g-import-not-at-top

  def Series(index, ops):
    return [{'cell': 'c', 'run_uri': 'r1', 'probe_role': 'hold',
             'probe_index': str(index), 'metric': metric, 'values': values,
             'latency_cap_ms': '1.0'}
            for metric, values in ((hold_chart.OPS_SERIES, str(ops)),
                                   (hold_chart.LATENCY_SERIES,
                                    str([0.9] * len(ops))))]

  frame = pd.DataFrame(Series(6, [25.0, 26.0, 24.0]) +
                       Series(11, [20.0, 21.0, 19.0]))
  runs = pd.DataFrame([{'run_uri': 'r1', 'cell': 'c', 'capped_ops': 32.0,
                        'hold': 'held 1 of 3 s', 'hold_index': 6.0}])
  hold, = hold_chart.HoldSeries(frame, runs).to_dict('records')
  assert hold['ops'] == [25.0, 26.0, 24.0]
  # Runs recorded before the index was published: the last hold, as before.
  runs['hold_index'] = float('nan')
  hold, = hold_chart.HoldSeries(frame, runs).to_dict('records')
  assert hold['ops'] == [20.0, 21.0, 19.0]


def test_a_hold_without_a_recorded_cap_is_drawn_without_one():
  # No latency_cap_ms column at all (none of the samples recorded one): the
  # hold has no cap, as for a cap recorded as no number.
  import pandas as pd  # pylint: disable=g-import-not-at-top
  frame = pd.DataFrame([{'cell': 'c', 'run_uri': 'r1', 'probe_role': 'hold',
                         'metric': metric, 'values': values}
                        for metric, values in (
                            (hold_chart.OPS_SERIES, '[25.0, 26.0]'),
                            (hold_chart.LATENCY_SERIES, '[0.9, 1.1]'))])
  runs = pd.DataFrame(columns=['run_uri', 'cell', 'capped_ops', 'hold',
                               'hold_index'])
  hold, = hold_chart.HoldSeries(frame, runs).to_dict('records')
  assert hold['ops'] == [25.0, 26.0] and hold['cap'] is None
