"""The dry-run plan of the Redis study and its probe-time estimate.

Takes the frozen options, never flags. Extension seam: a new search policy
or study mode adds its plan line in `SearchPlan` and its probe counts in
`ProbesPerSearch`, so `--dry_run` says exactly what a real run would do; the
cost estimate's search minutes come from the same counts (`EstimatedSeconds`,
through the benchmark module's `EstimatedMinutes`).
"""

from typing import List, Optional

from perfkitbenchmarker import cost_estimate
from perfkitbenchmarker import providers
from perfkitbenchmarker import steadiness
from perfkitbenchmarker.load_generators import redis_benchmark
from perfkitbenchmarker.search import adaptive
from perfkitbenchmarker.search import staircase
from perfkitbenchmarker.study import fixed_load
from perfkitbenchmarker.study import options as options_lib
from perfkitbenchmarker.study import search_runner
from perfkitbenchmarker.study import workload_options


def ProbesPerSearch(opts: options_lib.RedisStudyOptions,
                    client_vcpus: Optional[int] = None
                    ) -> adaptive.ProbeCounts:
  """Probes of one search (beyond a staircase run), under its budget; the
  linear walk's typical count is the whole walk."""
  s = opts.search
  if s.staircase:
    repeats = s.confirm_repeats
    return adaptive.ProbeCounts(
        repeats, repeats,
        repeats * (1 + staircase.StaircasePolicy.max_backoffs))
  if s.policy == 'adaptive':
    return search_runner.Policy(opts, client_vcpus=client_vcpus
                                ).EstimateProbes().Capped(s.max_probes)
  walk = (s.max_threads - s.min_threads) // s.thread_increment + 1
  repeats = s.linear_confirm_repeats
  return adaptive.ProbeCounts(1, walk + repeats,
                              walk + repeats).Capped(s.max_probes)


def SearchPlan(opts: options_lib.RedisStudyOptions,
               client_vcpus: Optional[int] = None,
               server_vcpus: Optional[int] = None) -> List[str]:
  """The search lines; `client_vcpus`: one client VM's vCPUs on a cloud,
  which the real run's adaptive search spreads threads over;
  `server_vcpus`: one server VM's, which bound the shard study."""
  if opts.fixed.enabled:
    return fixed_load.PlanLines(opts)
  s, g = opts.search, opts.generator
  cap = (f'{s.cap.StatisticName()} latency under {s.cap_ms:g} ms; '
         f'{g.run_duration_s} s probes')
  if g.warmup_s:
    cap += f' + {g.warmup_s} s warm-up (memtier only)'
  if s.staircase:
    steps = s.staircase.Steps()
    confirm = (f'; answer = mean of {s.confirm_repeats} repeats with 95 % '
               'interval' if s.confirm_repeats else '')
    runs = len(s.staircase.Parts())
    lines = [f'  staircase: {s.min_threads} thread(s) x '
             f'{steps[0]}..{steps[-1]} clients in {len(steps)} steps of '
             f'{s.staircase.step_duration_s} s, in up to {runs} memtier runs '
             f'of {staircase.STEPS_PER_RUN} steps, none after the run that '
             f'reaches the cap; {cap}{confirm}']
  elif s.policy == 'adaptive':
    lines = _AdaptiveLines(opts, cap, client_vcpus)
  else:
    lines = [f'  linear: threads {s.min_threads}..{s.max_threads} step '
             f'{s.thread_increment} x {g.clients} clients, pipeline '
             f'{g.pipeline}; {cap}; stop at the cap' +
             (f'; answer = mean of {s.linear_confirm_repeats} repeats with '
              '95 % interval' if s.linear_confirm_repeats else '') +
             f'; at most {ProbesPerSearch(opts).most} probes']
  lines = ['Search:'] + lines
  sh = opts.shards
  if sh.enabled:
    # The counts shard_study climbs over, once the server's vCPUs are known.
    low, start, high = (sh.Bounds(server_vcpus) if server_vcpus else
                        (sh.min_shards, 'vCPUs / 2',
                         sh.max_shards or 'vCPUs'))
    lines.append(f'  repeated per shard count: shards per server VM hill-'
                 f'climbed in [{low}, {high}] from {start}; at most '
                 f'{sh.max_points} counts')
  lines.append('  every probe\'s seconds checked: a second over the cap, or '
               'seconds swinging more than '
               f'{100 * steadiness.SWING_BOUND:.0f} %, make it unsteady')
  lines.append(HoldPlanLine(opts))
  return lines + CurvePlan(opts)


def CurveProbes(opts: options_lib.RedisStudyOptions) -> int:
  """Probes the latency-throughput curve adds after the search: none with
  the shard study, fixed loads or redis-benchmark (no rate limiter)."""
  if (opts.shards.enabled or opts.fixed.enabled or
      opts.generator.choice == 'redis_benchmark'):
    return 0
  return len(opts.curve.percents)


def CurvePlan(opts: options_lib.RedisStudyOptions) -> List[str]:
  """The curve's plan lines (curve_runner.RunCurve)."""
  if not CurveProbes(opts):
    return []
  g = opts.generator
  percents = ', '.join(str(p) for p in opts.curve.percents)
  without = ('; none if the load generator is redis-benchmark (no rate '
             'limiter)' if _MayFallBackToRedisBenchmark(g) else '')
  return ['Curve:',
          f'  {CurveProbes(opts)} probes after the search at {percents} % of '
          'the answer\'s throughput: the answer\'s connections, each at a '
          f'fixed rate (memtier --rate-limiting), '
          f'{opts.curve.ProbeSeconds(g.run_duration_s):g} s each{without}; '
          '--memtier_curve_rate_percents= turns it off']


def HoldPlanLine(opts: options_lib.RedisStudyOptions) -> str:
  s, g = opts.search, opts.generator
  if opts.shards.enabled:
    return ('  hold: none (--redis_optimize_shards holds no shard count\'s '
            'answer)')
  if not s.hold_s:
    return '  hold: none (--memtier_hold_duration=0)'
  # redis-benchmark drops no warm-up (its probes' warmup_s is 0): said as
  # the search line says it, not promised.
  warmup = ''
  if g.warmup_s and g.choice != 'redis_benchmark':
    warmup = f' + {g.warmup_s} s warm-up' + (
        ' (memtier only)' if _HoldMayRunRedisBenchmark(opts) else '')
  counted = ''
  if _HoldMayRunRedisBenchmark(opts):
    counted = (f' (redis-benchmark, which runs a request count, is asked for '
               f'{redis_benchmark.DurationForSeconds(s.hold_s):g} s of '
               f'requests so that {s.hold_s} whole seconds come out)')
  backoff = ''
  if s.policy == 'adaptive' and not s.staircase:
    backoff = ('; a load that does not hold is given up and a lower one '
               f'repeated and held (at most {adaptive.MAX_HOLD_BACKOFFS} '
               'such back-off)')
  return (f'  hold: the answer\'s load for {s.hold_s} s{warmup} after the '
          f'search{counted}, every second under the cap and within '
          f'{100 * steadiness.SWING_BOUND:.0f} % of the searched figure, '
          f'or the answer is not confirmed{backoff}; per-second time-series '
          'samples')


def _MayFallBackToRedisBenchmark(g) -> bool:
  """The auto choice without a memtier of the user's: Local's fallback to
  redis-benchmark when no memtier is installed."""
  return g.choice == 'auto' and not g.memtier_path


def _HoldMayRunRedisBenchmark(opts: options_lib.RedisStudyOptions) -> bool:
  """Whether redis-benchmark may hold the answer: chosen, or the auto
  choice's fallback."""
  g = opts.generator
  return g.choice == 'redis_benchmark' or _MayFallBackToRedisBenchmark(g)


def HoldSeconds(opts: options_lib.RedisStudyOptions,
                overhead: float) -> float:
  """The hold's probe time, for the estimate (none in a shard study): what
  the load generator is asked for (search_runner.HoldAnswer), the longer
  of memtier's and redis-benchmark's where either may run (an estimate
  that errs high, as cost_estimate.ProbeOverheadS does for 'auto')."""
  s, g = opts.search, opts.generator
  if opts.shards.enabled or not s.hold_s:
    return 0.0
  asked = [] if g.choice == 'redis_benchmark' else [s.hold_s + g.warmup_s]
  if _HoldMayRunRedisBenchmark(opts):
    # No warm-up: redis-benchmark's probes drop none (warmup_s 0).
    asked.append(redis_benchmark.DurationForSeconds(s.hold_s))
  return max(asked) + overhead


def _AdaptiveLines(opts: options_lib.RedisStudyOptions, cap: str,
                   client_vcpus: Optional[int] = None) -> List[str]:
  """What the adaptive search does, from the policy a run would build
  (search_runner.Policy with the client's vCPUs, as the real run does)."""
  policy = search_runner.Policy(opts, client_vcpus=client_vcpus)
  if policy.threads_vary:
    threads = (f'{policy.threads}..{policy.max_threads} threads (one client '
               'each, then more clients per thread)')
  else:
    threads = f'{policy.threads} thread(s)'
  lines = [f'  adaptive: {threads}, {policy.min_connections}..'
           f'{policy.max_connections} connections per client process '
           f'starting at {policy.start_connections}, aiming under cap x '
           f'{policy.cap_margin:g}; {cap}']
  least, most = policy.confirm_repeats, policy.repeat_rule.upper
  if not least:
    lines.append('  answer: the best search probe, unrepeated')
  else:
    repeats = f'{least} repeats'
    if most > least:
      repeats = (f'{least}-{most} repeats (past {least} only while the '
                 'interval\'s half-width is over '
                 f'{policy.confirm_ci_target * 100:g} % of the mean and '
                 f'{most} repeats could bring it there)')
    lines.append(
        f'  answer: mean and 95 % interval of {repeats} at the best load and '
        f'at up to {adaptive.MAX_CONTENDERS - 1} loads at the ends of its '
        'noise band (only those above the held mean by more than a '
        f'repeat\'s spread); a disturbed repeat run again (up to '
        f'{policy.confirm_max_reruns}; not one right after a disturbed probe: '
        f'that disturbance lasts); up to {policy.max_backoffs} lower '
        f'loads tried if the repeats {_RepeatsOver(opts.search.cap)}')
  counts = ProbesPerSearch(opts, client_vcpus)
  budget = (', the --memtier_max_probes budget'
            if counts.most == opts.search.max_probes else '')
  lines.append(f'  probes per search: about {counts.typical} (fewest '
               f'{counts.fewest}, at most {counts.most}{budget}); the cost '
               f'estimate uses {counts.typical}')
  return lines


def _RepeatsOver(cap) -> str:
  """When the adaptive search backs off (adaptive._DecideAndConfirm):
  the repeats' capped statistic together at or over the cap, for a
  percentile that of their merged histograms, not an average."""
  if cap.is_average:
    return 'average over the cap'
  return f'together have a {cap.statistic} at or over the cap'


def EstimatedSeconds(opts: options_lib.RedisStudyOptions) -> float:
  """Probe time of one study at the typical probe count, for the cost."""
  g = opts.generator
  overhead = cost_estimate.ProbeOverheadS(g.choice)
  if opts.fixed.enabled:
    return fixed_load.EstimatedSeconds(opts, overhead)
  probe_s = g.run_duration_s + g.warmup_s + overhead
  seconds = (ProbesPerSearch(opts).typical * probe_s + CurveProbes(opts) * (
      opts.curve.ProbeSeconds(g.run_duration_s) + g.warmup_s + overhead))
  st = opts.search.staircase
  if st:  # at most the whole ramp, one probe overhead per run
    seconds += st.TestTime() + len(st.Parts()) * overhead
  if opts.shards.enabled:
    seconds = (seconds + 20) * opts.shards.typical_points
  return seconds + HoldSeconds(opts, overhead)


def EngineLine(server: options_lib.ServerOptions) -> str:
  """'engine valkey (distro; io_threads=4)' for the plan."""
  settings = ''.join(f'; {k}={v}' for k, v in server.engine_settings)
  return f'engine {server.engine} ({server.version}{settings})'


def CoreWarnings(opts: options_lib.RedisStudyOptions,
                 server_vcpus: Optional[int]) -> List[str]:
  """Warnings for more shards, or Redis io-threads, per server VM than it
  has cores: they share them, and the search measures the sharing."""
  if not server_vcpus:
    return []
  server = opts.server
  warnings = []
  # A server VM also holds the replicas of a VM's primaries (replication),
  # which apply every write.
  processes = server.shards_per_vm * (1 + server.replicas_per_primary)
  if processes > server_vcpus:
    replicas = (' (primaries and replicas)' if server.replicas_per_primary
                else '')
    warnings.append(
        f'WARNING: {processes} shards per server VM{replicas} on '
        f'{server_vcpus} core(s): shards share cores and measure each other; '
        'lower --redis_total_num_processes or use larger server VMs.')
  io_threads = dict(server.engine_settings).get('io_threads')
  if io_threads and int(io_threads) > server_vcpus:
    warnings.append(
        f'WARNING: --redis_server_io_threads={io_threads} on a server VM with '
        f'{server_vcpus} core(s): the threads wait for each other and '
        'latency rises from the lowest load; use at most '
        f'{server_vcpus} or larger server VMs.')
  return warnings


def DescribePlan(spec, opts: options_lib.RedisStudyOptions,
                 client_vcpus: Optional[int] = None) -> List[str]:
  """Software, workload and search lines of the dry-run plan."""
  counts = spec.GroupCounts()
  server, workload = opts.server, opts.workload
  shards = server.shards_per_vm * counts['servers']
  return [
      'Software:',
      f'  servers: {EngineLine(server)}, {server.shards_per_vm} '
      f'shard(s) per VM, {shards} in all, {server.mode}; per-run password; '
      'no persistence',
      f'  clients: load generator {_Generator(opts, spec.cloud)}'
      f'{_Fallback(opts)}',
      'Workload:',
      f'  preload {workload.key_count:,} keys x {workload.data_size} B; '
      f'probes SET:GET {_Ratios(opts)}, keys {workload.key_pattern}'
      f'{_KeyShape(workload)}',
  ] + SearchPlan(opts, client_vcpus, spec.ServerVcpus())


def _Generator(opts: options_lib.RedisStudyOptions, cloud: str) -> str:
  """The load generator the run will use, as deployment.ChooseGenerator
  picks it."""
  g = opts.generator
  if g.choice != 'auto':
    return g.choice + (f' ({g.memtier_path})' if g.memtier_path else '')
  if g.memtier_path:
    return f'memtier_benchmark ({g.memtier_path})'
  if providers.CapabilitiesOf(cloud).made_by_run:
    return ('memtier_benchmark (auto: installed on the client VMs from '
            'Redis\'s APT repository)')
  return 'auto (memtier_benchmark when installed, else redis-benchmark)'


def _Fallback(opts: options_lib.RedisStudyOptions) -> str:
  """What a redis-benchmark run would leave out (--redis_benchmark_fallback)."""
  g = opts.generator
  if not (g.fallback and g.choice == 'auto'):
    return ''
  dropped = workload_options.MemtierOnlyFeatures(
      opts.workload, g.requests, g.processes_per_client)
  return (f'; without memtier it runs without {", ".join(dropped)}'
          if dropped else '')


def _Ratios(opts: options_lib.RedisStudyOptions) -> str:
  if opts.fixed.enabled:
    return ', '.join(f'{s}:{g}' for s, g in opts.fixed.ratios)
  return opts.workload.ratio


def _KeyShape(workload) -> str:
  """Gaussian median/stddev and seeding, when set."""
  parts = []
  if workload.key_median is not None:
    parts.append(f'median {workload.key_median:,.0f}')
  if workload.key_stddev is not None:
    parts.append(f'stddev {workload.key_stddev:,.0f}')
  if workload.distinct_client_seed:
    parts.append('distinct client seeds')
  if workload.randomize:
    parts.append('randomized seed')
  return f' ({", ".join(parts)})' if parts else ''
