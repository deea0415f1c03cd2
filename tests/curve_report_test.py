"""compare's latency-throughput curves, from two real runs' samples.

tests/data/curve_runs holds two real Local runs with a real memtier (see
tests/data/README.md, "Curve runs"), priced as two machine types: their
curve points (probe role `curve`) become one line per machine type from
its lowest rate to its answer, in an average and a p99 panel; points that
fell short of their rate are crosses; the points stay out of the probe
chart (whose rings mark probes at an answer's connections, which curve
points share). The page is then looked at in headless Chromium at 1400
and 800 px: the chart is there, not scaled below 85 %, and the page does
not overflow sideways.
"""

import json
import os
import re
import warnings

import numpy as np
import pandas as pd
import pytest

from perfkitbenchmarker.results_history import charts
from perfkitbenchmarker.results_history import html_page
from perfkitbenchmarker.results_history import leaderboard
from perfkitbenchmarker.results_history import loader
from perfkitbenchmarker.results_history import report

from headless_chromium import chromium  # pylint: disable=unused-import  (fixture)

RUNS = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'data',
                    'curve_runs')


@pytest.fixture(scope='module')
def analysis():
  frame = leaderboard.Prepare(loader.Load([RUNS], keys=report.HistoryKeys()))
  with warnings.catch_warnings():
    warnings.simplefilter('ignore', RuntimeWarning)
    return report.Analyze(frame, report.Settings(command_line='test',
                                                 include_unconfirmed=True))


def _Recorded():
  """(cell name part, percent) -> (achieved ops/s, avg ms, p99 ms, short)
  read straight from the JSON lines, for the chart to be checked against."""
  out = {}
  for run in os.listdir(RUNS):
    with open(os.path.join(RUNS, run, 'perfkitbenchmarker_results.json')) as f:
      for line in f:
        row = json.loads(line)
        labels = dict(re.findall(r'\|([^:|]+):([^|]*)\|', row['labels']))
        if (row['metric'] != 'throughput' or
            labels.get('probe_role') != 'curve'):
          continue
        out[(labels['local_priced_as'], int(labels['curve_percent']))] = (
            row['value'], float(labels['average_latency_ms']),
            float(labels['p99_latency_ms']),
            float(labels['rate_achieved_pct']) < 95)
  return out


def test_curve_points_per_machine_type_are_the_recorded_ones(analysis):
  points = charts.CurvePoints(analysis.night_frame)
  recorded = _Recorded()
  assert len(points) == len(recorded) == 8
  for _, row in points.iterrows():
    priced = next(p for p, _ in recorded if p.split(':')[1] in row['cell'])
    ops, avg, p99, short = recorded[(priced, int(row['curve_percent']))]
    assert row['throughput'] == pytest.approx(ops)
    assert row['average_latency'] == pytest.approx(avg, rel=1e-4)
    assert row['p99_latency_ms'] == pytest.approx(p99)
    assert bool(row['short_runs']) == short and row['runs'] == 1
  # The probe chart keeps only the searches' probes.
  pairs = charts.ProbePairs(analysis.night_frame)
  assert len(pairs) == 6 + 6 and (pairs['probe_role'] != 'curve').all()


def test_one_line_per_machine_type_ends_at_its_answer(analysis):
  fig = charts.LatencyCurvesFigure(analysis.night_frame)
  answers = charts.answers_lib.RunAnswers(analysis.night_frame)
  points = charts.CurvePoints(analysis.night_frame)
  avg_ax, p99_ax = fig.axes
  assert avg_ax.get_ylabel() == 'avg latency (ms)'
  assert p99_ax.get_ylabel() == 'p99 latency (ms)'
  for ax, column, answer_column in (
      (avg_ax, 'average_latency', 'avg_latency_ms'),
      (p99_ax, 'p99_latency_ms', 'p99_latency_ms')):
    lines = ax.get_lines()
    assert len(lines) == 2  # one per machine type, nothing else joined
    for line in lines:
      xs, ys = list(line.get_xdata()), list(line.get_ydata())
      answer = answers[np.isclose(answers['capped_ops'], xs[-1])]
      assert len(answer) == 1  # it ends at its answer
      assert ys[-1] == pytest.approx(answer[answer_column].iloc[0])
      mine = points[points['cell'] == answer['cell'].iloc[0]]
      assert xs[:-1] == pytest.approx(list(mine['throughput']))
      assert ys[:-1] == pytest.approx(list(mine[column]))
    # Crosses for the points that fell short, dots for the others.
    texts = [t.get_text() for t in ax.texts]
    assert sorted(texts) == sorted(['25 %', '50 %', '75 %', '90 %'] * 2)
    shorts = int(points['short_runs'].astype(bool).sum())
    crosses = [c for c in ax.collections
               if c.get_gid() == charts.CURVE_SHORT_GID]
    assert sum(c.get_offsets().shape[0] for c in crosses) == shorts > 0
  legend = [t.get_text() for t in fig.legends[0].get_texts()]
  assert legend[:2] == sorted(legend[:2]) and all(
      'local as GCP:n2d-standard-' in name for name in legend[:2])
  assert charts.CURVE_SHORT_LABEL in legend
  assert charts.UNCONFIRMED_LABEL in legend


def test_the_page_has_the_chart_with_what_it_shows(analysis):
  html = html_page.RenderHtml(analysis)
  assert 'Latency-throughput curves' in html
  assert re.search(r'probe_role curve, each at a fixed offered rate', html)
  figure = re.search(r'<h2 id="latency-curves">Latency-throughput curves'
                     r'</h2>\n<figure>\n<img src="data:image/png;base64,'
                     r'[^"]+" alt="Latency against achieved throughput', html)
  assert figure
  # After the probes' chart, before the history.
  assert (html.index('id="probe-curves"') < figure.start() <
          html.index('id="history-'))


def test_no_curve_no_chart(analysis):
  frame = analysis.night_frame[analysis.night_frame['probe_role'] !=
                               'curve']
  assert charts.CurvePoints(frame).empty
  html = html_page.RenderHtml(report.Analysis(**{
      **analysis.__dict__, 'night_frame': frame}))
  assert 'Latency-throughput curves' not in html


MEASURE = """<script>
window.addEventListener('load', () => {
  const img = document.getElementById('latency-curves')
      .nextElementSibling.querySelector('img');
  document.body.setAttribute('data-curve', JSON.stringify({
      natural: img.naturalWidth, shown: img.getBoundingClientRect().width,
      page: document.documentElement.scrollWidth,
      viewport: window.innerWidth}));
});
</script></body>"""


@pytest.mark.e2e
@pytest.mark.parametrize('width', [1400, 800])
def test_the_chart_reads_in_chromium(
    analysis, chromium, tmp_path, width):  # pylint: disable=redefined-outer-name
  page = tmp_path / 'report.html'
  page.write_text(html_page.RenderHtml(analysis).replace('</body>', MEASURE))
  dom = chromium.Dom(f'file://{page}', width, 1200)
  seen = json.loads(re.search(r'data-curve="([^"]*)"', dom).group(1)
                    .replace('&quot;', '"').replace('&amp;', '&'))
  assert seen['natural'] > 700, seen  # the PNG loaded
  assert seen['page'] <= seen['viewport'], seen
  assert seen['shown'] >= 0.85 * min(seen['natural'], seen['viewport'] - 40)
  # The screenshot, kept in the test's directory to look at.
  chromium.Screenshot(f'file://{page}', tmp_path / f'curve-{width}.png', width,
                      3000)
  assert (tmp_path / f'curve-{width}.png').stat().st_size > 10000


def test_a_percentile_cap_is_the_left_panel(analysis):
  # The same runs as if capped on p95: every sample names p95 and gives
  # its p95 figure as capped_latency_ms (here 1.5 x the average, made up
  # for the chart; the runs' own were average-capped).
  frame = analysis.night_frame.copy()
  frame['latency_cap_statistic'] = 'p95'
  frame['capped_latency_ms'] = 1.5 * pd.to_numeric(
      frame['average_latency_ms'], errors='coerce')
  points = charts.CurvePoints(frame)
  assert charts.CurveStatistic(points) == 'p95'
  fig = charts.LatencyCurvesFigure(frame)
  left, right = fig.axes
  assert left.get_ylabel() == 'p95 latency (ms)'
  assert right.get_ylabel() == 'p99 latency (ms)'
  capped = frame[frame['metric'] == 'latency_capped_throughput']
  for line in left.get_lines():
    xs, ys = list(line.get_xdata()), list(line.get_ydata())
    mine = points[np.isclose(points['throughput'], xs[0])]
    cell = mine['cell'].iloc[0]
    assert ys[:-1] == pytest.approx(
        list(points[points['cell'] == cell]['capped_latency_ms']))
    assert ys[-1] == pytest.approx(
        capped[capped['cell'] == cell]['capped_latency_ms'].iloc[-1])
  # p99 capped: the left panel stays the average (p99 is on the right).
  frame['latency_cap_statistic'] = 'p99'
  assert charts.CurveStatistic(charts.CurvePoints(frame)) is None
  assert charts.LatencyCurvesFigure(frame).axes[0].get_ylabel() == (
      'avg latency (ms)')
