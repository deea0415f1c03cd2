#!/usr/bin/env python3
"""Probes per study against the floor, on local Redis, rules side by side.

  ./scripts/bench_search_floor.py                      # redis-benchmark, ~4 min
  ./scripts/bench_search_floor.py --load_generator=memtier \\
      --memtier_path=/path/to/memtier_benchmark        # real memtier
  ./scripts/bench_search_floor.py --floor_raw_out=docs/data/search_floor_redis_benchmark.json

The floor of a latency-capped study is one probe on the plateau plus its
confirmation (--memtier_confirm_repeats, 3): 4 probes. One shard on core 0
and the load generator on core 1 (the benchmark's own preload and probe
driver, --probe_seconds probes); in every repetition, in alternating order:

  * adaptive: the default search with the rules of issue 23 (repeats stop
    once the 2 % interval target is out of reach at the noise they show;
    a disturbed repeat is run again; another load of the plateau's noise
    band is repeated only above the held mean's spread);
  * adaptive_before: the same policy with those rules off (repeats run to 6
    while over the target, every contender of the band repeated, disturbed
    repeats counted): what the default did before;
  * linear_confirmed: the linear walk with 3 confirmation repeats.

Nothing is discarded for foreign CPU: the noise is what is measured (its
share is printed per search). Per policy: probes (mean, range), probes /
floor, repeat sets, repeats that count at the answer, the interval reached,
verdicts; then one line per policy `floor_ratio policy=<name> probes=<mean>
floor=4 ratio=<mean probes / floor>`. --floor_raw_out keeps every search's
figures as JSON (docs/search.md's floor tables are rendered from it by
scripts/search_doc_tables.py).
"""

import collections
import dataclasses
import json
import os
import statistics
import sys
import time

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(_HERE))
sys.path.insert(0, _HERE)

# pylint: disable=g-import-not-at-top,wrong-import-position
from perfkitbenchmarker import venv_reexec
venv_reexec.UseRepoVenv(os.path.dirname(_HERE), __file__)

from absl import flags

from perfkitbenchmarker import errors
from perfkitbenchmarker import pkb  # pylint: disable=unused-import  (flags)
from perfkitbenchmarker import verdict as verdict_lib
from perfkitbenchmarker.search import driver as search_driver
from perfkitbenchmarker.search import linear
from perfkitbenchmarker.study import search_runner
import local_bench
from local_bench import Log

flags.DEFINE_integer('floor_repetitions', 4, 'Repetitions of each policy.',
                     lower_bound=1)
flags.DEFINE_integer('floor_probe_seconds', 2, 'Seconds per probe.',
                     lower_bound=1)
flags.DEFINE_float('floor_max_minutes', 12, 'No repetition starts after '
                   'this.')
flags.DEFINE_list('floor_policies', ['adaptive', 'adaptive_before',
                                     'linear_confirmed'],
                  'Policies to run side by side.')
flags.DEFINE_string('floor_raw_out', None, 'Write every search\'s figures '
                    'here as JSON.')
FLAGS = flags.FLAGS

FLOOR_PLATEAU_PROBES = 1


def Policies(opts):
  adaptive = search_runner.Policy(opts)
  policies = {
      'adaptive': adaptive,
      'adaptive_before': dataclasses.replace(adaptive, noise_aware=False,
                                             confirm_max_reruns=0),
      'linear_confirmed': linear.LinearStepPolicy(
          min_threads=opts.search.min_threads,
          max_threads=opts.search.max_threads,
          thread_increment=opts.search.thread_increment,
          clients=opts.generator.clients, pipeline=opts.generator.pipeline,
          confirm_repeats=opts.search.confirm_repeats,
          min_connections=search_runner.LeastConnections(opts)),
  }
  unknown = set(FLAGS.floor_policies) - set(policies)
  if unknown:
    raise errors.UsageError(f'--floor_policies: unknown {sorted(unknown)}; '
                            f'choose from {sorted(policies)}.')
  return {name: policies[name] for name in FLAGS.floor_policies}


def Figures(result, foreign_pct):
  """One search's figures for the table and the raw output."""
  found = verdict_lib.OfSearch(result) if result.best is not None else None
  sets = collections.Counter(
      p.load for p in result.probes if p.role == search_driver.ROLE_CONFIRM)
  reported = result.reported
  ci = result.reported_ci95
  return {
      'probes': len(result.probes),
      'search_probes': len(result.search_probes),
      'confirm_probes': sum(sets.values()),
      'repeat_sets': len(sets),
      'counted_repeats': len(result.confirmation_probes),
      'excluded_repeats': len(result.excluded_probes),
      'capped': result.capped_throughput,
      'ci95_pct': (100 * ci / reported.throughput
                   if ci is not None and reported and reported.throughput
                   else None),
      'connections': reported.load.connections if reported else None,
      'verdict': found.name if found else 'no_answer',
      'verdict_reason': found.reason if found else result.stop_reason,
      'stop_reason': result.stop_reason,
      'foreign_cpu_pct': round(foreign_pct, 1),
      'probe_s': round(result.probe_seconds, 1),
      # Where the probes went: connections, s(earch) or c(onfirm), and *
      # for a disturbed probe, in order, e.g. '32s* 16s 16c* 16c 16c 16c'.
      'trail': ' '.join(
          f'{p.load.connections}'
          f'{"c" if p.role == search_driver.ROLE_CONFIRM else "s"}'
          f'{"*" if p.disturbed else ""}' for p in result.probes),
  }


def RunLocal(argv):
  started = time.monotonic()
  meta = {'failed': {}}
  with local_bench.LocalStudy('bench_search_floor', argv, FLAGS) as study:
    opts = study.opts
    policies = Policies(opts)
    names = list(policies)
    runs = {name: [] for name in names}
    meta['load_generator'] = study.spec.metadata.get('load_generator')
    meta['load_generator_version'] = study.spec.metadata.get(
        'load_generator_version')
    for rep in range(FLAGS.floor_repetitions):
      if time.monotonic() - started > FLAGS.floor_max_minutes * 60:
        Log(f'--floor_max_minutes={FLAGS.floor_max_minutes:g} reached after '
            f'{rep} repetitions.')
        break
      for name in local_bench.Rotated(names, rep):
        before = study.account.Snapshot()
        try:
          result = search_driver.FindLatencyCappedMaximum(
              study.driver, opts.search.cap_ms, policies[name],
              max_probes=opts.search.max_probes)
        except errors.ProcessError as e:
          Log(f'rep {rep + 1} {name}: a probe failed ({e}); counted as '
              'failed')
          meta['failed'][name] = meta['failed'].get(name, 0) + 1
          continue
        figures = Figures(result, study.account.ForeignPct(
            before, study.account.Snapshot()))
        runs[name].append(figures)
        Log(f'rep {rep + 1} {name:16s}: {figures["probes"]:2d} probes '
            f'({figures["search_probes"]} search, {figures["repeat_sets"]} '
            f'repeat sets), {figures["capped"] or 0:,.0f} ops/s '
            f'+-{figures["ci95_pct"] or 0:.1f} %, {figures["verdict"]}, '
            f'foreign CPU {figures["foreign_cpu_pct"]:.0f} %')
  return runs, meta


def _Masked(arg):
  """A memtier path is this machine's, not the reader's: named, not given."""
  if arg.startswith('--memtier_path='):
    return '--memtier_path=MEMTIER'
  return arg


def Rows(runs, floor):
  rows = {}
  for name, figures in runs.items():
    if not figures:
      continue
    probes = [f['probes'] for f in figures]
    cis = [f['ci95_pct'] for f in figures if f['ci95_pct'] is not None]
    rows[name] = {
        'runs': len(figures),
        'probes': statistics.fmean(probes),
        'probes_min': min(probes), 'probes_max': max(probes),
        'ratio': statistics.fmean(probes) / floor,
        'search_probes': statistics.fmean(f['search_probes']
                                          for f in figures),
        'repeat_sets': statistics.fmean(f['repeat_sets'] for f in figures),
        'counted_repeats': statistics.fmean(f['counted_repeats']
                                            for f in figures),
        'excluded_repeats': sum(f['excluded_repeats'] for f in figures),
        'ci95_pct': statistics.fmean(cis) if cis else None,
        'capped': statistics.fmean(f['capped'] or 0.0 for f in figures),
        'verdicts': dict(collections.Counter(f['verdict'] for f in figures)),
        'foreign_cpu_pct': statistics.fmean(f['foreign_cpu_pct']
                                            for f in figures),
    }
  return rows


def Main(argv):
  status = local_bench.ParseFlags('bench_search_floor', __doc__, FLAGS, argv,
                                  'floor_probe_seconds', ('floor_raw_out',))
  if status is not None:
    return status
  wall = time.monotonic()
  try:
    runs, meta = RunLocal(argv)
  except errors.Error as e:
    print(f'bench_search_floor: {e}', file=sys.stderr)
    return 1
  floor = FLOOR_PLATEAU_PROBES + FLAGS.memtier_confirm_repeats
  rows = Rows(runs, floor)
  raw = {
      'settings': {
          'command': ' '.join(['./scripts/bench_search_floor.py'] + [
              _Masked(a) for a in argv[1:]
              if not a.startswith('--floor_raw_out')]),
          'date': time.strftime('%Y-%m-%d', time.gmtime()),
          'load_generator': meta.get('load_generator'),
          'load_generator_version': meta.get('load_generator_version'),
          'probe_seconds': FLAGS.floor_probe_seconds,
          'cap_ms': FLAGS.memtier_latency_cap,
          'floor': floor, 'cpus': os.cpu_count(),
          'load_average': [round(x, 1) for x in os.getloadavg()],
          'wall_s': round(time.monotonic() - wall, 1),
          'failed': meta['failed']},
      'rows': rows, 'runs': runs}
  if FLAGS.floor_raw_out:
    with open(FLAGS.floor_raw_out, 'w') as f:
      json.dump(raw, f, indent=1, sort_keys=True)
      f.write('\n')
  import search_doc_tables  # pylint: disable=g-import-not-at-top
  print('\n'.join(search_doc_tables.FloorSettingsLines(raw) + [''] +
                  search_doc_tables.FloorLines(raw)))
  for name, row in rows.items():
    print(f'floor_ratio policy={name} probes={row["probes"]:.1f} '
          f'floor={floor} ratio={row["ratio"]:.2f}')
  return 0


if __name__ == '__main__':
  sys.exit(Main(sys.argv))
