"""Each run's own answer per cell, its verdict, and a cell's figure from them.

The run is the unit of every comparison. A run's answer in a cell is its
last `latency_capped_throughput` sample (a shard study's optimum copy) with
that sample's interval, latencies and verdict (verdict.py; older rows get
one derived from their metadata), and its `price_performance` sample;
nothing else a run recorded enters a figure. A cell's figure for a night is
the mean of its counted runs' answers, so it lies within them (`CellFigure`):
one run, its own interval; two, the within-run intervals combined
(sqrt(a^2 + b^2) / 2; run-to-run variation is unknown from two); three or
more, the 95 % t-interval across the answers. The leaderboard and the
history series both read `RunAnswers` and `Eligible`, so they agree.
"""

import dataclasses
import json
import math
from typing import Iterable, List, Optional, Sequence, Tuple

import pandas as pd

from perfkitbenchmarker import attribution
from perfkitbenchmarker import measurement
from perfkitbenchmarker import verdict as verdict_lib
from perfkitbenchmarker.publishers import publisher
from perfkitbenchmarker.search import stats as stats_lib

CAPPED = 'latency_capped_throughput'
PRICE_PERFORMANCE = 'price_performance'
HOURLY_COST = 'hourly_cost'
SERVER_COST_SCOPE = 'server VMs'
WITHIN_RUN = 'within-run'
ACROSS_RUNS = 'across runs'
NO_INTERVAL = 'none'
# The harness's version on every row it wrote (its git describe, or its
# package's version).
HARNESS_VERSION = publisher.HARNESS_VERSION_KEY
# What the words say of a run that recorded no version, beside runs that
# did (null in the JSON): never 'unknown', which a harness that cannot tell
# its own version records (version.py).
NOT_RECORDED = 'not recorded'
# The run-level keys the verdict is read from (see verdict.OfMetadata).
_VERDICT_KEYS = (verdict_lib.KEY, verdict_lib.REASON_KEY,
                 verdict_lib.FLAGS_KEY, 'search_stop_reason',
                 'confirmation_repeats', 'throughput_ci95_ops',
                 'client_saturated', 'interference', attribution.KEY,
                 attribution.DETAIL_KEY)
# Every metadata key the answers read (compare loads only what views read).
METADATA_KEYS = _VERDICT_KEYS + (
    'confirmed_average_latency_ms', 'average_latency_ms', 'p99_latency_ms',
    'servers_usd_per_hour_total', 'cost_scope', 'hold_words',
    'hold_probe_index', 'redis_server_version', HARNESS_VERSION)
ANSWER_COLUMNS = ('run_uri', 'cell', 'night', 'capped_ops', 'ops_ci95',
                  'avg_latency_ms', 'p99_latency_ms', 'usd_per_hour',
                  'price_performance', 'verdict', 'verdict_flags',
                  'verdict_reason', 'limit', 'limit_detail', 'hold',
                  'hold_index', 'server_version', 'harness_version',
                  'timestamp')


def _Col(frame: pd.DataFrame, name: str) -> pd.Series:
  if name in frame.columns:
    return frame[name]
  return pd.Series([float('nan')] * len(frame), index=frame.index)


def Numbers(frame: pd.DataFrame, name: str) -> pd.Series:
  """The column as numbers (NaN where it is none, not a number, or it is
  missing): how every view reads a column as numbers."""
  return pd.to_numeric(_Col(frame, name), errors='coerce')


def LastPerRun(rows: pd.DataFrame) -> pd.DataFrame:
  """The last row of each (run, cell) by time: a run counts once, with the
  last value it recorded in each column."""
  return rows.sort_values('timestamp', kind='stable').groupby(
      ['run_uri', 'cell'], as_index=False).last()


def _Last(rows: pd.DataFrame) -> pd.DataFrame:
  """LastPerRun of the columns answers read."""
  return LastPerRun(rows[[
      c for c in ('run_uri', 'cell', 'timestamp', 'value', 'night') +
      METADATA_KEYS if c in rows.columns]])


def PerRun(rows: pd.DataFrame, columns: dict) -> pd.DataFrame:
  """The last row per (run, cell): run_uri, cell and `columns` renamed
  ({column: name}), as numbers (NaN where a column is missing)."""
  last = LastPerRun(rows[['run_uri', 'cell', 'timestamp'] + [
      c for c in columns if c in rows.columns]])
  out = pd.DataFrame({'run_uri': last['run_uri'].astype(str),
                      'cell': last['cell']})
  for source, name in columns.items():
    out[name] = Numbers(last, source).astype(float)  # None too: float
  return out


def VersionTexts(column: pd.Series) -> List[str]:
  """Each row's version as recorded, text (typed_frame.TEXT_KEYS); '' where
  none is."""
  return [v if isinstance(v, str) else '' for v in column]


def DistinctVersions(versions: Iterable[str]) -> Tuple[Optional[str], ...]:
  """The distinct versions of a row's runs (RunAnswers' `server_version` or
  `harness_version`: '' where a run recorded none), sorted: more than one
  means the row's figure averages runs of other versions. Counted, never
  read back from joined text, since one version may hold a comma. Runs that
  recorded none beside runs that did (an older harness wrote no version)
  are one more version, None, last; none recorded: none."""
  versions = list(versions)
  named = sorted({v for v in versions if v})
  if named and not all(versions):
    named.append(None)
  return tuple(named)


def VersionText(version: Optional[str]) -> str:
  """A version as a list of them for people shows it (', '-joined): None
  (DistinctVersions) as NOT_RECORDED; one holding a comma or a double
  quote, or those words, in JSON's quotes, so the list reads one way
  ('"7.2.4 (custom, asan)", 8.2.3')."""
  if version is None:
    return NOT_RECORDED
  if ',' in version or '"' in version or version == NOT_RECORDED:
    return json.dumps(version, ensure_ascii=False)
  return version


def _Verdict(row: pd.Series) -> verdict_lib.Verdict:
  metadata = {}
  for key in _VERDICT_KEYS:
    value = row.get(key)
    if value is not None and not (pd.api.types.is_scalar(value) and
                                  pd.isna(value)):
      metadata[key] = value
  return verdict_lib.OfMetadata(metadata)


def RunAnswers(frame: pd.DataFrame) -> pd.DataFrame:
  """One row per (run, cell) that has an answer: ANSWER_COLUMNS."""
  capped = frame[frame['metric'] == CAPPED]
  if capped.empty:
    return pd.DataFrame(columns=ANSWER_COLUMNS)
  capped = _Last(capped)
  verdicts = [_Verdict(row) for _, row in capped.iterrows()]
  answers = pd.DataFrame({
      'run_uri': capped['run_uri'].astype(str), 'cell': capped['cell'],
      'night': _Col(capped, 'night'),
      'capped_ops': capped['value'].astype(float),
      'ops_ci95': Numbers(capped, 'throughput_ci95_ops'),
      'avg_latency_ms': Numbers(capped, 'confirmed_average_latency_ms'
                                ).fillna(Numbers(capped, 'average_latency_ms')),
      'p99_latency_ms': Numbers(capped, 'p99_latency_ms'),
      'verdict': [v.name for v in verdicts],
      'verdict_flags': [','.join(v.flags) or verdict_lib.CONFIRMED
                        for v in verdicts],
      'verdict_reason': [v.reason for v in verdicts],
      # What limited the answer (attribution.py); '' for runs recorded
      # before limits.
      'limit': [v.limit.name if v.limit else '' for v in verdicts],
      'limit_detail': [v.limit.detail if v.limit else '' for v in verdicts],
      # Whether the answer's load held after the search, in words ('' for
      # runs without a hold).
      'hold': [str(w) if isinstance(w, str) else ''
               for w in _Col(capped, 'hold_words')],
      # Which hold probe was the answer's (a search that backed off from a
      # failed hold ran two); NaN for runs recorded before.
      'hold_index': Numbers(capped, 'hold_probe_index'),
      # The server's version (a cell's runs may differ in it: a manual
      # --redis_server_version run beside the distro's).
      'server_version': VersionTexts(_Col(capped, 'redis_server_version')),
      # The harness's (a cell's runs may differ in it: runs before and after
      # a fix of how the harness measures or parses).
      'harness_version': VersionTexts(_Col(capped, HARNESS_VERSION)),
      'timestamp': capped['timestamp'],
  })
  pp = PerRun(frame[frame['metric'] == PRICE_PERFORMANCE], {
      'value': 'price_performance', 'servers_usd_per_hour_total': 'pp_usd'})
  cost = PerRun(frame[(frame['metric'] == HOURLY_COST) &
                       (_Col(frame, 'cost_scope') == SERVER_COST_SCOPE)],
                 {'value': 'cost_usd'})
  answers = answers.merge(pp, on=['run_uri', 'cell'], how='left')
  answers = answers.merge(cost, on=['run_uri', 'cell'], how='left')
  # Numbers already (PerRun): the server VMs' price, else their cost.
  answers['usd_per_hour'] = answers['pp_usd'].fillna(answers['cost_usd'])
  answers['price_performance'] = answers['price_performance'].fillna(
      answers['capped_ops'] / answers['usd_per_hour'])
  return answers[list(ANSWER_COLUMNS)].sort_values(
      ['timestamp', 'run_uri'], kind='stable').reset_index(drop=True)


def Eligible(answers: pd.DataFrame, include_unconfirmed: bool) -> pd.Series:
  """Which answers count: confirmed ones, or all of them when asked."""
  if include_unconfirmed:
    return pd.Series(True, index=answers.index)
  return answers['verdict'] == verdict_lib.CONFIRMED


@dataclasses.dataclass(frozen=True)
class Figure:
  """A cell's figure on one night and its 95 % interval (NaN: unknown)."""
  value: float
  ci95: float
  kind: str  # WITHIN_RUN, ACROSS_RUNS or NO_INTERVAL
  runs: int


def CellFigure(values: Sequence[float],
               within_ci95: Sequence[float]) -> Figure:
  """The figure of one cell from its counted runs' answers (module doc)."""
  values = [float(v) for v in values]
  if not values:
    return Figure(float('nan'), float('nan'), NO_INTERVAL, 0)
  mean = sum(values) / len(values)
  n = len(values)
  if any(math.isnan(v) for v in values):  # A run with no figure (unpriced).
    return Figure(mean, float('nan'), NO_INTERVAL, n)
  if n >= 3:  # The search's own interval rule (search/stats.py).
    mean, half = stats_lib.MeanAndCi95(values)
    return Figure(mean, float(half), ACROSS_RUNS, n)
  cis = [float(c) for c in within_ci95]
  if any(math.isnan(c) for c in cis):
    return Figure(mean, float('nan'), NO_INTERVAL, n)
  half = math.sqrt(sum(c * c for c in cis)) / n
  return Figure(mean, half, WITHIN_RUN, n)


def _Counts(counts, total: int) -> str:
  """'a (2 of 3 runs), b (1 of 3 runs)' from (name, count) pairs."""
  return ', '.join(f'{name} ({count} of {total} run{"s" if total > 1 else ""})'
                   for name, count in counts)


def VerdictSummary(answers: pd.DataFrame) -> str:
  """E.g. 'confirmed' or 'client_bound (2 of 3 runs), unconfirmed (1 of 3)'."""
  counts = answers['verdict'].value_counts()
  if list(counts.index) == [verdict_lib.CONFIRMED]:
    return verdict_lib.CONFIRMED
  order = {v: i for i, v in enumerate(verdict_lib.VERDICTS)}
  return _Counts(sorted(counts.items(), key=lambda kv: order.get(kv[0], 99)),
                 len(answers))


def _Summary(answers: pd.DataFrame, column: str, words) -> str:
  """`words` of each run's `column`: one phrase if all alike, else counts."""
  named = [words(v) for v in answers.get(column, pd.Series(dtype=str)) if v]
  counts = pd.Series(named, dtype=object).value_counts()
  if len(counts) == 1 and counts.iloc[0] == len(answers):
    return counts.index[0]
  return _Counts(counts.items(), len(answers))


def LimitSummary(answers: pd.DataFrame) -> str:
  """E.g. 'server quota' or 'server CPU (2 of 3 runs), latency (1 of 3)';
  '' when no run recorded a limit."""
  return _Summary(answers, 'limit', lambda l: attribution.WORDS.get(l, l))


def HoldSummary(answers: pd.DataFrame) -> str:
  """E.g. 'held 60 of 60 s' (one run, or every run alike) or 'held 60 of
  60 s (2 of 3 runs), held 37 of 60 s (1 of 3 runs)'; '' without holds."""
  return _Summary(answers, 'hold', lambda h: h.split(' under ')[0])


def RunList(answers: pd.DataFrame) -> List[dict]:
  """The runs' own answers, for the JSON leaderboard."""
  out = []
  for _, a in answers.iterrows():
    out.append({'run_uri': a['run_uri'], 'capped_ops': measurement.FiniteFloat(a['capped_ops']),
                'capped_ops_ci95': measurement.FiniteFloat(a['ops_ci95']),
                'price_performance': measurement.FiniteFloat(
                    a['price_performance']),
                'verdict': a['verdict'], 'verdict_reason': a['verdict_reason'],
                'limit': a.get('limit') or None,
                'limit_detail': a.get('limit_detail') or None})
  return out


