#!/usr/bin/env python3
"""The same study capped on the average, p95, p99 and p99.9, side by side.

  ./scripts/bench_cap_statistics.py --memtier_path=/path/to/memtier_benchmark \\
      [--cap=1] [--statistics=avg,p95,p99,p99.9] [--hold=10] [-- PKB FLAGS]

Runs `./pkb.py --latency_cap_statistic=S --memtier_latency_cap=CAP` once per
statistic S, one after another in one invocation, with a real memtier (its
percentiles are the ones a percentile cap needs; redis-benchmark is refused
for them). Prints per statistic the answer (ops/s, connections, its
average, p95, p99 and p99.9 and the capped one), its ratio to the average
answer, the verdict and whether its load held, then each hold's per-second
throughput and capped statistic. Results go to a temporary directory,
removed at the end.
"""

import argparse
import json
import os
import shutil
import signal
import sys
import tempfile
import time
from typing import Dict, List, Optional

_HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(_HERE)
sys.path.insert(0, REPO)
from perfkitbenchmarker import venv_reexec  # pylint: disable=g-import-not-at-top
venv_reexec.UseRepoVenv(REPO, __file__)

# pylint: disable=g-import-not-at-top,wrong-import-position
from perfkitbenchmarker import measurement
from perfkitbenchmarker import price_performance
from perfkitbenchmarker import sample
from perfkitbenchmarker import text_table
from scripts import pkb_child

# The hold's per-second series of each statistic (the time-series samples).
_SERIES = {'avg': 'Average Latency', 'p50': 'p50.00', 'p90': 'p90.00',
           'p95': 'p95.00', 'p99': 'p99.00', 'p99.9': 'p99.90'}


def _Rows(results_dir: str, run_uri: str) -> List[dict]:
  path = os.path.join(results_dir, run_uri, 'perfkitbenchmarker_results.json')
  try:
    with open(path) as f:
      return [json.loads(line) for line in f if line.strip()]
  except OSError:
    return []


def RunOnce(results_dir: str, statistic: str, args, extra: List[str]
            ) -> dict:
  run_uri = f'c{os.getpid() % 10000:04d}{len(os.listdir(results_dir))}'
  load = os.getloadavg()[0]
  started = time.monotonic()
  returncode, err = pkb_child.Run(
      [sys.executable, os.path.join(REPO, 'pkb.py'), f'--run_uri={run_uri}',
       f'--results_dir={results_dir}', f'--memtier_path={args.memtier_path}',
       f'--latency_cap_statistic={statistic}',
       f'--memtier_latency_cap={args.cap}',
       f'--memtier_hold_duration={args.hold}'] + extra, REPO, 1800)
  rows = _Rows(results_dir, run_uri)
  answer = next((dict(sample.ParseLabels(r['labels']), value=r['value'])
                 for r in rows
                 if r['metric'] == price_performance.CAPPED_THROUGHPUT), {})
  series = {}
  for r in rows:
    for name in ('OPS', _SERIES[statistic]):
      if r['metric'] == name + price_performance.TIME_SERIES_SUFFIX:
        series[name] = sample.ParseLabels(r['labels']).get('values', '')
  return {'statistic': statistic, 'rc': returncode, 'load': load,
          'wall_s': time.monotonic() - started, 'answer': answer,
          'series': series,
          'error': (err.strip().splitlines() or [''])[-1]}


def _Ms(answer: Dict[str, str], key: str) -> str:
  value = answer.get(key)
  try:
    return f'{float(value):.3f}'
  except (TypeError, ValueError):
    return '-'


def main(argv: Optional[List[str]] = None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument('--memtier_path', required=True)
  parser.add_argument('--cap', type=float, default=1.0)
  parser.add_argument('--statistics', default='avg,p95,p99,p99.9')
  parser.add_argument('--hold', type=int, default=10)
  args, extra = parser.parse_known_args(argv)
  extra = [a for a in extra if a != '--']  # pkb's flags follow a '--'
  statistics = args.statistics.split(',')
  for statistic in statistics:
    try:
      measurement.LatencyCap(args.cap, statistic)
    except measurement.InvalidLatencyCap as e:  # Bad input: one line.
      print(f'bench_cap_statistics: --cap={args.cap:g} '
            f'--statistics={args.statistics}: {e}', file=sys.stderr)
      return 2
  # SIGTERM (timeout(1), a CI job's end) as Ctrl-C: RunOnce then stops its
  # pkb and the finally below removes the results, which the script's death
  # left behind with pkb running on.
  signal.signal(signal.SIGTERM, signal.default_int_handler)
  results_dir = tempfile.mkdtemp(prefix='bench-cap-statistics-')
  runs = []
  try:
    for statistic in statistics:
      run = RunOnce(results_dir, statistic, args, extra)
      runs.append(run)
      print(f'{statistic}: exit {run["rc"]}, {run["wall_s"]:.0f} s, load '
            f'average {run["load"]:.1f} at its start'
            + (f': {run["error"]}' if run['rc'] not in (0, 4) else ''),
            flush=True)
  except KeyboardInterrupt:
    print('bench_cap_statistics: interrupted; its pkb run was stopped and '
          'the results removed', file=sys.stderr)
    return 130
  finally:
    shutil.rmtree(results_dir, ignore_errors=True)
  base = next((float(r['answer']['value']) for r in runs
               if r['statistic'] == 'avg' and r['answer']), None)
  table = []
  for run in runs:
    a = run['answer']
    ops = float(a['value']) if a else None
    table.append((
        f'{args.cap:g} ms {run["statistic"]}',
        f'{ops:,.0f}' if ops is not None else 'no answer',
        f'{ops / base:.2f}' if ops is not None and base else '-',
        a.get('connections', '-'), _Ms(a, 'average_latency_ms'),
        _Ms(a, 'p95_latency_ms'), _Ms(a, 'p99_latency_ms'),
        _Ms(a, 'p99.9_latency_ms'), a.get('verdict', '-'),
        a.get('hold_words', '-')))
  print()
  for line in text_table.Lines(
      ('cap', 'ops/s', 'x avg answer', 'conns', 'avg ms', 'p95 ms', 'p99 ms',
       'p99.9 ms', 'verdict', 'hold'), table, right=range(1, 8)):
    print(line)
  print('\nThe holds, second by second (ops/s; the capped statistic in ms):')
  for run in runs:
    series = run['series']
    print(f'  {run["statistic"]:>5}: ops/s {series.get("OPS", "-")}')
    print(f'  {"":>5}  ms    {series.get(_SERIES[run["statistic"]], "-")}')
  # pkb's 4 is an answer it could not confirm: measured, and in the table.
  failed = [run['statistic'] for run in runs if run['rc'] not in (0, 4)]
  if failed:
    print(f'bench_cap_statistics: the run of {", ".join(failed)} failed '
          '(its line above says why)', file=sys.stderr)
    return 1
  return 0


if __name__ == '__main__':
  sys.exit(main())
