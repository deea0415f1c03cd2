"""The compare report as one self-contained HTML page that reads anywhere.

A view of `report.Analysis` (templates/report.html.j2): tables in horizontal
scroll boxes (a narrow screen scrolls instead of cutting columns off), the
charts in one colour per cell, provenance once, and under each figure one
line saying what it shows and which runs it covers. A new figure is one more
entry in `_Figures`.
"""

import datetime
from typing import Any, Dict, List, Optional

from perfkitbenchmarker.results_history import changepoints as cp_lib
from perfkitbenchmarker.results_history import charts as charts_lib
from perfkitbenchmarker.results_history import hold_chart
from perfkitbenchmarker.results_history import report


def _Figures(analysis: report.Analysis,
             colors: Dict[str, str]) -> List[Dict[str, Any]]:
  figures = []
  runs = analysis.night_frame['run_uri'].nunique()
  tonight = f'night {analysis.night}, {report.Count(runs, "run")}'
  # Cells without a price (Static VMs) have no bar; the table says so.
  priced = analysis.board[analysis.board['price_performance'].notna()] if (
      not analysis.board.empty) else analysis.board
  if not priced.empty:
    unpriced = len(analysis.board) - len(priced)
    figures.append({
        'id': 'price-performance', 'title': 'Ops/s per $/hr',
        'chart': charts_lib.PricePerformanceBars(priced, colors),
        'note': (f'{tonight}: metric price_performance (capped throughput / '
                 'hourly price of all server VMs), the mean of each cell\'s '
                 'counted runs\' own answers; error bars: 95 % interval '
                 '(within-run for one or two runs, across runs for three or '
                 'more); hatched: not confirmed'
                 + ('; one panel per workload, each on its own axis with '
                    'its own best' if priced['workload'].nunique() > 1
                    else '')
                 + (f'; {unpriced} cell(s) without a price left out'
                    if unpriced else ''))})
  figures.append({
      'id': 'probe-curves', 'title': 'Throughput vs latency',
      'chart': charts_lib.ProbeCurves(analysis.night_frame, colors,
                                      analysis.answers),
      'note': (f'{tonight}: throughput and average_latency of every probe, '
               'one point each (ringed: at the run\'s answer load); dashed: '
               'latency_cap_ms; star: each run\'s answer (white with a '
               'dashed red edge and "unconfirmed": not confirmed, not '
               'counted)')})
  curve = charts_lib.CurvePoints(analysis.night_frame)
  if not curve.empty:
    figures.append({
        'id': 'latency-curves', 'title': 'Latency-throughput curves',
        'chart': charts_lib.LatencyCurves(analysis.night_frame, colors,
                                          analysis.answers),
        'note': (f'{tonight}: probes with probe_role curve, each at a fixed '
                 'offered rate (percent of its run\'s answer, memtier '
                 '--rate-limiting per connection; latency timed from each '
                 'request\'s send), their achieved throughput against '
                 'average_latency (left; capped_latency_ms where the runs '
                 'were capped on p50, p90, p95 or p99.9) and p99_latency_ms '
                 '(right), means over each cell\'s runs; cross: a rate not '
                 'achieved (under 95 % of the offered); star: the answer')})
  held = hold_chart.HoldChart(analysis.night_frame, colors, analysis.answers)
  if held is not None:
    figures.append({
        'id': 'hold', 'title': 'The answer held',
        'chart': held,
        'note': (f'{tonight}: each run\'s hold of its answer\'s load after '
                 'the search, OPS_time_series (probe_role hold): ops/s each '
                 'second; dashed: the searched figure '
                 '(latency_capped_throughput); dotted: the floor a second '
                 'must stay over; crossed: a second whose Average '
                 'Latency_time_series was at or over latency_cap_ms; titles: '
                 'how many seconds held')})
  runs = analysis.frame['run_uri'].nunique()
  history = f'{len(analysis.nights)} night(s), {report.Count(runs, "run")}'
  for chart in charts_lib.HistoryCharts(analysis.points,
                                        analysis.change_points, colors):
    spec = cp_lib.SERIES_METRICS[chart.key]
    figures.append({
        'id': f'history-{chart.key}', 'title': f'History: {spec.label}',
        'chart': chart,
        'note': (f'{history}: per night, the mean of each cell\'s counted '
                 f'runs\' own {spec.sample_metric}'
                 + (f' (metadata {spec.metadata_key})' if spec.metadata_key
                    else '')
                 + (f' (cost_scope {spec.cost_scope})' if spec.cost_scope
                    else '')
                 + f'; change points: '
                 f'{report.DetectorDescription(analysis.settings)}')})
  return figures


def RenderHtml(analysis: report.Analysis,
               generated: Optional[datetime.datetime] = None) -> str:
  """The self-contained page: every chart embedded as a data: URI."""
  generated = generated or datetime.datetime.now(datetime.timezone.utc)
  colors = charts_lib.CellColors(analysis.frame['cell'].dropna())
  context = report.CommonContext(analysis)
  board = analysis.board
  context.update({
      'figures': _Figures(analysis, colors),
      'provenance': report.Provenance(analysis.frame),
      'cell_colors': {r['rank']: colors.get(cell, '#999999')
                      for r, cell in zip(context['board_rows'],
                                         board.get('cell', []))},
      'tools': report.ToolVersions(),
      'generated': generated.strftime('%Y-%m-%d %H:%M UTC'),
      'command_line': analysis.settings.command_line,
      'history_runs': analysis.frame['run_uri'].nunique(),
  })
  environment = report.TemplateEnvironment()
  environment.finalize = report.EscapeHtml
  return environment.get_template('report.html.j2').render(**context)
