#!/usr/bin/env python3
"""The 2-core split's server quota at several CFS periods, side by side.

  sudo ./scripts/bench_quota_period.py [--rounds=3] [--seconds=5] \\
      [--memtier_path=/path/to/memtier_benchmark] [--high_weight]

Starts one redis-server on loopback on core 0 inside a cgroup of its own,
preloads its keys, and offers fixed closed-loop loads from core 1 (a real
memtier, one thread, when given; redis-benchmark's SET and GET processes
as the product runs them) while the cgroup's CPU quota alternates between
configurations (`--configs`: `quota/period` in microseconds, or `none`),
round after round, so a shared machine's noise hits every configuration
alike. The first configuration is the product's (cpu_quota.Period() for
the default 0.5 CPU); the others are compared with it.

Per configuration, load and tool it prints the medians over the rounds:
ops/s, the whole run's average and p99 latency (memtier's merged
histogram; redis-benchmark's own p99, which leaves out client queueing),
the worst complete second's average over the whole's (what steadiness.py
and the hold check against the cap), the throughput swing, the first
second's average over the median of the others' (`s0/rest`: a tool's
start-up), the share of
periods the server was throttled, and the ratios of ops/s, p99 and the
worst second to the first configuration's. The load average is printed
with each round.
"""

import argparse
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Dict, List, Optional, Tuple

_HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(_HERE)
sys.path.insert(0, REPO)
from perfkitbenchmarker import venv_reexec  # pylint: disable=g-import-not-at-top
venv_reexec.UseRepoVenv(REPO, __file__)

# pylint: disable=g-import-not-at-top,wrong-import-position
from perfkitbenchmarker import measurement
from perfkitbenchmarker import steadiness
from perfkitbenchmarker.load_generators import memtier_results
from perfkitbenchmarker.load_generators import redis_benchmark_results
from perfkitbenchmarker.providers.local import cpu_quota
from scripts import cpu_cgroups

KEYS = 100000
DATA_SIZE = 100
# redis-benchmark runs a request count: a first guess at its rate, then each
# configuration's last rate sets the next count.
FIRST_RATE = 30000


def _ProductConfig() -> str:
  quota, period = cpu_quota.LocalCpuQuota(
      'bench', 'servers-0', 0.5, path='/nonexistent').Period()
  return f'{quota}/{period}'


def _ParseConfig(text: str) -> Tuple[Optional[float], int]:
  """'1000/2000' -> (0.5 cores, 2000 us period); 'none' -> (None, 100000)."""
  if text == 'none':
    return None, cpu_cgroups.PERIOD_US
  quota, period = (int(x) for x in text.split('/'))
  return quota / period, period


def _Counts(text: str) -> List[int]:
  """'2,8,32' -> [2, 8, 32]; ValueError for anything but counts >= 1."""
  counts = [int(c) for c in text.split(',') if c]
  if any(c < 1 for c in counts):
    raise ValueError(text)
  return counts


def _ArgsProblem(args) -> Optional[str]:
  """What is wrong with the numbers given, or None: checked before the
  server starts, not found as a traceback part way."""
  for name in ('memtier_connections', 'rb_connections'):
    try:
      _Counts(getattr(args, name))
    except ValueError:
      return (f'--{name}={getattr(args, name)}: give connection counts of 1 '
              'or more, comma-separated')
  for config in (args.configs or 'none').split(','):
    try:
      cores, period = _ParseConfig(config)
    except (ValueError, ZeroDivisionError):
      cores, period = -1, 0
    if not (cpu_quota.MIN_QUOTA_US <= period <= 1000000 and (
        cores is None or cores * period >= cpu_quota.MIN_QUOTA_US)):
      return (f'--configs={args.configs}: {config!r} is not quota/period in '
              f'microseconds (each at least {cpu_quota.MIN_QUOTA_US}, the '
              'period at most 1000000; e.g. 1000/2000) or none')
  if not _Counts(args.rb_connections) and not (
      args.memtier_path and _Counts(args.memtier_connections)):
    return ('no load to offer: give --rb_connections, or --memtier_path '
            'with --memtier_connections')
  for name in ('seconds', 'rounds'):
    if getattr(args, name) < 1:
      return f'--{name}={getattr(args, name)}: give 1 or more'
  if not 1 <= args.port <= 65535:
    return f'--port={args.port}: ports run from 1 to 65535'
  return None


def _Seconds(m: measurement.Measurement) -> Tuple[float, float, float]:
  """Over the counted seconds: (the worst second's average / the whole's,
  1 - lowest/highest second's ops, the first second's average / the median
  of the others')."""
  seconds = [s for s in steadiness.Counted(m.per_second)[0]
             if s.average_latency_ms is not None]
  if len(seconds) < 2:
    return float('nan'), float('nan'), float('nan')
  latencies = [s.average_latency_ms for s in seconds]
  ops = [s.ops for s in seconds]
  return (max(latencies) / m.average_latency_ms, 1 - min(ops) / max(ops),
          latencies[0] / statistics.median(latencies[1:]))


def _Memtier(args, port: int, connections: int, work: str
             ) -> measurement.Measurement:
  out = os.path.join(work, 'memtier.json')
  subprocess.run(
      ['taskset', '-c', '1', args.memtier_path, '-s', '127.0.0.1', '-p',
       str(port), f'--key-maximum={KEYS}', '-d', str(DATA_SIZE),
       '--ratio=1:10', '--key-pattern=R:R', '-t', '1', '-c',
       str(connections), f'--test-time={args.seconds}', '--hide-histogram',
       f'--print-percentiles={memtier_results.PRINT_PERCENTILES}',
       f'--json-out-file={out}'],
      capture_output=True, timeout=args.seconds * 4 + 60, check=True)
  with open(out) as f:
    return memtier_results.Measure([f.read()], [None],
                                   measurement.Load(1, connections),
                                   args.seconds)


def _RedisBenchmark(args, port: int, connections: int, rate: float
                    ) -> measurement.Measurement:
  """SET and GET side by side, half the connections each (as the product)."""
  half = max(1, connections // 2)
  requests = max(1000, int(rate / 2 * args.seconds))
  procs = [subprocess.Popen(
      ['taskset', '-c', '1', 'redis-benchmark', '-h', '127.0.0.1', '-p',
       str(port), '-t', test, '-c', str(half), '-n', str(requests), '-d',
       str(DATA_SIZE), '-r', str(KEYS)],
      stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
           for test in ('set', 'get')]
  outs = [p.communicate(timeout=args.seconds * 6 + 60)[0] for p in procs]
  rates = [redis_benchmark_results.ParseOutput(o)[-1].rps for o in outs]
  seconds = [requests / r for r in rates]
  return redis_benchmark_results.Measure(
      outs, ['server'] * 2, seconds, measurement.Load(1, 2 * half))


def _WaitForServer(port: int) -> None:
  """Until the server answers (redis-benchmark waits forever otherwise)."""
  for _ in range(100):
    ping = subprocess.run(['redis-cli', '-p', str(port), 'PING'],
                          capture_output=True, text=True, timeout=10)
    if ping.stdout.strip() == 'PONG':
      return
    time.sleep(0.1)
  raise RuntimeError(f'redis-server on port {port} did not answer')


def main(argv: Optional[List[str]] = None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument('--memtier_path', default=None)
  parser.add_argument('--configs', default=None,
                      help='comma-separated quota/period in us, or none; '
                      'default: the product\'s, 5000/10000, 50000/100000, '
                      'none')
  parser.add_argument('--memtier_connections', default='2,8,32')
  parser.add_argument('--rb_connections', default='8,32')
  parser.add_argument('--seconds', type=int, default=5)
  parser.add_argument('--rounds', type=int, default=3)
  parser.add_argument('--port', type=int, default=16393)
  parser.add_argument('--high_weight', action='store_true',
                      help='the server\'s cgroup and this script with its '
                      'load generators get a high CPU weight, so others\' '
                      'load on a shared machine takes little from them')
  args = parser.parse_args(argv)
  problem = _ArgsProblem(args)
  if problem:
    print(f'bench_quota_period: {problem}', file=sys.stderr)
    return 2
  if args.memtier_path and not os.access(args.memtier_path, os.X_OK):
    print(f'bench_quota_period: {args.memtier_path}: not an executable '
          'memtier_benchmark', file=sys.stderr)
    return 2
  if not all(shutil.which(p) for p in ('redis-server', 'redis-benchmark',
                                        'taskset')):
    print('bench_quota_period: needs redis-server, redis-benchmark and '
          'taskset on PATH', file=sys.stderr)
    return 2
  if not cpu_cgroups.Available():
    print('bench_quota_period: needs root and a writable CPU cgroup '
          'controller', file=sys.stderr)
    return 2
  configs = (args.configs.split(',') if args.configs else
             [_ProductConfig(), '5000/10000', '50000/100000', 'none'])
  loads = [('memtier', c) for c in _Counts(args.memtier_connections)
           if args.memtier_path]
  loads += [('redis-benchmark', c) for c in _Counts(args.rb_connections)]
  # SIGTERM (timeout(1), a CI job's end) as Ctrl-C: the finally below then
  # stops the server and removes the cgroups and the directory, which the
  # script's death left behind.
  signal.signal(signal.SIGTERM, signal.default_int_handler)
  work = tempfile.mkdtemp(prefix='bench-quota-period-')
  group = clients = server = None
  rows: Dict[tuple, List[tuple]] = {}
  rates: Dict[tuple, float] = {}
  try:
    group = cpu_cgroups.CpuCgroup(high_weight=args.high_weight,
                                  prefix='pkb-bench')
    # The load generators are this script's children: they start in its
    # cgroup.
    clients = (cpu_cgroups.CpuCgroup(prefix='pkb-bench') if args.high_weight
               else None)
    if clients:
      clients.Add(os.getpid())
    server = subprocess.Popen(
        ['taskset', '-c', '0', 'redis-server', '--port', str(args.port),
         '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
        stdout=subprocess.DEVNULL, cwd=work)
    group.Add(server.pid)
    _WaitForServer(args.port)
    subprocess.run(['redis-benchmark', '-p', str(args.port), '-t', 'set',
                    '-n', str(KEYS), '-r', str(KEYS), '-d', str(DATA_SIZE),
                    '-q'], capture_output=True, timeout=300, check=True)
    for round_ in range(args.rounds):
      print(f'round {round_ + 1}: load average '
            f'{os.getloadavg()[0]:.1f}', flush=True)
      for tool, connections in loads:
        for config in configs:
          group.SetQuota(*_ParseConfig(config))
          before = group.Stat()
          if tool == 'memtier':
            m = _Memtier(args, args.port, connections, work)
          else:
            key = (config, connections)
            m = _RedisBenchmark(args, args.port, connections,
                                rates.get(key, FIRST_RATE))
            rates[key] = m.throughput
          after = group.Stat()
          periods = after['nr_periods'] - before['nr_periods']
          throttled = (after['nr_throttled'] - before['nr_throttled']) / (
              periods or 1)
          worst, swing, first = _Seconds(m)
          rows.setdefault((tool, connections, config), []).append(
              (m.throughput, m.average_latency_ms, m.p99_latency_ms, worst,
               swing, throttled, first))
  except KeyboardInterrupt:
    print('bench_quota_period: interrupted; its server, cgroups and files '
          'are removed', file=sys.stderr)
    return 130
  finally:
    if server is not None:
      server.terminate()
      server.wait(timeout=30)
    if group:
      group.Remove()
    if clients:
      clients.Remove()  # Moves this script back to the parent first.
    shutil.rmtree(work, ignore_errors=True)
  print(f'load average after: {os.getloadavg()[0]:.1f}')
  print(f'medians over {args.rounds} rounds of {args.seconds} s; ratios to '
        f'{configs[0]} (the product\'s)')
  print(f'{"tool":15} {"conn":>4} {"quota/period":>13} {"ops/s":>8} '
        f'{"avg ms":>7} {"p99 ms":>7} {"worst s":>8} {"swing":>6} '
        f'{"thrott":>6} {"s0/rest":>7} {"ops x":>6} {"p99 x":>6} '
        f'{"worst x":>7}')
  for tool, connections in loads:
    base = None
    for config in configs:
      med = [statistics.median(v) for v in zip(*rows[(tool, connections,
                                                        config)])]
      base = base or med
      print(f'{tool:15} {connections:>4} {config:>13} {med[0]:>8,.0f} '
            f'{med[1]:>7.3f} {med[2]:>7.3f} {med[3]:>8.2f} {med[4]:>6.2f} '
            f'{100 * med[5]:>5.0f}% {med[6]:>7.2f} {med[0] / base[0]:>6.2f} '
            f'{med[2] / base[2]:>6.2f} {med[3] / base[3]:>7.2f}')
  return 0


if __name__ == '__main__':
  sys.exit(main())
