"""Text and Markdown renderings of the history views, and what the HTML page
shares with them.

`Analyze` computes the views once into `Analysis`; the renderers only format
it. Markdown and HTML are Jinja2 templates (templates/, HTML autoescaped);
the text tables share their cell strings with them, so one golden test
covers the others' numbers. A new section: a field on `Analysis`, filled in
`Analyze`, and a block in the templates.
"""

import dataclasses
import importlib.metadata
import platform
from typing import Any, Dict, List, Optional, Sequence, Tuple

import jinja2
import pandas as pd

from perfkitbenchmarker import attribution
from perfkitbenchmarker import terminal_text
from perfkitbenchmarker import text_table
from perfkitbenchmarker import verdict as verdict_lib
from perfkitbenchmarker.results_history import answers as answers_lib
from perfkitbenchmarker.results_history import cells
from perfkitbenchmarker.results_history import changepoints as cp_lib
from perfkitbenchmarker.results_history import charts as charts_lib
from perfkitbenchmarker.results_history import hold_chart
from perfkitbenchmarker.results_history import leaderboard as board_lib
from perfkitbenchmarker.results_history import nights

TOOL_PACKAGES = ('apache-otava', 'pandas', 'matplotlib', 'Jinja2', 'numpy',
                 'scipy')
NOT_RECORDED = ('not recorded (no run_record.json beside the samples, or one '
                'that is malformed, of an unknown version or names no '
                'command)')
PRICE_KEYS = ('servers_price_cloud', 'servers_price_region',
              'servers_price_source', 'servers_price_date')
GENERATOR_KEYS = ('load_generator', 'load_generator_version')
# Metadata the page reads (compare loads only these, see HistoryKeys).
METADATA_KEYS = PRICE_KEYS + GENERATOR_KEYS + (
    'redis_server_version', answers_lib.HARNESS_VERSION, 'price_basis',
    'search_policy', 'latency_cap_ms')


@dataclasses.dataclass(frozen=True)
class Settings:
  """How the analysis was asked for; shown on the page as provenance."""
  command_line: str = ''
  max_pvalue: float = 1e-4
  min_change_pct: float = 0.0
  noise_multiple: float = 2.0
  recent_nights: int = 7
  night_hours: float = 24.0
  metrics: Sequence[str] = cp_lib.DEFAULT_METRICS
  include_unconfirmed: bool = False


@dataclasses.dataclass(frozen=True)
class Analysis:
  night: str
  nights: List[str]
  board: pd.DataFrame
  night_frame: pd.DataFrame
  # answers.RunAnswers(night_frame), once for every view of the night (the
  # board, the headline, the charts): 0.1-0.2 s of CPU each time.
  answers: pd.DataFrame
  points: pd.DataFrame
  change_points: List[cp_lib.ChangePoint]
  recent_regressions: List[cp_lib.ChangePoint]
  settings: Settings
  frame: pd.DataFrame
  unranked: pd.DataFrame = dataclasses.field(
      default_factory=lambda: pd.DataFrame(columns=board_lib.UNRANKED_COLUMNS))
  # What the load said it counted once or skipped (loader.Load's `note`):
  # on stderr while compare runs, and here for whoever reads the report.
  load_notes: Tuple[str, ...] = ()


def Analyze(frame: pd.DataFrame, settings: Settings,
            night: Optional[str] = None,
            load_notes: Sequence[str] = ()) -> Analysis:
  """Every view of a prepared frame (cells and nights assigned);
  `load_notes`: the lines the load said (a run read twice, counted once)."""
  all_nights = nights.Nights(frame)
  night = night or all_nights[-1]
  include = settings.include_unconfirmed
  points = cp_lib.HistoryPoints(frame, settings.metrics, include)
  found = cp_lib.Detect(points, max_pvalue=settings.max_pvalue,
                        min_change_pct=settings.min_change_pct,
                        noise_multiple=settings.noise_multiple,
                        history_nights=all_nights)
  night_frame = frame[frame[nights.NIGHT_COLUMN] == night]
  answers = answers_lib.RunAnswers(night_frame)
  return Analysis(
      night=night, nights=all_nights,
      board=board_lib.Leaderboard(frame, night, include, answers),
      unranked=board_lib.Unranked(frame, night, include, answers),
      night_frame=night_frame, answers=answers,
      points=points, change_points=found,
      recent_regressions=cp_lib.RecentRegressions(found,
                                                  settings.recent_nights),
      settings=settings, frame=frame, load_notes=tuple(load_notes))


def _Number(value: Any, digits: int = 0) -> str:
  if value is None or pd.isna(value):
    return '?'
  return f'{value:,.{digits}f}'


def _Price(value: Any) -> str:
  return '?' if value is None or pd.isna(value) else f'{value:.4f}'


def LeaderboardCells(board: pd.DataFrame) -> List[Dict[str, str]]:
  """The leaderboard as display strings (shared by text, Markdown, HTML)."""
  rows = []
  for i, row in board.iterrows():
    if pd.isna(row['ratio_to_best']):  # No price: no ratio (Static VMs).
      versus = '?'
    elif row['verdict'] == board_lib.BEST:  # The best of its workload.
      versus = '1.00'
    elif pd.isna(row['ratio_ci_high']):
      versus = f'{row["ratio_to_best"]:.2f}'
    else:
      versus = (f'{row["ratio_to_best"]:.2f} [{max(row["ratio_ci_low"], 0):.2f},'
                f' {row["ratio_ci_high"]:.2f}]')
    rows.append({
        'rank': str(i + 1),
        'machine_type': str(row['machine_type']),
        'engine': str(row['engine']),
        'topology': str(row['topology']),
        'workload': str(row['workload']),
        'capped_ops': (f'{_Number(row["capped_ops"])} ± '
                       f'{_Number(row["capped_ops_ci95"])}'),
        'interval': str(row['interval_kind']),
        # What limited the answers (attribution.py) beside their verdicts:
        # one cell, so the page still reads on a laptop.
        'answer': str(row['answer_verdict']) + (
            f'; limit: {row["limit"]}' if row.get('limit') else '') + (
                f'; {row["hold"]}' if row.get('hold') else ''),
        'p99_ms': _Number(row['p99_latency_ms'], 3),
        'usd_per_hour': _Price(row['usd_per_hour']),
        'price_performance': (f'{_Number(row["price_performance"])} ± '
                              f'{_Number(row["price_performance_ci95"])}'),
        'versus_best': versus,
        'verdict': str(row['verdict']),
        'notes': _Notes(row),
        'runs': str(row['runs']),
    })
  return rows


def _Notes(row) -> str:
  notes = ['client-bound'] if row['client_bound'] else []
  # Runs of other server (or harness) versions averaged together.
  for column, _, words in board_lib.VERSIONS:
    if len(row[column]) > 1:
      notes.append(f'{words} '
                   + ', '.join(map(answers_lib.VersionText, row[column])))
  return '; '.join(notes)


TEXT_COLUMNS = (('rank', '#'), ('machine_type', 'machine type'),
                ('engine', 'engine'), ('topology', 'topology'),
                ('capped_ops', 'capped ops/s (95%)'), ('p99_ms', 'p99 ms'),
                ('usd_per_hour', '$/hr'),
                ('price_performance', 'ops/s per $/hr (95%)'),
                ('interval', 'interval'), ('versus_best', 'vs best [95%]'),
                ('verdict', 'verdict'), ('runs', 'runs'),
                ('answer', 'answers'), ('notes', 'notes'))


def _TextTable(columns, rows: List[Dict[str, str]]) -> List[str]:
  return text_table.Lines([title for _, title in columns],
                          [[row[key] for key, _ in columns] for row in rows])


def UnrankedLines(unranked: pd.DataFrame, include_unconfirmed: bool
                  ) -> List[str]:
  """Why each cell with runs this night is not on the leaderboard."""
  if unranked.empty:
    return []
  answered = ~unranked['answer_verdict'].astype(str).str.startswith(
      board_lib.NO_ANSWER)
  lines = [f'Not ranked: {len(unranked)} cell(s) with no confirmed answer '
           'this night' + ('' if include_unconfirmed or not answered.any()
                           else ' (--include_unconfirmed ranks them)') + ':']
  for _, row in unranked.iterrows():
    lines.append(f'  {row["machine_type"]} | {row["engine"]} | '
                 f'{row["topology"]}: {row["answer_verdict"]}: '
                 + '; '.join(row['reasons']))
  return lines


def FormatLeaderboardText(analysis: Analysis) -> str:
  board = analysis.board
  skipped = UnrankedLines(analysis.unranked,
                          analysis.settings.include_unconfirmed)
  if board.empty:
    text = ('No confirmed latency-capped answer on this night.' if skipped
            else 'No latency-capped throughput samples on this night.')
    return '\n'.join([text] + skipped)
  header = (f'Leaderboard for night {board["night"].iloc[0]} '
            f'({WorkloadsText(sorted({str(w) for w in board["workload"]}))}), '
            + ('best of each workload ' if ShowsWorkload(board) else '') +
            'by ops/s per $/hr:')
  return '\n'.join([header] + _TextTable(BoardColumns(board),
                                          LeaderboardCells(board)) +
                   [INTERVAL_NOTE] + skipped)


def ShowsWorkload(board: pd.DataFrame) -> bool:
  """A workload column only where the rows differ in it."""
  return not board.empty and board['workload'].nunique() > 1


def BoardColumns(board: pd.DataFrame):
  if not ShowsWorkload(board):
    return TEXT_COLUMNS
  at = [key for key, _ in TEXT_COLUMNS].index('topology') + 1
  return TEXT_COLUMNS[:at] + (('workload', 'workload'),) + TEXT_COLUMNS[at:]


LOAD_NOTES_TITLE = ('Read once or left out (every figure here counts each '
                    'run and sample once):')
INTERVAL_NOTE = ('Intervals: within-run = the runs\' own repeats (1-2 runs; '
                 'run-to-run noise unknown, so no noise call); across runs = '
                 't-interval over 3+ runs\' answers.')


def LeaderboardJson(analysis: 'Analysis') -> List[Dict[str, Any]]:
  """The leaderboard as JSON rows (compare.py --json), unranked cells last."""
  rows = []
  for i, row in analysis.board.iterrows():
    rows.append({
        'rank': i + 1, 'ranked': True,
        **{k: _Plain(row[k]) for k in board_lib.COLUMNS
           if k not in ('run_answers', 'runs')},
        'run_count': int(row['runs']), 'runs': row['run_answers']})
  for _, row in analysis.unranked.iterrows():
    rows.append({
        'rank': None, 'ranked': False,
        **{k: _Plain(row[k]) for k in ('machine_type', 'engine', 'topology',
                                       'workload', 'cell', 'night')},
        'answer_verdict': row['answer_verdict'],
        'not_ranked_because': list(row['reasons']),
        'run_count': 0, 'runs': row['run_answers']})
  return rows


def _Plain(value: Any) -> Any:
  """A JSON value: NaN/NA as null, numpy scalars as Python ones."""
  if value is None:
    return None
  if isinstance(value, (list, dict, str, bool)):
    return value
  try:
    if pd.isna(value):
      return None
  except (TypeError, ValueError):
    return str(value)
  if hasattr(value, 'item'):
    return value.item()
  return value


def ChangePointCells(change_points: Sequence[cp_lib.ChangePoint]
                    ) -> List[Dict[str, str]]:
  rows = []
  for c in change_points:
    spec = cp_lib.SERIES_METRICS[c.metric]
    digits = 0 if abs(c.mean_before) >= 100 else 4
    rows.append({
        'direction': c.direction.upper() if c.regression else c.direction,
        'night': c.night,
        'nights_ago': str(c.nights_ago),
        'machine_type': c.machine_type,
        'engine': c.engine,
        'topology': c.topology,
        'metric': c.metric,
        'change': (f'{_Number(c.mean_before, digits)} -> '
                   f'{_Number(c.mean_after, digits)} {spec.unit} '
                   f'({c.change_pct:+.1f}%)'),
        'pvalue': f'{c.pvalue:.1e}',
        'noise': f'{c.noise_pct:.1f}%',
    })
  return rows


CHANGE_COLUMNS = (('direction', 'direction'), ('night', 'night'),
                  ('nights_ago', 'nights ago'),
                  ('machine_type', 'machine type'), ('engine', 'engine'),
                  ('topology', 'topology'), ('metric', 'metric'),
                  ('change', 'change'), ('pvalue', 'p-value'),
                  ('noise', 'noise'))


def DetectorDescription(settings: Settings) -> str:
  return (f'E-divisive (Apache Otava), '
          f'p < {settings.max_pvalue:g}, step >= '
          f'{settings.noise_multiple:g}x night-to-night noise'
          + (f' and >= {settings.min_change_pct:g}%'
             if settings.min_change_pct else ''))


def FormatChangePointsText(analysis: Analysis) -> str:
  series = analysis.points.groupby(['cell', 'metric']).ngroups
  head = (f'Change points over {len(analysis.nights)} night(s), {series} '
          f'series; {DetectorDescription(analysis.settings)}; regressions on '
          'the latest nights first:')
  if not analysis.change_points:
    return head + '\nNone.'
  return '\n'.join([head] + _TextTable(
      CHANGE_COLUMNS, ChangePointCells(analysis.change_points)))


def Count(n: int, word: str) -> str:
  return f'{n} {word}{"" if n == 1 else "s"}'


def _Limits(rows: pd.DataFrame) -> str:
  """' (limit: client CPU)', or each limit's count where they differ."""
  if 'limit' not in rows.columns:
    return ''
  named = rows['limit'].replace('', None).dropna()  # '': not recorded
  if set(named) <= set(rows['verdict']):  # 'disturbed (limit: disturbed)'
    return ''
  named = named.map(lambda name: attribution.WORDS.get(name, name))
  if named.empty:
    return ''
  counts = named.value_counts()
  if len(counts) == 1 and counts.iloc[0] == len(rows):
    return f' (limit: {counts.index[0]})'
  parts = [f'{words} {n}' for words, n in counts.items()]
  if len(named) < len(rows):
    parts.append(f'not recorded {len(rows) - len(named)}')
  return f' (limits: {", ".join(parts)})'


@dataclasses.dataclass(frozen=True)
class Headline:
  """The banner: what the night's answers establish, then regressions.

  `level`: 'bad' (a recent regression), 'unknown' (no confirmed answer or no
  series: nothing is known to be fine), 'partial' or 'good'.
  """
  level: str
  known: str
  regressions: str
  answers: int
  confirmed: int


def MakeHeadline(analysis: Analysis) -> Headline:
  answers = analysis.answers
  total = len(answers)
  confirmed = int((answers['verdict'] == verdict_lib.CONFIRMED).sum())
  include = analysis.settings.include_unconfirmed
  if not total:
    known = f'No latency-capped answer on night {analysis.night}.'
  else:
    known = (f'All {Count(total, "answer")}' if confirmed == total else
             f'{confirmed} of {Count(total, "answer")}') + (
                 f' confirmed on night {analysis.night}')
    why = [f'{len(rows)} {name}{_Limits(rows)}'
           for name in verdict_lib.PROBLEMS
           for rows in [answers[answers['verdict'] == name]] if len(rows)]
    if why:
      known += '; not confirmed: ' + ', '.join(why)
    if not confirmed:
      known += ('; none is a server figure one can rank' +
                (', ranked anyway (--include_unconfirmed)' if include else ''))
    known += '.'
  stopped = int(analysis.unranked['answer_verdict'].astype(str).str.startswith(
      board_lib.NO_ANSWER).sum()) if not analysis.unranked.empty else 0
  if stopped:
    known += (f' {stopped} cell(s) recorded no answer (their runs stopped '
              'before one, or found no load under the cap).')
  count = len(analysis.recent_regressions)
  window = analysis.settings.recent_nights
  lengths = analysis.points.groupby(['cell', 'metric']).size() if (
      not analysis.points.empty) else pd.Series(dtype=int)
  series, checked = len(lengths), int((lengths >= cp_lib.MIN_NIGHTS).sum())
  if count:
    regressions = (f'REGRESSION: {count} significant regression(s) in the '
                   f'last {window} night(s).')
  elif not series:
    regressions = ('Regressions not checked: no confirmed answer in the '
                   f'{Count(len(analysis.nights), "night")} of history.')
  elif not checked:
    # Change points need MIN_NIGHTS of a series: "no regression" would say
    # a check found none where none was made (a first night, green).
    regressions = ('Regressions not checked: a series needs '
                   f'{cp_lib.MIN_NIGHTS} nights of '
                   + ('answers' if include else 'confirmed answers') +
                   f', the longest here has {int(lengths.max())}.')
  else:
    partial = ('' if checked == series else
               f'{checked} of {series} series long enough to check')
    if include:
      scope = (' (unconfirmed answers counted' +
               (f'; {partial}' if partial else '') + ')')
    else:
      scope = ' among confirmed answers' + (f' ({partial})' if partial else '')
    regressions = (f'No significant regression in the last {window} '
                   f'night(s){scope}.')
  if count:
    level = 'bad'
  elif not confirmed or not checked:
    level = 'unknown'
  elif confirmed < total or stopped:
    level = 'partial'
  else:
    level = 'good'
  return Headline(level, known, regressions, total, confirmed)


def WorkloadsText(workloads: Sequence[str]) -> str:
  """'workload X', '2 workloads: X; Y' or 'no workload recorded'."""
  if not workloads:
    return 'no workload recorded'
  if len(workloads) == 1:
    return f'workload {workloads[0]}'
  return f'{len(workloads)} workloads: ' + '; '.join(workloads)


def FormatText(analysis: Analysis) -> str:
  """The banner, the leaderboard, the change points."""
  headline = MakeHeadline(analysis)
  return '\n\n'.join([f'{headline.known}\n{headline.regressions}',
                       FormatLeaderboardText(analysis),
                       FormatChangePointsText(analysis)])


def _Unique(frame: pd.DataFrame, column: str) -> List[str]:
  if column not in frame.columns:
    return []
  return sorted({str(v) for v in frame[column].dropna()})


def _UniqueVersions(frame: pd.DataFrame, column: str) -> List[str]:
  """The versions the runs recorded in `column`, as the notes show them
  (answers.DistinctVersions, VersionText): runs that recorded none beside
  runs that did, 'not recorded'. A run records one when any of its samples
  does (a stage's sample may come before the server's version is known)."""
  if column not in frame.columns:
    return []
  runs = pd.DataFrame({'run': frame['run_uri'], 'version':
                       answers_lib.VersionTexts(frame[column])})
  recorded = runs['version'] != ''
  runs = runs[recorded | ~runs['run'].isin(runs.loc[recorded, 'run'])]
  return [answers_lib.VersionText(v) for v in
          answers_lib.DistinctVersions(runs['version'].unique())]


def _Rows(frame: pd.DataFrame, columns: Sequence[str], required: str
          ) -> List[Dict[str, Any]]:
  """Distinct `columns` of rows with `required`; a missing column is None
  (older runs did not record every key)."""
  if required not in frame.columns:
    return []
  present = [c for c in columns if c in frame.columns]
  rows = frame.dropna(subset=[required])[present].drop_duplicates()
  return [{c: (row.get(c) if c in present and not pd.isna(row.get(c))
               else None) for c in columns}
          for row in rows.to_dict('records')]


def Provenance(frame: pd.DataFrame) -> Dict[str, Any]:
  """How the samples in `frame` were obtained, from their own metadata."""
  prices = {f'{r["servers_price_cloud"] or "?"} '
            f'{r["servers_price_region"] or "?"}: '
            f'{r["servers_price_source"]} '
            f'(price date {r["servers_price_date"] or "?"})'
            for r in _Rows(frame, PRICE_KEYS, 'servers_price_source')}
  # Each version as the notes show one: the list is ', '-joined.
  generators = {f'{r["load_generator"]} '
                + answers_lib.VersionText(r['load_generator_version'] or None)
                for r in _Rows(frame, GENERATOR_KEYS, 'load_generator')}
  command_lines = _Unique(frame, 'command_line') or [NOT_RECORDED]
  return {
      'runs': frame['run_uri'].nunique(),
      'run_uris': _Unique(frame, 'run_uri'),
      'command_lines': command_lines,
      'redis_versions': _UniqueVersions(frame, 'redis_server_version'),
      # The harness's: how the samples were measured and parsed.
      'harness_versions': _UniqueVersions(frame, answers_lib.HARNESS_VERSION),
      'load_generators': sorted(generators),
      'prices': sorted(prices),
      'price_bases': _Unique(frame, 'price_basis'),
      'search_policies': _Unique(frame, 'search_policy'),
      'latency_caps': _Unique(frame, 'latency_cap_ms'),
  }


def HistoryKeys() -> Tuple[str, ...]:
  """Every metadata key the views read: what compare asks the loader for."""
  keys = (cells.METADATA_KEYS + board_lib.METADATA_KEYS +
          charts_lib.METADATA_KEYS + hold_chart.METADATA_KEYS +
          cp_lib.METADATA_KEYS + METADATA_KEYS)
  return tuple(dict.fromkeys(keys))


def ToolVersions() -> Dict[str, str]:
  versions = {'python': platform.python_version()}
  for package in TOOL_PACKAGES:
    try:
      versions[package] = importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
      versions[package] = 'not installed'
  return versions


def TemplateEnvironment() -> jinja2.Environment:
  return jinja2.Environment(
      loader=jinja2.PackageLoader('perfkitbenchmarker.results_history',
                                  'templates'),
      autoescape=jinja2.select_autoescape(['html', 'html.j2']),
      undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
      keep_trailing_newline=True)


def CommonContext(analysis: Analysis) -> Dict[str, Any]:
  # Every workload of the night's cells (ranked or not), sorted.
  workloads = _Unique(analysis.night_frame, 'workload')
  return {
      'night': analysis.night,
      'nights': analysis.nights,
      'board_rows': LeaderboardCells(analysis.board),
      'unranked_lines': UnrankedLines(analysis.unranked,
                                      analysis.settings.include_unconfirmed),
      'interval_note': INTERVAL_NOTE,
      'show_workload': ShowsWorkload(analysis.board),
      'change_rows': ChangePointCells(analysis.change_points),
      'headline': MakeHeadline(analysis),
      'night_workloads': workloads,
      'workloads_text': WorkloadsText(workloads),
      'detector': DetectorDescription(analysis.settings),
      'settings': analysis.settings,
      'series_count': analysis.points.groupby(['cell', 'metric']).ngroups,
      'load_notes': analysis.load_notes,
      'load_notes_title': LOAD_NOTES_TITLE,
  }


def EscapeMarkdown(value: Any) -> Any:
  """Text from the samples, inert in GitHub Markdown (a machine type is
  data, not markup): terminal_text.MarkdownText."""
  if not isinstance(value, str):
    return value
  return terminal_text.MarkdownText(value)


def EscapeHtml(value: Any) -> Any:
  """A page's value before autoescaping: controls escaped
  (terminal_text.HtmlText); markup the page made itself stays."""
  if not isinstance(value, str) or hasattr(value, '__html__'):
    return value
  return terminal_text.HtmlText(value)


def RenderMarkdown(analysis: Analysis, max_change_rows: int = 20) -> str:
  context = CommonContext(analysis)
  context['change_rows'] = context['change_rows'][:max_change_rows]
  context['more_changes'] = max(
      0, len(analysis.change_points) - max_change_rows)
  environment = TemplateEnvironment()
  environment.finalize = EscapeMarkdown
  return environment.get_template('summary.md.j2').render(**context)
