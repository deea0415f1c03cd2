"""The whole nightly pipeline on this machine, as the README runs it.

configs/nightly_local.yaml runs twice for real, at once (shortened from the
command line, which wins over the config's flags: 1 s probes, the load-proof
cap of tests/e2e_support.py so a busy CI machine cannot push a probe over
it, the search held at its first load of 32 connections so that each cell is
one probe and its 2 confirming repeats, no hold, and the three cells of a
night side by side), then scripts/compare.py builds the leaderboard, the
Markdown summary, the JSON leaderboard and the HTML report from those runs,
and headless Chromium renders the report.

On 2 cores the answers are client-bound (or disturbed), so cells end "no
result" and compare ranks none of them by default; with
--include_unconfirmed every cell has two real runs that disagree, and each
figure must lie within that cell's runs' own answers (read from their
result files) and equal the history series' point for the night.
"""

import json
import os
import re
import subprocess
import sys

import pytest

import e2e_support as e2e
import pkb_forkserver

from perfkitbenchmarker.results_history import changepoints
from perfkitbenchmarker.results_history import leaderboard
from perfkitbenchmarker.results_history import loader

from headless_chromium import chromium  # pylint: disable=unused-import  (fixture)

# Every test here starts a process (tests/tier_guard.py).
pytestmark = pytest.mark.e2e

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# No hold: Local's default holds each cell's answer 3 s more at full
# speed, which nothing here reads (each cell's answer, confirmed or not, is
# what compare ranks; hold_report_test and steady_quota_test are the hold's).
SHORT = ['--memtier_run_duration=1', '--memtier_key_maximum=5000',
         '--memtier_confirm_repeats=2', e2e.LOAD_PROOF_CAP_FLAG,
         '--memtier_adaptive_max_connections=32', '--memtier_max_probes=3',
         '--memtier_hold_duration=0', '--run_processes=3']


def _StartMatrix(results_dir):
  return pkb_forkserver.Popen(
      [sys.executable, os.path.join(REPO, 'pkb.py'),
       '--benchmark_config_file=configs/nightly_local.yaml',
       f'--results_dir={results_dir}'] + SHORT,
      cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _CheckMatrix(proc, results_dir):
  stdout, stderr = proc.communicate(timeout=300)
  matrix_root = os.path.join(os.path.dirname(results_dir), 'matrix')
  (only,) = os.listdir(matrix_root)  # each invocation has its own root
  with open(os.path.join(matrix_root, only, 'matrix_summary.json')) as f:
    cells = json.load(f)['cells']
  # Every cell ran to its end: succeeded (a confirmed answer) or no result
  # (an answer that is not confirmed); the exit code is 4 when any cell
  # gave no result and none failed (README, "Run a matrix").
  statuses = [c['status'] for c in cells]
  assert all(s == 'succeeded' or s.startswith('no result (')
             for s in statuses), stdout[-3000:] + stderr[-2000:]
  assert proc.returncode == (0 if all(s == 'succeeded' for s in statuses)
                             else 4)


def _Answers(results_dir):
  """run_uri -> its latency_capped_throughput value, from its own file."""
  found = {}
  for run_uri in os.listdir(results_dir):
    path = os.path.join(results_dir, run_uri,
                        'perfkitbenchmarker_results.json')
    with open(path) as f:
      rows = [json.loads(line) for line in f if line.strip()]
    capped = [r for r in rows if r['metric'] == 'latency_capped_throughput']
    found[run_uri] = capped[-1]['value']
  return found


def _Compare(tmp_path, *extra):
  return pkb_forkserver.Run(
      [sys.executable, os.path.join(REPO, 'scripts', 'compare.py'),
       str(tmp_path / 'night1'), str(tmp_path / 'night2')] + list(extra),
      cwd=REPO, timeout=120, check=False)


def test_local_nightly_twice_then_compare_and_report(
    tmp_path, chromium):  # pylint: disable=redefined-outer-name
  # The two nights' invocations run at once (each its own results and
  # matrix root; nothing here measures speed): half the wall time.
  started = []
  try:
    for night in ('night1', 'night2'):
      (tmp_path / night).mkdir()
      results = str(tmp_path / night / 'runs')
      started.append((_StartMatrix(results), results))
    for proc, results in started:
      _CheckMatrix(proc, results)
  finally:
    for proc, _ in started:
      if proc.poll() is None:
        proc.kill()
        proc.communicate()
  runs = [d for night in ('night1', 'night2')
          for d in os.listdir(tmp_path / night / 'runs')]
  assert len(runs) == 6  # 3 cells x 2 invocations, each its own run_uri
  answers = {}
  for night in ('night1', 'night2'):
    results = str(tmp_path / night / 'runs')
    answers.update(_Answers(results))
    for run_uri in os.listdir(results):
      assert e2e.LeftoverProcesses(results, run_uri) == []

  # By default only confirmed answers are ranked; the rest are named.
  plain = _Compare(tmp_path, f'--json={tmp_path / "plain.json"}')
  assert plain.returncode == 0, plain.stderr
  plain_rows = json.loads((tmp_path / 'plain.json').read_text())
  for row in plain_rows:
    if row['ranked']:
      assert row['answer_verdict'] == 'confirmed'
    else:
      assert row['not_ranked_because'] and row['run_count'] == 0
      assert all(r['verdict'] != 'confirmed' for r in row['runs'])
  unranked = [r for r in plain_rows if not r['ranked']]
  if unranked:
    assert f'Not ranked: {len(unranked)} cell(s)' in plain.stdout

  report = tmp_path / 'report.html'
  summary = tmp_path / 'summary.md'
  board_json = tmp_path / 'board.json'
  proc = _Compare(tmp_path, f'--report={report}', f'--markdown={summary}',
                  f'--json={board_json}', '--include_unconfirmed',
                  '--fail_on_regression')
  assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
  # Three topologies, each measured in both invocations.
  rows = json.loads(board_json.read_text())
  assert len(rows) == 3 and all(r['ranked'] for r in rows)
  assert all(r['run_count'] == 2 for r in rows)
  assert {r['interval_kind'] for r in rows} <= {'within-run', 'none'}
  history = changepoints.HistoryPoints(
      leaderboard.Prepare(loader.Load([str(tmp_path)])),
      include_unconfirmed=True)
  for row in rows:
    own = [answers[r['run_uri']] for r in row['runs']]
    assert len(own) == 2
    # Every figure lies within the cell's runs' own answers...
    assert min(own) - 1e-6 <= row['capped_ops'] <= max(own) + 1e-6, row
    # ... and the history chart's point for the night is the same figure.
    point = history[(history['cell'] == row['cell']) &
                    (history['metric'] == 'latency_capped_throughput')]
    assert point['value'].tolist() == [pytest.approx(row['capped_ops'])]
  board = [l for l in proc.stdout.splitlines() if re.match(r'\d+  ', l)]
  assert len(board) == 3, proc.stdout
  text = summary.read_text()
  assert 'standalone, 1 shard/VM' in text and 'cluster, 2 shards/VM' in text

  html = report.read_text()
  assert html.count('<img') >= 3 and 'http://' not in html
  shot = tmp_path / 'shot.png'
  chromium.Screenshot(f'file://{report}', shot, 1280, 2000)
  from PIL import Image  # pylint: disable=g-import-not-at-top
  image = Image.open(shot).convert('L')
  histogram = image.histogram()
  white = histogram[255] / sum(histogram)
  assert white < 0.95, f'{white:.0%} of the screenshot is white'
  extrema = image.getextrema()
  assert extrema[0] < 64  # dark text and chart lines are there
  json.dumps(runs)  # the run_uris are plain strings
