"""Per-series history over nights and its change points (Apache Otava).

A series is one cell and one metric; a point is a night, the mean of its
counted runs' own answers (the leaderboard's figure). Otava's E-divisive
(windowed split, then a merge keeping points with a t-test p below
`max_pvalue`) finds the steps; a step must also be `noise_multiple` times
the night-to-night noise around it (`NoisePct`), which keeps false alarms
near 1 in 75 noise-only histories (docs/compare.md), and `min_change_pct`
can ignore negligible ones. A regression is a step the worse way for the
metric (`SERIES_METRICS`: add a metric there); latest nights first.
"""

import dataclasses
from typing import Dict, List, Optional, Sequence

import pandas as pd

from perfkitbenchmarker.results_history import answers as answers_lib
from perfkitbenchmarker.results_history import cells
from perfkitbenchmarker.results_history import nights


@dataclasses.dataclass(frozen=True)
class SeriesMetric:
  """Where a series' value comes from and which way is better."""
  name: str
  label: str
  unit: str
  sample_metric: str
  higher_is_better: bool
  metadata_key: Optional[str] = None  # value from this key, not the sample's
  cost_scope: Optional[str] = None    # only samples with this cost_scope


SERIES_METRICS: Dict[str, SeriesMetric] = {m.name: m for m in (
    SeriesMetric('latency_capped_throughput', 'capped throughput', 'ops/s',
                 'latency_capped_throughput', True),
    SeriesMetric('price_performance', 'ops/s per $/hr', 'ops/s per $/hr',
                 'price_performance', True),
    SeriesMetric('p99_latency_ms', 'p99 latency at the capped load', 'ms',
                 'latency_capped_throughput', False,
                 metadata_key='p99_latency_ms'),
    SeriesMetric('hourly_cost', 'server VMs $/hr', '$/hr', 'hourly_cost',
                 False, cost_scope='server VMs'),
)}
DEFAULT_METRICS = ('latency_capped_throughput', 'price_performance',
                   'p99_latency_ms', 'hourly_cost')
MIN_NIGHTS = 4
# Metadata the series read.
METADATA_KEYS = tuple(dict.fromkeys(
    [m.metadata_key for m in SERIES_METRICS.values() if m.metadata_key] +
    ['cost_scope']))
POINT_COLUMNS = cells.CELL_COLUMNS + ('cell', 'metric', nights.NIGHT_COLUMN,
                                      nights.NIGHT_START_COLUMN, 'value',
                                      'runs')


@dataclasses.dataclass(frozen=True)
class ChangePoint:
  """One significant step in one series, at the first night after it."""
  cell: str
  machine_type: str
  engine: str
  topology: str
  workload: str
  metric: str
  night: str
  nights_ago: int      # 0: the latest night of the whole history
  mean_before: float
  mean_after: float
  change_pct: float    # (after / before - 1) * 100
  pvalue: float
  noise_pct: float     # night-to-night noise around it, % (NoisePct)
  regression: bool

  @property
  def direction(self) -> str:
    return 'regression' if self.regression else 'improvement'


def HistoryPoints(frame: pd.DataFrame,
                  metrics: Sequence[str] = DEFAULT_METRICS,
                  include_unconfirmed: bool = False) -> pd.DataFrame:
  """One row per (cell, metric, night): the mean over the night's counted
  runs (answers.Eligible) of their own answer's sample, as the leaderboard."""
  runs = answers_lib.RunAnswers(frame)
  counted = runs[answers_lib.Eligible(runs, include_unconfirmed)]
  keep = set(zip(counted['run_uri'], counted['cell']))
  frame = frame[[(str(u), c) in keep for u, c in
                 zip(frame['run_uri'], frame['cell'])]]
  parts = []
  for name in metrics:
    spec = SERIES_METRICS[name]
    rows = frame[frame['metric'] == spec.sample_metric]
    if spec.cost_scope is not None:
      if 'cost_scope' not in rows.columns:
        continue
      rows = rows[rows['cost_scope'] == spec.cost_scope]
    if spec.metadata_key is not None:
      if spec.metadata_key not in rows.columns:
        continue
      rows = rows.assign(value=answers_lib.Numbers(rows, spec.metadata_key))
    rows = rows.dropna(subset=['value'])
    if rows.empty:
      continue
    # A run counts once per night: its last sample of the metric.
    keys = list(cells.CELL_COLUMNS) + ['cell', nights.NIGHT_COLUMN,
                                       nights.NIGHT_START_COLUMN]
    per_run = answers_lib.LastPerRun(
        rows[keys + ['run_uri', 'timestamp', 'value']])
    points = per_run.groupby(keys, as_index=False).agg(
        value=('value', 'mean'), runs=('run_uri', 'nunique'))
    points['metric'] = name
    parts.append(points)
  if not parts:
    return pd.DataFrame(columns=POINT_COLUMNS)
  points = pd.concat(parts, ignore_index=True)
  return points.sort_values(['cell', 'metric', nights.NIGHT_START_COLUMN]
                           ).reset_index(drop=True)[list(POINT_COLUMNS)]


def NoisePct(point) -> float:
  """The pooled standard deviation of the nights either side of a change
  point (Otava's segment statistics), % of the mean before it."""
  before = point.mean_before()
  if not before:
    return float('inf')
  pooled = ((point.stddev_before() ** 2 + point.stddev_after() ** 2) / 2) ** 0.5
  return 100.0 * pooled / abs(before)


def Detect(points: pd.DataFrame, max_pvalue: float = 1e-4,
           min_change_pct: float = 0.0, noise_multiple: float = 2.0,
           window_len: int = 50,
           history_nights: Optional[Sequence[str]] = None
           ) -> List[ChangePoint]:
  """Change points of every series (module doc): regressions, then
  improvements, each the most recent night first, then the largest step.

  `history_nights` are the whole history's night labels in time order
  (nights.Nights of the frame), so a night with no point (no confirmed
  answer, no sample of these metrics) still counts in `nights_ago`; without
  them the points' own nights are the history.
  """
  if history_nights is None:
    history_nights = [label for _, label in sorted(set(zip(
        points[nights.NIGHT_START_COLUMN], points[nights.NIGHT_COLUMN])))]
  age = {label: len(history_nights) - 1 - i
         for i, label in enumerate(history_nights)}
  series = [(cell, metric, one.sort_values(nights.NIGHT_START_COLUMN))
            for (cell, metric), one in points.groupby(['cell', 'metric'],
                                                      sort=True)
            if len(one) >= MIN_NIGHTS]
  if not series:
    return []
  # Here, not at the top, and only for a series long enough: otava pulls in
  # scipy (0.8 CPU-s), which a refused command line or a report of a short
  # history (most of them) never needs.
  from otava import series as otava_series  # pylint: disable=g-import-not-at-top
  options = otava_series.AnalysisOptions()
  options.max_pvalue = max_pvalue
  options.min_magnitude = min_change_pct / 100.0
  options.window_len = window_len
  found = []
  for cell, metric, one in series:
    values = [float(v) for v in one['value']]
    times = [int(t.timestamp()) for t in one[nights.NIGHT_START_COLUMN]]
    analyzed = otava_series.Series(
        test_name=cell, branch=None, time=times,
        metrics={metric: otava_series.Metric(
            1 if SERIES_METRICS[metric].higher_is_better else -1)},
        data={metric: values}, attributes={}).analyze(options)
    first = one.iloc[0]
    for point in analyzed.change_points.get(metric, []):
      night = one[nights.NIGHT_COLUMN].iloc[int(point.index)]
      change = point.forward_change_percent()
      noise = NoisePct(point)
      if abs(change) < max(min_change_pct, noise_multiple * noise):
        continue
      worse = change < 0 if SERIES_METRICS[metric].higher_is_better else (
          change > 0)
      found.append(ChangePoint(
          cell=cell, **{c: first[c] for c in cells.CELL_COLUMNS},
          metric=metric, night=night,
          nights_ago=age[night], mean_before=float(point.mean_before()),
          mean_after=float(point.mean_after()), change_pct=float(change),
          pvalue=float(point.pvalue()), noise_pct=float(noise),
          regression=bool(worse)))
  found.sort(key=lambda c: (not c.regression, c.nights_ago,
                            -abs(c.change_pct), c.cell, c.metric))
  return found


def RecentRegressions(change_points: Sequence[ChangePoint],
                      recent_nights: int) -> List[ChangePoint]:
  """Regressions whose night is among the latest `recent_nights` nights."""
  return [c for c in change_points
          if c.regression and c.nights_ago < recent_nights]
