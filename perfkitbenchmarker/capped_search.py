"""The latency-capped search as the study runs it: flags, policy, probes.

Wires the pure policies (latency_search.py, adaptive_search.py,
staircase_search.py) to a probe driver, publishes every probe's samples the
moment it ends, and turns the search result into the study's result samples.
Extension seam: a new policy needs a flag value here (`Policy`) and a plan
line (`SearchPlan`); the benchmark module only calls `CheckFlags`, `Search`,
`SearchPlan` and `EstimatedSeconds`.
"""

import concurrent.futures
import dataclasses
from typing import Any, Dict, List, Optional, Tuple

from absl import flags

from perfkitbenchmarker import errors
from perfkitbenchmarker import latency_search
from perfkitbenchmarker import measurement
from perfkitbenchmarker import price_performance
from perfkitbenchmarker import redis_study as setup
from perfkitbenchmarker import sample
from perfkitbenchmarker import shard_study
from perfkitbenchmarker import staircase_search
from perfkitbenchmarker.load_generators import commands
from perfkitbenchmarker.load_generators import driver as driver_lib
from perfkitbenchmarker.load_generators import memtier

flags.DEFINE_float('memtier_latency_cap', 1.0,
                   'Average-latency cap in ms for the capped throughput.')
flags.DEFINE_enum('memtier_latency_capped_search', 'adaptive',
                  ['linear', 'adaptive'],
                  'How the load is searched: adaptive (geometric growth, '
                  'Little\'s-law prediction, confirmed by repeats; see '
                  'docs/search.md) or linear (the published T2D study: '
                  '+thread_increment threads per probe, for reproducing it).')
flags.DEFINE_integer('memtier_min_threads', 1,
                     'Threads of the first linear probe; the adaptive search '
                     'keeps this many threads and varies clients per thread.')
flags.DEFINE_integer('memtier_max_threads', 8,
                     'Most threads a linear probe uses.')
flags.DEFINE_integer('memtier_thread_increment', 1,
                     'Threads added per probe by the linear search.')
flags.DEFINE_integer('memtier_max_probes', 40, 'Hard bound on probes.')
flags.DEFINE_integer('memtier_adaptive_min_connections', 4,
                     'Fewest connections per client process the adaptive '
                     'search offers.', lower_bound=1)
flags.DEFINE_integer('memtier_adaptive_max_connections', 1024,
                     'Most connections per client process the adaptive '
                     'search offers.', lower_bound=1)
flags.DEFINE_integer('memtier_adaptive_start_connections', None,
                     'First adaptive probe (default: --memtier_min_threads x '
                     '--memtier_clients, the linear walk\'s first load).',
                     lower_bound=1)
flags.DEFINE_integer('memtier_confirm_repeats', 3,
                     'Repeats of the chosen load whose mean (with a 95 % '
                     'interval) is reported; 0 reports the single probe.',
                     lower_bound=0)
flags.DEFINE_float('memtier_cap_margin', 0.95,
                   'The adaptive search aims under cap x margin so that the '
                   'confirming repeats land under the cap.')
flags.DEFINE_boolean('memtier_staircase', False,
                     'Search with memtier\'s staircase mode (memtier >= 2.3): '
                     'one run steps the clients per thread; the best step '
                     'under the cap is confirmed with ordinary probes.')
flags.DEFINE_integer('memtier_staircase_clients_start', 16,
                     'Clients per thread of the first staircase step.',
                     lower_bound=1)
flags.DEFINE_integer('memtier_staircase_clients_step', 16,
                     'Clients per thread added per staircase step.',
                     lower_bound=1)
flags.DEFINE_integer('memtier_staircase_step_seconds', 2,
                     'Seconds per staircase step.', lower_bound=1)
flags.DEFINE_integer('memtier_staircase_max_clients', 256,
                     'Clients per thread of the last staircase step.',
                     lower_bound=2)
FLAGS = flags.FLAGS


def CheckFlags() -> None:
  """Rejects impossible search settings before anything is created."""
  if FLAGS.memtier_latency_cap <= 0:
    raise errors.UsageError(
        f'--memtier_latency_cap={FLAGS.memtier_latency_cap:g} must be above '
        '0 ms (the default is 1).')
  if FLAGS.memtier_min_threads < 1 or FLAGS.memtier_thread_increment < 1:
    raise errors.UsageError(
        '--memtier_min_threads and --memtier_thread_increment must be at '
        'least 1.')
  if FLAGS.memtier_min_threads > FLAGS.memtier_max_threads:
    raise errors.UsageError(
        f'--memtier_min_threads={FLAGS.memtier_min_threads} is above '
        f'--memtier_max_threads={FLAGS.memtier_max_threads}; lower the first '
        'or raise the second.')
  if (FLAGS.memtier_adaptive_min_connections >
      FLAGS.memtier_adaptive_max_connections):
    raise errors.UsageError(
        '--memtier_adaptive_min_connections='
        f'{FLAGS.memtier_adaptive_min_connections} is above '
        '--memtier_adaptive_max_connections='
        f'{FLAGS.memtier_adaptive_max_connections}.')
  if not 0 < FLAGS.memtier_cap_margin <= 1:
    raise errors.UsageError(
        f'--memtier_cap_margin={FLAGS.memtier_cap_margin:g} must be in (0, 1],'
        ' e.g. 0.95 to aim 5 % under the cap.')
  if FLAGS.memtier_staircase:
    CheckStaircaseFlags()
  Policy()  # The policies check the rest of their bounds (as UsageErrors).


def CheckStaircaseFlags() -> None:
  if FLAGS.load_generator == 'redis_benchmark':
    raise errors.UsageError(
        '--memtier_staircase needs memtier_benchmark >= 2.3 (its '
        '--clients-start/--clients-step options); redis-benchmark has no '
        'staircase mode. Drop --load_generator=redis_benchmark or '
        '--memtier_staircase.')
  if (FLAGS.memtier_staircase_clients_start >=
      FLAGS.memtier_staircase_max_clients):
    raise errors.UsageError(
        f'--memtier_staircase_clients_start='
        f'{FLAGS.memtier_staircase_clients_start} must be below '
        f'--memtier_staircase_max_clients='
        f'{FLAGS.memtier_staircase_max_clients} (memtier requires it).')
  if FLAGS.memtier_warmup_seconds >= FLAGS.memtier_staircase_step_seconds:
    raise errors.UsageError(
        f'--memtier_warmup_seconds={FLAGS.memtier_warmup_seconds} leaves '
        'nothing of a staircase step of --memtier_staircase_step_seconds='
        f'{FLAGS.memtier_staircase_step_seconds}; the warm-up is per step.')


def StaircaseSpec() -> commands.StaircaseSpec:
  return commands.StaircaseSpec(FLAGS.memtier_staircase_clients_start,
                                FLAGS.memtier_staircase_clients_step,
                                FLAGS.memtier_staircase_step_seconds)


def SearchName() -> str:
  if FLAGS.memtier_staircase:
    return staircase_search.StaircasePolicy.NAME
  return FLAGS.memtier_latency_capped_search


def ProbesPerSearch() -> int:
  """A typical probe count, for the time estimate."""
  if FLAGS.memtier_staircase:
    return FLAGS.memtier_confirm_repeats
  if FLAGS.memtier_latency_capped_search == 'adaptive':
    return min(FLAGS.memtier_max_probes, 5 + 2 * FLAGS.memtier_confirm_repeats)
  return min(FLAGS.memtier_max_probes,
             (FLAGS.memtier_max_threads - FLAGS.memtier_min_threads) //
             FLAGS.memtier_thread_increment + 1)


def SearchPlan() -> List[str]:
  cap = (f'average latency under {FLAGS.memtier_latency_cap:g} ms; '
         f'{FLAGS.memtier_run_duration} s probes')
  if FLAGS.memtier_warmup_seconds:
    cap += f' + {FLAGS.memtier_warmup_seconds} s warm-up (memtier only)'
  confirm = (f'; answer = mean of {FLAGS.memtier_confirm_repeats} repeats '
             'with 95 % interval' if FLAGS.memtier_confirm_repeats else '')
  if FLAGS.memtier_staircase:
    steps = StaircaseSpec().Steps(FLAGS.memtier_staircase_max_clients)
    line = (f'  staircase: one memtier run, {FLAGS.memtier_min_threads} '
            f'thread(s) x {steps[0]}..{steps[-1]} clients in {len(steps)} '
            f'steps of {FLAGS.memtier_staircase_step_seconds} s; {cap}'
            f'{confirm}')
  elif FLAGS.memtier_latency_capped_search == 'adaptive':
    policy = Policy()
    line = (f'  adaptive: {policy.threads} thread(s), '
            f'{policy.min_connections}..{policy.max_connections} connections '
            f'per client process starting at {policy.start_connections}, '
            f'aiming under cap x {policy.cap_margin:g}; {cap}{confirm}; at '
            f'most {FLAGS.memtier_max_probes} probes')
  else:
    line = (f'  linear: threads {FLAGS.memtier_min_threads}..'
            f'{FLAGS.memtier_max_threads} step '
            f'{FLAGS.memtier_thread_increment} x {FLAGS.memtier_clients} '
            f'clients, pipeline {FLAGS.memtier_pipeline}; {cap}; stop at the '
            f'cap; at most {ProbesPerSearch()} probes')
  lines = ['Search:', line]
  if FLAGS.redis_optimize_shards:
    lines.append(f'  repeated per shard count: {shard_study.PlanLine(FLAGS)}')
  return lines


def EstimatedSeconds() -> float:
  """Probe time of one study, for the dry-run cost estimate."""
  seconds = ProbesPerSearch() * (FLAGS.memtier_run_duration +
                                  FLAGS.memtier_warmup_seconds +
                                  setup.PROBE_OVERHEAD_S)
  if FLAGS.memtier_staircase:
    seconds += (StaircaseSpec().TestTime(FLAGS.memtier_staircase_max_clients) +
                setup.PROBE_OVERHEAD_S)
  if FLAGS.redis_optimize_shards:
    seconds = (seconds + 20) * shard_study.TypicalPoints(FLAGS)
  return seconds


def RequireStaircaseGenerator(spec) -> None:
  for generator in spec.state['generators']:
    if generator.NAME != memtier.MemtierGenerator.NAME:
      raise errors.PrerequisiteError(
          '--memtier_staircase needs memtier_benchmark >= 2.3, but the load '
          f'generator here is {generator.NAME} (memtier_benchmark is not '
          'installed; give --memtier_path) and it has no staircase mode.')
    if memtier.SupportsStaircase(generator.Version()) is False:
      raise errors.PrerequisiteError(
          f'--memtier_staircase needs memtier_benchmark >= 2.3; '
          f'{generator.Version()} has no --clients-start.')


def Policy(start_connections: Optional[int] = None):
  """The configured policy; an adaptive one may start at a given load."""
  if FLAGS.memtier_latency_capped_search == 'adaptive':
    policy = setup.AdaptivePolicy(FLAGS)
    if start_connections:
      start = min(policy.max_connections,
                  max(policy.min_connections, start_connections))
      policy = dataclasses.replace(policy, start_connections=start)
    return policy
  return latency_search.LinearStepPolicy(
      min_threads=FLAGS.memtier_min_threads,
      max_threads=FLAGS.memtier_max_threads,
      thread_increment=FLAGS.memtier_thread_increment,
      clients=FLAGS.memtier_clients, pipeline=FLAGS.memtier_pipeline)


def RunStaircase(driver: driver_lib.ProbeDriver
                  ) -> List[measurement.Measurement]:
  """One staircase run on every client VM at once; steps summed over VMs.

  The client's CPU is read around the whole run, so every step carries that
  run's busy share (`client_cpu_scope` says so), not its own.
  """
  load = measurement.Load(FLAGS.memtier_min_threads,
                          FLAGS.memtier_staircase_max_clients,
                          FLAGS.memtier_pipeline)

  def OnClient(vm, generator):
    before = vm.CpuTimes()
    steps = generator.Staircase(driver.endpoints, driver.password,
                                driver.workload, load, StaircaseSpec(),
                                FLAGS.memtier_warmup_seconds)
    after = vm.CpuTimes()
    total = after[1] - before[1]
    busy = (after[0] - before[0]) / total if total > 0 else None
    saturated = busy is not None and busy > driver_lib.SATURATED_BUSY_FRACTION
    return {m.load.clients: dataclasses.replace(
        m, client_cpu_busy_fraction=busy, client_saturated=saturated,
        metadata=dict(m.metadata, client_cpu_scope='whole staircase'))
            for m in steps}

  pairs = list(zip(driver.client_vms, driver.generators))
  with concurrent.futures.ThreadPoolExecutor(len(pairs)) as pool:
    per_vm = list(pool.map(lambda pair: OnClient(*pair), pairs))
  clients = sorted(set.intersection(*(set(steps) for steps in per_vm)))
  return [driver_lib.Combine([steps[c] for steps in per_vm],
                             per_vm[0][c].load) for c in clients]


def Search(spec, driver: driver_lib.ProbeDriver,
            extra: Dict[str, Any], start_connections: Optional[int] = None
            ) -> Tuple[latency_search.SearchResult, List[sample.Sample]]:
  """One latency-capped search; emits probe and result samples with `extra`.

  Returns the search and its result samples (none when no load was under
  the cap).
  """
  cap = FLAGS.memtier_latency_cap

  def OnProbe(record: latency_search.ProbeRecord) -> None:
    m = record.measurement
    # Published before it is shown: a probe on the screen is in the results.
    spec.EmitSamples([s.WithMetadata(**extra) for s in
                      price_performance.ProbeSamples(record.index, m, cap,
                                                     record.role)])
    spec.reporter.Probe(record.index, m, cap, record.role)

  spec.reporter.Line(
      f'Searching for the most ops/s under {cap:g} ms average latency '
      f'({SearchName()}, {driver.duration_s:g} s probes):')
  if FLAGS.memtier_staircase:
    steps = RunStaircase(driver)
    policy = staircase_search.StaircasePolicy(
        tuple(m.load for m in steps),
        confirm_repeats=FLAGS.memtier_confirm_repeats)
    budget = len(steps) + FLAGS.memtier_confirm_repeats * (
        1 + policy.max_backoffs)
    result = latency_search.FindLatencyCappedMaximum(
        staircase_search.ReplayThenMeasure(steps, driver), cap, policy,
        max_probes=budget, on_probe=OnProbe)
  else:
    result = latency_search.FindLatencyCappedMaximum(
        driver, cap, Policy(start_connections),
        max_probes=FLAGS.memtier_max_probes, on_probe=OnProbe)
  if result.best is None:
    return result, []
  samples = [s.WithMetadata(**extra) for s in
             setup.ResultSamples(spec, result, cap, FLAGS)]
  spec.EmitSamples(samples)
  return result, samples


def NoResultError(result: latency_search.SearchResult) -> errors.NoResultError:
  """What to tell the user when no load held under the cap."""
  cap = FLAGS.memtier_latency_cap
  if not result.all_over_cap:
    return errors.NoResultError(
        f'Some probes were under the {cap:g} ms cap but no load held under '
        f'it when repeated ({result.stop_reason}); the latency is too noisy '
        'here: use longer probes (--memtier_run_duration) or a quieter '
        'machine.')
  lowest = min(p.measurement.average_latency_ms for p in result.probes)
  return errors.NoResultError(
      f'Every probe was over the {cap:g} ms cap (lowest average '
      f'{lowest:.3f} ms); start from a lower load, e.g. '
      '--memtier_adaptive_min_connections=1 --memtier_clients=4.')


def WarnAboutIgnoredWarmup(spec) -> None:
  generators = spec.state.get('generators') or []
  if FLAGS.memtier_warmup_seconds and any(
      g.NAME != memtier.MemtierGenerator.NAME for g in generators):
    spec.reporter.Line(
        f'Note: --memtier_warmup_seconds={FLAGS.memtier_warmup_seconds} is '
        'ignored by redis-benchmark, which has no per-second series; its '
        'samples say warmup_s: 0, warmup_supported: False.')
