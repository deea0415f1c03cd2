"""The leaderboard of one night: a view of the history frame.

One row per cell with a counted run this night (answers.py: confirmed, or
any with `include_unconfirmed`), ranked by ops/s per $/hr within its
workload (each workload has its own best; no ratio across). Figures and
intervals are `answers.CellFigure` over the runs' own answers
(`interval_kind`: within-run, across runs or none). `ratio_to_best` has the
two rows' relative half-widths added in quadrature; the verdict says "N %
below best" or "within noise of best" only when both intervals are across
runs, else "noise unknown" (a within-run interval leaves out run-to-run
variation, which dominates). `Unranked` lists the night's cells with runs
but none counted, and why. docs/compare.md describes every column.
"""

import math
from typing import Optional

import pandas as pd

from perfkitbenchmarker.results_history import answers as answers_lib
from perfkitbenchmarker.results_history import cells
from perfkitbenchmarker.results_history import nights

# Every metadata key the leaderboard reads.
METADATA_KEYS = answers_lib.METADATA_KEYS + (
    'price_basis', 'pricing_model', 'servers_price_source',
    'servers_price_date', 'probe_role', 'under_latency_cap')
COLUMNS = ('machine_type', 'engine', 'topology', 'workload', 'runs',
           'capped_ops', 'capped_ops_ci95', 'interval_kind',
           'avg_latency_ms', 'p99_latency_ms', 'usd_per_hour',
           'price_performance', 'price_performance_ci95', 'ratio_to_best',
           'ratio_ci_low', 'ratio_ci_high', 'verdict', 'answer_verdict',
           'limit', 'hold', 'client_bound', 'server_versions',
           'harness_versions', 'price_basis', 'pricing_model',
           'price_source', 'price_date', 'night', 'cell', 'run_answers')
# The versions a row's runs ran: (board column, RunAnswers column, the
# notes' words). The board column lists them (answers.DistinctVersions, a
# list in the JSON too: one version may hold a comma), and more than one is
# a note: the row's figure averages runs of other server versions (an
# upgrade is a step in one series), or of other harness versions (before
# and after a fix of how it measures or parses).
VERSIONS = (('server_versions', 'server_version', 'server versions'),
            ('harness_versions', 'harness_version', 'harness versions'))
UNRANKED_COLUMNS = ('machine_type', 'engine', 'topology', 'workload', 'cell',
                    'night', 'runs', 'answer_verdict', 'limit', 'reasons',
                    'run_answers')
NOISE_UNKNOWN_WITHIN = 'noise unknown (within-run interval only)'
NOISE_UNKNOWN = 'noise unknown'
BEST = 'best'
# A cell of the night whose runs probed but recorded no answer.
NO_ANSWER = 'no answer'
# The probe role of a --memtier_fixed_load run's runs (study/fixed_load.py's
# ROLE, read here from samples): such a run has no capped answer by design,
# so it never stopped before one.
FIXED_LOAD_ROLE = 'fixed'
# A row without ops/s per $/hr (Static VMs have no price): nothing to rank
# it by or compare with the best, so neither 'best' nor a noise call.
UNPRICED = 'unpriced (not compared)'


def _Verdict(is_best: bool, ratio: float, high: float, known: bool,
             kind: str, priced: bool) -> str:
  if not priced:
    return UNPRICED
  if is_best:
    return BEST
  if not known or math.isnan(high):
    return (NOISE_UNKNOWN_WITHIN if kind == answers_lib.WITHIN_RUN
            else NOISE_UNKNOWN)
  if high >= 1.0:
    return 'within noise of best'
  return f'{(1.0 - ratio) * 100:.0f}% below best'


def _Tonight(frame: pd.DataFrame, night: Optional[str],
             answers: Optional[pd.DataFrame]):
  """The night, its runs' answers (`answers` when the caller has them),
  and each of its cells' columns by cell."""
  if night is None:
    night = nights.Nights(frame)[-1]
  tonight = frame[frame[nights.NIGHT_COLUMN] == night]
  if answers is None:
    answers = answers_lib.RunAnswers(tonight)
  return night, answers, tonight.drop_duplicates('cell').set_index('cell')


def Leaderboard(frame: pd.DataFrame, night: Optional[str] = None,
                include_unconfirmed: bool = False,
                answers: Optional[pd.DataFrame] = None) -> pd.DataFrame:
  """The ranking of `night` (default: the latest night in the frame);
  `answers`: answers.RunAnswers of that night's rows, if already made."""
  night, runs_all, info_by_cell = _Tonight(frame, night, answers)
  counted = runs_all[answers_lib.Eligible(runs_all, include_unconfirmed)]
  rows = []
  for cell, runs in counted.groupby('cell', sort=True):
    ops = answers_lib.CellFigure(runs['capped_ops'], runs['ops_ci95'])
    pp_ci = runs['price_performance'] * runs['ops_ci95'] / runs['capped_ops']
    pp = answers_lib.CellFigure(runs['price_performance'], pp_ci)
    info = info_by_cell.loc[cell]
    rows.append({
        **{c: info[c] for c in cells.CELL_COLUMNS}, 'runs': len(runs),
        'capped_ops': ops.value,
        'capped_ops_ci95': ops.ci95, 'interval_kind': ops.kind,
        'avg_latency_ms': float(runs['avg_latency_ms'].mean()),
        'p99_latency_ms': float(runs['p99_latency_ms'].mean()),
        'usd_per_hour': float(runs['usd_per_hour'].mean()),
        'price_performance': pp.value, 'price_performance_ci95': pp.ci95,
        'answer_verdict': answers_lib.VerdictSummary(runs),
        'limit': answers_lib.LimitSummary(runs),
        'hold': answers_lib.HoldSummary(runs),
        'client_bound': bool(runs['verdict_flags'].str.contains(
            'client_bound').any()),
        **{column: list(answers_lib.DistinctVersions(runs[run_column]))
           for column, run_column, _ in VERSIONS},
        'price_basis': info.get('price_basis'),
        'pricing_model': cells.PricingModel(info),
        'price_source': info.get('servers_price_source'),
        'price_date': info.get('servers_price_date'),
        'night': night, 'cell': cell,
        'run_answers': answers_lib.RunList(runs),
    })
  board = pd.DataFrame(rows, columns=[c for c in COLUMNS if c not in (
      'ratio_to_best', 'ratio_ci_low', 'ratio_ci_high', 'verdict')])
  if board.empty:
    return pd.DataFrame(columns=COLUMNS)
  board = _Finite(board)
  # Each workload (its cap and capped statistic, mix, keys, generator) is a
  # question of its own: its rows together, ranked and compared with its
  # own best only, never a p99 answer beside an average one. Unpriced rows
  # (no figure) follow the priced ones, by throughput.
  board = board.sort_values(['workload', 'price_performance', 'capped_ops',
                             'machine_type'],
                            ascending=[True, False, False, True]
                            ).reset_index(drop=True)
  board['ratio_to_best'] = board['ratio_ci_low'] = math.nan
  board['ratio_ci_high'] = math.nan
  board['verdict'] = ''
  for _, one in board.groupby('workload', sort=False):
    at = one.index
    pp, rel = one['price_performance'], (one['price_performance_ci95'] /
                                         one['price_performance'])
    half = (rel ** 2 + rel.iloc[0] ** 2) ** 0.5
    half.iloc[0] = 0.0
    ratio = pp / pp.iloc[0]
    board.loc[at, 'ratio_to_best'] = ratio
    board.loc[at, 'ratio_ci_low'] = ratio * (1 - half)
    board.loc[at, 'ratio_ci_high'] = ratio * (1 + half)
    kinds = one['interval_kind']
    known = (kinds == answers_lib.ACROSS_RUNS) & (
        kinds.iloc[0] == answers_lib.ACROSS_RUNS)
    board.loc[at, 'verdict'] = [
        _Verdict(i == 0, r, h, k, kind, not math.isnan(p))
        for i, (r, h, k, kind, p) in enumerate(
            zip(ratio, board.loc[at, 'ratio_ci_high'], known, kinds, pp))]
  return _Finite(board[list(COLUMNS)])


def _Finite(board: pd.DataFrame) -> pd.DataFrame:
  """The board with each infinite figure as no figure (NaN), as the loader
  reads an infinite value: a mean or ratio of finite but huge (or tiny)
  values a hostile history holds overflows (two runs' p99 of 1e308 average
  to inf), and inf broke the JSON leaderboard and the charts (exit 3)."""
  return board.replace([math.inf, -math.inf], math.nan)


def Unranked(frame: pd.DataFrame, night: Optional[str] = None,
             include_unconfirmed: bool = False,
             answers: Optional[pd.DataFrame] = None) -> pd.DataFrame:
  """Cells of the night whose runs all lack a counted (confirmed) answer
  (`answers` as Leaderboard's)."""
  night, runs_all, info_by_cell = _Tonight(frame, night, answers)
  eligible = answers_lib.Eligible(runs_all, include_unconfirmed)
  ranked = set(runs_all.loc[eligible, 'cell'])
  rows = []

  def Row(cell: str, runs: int, **fields) -> None:
    info = info_by_cell.loc[cell]
    rows.append({**{c: info[c] for c in cells.CELL_COLUMNS}, 'cell': cell,
                 'night': night, 'runs': runs, **fields})

  for cell, runs in runs_all[~runs_all['cell'].isin(ranked)].groupby(
      'cell', sort=True):
    Row(cell, len(runs), answer_verdict=answers_lib.VerdictSummary(runs),
        limit=answers_lib.LimitSummary(runs),
        reasons=[f'run {u}: {r}' + (f'; limit: {d}' if d else '')
                 for u, r, d in zip(runs['run_uri'], runs['verdict_reason'],
                                    runs['limit_detail'])],
        run_answers=answers_lib.RunList(runs))
  listed = ranked | {row['cell'] for row in rows}
  for cell, uris in _StoppedBeforeAnswer(frame, night, runs_all).items():
    if cell not in listed:
      Row(cell, len(uris), limit='',
          answer_verdict=(f'{NO_ANSWER} ({len(uris)} of {len(uris)} '
                          f'run{"s" if len(uris) > 1 else ""})'),
          reasons=[f'run {u}: {reason}' for u, reason in uris.items()],
          run_answers=[{'run_uri': u, 'capped_ops': None,
                        'capped_ops_ci95': None, 'price_performance': None,
                        'verdict': NO_ANSWER, 'verdict_reason': None,
                        'limit': None, 'limit_detail': None} for u in uris])
  return pd.DataFrame(sorted(rows, key=lambda row: row['cell']),
                      columns=UNRANKED_COLUMNS)


def _StoppedBeforeAnswer(frame: pd.DataFrame, night: str,
                         runs_all: pd.DataFrame):
  """{cell: {run_uri: why}} of the night's runs that ran the study's
  probes but have no answer at all (a run that failed or was stopped before
  it, or whose every probe was over the cap): without this their cell was
  on neither the leaderboard nor the unranked list."""
  tonight = frame[frame[nights.NIGHT_COLUMN] == night]
  if 'probe_role' not in tonight.columns:
    return {}
  answered = set(runs_all['run_uri'].astype(str))
  probes = tonight[(tonight['metric'] == 'throughput') &
                   tonight['probe_role'].notna() &
                   (tonight['probe_role'] != FIXED_LOAD_ROLE) &
                   ~tonight['run_uri'].astype(str).isin(answered)]
  return {cell: {uri: _NoAnswerReason(run)
                 for uri, run in one.groupby(one['run_uri'].astype(str),
                                             sort=True)}
          for cell, one in probes.groupby('cell', sort=True)}


def _NoAnswerReason(probes: pd.DataFrame) -> str:
  """Why a run with probes has no answer: every probe over the cap (the
  search's own end, README "Verdicts"), else it stopped before one."""
  under = (probes['under_latency_cap'].astype(str).str.lower()
           if 'under_latency_cap' in probes.columns else None)
  if under is not None and under.isin(('true', 'false')).all() and not (
      under == 'true').any():
    return ('every probe was over the latency cap: no load under it, so no '
            'latency-capped answer')
  return 'probed but recorded no latency-capped answer (it stopped before one)'


# Metadata the views read as numbers (int() of a VM count, float() of a
# cap). The loader types a column as numbers only when every value is one,
# so one 'abc' or '' left it text and a view stopped at it.
NUMBER_KEYS = ('servers_cpu_quota', 'redis_total_num_processes',
               'servers_vm_count', 'memtier_data_size', 'memtier_key_maximum',
               'latency_cap_ms', 'redis_replicas_per_primary',
               'confirmation_repeats', 'throughput_ci95_ops',
               'confirmed_average_latency_ms', 'average_latency_ms',
               'p99_latency_ms', 'servers_usd_per_hour_total', 'probe_index',
               'connections', 'curve_percent', 'offered_ops_per_s',
               'rate_achieved_pct', 'capped_latency_ms')


def Prepare(frame: pd.DataFrame, night_hours: float = 24.0,
            matrix_gap_minutes: float = 60.0) -> pd.DataFrame:
  """Loader frame -> frame with cells and nights, ready for every view; a
  NUMBER_KEYS value that is not a finite number reads as not recorded."""
  numbers = {key: answers_lib.Numbers(frame, key)
             for key in NUMBER_KEYS if key in frame.columns and
             not pd.api.types.is_numeric_dtype(frame[key])}
  if numbers:
    frame = frame.assign(**{key: column.where(column.abs() < math.inf)
                            for key, column in numbers.items()})
  return nights.AssignNights(cells.AddCellColumns(frame), night_hours,
                             matrix_gap_minutes)
