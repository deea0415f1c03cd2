"""The whole nightly pipeline on this machine, as the README runs it.

configs/nightly_local.yaml runs twice for real (shortened from the command
line, which wins over the config's flags: 1 s probes, 2 repeats, a 100 ms
cap so a busy CI machine cannot push every probe over it), then
scripts/compare.py builds the leaderboard, the Markdown summary and the
HTML report from those runs, and headless Chromium renders the report.
"""

import json
import os
import subprocess
import sys

import e2e_support as e2e

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHORT = ['--memtier_run_duration=1', '--memtier_key_maximum=5000',
         '--memtier_confirm_repeats=2', '--memtier_latency_cap=100',
         '--memtier_adaptive_max_connections=64', '--memtier_max_probes=5',
         '--accept_unconfirmed']


def _Matrix(results_dir):
  proc = subprocess.run(
      [sys.executable, os.path.join(REPO, 'pkb.py'),
       '--benchmark_config_file=configs/nightly_local.yaml',
       f'--results_dir={results_dir}'] + SHORT,
      cwd=REPO, capture_output=True, text=True, timeout=300, check=False)
  assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
  return proc


def test_local_nightly_twice_then_compare_and_report(tmp_path):
  e2e.RequireTool('chromium', 'scripts/setup.sh')
  for night in ('night1', 'night2'):
    _Matrix(str(tmp_path / night))
  runs = [d for night in ('night1', 'night2')
          for d in os.listdir(tmp_path / night)]
  assert len(runs) == 6  # 3 cells x 2 invocations, each its own run_uri
  for night in ('night1', 'night2'):
    for run_uri in os.listdir(tmp_path / night):
      assert e2e.LeftoverProcesses(str(tmp_path / night), run_uri) == []

  report = tmp_path / 'report.html'
  summary = tmp_path / 'summary.md'
  proc = subprocess.run(
      [sys.executable, os.path.join(REPO, 'scripts', 'compare.py'),
       str(tmp_path), f'--report={report}', f'--markdown={summary}',
       '--fail_on_regression'],
      cwd=REPO, capture_output=True, text=True, timeout=120, check=False)
  assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
  # Three topologies, each measured in both invocations.
  board = [l for l in proc.stdout.splitlines() if l[:1].isdigit()]
  assert len(board) == 3, proc.stdout
  assert all(line.split()[-2] == '2' or ' 2 ' in line for line in board)
  text = summary.read_text()
  assert 'standalone, 1 shard/VM' in text and 'cluster, 2 shards/VM' in text

  html = report.read_text()
  assert html.count('<img') >= 3 and 'http://' not in html
  shot = tmp_path / 'shot.png'
  subprocess.run(
      ['chromium', '--headless', '--no-sandbox', '--disable-gpu',
       '--hide-scrollbars', f'--screenshot={shot}', '--window-size=1280,2000',
       f'file://{report}'],
      capture_output=True, timeout=120, check=False)
  from PIL import Image  # pylint: disable=g-import-not-at-top
  image = Image.open(shot).convert('L')
  histogram = image.histogram()
  white = histogram[255] / sum(histogram)
  assert white < 0.95, f'{white:.0%} of the screenshot is white'
  extrema = image.getextrema()
  assert extrema[0] < 64  # dark text and chart lines are there
  json.dumps(runs)  # the run_uris are plain strings
