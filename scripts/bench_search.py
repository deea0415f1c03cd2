#!/usr/bin/env python3
"""Compares latency-capped search policies on local Redis, side by side.

  ./scripts/bench_search.py [--repetitions=5] [--probe_seconds=2] [pkb flags]

One local Redis shard (server VM pinned to core 0, client VM to core 1 by the
Local provider), the load generator the benchmark would choose (memtier when
installed, else redis-benchmark), the benchmark's own preload, probe driver
and search modules. Each repetition runs, in a rotating order:
  * sweep: every load of --sweep_* (ground truth, see below);
  * linear: the T2D study's step-up, +1 thread per probe with
    --linear_clients_per_thread clients per thread, stopping at the cap;
  * adaptive: the benchmark's default policy with its default flags.

Ground truth: for each sweep load, the mean throughput and the
operation-weighted mean latency over all repetitions; the best is the highest
mean throughput whose mean latency is under the cap. Every load is measured
exactly like the policies' probes (same driver, same probe duration). A
policy's found % is the mean of its reported capped throughput over the
repetitions divided by that best. Noise: the sweep best is a maximum over
loads on a flat plateau, so it is biased upwards by about one standard error
of a load's mean; found % below 100 within the run-to-run CV is noise, not a
miss (docs/search.md).

The machine may be shared: a search during which other processes used more
than --max_foreign_cpu_pct of the CPU is discarded and run again (bounded by
--max_reruns and --max_minutes). A second table rates the load each policy
chose by the sweep's mean there, free of the policy's own probe noise.

The LAST line printed is: found_pct=<adaptive> time_pct=<adaptive
probe-seconds as % of linear's> cv_pct=<adaptive CV>. Progress goes to
stderr; raw probes to results/runs/<run_uri>/bench_search.json. With the
defaults a run takes 6-10 minutes on a quiet 2-core machine.
"""

import json
import os
import signal
import statistics
import sys
import time

_HERE = os.path.dirname(os.path.abspath(__file__))
_REPO = os.path.dirname(_HERE)
_VENV_PYTHON = os.path.join(_REPO, '.venv', 'bin', 'python')
if (os.path.exists(_VENV_PYTHON) and
    os.path.realpath(sys.prefix) != os.path.realpath(
        os.path.join(_REPO, '.venv'))):
  os.execv(_VENV_PYTHON, [_VENV_PYTHON, os.path.abspath(__file__)] +
           sys.argv[1:])
sys.path.insert(0, _REPO)

# pylint: disable=g-import-not-at-top,wrong-import-position
from absl import flags

from perfkitbenchmarker import benchmark_spec
from perfkitbenchmarker import capped_search
from perfkitbenchmarker import measurement
from perfkitbenchmarker import pkb  # pylint: disable=unused-import  (flags)
from perfkitbenchmarker import pricing
from perfkitbenchmarker import redis_study
from perfkitbenchmarker import reporting
from perfkitbenchmarker import run_record
from perfkitbenchmarker.linux_benchmarks import redis_memtier_benchmark as bench
from perfkitbenchmarker.providers.local import provider as local
from perfkitbenchmarker.search import driver as search_driver
from perfkitbenchmarker.search import linear

flags.DEFINE_integer('repetitions', 5, 'Repetitions of each policy.',
                     lower_bound=1)
flags.DEFINE_integer('probe_seconds', 2, 'Seconds per probe (all policies).',
                     lower_bound=1)
flags.DEFINE_integer('sweep_min_connections', 8, 'First sweep load.',
                     lower_bound=1)
flags.DEFINE_integer('sweep_max_connections', 160, 'Last sweep load.',
                     lower_bound=1)
flags.DEFINE_integer('sweep_step_connections', 8, 'Sweep load step.',
                     lower_bound=1)
flags.DEFINE_list('linear_clients_per_thread', ['32'],
                  'Clients per thread of the linear step-up (default: the '
                  'benchmark\'s --memtier_clients default). The first is the '
                  'baseline of time_pct; more values add rows linear_c<N>.')
flags.DEFINE_integer('linear_max_threads', 64,
                     'Most threads of the linear step-up.', lower_bound=1)
flags.DEFINE_float('max_minutes', 20, 'After this, no repetition starts and '
                   'no discarded search is run again.')
flags.DEFINE_float('max_foreign_cpu_pct', 10,
                   'A search during which processes outside this run used more '
                   'than this share of the machine\'s CPU is discarded and '
                   'run again (the machine may be shared); 100 keeps all.')
flags.DEFINE_integer('max_reruns', 10, 'Most discarded searches in a run; '
                     'past it, contaminated searches are kept (and counted).',
                     lower_bound=0)
flags.DEFINE_list('policies', [], 'Run only these rows (default: all); the '
                  'final line needs sweep, linear and adaptive.')
FLAGS = flags.FLAGS



def Log(text):
  print(text, file=sys.stderr, flush=True)


class SweepPolicy:
  """Measures every load once; the answer is the best one under the cap."""

  NAME = 'sweep'

  def __init__(self, loads):
    self.loads = tuple(loads)

  def Steps(self, cap_ms):
    records = []
    for load in self.loads:
      records.append((yield search_driver.ProbeRequest(
          load, search_driver.ROLE_SEARCH, 'sweep')))
    best = search_driver.HighestUnderCapIndex(records)
    return search_driver.Outcome('swept every load', best)


class CpuAccount:
  """Splits the machine's busy CPU time into this run's and everyone else's.

  Ours is this process with its waited-for children (every load generator
  runs under a shell script this process waits for) plus the shards, which
  are daemons read from /proc. The rest of the busy time in /proc/stat is
  foreign: other users' processes, and kernel work (softirq) not charged to
  any process, which includes some of our own loopback traffic, so a quiet
  machine shows a few percent.
  """

  def __init__(self, shard_pids):
    self._pids = list(shard_pids)
    self._tick = os.sysconf('SC_CLK_TCK')
    self._cpus = os.cpu_count() or 1

  def Snapshot(self):
    with open('/proc/stat') as f:
      fields = [float(x) for x in f.readline().split()[1:9]]
    busy = (sum(fields) - fields[3] - fields[4]) / self._tick
    times = os.times()
    ours = (times.user + times.system + times.children_user +
            times.children_system)
    for pid in self._pids:
      try:
        with open(f'/proc/{pid}/stat') as f:
          stat = f.read().rsplit(')', 1)[1].split()
        ours += (int(stat[11]) + int(stat[12])) / self._tick
      except OSError:
        pass
    return time.monotonic(), busy, ours

  def ForeignPct(self, before, after):
    wall = (after[0] - before[0]) * self._cpus
    foreign = (after[1] - before[1]) - (after[2] - before[2])
    return max(0.0, foreign / wall * 100) if wall > 0 else 0.0


def Policies():
  """name -> policy, in the order of the report's rows."""
  threads, pipeline = FLAGS.memtier_min_threads, FLAGS.memtier_pipeline
  sweep = [measurement.Load(threads, max(1, c // threads), pipeline)
           for c in range(FLAGS.sweep_min_connections,
                          FLAGS.sweep_max_connections + 1,
                          FLAGS.sweep_step_connections)]
  policies = {'sweep': SweepPolicy(sweep)}
  for i, clients in enumerate(int(c) for c in FLAGS.linear_clients_per_thread):
    policies['linear' if i == 0 else f'linear_c{clients}'] = (
        linear.LinearStepPolicy(
            min_threads=threads, max_threads=FLAGS.linear_max_threads,
            thread_increment=1, clients=clients, pipeline=pipeline))
  policies['adaptive'] = capped_search.Policy()
  if FLAGS.policies:
    policies = {k: v for k, v in policies.items() if k in FLAGS.policies}
  return policies


def GroundTruth(sweeps, cap_ms):
  """Per-load means over repetitions, and the best load under the cap."""
  by_load = {}
  for result in sweeps:
    for probe in result.probes:
      by_load.setdefault(probe.load, []).append(probe.measurement)
  table = []
  for load in sorted(by_load, key=lambda l: l.connections):
    ms = by_load[load]
    throughputs = [m.throughput for m in ms]
    mean = statistics.fmean(throughputs)
    cv = (statistics.stdev(throughputs) / mean * 100
          if len(ms) > 1 and mean else 0.0)
    table.append((load, mean, measurement.WeightedAverageLatencyMs(ms), cv))
  under = [row for row in table if row[2] < cap_ms]
  best = max(under, key=lambda row: row[1]) if under else None
  return table, best


def AtConnections(table, connections):
  """Sweep mean (throughput, latency) at a load, linearly interpolated."""
  points = [(load.connections, mean, latency)
            for load, mean, latency, _ in table]
  for (c0, t0, l0), (c1, t1, l1) in zip(points, points[1:]):
    if c0 <= connections <= c1:
      w = (connections - c0) / (c1 - c0)
      return t0 + w * (t1 - t0), l0 + w * (l1 - l0)
  exact = [(t, l) for c, t, l in points if c == connections]
  return exact[0] if exact else (None, None)


def Stats(results, truth, table, cap_ms):
  """A policy's row; `chosen_pct` rates the loads it chose by the sweep."""
  values = [r.capped_throughput or 0.0 for r in results]
  at_chosen = [AtConnections(table, r.best.load.connections)
               for r in results if r.best is not None]
  chosen = [t for t, _ in at_chosen if t is not None]
  mean = statistics.fmean(values)
  cv = statistics.stdev(values) / mean * 100 if len(values) > 1 and mean else 0
  return {
      'probes': statistics.fmean(len(r.probes) for r in results),
      'probe_s': statistics.fmean(r.probe_seconds for r in results),
      'capped': mean,
      'found_pct': mean / truth * 100 if truth else float('nan'),
      'min_found_pct': min(values) / truth * 100 if truth else float('nan'),
      'cv_pct': cv,
      'client_limited': sum(r.client_limited for r in results),
      'chosen_pct': (statistics.fmean(chosen) / truth * 100
                     if chosen and truth else float('nan')),
      'chosen_over_cap': sum(1 for _, l in at_chosen
                             if l is not None and l >= cap_ms),
      'chosen_connections': ','.join(str(r.best.load.connections)
                                     for r in results if r.best),
  }


def Report(results, walls, foreigns, discarded, cap_ms, load_before,
           load_after):
  table, best = GroundTruth(results.get('sweep', []), cap_ms)
  truth = best[1] if best else None
  lines = ['Sweep (mean over repetitions):', '',
           '| connections | ops/s | avg latency ms | CV % |',
           '|---:|---:|---:|---:|']
  for load, mean, latency, cv in table:
    mark = ' (best under cap)' if best and load == best[0] else ''
    lines.append(f'| {load.connections}{mark} | {mean:,.0f} | {latency:.3f} '
                 f'| {cv:.1f} |')
  lines += ['', f'Ground truth: {truth:,.0f} ops/s at {best[0].connections} '
            'connections' if best else 'Ground truth: no sweep load under '
            'the cap', '',
            '| policy | probes | probe-s | wall s | capped ops/s | found % of '
            'best (min) | CV % | client-limited runs | foreign CPU % (max) '
            '| discarded |',
            '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|']
  stats = {}
  for name in walls:
    if not results[name]:
      continue
    s = stats[name] = Stats(results[name], truth, table, cap_ms)
    lines.append(
        f'| {name} | {s["probes"]:.1f} | {s["probe_s"]:.1f} | '
        f'{statistics.fmean(walls[name]):.1f} | {s["capped"]:,.0f} | '
        f'{s["found_pct"]:.1f} ({s["min_found_pct"]:.1f}) | '
        f'{s["cv_pct"]:.2f} | {s["client_limited"]}/{len(results[name])} | '
        f'{statistics.fmean(foreigns[name]):.1f} ({max(foreigns[name]):.1f}) '
        f'| {discarded[name]} |')
  lines += ['', 'Loads chosen, rated by the sweep (removes each policy\'s own '
            'measurement noise from the comparison):', '',
            '| policy | connections chosen | sweep ops/s there, % of best | '
            'chosen over the cap per sweep |', '|---|---|---:|---:|']
  for name, s in stats.items():
    lines.append(f'| {name} | {s["chosen_connections"]} | '
                 f'{s["chosen_pct"]:.1f} | {s["chosen_over_cap"]} |')
  lines += ['', f'{max(len(v) for v in walls.values())} repetitions, '
            f'{FLAGS.probe_seconds} s probes, cap {cap_ms:g} ms; load '
            f'generator {results["meta"]["load_generator"]}; machine load '
            f'average {load_before} before, {load_after} after.']
  if not {'sweep', 'linear', 'adaptive'} <= set(stats) or not truth:
    return lines
  adaptive, linear = stats['adaptive'], stats['linear']
  lines.append(
      f'found_pct={adaptive["found_pct"]:.1f} '
      f'time_pct={adaptive["probe_s"] / linear["probe_s"] * 100:.1f} '
      f'cv_pct={adaptive["cv_pct"]:.2f}')
  return lines


def Dump(path, results):
  records = {name: [{
      'capped_throughput': r.capped_throughput, 'stop_reason': r.stop_reason,
      'probes': [{'connections': p.load.connections, 'role': p.role,
                  'throughput': p.throughput, 'latency_ms': p.latency_ms,
                  'seconds': p.measurement.duration_s,
                  'client_saturated': p.measurement.client_saturated}
                 for p in r.probes]} for r in results[name]]
             for name in results if name != 'meta'}
  with open(path, 'w') as f:
    json.dump(records, f, indent=1)


def Main(argv):
  FLAGS(argv)
  FLAGS.memtier_run_duration = FLAGS.probe_seconds
  cap = FLAGS.memtier_latency_cap
  run_uri = local.NewRunUri()
  run_dir = os.path.join(_REPO, 'results', 'runs', run_uri)
  record = run_record.RunRecord.Create(run_dir, run_uri, cloud='Local',
                                       benchmarks=['bench_search'], argv=argv)
  config = bench.GetConfig({})
  bench.CheckPrerequisites(config)
  spec = benchmark_spec.BenchmarkSpec(
      bench, config, run_uri, 'Local', record, FLAGS,
      pricing.PriceCatalog.Load(), lambda samples: None,
      reporter=reporting.ConsoleReporter(sys.stderr))
  signal.signal(signal.SIGTERM, signal.default_int_handler)
  load_before = open('/proc/loadavg').read().split()[0]
  started = time.monotonic()
  policies = Policies()
  names = list(policies)
  results = {name: [] for name in names}
  walls = {name: [] for name in names}
  foreigns = {name: [] for name in names}
  discarded = {name: 0 for name in names}
  try:
    spec.ConstructVirtualMachines()
    spec.Provision()
    Log('VMs: ' + ', '.join(f'{vm.name} on cores {vm.cpu_set}'
                            for vm in spec.vms))
    bench.Prepare(spec)
    results['meta'] = {'load_generator': spec.metadata['load_generator']}
    driver = redis_study.ProbeDriver(spec, FLAGS)
    account = CpuAccount(p.pid for p in spec.state['redis_processes'])
    budget = max([FLAGS.memtier_max_probes] +
                 [len(p.loads) for p in policies.values()
                  if isinstance(p, SweepPolicy)])
    reruns = 0
    for rep in range(FLAGS.repetitions):
      if time.monotonic() - started > FLAGS.max_minutes * 60:
        Log(f'--max_minutes={FLAGS.max_minutes:g} reached; stopping after '
            f'{rep} repetitions.')
        break
      # Rotate the order so that drift hits every policy alike.
      order = names[rep % len(names):] + names[:rep % len(names)]
      for name in order:
        while True:
          before = account.Snapshot()
          result = search_driver.FindLatencyCappedMaximum(
              driver, cap, policies[name], max_probes=budget)
          after = account.Snapshot()
          foreign = account.ForeignPct(before, after)
          Log(f'rep {rep + 1} {name:9s}: {len(result.probes):2d} probes, '
              f'{result.probe_seconds:6.1f} probe-s, capped '
              f'{result.capped_throughput or 0:,.0f} ops/s, foreign CPU '
              f'{foreign:.0f} %; {result.stop_reason[:120]}')
          late = time.monotonic() - started > FLAGS.max_minutes * 60
          if (foreign <= FLAGS.max_foreign_cpu_pct or late or
              reruns >= FLAGS.max_reruns):
            break
          reruns += 1
          discarded[name] += 1
          Log(f'  discarded (foreign CPU over {FLAGS.max_foreign_cpu_pct:g} '
              f'%); rerun {reruns}/{FLAGS.max_reruns}')
        walls[name].append(after[0] - before[0])
        foreigns[name].append(foreign)
        results[name].append(result)
    Dump(os.path.join(run_dir, 'bench_search.json'), results)
  finally:
    bench.Cleanup(spec)
    failures = spec.Teardown()
    record.SetStatus('failed' if failures else 'succeeded')
    for failure in failures:
      Log(f'teardown: {failure}')
  load_after = open('/proc/loadavg').read().split()[0]
  print('\n'.join(Report(results, walls, foreigns, discarded, cap,
                         load_before, load_after)))
  return 0


if __name__ == '__main__':
  sys.exit(Main(sys.argv))
