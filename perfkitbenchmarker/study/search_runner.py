"""The latency-capped search as the study runs it: policy, probes, samples.

Wires the pure policies (search/) to a probe driver, publishes every probe's
samples the moment it ends, and turns the search result into the study's
result samples. Takes `SearchOptions`, never flags.

Extension seam: a new policy needs a value of `SearchOptions.policy` mapped
in `Policy` and a plan line in plan.py; the benchmark module only calls
`Search` and `NoResultError`.
"""

import concurrent.futures
import dataclasses
import math
import time
from typing import Any, Dict, List, Optional, Tuple

from perfkitbenchmarker import errors
from perfkitbenchmarker import measurement
from perfkitbenchmarker import price_performance
from perfkitbenchmarker import sample
from perfkitbenchmarker import steadiness
from perfkitbenchmarker import verdict
from perfkitbenchmarker.load_generators import driver as driver_lib
from perfkitbenchmarker.load_generators import interference
from perfkitbenchmarker.load_generators import memtier
from perfkitbenchmarker.search import adaptive
from perfkitbenchmarker.search import driver as search_driver
from perfkitbenchmarker.search import linear
from perfkitbenchmarker.search import staircase
from perfkitbenchmarker.study import options as options_lib
from perfkitbenchmarker.study import results


def Policy(opts: options_lib.RedisStudyOptions,
           start_connections: Optional[int] = None,
           client_vcpus: Optional[int] = None):
  """The configured policy; an adaptive one may start at a given load, and
  spreads its connections over up to `client_vcpus` threads when the
  options say the client's cores decide (cloud VMs, threads not given)."""
  s = opts.search
  if s.policy == 'adaptive':
    max_threads = s.adaptive_max_threads
    if s.adaptive_threads_from_vcpus and client_vcpus:
      max_threads = max(s.min_threads, client_vcpus)
    return adaptive.AdaptiveStepPolicy.FromConnectionRange(
        threads=s.min_threads, min_connections=s.adaptive_min_connections,
        max_connections=s.adaptive_max_connections,
        # The linear walk's first load unless told otherwise.
        start_connections=(start_connections or s.adaptive_start_connections
                           or s.min_threads * opts.generator.clients),
        pipeline=opts.generator.pipeline, cap_margin=s.cap_margin,
        confirm_repeats=s.confirm_repeats, max_threads=max_threads)
  return linear.LinearStepPolicy(
      min_threads=s.min_threads, max_threads=s.max_threads,
      thread_increment=s.thread_increment, clients=opts.generator.clients,
      pipeline=opts.generator.pipeline,
      confirm_repeats=s.linear_confirm_repeats,
      min_connections=LeastConnections(opts))


def LeastConnections(opts: options_lib.RedisStudyOptions) -> int:
  """The fewest connections a probe may have: 2 for a SET:GET mix unless
  memtier runs it (redis-benchmark runs each command on connections of its
  own), else 1."""
  w = opts.workload
  mixed = bool(w.set_ratio and w.get_ratio)
  return 2 if mixed and opts.generator.choice != 'memtier' else 1


def RequireStaircaseGenerator(generators) -> None:
  for generator in generators:
    if generator.NAME != memtier.MemtierGenerator.NAME:
      raise errors.PrerequisiteError(
          '--memtier_staircase needs memtier_benchmark >= 2.3, but the load '
          f'generator here is {generator.NAME} (memtier_benchmark is not '
          'installed; give --memtier_path) and it has no staircase mode.')
    if memtier.SupportsStaircase(generator.Version()) is False:
      raise errors.PrerequisiteError(
          f'--memtier_staircase needs memtier_benchmark >= 2.3; '
          f'{generator.Version()} has no --clients-start.')


def RunStaircaseToCap(driver: driver_lib.ProbeDriver,
                      opts: options_lib.RedisStudyOptions
                      ) -> List[measurement.Measurement]:
  """The staircase's steps, run in parts (staircase.Parts) up to the part
  in which a step reached the cap: the steps past it are not run."""
  st = opts.search.staircase
  steps = []
  for run, (first, last) in enumerate(st.Parts()):
    part = RunStaircase(driver, opts, first, last)
    # Steps are numbered over the whole ramp, not per run.
    part = [dataclasses.replace(m, metadata={
        **m.metadata, 'staircase_step': len(steps) + i,
        'staircase_run': run}) for i, m in enumerate(part)]
    steps += part
    if any(not m.UnderCap(opts.search.cap) for m in part):
      break
  return steps


def RunStaircase(driver: driver_lib.ProbeDriver,
                 opts: options_lib.RedisStudyOptions,
                 clients_start: Optional[int] = None,
                 max_clients: Optional[int] = None
                 ) -> List[measurement.Measurement]:
  """One staircase run on every client VM at once; steps summed over VMs.

  From `clients_start` to `max_clients` clients per thread (default: the
  whole ramp the options give). The client's CPU and the interference
  figures are read around the whole run, so every step carries that run's
  (`client_cpu_scope` and `interference_scope` say so), not its own.
  """
  st = opts.search.staircase
  if clients_start is not None:
    st = dataclasses.replace(st, clients_start=clients_start)
  if max_clients is not None:
    st = dataclasses.replace(st, max_clients=max_clients)
  load = measurement.Load(opts.search.min_threads, st.max_clients,
                          opts.generator.pipeline)

  def OnClient(vm, generator):
    steps, busy = driver_lib.BusyAround(vm, generator, lambda: (
        generator.Staircase(driver.endpoints, driver.password,
                            driver.workload, load, st,
                            opts.generator.warmup_s)))
    cpu = (getattr(generator, 'last_cpu', None)
           if getattr(generator, 'MEASURES_CLIENT_CPU', False) else None)
    if cpu is not None:
      busy = cpu.busy_fraction
    return {m.load.clients: driver_lib.WithClientCpu(dataclasses.replace(
        m, client_cpu_busy_fraction=busy, client_cpu=cpu,
        metadata=dict(m.metadata, client_cpu_scope='whole staircase')))
            for m in steps}

  pairs = list(zip(driver.client_vms, driver.generators))

  def RunAll():
    with concurrent.futures.ThreadPoolExecutor(len(pairs)) as pool:
      return list(pool.map(lambda pair: OnClient(*pair), pairs))

  # Interference, like the client CPU, is measured over the whole run.
  per_vm, figures, server_sides = interference.BracketSides(
      driver.interference, RunAll, lambda per_vm: [
          m.client_cpu for steps in per_vm for m in steps.values()])
  if figures:
    figures = dict(figures, interference_scope='whole staircase')
  clients = sorted(set.intersection(*(set(steps) for steps in per_vm)))
  combined = [driver_lib.CombineClientVms([steps[c] for steps in per_vm],
                                         per_vm[0][c].load) for c in clients]
  # Every step named its limit (attribution.py), over the whole run too.
  return [interference.Attributed(dataclasses.replace(
      m, metadata={**m.metadata, **figures}), server_sides)
          for m in combined]


def Search(spec, driver: driver_lib.ProbeDriver,
           opts: options_lib.RedisStudyOptions, extra: Dict[str, Any],
           start_connections: Optional[int] = None, hold: bool = False
           ) -> Tuple[search_driver.SearchResult, List[sample.Sample]]:
  """One latency-capped search; emits probe and result samples with `extra`
  and returns the search and its result samples (none without an answer).
  With `hold`, the answer's load is held for the options' hold time
  (`HoldAnswer`; the adaptive search backs off when it fails), and the
  answer's verdict includes whether it held."""
  cap = opts.search.cap
  holds = {}  # hold index -> steadiness.Hold; None: one that could not run

  def Hold(load, searched_ops, index):
    try:
      m, holds[index] = HoldAnswer(spec, driver, opts, load, searched_ops,
                                   index, extra)
    except errors.Error as e:
      # The answer is published all the same, not confirmed: a load
      # nobody saw held is not a figure that held.
      spec.reporter.Line(f'WARNING: the hold failed: {e}')
      holds[None] = steadiness.FailedHold(str(e), searched_ops, cap)
      return None
    return m, holds[index].ok

  hold_fn = Hold if hold and opts.search.hold_s else None

  def OnProbe(record: search_driver.ProbeRecord) -> None:
    results.PublishProbe(spec, record.index, record.measurement, cap,
                         record.role, extra)

  spec.reporter.Line(
      f'Searching for the most ops/s under {opts.search.cap.Describe()} '
      f'latency ({opts.search.name}, {driver.duration_s:g} s probes, every '
      f'second checked{_WarmupWords(opts)}):')
  # Each probe carries its steadiness (steadiness.py): one whose seconds
  # disagree with its whole is `unsteady`.
  measure = lambda load: steadiness.Marked(driver(load), cap)
  if opts.search.staircase:
    steps = [steadiness.Marked(m, cap)
             for m in RunStaircaseToCap(driver, opts)]
    policy = staircase.StaircasePolicy(
        tuple(m.load for m in steps),
        confirm_repeats=opts.search.confirm_repeats)
    # Each confirmation may run its disturbed repeats again (as many). The
    # repeats are probes, so --memtier_max_probes bounds them too; the steps
    # the policy replays (up to the first over the cap, a second over it
    # counted as search/driver.py does) are measured already: all kept.
    replayed = next((i + 1 for i, m in enumerate(steps)
                     if not m.UnderCap(cap) or
                     steadiness.SecondsOverCap(m.metadata)), len(steps))
    budget = max(replayed, min(opts.search.max_probes, len(steps) + 2 * (
        opts.search.confirm_repeats * (1 + policy.max_backoffs))))
    result = search_driver.FindLatencyCappedMaximum(
        staircase.ReplayThenMeasure(steps, measure), cap, policy,
        max_probes=budget, on_probe=OnProbe, hold=hold_fn)
  else:
    vcpus = min((vm.num_cpus for vm in driver.client_vms
                 if getattr(vm, 'num_cpus', None)), default=None)
    result = search_driver.FindLatencyCappedMaximum(
        measure, cap, Policy(opts, start_connections, vcpus),
        max_probes=opts.search.max_probes, on_probe=OnProbe, hold=hold_fn)
  if result.best is None:
    return result, []
  held = (holds[result.hold_index] if result.hold_index is not None else
          holds.get(None))
  return result, results.ResultSamples(spec, result, cap, extra, held)


def _WarmupWords(opts: options_lib.RedisStudyOptions) -> str:
  warmup = opts.generator.warmup_s
  return (f', its first {warmup} s of warm-up dropped' if warmup else '')


def HoldAnswer(spec, driver: driver_lib.ProbeDriver,
               opts: options_lib.RedisStudyOptions,
               load: measurement.Load, searched_ops: float, index: int,
               extra: Dict[str, Any]
               ) -> Tuple[measurement.Measurement, steadiness.Hold]:
  """Holds a load the search answered for the options' hold time, one
  probe whose seconds are each held to the cap and to the searched figure
  (`searched_ops`); publishes it as probe `index` (role `hold`) and its
  per-second figures as upstream PKB's time-series samples, and says in
  words whether it held."""
  cap, hold_s = opts.search.cap, opts.search.hold_s
  asked = driver.DurationForSeconds(hold_s)
  # The run's deadline (--timeout_minutes) can leave the probe less.
  allowed = driver.Duration(asked)
  cut = (f'the run\'s deadline (--timeout_minutes) left it {allowed:.0f} s'
         if allowed < asked else None)
  spec.reporter.Line(
      f'Holding the answer\'s load ({load.Describe()}, '
      f'{searched_ops:,.0f} ops/s searched) for {hold_s} s'
      f'{_WarmupWords(opts)}{f" ({cut})" if cut else ""}:')
  m = steadiness.Marked(driver(load, asked), cap)
  stopped = m.metadata.get(measurement.STOPPED_AT_KEY)
  if stopped and not cut:
    cut = (f'the load generator was stopped at its {stopped:g} s bound, '
           'running slower than planned')
  # Every second asked for counts: one the tool did not measure is not held.
  held = steadiness.OfHold(m, searched_ops, cap, asked_s=hold_s,
                           missing_why=cut)
  tags = {**extra, **held.Metadata()}
  results.PublishProbe(spec, index, m, cap, search_driver.ROLE_HOLD, tags)
  start_ms = SeriesStartMs(m)
  spec.EmitSamples(price_performance.TimeSeriesSamples(m, start_ms, {
      **extra, 'probe_index': index, 'probe_role': search_driver.ROLE_HOLD,
      'latency_cap_ms': cap.ms, 'latency_cap_statistic': cap.statistic,
      'threads': m.load.threads,
      'clients': m.load.clients, 'pipeline': m.load.pipeline,
      'hold_ok': held.ok, 'load_generator': m.metadata.get(
          'load_generator')}))
  spec.reporter.Seconds(m.per_second, cap.statistic)
  spec.reporter.Line(f'  {"Held" if held.ok else "NOT HELD"}: '
                     f'{held.Words()}.')
  return m, held


# How long before its load window's start a tool's own start may honestly
# be: the window starts as the probe script starts the tool (0.005-0.17 s
# before its process here), and a real memtier's own start came 0.04-0.57 s
# after the window's in 34 JSONs; the 110 a whole second early, 0.25-0.94 s
# before it.
_START_BEFORE_WINDOW_S = 0.25


def SeriesStartMs(m: measurement.Measurement) -> float:
  """When second 0 of `m`'s per-second series began (ms since the epoch):
  the tool's own start (memtier's per_second_start_ms), else the load
  window's, else now less the probe.

  memtier averages its clients' start times with the seconds truncated
  (run_stats::merge), so its start often comes out a whole second early:
  110 of 144 real memtier JSONs here (1 s and 3 s probes, a CPU hog on both
  cores) put it before their process had started, by 0.84 s at the median,
  and the hold's time-series timestamps with it. A start more than
  _START_BEFORE_WINDOW_S before the load window (the probe's clock, which
  memtier's is on the same machine) is moved on by the whole seconds that
  bring it past that.
  """
  start_ms = m.metadata.get('per_second_start_ms')
  if not isinstance(start_ms, (int, float)):
    # The tool gave no start: the load window's, else now less the hold.
    return 1000 * (m.load_window[0] if m.load_window else
                   time.time() - m.duration_s)
  if m.load_window:
    early_s = m.load_window[0] - _START_BEFORE_WINDOW_S - start_ms / 1000
    if early_s > 0:
      start_ms += 1000 * math.ceil(early_s)
  return start_ms


# The flag that sets each policy's lowest load, for the no-answer line.
_LOWEST_LOAD_FLAG = {
    'adaptive': '--memtier_adaptive_min_connections',
    'linear': '--memtier_clients and --memtier_min_threads',
    'staircase': '--memtier_staircase_clients_start',
}
# The flag that sets each policy's first load, for a budget spent before
# the search got lower (the adaptive search starts above its lowest load).
_FIRST_LOAD_FLAG = dict(_LOWEST_LOAD_FLAG,
                        adaptive='--memtier_adaptive_start_connections')


def NoResultError(result: search_driver.SearchResult, cap_ms: float,
                  least_connections: int = 1) -> errors.NoResultError:
  """What to tell the user, in one line, when no load was under the cap
  (NoLoadUnderCapError when every probe was over it: pkb exits 4 for that,
  as for an unconfirmed answer)."""
  if not result.probes:
    return errors.NoResultError(
        f'The search ran no probe ({result.stop_reason}).')
  capped = measurement.LatencyCap(cap_ms, result.statistic)
  cap = capped.Short()
  if not result.all_over_cap:
    return errors.NoResultError(
        f'Some probes were under the {cap} cap but the search gave no '
        f'answer ({result.stop_reason}).')
  lowest = min(result.probes, key=lambda p: p.latency_ms)
  fewest = min(p.load.connections for p in result.probes)
  where = (f'lowest {measurement.StatisticName(result.statistic)} '
           f'{lowest.latency_ms:.3f} ms at '
           f'{lowest.load.Describe()}')
  if lowest.measurement.UnderCap(capped):
    # Under as a whole, over in a second (search/driver.py counts that as
    # over): say so, or the line would contradict its own figure.
    where += ', under the cap as a whole but over it in a second'
  if fewest <= least_connections:
    # Probes others' load disturbed measured it as much as the server: the
    # server is not blamed for them (as a disturbed answer is not its).
    disturbed = [p.measurement.metadata for p in result.probes
                 if verdict.Disturbed(p.measurement.metadata)]
    foreign = max((m.get(k) for m in disturbed for k in (
        'client_foreign_cpu_pct', 'server_foreign_cpu_pct',
        'foreign_cpu_pct') if isinstance(m.get(k), (int, float))),
                  default=None)
    why = ('this server cannot answer that fast here; raise '
           '--memtier_latency_cap.' if not disturbed else
           'others took CPU the run\'s threads waited for in '
           f'{len(disturbed)} of the {len(result.probes)} probes' +
           (f' (foreign CPU up to {foreign:g} %)' if foreign is not None
            else '') + ': not the server\'s figure alone; stop the '
           'other load and run again, or raise --memtier_latency_cap.')
    return errors.NoLoadUnderCapError(
        f'Every probe was over the {cap} cap, down to {fewest} '
        f'connection{"s" if fewest > 1 else ""} ({where}): {why}')
  flag = _LOWEST_LOAD_FLAG.get(result.policy, '--memtier_clients')
  if result.budget_exhausted:
    first = _FIRST_LOAD_FLAG.get(result.policy, '--memtier_clients')
    return errors.NoLoadUnderCapError(
        f'Every probe was over the {cap} cap ({where}) when the probe '
        f'budget of {len(result.probes)} ran out: raise --memtier_max_probes '
        f'or start from a lower load (lower {first}).')
  return errors.NoLoadUnderCapError(
      f'Every probe was over the {cap} cap ({where}, {fewest} '
      f'connections at the fewest): start from a lower load: lower {flag}.')


def WarnAboutIgnoredWarmup(spec, generators,
                           opts: options_lib.RedisStudyOptions) -> None:
  warmup = opts.generator.warmup_s
  if warmup and any(g.NAME != memtier.MemtierGenerator.NAME
                    for g in generators):
    spec.reporter.Line(
        f'Note: --memtier_warmup_seconds={warmup} is ignored by '
        'redis-benchmark, which has no per-second series; its samples say '
        'warmup_s: 0, warmup_supported: False.')
