"""compare.py is total and bounded: hostile or odd histories give one line
(exit 2) or a correct report, never exit 3, and a large history loads in
memory proportional to the columns the views read (issue 18 point 6).

Inputs are the real runs in tests/data/history, edited the way a broken
publisher, a hand-edited file or an attacker would.
"""

import json
import os
import re
import shutil
import tracemalloc
import warnings

import matplotlib.text
import pytest

import pkb_forkserver
import script_modules
from perfkitbenchmarker.publishers import bigquery_schema
from perfkitbenchmarker.results_history import changepoints
from perfkitbenchmarker.results_history import charts
from perfkitbenchmarker.results_history import leaderboard
from perfkitbenchmarker.results_history import loader
from perfkitbenchmarker.results_history import report
import synthetic_history as synthetic

HERE = os.path.dirname(os.path.abspath(__file__))
HISTORY = os.path.join(HERE, 'data', 'history')
ONE_RUN = os.path.join(HISTORY, 'runs', '902af480', loader.RESULTS_FILE)
COMPARE = os.path.join(os.path.dirname(HERE), 'scripts', 'compare.py')


@pytest.fixture(scope='module')
def compare():
  return script_modules.Load(COMPARE, 'compare_bounded')


def _Rows():
  with open(ONE_RUN) as f:
    return [json.loads(line) for line in f if line.strip()]


def _Write(path, rows):
  path.write_text(''.join(json.dumps(r) + '\n' for r in rows))
  return str(path)


def _Compare(compare, capsys, *args):
  code = compare.Main(['compare'] + list(args))
  out, err = capsys.readouterr()
  return code, out, err


def _OneLine(code, err):
  assert code == 2, err
  assert err.startswith('compare: ') and err.count('\n') == 1, err
  assert 'Traceback' not in err and 'internal error' not in err


@pytest.mark.parametrize('bad', [float('inf'), float('-inf'), float('nan')])
def test_a_value_that_is_not_finite_is_one_line(compare, capsys, tmp_path,
                                                bad):
  rows = _Rows()
  line = next(i for i, r in enumerate(rows)
              if r['metric'] == 'latency_capped_throughput')
  rows[line]['value'] = bad
  path = _Write(tmp_path / 'h.json', rows)
  code, out, err = _Compare(compare, capsys, path)
  _OneLine(code, err)
  assert f'{path}:{line + 1}: value' in err and 'not a finite number' in err
  assert out == ''


@pytest.mark.parametrize('field,bad,says', [
    ('value', 1e308, 'is beyond 1e+300'),
    ('value', -1e301, 'is beyond 1e+300'),
    ('timestamp', 1e12, 'is not a time from 1970'),
    ('timestamp', -1.0, 'is not a time from 1970'),
])
def test_a_value_or_time_out_of_range_is_one_line(compare, capsys, tmp_path,
                                                  field, bad, says):
  # Finite, but --report failed with exit 3: a throughput of 1e308 made
  # matplotlib's autoscale overflow ('arange: cannot compute length'), a
  # timestamp of 1e12 s is past the year 33000 pandas cannot hold.
  rows = _Rows()
  line = next(i for i, r in enumerate(rows)
              if r['metric'] == 'latency_capped_throughput')
  rows[line][field] = bad
  path = _Write(tmp_path / 'h.json', rows)
  code, out, err = _Compare(compare, capsys, path, '--include_unconfirmed',
                            f'--report={tmp_path / "r.html"}')
  _OneLine(code, err)
  assert f'{path}:{line + 1}: {field}' in err and says in err, err
  assert out == ''


@pytest.mark.parametrize('name,says', [
    # The number's first 40 characters are quoted.
    ('value_400_digits', f":1: value '1{'0' * 39}' is beyond 1e+300"),
    ('timestamp_400_digits',
     f":1: timestamp '-1{'0' * 38}' is beyond 1e+300"),
    ('labels_a_list', ':1: labels is not text'),
    ('timestamp_in_2258', ':1: timestamp 9100000000.5 is 2258-05-15 01:46 '
     "UTC, more than a day after this machine's clock"),
])
def test_recorded_hostile_files_are_one_line(compare, capsys, name, says):
  # Each was exit 3: float() of a 401-digit integer raises OverflowError
  # ('internal error OverflowError: int too large to convert to float'),
  # and labels that are a list reached .strip() ('internal error
  # AttributeError: 'list' object has no attribute 'strip''). A sample
  # from 2258 was read, and its night became the report's latest, ahead of
  # the real ones: the leaderboard of a night still to come.
  path = os.path.join(HISTORY, 'hostile', name + '.json')
  code, out, err = _Compare(compare, capsys, path)
  _OneLine(code, err)
  assert path + says in err, err
  assert out == ''


def test_a_file_saved_with_a_byte_order_mark_is_read(compare, capsys):
  # Was '<path>:1: not JSON; expected PKB JSON lines' (exit 2): the line
  # began with the mark, which JSON's RFC lets a reader ignore.
  path = os.path.join(HISTORY, 'hostile', 'utf8_bom.json')
  code, out, err = _Compare(compare, capsys, path)
  assert code == 0 and err == '', err
  assert 'on night 2026-11-23' in out


def test_metadata_numbers_that_are_not_numbers_read_as_not_recorded(
    compare, capsys, tmp_path):
  # servers_vm_count 'abc', latency_cap_ms '', redis_replicas_per_primary
  # 'two': each was exit 3 ('internal error ValueError: invalid literal for
  # int() with base 10: 'two''; float() of the cap in the charts).
  path = os.path.join(HISTORY, 'hostile', 'not_numbers.json')
  code, out, err = _Compare(compare, capsys, path, '--include_unconfirmed',
                            f'--report={tmp_path / "r.html"}')
  assert code == 0 and err == '', err
  assert 'on night 2026-11-23' in out


def test_probes_without_a_probe_index_draw_no_curve(compare, capsys,
                                                    tmp_path):
  # A probe_index of 1e400 is not recorded (NaN); the pivot of the probe
  # pairs left such rows out and had no 'throughput' column: exit 3
  # ("internal error KeyError: ['throughput', 'average_latency']").
  path = os.path.join(HISTORY, 'hostile', 'probe_index_1e400.json')
  code, _, err = _Compare(compare, capsys, path, '--include_unconfirmed',
                          f'--report={tmp_path / "r.html"}')
  assert code == 0 and err == '', err


def test_samples_naming_no_cell_key_are_one_cell(compare, capsys, tmp_path):
  # Was exit 3: cells merged the labels on no columns ('internal error
  # IndexError: list index out of range').
  path = os.path.join(HISTORY, 'hostile', 'no_labels.json')
  code, out, err = _Compare(compare, capsys, path, '--include_unconfirmed',
                            f'--report={tmp_path / "r.html"}')
  assert code == 0 and err == '', err
  board = [l for l in out.splitlines() if l.startswith('1 ')]
  assert len(board) == 1 and board[0].split()[1:3] == ['unknown', 'redis']


@pytest.mark.parametrize('key,bad', [
    ('servers_price_usd_per_hour', 'nan'),
    ('clients_price_usd_per_hour', '-0.17'),
    ('servers_usd_per_hour_total', 'inf'),
    ('deployment_usd_per_hour', '-1'),
    ('value', -0.3),
])
def test_a_price_that_is_no_price_is_one_line(compare, capsys, tmp_path, key,
                                              bad):
  # A price edited to nan, inf or below zero made a leaderboard of
  # negative or missing price-performance, exit 0; unlike another figure
  # (a cap's interval of inf reads as not recorded), a run's price is what
  # the board ranks by.
  rows = _Rows()
  line = next(i for i, r in enumerate(rows)
              if (r['metric'] == 'hourly_cost' if key == 'value' else
                  f'|{key}:' in r['labels']))
  if key == 'value':
    rows[line]['value'] = bad
  else:
    rows[line]['labels'] = re.sub(rf'\|{key}:[^|]*\|', f'|{key}:{bad}|',
                                  rows[line]['labels'])
  path = _Write(tmp_path / 'h.json', rows)
  code, out, err = _Compare(compare, capsys, path, '--include_unconfirmed')
  _OneLine(code, err)
  assert f'{path}:{line + 1}: {key} ' in err and str(bad) in err, err
  assert out == ''


@pytest.mark.parametrize('key,at', [('value', 'sample'),
                                    ('servers_vm_count', 'metadata')])
def test_a_key_twice_in_one_object_is_one_line(compare, capsys, tmp_path,
                                               key, at):
  # JSON that names a key twice read as its last value, silently: a
  # "value" added at a line's end replaced the measured one unseen.
  rows = _Rows()
  line = next(i for i, r in enumerate(rows)
              if r['metric'] == 'latency_capped_throughput')
  if at == 'metadata':
    rows[line]['metadata'] = {key: 1}
  text = json.dumps(rows[line])
  rows[line] = None
  if at == 'sample':
    twice = text[:-1] + f', "{key}": 1e6}}'
  else:
    twice = text.replace(f'"{key}": 1}}', f'"{key}": 1, "{key}": 2}}')
  assert twice.count(f'"{key}"') == 2
  path = tmp_path / 'h.json'
  path.write_text(''.join(twice + '\n' if r is None else json.dumps(r) + '\n'
                          for r in rows))
  code, out, err = _Compare(compare, capsys, str(path),
                            '--include_unconfirmed')
  _OneLine(code, err)
  assert f'{path}:{line + 1}: the key "{key}" is given twice' in err, err
  assert out == ''


def test_a_label_twice_is_one_line(compare, capsys, tmp_path):
  # |k:a|,...,|k:b|: the last read, silently, as a key twice in JSON was.
  rows = _Rows()
  line = next(i for i, r in enumerate(rows)
              if r['metric'] == 'latency_capped_throughput')
  rows[line]['labels'] += ',|servers_vm_count:9|'
  assert rows[line]['labels'].count('|servers_vm_count:') == 2
  path = _Write(tmp_path / 'h.json', rows)
  code, out, err = _Compare(compare, capsys, path, '--include_unconfirmed')
  _OneLine(code, err)
  assert (f"{path}:{line + 1}: not a PKB sample (the label 'servers_vm_count' "
          'is given twice)') in err, err
  assert out == ''


def test_infinite_metadata_reads_as_not_recorded(compare, capsys, tmp_path):
  rows = _Rows()
  for row in rows:
    row['labels'] = re.sub(r'\|throughput_ci95_ops:[^|]*\|',
                           '|throughput_ci95_ops:inf|', row['labels'])
    row['labels'] = re.sub(r'\|p99_latency_ms:[^|]*\|',
                           '|p99_latency_ms:-inf|', row['labels'])
  md = tmp_path / 'summary.md'
  code, out, err = _Compare(compare, capsys, _Write(tmp_path / 'h.json', rows),
                            f'--report={tmp_path / "r.html"}',
                            f'--markdown={md}', '--include_unconfirmed')
  assert code == 0, err
  board = [l for l in out.splitlines() if l.startswith('1 ')][0]
  # No interval and no p99 to show: '?', not 'inf' or a crash.
  assert '± ?' in board and 'inf' not in board and ' ? ' in board


def test_figures_whose_mean_overflows_read_as_not_recorded(compare, capsys,
                                                          tmp_path):
  # Each finite, so loaded; but the mean of two runs' 1e308 is inf, which
  # --json refused (exit 3: 'Out of range float values are not JSON
  # compliant: inf') and the text leaderboard showed as 'inf'.
  history = tmp_path / 'history'
  shutil.copytree(HISTORY, history)
  for root, _, files in os.walk(history):
    if loader.RESULTS_FILE in files:
      path = os.path.join(root, loader.RESULTS_FILE)
      with open(path) as f:
        text = f.read()
      for key in ('p99_latency_ms', 'servers_usd_per_hour_total'):
        text = re.sub(rf'\|{key}:[^|]*\|', f'|{key}:1e308|', text)
      with open(path, 'w') as f:
        f.write(text)
  board_json = tmp_path / 'board.json'
  code, out, err = _Compare(compare, capsys, str(history),
                            f'--json={board_json}', '--include_unconfirmed',
                            f'--report={tmp_path / "r.html"}')
  assert code == 0, err
  ranked = [r for r in json.loads(board_json.read_text()) if r['ranked']]
  # A cell of one run keeps its (finite) figure; one of several has none.
  for key in ('p99_latency_ms', 'usd_per_hour'):
    assert {None, 1e308} <= {r[key] for r in ranked}, key
  assert 'inf' not in out


def test_metadata_nested_50000_deep_is_one_line(compare, capsys, tmp_path):
  rows = _Rows()
  first = dict(rows[0])
  first.pop('labels')
  first['metadata'] = {'x': 0}
  text = json.dumps(first).replace('"x": 0', '"x": ' + '[' * 50000 +
                                   ']' * 50000)
  path = tmp_path / 'deep.json'
  path.write_text(text + '\n' + ''.join(json.dumps(r) + '\n'
                                        for r in rows[1:]))
  code, _, err = _Compare(compare, capsys, str(path))
  _OneLine(code, err)
  assert f'{path}:1:' in err


def test_a_tree_nested_past_the_walks_depth_is_one_line(compare, capsys,
                                                       tmp_path):
  # os.walk recurses once a level: 1,500 levels (3 KB of path) ended in
  # 'compare: internal error RecursionError: ...', exit 3.
  tree = deep = tmp_path / 'tree'
  tree.mkdir()
  for _ in range(1500):  # One level at a time: mkdir(parents=True) recurses.
    deep = deep / 'a'
    deep.mkdir()
  _Write(deep / 'perfkitbenchmarker_results.json', _Rows())
  try:
    code, _, err = _Compare(compare, capsys, str(tree))
  finally:  # Deepest first: pytest's rmtree of tmp_path recurses too.
    (deep / 'perfkitbenchmarker_results.json').unlink()
    while deep != tree:
      deep.rmdir()
      deep = deep.parent
  _OneLine(code, err)
  assert 'nested too deeply' in err


def test_metadata_deeper_than_the_cap_is_one_line(tmp_path):
  rows = _Rows()
  rows[0]['metadata'] = {'x': json.loads('[' * 20 + ']' * 20)}
  rows[0].pop('labels')
  with pytest.raises(loader.LoadError, match=r':1: metadata nested more'):
    loader.Load([_Write(tmp_path / 'h.json', rows)])


def test_a_line_longer_than_any_sample_is_refused(tmp_path):
  rows = _Rows()
  rows[0]['labels'] += (',|junk:' + 'x' * (bigquery_schema.MAX_LINE_BYTES + 10)
                        + '|')
  with pytest.raises(loader.LoadError, match=r':1: a line longer than'):
    loader.Load([_Write(tmp_path / 'h.json', rows)])


def test_markdown_summary_escapes_what_the_samples_say(compare, capsys,
                                                       tmp_path):
  hostile = '<script>alert(1)</script>|[x](http://e)*_'
  rows = _Rows()
  for row in rows:
    row['labels'] = row['labels'].replace(
        '|local_priced_as:AWS:c6gn.xlarge|', f'|local_priced_as:{hostile}|')
  md, page = tmp_path / 'summary.md', tmp_path / 'r.html'
  code, _, err = _Compare(compare, capsys, _Write(tmp_path / 'h.json', rows),
                          f'--markdown={md}', f'--report={page}',
                          '--include_unconfirmed')
  assert code == 0, err
  text = md.read_text()
  assert '<script>' not in text and not re.search(r'(?<!\\)\]\(', text)
  assert '&lt;script&gt;' in text
  board_rows = [l for l in text.splitlines() if l.startswith('| 1 |')]
  header = [l for l in text.splitlines() if l.startswith('| # |')][0]
  # The '|' in the data does not add a column.
  assert len(re.findall(r'(?<!\\)\|', board_rows[0])) == header.count('|')
  # The page's one script is its own (the scroll cue); the samples' is text.
  html = page.read_text()
  assert '<script>alert' not in html and '&lt;script&gt;alert(1)' in html
  assert html.count('<script') == 1


def test_every_key_the_views_read_may_be_missing():
  """Older or foreign rows lack keys: each view still renders."""
  frame = loader.Load([ONE_RUN], keys=report.HistoryKeys())
  present = [k for k in report.HistoryKeys() if k in frame.columns]
  assert 'load_generator_version' in present and len(present) > 25
  # Keys only the cell labels read go through row.get: one pass without all
  # of them; every other key is left out on its own.
  elsewhere = set(leaderboard.METADATA_KEYS + charts.METADATA_KEYS +
                  report.METADATA_KEYS + changepoints.METADATA_KEYS)
  labels_only = [k for k in present if k not in elsewhere]
  drops = [labels_only] + [[k] for k in present if k in elsewhere]
  with warnings.catch_warnings():
    warnings.simplefilter('ignore', RuntimeWarning)
    for dropped in drops:
      key = dropped[0]
      analysis = report.Analyze(
          leaderboard.Prepare(frame.drop(columns=dropped)),
          report.Settings(include_unconfirmed=True))
      report.FormatText(analysis)
      report.RenderMarkdown(analysis)
      report.Provenance(analysis.frame)
      if key in charts.METADATA_KEYS:
        charts.ProbeCurves(analysis.night_frame)
        if not analysis.board.empty:
          charts.PricePerformanceBars(analysis.board)


def test_views_read_only_the_keys_they_declare():
  """compare loads only report.HistoryKeys(): the report is the same."""
  with warnings.catch_warnings():
    warnings.simplefilter('ignore', RuntimeWarning)
    texts = []
    for keys in (None, report.HistoryKeys()):
      frame = leaderboard.Prepare(loader.Load([HISTORY], keys=keys))
      analysis = report.Analyze(frame, report.Settings(
          include_unconfirmed=True))
      texts.append((report.FormatText(analysis),
                    report.RenderMarkdown(analysis),
                    report.Provenance(analysis.frame)))
  assert texts[0] == texts[1]


def test_large_history_loads_in_memory_per_row_of_the_read_columns(
    compare, tmp_path):
  """Peak Python memory per sample while compare loads a history.

  Whole-history loading (one dict per sample, every metadata key) peaked
  near 6 KB per sample (6.1 GB for 10^6); compare's loader keeps typed
  chunks of the keys its views read.
  """
  path = str(tmp_path / 'big.json')
  rows = synthetic.WriteRepeatedRuns(HISTORY, path, 45)
  tracemalloc.start()
  try:
    frame = compare.LoadHistory([path], chunk_rows=100)
    _, peak = tracemalloc.get_traced_memory()
  finally:
    tracemalloc.stop()
  assert len(frame) == rows > 700
  assert peak / rows < 2000, f'{peak / rows:.0f} bytes per sample'


_ESCAPES = '\x1b]0;pwned\x07\x1b[2J\x1b[31m\r\x9b1m'


def test_terminal_escapes_in_a_results_file_are_shown_not_played(
    compare, capsys, tmp_path):
  """Issue 24 item 6: compare printed a results file's escape sequences
  raw (a window title, a clear screen) on the console and in Markdown."""
  rows = _Rows()
  for row in rows:
    row['labels'] = row['labels'].replace(
        '|local_priced_as:AWS:c6gn.xlarge|',
        f'|local_priced_as:AWS:c6gn.xlarge{_ESCAPES}|')
  md, page, board = (tmp_path / 'summary.md', tmp_path / 'r.html',
                     tmp_path / 'b.json')
  code, out, err = _Compare(compare, capsys, _Write(tmp_path / 'h.json', rows),
                            f'--markdown={md}', f'--report={page}',
                            f'--json={board}', '--include_unconfirmed')
  assert code == 0, err
  assert 'c6gn.xlarge\\x1b]0;pwned\\x07' in out  # Shown, as text.
  for text in (out, err, md.read_text(), page.read_text(),
               board.read_text()):
    assert not re.search('[\x00-\x08\x0b-\x1f\x7f-\x9f]', text)


@pytest.mark.parametrize('rank', [False, True])
def test_a_newline_in_a_name_forges_no_line_of_the_report(compare, capsys,
                                                          tmp_path, rank):
  # The console report escaped controls but kept line breaks, its values'
  # too: this machine type printed a second leaderboard row ('1    local as
  # GCP:forged-64 ... 999,999,999') and a second 'Not ranked' cell line.
  path = os.path.join(HISTORY, 'hostile', 'newline_in_machine_type.json')
  md, page, board = (tmp_path / 'summary.md', tmp_path / 'r.html',
                     tmp_path / 'b.json')
  code, out, err = _Compare(compare, capsys, path, f'--markdown={md}',
                            f'--report={page}', f'--json={board}',
                            *(['--include_unconfirmed'] if rank else []))
  assert code == 0, err
  assert not [l for l in out.splitlines() if 'forged' in l and
              not l.startswith(('1    local as AWS:', '  local as AWS:'))]
  assert 'c6gn.xlarge\\n1    local as GCP:forged-64' in out  # Shown, as text.
  names = [row['machine_type'] for row in json.loads(board.read_text())]
  assert names and not [n for n in names if '\n' in n]
  html = page.read_text()
  assert 'c6gn.xlarge\\n1 ' in html and 'c6gn.xlarge\n' not in html


def test_a_long_name_is_drawn_cut_to_a_few_lines(tmp_path):
  # A machine type of 200,000 characters was wrapped into some 6,000 lines
  # of bar label and curve title: compare --report of this one run took
  # more than a minute of CPU and 700 MB (a 20,000 one: 22 CPU-s, 289 MB,
  # and a 'Tight layout not applied' warning on stderr; now 3.7 s, 131 MB).
  long = 'X' * 200000
  rows = _Rows()
  for row in rows:
    row['labels'] = row['labels'].replace(
        '|local_priced_as:AWS:c6gn.xlarge|', f'|local_priced_as:{long}|')
  frame = leaderboard.Prepare(loader.Load([_Write(tmp_path / 'h.json', rows)]))
  analysis = report.Analyze(frame, report.Settings(include_unconfirmed=True))
  for figure in (charts.PricePerformanceBarsFigure(analysis.board),
                 charts.ProbeCurvesFigure(analysis.night_frame)):
    texts = [t.get_text() for t in figure.findobj(matplotlib.text.Text)]
    assert any('(200,009 characters)' in t for t in texts), texts
    assert max(t.count('\n') for t in texts) < 10
    assert max(len(t) for t in texts) < 400


def test_escapes_in_an_error_line_are_shown_not_played(compare, capsys,
                                                       tmp_path):
  missing = str(tmp_path / f'gone{_ESCAPES}.json')
  code, _, err = _Compare(compare, capsys, missing)
  _OneLine(code, err)
  assert '\x1b' not in err and '\\x1b]0;pwned' in err


def _CompareProcess(*args):
  import sys  # pylint: disable=g-import-not-at-top
  return pkb_forkserver.Run([sys.executable, COMPARE] + list(args),
                            timeout=120,
                            check=False)


@pytest.mark.e2e
def test_a_fifo_named_like_a_results_file_is_refused_not_waited_on(tmp_path):
  """Issue 24 item 12: compare hung forever on a FIFO named
  perfkitbenchmarker_results.json (in a tree, or given itself)."""
  tree = tmp_path / 'tree' / 'runs' / 'x'
  tree.mkdir(parents=True)
  fifo = tree / loader.RESULTS_FILE
  os.mkfifo(fifo)
  for given in (tmp_path / 'tree', fifo):
    proc = _CompareProcess(str(given))  # A hang is a TimeoutExpired.
    assert proc.returncode == 2, proc.stderr
    assert f'{fifo}: not a regular file (a FIFO)' in proc.stderr
    if given == fifo:
      assert proc.stderr.count('\n') == 1, proc.stderr
    else:  # Skipped in the tree, which then holds no samples.
      skipped, empty = proc.stderr.splitlines()
      assert skipped.startswith(f'compare: skipped {fifo}: '), skipped
      assert empty.startswith('compare: no samples in '), empty


def _RunWithRecord(tmp_path):
  run = tmp_path / 'runs' / 'x'
  run.mkdir(parents=True)
  with open(ONE_RUN) as f:
    (run / loader.RESULTS_FILE).write_text(f.read())
  return run


def _ComparesTheRestSkipping(compare, capsys, tree, skipped, what):
  """compare over `tree` compares its runs, saying in one line that it
  skipped `skipped` (`what` it is)."""
  code, out, err = _Compare(compare, capsys, str(tree),
                            '--include_unconfirmed')
  assert code == 0, err
  assert err == (f'compare: skipped {skipped}: {what} (never followed in a '
                 'directory read as input); give it by name to read it\n')
  assert out  # The tree's own runs are compared.


@pytest.mark.e2e
def test_a_fifo_as_the_run_record_is_not_waited_on(tmp_path):
  run = _RunWithRecord(tmp_path)
  os.mkfifo(run / loader.RUN_RECORD_FILE)
  proc = _CompareProcess(str(tmp_path), '--include_unconfirmed')
  assert proc.returncode == 0, proc.stderr


def test_a_run_read_twice_is_counted_once_or_refused_when_its_copies_differ(
    tmp_path, compare, capsys):
  """`compare HISTORY copy/` where copy/ holds run 902af480 again: with its
  samples unchanged the report is the history's own, and stderr says the
  run was counted once; with its answer edited (a hand-edited download)
  compare refuses in one line naming both files (the figure was the copy's
  or the run's by the order they were given)."""
  _, alone, _ = _Compare(compare, capsys, HISTORY, '--include_unconfirmed')
  copy = tmp_path / 'copy' / '902af480'
  copy.mkdir(parents=True)
  _Write(copy / loader.RESULTS_FILE, _Rows())
  code, out, err = _Compare(compare, capsys, HISTORY, str(tmp_path / 'copy'),
                            '--include_unconfirmed')
  assert code == 0 and out == alone
  assert err == (f'compare: run 902af480 read 2 times, the same samples '
                 f'each time ({ONE_RUN}, {copy / loader.RESULTS_FILE}); '
                 f'counted once, from {ONE_RUN}\n')
  rows = _Rows()
  for row in rows:
    if row['metric'] == 'latency_capped_throughput':
      row['value'] *= 1.4
  _Write(copy / loader.RESULTS_FILE, rows)
  code, out, err = _Compare(compare, capsys, str(tmp_path / 'copy'), HISTORY,
                            '--include_unconfirmed')
  _OneLine(code, err)
  assert out == '' and (f'run 902af480 has different samples in '
                        f'{copy / loader.RESULTS_FILE} and in {ONE_RUN}') in err


def test_a_results_file_in_a_tree_is_read_only_as_the_trees_own(
    tmp_path, compare, capsys):
  """Issue 35: a history (run directories downloaded and shared) is read
  through regular_files.Directory: a results file there that is a symlink
  (to a file elsewhere, here a good one) is not followed but skipped, in
  one line naming it, and the rest of the tree is compared (it stopped the
  whole comparison, exit 2); given by name on the command line, a symlink
  is the user's choice."""
  run = _RunWithRecord(tmp_path / 'tree')
  other = tmp_path / 'tree' / 'runs' / 'y'
  other.mkdir()
  shutil.copy(run / loader.RESULTS_FILE, other / loader.RESULTS_FILE)
  elsewhere = tmp_path / 'elsewhere.json'
  os.rename(run / loader.RESULTS_FILE, elsewhere)
  os.symlink(elsewhere, run / loader.RESULTS_FILE)
  _ComparesTheRestSkipping(compare, capsys, tmp_path / 'tree',
                           run / loader.RESULTS_FILE, 'a symbolic link')
  code, _, err = _Compare(compare, capsys, str(run / loader.RESULTS_FILE),
                          '--include_unconfirmed')
  assert code == 0, err
  # A symlinked run directory is not followed either, and said so (it was
  # left out without a word).
  os.remove(run / loader.RESULTS_FILE)
  os.rename(elsewhere, run / loader.RESULTS_FILE)
  shutil.rmtree(other)  # Else the run is read twice, x and y (said too).
  os.symlink(run, tmp_path / 'tree' / 'runs' / 'z')
  _ComparesTheRestSkipping(compare, capsys, tmp_path / 'tree',
                           tmp_path / 'tree' / 'runs' / 'z',
                           'a symbolic link to a directory')


def test_a_device_as_the_run_record_is_not_read(tmp_path):
  # (At 90140b1 this reads /dev/zero until memory runs out: run with care.)
  run = _RunWithRecord(tmp_path)
  os.symlink('/dev/zero', run / loader.RUN_RECORD_FILE)
  assert loader.ReadCommandLine(str(run / loader.RESULTS_FILE)) is None


def test_a_run_record_naming_a_key_twice_gives_no_command_line(tmp_path):
  """A run record beside the samples naming "argv" twice was read as its
  last: compare's report showed a command line the run never ran. Such a
  record is malformed now, as one that is not JSON: no command line."""
  run = _RunWithRecord(tmp_path)
  record = run / loader.RUN_RECORD_FILE
  record.write_text(json.dumps({
      'format_version': sorted(loader.RUN_RECORD_FORMAT_VERSIONS)[-1],
      'info': {'argv': ['pkb.py', '--benchmarks=redis_memtier']}}))
  results = str(run / loader.RESULTS_FILE)
  assert loader.ReadCommandLine(results) == (
      './pkb.py --benchmarks=redis_memtier')
  record.write_text(record.read_text().replace(
      '"argv"', '"argv": ["pkb.py", "--redis_cap_ms=99"], "argv"', 1))
  assert loader.ReadCommandLine(results) is None


def test_a_results_file_growing_while_read_is_read_to_its_size_at_open(
    tmp_path):
  path = tmp_path / 'h.json'
  with open(ONE_RUN) as f:
    path.write_text(f.read())
  rows = loader.IterJsonLines(str(path))
  first = next(rows)
  with open(path, 'a') as f:  # Another run appends meanwhile.
    f.write(json.dumps(_Rows()[0]) + '\n')
  assert 1 + len(list(rows)) == len(_Rows())
  assert first['fixed']['metric']


@pytest.mark.parametrize('flag', [
    '--max_pvalue=nan', '--max_pvalue=2', '--night_hours=inf',
    '--night_hours=0', '--matrix_gap_minutes=nan', '--noise_multiple=-1',
    '--min_change_pct=1e9', '--recent_nights=0', '--recent_nights=1000000'])
def test_a_number_flag_out_of_range_is_refused_in_one_line(compare, capsys,
                                                           flag):
  code, out, err = _Compare(compare, capsys, HISTORY, flag)
  _OneLine(code, err)
  assert flag.split('=')[0] in err and out == ''


@pytest.mark.parametrize('flag', ['--json', '--report', '--markdown'])
@pytest.mark.parametrize('target', [loader.RESULTS_FILE,
                                    loader.RUN_RECORD_FILE])
def test_an_output_that_is_a_file_compare_reads_is_refused(
    compare, capsys, tmp_path, flag, target):
  """`compare h --json=h/runs/902af480/perfkitbenchmarker_results.json`
  wrote the leaderboard over that run's 23 samples (exit 0); the next
  compare stopped at the file as not JSON lines."""
  history = tmp_path / 'h'
  shutil.copytree(HISTORY, history)
  run_dir = history / 'runs' / '902af480'
  os.symlink(run_dir / target, tmp_path / 'link')  # Another spelling.
  before = {p: p.read_bytes() for p in run_dir.iterdir()}
  for out in (run_dir / target, tmp_path / 'link'):
    code, stdout, err = _Compare(compare, capsys, str(history),
                                 f'{flag}={out}')
    _OneLine(code, err)
    assert f'{flag}={out} is {run_dir / target}, which this compare' in err
    assert stdout == ''
  assert {p: p.read_bytes() for p in run_dir.iterdir()} == before


@pytest.mark.parametrize('first,second', [('--report', '--json'),
                                          ('--json', '--markdown'),
                                          ('--report', '--markdown')])
def test_two_outputs_naming_one_file_are_refused(compare, capsys, tmp_path,
                                                 first, second):
  """`--report=out --json=out` wrote the page, then the JSON over it (exit
  0, no page); `--json=out --markdown=out` appended Markdown to the JSON."""
  out = tmp_path / 'out'
  os.symlink(out, tmp_path / 'link')  # Another spelling of the same file.
  code, stdout, err = _Compare(compare, capsys, HISTORY, f'{first}={out}',
                               f'{second}={tmp_path / "link"}')
  _OneLine(code, err)
  assert 'name the same file' in err and stdout == ''
  assert sorted(os.listdir(tmp_path)) == ['link']
  # Not a regular file: both go there, nothing is spoiled.
  code, stdout, err = _Compare(compare, capsys, HISTORY, f'{first}=/dev/null',
                               f'{second}=/dev/null')
  assert code == 0 and err == '', err


def test_ctrl_c_is_one_line_and_exit_130(compare, capsys, monkeypatch):
  """Interrupted, as pkb and pkb-recompute are: it exited 2, which the
  docs call bad input (a CI step cancelled mid-load read as a bad
  history)."""
  def Interrupted(*args, **kwargs):
    raise KeyboardInterrupt

  monkeypatch.setattr(loader, 'Load', Interrupted)
  code, out, err = _Compare(compare, capsys, HISTORY)
  assert (code, out, err) == (130, '', 'compare: interrupted\n')


@pytest.mark.parametrize('flag', ['report', 'markdown', 'json', 'since',
                                  'night', 'bigquery_table', 'bq_project',
                                  'bq_api_endpoint'])
def test_an_empty_flag_is_refused_in_one_line(compare, capsys, flag):
  """As pkb's empty path flags: `--markdown="$GITHUB_STEP_SUMMARY"` with
  the variable unset wrote no summary, exit 0, and an empty --since,
  --night or --bigquery_table was dropped without a word."""
  code, out, err = _Compare(compare, capsys, HISTORY, f'--{flag}=')
  _OneLine(code, err)
  assert err == (f'compare: --{flag} is empty; give a value, or drop the '
                 'flag.\n')
  assert out == ''


def test_an_output_that_cannot_be_written_is_named_by_its_flag(
    compare, capsys, tmp_path):
  """The line named all three outputs ('--report/--markdown/--json: ...'),
  not the one given."""
  code, _, err = _Compare(compare, capsys, HISTORY, f'--json={tmp_path}')
  _OneLine(code, err)
  assert err == f'compare: --json={tmp_path} is a directory; give a file name\n'
  missing = tmp_path / 'no' / 'r.md'
  code, _, err = _Compare(compare, capsys, HISTORY, f'--markdown={missing}')
  _OneLine(code, err)
  assert err == f'compare: --markdown={missing}: no directory {missing.parent}\n'
