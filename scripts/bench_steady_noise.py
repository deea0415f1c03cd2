#!/usr/bin/env python3
"""The per-second throughput noise a steady probe shows, with a real memtier.

Starts a redis-server on loopback (core 0), preloads its keys, and runs
memtier_benchmark (core 1) at fixed loads for --seconds each, --runs times,
its per-second series read by the product's parser
(load_generators/memtier_results.py). For every window of 2, 3 and 10
consecutive complete seconds (a default probe, Local's hold, a longer one)
it prints the swing steadiness.py reads, 1 - lowest / highest second, as
quantiles per load, beside the bound the product uses (SWING_BOUND); the
machine's load average is printed before and after, since the figures are
only as quiet as the machine. docs/search.md ("Every second of a probe")
has its output and how the bound was chosen from it.

  ./scripts/bench_steady_noise.py --memtier_path=/work/build/memtier/memtier_benchmark
"""

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(_HERE))

# pylint: disable=g-import-not-at-top,wrong-import-position
from perfkitbenchmarker import venv_reexec
venv_reexec.UseRepoVenv(os.path.dirname(_HERE), __file__)

from perfkitbenchmarker import measurement
from perfkitbenchmarker import steadiness
from perfkitbenchmarker.load_generators import memtier_results

WINDOWS = (2, 3, 10)


def _Quantile(values, q):
  values = sorted(values)
  return values[min(len(values) - 1, int(q * len(values)))]


def _Swings(ops, window):
  return [1 - min(ops[i:i + window]) / max(ops[i:i + window])
          for i in range(len(ops) - window + 1) if max(ops[i:i + window])]


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
  parser.add_argument('--memtier_path', required=True)
  parser.add_argument('--connections', default='8,16,24',
                      help='memtier -c per load (one thread)')
  parser.add_argument('--seconds', type=int, default=20)
  parser.add_argument('--runs', type=int, default=3)
  parser.add_argument('--port', type=int, default=16391)
  args = parser.parse_args(argv)
  if not os.access(args.memtier_path, os.X_OK):
    print(f'bench_steady_noise: {args.memtier_path}: not an executable '
          'memtier_benchmark', file=sys.stderr)
    return 2
  if not shutil.which('redis-server') or not shutil.which('taskset'):
    print('bench_steady_noise: needs redis-server and taskset on PATH',
          file=sys.stderr)
    return 2
  try:
    loads = [int(c) for c in args.connections.split(',') if c]
  except ValueError:
    loads = []
  # Checked before the server starts: each was a traceback (or, with no
  # run, an empty table and exit 0).
  problem = (
      f'--connections={args.connections}: give connection counts of 1 or '
      'more, comma-separated' if not loads or min(loads) < 1 else
      f'--seconds={args.seconds}: give 1 or more' if args.seconds < 1 else
      f'--runs={args.runs}: give 1 or more' if args.runs < 1 else
      f'--port={args.port}: ports run from 1 to 65535'
      if not 1 <= args.port <= 65535 else None)
  if problem:
    print(f'bench_steady_noise: {problem}', file=sys.stderr)
    return 2
  # SIGTERM (timeout(1), a CI job's end) as Ctrl-C: the finally below then
  # stops the server and removes the directory, which the script's death
  # left behind.
  signal.signal(signal.SIGTERM, signal.default_int_handler)
  work = tempfile.mkdtemp(prefix='bench-steady-')
  print(f'load average before: {os.getloadavg()[0]:.1f}')
  server = None
  swings = {}
  try:
    server = subprocess.Popen(
        ['taskset', '-c', '0', 'redis-server', '--port', str(args.port),
         '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
        stdout=subprocess.DEVNULL, cwd=work)
    subprocess.run(['redis-cli', '-p', str(args.port), '--no-auth-warning',
                    '-e', 'PING'], capture_output=True, timeout=10)
    common = [args.memtier_path, '-s', '127.0.0.1', '-p', str(args.port),
              '--key-maximum=100000', '-d', '100', '--hide-histogram']
    subprocess.run(['taskset', '-c', '1', *common, '--ratio=1:0',
                    '--key-pattern=P:P', '-n', 'allkeys', '-t', '1', '-c',
                    '10'], capture_output=True, timeout=300, check=True)
    for connections in loads:
      for run in range(args.runs):
        out = os.path.join(work, f'c{connections}_{run}.json')
        subprocess.run(['taskset', '-c', '1', *common, '--ratio=1:1',
                        '--key-pattern=R:R', '-t', '1', '-c',
                        str(connections), f'--test-time={args.seconds}',
                        '--print-percentiles=50,99,99.9',
                        f'--json-out-file={out}'], capture_output=True,
                       timeout=args.seconds * 4 + 60, check=True)
        with open(out) as f:
          m = memtier_results.Measure([f.read()], [None],
                                      measurement.Load(1, connections),
                                      args.seconds)
        ops = [s.ops for s in steadiness.Counted(m.per_second)[0]]
        for window in WINDOWS:
          swings.setdefault((connections, window), []).extend(
              _Swings(ops, window))
  except KeyboardInterrupt:
    print('bench_steady_noise: interrupted; its server and files are '
          'removed', file=sys.stderr)
    return 130
  finally:
    if server is not None:
      server.terminate()
      server.wait(timeout=30)
    shutil.rmtree(work, ignore_errors=True)
  print(f'load average after: {os.getloadavg()[0]:.1f}')
  print(f'swing = 1 - lowest / highest second of a window; the bound: '
        f'{steadiness.SWING_BOUND:.2f}')
  print(f'{"conn":>5} {"window":>7} {"windows":>8} {"median":>7} '
        f'{"p90":>6} {"p99":>6} {"max":>6} {"over bound":>11}')
  for (connections, window), values in sorted(swings.items()):
    over = sum(v > steadiness.SWING_BOUND for v in values)
    print(f'{connections:>5} {window:>6}s {len(values):>8} '
          f'{_Quantile(values, .5):>7.3f} {_Quantile(values, .9):>6.3f} '
          f'{_Quantile(values, .99):>6.3f} {max(values):>6.3f} '
          f'{over:>5} of {len(values):<3}')
  print(json.dumps({f'c{c}_w{w}': round(max(v), 3)
                    for (c, w), v in sorted(swings.items())}))
  return 0


if __name__ == '__main__':
  sys.exit(main())
