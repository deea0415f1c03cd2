"""The model half of scripts/bench_search.py: scenarios run and priced.

Seam: `RunScenario` runs every policy on one model scenario (the step-up,
upstream PKB's search with upstream's settings under both latency rules,
and ours) and `Row` scores their repetitions by both rules; `StudyCost`
prices one machine type's whole study, ours (cost_estimate) against PKB's
path (pkb_model); `Assumed` and `EstimateRaw` are what the raw output keeps
for docs/search.md (search_doc_tables.py), `LocalRaw` the local Redis part's
raw output. No flags are read here.
"""

import os
import random
import statistics
import time

from perfkitbenchmarker import cost_estimate
from perfkitbenchmarker.search import driver as search_driver
from perfkitbenchmarker.search import linear
import pkb_model
import search_model

_REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def Row(results, truth, model=None, truths=None, cap_ms=None):
  """One policy's figures over its repetitions; with the model, scored by
  both latency rules (`truths`: true best per rule)."""
  values = [r.capped_throughput or 0.0 for r in results]
  mean = statistics.fmean(values)
  row = {
      'probes': statistics.fmean(len(r.probes) for r in results),
      'probe_s': statistics.fmean(r.probe_seconds for r in results),
      'capped': mean,
      'found_pct': mean / truth * 100 if truth else float('nan'),
      'min_found_pct': min(values) / truth * 100 if truth else float('nan'),
      'cv_pct': (statistics.stdev(values) / mean * 100
                 if len(values) > 1 and mean else 0.0),
      'client_limited': sum(r.client_limited for r in results),
      'runs': len(results),
  }
  for rule, best in (truths or {}).items():
    row[f'found_pct_{rule}'] = mean / best * 100 if best else float('nan')
    # Answers whose load is over the cap by this rule, noise-free.
    row[f'over_{rule}'] = sum(
        1 for r in results if r.best is not None and
        model.ExpectedLatency(r.best.load, rule) >= cap_ms)
  return row


def FitLines(points, seconds):
  fit = search_model.Fit(points, seconds=seconds)
  return fit, fit.Lines()


# The modelled study runs memtier, as upstream's does.
OUR_PROBE_OVERHEAD_S = cost_estimate.ProbeOverheadS('memtier')


def StudyCost(scenario, rows, catalog):
  """(ours, PKB's) per-phase estimates of one machine type's whole study."""
  groups = []
  for name, (machine_type, count) in (('servers', scenario.servers),
                                      ('clients', scenario.clients)):
    price = catalog.Lookup(scenario.cloud, scenario.region, machine_type)
    groups.append(cost_estimate.VmGroup(name, count, machine_type,
                                        price.usd_per_hour))
  ours = rows['adaptive']
  search_min = (ours['probe_s'] + ours['probes'] * OUR_PROBE_OVERHEAD_S) / 60
  # Every client VM preloads its own slice of the keys (deployment.Preload).
  mine = cost_estimate.EstimateRun(scenario.cloud, groups, search_min,
                                   scenario.preload_keys, scenario.value_bytes,
                                   preload_client_vms=scenario.clients[1])
  pkb = rows['pkb_memtier']
  theirs = pkb_model.PkbEstimate(
      scenario.cloud, groups, pkb['probes'], pkb['probe_s'],
      scenario.preload_keys, scenario.value_bytes, scenario.clients[1])
  return mine, theirs


def Assumed(scenario):
  """The scenario's model parameters chosen by hand, not fitted."""
  m = scenario.model
  chosen = [f'base latency {m.base_latency_ms:g} ms',
            f'client {m.client_ops_per_thread / 1e3:,.0f}k ops/s per thread, '
            f'{m.client_max_threads} useful threads']
  if m.efficiency != 1:
    chosen.append(f'pipelining efficiency {m.efficiency:g}')
  if m.dips:
    chosen.append('dips at ' + ', '.join(f'{c:,.0f}' for c, _, _ in m.dips)
                  + ' requests in flight')
  if 'assumed' in scenario.source:
    chosen.append('the level itself (see the study column)')
  return chosen


def EstimateRaw(e):
  return {'vms': ' + '.join(f'{g.count} x {g.machine_type}' for g in e.groups),
          'usd_per_hour': e.usd_per_hour,
          'phase_minutes': [p.minutes for p in e.phases],
          'minutes': e.minutes, 'billed': e.billed_minutes, 'usd': e.usd}


def RunScenario(scenario, repetitions, seed):
  """Each policy `repetitions` times on the model; rows by policy."""
  truths = {rule: scenario.TrueBest(rule)[0] for rule in pkb_model.RULES}
  truth, best_load = scenario.TrueBest()
  m = scenario.model

  def Timed(seconds):
    return lambda rng: m.Measurer(seconds, rng)

  def Requests(rng):
    return pkb_model.RequestMeasurer(m, scenario.pkb_requests, rng)

  pkb = lambda rule: pkb_model.PkbMemtierPolicy(
      scenario.pkb_max_threads, max(1, scenario.pkb_max_clients), rule=rule)
  policies = {
      'stepup': (linear.LinearStepPolicy(
          min_threads=scenario.step_min_threads,
          max_threads=scenario.step_max_threads,
          thread_increment=scenario.step_increment,
          clients=scenario.step_clients, pipeline=scenario.pipeline),
                 Timed(scenario.step_seconds)),
      'pkb_memtier': (pkb(pkb_model.P95), Requests),
      'pkb_memtier_avg': (pkb(pkb_model.AVERAGE), Requests),
      'adaptive': (scenario.OurPolicy(), Timed(scenario.ours_seconds)),
  }
  rows = {}
  for name, (policy, measurer) in policies.items():
    rng = random.Random(f'{seed}/{scenario.name}/{name}')
    results = [search_driver.FindLatencyCappedMaximum(
        measurer(rng), scenario.cap_ms, policy, max_probes=400)
               for _ in range(repetitions)]
    rows[name] = Row(results, truth, m, truths, scenario.cap_ms)
  return truths, best_load, rows


def LocalRaw(argv, path, settings, results, rows, truth, meta, fit_lines):
  """The local Redis part's figures (--local_raw_out=path): what
  docs/search.md's local tables and the words beside them are rendered
  from. `truth` is (mean ops/s, Load) or None; `settings` the run's flags;
  the command line (less this flag), date and machine load are added."""
  settings = dict(
      settings, load_generator=meta.get('load_generator'),
      repetitions_run=max((len(r) for r in results.values()), default=0),
      command=' '.join(['./scripts/bench_search.py'] + [
          a for a in argv[1:] if not a.startswith('--local_raw_out')]),
      raw_out=os.path.relpath(os.path.abspath(path), _REPO),
      date=time.strftime('%Y-%m-%d', time.gmtime()), cpus=os.cpu_count(),
      load_average=list(os.getloadavg()))
  return {
      'settings': settings,
      'truth': ({'throughput': truth[0],
                 'connections': truth[1].connections} if truth else None),
      'discarded': meta['discarded'], 'failed': meta['failed'],
      'foreign_cpu_pct': meta['foreign'],
      'prepare_s': meta.get('prepare_s'), 'keys': meta.get('keys'),
      'rows': rows,
      'capped_per_repetition': {
          name: [r.capped_throughput or 0.0 for r in rs]
          for name, rs in results.items() if rs},
      'fit_lines': fit_lines}
