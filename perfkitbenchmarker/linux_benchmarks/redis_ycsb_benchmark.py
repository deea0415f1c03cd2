"""YCSB over five Redis data types: capped throughput per workload.

Reproduces the Tair YCSB study's runs (docs/studies.md, study
4): YCSB `load` then core workloads (A and C by default; any core workload
file works), with every record stored as the Redis data type
--ycsb_command_group names (string, hash, list, set, zset) through PKB's own
YCSB binding (linux_packages/ycsb_redis_binding; stock YCSB's Redis binding
only stores hashes). For each workload the load is client threads: the
linear search adds --ycsb_thread_increment threads per probe until the
average latency over all operations passes --ycsb_latency_cap, and the
answer is priced like redis_memtier's (capped throughput, $/hr, ops/s per
$/hr). YCSB's own figures are samples too: overall throughput and, per
operation (INSERT, READ, UPDATE), count, average/p95/p99 latency in µs and
return codes. Any failed operation fails the run.

Servers are deployed through the engine seam like redis_memtier's; options
come from study/ycsb_options.py, the steps from study/ycsb_runner.py; this
module only wires them. docs/ycsb.md has the details.
"""

from typing import List, Sequence

from absl import flags

from perfkitbenchmarker import configs
from perfkitbenchmarker import prepare_checks
from perfkitbenchmarker import providers
from perfkitbenchmarker import sample
from perfkitbenchmarker.study import deployment
from perfkitbenchmarker.study import plan
from perfkitbenchmarker.study import results
from perfkitbenchmarker.study import ycsb_options
from perfkitbenchmarker.study import ycsb_runner

BENCHMARK_NAME = 'redis_ycsb'
STARTS_REDIS_SHARDS = True  # From --redis_start_port (benchmark_contract).
BENCHMARK_CONFIG = f"""
redis_ycsb:
  description: >
    YCSB load and core workloads against Redis, each record stored as one
    of five data types; latency-capped throughput per workload.
{configs.RedisVmGroups(aws_machine_type='m5.8xlarge')}  flags: {{}}
"""

FLAGS = flags.FLAGS


def GetConfig(user_config):
  return configs.BenchmarkConfig(BENCHMARK_NAME, BENCHMARK_CONFIG,
                                 user_config, FLAGS)


def _Options(spec=None) -> ycsb_options.YcsbStudyOptions:
  build = lambda: ycsb_options.YcsbStudyOptions.FromFlags(FLAGS)
  return build() if spec is None else spec.CachedOptions(build)


def CheckPrerequisites(config):
  groups = config.get('vm_groups') or {}  # As configs.CheckVmGroups checked.
  opts = _Options()
  opts.server.CheckLayout((groups.get('servers') or {}).get('vm_count', 1))
  # Only a Local client uses this machine's java and build (FromFlags
  # refuses --ycsb_build_dir elsewhere; remote VMs build their own).
  if providers.CapabilitiesOfRun(FLAGS).is_runner_machine:
    # What prepare would refuse on this machine, refused by a dry run too.
    ycsb_runner.ycsb_package.CheckLocalBuildDir(opts.build_dir)


def PlanWarnings(spec) -> List[str]:
  """More shards (replicas counted) or io-threads per server VM than it has
  cores, as redis_memtier warns."""
  return plan.CoreWarnings(_Options(spec), spec.ServerVcpus())


def DescribePlan(spec) -> List[str]:
  o = _Options(spec)
  return [
      f'Servers: {o.server.shards_per_vm} {o.server.engine} shard(s) per '
      f'server VM, {o.server.mode}',
      f'YCSB {ycsb_runner.ycsb_package.YCSB_VERSION} with PKB\'s binding: '
      f'records as {o.command_group}, {o.field_count} field(s) x '
      f'{o.field_length} B',
      f'  load: {o.record_count:,} records, {o.load_threads} threads',
      f'  workloads {", ".join(o.workloads)}: linear search over threads '
      f'{o.min_threads}..{o.max_threads} step {o.thread_increment}, '
      f'{o.operation_count:,} operations per probe, average latency under '
      f'{o.cap_ms:g} ms; at most {o.probes} probes each',
  ]


def EstimatedMinutes(spec) -> float:
  o = _Options(spec)
  # Probes take operationcount / throughput; assume 20,000 ops/s per probe
  # plus 3 s of JVM start.
  per_probe = o.operation_count / 20000.0 + 3
  load = o.record_count / 20000.0 + 3
  return (load + len(o.workloads) * o.probes * per_probe) / 60


def EstimatedPreloadKeys(spec) -> int:
  return _Options(spec).record_count


def DatasetEstimate(spec) -> prepare_checks.DatasetEstimate:
  """The YCSB load as the shards will hold it (prepare_checks): each
  record's fields (name + value) plus Redis's per-key cost."""
  o = _Options(spec)
  return prepare_checks.DatasetEstimate(
      keys=o.record_count,
      bytes_per_key=(o.field_count * (o.field_length + 16) +
                     prepare_checks.REDIS_KEY_OVERHEAD_BYTES),
      memory_fraction=o.server.memory_fraction,
      fraction_flag='--redis_memory_fraction',
      key_flag='--ycsb_record_count')


def Prepare(spec):
  opts = _Options(spec)
  engine = opts.server.Engine()
  spec.deployment = ycsb_runner.Deploy(spec, opts, engine)
  ycsb_runner.SetMetadata(spec, spec.deployment, opts)
  spec.metadata['preloaded_keys'] = ycsb_runner.Load(
      spec, spec.deployment, opts, engine)


def Run(spec) -> Sequence[sample.Sample]:
  opts = _Options(spec)
  if spec.deployment is None:  # A resumed run (--run_stage=run).
    spec.deployment = ycsb_runner.Restore(spec, opts, opts.server.Engine())
    ycsb_runner.SetMetadata(spec, spec.deployment, opts)
  for workload in opts.workloads:
    samples = ycsb_runner.SearchWorkload(spec, spec.deployment, opts,
                                         workload)
    results.PrintSummary(spec, samples)
  return spec.published


def Cleanup(spec):
  deployment.StopAll(spec.record)
  spec.deployment = None
