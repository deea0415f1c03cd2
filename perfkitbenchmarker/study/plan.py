"""The dry-run plan of the Redis study and its probe-time estimate.

Takes the frozen options, never flags. Extension seam: a new search policy
or study mode adds its plan line in `SearchPlan` and its probe count in
`ProbesPerSearch`, so `--dry_run` says exactly what a real run would do.
"""

from typing import List

from perfkitbenchmarker.study import deployment
from perfkitbenchmarker.study import fixed_load
from perfkitbenchmarker.study import options as options_lib
from perfkitbenchmarker.study import search_runner


def ProbesPerSearch(opts: options_lib.RedisStudyOptions) -> int:
  """A typical probe count, for the time estimate."""
  s = opts.search
  if s.staircase:
    return s.confirm_repeats
  if s.policy == 'adaptive':
    return min(s.max_probes, 5 + 2 * s.confirm_repeats)
  return min(s.max_probes,
             (s.max_threads - s.min_threads) // s.thread_increment + 1)


def ShardPlanLine(opts: options_lib.RedisStudyOptions) -> str:
  sh = opts.shards
  return (f'shards per server VM hill-climbed in [{sh.min_shards}, '
          f'{sh.max_shards or "vCPUs"}] from vCPUs / 2; at most '
          f'{sh.max_points} counts')


def SearchPlan(opts: options_lib.RedisStudyOptions) -> List[str]:
  if opts.fixed.enabled:
    return fixed_load.PlanLines(opts)
  s, g = opts.search, opts.generator
  cap = (f'average latency under {s.cap_ms:g} ms; {g.run_duration_s} s '
         'probes')
  if g.warmup_s:
    cap += f' + {g.warmup_s} s warm-up (memtier only)'
  confirm = (f'; answer = mean of {s.confirm_repeats} repeats with 95 % '
             'interval' if s.confirm_repeats else '')
  if s.staircase:
    steps = s.staircase.spec.Steps(s.staircase.max_clients)
    line = (f'  staircase: one memtier run, {s.min_threads} thread(s) x '
            f'{steps[0]}..{steps[-1]} clients in {len(steps)} steps of '
            f'{s.staircase.step_seconds} s; {cap}{confirm}')
  elif s.policy == 'adaptive':
    policy = search_runner.Policy(opts)
    line = (f'  adaptive: {policy.threads} thread(s), '
            f'{policy.min_connections}..{policy.max_connections} connections '
            f'per client process starting at {policy.start_connections}, '
            f'aiming under cap x {policy.cap_margin:g}; {cap}{confirm}; at '
            f'most {s.max_probes} probes')
  else:
    line = (f'  linear: threads {s.min_threads}..{s.max_threads} step '
            f'{s.thread_increment} x {g.clients} clients, pipeline '
            f'{g.pipeline}; {cap}; stop at the cap; at most '
            f'{ProbesPerSearch(opts)} probes')
  lines = ['Search:', line]
  if opts.shards.enabled:
    lines.append(f'  repeated per shard count: {ShardPlanLine(opts)}')
  return lines


def EstimatedSeconds(opts: options_lib.RedisStudyOptions) -> float:
  """Probe time of one study, for the dry-run cost estimate."""
  g = opts.generator
  if opts.fixed.enabled:
    return fixed_load.EstimatedSeconds(opts, deployment.PROBE_OVERHEAD_S)
  seconds = ProbesPerSearch(opts) * (g.run_duration_s + g.warmup_s +
                                     deployment.PROBE_OVERHEAD_S)
  st = opts.search.staircase
  if st:
    seconds += (st.spec.TestTime(st.max_clients) +
                deployment.PROBE_OVERHEAD_S)
  if opts.shards.enabled:
    seconds = (seconds + 20) * opts.shards.typical_points
  return seconds


def EngineLine(server: options_lib.ServerOptions) -> str:
  """'engine valkey (distro; io_threads=4)' for the plan."""
  settings = ''.join(f'; {k}={v}' for k, v in server.engine_settings)
  return f'engine {server.engine} ({server.version}{settings})'


def DescribePlan(spec, opts: options_lib.RedisStudyOptions) -> List[str]:
  """Software, workload and search lines of the dry-run plan."""
  counts = spec.GroupCounts()
  server, workload = opts.server, opts.workload
  shards = server.shards_per_vm * counts['servers']
  return [
      'Software:',
      f'  servers: {EngineLine(server)}, {server.shards_per_vm} '
      f'shard(s) per VM, {shards} in all, {server.mode}; per-run password; '
      'no persistence',
      f'  clients: load generator {opts.generator.choice} (memtier_benchmark '
      'when installed, else redis-benchmark)',
      'Workload:',
      f'  preload {workload.key_count:,} keys x {workload.data_size} B; '
      f'probes SET:GET {_Ratios(opts)}, keys {workload.key_pattern}'
      f'{_KeyShape(workload)}',
  ] + SearchPlan(opts)


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
