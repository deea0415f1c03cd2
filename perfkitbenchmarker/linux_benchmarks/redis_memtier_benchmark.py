"""Redis price-performance: capped throughput and ops/s per $/hr.

Starts --redis_total_num_processes redis-server shards per server VM
(optionally one Redis Cluster), preloads exactly the configured key range,
then searches the load from the client VMs for the most throughput whose
average latency stays under --memtier_latency_cap, and reports it with the
throughput per dollar. Three ways to search:
  * adaptive (default): grows connections geometrically, predicts the cap
    with Little's law and confirms the answer with repeats (mean and 95 %
    interval); see search/adaptive.py and docs/search.md;
  * linear: +--memtier_thread_increment threads per probe, as the published
    T2D study did, kept to reproduce such studies;
  * --memtier_staircase: one memtier run walks the client steps, the best
    step under the cap is confirmed with ordinary probes (search/staircase.py).
After the search, probes at fixed offered rates below the answer draw the
latency-throughput curve (--memtier_curve_rate_percents; memtier only:
study/curve_runner.py).
--redis_optimize_shards repeats the search for several shard counts per
server VM and reports the best (study/shard_study.py).

Flags become one frozen RedisStudyOptions (study/options.py); this module
only wires the engine, the deployment and the searches.
"""

import shutil
from typing import List, Optional, Sequence

from absl import flags

from perfkitbenchmarker import configs
from perfkitbenchmarker import errors
from perfkitbenchmarker import prepare_checks
from perfkitbenchmarker import providers
from perfkitbenchmarker import sample
from perfkitbenchmarker.linux_packages import argv_secret
from perfkitbenchmarker.linux_packages import memtier
from perfkitbenchmarker.providers.local import limits as local_limits
from perfkitbenchmarker.study import curve_runner
from perfkitbenchmarker.study import deployment
from perfkitbenchmarker.study import fixed_load
from perfkitbenchmarker.study import options as options_lib
from perfkitbenchmarker.study import plan
from perfkitbenchmarker.study import results
from perfkitbenchmarker.study import search_runner
from perfkitbenchmarker.study import shard_study
from perfkitbenchmarker.study import workload_options

BENCHMARK_NAME = 'redis_memtier'
STARTS_REDIS_SHARDS = True  # From --redis_start_port (benchmark_contract).
BENCHMARK_CONFIG = f"""
redis_memtier:
  description: >
    Latency-capped Redis throughput and throughput per dollar, measured
    with memtier_benchmark (or redis-benchmark where memtier is missing).
{configs.RedisVmGroups()}  flags: {{}}
"""

FLAGS = flags.FLAGS


def GetConfig(user_config):
  """Merges the user's config file and overrides over BENCHMARK_CONFIG."""
  return configs.BenchmarkConfig(BENCHMARK_NAME, BENCHMARK_CONFIG,
                                 user_config, FLAGS)


def _Options(spec=None) -> options_lib.RedisStudyOptions:
  """The study's options, built from flags once per spec."""
  build = lambda: options_lib.RedisStudyOptions.FromFlags(FLAGS)
  return build() if spec is None else spec.CachedOptions(build)


def CheckPrerequisites(config):
  """Rejects impossible settings before anything is created."""
  groups = config.get('vm_groups') or {}  # As configs.CheckVmGroups checked.
  counts = {group: c.get('vm_count', 1) for group, c in groups.items()}
  opts = _Options()
  local = providers.CapabilitiesOfRun(FLAGS).is_runner_machine
  # Local shards are started with pkb's own open-file limit: a probe past
  # what it lets them take stopped the run with 0 samples.
  opts.CheckConnections(counts.get('clients', 1), counts.get('servers', 1),
                        local_limits.ConnectionLimit() if local else None)
  opts.server.CheckLayout(counts.get('servers', 1))
  path = opts.generator.memtier_path
  if path and local:
    # What prepare would refuse on this machine, refused by a dry run too.
    memtier.CheckLocalPath(path)
  if local and not shutil.which('cc'):
    # The load generator's library (argv_secret) is built with cc at the
    # first probe: without one the run stopped there, after its shards and
    # preload, while the dry run said nothing.
    raise errors.UsageError(argv_secret.NoCompiler('this machine'))
  if (local and opts.generator.choice == 'memtier' and not path and
      not shutil.which(memtier.DEFAULT_PATH)):
    # Local installs nothing: the run stopped at prepare, after provision
    # (exit 1), and its dry run said nothing.
    raise errors.UsageError(
        '--load_generator=memtier: memtier_benchmark is not on PATH on this '
        'machine, which installs nothing; give --memtier_path, install it '
        '(README: Load generators) or use --load_generator=redis_benchmark.')
  # Local picks redis-benchmark without memtier on PATH.
  local_fallback = (local and opts.generator.choice == 'auto' and not path
                    and not shutil.which(memtier.DEFAULT_PATH))
  if local_fallback and not opts.search.cap.is_average:
    raise workload_options.PercentileCapRefusal(opts, 'redis-benchmark')
  wanted = workload_options.MemtierOnlyFeatures(
      opts.workload, opts.generator.requests,
      opts.generator.processes_per_client)
  if local_fallback and wanted and not opts.generator.fallback:
    # What prepare would refuse here (RequireMemtier), refused before
    # anything starts: the run stopped after its preload, exit 1.
    raise workload_options.MemtierOnlyRefusal(wanted, 'redis-benchmark')
  if local_fallback:
    _CheckRedisBenchmarkCluster(
        opts, counts.get('servers', 1), 'no memtier_benchmark on this '
        'machine', 'install memtier_benchmark (README: Load generators)')
  elif opts.generator.choice == 'redis_benchmark':
    _CheckRedisBenchmarkCluster(
        opts, counts.get('servers', 1), '--load_generator=redis_benchmark',
        'drop --load_generator=redis_benchmark')


def _CheckRedisBenchmarkCluster(opts: options_lib.RedisStudyOptions,
                                server_vms: int, why: str, other: str
                                ) -> None:
  """Refuses a cluster of one primary (the fewest a shard search tries)
  for redis-benchmark, whose --cluster refuses it: the run stopped at its
  preload, after the shards had started, and its dry run said nothing."""
  server = opts.server
  if not server.cluster_mode:
    return
  per_vm, flag = server.shards_per_vm, '--redis_total_num_processes'
  if opts.shards.enabled:
    per_vm, flag = opts.shards.min_shards, '--redis_min_shards'
  counted_replicas = 0 if server.replicas_per_primary else (
      server.cluster_replicas)
  if per_vm * server_vms // (1 + counted_replicas) < 2:
    raise errors.UsageError(
        'redis-benchmark --cluster refuses a one-primary cluster, and it is '
        f'the load generator here ({why}); give {flag}=2 or more, drop '
        f'--redis_server_cluster_mode, or {other}.')


def DescribePlan(spec) -> List[str]:
  return plan.DescribePlan(spec, _Options(spec), _ClientVcpus(spec))


def _ClientVcpus(spec) -> Optional[int]:
  """One client VM's vCPUs on a cloud (the adaptive search's threads)."""
  if not spec.can.made_by_run:  # Else a catalog machine type.
    return None
  try:
    return spec.GroupPrice('clients').vcpus or None
  except errors.Error:
    return None


def PlanWarnings(spec) -> List[str]:
  """More shards or io-threads per server VM than it has cores; refuses a
  shard search whose ports would run out part way."""
  opts = _Options(spec)
  vcpus = spec.ServerVcpus()
  if opts.shards.enabled:
    low, _, high = opts.shards.Bounds(vcpus)
    counts, shards = opts.shards.MostShardsStarted(vcpus)
    opts.server.CheckPorts(
        shards, f'a shard search of up to {counts} count(s) in [{low}, '
        f'{high}] ({shards} shards per server VM in all, each count on ports '
        'of its own)')
  return plan.CoreWarnings(opts, vcpus)


def EstimatedMinutes(spec) -> float:
  return plan.EstimatedSeconds(_Options(spec)) / 60


def EstimatedPreloadKeys(spec) -> int:
  """The memtier key range the study preloads."""
  low = getattr(spec.flags, 'memtier_key_minimum', 1) or 1
  high = getattr(spec.flags, 'memtier_key_maximum', 0) or 0
  return max(0, high - low + 1)


def ClientLoadGenerator(spec) -> Optional[str]:
  """What the client VMs install (prepare_checks): memtier when asked for,
  or left to auto (on a VM the run made, auto installs it:
  deployment.ChooseGenerator), without a binary of the user's;
  redis-benchmark installs anywhere."""
  generator = _Options(spec).generator
  return ('memtier' if generator.choice in ('memtier', 'auto') and
          not generator.memtier_path else None)


def DatasetEstimate(spec) -> prepare_checks.DatasetEstimate:
  """The preload as the shards will hold it (prepare_checks)."""
  opts = _Options(spec)
  server = opts.server
  replicas = server.replicas_per_primary or (
      server.cluster_replicas if server.cluster_mode else 0)
  return prepare_checks.DatasetEstimate(
      keys=opts.workload.key_count,
      bytes_per_key=(opts.workload.data_size +
                     prepare_checks.REDIS_KEY_OVERHEAD_BYTES),
      copies=1 + replicas, memory_fraction=server.memory_fraction,
      fraction_flag='--redis_memory_fraction')


def Prepare(spec):
  """Installs, starts the shards (and cluster), preloads and verifies."""
  opts = _Options(spec)
  engine = opts.server.Engine()
  first = None
  if opts.shards.enabled:
    # The shard search's first count, not --redis_total_num_processes: the
    # search would restart and preload again (and redis-benchmark refuses
    # a one-primary cluster, the default's, at its preload).
    _, first, _ = opts.shards.Bounds(spec.vm_groups['servers'][0].num_cpus)
  spec.deployment = deployment.Deploy(spec, opts, engine, first)
  results.SetMetadata(spec, spec.deployment, opts)
  if opts.search.staircase:
    search_runner.RequireStaircaseGenerator(spec.deployment.generators)
  workload_options.RequirePercentileGenerator(spec.deployment.generators,
                                              opts)
  dropped = workload_options.RequireMemtier(spec.deployment.generators, opts)
  if opts.fixed.enabled:
    fixed_load.CheckGenerator(spec.deployment.generators[0].NAME, opts)
  results.RecordDropped(spec.metadata, dropped)
  if dropped:
    spec.reporter.Line(
        'WARNING: memtier_benchmark not found: redis-benchmark runs this '
        f'study without {", ".join(dropped)} (memtier-only; '
        '--redis_benchmark_fallback).')
  spec.metadata['preloaded_keys'] = deployment.Preload(
      spec, spec.deployment, opts, engine)


def Run(spec) -> Sequence[sample.Sample]:
  """Runs the latency-capped search(es); returns every sample it emitted."""
  opts = _Options(spec)
  engine = opts.server.Engine()
  if spec.deployment is None:  # A resumed run (--run_stage=run).
    spec.deployment = deployment.Restore(spec, opts, engine)
    results.SetMetadata(spec, spec.deployment, opts)
    results.RecordDropped(spec.metadata, workload_options.RequireMemtier(
        spec.deployment.generators, opts))
  search_runner.WarnAboutIgnoredWarmup(spec, spec.deployment.generators, opts)
  if opts.fixed.enabled:
    fixed_load.Run(spec, spec.deployment, opts)
    return spec.published

  def Search(driver, extra, start=None, hold=False):
    return search_runner.Search(spec, driver, opts, extra, start, hold)

  if opts.shards.enabled:
    shard_study.OptimizeShards(spec, spec.deployment, opts, engine, Search)
    return spec.published
  driver = deployment.ProbeDriver(spec, spec.deployment, opts)
  result, samples = Search(driver, {}, hold=True)
  if result.best is None:
    raise search_runner.NoResultError(result, opts.search.cap_ms,
                                      search_runner.LeastConnections(opts))
  # The curve's probes are numbered after the search's and its holds.
  curve_runner.RunCurve(
      spec, driver, opts, result, {}, len(result.probes),
      curve_runner.RateLimitedConnections(spec.deployment))
  results.PrintSummary(spec, samples)
  return spec.published


def Cleanup(spec):
  """Stops every shard this run started (by PID, from the run record)."""
  deployment.StopAll(spec.record)
  spec.deployment = None
