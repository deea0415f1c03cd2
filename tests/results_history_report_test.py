"""Reports from stored records: golden text and Markdown, the HTML page in
headless Chromium, and compare.py's exit codes for bad input.

Golden files (tests/data/history/golden/) are reviewed renderings of the real
runs in tests/data/history; after an intended change, regenerate them with
UPDATE_GOLDEN=1 and review the diff.
"""

import dataclasses
import json
import os
import re
import shutil
import subprocess
import sys
import warnings

import numpy as np
import pandas as pd
import pytest
from PIL import Image

import e2e_support
import headless_chromium
import pkb_forkserver
import script_modules

from perfkitbenchmarker import terminal_text
from perfkitbenchmarker.results_history import answers as answers_lib
from perfkitbenchmarker.results_history import changepoints
from perfkitbenchmarker.results_history import html_page
from perfkitbenchmarker.results_history import leaderboard
from perfkitbenchmarker.results_history import loader
from perfkitbenchmarker.results_history import report
import synthetic_history as synthetic

from headless_chromium import chromium  # pylint: disable=unused-import  (fixture)

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
HISTORY = os.path.join(HERE, 'data', 'history')
GOLDEN = os.path.join(HISTORY, 'golden')
COMPARE = os.path.join(REPO, 'scripts', 'compare.py')


@pytest.fixture(scope='module')
def analysis():
  frame = leaderboard.Prepare(loader.Load([HISTORY]))
  with warnings.catch_warnings():
    warnings.simplefilter('ignore', RuntimeWarning)
    # Every recorded run is client-bound (2 cores): the report's layout is
    # tested with them counted, as compare --include_unconfirmed shows them.
    return report.Analyze(frame, report.Settings(command_line='test',
                                                 include_unconfirmed=True))


def _Golden(name, text):
  path = os.path.join(GOLDEN, name)
  if os.environ.get('UPDATE_GOLDEN'):
    os.makedirs(GOLDEN, exist_ok=True)
    with open(path, 'w') as f:
      f.write(text)
  with open(path) as f:
    assert text == f.read(), f'{name} differs from the golden file'


def test_text_report_matches_golden(analysis):
  _Golden('compare.txt', report.FormatText(analysis) + '\n')


def test_markdown_summary_matches_golden(analysis):
  _Golden('summary.md', report.RenderMarkdown(analysis))


def test_each_view_of_a_night_reads_its_answers_made_once(monkeypatch):
  """The board, the unranked list, the headlines and the three charts all
  read the night's run answers (0.1-0.2 s of CPU to make each time): made
  once per night by Analyze (7 times before), plus once over the whole
  history for its series (changepoints.HistoryPoints)."""
  frame = leaderboard.Prepare(loader.Load([HISTORY]))
  made = []
  real = answers_lib.RunAnswers
  monkeypatch.setattr(answers_lib, 'RunAnswers',
                      lambda rows: made.append(len(rows)) or real(rows))
  with warnings.catch_warnings():
    warnings.simplefilter('ignore', RuntimeWarning)
    analysis = report.Analyze(frame, report.Settings(
        include_unconfirmed=True))
    report.FormatText(analysis)
    report.RenderMarkdown(analysis)
    html_page.RenderHtml(analysis)
  night_rows = len(analysis.night_frame)
  assert sorted(made) == sorted([night_rows, len(frame)]), made


def test_each_chart_of_the_page_is_drawn_once(analysis, monkeypatch):
  """savefig(bbox_inches='tight') drew every chart twice (a whole dry-run
  draw to find the box, then the PNG's), as does savefig on a figure
  tight_layout left its placeholder layout engine on: 2 draws a chart,
  about 0.6 of the page's 2.9 s of chart CPU. The box is found without
  drawing; the PNG is the same."""
  from matplotlib import figure as mpl_figure  # pylint: disable=g-import-not-at-top
  draws = {}
  real = mpl_figure.Figure.draw

  def Draw(fig, renderer):
    draws[id(fig)] = draws.get(id(fig), 0) + 1
    return real(fig, renderer)

  monkeypatch.setattr(mpl_figure.Figure, 'draw', Draw)
  page = html_page.RenderHtml(analysis)
  charts = page.count('src="data:image/png;base64,')
  assert charts >= 3 and sorted(draws.values()) == [1] * charts, draws


def test_leaderboard_ranks_by_price_performance_with_noise_calls(analysis):
  board = analysis.board
  assert list(board['price_performance']) == sorted(
      board['price_performance'], reverse=True)
  assert board['verdict'].iloc[0] == 'best'
  # One or two runs: within-run intervals, and no noise call from them
  # (run-to-run variation is unknown), even where the ratio's interval
  # stays below 1.
  two = board[board['runs'] == 2]
  assert len(two) == 2 and (two['price_performance_ci95'] > 0).all()
  assert set(board['interval_kind']) == {'within-run'}
  assert (board['verdict'].iloc[1:] ==
          'noise unknown (within-run interval only)').all()
  assert (board['ratio_ci_high'] < 1).any()
  assert board['client_bound'].all()  # every probe on 2 cores was
  assert set(board['answer_verdict']) == {'client_bound (2 of 2 runs)',
                                          'client_bound (1 of 1 run)'}


def test_by_default_client_bound_runs_are_not_ranked_and_say_why():
  frame = leaderboard.Prepare(loader.Load([HISTORY]))
  analysis = report.Analyze(frame, report.Settings(command_line='test'))
  assert analysis.board.empty and len(analysis.unranked) == 5
  assert analysis.points.empty  # nor analysed for change points
  text = report.FormatText(analysis)
  banner = report.MakeHeadline(analysis)
  # The banner first, then why nothing is ranked.
  assert text.startswith(f'{banner.known}\n{banner.regressions}\n\n'
                         'No confirmed latency-capped answer on this night.\n'
                         'Not ranked: 5 cell(s) with no confirmed answer')
  assert ('local as AWS:c6gn.xlarge | redis | standalone, 1 shard/VM: '
          'client_bound (2 of 2 runs): run 82ea2788: load generator '
          'saturated at the answer; run 902af480: load generator saturated '
          'at the answer') in text
  assert 'Not ranked: 5 cell(s)' in report.RenderMarkdown(analysis)


def _Headline(frame, **settings):
  with warnings.catch_warnings():
    warnings.simplefilter('ignore', RuntimeWarning)
    analysis = report.Analyze(frame, report.Settings(**settings))
  return report.MakeHeadline(analysis)


def test_headline_says_why_answers_are_not_confirmed_by_their_limit():
  frame = leaderboard.Prepare(loader.Load([HISTORY]))
  capped = frame['metric'] == 'latency_capped_throughput'
  runs = sorted(frame.loc[capped, 'run_uri'])
  headline = _Headline(frame)
  assert headline.known == ('0 of 7 answers confirmed on night 2026-11-23; '
                            'not confirmed: 7 client_bound; none is a server '
                            'figure one can rank.')
  assert headline.level == 'unknown'
  assert headline.regressions.startswith('Regressions not checked')
  # Answers that record what limited them (attribution) are counted by it.
  limits = dict(zip(runs, ['client_cpu'] * 3 + ['client_quota']))
  frame['limit'] = [limits.get(r) if c else None
                    for r, c in zip(frame['run_uri'], capped)]
  assert '7 client_bound (limits: client CPU 3, client quota 1, not ' \
         'recorded 3);' in _Headline(frame).known
  frame['limit'] = frame['limit'].where(~capped, 'client_cpu')
  assert '7 client_bound (limit: client CPU);' in _Headline(frame).known
  # Two confirmed, one disturbed: the banner is not green, and says why.
  frame['verdict'] = [{runs[0]: 'confirmed', runs[1]: 'confirmed',
                       runs[2]: 'disturbed'}.get(r) if c else None
                      for r, c in zip(frame['run_uri'], capped)]
  frame['limit'] = frame['limit'].where(frame['verdict'] != 'disturbed',
                                        'disturbed')
  headline = _Headline(frame)
  assert headline.known == (
      '2 of 7 answers confirmed on night 2026-11-23; not confirmed: 4 '
      'client_bound (limit: client CPU), 1 disturbed.')
  # One night: no series is long enough for change points, so no
  # "no regression" (it said so, green when all were confirmed).
  not_checked = ('Regressions not checked: a series needs 4 nights of '
                 'confirmed answers, the longest here has 1.')
  assert headline.regressions == not_checked
  assert headline.level == 'unknown'
  frame['verdict'] = frame['verdict'].where(~capped, 'confirmed')
  headline = _Headline(frame)
  assert headline.known == ('All 7 answers confirmed on night 2026-11-23.')
  assert (headline.regressions, headline.level) == (not_checked, 'unknown')
  # Every answer confirmed on each of 4 nights: only then green.
  raw = loader.Load([HISTORY])
  nightly = leaderboard.Prepare(pd.concat([
      raw.assign(timestamp=raw['timestamp'] - pd.Timedelta(days=back),
                 run_uri=raw['run_uri'] + f'n{back}')
      for back in range(changepoints.MIN_NIGHTS)], ignore_index=True))
  nightly['verdict'] = [
      'confirmed' if m == 'latency_capped_throughput' else None
      for m in nightly['metric']]
  headline = _Headline(nightly)
  assert headline.known == ('All 7 answers confirmed on night 2026-11-23.')
  assert headline.level == 'good'
  assert headline.regressions == ('No significant regression in the last 7 '
                                  'night(s) among confirmed answers.')
  text = report.FormatText(report.Analyze(nightly, report.Settings()))
  # The banner comes first: the leaderboard follows it.
  assert text.startswith(headline.known + '\n' + headline.regressions +
                         '\n\nLeaderboard for night ')
  # The last night's answer of a one-run cell not confirmed: yellow, and
  # still checked (its series just has no point that night).
  nightly.loc[(nightly['run_uri'] == '40b2bc68n0') &
              (nightly['metric'] == 'latency_capped_throughput'),
              'verdict'] = 'disturbed'
  headline = _Headline(nightly)
  assert headline.known.startswith('6 of 7 answers confirmed')
  assert headline.level == 'partial'
  assert headline.regressions.startswith('No significant regression')


def _ReportFromFiles(tmp_path):
  """Real runs plus a 20-night history generated from them, as files."""
  frame = leaderboard.Prepare(loader.Load([HISTORY]))
  templates = synthetic.TemplateRuns(frame)
  step_cell = sorted(templates['cell'].unique())[1]
  history = synthetic.Generate(templates, synthetic.HistorySpec(
      nights=20, step_cell=step_cell, step_night=14, seed=5,
      keep_probes=False))
  synthetic.WriteJsonLines(history, str(tmp_path / 'history.json'))
  page = tmp_path / 'report.html'
  summary = tmp_path / 'summary.md'
  result = pkb_forkserver.Run(
      [sys.executable, COMPARE, HISTORY, str(tmp_path / 'history.json'),
       f'--report={page}', f'--markdown={summary}', '--fail_on_regression',
       '--recent_nights=400', '--include_unconfirmed'],
      timeout=120, check=False)
  return result, page, summary


@pytest.mark.e2e
@headless_chromium.NEEDED
def test_html_report_renders_in_headless_chromium(
    tmp_path, chromium):  # pylint: disable=redefined-outer-name
  result, page, summary = _ReportFromFiles(tmp_path)
  assert result.returncode == 1, result.stderr  # the generated step
  html = page.read_text()
  # Self-contained: no external URL in any attribute, every image inline.
  assert not re.search(r'(src|href)="(https?:)?//', html)
  images = re.findall(r'<img src="([^"]+)"', html)
  assert len(images) == 6  # bars, probe curves, 4 history charts
  assert all(i.startswith('data:image/png;base64,') for i in images)
  assert 'REGRESSION' in html and './pkb.py --redis_server_cluster_mode' in html
  assert '<div class="verdict bad" id="headline">' in html
  assert '## Redis price-performance' in summary.read_text()

  # At 800 px the change-point table, like the leaderboard, is in reach:
  # every column fits or its box scrolls to it, and a cue says which.
  measured = tmp_path / 'measure.html'
  measured.write_text(html.replace('</body>', """<script>
window.addEventListener('load', () => {
  const table = document.getElementById('changes-table');
  const wrap = table.parentElement, cue = wrap.previousElementSibling;
  const inView = () => Array.from(table.querySelectorAll('th')).map(th =>
      th.getBoundingClientRect().right <= wrap.getBoundingClientRect().right + 1);
  const before = inView();
  const cueShown = !cue.hidden, cueText = cue.textContent;
  wrap.scrollLeft = wrap.scrollWidth;
  document.body.setAttribute('data-changes', JSON.stringify({
    before, after: inView(), cueShown, cueText,
    page: document.documentElement.scrollWidth}));
});
</script></body>"""))
  dom = chromium.Dom(f'file://{measured}', 800, 1200)
  changes = json.loads(re.search(r'data-changes="([^"]*)"', dom).group(1)
                       .replace('&quot;', '"').replace('&amp;', '&'))
  assert changes['page'] <= 800
  assert all(changes['after']), changes
  if not all(changes['before']):
    assert changes['cueShown'] and 'scroll' in changes['cueText'], changes

  shot = tmp_path / 'shot.png'
  chromium.Screenshot(f'file://{page}', shot, 1280, 2400)
  pixels = np.asarray(Image.open(shot).convert('L'), dtype=float)
  assert pixels.shape == (2400, 1280)
  assert pixels.std() > 20  # not blank
  # Charts drew something in the lower part of the page: rows with dark,
  # non-text-sized ink runs (plot frames, bars, lines) below the tables.
  lower = pixels[900:, :]
  non_white = (lower < 200).mean(axis=1)
  assert (non_white > 0.3).sum() >= 5  # horizontal axes / bar rows
  assert (lower < 250).mean() > 0.05


@pytest.mark.e2e
def test_compare_bad_input_is_one_line_and_exit_2(tmp_path):
  bad = tmp_path / 'bad.json'
  bad.write_text('<html>not samples</html>\n')
  for args in ([str(tmp_path / 'missing')], [str(bad)],
               [HISTORY, '--night_hours=-1'], [HISTORY, '--since=yesterday!'],
               [HISTORY, '--report=/no/such/dir/r.html'],
               [HISTORY, f'--json={tmp_path}']):
    result = pkb_forkserver.Run([sys.executable, COMPARE] + args,
                                timeout=120,
                                check=False)
    assert result.returncode == 2, (args, result.stderr)
    assert result.stderr.count('\n') == 1 and 'Traceback' not in result.stderr
    assert result.stderr.startswith('compare: ')
    assert result.stdout == ''


@pytest.mark.e2e
def test_compare_writes_its_files_when_stdout_goes_away_or_says_why_not(
    tmp_path):
  """`compare --json=F | head`: the reader leaving used to end the run with
  exit 0 and no F; a file that cannot be written (a full disk: /dev/full)
  was an 'internal error' (exit 3)."""
  board = tmp_path / 'board.json'
  read, write = os.pipe()
  os.close(read)  # the reader is gone before compare prints
  try:
    result = subprocess.run(
        [sys.executable, COMPARE, HISTORY, '--include_unconfirmed',
         f'--json={board}'], stdout=write, stderr=subprocess.PIPE,
        text=True, timeout=120, check=False)
  finally:
    os.close(write)
  assert result.returncode == 0, result.stderr
  assert json.loads(board.read_text())[0]['rank'] == 1
  full = pkb_forkserver.Run(
      [sys.executable, COMPARE, HISTORY, '--json=/dev/full'],
      timeout=120, check=False)
  assert full.returncode == 2, full.stderr
  assert full.stderr == ('compare: cannot write /dev/full: No space left on '
                         'device\n')


def test_default_source_is_the_results_tree(monkeypatch, tmp_path, capsys):
  compare = script_modules.Load(COMPARE, 'compare_default')
  results = tmp_path / 'results'
  shutil.copytree(os.path.join(HISTORY, 'runs'), results / 'runs')
  monkeypatch.setattr(compare, 'DEFAULT_RESULTS', str(results))
  assert compare.Main(['compare', '--include_unconfirmed']) == 0
  out = capsys.readouterr().out
  assert out.startswith('0 of 7 answers confirmed on night 2026-11-23')
  assert '\n\nLeaderboard for night 2026-11-23' in out


def test_load_notes_are_inert_in_the_summary(analysis):
  """A note quotes a source path, which is the reader's to name: it is
  text in the summary, never markup (the page autoescapes it)."""
  line = 'skipped runs/<img src=x>/*a*_b_: a symbolic link'
  summary = report.RenderMarkdown(
      dataclasses.replace(analysis, load_notes=(line,)))
  assert f'\n- {terminal_text.MarkdownText(line)}\n' in summary
  assert '<img' not in summary and '*a*' not in summary
  assert report.LOAD_NOTES_TITLE not in report.RenderMarkdown(analysis)


def test_the_page_names_the_compare_command_with_its_flags(tmp_path):
  """The provenance's 'this page' is the command that made the page: a page
  ranked with --include_unconfirmed said only './scripts/compare.py DIR',
  whose page ranks nothing here (every recorded run is client-bound)."""
  compare = script_modules.Load(COMPARE, 'compare_command_line')
  page = tmp_path / 'report.html'
  assert compare.Main(['compare', HISTORY, '--include_unconfirmed',
                       f'--report={page}', '--night=2026-11-23']) == 0
  assert (f'<code>./scripts/compare.py {HISTORY} --include_unconfirmed '
          f'--report={page} --night=2026-11-23</code>') in page.read_text()


def test_a_static_run_is_ranked_at_the_price_it_was_priced_at(tmp_path):
  """A --static_vm_file run is priced as --local_priced_as (README) and
  says so ('static (priced as GCP:n2d-standard-2)'), but only its price
  samples name the priced type: compare put its answer in a cell 'static'
  and its price in another, so the row read '$/hr ?', 'unpriced (not
  compared)'. (A Local run's record, its cloud and machines renamed, is
  exactly what a Static run of today writes; machines the file gave a
  machine_type, as the plugin's, keep their type's cell.)"""
  source = os.path.join(HISTORY, 'runs', '04066aa3', loader.RESULTS_FILE)
  with open(source) as f:
    text = f.read().replace('|cloud:Local|', '|cloud:Static|')
  for run_uri, machine in (('a1b2c3d4', 'static'),
                           ('e5f6a7b8', 'n2d-standard-2')):
    run = tmp_path / 'runs' / run_uri
    run.mkdir(parents=True)
    (run / loader.RESULTS_FILE).write_text(text.replace(
        '04066aa3', run_uri).replace('|servers_machine_type:local|',
                                     f'|servers_machine_type:{machine}|'))
  compare = script_modules.Load(COMPARE, 'compare_static')
  board = tmp_path / 'board.json'
  assert compare.Main(['compare', str(tmp_path), '--include_unconfirmed',
                       f'--json={board}']) == 0
  rows = {r['machine_type']: r for r in json.loads(board.read_text())}
  assert sorted(rows) == ['n2d-standard-2', 'static as GCP:n2d-standard-2']
  for row in rows.values():
    assert row['usd_per_hour'] == pytest.approx(0.084492)
    assert row['price_performance'] == pytest.approx(
        row['capped_ops'] / 0.084492)
