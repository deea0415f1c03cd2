"""Compares stored results: leaderboard, change points, HTML and Markdown.

  pkb-compare [RESULTS...] [--report=PATH.html] [--markdown=PATH.md]
                       [--json=PATH.json] [--include_unconfirmed]
                       [--fail_on_regression] [--bigquery_table=P.D.T]
                       [--bq_project=P] [--bq_api_endpoint=URL]

RESULTS are result directories (searched recursively for
perfkitbenchmarker_results.json) or PKB JSON-lines files; with none (and no
--bigquery_table) the results tree pkb writes to is read (a checkout's
results/, an installed pkb's /tmp/perfkitbenchmarker: perfkitbenchmarker/
paths.py). Prints the latest night's
leaderboard and every change point (regressions on the latest nights first).
Only runs whose answer is confirmed (sample metadata `verdict`) are ranked
and enter the change points; the others are listed with why, unless
--include_unconfirmed.

Exit codes: 0 nothing regressed (or no --fail_on_regression), 1 a regression
in the last --recent_nights nights with --fail_on_regression, 2 bad input
(one line on stderr), 3 an internal error, 130 interrupted. The contract is
in docs/compare.md.
"""

import os
import sys
import json
import shlex
import stat
import types
import warnings
from typing import Callable, List, Optional, Sequence, Tuple

from absl import flags
import pandas as pd

from perfkitbenchmarker import flag_types
from perfkitbenchmarker import flag_util
from perfkitbenchmarker import paths as paths_lib
from perfkitbenchmarker import run_signals
from perfkitbenchmarker import terminal_text
from perfkitbenchmarker.results_history import changepoints
from perfkitbenchmarker.results_history import html_page
from perfkitbenchmarker.results_history import leaderboard
from perfkitbenchmarker.results_history import loader
from perfkitbenchmarker.results_history import nights
from perfkitbenchmarker.results_history import report

EXIT_OK, EXIT_REGRESSION, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3
EXIT_INTERRUPTED = 130  # as pkb's and pkb-recompute's
COMMAND = 'pkb-compare'  # ./scripts/compare.py in a checkout

# Own flag registry: the BigQuery publisher defines PKB's --bigquery_table on
# the global one, and compare must not collide with it when it imports it.
FLAGS = flags.FlagValues()
flags.DEFINE_string('report', None, 'Write the HTML report here.',
                    flag_values=FLAGS)
flags.DEFINE_string('markdown', None, 'Write the Markdown summary here (e.g. '
                    '$GITHUB_STEP_SUMMARY).', flag_values=FLAGS)
flags.DEFINE_string('json', None, 'Write the leaderboard here as JSON: a list '
                    'of rows (cell fields, figure, interval, interval kind, '
                    'verdict, each run\'s own answer); unranked cells last.',
                    flag_values=FLAGS)
flags.DEFINE_boolean('include_unconfirmed', False, 'Rank and analyse runs '
                     'whose answer is not confirmed (verdict unconfirmed, '
                     'client_bound or disturbed) too.', flag_values=FLAGS)
flags.DEFINE_boolean('fail_on_regression', False, 'Exit 1 when a series '
                     'regressed in the last --recent_nights nights.',
                     flag_values=FLAGS)
flags.DEFINE_multi_enum('metric', list(changepoints.DEFAULT_METRICS),
                        list(changepoints.SERIES_METRICS),
                        'Series metrics for change points (repeatable).',
                        flag_values=FLAGS)
flags.DEFINE_string('since', None, 'Only nights on or after this UTC date '
                    '(YYYY-MM-DD).', flag_values=FLAGS)
flags.DEFINE_string('night', None, 'Leaderboard of this night (a label as '
                    'printed) instead of the latest.', flag_values=FLAGS)
flags.DEFINE_string('bigquery_table', None, 'Also read samples from this '
                    'BigQuery table (project.dataset.table).',
                    flag_values=FLAGS)
flags.DEFINE_string('bq_project', None, 'Project the BigQuery client bills.',
                    flag_values=FLAGS)
flags.DEFINE_string('bq_api_endpoint', None, 'BigQuery API endpoint, as '
                    'pkb\'s flag: e.g. http://127.0.0.1:9050 for a local fake '
                    '(called without credentials).', flag_values=FLAGS)
# Numbers are bounded and finite on their definitions (flag_types), so a
# bad one is absl's one-line refusal, exit 2.
flag_types.DEFINE_float('night_hours', 24.0, 'Width of a night in hours, UTC '
                        'aligned (24: one UTC date).', lower_bound=0.01,
                        upper_bound=24 * 366, flag_values=FLAGS)
flag_types.DEFINE_float('matrix_gap_minutes', 60.0, 'A run starting within '
                        'this many minutes of the previous run\'s end shares '
                        'its night, if it starts less than --night_hours '
                        'after that night\'s first run.', lower_bound=0.0,
                        upper_bound=7 * 1440, flag_values=FLAGS)
flag_types.DEFINE_float('max_pvalue', 1e-4, 'Change points need a p-value '
                        'below this.', lower_bound=0.0, upper_bound=1.0,
                        flag_values=FLAGS)
flag_types.DEFINE_float('noise_multiple', 2.0, 'Change points need a step of '
                        'at least this many times the night-to-night noise.',
                        lower_bound=0.0, upper_bound=1000.0,
                        flag_values=FLAGS)
flag_types.DEFINE_float('min_change_pct', 0.0, 'Change points need a step of '
                        'at least this many percent.', lower_bound=0.0,
                        upper_bound=10000.0, flag_values=FLAGS)
flags.DEFINE_integer('recent_nights', 7, 'Regressions on this many latest '
                     'nights count for --fail_on_regression.', lower_bound=1,
                     upper_bound=100000, flag_values=FLAGS)


def _Fail(message: str) -> int:
  _Note(message)
  return EXIT_USAGE


def _Writable(flag: str, path: str) -> Optional[str]:
  if os.path.isdir(path):
    return f'{flag}={path} is a directory; give a file name'
  directory = os.path.dirname(os.path.abspath(path))
  if not os.path.isdir(directory):
    return f'{flag}={path}: no directory {directory}'
  return None


def _Outputs() -> List[Tuple[str, str]]:
  """(flag, path) of each output given: --report, --markdown, --json."""
  return [(flag, path) for flag, path in (
      ('--report', FLAGS.report), ('--markdown', FLAGS.markdown),
      ('--json', FLAGS.json)) if path]


def _OutputsApart() -> Optional[str]:
  """Two outputs naming one file (also through a link or another
  spelling): the later write would replace the HTML page or the JSON, or
  append Markdown to it. Not a pipe or a device (/dev/stdout for both
  prints both)."""
  outputs = _Outputs()
  for i, (flag, path) in enumerate(outputs):
    for other_flag, other in outputs[:i]:
      try:
        st = os.stat(path)
        same = (os.path.samestat(st, os.stat(other)) and
                stat.S_ISREG(st.st_mode))
      except OSError:  # Not both there yet.
        same = os.path.realpath(path) == os.path.realpath(other)
      if same:
        return (f'{other_flag}={other} and {flag}={path} name the same '
                'file; each would spoil the other. Give them different files')
  return None


def _OverwritesInput(frame: pd.DataFrame) -> Optional[str]:
  """An output that is a file compare read (a run's samples, or the run
  record beside them): writing it would destroy a finished run's results,
  and the next compare would stop at it as not PKB JSON lines."""
  outputs = {}
  for flag, path in _Outputs():
    try:
      st = os.stat(path)
    except OSError:  # Not there yet: nothing of the input's.
      continue
    outputs[(st.st_dev, st.st_ino)] = f'{flag}={path}'
  if not outputs:
    return None
  for source in frame[loader.SOURCE_COLUMN].dropna().unique():
    for read in (source, os.path.join(os.path.dirname(source),
                                      loader.RUN_RECORD_FILE)):
      try:
        st = os.stat(read)
      except OSError:  # A BigQuery table, or a run without its record.
        continue
      flag = outputs.get((st.st_dev, st.st_ino))
      if flag:
        return (f'{flag} is {read}, which this compare reads; writing there '
                'would destroy that run\'s results. Give another path')
  return None


class _WriteError(Exception):
  pass


def _Say(text: str) -> None:
  """Prints inert text (once the reader has gone, `| head`, stdout is
  /dev/null: Main's run_signals.GuardOutput; the files asked for are still
  written)."""
  print(terminal_text.PrintableLines(text), flush=True)


def _Write(path: str, text: str, mode: str = 'w') -> None:
  """Writes a report as inert text (a page is `cat` as often as rendered)."""
  try:
    with open(path, mode, encoding='utf-8') as f:
      f.write(terminal_text.PrintableLines(text))
  except OSError as e:
    raise _WriteError(f'cannot write {path}: {e.strerror or e}') from None


def LoadHistory(paths: List[str], bigquery_table: Optional[str] = None,
                bq_project: Optional[str] = None,
                chunk_rows: Optional[int] = None,
                bq_api_endpoint: Optional[str] = None,
                note: Optional[Callable[[str], None]] = None
               ) -> pd.DataFrame:
  """The samples, with only the metadata the views read (bounded memory);
  `note` gets each line the load says (default: stderr, _Note)."""
  client = None
  if bigquery_table:
    client = _BigQueryClient(bigquery_table, bq_project, bq_api_endpoint)
  return loader.Load(paths, bigquery_table=bigquery_table, bq_client=client,
                     keys=report.HistoryKeys(), chunk_rows=chunk_rows,
                     note=note or _Note)


def _Note(line: str) -> None:
  """What the load left out (a results file of a history tree that is not
  its own, a second copy of a run: loader.Load), on stderr; Run also puts
  the lines in the report and the summary (report.Analysis.load_notes)."""
  print(f'compare: {terminal_text.Printable(line)}', file=sys.stderr)


def _BigQueryClient(table: str, project: Optional[str],
                    endpoint: Optional[str]):
  """The publisher's client, with its endpoint and credential rules, so
  compare reads the table pkb wrote to (imported only for a BigQuery read)."""
  # pylint: disable=g-import-not-at-top
  from perfkitbenchmarker import errors
  from perfkitbenchmarker.publishers import bigquery_options
  from perfkitbenchmarker.publishers import bigquery_publisher
  # pylint: enable=g-import-not-at-top
  try:
    options = bigquery_options.BigQueryOptions.FromFlags(types.SimpleNamespace(
        bigquery_table=table, bq_project=project, bq_api_endpoint=endpoint,
        service_account_private_key=None, service_account=None,
        bq_timeout_seconds=300))
    return bigquery_publisher.MakeClient(options)
  except errors.Error as e:
    raise loader.LoadError(str(e)) from None


def Run(argv: List[str], default_results: Optional[str] = None,
        command: str = COMMAND, given: Sequence[str] = ()) -> int:
  """Everything after flag parsing; returns the exit code. `given` is the
  arguments as typed, flags included (parsing left argv none), which the
  page's provenance names."""
  # It was dropped without a word (no --markdown="$GITHUB_STEP_SUMMARY"
  # written), as pkb refuses its own.
  empty = flag_util.GivenEmpty(FLAGS, (
      'report', 'markdown', 'json', 'since', 'night', 'bigquery_table',
      'bq_project', 'bq_api_endpoint'))
  if empty:
    return _Fail(f'--{empty} is empty; give a value, or drop the flag.')
  paths = argv[1:]
  if not paths and not FLAGS.bigquery_table:
    paths = [default_results or paths_lib.ResultsRoot()]
  for flag, path in _Outputs():
    problem = _Writable(flag, path)
    if problem:
      return _Fail(problem)
  problem = _OutputsApart()
  if problem:
    return _Fail(problem)
  load_notes = []

  def Note(line: str) -> None:
    _Note(line)
    load_notes.append(line)

  try:
    frame = LoadHistory(paths, FLAGS.bigquery_table, FLAGS.bq_project,
                        bq_api_endpoint=FLAGS.bq_api_endpoint, note=Note)
  except loader.LoadError as e:
    return _Fail(str(e))
  problem = _OverwritesInput(frame)
  if problem:
    return _Fail(problem)
  frame = leaderboard.Prepare(frame, FLAGS.night_hours,
                              FLAGS.matrix_gap_minutes)
  if FLAGS.since:
    try:
      since = pd.Timestamp(FLAGS.since, tz='UTC')
    except ValueError:
      return _Fail(f'--since={FLAGS.since}: not a date (YYYY-MM-DD)')
    frame = frame[frame[nights.NIGHT_START_COLUMN] >= since]
    if frame.empty:
      return _Fail(f'no nights on or after {FLAGS.since}')
  if FLAGS.night and FLAGS.night not in set(frame[nights.NIGHT_COLUMN]):
    return _Fail(f'--night={FLAGS.night}: no such night; nights are '
                 + ', '.join(nights.Nights(frame)[-5:]))
  settings = report.Settings(
      command_line=' '.join([command] + [shlex.quote(a) for a in given]),
      max_pvalue=FLAGS.max_pvalue, min_change_pct=FLAGS.min_change_pct,
      noise_multiple=FLAGS.noise_multiple, recent_nights=FLAGS.recent_nights,
      night_hours=FLAGS.night_hours, metrics=tuple(FLAGS.metric),
      include_unconfirmed=FLAGS.include_unconfirmed)
  with warnings.catch_warnings():
    # Otava's t-test warns on constant segments (a price step); p is then 0.
    warnings.simplefilter('ignore', RuntimeWarning)
    analysis = report.Analyze(frame, settings, FLAGS.night, load_notes)
    _Say(report.FormatText(analysis))
    if FLAGS.report:
      _Write(FLAGS.report, html_page.RenderHtml(analysis))
      _Say(f'HTML report: {FLAGS.report}')
  if FLAGS.json:
    _Write(FLAGS.json, json.dumps(report.LeaderboardJson(analysis), indent=1,
                                  allow_nan=False) + '\n')
    _Say(f'JSON leaderboard: {FLAGS.json}')
  if FLAGS.markdown:
    _Write(FLAGS.markdown, report.RenderMarkdown(analysis), 'a')
    _Say(f'Markdown summary: {FLAGS.markdown}')
  if FLAGS.fail_on_regression and analysis.recent_regressions:
    return EXIT_REGRESSION
  return EXIT_OK


def Main(argv: Optional[List[str]] = None,
         default_results: Optional[str] = None,
         command: str = COMMAND) -> int:
  """The compare command; `default_results` is read when no RESULTS are
  given (default: paths.ResultsRoot())."""
  # `| head -1`: the rest of the output goes to /dev/null, no traceback,
  # the command's own exit status (pkb's own guard).
  run_signals.GuardOutput()
  argv = list(sys.argv if argv is None else argv)
  if any(a in ('-h', '--help', '--helpfull') for a in argv[1:]):
    _Say(f'{__doc__}\n{FLAGS.get_help(include_special_flags=False)}')
    return EXIT_OK
  FLAGS.unparse_flags()  # Main may run more than once in a process (tests).
  given = argv[1:]
  try:
    argv = FLAGS(argv)
  except flags.Error as e:
    return _Fail(f'{e}; see {command} --help')
  try:
    return Run(argv, default_results, command, given)
  except _WriteError as e:
    return _Fail(str(e))
  except KeyboardInterrupt:
    print('compare: interrupted', file=sys.stderr)
    return EXIT_INTERRUPTED
  except Exception as e:  # pylint: disable=broad-except
    print(f'compare: internal error {type(e).__name__}: '
          f'{terminal_text.Printable(str(e))}', file=sys.stderr)
    return EXIT_INTERNAL


if __name__ == '__main__':
  sys.exit(Main())
