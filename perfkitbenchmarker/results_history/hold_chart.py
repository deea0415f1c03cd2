"""The answer held: each run's hold, second by second, as one chart.

Reads the hold's time-series samples (upstream PKB's shape, probe_role
`hold`: `OPS_time_series` and `Average Latency_time_series`, the series in
metadata `values`) and each run's answer (answers.py): one panel per cell,
a line of ops/s per second per run, the searched figure dashed, the floor a
second must stay over (SWING_BOUND below it) dotted, and every second over
the cap marked with a red cross. The panel's title says how many seconds
held. A view of the loader's frame like charts.py; shares its helpers.
"""

import ast
import json
import textwrap
from typing import Dict, List, Optional

import pandas as pd

from perfkitbenchmarker import steadiness
from perfkitbenchmarker import terminal_text
from perfkitbenchmarker.results_history import answers as answers_lib
from perfkitbenchmarker.results_history import charts as charts_lib

HOLD_ROLE = 'hold'
OPS_SERIES = 'OPS_time_series'
LATENCY_SERIES = 'Average Latency_time_series'
# Metadata the chart reads (compare loads only what views read).
METADATA_KEYS = ('probe_role', 'probe_index', 'values', 'latency_cap_ms',
                 'hold_ok', 'hold_words')


def _Values(text) -> Optional[List[float]]:
  """A series stored as text ('[1, 2]': JSON, or the labels' repr)."""
  if isinstance(text, (list, tuple)):
    return [float(v) for v in text]
  if not isinstance(text, str):
    return None
  for parse in (json.loads, ast.literal_eval):
    try:
      values = parse(text)
    except (ValueError, SyntaxError):
      continue
    if isinstance(values, (list, tuple)):
      return [float(v) for v in values]
  return None


def HoldSeries(night_frame: pd.DataFrame,
               answers: Optional[pd.DataFrame] = None) -> pd.DataFrame:
  """One row per run's hold: cell, run_uri, ops and latency per second,
  cap, and the run's searched figure (`answers`: answers.RunAnswers of
  night_frame, if already made)."""
  columns = ['cell', 'run_uri', 'ops', 'latency', 'cap', 'searched',
             'words']
  if 'probe_role' not in night_frame.columns or 'values' not in (
      night_frame.columns):
    return pd.DataFrame(columns=columns)
  holds = night_frame[(night_frame['probe_role'] == HOLD_ROLE) &
                      night_frame['metric'].isin([OPS_SERIES,
                                                  LATENCY_SERIES])]
  if answers is None:
    answers = answers_lib.RunAnswers(night_frame)
  rows = []
  for (cell, run_uri), mine in holds.groupby(['cell', 'run_uri'],
                                             sort=True):
    answer = answers[(answers['run_uri'] == str(run_uri)) &
                     (answers['cell'] == cell)]
    # The answer's own hold, when the search held more than one load (it
    # backed off from a hold that failed).
    if not answer.empty and 'probe_index' in mine.columns:
      index = answer['hold_index'].iloc[-1]
      own = mine[answers_lib.Numbers(mine, 'probe_index') == index]
      mine = own if not own.empty else mine
    series = {m: _Values(r['values']) for m, r in
              mine.drop_duplicates('metric', keep='last').set_index(
                  'metric').iterrows()}
    ops = series.get(OPS_SERIES)
    if not ops:
      continue
    cap = answers_lib.Numbers(mine, 'latency_cap_ms').dropna()
    rows.append({
        'cell': cell, 'run_uri': str(run_uri), 'ops': ops,
        'latency': series.get(LATENCY_SERIES),
        'cap': float(cap.iloc[0]) if not cap.empty else None,
        'searched': (float(answer['capped_ops'].iloc[-1])
                     if not answer.empty else None),
        # The answer's hold in words (answers.RunAnswers' `hold`).
        'words': answer['hold'].iloc[-1] if not answer.empty else ''})
  return pd.DataFrame(rows, columns=columns)


def HoldFigure(night_frame: pd.DataFrame,
               colors: Optional[Dict[str, str]] = None,
               answers: Optional[pd.DataFrame] = None):
  """The chart's figure, or None when no run of the night held a load."""
  from matplotlib import lines as mpl_lines  # pylint: disable=g-import-not-at-top
  holds = HoldSeries(night_frame, answers)
  if holds.empty:
    return None
  labels = charts_lib.ShortLabels(night_frame)
  cells = [c for c in labels if c in set(holds['cell'])]
  columns = 2 if len(cells) > 1 else 1
  rows = (len(cells) + columns - 1) // columns
  fig = charts_lib.NewFigure(figsize=(charts_lib.WIDTH_IN, 3.2 * rows + 0.3))
  font = charts_lib.FONT
  for i, cell in enumerate(cells):
    ax = fig.add_subplot(rows, columns, i + 1)
    color = charts_lib.Color(colors, cell, i)
    titles = []
    for _, hold in holds[holds['cell'] == cell].iterrows():
      seconds = list(range(len(hold['ops'])))
      ax.plot(seconds, hold['ops'], color=color, marker='o', markersize=3,
              linewidth=1.4, zorder=3)
      latency, cap = hold['latency'], hold['cap']
      if latency and cap is not None:
        over = [s for s, ms in zip(seconds, latency) if ms >= cap]
        ax.scatter(over, [hold['ops'][s] for s in over], marker='x', s=50,
                   color=charts_lib.REGRESSION_COLOR, linewidths=1.8,
                   zorder=4)
      if hold['searched']:
        ax.axhline(hold['searched'], color='#4a5568', linestyle='--',
                   linewidth=1, zorder=1)
        ax.axhline((1 - steadiness.SWING_BOUND) * hold['searched'],
                   color='#4a5568', linestyle=':', linewidth=1, zorder=1)
      if hold['words']:
        # Read from the samples: drawn as text (never mathtext).
        titles.append(terminal_text.ChartText(
            hold['words'].split(' under ')[0]))
    title = labels[cell] + (f' ({"; ".join(titles)})' if titles else '')
    ax.set_title('\n'.join(textwrap.wrap(title, charts_lib.TITLE_CHARS)),
                 fontsize=font, loc='left')
    ax.set_xlabel('second of the hold', fontsize=font)
    ax.set_ylabel('ops/s', fontsize=font)
    ax.set_ylim(bottom=0)
    charts_lib.ReadableTicks(ax.yaxis, [v for o in holds['ops'] for v in o])
    ax.tick_params(labelsize=font)
    ax.grid(alpha=0.3)
  fig.tight_layout()
  handles = [
      mpl_lines.Line2D([], [], color='#718096', marker='o', markersize=3),
      mpl_lines.Line2D([], [], color='#4a5568', linestyle='--'),
      mpl_lines.Line2D([], [], color='#4a5568', linestyle=':'),
      mpl_lines.Line2D([], [], marker='x', color=charts_lib.REGRESSION_COLOR,
                       linestyle='none', markersize=7),
  ]
  names = ['ops/s each second', 'searched figure',
           f'{100 * steadiness.SWING_BOUND:.0f} % below it',
           'second over the cap']
  charts_lib.LegendAbove(fig, handles, names, 2)
  return fig


def HoldChart(night_frame: pd.DataFrame,
              colors: Optional[Dict[str, str]] = None,
              answers: Optional[pd.DataFrame] = None
              ) -> Optional[charts_lib.Chart]:
  fig = HoldFigure(night_frame, colors, answers)
  if fig is None:
    return None
  return charts_lib.Png(fig, 'Each run\'s hold of its answer\'s load: '
                        'ops/s each second against the searched figure, '
                        'seconds over the cap crossed')
