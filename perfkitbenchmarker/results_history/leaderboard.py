"""The leaderboard of one night: a view of the history frame.

One row per cell (machine type x engine x topology x workload), ranked by
ops/s per $/hr:

  capped_ops (+- capped_ops_ci95)   `latency_capped_throughput`; with two or
      more runs of the cell in the night, the mean and 95 % t-interval over
      every confirming repeat of those runs (probe samples with probe_role
      confirm; run-to-run drift shows up in their spread, and n is the
      repeats, not the runs, so two runs do not give a t(1) interval), or
      over the runs' values when no repeats were recorded; one run: its own
      `throughput_ci95_ops`, else unknown (NaN)
  avg_latency_ms, p99_latency_ms    at that load (the capped sample's metadata)
  usd_per_hour                      the server VMs' hourly price
  price_performance (+- ci95)       `price_performance`; a single run's
      interval is the throughput interval scaled by the (exact) price
  ratio_to_best [ratio_ci_low, ratio_ci_high]   price_performance / best row's,
      relative half-widths added in quadrature
  verdict   "best", "within noise of best" (the ratio's interval reaches 1),
            "N % below best", or "noise unknown" (no interval to judge by)

A difference counts only past the measured noise (the intervals above), never
on point values alone. Seam: `Leaderboard` takes the frame and a night label
and returns a DataFrame; text, Markdown and HTML renderers read its columns.
"""

import math
from typing import Optional

import pandas as pd
from scipy import stats

from perfkitbenchmarker.results_history import cells
from perfkitbenchmarker.results_history import nights

CAPPED = 'latency_capped_throughput'
PRICE_PERFORMANCE = 'price_performance'
HOURLY_COST = 'hourly_cost'
SERVER_COST_SCOPE = 'server VMs'
COLUMNS = ('machine_type', 'engine', 'topology', 'workload', 'runs',
           'capped_ops', 'capped_ops_ci95', 'avg_latency_ms',
           'p99_latency_ms', 'usd_per_hour', 'price_performance',
           'price_performance_ci95', 'ratio_to_best', 'ratio_ci_low',
           'ratio_ci_high', 'verdict', 'client_bound', 'price_basis',
           'pricing_model', 'price_source', 'price_date', 'night')


def _Col(frame: pd.DataFrame, name: str) -> pd.Series:
  if name in frame.columns:
    return frame[name]
  return pd.Series([float('nan')] * len(frame), index=frame.index)


def MeanAndInterval(values: pd.Series, single_run_ci: float) -> tuple:
  """Mean and 95 % t half-width over `values`, or `single_run_ci` for one."""
  values = values.dropna().astype(float)
  if values.empty:
    return float('nan'), float('nan')
  mean = float(values.mean())
  if len(values) >= 2:
    half = (stats.t.ppf(0.975, len(values) - 1) * float(values.std(ddof=1)) /
            math.sqrt(len(values)))
    return mean, float(half)
  return mean, float(single_run_ci)


def _ConfirmRepeats(night: pd.DataFrame, cell, runs: pd.DataFrame
                    ) -> pd.Series:
  """Throughput of the confirming repeats behind each run's answer.

  Only repeats at the load each run reported (a run that backed off also
  has repeats at a rejected load, which are not part of its answer).
  """
  role = _Col(night, 'probe_role')
  threads, clients = _Col(night, 'threads'), _Col(night, 'clients')
  chosen = night['metric'] == CAPPED
  parts = []
  for run_uri in runs['run_uri']:
    in_run = (night['cell'] == cell) & (night['run_uri'] == run_uri)
    answer = night[in_run & chosen]
    if answer.empty:
      continue
    load = (threads[answer.index[-1]], clients[answer.index[-1]])
    mask = (in_run & (night['metric'] == 'throughput') &
            (role == 'confirm') & (threads == load[0]) & (clients == load[1]))
    parts.append(night.loc[mask, 'value'])
  return pd.concat(parts) if parts else pd.Series(dtype=float)


def _PerRun(night: pd.DataFrame) -> pd.DataFrame:
  """One row per (run, cell) with the figures the leaderboard needs."""
  capped = night[night['metric'] == CAPPED].sort_values('timestamp')
  capped = capped.groupby(['run_uri', 'cell'], as_index=False).last()
  per_run = pd.DataFrame({
      'run_uri': capped['run_uri'], 'cell': capped['cell'],
      'capped_ops': capped['value'],
      'ops_ci95': _Col(capped, 'throughput_ci95_ops'),
      'avg_latency_ms': _Col(capped, 'confirmed_average_latency_ms').fillna(
          _Col(capped, 'average_latency_ms')),
      'p99_latency_ms': _Col(capped, 'p99_latency_ms'),
      'client_bound': (_Col(capped, 'client_saturated').fillna(False).astype(bool)
                       | _Col(capped, 'client_limited').fillna(False
                                                               ).astype(bool)),
  })
  pp = night[night['metric'] == PRICE_PERFORMANCE].sort_values('timestamp')
  pp = pp.groupby(['run_uri', 'cell'], as_index=False).last()
  pp_cols = pd.DataFrame({
      'run_uri': pp['run_uri'], 'cell': pp['cell'],
      'price_performance': pp['value'],
      'pp_usd_per_hour': _Col(pp, 'servers_usd_per_hour_total'),
  })
  cost = night[(night['metric'] == HOURLY_COST) &
               (_Col(night, 'cost_scope') == SERVER_COST_SCOPE)]
  cost = cost.groupby(['run_uri', 'cell'], as_index=False).last()
  cost_cols = pd.DataFrame({'run_uri': cost['run_uri'], 'cell': cost['cell'],
                            'cost_usd_per_hour': cost['value']})
  per_run = per_run.merge(pp_cols, on=['run_uri', 'cell'], how='left')
  per_run = per_run.merge(cost_cols, on=['run_uri', 'cell'], how='left')
  per_run['usd_per_hour'] = per_run['pp_usd_per_hour'].fillna(
      per_run['cost_usd_per_hour'])
  return per_run


def _Verdict(is_best: bool, ratio: float, high: float) -> str:
  if is_best:
    return 'best'
  if math.isnan(high):
    return 'noise unknown'
  if high >= 1.0:
    return 'within noise of best'
  return f'{(1.0 - ratio) * 100:.0f}% below best'


def Leaderboard(frame: pd.DataFrame, night: Optional[str] = None
               ) -> pd.DataFrame:
  """The ranking of `night` (default: the latest night in the frame)."""
  if night is None:
    night = nights.Nights(frame)[-1]
  tonight = frame[frame[nights.NIGHT_COLUMN] == night]
  per_run = _PerRun(tonight)
  first = tonight.drop_duplicates('cell').set_index('cell')
  rows = []
  for cell, runs in per_run.groupby('cell'):
    repeats = _ConfirmRepeats(tonight, cell, runs)
    usd = float(runs['usd_per_hour'].mean())
    if len(runs) >= 2 and len(repeats) > len(runs) and usd > 0:
      ops, ops_ci = MeanAndInterval(repeats, float('nan'))
      # The price is exact, so price-performance has the same interval.
      pp, pp_ci = ops / usd, ops_ci / usd
    else:
      ops, ops_ci = MeanAndInterval(runs['capped_ops'],
                                    runs['ops_ci95'].iloc[0])
      single_pp_ci = (runs['price_performance'].iloc[0] *
                      runs['ops_ci95'].iloc[0] / runs['capped_ops'].iloc[0])
      pp, pp_ci = MeanAndInterval(runs['price_performance'], single_pp_ci)
    info = first.loc[cell]
    rows.append({
        'machine_type': info['machine_type'], 'engine': info['engine'],
        'topology': info['topology'], 'workload': info['workload'],
        'runs': len(runs), 'capped_ops': ops, 'capped_ops_ci95': ops_ci,
        'avg_latency_ms': float(runs['avg_latency_ms'].mean()),
        'p99_latency_ms': float(runs['p99_latency_ms'].mean()),
        'usd_per_hour': float(runs['usd_per_hour'].mean()),
        'price_performance': pp, 'price_performance_ci95': pp_ci,
        'client_bound': bool(runs['client_bound'].any()),
        'price_basis': info.get('price_basis'),
        'pricing_model': cells.PricingModel(info),
        'price_source': info.get('servers_price_source'),
        'price_date': info.get('servers_price_date'),
        'night': night,
    })
  board = pd.DataFrame(rows, columns=[c for c in COLUMNS if c not in (
      'ratio_to_best', 'ratio_ci_low', 'ratio_ci_high', 'verdict')])
  if board.empty:
    return pd.DataFrame(columns=COLUMNS)
  board = board.sort_values(['price_performance', 'machine_type'],
                            ascending=[False, True]).reset_index(drop=True)
  best = board.iloc[0]
  best_rel = best['price_performance_ci95'] / best['price_performance']
  ratios, lows, highs, verdicts = [], [], [], []
  for i, row in board.iterrows():
    ratio = row['price_performance'] / best['price_performance']
    rel = row['price_performance_ci95'] / row['price_performance']
    half = 0.0 if i == 0 else math.sqrt(rel ** 2 + best_rel ** 2)
    ratios.append(ratio)
    lows.append(ratio * (1 - half))
    highs.append(ratio * (1 + half))
    verdicts.append(_Verdict(i == 0, ratio, ratio * (1 + half)))
  board['ratio_to_best'] = ratios
  board['ratio_ci_low'] = lows
  board['ratio_ci_high'] = highs
  board['verdict'] = verdicts
  return board[list(COLUMNS)]


def Prepare(frame: pd.DataFrame, night_hours: float = 24.0,
            matrix_gap_minutes: float = 60.0) -> pd.DataFrame:
  """Loader frame -> frame with cells and nights, ready for every view."""
  return nights.AssignNights(cells.AddCellColumns(frame), night_hours,
                             matrix_gap_minutes)
