#!/usr/bin/env python3
"""Compares latency-capped search policies on a server model and local Redis.

  ./scripts/bench_search.py            # model scenarios + local Redis, 10-14 min
  ./scripts/bench_search.py --quick    # smoke run, ~5 min
  ./scripts/bench_search.py --nolocal  # model scenarios only, seconds

Three policies, side by side, on every scenario:
  * stepup: the published study's walk, +1 thread per probe (30 s on the
    model) with the study's clients per thread and pipeline, stopping at the
    cap (search/linear.py);
  * pkb_memtier: upstream PKB's memtier latency-capped search, a binary
    search over pipeline then over clients with upstream's settings
    (threads up to the client's physical cores, at most 30 // shards
    clients per thread, runs of 10,000 requests per client), deciding on
    p95 (scripts/pkb_model.py); pkb_memtier_avg is the same search holding
    the average latency to the cap instead, our rule;
  * adaptive: ours (search/adaptive.py) with the benchmark's settings.

Model scenarios (scripts/search_scenarios.py) are the published studies' server
sizes with the curve shape and noise fitted to this machine's sweep (the
fixture tests/data/search_model_quiet_sweep.json, or this run's own sweep
with --local); their true best is known exactly (noise-free model).

Local Redis (PKB's search only with --local_pkb, see its help): one shard
on core 0, the client on core 1, the benchmark's own
preload and probe driver; every policy's probes last --probe_seconds (30 s
or 60 s probes would not fit the 15-minute budget, and the client is the
limit here). The ground truth is a sweep: per load, the mean throughput and
op-weighted latency over the repetitions, best under the cap. A search
during which other processes used more than --max_foreign_cpu_pct of the CPU
is discarded and run again (bounded by --max_reruns and --max_minutes).

For each policy: probes, probe-seconds, found % (mean reported capped
throughput / true best) and CV % over repetitions, scored by both latency
rules: the true best under the average-latency cap and under the p95 cap,
with the answers whose load is over the cap by that rule (noise-free)
counted. --raw_out keeps every model figure as JSON
(docs/data/search_model.json for docs/search.md, whose tables
scripts/search_doc_tables.py writes), --local_raw_out the local part's
(docs/data/search_local.json). Then one line per
scenario `scenario=<name> found_pct=<ours> time_pct=<ours / stepup's
probe-seconds, %> cv_pct=<ours>`, and LAST (when local ran) `found_pct=...
time_pct=... cv_pct=...` for local Redis, adaptive against the step-up.
"""

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
from perfkitbenchmarker import measurement
from perfkitbenchmarker import pkb  # pylint: disable=unused-import  (flags)
from perfkitbenchmarker import pricing
from perfkitbenchmarker.search import adaptive
from perfkitbenchmarker.search import driver as search_driver
from perfkitbenchmarker.search import linear
from perfkitbenchmarker.study import search_runner
import local_bench
from local_bench import Log
import pkb_model
import search_doc_tables
import search_model
import search_scenarios
from bench_search_model import Assumed
from bench_search_model import EstimateRaw
from bench_search_model import FitLines
from bench_search_model import LocalRaw
from bench_search_model import Row
from bench_search_model import RunScenario  # tests/search_model_test.py
from bench_search_model import StudyCost

_REPO = local_bench.REPO
FIXTURE = os.path.join(_REPO, 'tests', 'data', 'search_model_quiet_sweep.json')

flags.DEFINE_boolean('quick', False, 'Smoke run: 2 local repetitions, a '
                     'shorter sweep, 5 model repetitions.')
flags.DEFINE_boolean('local', True, 'Also run on local Redis.')
flags.DEFINE_integer('repetitions', 5, 'Local repetitions of each policy.',
                     lower_bound=1)
flags.DEFINE_integer('model_repetitions', 30, 'Repetitions per model '
                     'scenario (seeded, so a run is reproducible).',
                     lower_bound=2)
flags.DEFINE_integer('model_seed', 11, 'Seed of the model\'s noise.')
flags.DEFINE_float('model_noise_scale', 0.5, 'Model noise on cloud VMs as a '
                   'share of the noise fitted to this machine\'s sweep.')
flags.DEFINE_list('scenarios', [], 'Model scenarios to run (default: all).')
flags.DEFINE_integer('probe_seconds', 2, 'Seconds per local probe.',
                     lower_bound=1)
flags.DEFINE_integer('sweep_min_connections', 8, 'First sweep load.',
                     lower_bound=1)
flags.DEFINE_integer('sweep_max_connections', 160, 'Last sweep load.',
                     lower_bound=1)
flags.DEFINE_integer('sweep_step_connections', 8, 'Sweep load step.',
                     lower_bound=1)
flags.DEFINE_integer('linear_max_threads', 64,
                     'Most threads of the local step-up.', lower_bound=1)
flags.DEFINE_float('max_minutes', 11, 'After this, no local repetition '
                   'starts and no discarded search is run again.')
flags.DEFINE_float('max_foreign_cpu_pct', 10,
                   'A local search during which processes outside this run '
                   'used more than this share of the CPU is discarded and run '
                   'again; 100 keeps all.')
flags.DEFINE_integer('max_reruns', 10, 'Most discarded local searches.',
                     lower_bound=0)
flags.DEFINE_string('save_sweep', None, 'Write this run\'s local sweep as a '
                    'fixture here (the format of ' + FIXTURE + ').')
flags.DEFINE_integer('local_pkb_max_pipeline', 64, 'PKB\'s pipeline '
                     'search bound on local Redis (PKB: 5000; through the '
                     'harness redis-benchmark aborted at 2500 here, and after '
                     'probes at 256 the shard stopped answering for a while).',
                     lower_bound=2)
flags.DEFINE_string('raw_out', None, 'Write the model scenarios\' raw '
                    'figures here as JSON (scripts/search_doc_tables.py '
                    'renders docs/search.md\'s tables from it).')
flags.DEFINE_string('local_raw_out', None, 'Write the local Redis part\'s '
                    'raw figures here as JSON (docs/data/search_local.json '
                    'for docs/search.md\'s local table).')
flags.DEFINE_boolean('local_pkb', False, 'Also run PKB\'s search on local '
                     'Redis. Off by default: its deep-pipeline probes through '
                     'redis-benchmark left the local shard unanswering '
                     '(CONFIG timed out) in both runs of 2026-11-23, which '
                     'failed every later search of the repetition.')
FLAGS = flags.FLAGS

POLICIES = search_doc_tables.POLICIES


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


# Local Redis.

def LocalPolicies(opts):
  s, g = opts.search, opts.generator
  step = (FLAGS.sweep_step_connections * 2 if FLAGS.quick
          else FLAGS.sweep_step_connections)
  top = 128 if FLAGS.quick else FLAGS.sweep_max_connections
  sweep = [measurement.Load(s.min_threads, max(1, c // s.min_threads),
                            g.pipeline)
           for c in range(FLAGS.sweep_min_connections, top + 1, step)]
  policies = {
      'sweep': SweepPolicy(sweep),
      'stepup': linear.LinearStepPolicy(
          min_threads=s.min_threads, max_threads=FLAGS.linear_max_threads,
          thread_increment=1, clients=g.clients, pipeline=g.pipeline),
      # One client core here; one shard: 30 clients per thread at most.
      'pkb_memtier': pkb_model.PkbMemtierPolicy(
          max_threads=1, max_clients=30, min_clients=2,
          max_pipeline=FLAGS.local_pkb_max_pipeline),
      'adaptive': search_runner.Policy(opts),
  }
  if not FLAGS.local_pkb:
    del policies['pkb_memtier']
  return policies


def SweepFixture(results):
  return {'repetitions': [[{
      'connections': p.load.connections, 'pipeline': p.load.pipeline,
      'throughput': p.throughput, 'latency_ms': p.latency_ms,
      'seconds': p.measurement.duration_s} for p in r.probes]
                          for r in results]}


def RunLocal(argv):
  """All policies on local Redis; returns (results by policy, meta)."""
  started = time.monotonic()
  reps = 2 if FLAGS.quick else FLAGS.repetitions
  with local_bench.LocalStudy('bench_search', argv, FLAGS) as study:
    opts = study.opts
    policies = LocalPolicies(opts)
    names = list(policies)
    results = {name: [] for name in names}
    meta = {'discarded': {name: 0 for name in names}, 'foreign': [],
            'failed': {}, 'run_dir': study.run_dir,
            'prepare_s': study.prepare_s,
            'keys': study.spec.metadata.get('preloaded_keys') or 0,
            'load_generator': study.spec.metadata.get('load_generator')}
    budget = max(60, len(policies['sweep'].loads))
    reruns = 0
    for rep in range(reps):
      if time.monotonic() - started > FLAGS.max_minutes * 60:
        Log(f'--max_minutes={FLAGS.max_minutes:g} reached after {rep} '
            'repetitions.')
        break
      for name in local_bench.Rotated(names, rep):
        for _ in range(FLAGS.max_reruns + 1):
          before = study.account.Snapshot()
          try:
            result = search_driver.FindLatencyCappedMaximum(
                study.driver, opts.search.cap_ms, policies[name],
                max_probes=budget)
          except errors.ProcessError as e:
            Log(f'local rep {rep + 1} {name}: a probe failed ({e}); the '
                'search is counted as failed and left out of the table')
            meta['failed'][name] = meta['failed'].get(name, 0) + 1
            result = None
            break
          foreign = study.account.ForeignPct(before, study.account.Snapshot())
          Log(f'local rep {rep + 1} {name:11s}: {len(result.probes):2d} '
              f'probes, {result.probe_seconds:6.1f} probe-s, capped '
              f'{result.capped_throughput or 0:,.0f} ops/s, foreign CPU '
              f'{foreign:.0f} %')
          late = time.monotonic() - started > FLAGS.max_minutes * 60
          if (foreign <= FLAGS.max_foreign_cpu_pct or late or
              reruns >= FLAGS.max_reruns):
            break
          reruns += 1
          meta['discarded'][name] += 1
        if result is not None:  # a failed search is counted, not scored
          meta['foreign'].append(foreign)
          results[name].append(result)
    with open(os.path.join(study.run_dir, 'bench_search_sweep.json'),
              'w') as f:
      json.dump(SweepFixture(results['sweep']), f, indent=1)
    if FLAGS.save_sweep:
      fixture = SweepFixture(results['sweep'])
      fixture['source'] = (f'./scripts/bench_search.py on this machine, '
                           f'{time.strftime("%Y-%m-%d", time.gmtime())}, '
                           f'{meta["load_generator"]}, '
                           f'{FLAGS.probe_seconds} s probes')
      with open(FLAGS.save_sweep, 'w') as f:
        json.dump(fixture, f, indent=1)
  return results, meta


def LocalTruth(sweeps, cap_ms):
  by_load = {}
  for result in sweeps:
    for probe in result.probes:
      by_load.setdefault(probe.load, []).append(probe.measurement)
  best = None
  for load, ms in by_load.items():
    mean = statistics.fmean(m.throughput for m in ms)
    if (measurement.WeightedAverageLatencyMs(ms) < cap_ms and
        (best is None or mean > best[0])):
      best = (mean, load)
  return best


# Report.

def SummaryLine(rows, prefix=''):
  ours, step = rows['adaptive'], rows['stepup']
  return (f'{prefix}found_pct={ours["found_pct"]:.1f} '
          f'time_pct={ours["probe_s"] / step["probe_s"] * 100:.1f} '
          f'cv_pct={ours["cv_pct"]:.2f}')


def Main(argv):
  status = local_bench.ParseFlags('bench_search', __doc__, FLAGS, argv,
                                  'probe_seconds',
                                  ('raw_out', 'local_raw_out', 'save_sweep'))
  if status is not None:
    return status
  wall = time.monotonic()
  out = []
  local_results = None
  if FLAGS.local:
    local_results, meta = RunLocal(argv)
  # The model's shape comes from the stored quiet sweep (reproducible); a
  # fresh local sweep is fitted too, to show how well the model fits today.
  points, _ = search_model.LoadSweep(FIXTURE)
  fit, lines = FitLines(points, FLAGS.probe_seconds)
  out += [f'Model fit to {os.path.relpath(FIXTURE, _REPO)}:', ''] + lines
  today_lines = []
  if local_results and local_results.get('sweep'):
    path = os.path.join(meta['run_dir'], 'bench_search_sweep.json')
    today, _ = search_model.LoadSweep(path)
    _, today_lines = FitLines(today, FLAGS.probe_seconds)
    out += ['', f'The same model fitted to this run\'s local sweep ({path}):',
            ''] + today_lines
  out.append('')
  scenarios = search_scenarios.Scenarios(fit.model, FLAGS.model_noise_scale)
  if FLAGS.scenarios:
    scenarios = [s for s in scenarios if s.name in FLAGS.scenarios]
  reps = 5 if FLAGS.quick else FLAGS.model_repetitions
  scenario_rows = []
  raw = {'settings': {'repetitions': reps, 'seed': FLAGS.model_seed,
                      'noise_scale': FLAGS.model_noise_scale,
                      'fixture': os.path.relpath(FIXTURE, _REPO),
                      'raw_out': FLAGS.raw_out and os.path.relpath(
                          os.path.abspath(FLAGS.raw_out), _REPO),
                      'date': time.strftime('%Y-%m-%d', time.gmtime())},
         'fit_lines': lines, 'scenarios': []}
  catalog = pricing.PriceCatalog.Load()
  for scenario in scenarios:
    truths, load, rows = RunScenario(scenario, reps, FLAGS.model_seed)
    scenario_rows.append((scenario.name, rows))
    mine, theirs = StudyCost(scenario, rows, catalog)
    raw['scenarios'].append({
        'name': scenario.name, 'description': scenario.model.description,
        'source': scenario.source, 'true_best': truths,
        'best_load': load.Describe(), 'assumed': Assumed(scenario),
        'rows': rows, 'cost': {'ours': EstimateRaw(mine),
                               'pkb': EstimateRaw(theirs)}})
  out += ['Model scenarios (true best = noise-free model optimum):', '']
  out += search_doc_tables.ScenarioLines(raw) + ['']
  out += search_doc_tables.ResultLines(raw['scenarios']) + ['']
  out += ['Whole study per machine type (cost_estimate for ours, '
          'pkb_model.PkbEstimate for PKB\'s path with its probes above):',
          ''] + search_doc_tables.CostLines(raw) + ['']
  out += search_doc_tables.TargetLines(raw) + ['', 'Assumed, not fitted:']
  out += search_doc_tables.AssumedLines(raw) + ['']
  if FLAGS.raw_out:
    with open(FLAGS.raw_out, 'w') as f:
      json.dump(raw, f, indent=1, sort_keys=True)
      f.write('\n')
  local_rows = None
  if local_results:
    truth = LocalTruth(local_results['sweep'], FLAGS.memtier_latency_cap)
    local_rows = {name: Row(rs, truth[0] if truth else None)
                  for name, rs in local_results.items() if rs}
    scenario_rows.append(('local', local_rows))
    out += ['', f'Local Redis ({meta["load_generator"]}, '
            f'{FLAGS.probe_seconds} s probes): true best = the sweep\'s best '
            f'mean under the cap, {truth[0]:,.0f} ops/s at '
            f'{truth[1].connections} connections' if truth else
            'Local: no sweep load under the cap',
            f'discarded for foreign CPU: {meta["discarded"]}; failed '
            f'searches: {meta["failed"] or "none"}; foreign CPU mean '
            f'{statistics.fmean(meta["foreign"] or [0]):.0f} %',
            f'prepare (start, preload, verify) of {meta["keys"]:,} keys took '
            f'{meta["prepare_s"]:.1f} s: {meta["keys"] / meta["prepare_s"]:,.0f}'
            ' keys/s including the fixed part']
  if local_rows:
    out += search_doc_tables.LocalLines(local_rows) + ['']
  if local_results and FLAGS.local_raw_out:
    settings = {'probe_seconds': FLAGS.probe_seconds,
                'max_foreign_cpu_pct': FLAGS.max_foreign_cpu_pct,
                'cap_ms': FLAGS.memtier_latency_cap,
                'wall_s': round(time.monotonic() - wall, 1)}
    with open(FLAGS.local_raw_out, 'w') as f:
      json.dump(LocalRaw(argv, FLAGS.local_raw_out, settings, local_results,
                         local_rows, truth, meta, today_lines),
                f, indent=1, sort_keys=True)
      f.write('\n')
  out.append(f'wall time {time.monotonic() - wall:.0f} s')
  for name, rows in scenario_rows:
    if {'adaptive', 'stepup'} <= set(rows) and rows['stepup']['probe_s']:
      out.append(SummaryLine(rows, f'scenario={name} '))
  if local_rows and {'adaptive', 'stepup'} <= set(local_rows):
    out.append(SummaryLine(local_rows))
  print('\n'.join(out))
  return 0


if __name__ == '__main__':
  sys.exit(Main(sys.argv))
