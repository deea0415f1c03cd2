"""The report agrees with the runs (issue 17 point 3).

Histories written as PKB JSON lines, shaped like real runs: each run has
its answer (latency_capped_throughput with its own interval and verdict,
price_performance, hourly_cost) and confirming repeats at another load,
over the cap, as a run that backed off records them. The leaderboard's
figure must come from the runs' own answers only, lie within them, carry the
right kind of interval and noise call, agree with the history series, leave
out unconfirmed runs unless asked, and come out of compare.py --json.
"""

import html
import itertools
import json
import os

import pytest

from perfkitbenchmarker import sample
from perfkitbenchmarker.results_history import answers
from perfkitbenchmarker.results_history import changepoints
from perfkitbenchmarker.results_history import leaderboard
from perfkitbenchmarker.results_history import loader
from perfkitbenchmarker.results_history import report
import script_modules

HERE = os.path.dirname(os.path.abspath(__file__))
COMPARE = os.path.join(os.path.dirname(HERE), 'scripts', 'compare.py')
START = 1795000000.0  # 2026-11-17, 06:13 UTC
_SEQ = itertools.count()


def _Row(run_uri, metric, value, unit, when, machine, **metadata):
  labels = dict(cloud='GCP', servers_machine_type=machine,
                redis_server_cluster_mode=False, redis_total_num_processes=1,
                servers_vm_count=1, memtier_ratio='1:10',
                memtier_key_pattern='R:R', memtier_data_size=100,
                memtier_key_maximum=1000, latency_cap_ms=1.0, **metadata)
  return {'metric': metric, 'value': value, 'unit': unit, 'timestamp': when,
          'test': 'redis_memtier', 'official': False, 'owner': 't',
          'run_uri': f'{run_uri}-{next(_SEQ):04d}',
          'sample_uri': f's{next(_SEQ)}',
          'labels': sample.FormatLabels(labels)}


def _Run(run_uri, machine, answer, ci, minute, verdict='confirmed', usd=1.0,
         repeat_clients=64, held=False, **answer_extra):
  """A run: 4 repeats over the cap that did not hold (at another load, or
  at the answer's own load when its budget then ran out), then, if `held`,
  3 tight repeats under the cap at the answer's load, then its answer."""
  when = START + 60 * minute
  rows = [_Row(run_uri, 'throughput', 0.55 * answer, 'ops/sec', when + i,
               machine, probe_index=i, probe_role='confirm', threads=1,
               clients=repeat_clients, average_latency_ms=1.2,
               under_latency_cap=False)
          for i in range(4)]
  if held:
    rows += [_Row(run_uri, 'throughput', answer * (1 + d), 'ops/sec',
                  when + 5 + i, machine, probe_index=4 + i,
                  probe_role='confirm', threads=1, clients=32,
                  average_latency_ms=0.8, under_latency_cap=True)
             for i, d in enumerate((-0.003, 0.0, 0.003))]
  answer_meta = dict(verdict=verdict, verdict_reason=f'{verdict} here',
                     threads=1, clients=32, average_latency_ms=0.8,
                     p99_latency_ms=2.0, confirmation_repeats=3,
                     throughput_ci95_ops=ci, **answer_extra)
  rows.append(_Row(run_uri, 'latency_capped_throughput', answer, 'ops/sec',
                   when + 10, machine, **answer_meta))
  rows.append(_Row(run_uri, 'hourly_cost', usd, '$/hr', when + 10, machine,
                   cost_scope='server VMs', verdict=verdict))
  rows.append(_Row(run_uri, 'price_performance', answer / usd,
                   'ops/s per $/hr', when + 10, machine,
                   servers_usd_per_hour_total=usd, **answer_meta))
  return rows


def _Frame(tmp_path, runs):
  path = tmp_path / 'history.json'
  with open(path, 'w') as f:
    for row in itertools.chain.from_iterable(runs):
      f.write(json.dumps(row) + '\n')
  return leaderboard.Prepare(loader.Load([str(path)])), str(path)


def _Board(frame, include=False):
  board = leaderboard.Leaderboard(frame, include_unconfirmed=include)
  return board.set_index('machine_type')


def test_two_runs_that_disagree_the_figure_is_their_answers_mean(tmp_path):
  """Issue 17: two runs printed 22,005 and 29,493 and the board said
  14,839 +- 1,306 (the mean of repeats over the cap at another load)."""
  frame, _ = _Frame(tmp_path, [
      _Run('a1', 'n2d-standard-16', 22005, 300, 0, repeat_clients=32),
      _Run('a2', 'n2d-standard-16', 29493, 400, 5),
      _Run('b1', 't2d-standard-16', 20000, 200, 10)])
  board = _Board(frame)
  a = board.loc['n2d-standard-16']
  assert a['capped_ops'] == pytest.approx((22005 + 29493) / 2)
  assert 22005 <= a['capped_ops'] <= 29493
  assert a['interval_kind'] == answers.WITHIN_RUN
  assert a['capped_ops_ci95'] == pytest.approx((300 ** 2 + 400 ** 2) ** .5 / 2)
  assert [r['capped_ops'] for r in a['run_answers']] == [22005, 29493]
  # Two runs cannot tell run-to-run noise: no "N % below best".
  b = board.loc['t2d-standard-16']
  assert b['verdict'] == leaderboard.NOISE_UNKNOWN_WITHIN
  # The history series (the chart) shows the same figure that night.
  points = changepoints.HistoryPoints(frame)
  expected = {'latency_capped_throughput': a['capped_ops'],
              'price_performance': a['price_performance']}
  for metric, figure in expected.items():
    at = points[(points['metric'] == metric) &
                (points['cell'] == a['cell'])]
    assert at['value'].tolist() == [pytest.approx(figure)]


def test_a_figure_over_runs_of_two_server_versions_says_so(tmp_path):
  # A manual --redis_server_version=8.2 run beside the distro's 7.0 one is
  # the same cell (a version change is a step in one history series), so
  # the row's figure is their mean: its notes name both versions.
  frame, _ = _Frame(tmp_path, [
      _Run('a1', 'n2d-standard-16', 22005, 300, 0,
           redis_server_version='7.0.15'),
      _Run('a2', 'n2d-standard-16', 29493, 400, 5,
           redis_server_version='8.2.3'),
      _Run('b1', 't2d-standard-16', 20000, 200, 10,
           redis_server_version='7.0.15'),
      _Run('b2', 't2d-standard-16', 21000, 200, 15,
           redis_server_version='7.0.15')])
  board = leaderboard.Leaderboard(frame)
  assert board['server_versions'].tolist() == [['7.0.15', '8.2.3'],
                                               ['7.0.15']]
  notes = {r['machine_type']: r['notes']
           for r in report.LeaderboardCells(board)}
  assert notes == {'n2d-standard-16': 'server versions 7.0.15, 8.2.3',
                   't2d-standard-16': ''}


def test_a_figure_over_runs_of_two_harness_versions_says_so(tmp_path,
                                                         capsys):
  """A cell's runs before and after a harness fix (a parser's, say) were
  averaged into one row with no word, where mixed server versions get a
  note: the row now names the harness versions (`harness_version`) in its
  notes, in the text, Markdown and HTML tables and in the JSON."""
  old, new = 'v1.2-3-g1a2b3c4', 'v1.2-7-g5d6e7f8-dirty'
  frame, path = _Frame(tmp_path, [
      _Run('a1', 'n2d-standard-16', 22005, 300, 0, harness_version=old,
           redis_server_version='7.0.15'),
      _Run('a2', 'n2d-standard-16', 29493, 400, 5, harness_version=new,
           redis_server_version='8.2.3'),
      _Run('b1', 't2d-standard-16', 20000, 200, 10, harness_version=new),
      _Run('b2', 't2d-standard-16', 21000, 200, 15, harness_version=new)])
  board = leaderboard.Leaderboard(frame)
  assert board['harness_versions'].tolist() == [[old, new], [new]]
  notes = {r['machine_type']: r['notes']
           for r in report.LeaderboardCells(board)}
  assert notes == {
      'n2d-standard-16': (f'server versions 7.0.15, 8.2.3; '
                          f'harness versions {old}, {new}'),
      't2d-standard-16': ''}
  compare = script_modules.Load(COMPARE, 'compare_harness_versions')
  out = {k: tmp_path / f'board.{k}' for k in ('json', 'md', 'html')}
  assert compare.Main(['compare', path, f'--json={out["json"]}',
                       f'--markdown={out["md"]}',
                       f'--report={out["html"]}']) == 0
  note = f'harness versions {old}, {new}'
  printed = capsys.readouterr().out
  row = [line for line in printed.splitlines() if 'n2d-standard-16' in line]
  assert len(row) == 1 and row[0].rstrip().endswith(note)
  assert report.EscapeMarkdown(note) in out['md'].read_text()
  assert f'<span class="tag">server versions 7.0.15, 8.2.3; {note}</span>' in (
      out['html'].read_text())
  rows = {r['machine_type']: r for r in json.loads(out['json'].read_text())}
  assert rows['n2d-standard-16']['harness_versions'] == [old, new]
  assert rows['t2d-standard-16']['harness_versions'] == [new]


def test_runs_that_differ_more_than_their_repeats_interval_across_runs(
    tmp_path):
  """Issue 17: repeats of all runs were pooled as independent samples, so
  runs 6 % apart with tight repeats looked like a significant 4 % gap."""
  frame, _ = _Frame(tmp_path, [
      _Run('a1', 'A', 100000, 500, 0, held=True),
      _Run('a2', 'A', 106000, 500, 3, held=True),
      _Run('a3', 'A', 94000, 500, 6, held=True),
      _Run('b1', 'B', 95500, 500, 9, held=True),
      _Run('b2', 'B', 96500, 500, 12, held=True),
      _Run('b3', 'B', 96000, 500, 15, held=True),
      _Run('c1', 'C', 50000, 500, 18), _Run('c2', 'C', 51000, 500, 21),
      _Run('c3', 'C', 49000, 500, 24)])
  board = _Board(frame)
  assert list(board.index) == ['A', 'B', 'C']
  assert set(board['interval_kind']) == {answers.ACROSS_RUNS}
  # The runs' spread (sd 6,000), not their repeats' (+-0.3 %), sets A's
  # interval: t(2) x 6,000 / sqrt(3).
  assert board.loc['A', 'capped_ops_ci95'] == pytest.approx(
      4.302653 * 6000 / 3 ** .5, rel=1e-4)
  # So B, 4 % under A, is within noise; the 9 pooled repeats of A (t(8) x
  # 5,200 / 3) would have called it "4% below best".
  assert board.loc['B', 'verdict'] == 'within noise of best'
  assert board.loc['C', 'verdict'] == '50% below best'
  for _, row in board.iterrows():
    values = [r['capped_ops'] for r in row['run_answers']]
    assert min(values) <= row['capped_ops'] <= max(values)


def test_unconfirmed_runs_are_left_out_unless_asked(tmp_path):
  frame, _ = _Frame(tmp_path, [
      _Run('a1', 'A', 20000, 300, 0),
      _Run('a2', 'A', 40000, 300, 3, verdict='unconfirmed'),
      _Run('b1', 'B', 90000, 300, 6, verdict='client_bound')])
  board = _Board(frame)
  assert list(board.index) == ['A']
  assert board.loc['A', 'capped_ops'] == 20000
  assert board.loc['A', 'runs'] == 1
  unranked = leaderboard.Unranked(frame)
  assert list(unranked['machine_type']) == ['B']
  assert unranked.iloc[0]['answer_verdict'] == 'client_bound (1 of 1 run)'
  assert unranked.iloc[0]['reasons'] == ['run b1: client_bound here']
  points = changepoints.HistoryPoints(frame)
  capped = points[points['metric'] == 'latency_capped_throughput']
  assert capped['value'].tolist() == [20000]
  both = _Board(frame, include=True)
  assert list(both.index) == ['B', 'A']
  assert both.loc['A', 'capped_ops'] == 30000
  assert both.loc['A', 'answer_verdict'] == (
      'confirmed (1 of 2 runs), unconfirmed (1 of 2 runs)')
  assert leaderboard.Unranked(frame, include_unconfirmed=True).empty


def test_compare_json_rows_lie_within_their_runs_answers(tmp_path, capsys):
  _, path = _Frame(tmp_path, [
      _Run('a1', 'A', 22005, 300, 0), _Run('a2', 'A', 29493, 400, 5),
      _Run('b1', 'B', 9000, 300, 10, verdict='disturbed')])
  compare = script_modules.Load(COMPARE, 'compare_json')
  out = tmp_path / 'board.json'
  assert compare.Main(['compare', path, f'--json={out}']) == 0
  printed = capsys.readouterr().out
  assert 'Not ranked: 1 cell(s) with no confirmed answer' in printed
  rows = json.loads(out.read_text())
  assert [(r['machine_type'], r['ranked']) for r in rows] == [
      ('A', True), ('B', False)]
  ranked, unranked = rows
  assert ranked['capped_ops'] == pytest.approx(25749)
  values = [r['capped_ops'] for r in ranked['runs']]
  assert min(values) <= ranked['capped_ops'] <= max(values)
  assert ranked['interval_kind'] == 'within-run'
  assert ranked['verdict'] == 'best' and ranked['answer_verdict'] == 'confirmed'
  assert ranked['run_count'] == 2 and ranked['rank'] == 1
  for key in ('engine', 'topology', 'workload', 'cell', 'night',
              'capped_ops_ci95', 'price_performance', 'usd_per_hour'):
    assert key in ranked
  assert unranked['not_ranked_because'] == ['run b1: disturbed here']
  assert unranked['runs'][0]['verdict'] == 'disturbed'
  # Bad --json destination: one line, exit 2.
  assert compare.Main(['compare', path, '--json=/no/such/dir/b.json']) == 2


def test_a_cell_whose_run_stopped_before_its_answer_is_said(tmp_path):
  """A night's run that probed and stopped before its answer (a failed
  cell of the nightly matrix keeps its probes): its cell was on neither the
  leaderboard nor the not-ranked list, and the banner said 'All 1 answer
  confirmed', green."""
  stopped = [r for r in _Run('b1', 'B', 20000, 300, 5, held=True)
             if r['metric'] == 'throughput']
  # A's three nights before: a history long enough to check for
  # regressions, so the banner's colour is the stopped cell's doing.
  earlier = [_Run(f'p{days}', 'A', 30000, 300, -24 * 60 * days)
             for days in (1, 2, 3)]
  frame, _ = _Frame(tmp_path, earlier + [_Run('a1', 'A', 30000, 300, 0),
                                         stopped])
  analysis = report.Analyze(frame, report.Settings())
  assert list(analysis.board['machine_type']) == ['A']
  (row,) = analysis.unranked.to_dict('records')
  assert row['machine_type'] == 'B'
  assert row['answer_verdict'] == f'{leaderboard.NO_ANSWER} (1 of 1 run)'
  assert row['run_answers'][0]['capped_ops'] is None
  headline = report.MakeHeadline(analysis)
  assert headline.level == 'partial'
  assert '1 cell(s) recorded no answer' in headline.known
  (line,) = [l for l in report.UnrankedLines(analysis.unranked, False)
             if 'B |' in l]
  assert 'stopped before one' in line


def test_a_fixed_load_run_is_not_a_run_that_stopped_before_its_answer(
    tmp_path):
  """A --memtier_fixed_load run (the Redis-vs-Dragonfly and flash presets)
  has no capped answer by design: compare listed each of its workloads as
  'no answer (1 of 1 run): run c1: probed but recorded no latency-capped
  answer (it stopped before one)' and the banner counted them ('17 cell(s)
  recorded no answer (their runs stopped before one)') though every run
  finished; a capped search's stopped run still is one."""
  fixed = [_Row('c1', 'throughput', 20000, 'ops/sec', START + i, 'C',
                probe_index=i, probe_role='fixed', threads=1, clients=4,
                average_latency_ms=0.2) for i in range(2)]
  stopped = [r for r in _Run('b1', 'B', 20000, 300, 5)
             if r['metric'] == 'throughput']
  earlier = [_Run(f'p{days}', 'A', 30000, 300, -24 * 60 * days)
             for days in (1, 2, 3)]
  frame, _ = _Frame(tmp_path, earlier + [_Run('a1', 'A', 30000, 300, 0),
                                         fixed, stopped])
  analysis = report.Analyze(frame, report.Settings())
  assert list(analysis.unranked['machine_type']) == ['B']
  assert '1 cell(s) recorded no answer' in report.MakeHeadline(
      analysis).known


def test_a_run_with_every_probe_over_the_cap_is_said_so(tmp_path, capsys):
  """A search whose every probe was over the cap ends with no answer
  (README "Verdicts"), not stopped: compare said 'probed but recorded no
  latency-capped answer (it stopped before one)' of such runs (a p99 cap
  on a busy machine, runs d21fd124, a3c9cd23 and b06d1e21)."""
  over = [r for r in _Run('b1', 'B', 20000, 300, 5)
          if r['metric'] == 'throughput']  # 4 probes, all over the cap
  _, path = _Frame(tmp_path, [_Run('a1', 'A', 30000, 300, 0), over])
  compare = script_modules.Load(COMPARE, 'compare_over_cap')
  assert compare.Main(['compare', path]) == 0
  printed = capsys.readouterr().out
  assert ('B | redis | standalone, 1 shard/VM: no answer (1 of 1 run): run '
          'b1: every probe was over the latency cap: no load under it, so no '
          'latency-capped answer') in printed, printed
  assert 'stopped before one)' not in printed.split('\n', 1)[1]


def test_a_night_of_unpriced_machines_names_no_best(tmp_path):
  """Static machines without a price: no row has ops/s per $/hr. The board
  called its first row (the alphabetically first cell, 'a-slow') 'best' at
  '1.00' although 'b-fast' had the higher throughput; no row is compared
  now, and they follow by throughput."""
  runs = [[r for r in _Run(name, name, answer, 300, minute)
           if r['metric'] not in ('hourly_cost', 'price_performance')]
          for name, answer, minute in (('a-slow', 20000, 0),
                                       ('b-fast', 30000, 5))]
  frame, _ = _Frame(tmp_path, runs)
  board = leaderboard.Leaderboard(frame)
  assert list(board['machine_type']) == ['b-fast', 'a-slow']
  assert list(board['verdict']) == [leaderboard.UNPRICED] * 2
  assert [r['versus_best'] for r in report.LeaderboardCells(board)] == [
      '?', '?']


def test_three_unpriced_runs_of_a_cell_have_no_price_figure(tmp_path, capsys):
  """Static VMs have no price: their runs write no hourly_cost or
  price_performance. Three of them in one cell made compare exit 3
  ('internal error AttributeError', statistics.stdev over NaN); now the
  cell ranks by throughput with its price figure unknown."""
  runs = [[r for r in _Run(f's{i}', 'static', 20000 + 500 * i, 300, 5 * i)
           if r['metric'] not in ('hourly_cost', 'price_performance')]
          for i in range(3)]
  frame, path = _Frame(tmp_path, runs + [_Run('p1', 'priced', 30000, 300, 20)])
  board = _Board(frame).loc['static']
  assert board['capped_ops'] == pytest.approx(20500)
  assert board['interval_kind'] == answers.ACROSS_RUNS
  assert board['price_performance'] != board['price_performance']  # NaN
  compare = script_modules.Load(COMPARE, 'compare_unpriced')
  assert compare.Main(['compare', path, f'--report={tmp_path}/r.html',
                       f'--markdown={tmp_path}/s.md']) == 0
  printed = capsys.readouterr().out
  assert 'static' in printed and 'nan' not in printed


def test_answers_under_different_caps_are_never_compared(tmp_path, capsys):
  """README: compare keys its cells by the capped statistic, 'so a p99
  answer is never ranked beside an average one'. The night's board ranked
  every workload together: a run capped on p99 read '1.00 [1.00, 1.00]'
  'vs best' and 'noise unknown' against an average-capped run's 'best',
  and a 0.5 ms cap's answer '0.50' against a 1 ms one's, ratios of
  answers to different questions. Each workload now has its own best, its
  rows together, and nothing is compared across workloads."""
  frame, path = _Frame(tmp_path, [
      _Run('avg1', 'n2d-standard-16', 40000, 300, 0),
      _Run('avg2', 't2d-standard-16', 30000, 300, 5),
      _Run('p99a', 'n2d-standard-16', 20000, 300, 10,
           latency_cap_statistic='p99'),
      _Run('p99b', 't2d-standard-16', 25000, 300, 15,
           latency_cap_statistic='p99')])
  board = leaderboard.Leaderboard(frame)
  rows = [(w.endswith('p99'), m, v, round(r, 3)) for w, m, v, r in zip(
      board['workload'], board['machine_type'], board['verdict'],
      board['ratio_to_best'])]
  assert rows == [
      (False, 'n2d-standard-16', 'best', 1.0),
      (False, 't2d-standard-16', leaderboard.NOISE_UNKNOWN_WITHIN, 0.75),
      (True, 't2d-standard-16', 'best', 1.0),
      (True, 'n2d-standard-16', leaderboard.NOISE_UNKNOWN_WITHIN, 0.8)]
  assert [r['versus_best'] for r in report.LeaderboardCells(board)][::2] == [
      '1.00', '1.00']
  compare = script_modules.Load(COMPARE, 'compare_caps')
  assert compare.Main(['compare', path]) == 0
  printed = capsys.readouterr().out
  assert ', best of each workload by ops/s per $/hr:' in printed


def test_price_performance_bars_of_two_workloads_are_two_panels(tmp_path):
  """The bars of ops/s per $/hr put every cell of the night on one axis:
  a p99-capped answer's bar beside an average-capped one's, one longest bar
  for the night, as if the figures answered one question. Each workload
  has its own panel, axis and best now, as the leaderboard ranks it; a
  night of one workload is one panel, as before."""
  from perfkitbenchmarker.results_history import charts  # pylint: disable=g-import-not-at-top
  frame, _ = _Frame(tmp_path, [
      _Run('avg1', 'n2d-standard-16', 40000, 300, 0),
      _Run('avg2', 't2d-standard-16', 30000, 300, 5),
      _Run('p99a', 'n2d-standard-16', 20000, 300, 10,
           latency_cap_statistic='p99'),
      _Run('p99b', 't2d-standard-16', 25000, 300, 15,
           latency_cap_statistic='p99'),
      _Run('p99c', 'c3-standard-8', 5000, 300, 20,
           latency_cap_statistic='p99')])
  board = leaderboard.Leaderboard(frame)
  figure = charts.PricePerformanceBarsFigure(board)
  axes = figure.axes
  assert len(axes) == 2
  avg, p99 = sorted(set(board['workload']), key=lambda w: w.endswith('p99'))

  def Panel(ax):
    """(machine types of its bars top to bottom, each label's verdict, the
    longest bar's end)."""
    machines = [t.get_text() for t in ax.get_yticklabels()]
    verdicts = [t.get_text().split('\n', 1)[1] for t in ax.texts]
    return machines, verdicts, max(p.get_width() for p in ax.patches)

  assert Panel(axes[0]) == (['n2d-standard-16', 't2d-standard-16'],
                            ['best', leaderboard.NOISE_UNKNOWN_WITHIN],
                            40000)
  assert Panel(axes[1]) == (['t2d-standard-16', 'n2d-standard-16',
                             'c3-standard-8'],
                            ['best', leaderboard.NOISE_UNKNOWN_WITHIN,
                             leaderboard.NOISE_UNKNOWN_WITHIN], 25000)
  # Each panel names its workload and has an axis of its own.
  assert avg in axes[0].get_title(loc='left')
  assert p99 in axes[1].get_title(loc='left')
  assert p99 not in axes[0].get_title(loc='left')
  assert not axes[0].get_shared_x_axes().joined(axes[0], axes[1])
  for ax in axes:
    assert ax.get_xlim()[1] >= max(p.get_width() for p in ax.patches)
  # One workload: one panel, its bars, its title, as before.
  one = charts.PricePerformanceBarsFigure(board[board['workload'] == p99])
  assert len(one.axes) == 1 and len(one.axes[0].patches) == 3
  assert one.axes[0].get_title(loc='left').startswith('Price-performance,')


def test_one_version_with_a_comma_in_it_is_one_version(tmp_path):
  """The notes said 'server versions 7.2.4 (custom, asan)' for a row whose
  runs all ran that one server (and the same for a harness version): a
  comma in the joined text was read as more than one version. The notes
  now count the runs' distinct versions."""
  server, harness = '7.2.4 (custom, asan)', '2.1.0+local,patched'
  frame, _ = _Frame(tmp_path, [
      _Run('a1', 'n2d-standard-16', 22005, 300, 0,
           redis_server_version=server, harness_version=harness),
      _Run('a2', 'n2d-standard-16', 29493, 400, 5,
           redis_server_version=server, harness_version=harness),
      _Run('b1', 't2d-standard-16', 20000, 200, 10,
           redis_server_version=server, harness_version=harness),
      _Run('b2', 't2d-standard-16', 21000, 200, 15,
           redis_server_version='8.2.3', harness_version=harness)])
  board = leaderboard.Leaderboard(frame)
  assert board['server_versions'].tolist() == [[server], [server, '8.2.3']]
  assert board['harness_versions'].tolist() == [[harness], [harness]]
  notes = {r['machine_type']: r['notes']
           for r in report.LeaderboardCells(board)}
  assert notes == {'n2d-standard-16': '',
                   't2d-standard-16': f'server versions "{server}", 8.2.3'}


def test_versions_are_shown_as_recorded_though_all_digits(tmp_path):
  """The loader typed a column of versions that were all digits as numbers:
  git describe --always's '0123456' was shown as 123456, '1e45678' (hex
  digits too) overflowed to "not recorded", the servers '7.0' and '7' were
  one version 7 (no note of the mix) and a load generator's '2.10' was 2.1.
  Versions are kept as the text recorded."""
  memtier = dict(load_generator='memtier_benchmark')
  frame, path = _Frame(tmp_path, [
      _Run('a1', 'n2d-standard-16', 22005, 300, 0, harness_version='0123456',
           redis_server_version='7.0', load_generator_version='007',
           **memtier),
      _Run('a2', 'n2d-standard-16', 29493, 400, 5, harness_version='0098765',
           redis_server_version='7', load_generator_version='2.10',
           **memtier),
      _Run('b1', 't2d-standard-16', 20000, 200, 10, harness_version='1e45678',
           redis_server_version='7.10')])
  notes = {r['machine_type']: r['notes'] for r in report.LeaderboardCells(
      leaderboard.Leaderboard(frame))}
  assert notes == {
      'n2d-standard-16': 'server versions 7, 7.0; harness versions 0098765, '
                         '0123456',
      't2d-standard-16': ''}
  provenance = report.Provenance(frame)
  assert provenance['harness_versions'] == ['0098765', '0123456', '1e45678']
  assert provenance['redis_versions'] == ['7', '7.0', '7.10']
  assert provenance['load_generators'] == ['memtier_benchmark 007',
                                           'memtier_benchmark 2.10']
  compare = script_modules.Load(COMPARE, 'compare_digit_versions')
  page = tmp_path / 'report.html'
  assert compare.Main(['compare', path, f'--report={page}']) == 0
  assert ('<dd>redis-server 7, 7.0, 7.10; harness 0098765, 0123456, 1e45678;'
          ' load generator memtier_benchmark 007, memtier_benchmark 2.10;'
          ) in page.read_text()


def test_versions_holding_commas_read_one_way(tmp_path, capsys):
  """compare's JSON gave a row's versions as one comma-joined string, and
  its notes and provenance joined them the same way: runs of
  '7.2.4 (custom, asan)' and '8.2.3', and runs of '7.2.4 (custom' and
  'asan), 8.2.3', both read '7.2.4 (custom, asan), 8.2.3'. The JSON now
  gives a list; the words quote a version holding a comma."""
  frame, path = _Frame(tmp_path, [
      _Run('a1', 'n2d-standard-16', 22005, 300, 0,
           redis_server_version='7.2.4 (custom, asan)', harness_version='v1'),
      _Run('a2', 'n2d-standard-16', 29493, 400, 5,
           redis_server_version='8.2.3', harness_version='v1'),
      _Run('b1', 't2d-standard-16', 20000, 200, 10,
           redis_server_version='7.2.4 (custom', harness_version='v1'),
      _Run('b2', 't2d-standard-16', 21000, 200, 15,
           redis_server_version='asan), 8.2.3', harness_version='v1')])
  compare = script_modules.Load(COMPARE, 'compare_comma_versions')
  out = {k: tmp_path / f'board.{k}' for k in ('json', 'md', 'html')}
  assert compare.Main(['compare', path, f'--json={out["json"]}',
                       f'--markdown={out["md"]}',
                       f'--report={out["html"]}']) == 0
  rows = {r['machine_type']: r for r in json.loads(out['json'].read_text())}
  assert rows['n2d-standard-16']['server_versions'] == [
      '7.2.4 (custom, asan)', '8.2.3']
  assert rows['t2d-standard-16']['server_versions'] == [
      '7.2.4 (custom', 'asan), 8.2.3']
  assert rows['t2d-standard-16']['harness_versions'] == ['v1']
  notes = {
      'n2d-standard-16': 'server versions "7.2.4 (custom, asan)", 8.2.3',
      't2d-standard-16': 'server versions 7.2.4 (custom, "asan), 8.2.3"'}
  printed = capsys.readouterr().out
  for machine, note in notes.items():
    row = [line for line in printed.splitlines() if machine in line]
    assert len(row) == 1 and row[0].rstrip().endswith(note)
    assert report.EscapeMarkdown(note) in out['md'].read_text()
  page = html.unescape(out['html'].read_text())
  assert ('<dd>redis-server 7.2.4 (custom, "7.2.4 (custom, asan)", 8.2.3, '
          '"asan), 8.2.3"; harness v1; ') in page


def test_runs_with_and_without_a_version_are_mixed_versions(tmp_path):
  """A run of an older harness records no harness_version (nor, older
  still, redis_server_version): averaged with a labelled run, the row mixed
  versions as far as anyone can tell, and said nothing. The missing one
  now counts as one more version, 'not recorded'; a row none of whose runs
  recorded one still has no note."""
  frame, path = _Frame(tmp_path, [
      _Run('a1', 'n2d-standard-16', 22005, 300, 0, harness_version='v1',
           redis_server_version='7.0.15'),
      _Run('a2', 'n2d-standard-16', 29493, 400, 5),
      _Run('b1', 't2d-standard-16', 20000, 200, 10),
      _Run('b2', 't2d-standard-16', 21000, 200, 15)])
  board = leaderboard.Leaderboard(frame)
  assert board['server_versions'].tolist() == [['7.0.15', None], []]
  assert board['harness_versions'].tolist() == [['v1', None], []]
  notes = {r['machine_type']: r['notes']
           for r in report.LeaderboardCells(board)}
  assert notes == {
      'n2d-standard-16': ('server versions 7.0.15, not recorded; '
                          'harness versions v1, not recorded'),
      't2d-standard-16': ''}


def test_a_version_recorded_as_unknown_is_not_one_not_recorded(tmp_path):
  """A harness that cannot tell its own version records 'unknown'
  (version.py), and the notes called a run that recorded none 'unknown'
  too: runs of 'unknown' and of no version read 'harness versions unknown,
  unknown'. A run that recorded none is now 'not recorded' (null in the
  JSON), and a version recorded as those words is quoted."""
  frame, path = _Frame(tmp_path, [
      _Run('a1', 'n2d-standard-16', 22005, 300, 0, harness_version='unknown',
           redis_server_version='not recorded'),
      _Run('a2', 'n2d-standard-16', 29493, 400, 5),
      _Run('b1', 't2d-standard-16', 20000, 200, 10, harness_version='v1'),
      _Run('b2', 't2d-standard-16', 21000, 200, 15)])
  notes = {r['machine_type']: r['notes'] for r in report.LeaderboardCells(
      leaderboard.Leaderboard(frame))}
  assert notes == {
      'n2d-standard-16': ('server versions "not recorded", not recorded; '
                          'harness versions unknown, not recorded'),
      't2d-standard-16': 'harness versions v1, not recorded'}
  compare = script_modules.Load(COMPARE, 'compare_unknown_versions')
  out = tmp_path / 'board.json'
  assert compare.Main(['compare', path, f'--json={out}']) == 0
  rows = {r['machine_type']: r for r in json.loads(out.read_text())}
  assert rows['n2d-standard-16']['harness_versions'] == ['unknown', None]
  assert rows['t2d-standard-16']['harness_versions'] == ['v1', None]
  assert rows['t2d-standard-16']['server_versions'] == []


def test_the_provenance_says_a_run_recorded_no_version_as_the_notes_do(
    tmp_path):
  """Runs of a harness that recorded its version and the server's, and a
  run of an older one that recorded neither: the notes said 'server
  versions 7.0.15, not recorded; harness versions v1, not recorded' and
  the HTML provenance 'redis-server 7.0.15; harness v1', leaving the run
  out. A run records a version when any of its samples does (here only
  its answer's), so the version-less run alone is 'not recorded'."""
  frame, path = _Frame(tmp_path, [
      _Run('a1', 'n2d-standard-16', 22005, 300, 0, harness_version='v1',
           redis_server_version='7.0.15'),
      _Run('a2', 'n2d-standard-16', 29493, 400, 5)])
  notes = [r['notes'] for r in report.LeaderboardCells(
      leaderboard.Leaderboard(frame))]
  assert notes == ['server versions 7.0.15, not recorded; '
                   'harness versions v1, not recorded']
  provenance = report.Provenance(frame)
  assert provenance['redis_versions'] == ['7.0.15', 'not recorded']
  assert provenance['harness_versions'] == ['v1', 'not recorded']
  assert report.Provenance(frame[frame['run_uri'] == 'a1'])[
      'harness_versions'] == ['v1']
  compare = script_modules.Load(COMPARE, 'compare_provenance_not_recorded')
  page = tmp_path / 'report.html'
  assert compare.Main(['compare', path, f'--report={page}']) == 0
  assert ('<dd>redis-server 7.0.15, not recorded; harness v1, not recorded; '
          'load generator ') in page.read_text()


def test_the_provenance_shows_load_generator_versions_one_way(tmp_path):
  """The provenance's load generators were 'name version' joined with
  commas, the version as recorded: a run of memtier_benchmark '2.0,
  memtier_benchmark 2.1' and runs of '2.0' and of '2.1' both read
  'memtier_benchmark 2.0, memtier_benchmark 2.1'. Each version is shown
  as the notes show one (quoted), a missing one as 'not recorded'."""
  def Page(name, versions):
    runs = [_Run(f'{name}{i}', 'n2d-standard-16', 22005, 300, 5 * i,
                 load_generator='memtier_benchmark',
                 **({} if v is None else dict(load_generator_version=v)))
            for i, v in enumerate(versions)]
    frame, path = _Frame(tmp_path, runs)
    page = tmp_path / f'{name}.html'
    compare = script_modules.Load(COMPARE, f'compare_generators_{name}')
    assert compare.Main(['compare', path, f'--report={page}']) == 0
    return (report.Provenance(frame)['load_generators'],
            html.unescape(page.read_text()))

  generators, page = Page('a', ['2.0, memtier_benchmark 2.1'])
  assert generators == ['memtier_benchmark "2.0, memtier_benchmark 2.1"']
  assert ('; load generator memtier_benchmark "2.0, memtier_benchmark 2.1"'
          '; ') in page
  generators, page = Page('b', ['2.0', '2.1', None])
  assert generators == ['memtier_benchmark 2.0', 'memtier_benchmark 2.1',
                        'memtier_benchmark not recorded']
  assert ('; load generator memtier_benchmark 2.0, memtier_benchmark 2.1, '
          'memtier_benchmark not recorded; ') in page


def test_the_report_provenance_names_the_harness_versions(tmp_path):
  """The HTML report's provenance listed the redis-server versions the
  samples ran but not the harness versions, which decide how they were
  measured and parsed: it lists them beside the server's ('?' where no run
  recorded one; 'not recorded' for a run that recorded none beside runs
  that did), each as its text even where every version is digits (git
  describe --always) and the loader typed the column as numbers."""
  frame, path = _Frame(tmp_path, [
      _Run('a1', 'n2d-standard-16', 22005, 300, 0, harness_version='1234567',
           redis_server_version='7.0.15'),
      _Run('a2', 'n2d-standard-16', 29493, 400, 5, harness_version='2345678',
           redis_server_version='8.2.3'),
      _Run('b1', 't2d-standard-16', 20000, 200, 10)])
  assert report.Provenance(frame)['harness_versions'] == [
      '1234567', '2345678', 'not recorded']
  compare = script_modules.Load(COMPARE, 'compare_provenance_harness')
  page = tmp_path / 'report.html'
  assert compare.Main(['compare', path, f'--report={page}']) == 0
  assert ('<dd>redis-server 7.0.15, 8.2.3, not recorded; harness 1234567, '
          '2345678, not recorded; load generator ') in page.read_text()
  frame, path = _Frame(tmp_path, [_Run('c1', 'n2d-standard-16', 22005, 300,
                                       0)])
  assert report.Provenance(frame)['harness_versions'] == []
  assert compare.Main(['compare', path, f'--report={page}']) == 0
  assert '<dd>redis-server ?; harness ?; load generator ' in page.read_text()
