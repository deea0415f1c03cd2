"""The redis_enterprise dry-run plan and its time estimate (pure).

Takes the frozen options (and, on Local, the scaling), never flags, so the
dry run prints exactly what a real run does: image, cluster, databases,
preload, the thread steps and the optimizer.
"""

from typing import List, Optional, Sequence, Tuple

from perfkitbenchmarker import errors
from perfkitbenchmarker import prepare_checks
from perfkitbenchmarker import providers
from perfkitbenchmarker import redis_shard
from perfkitbenchmarker.enterprise import optimizer
from perfkitbenchmarker.enterprise import options as options_lib

# Seconds a step costs beyond its own duration (start memtier, collect).
STEP_OVERHEAD_S = 5.0
# Per optimizer point: delete and create the databases, tune proxies.
REBUILD_S = 90.0
TYPICAL_OPTIMIZER_POINTS = 5


def PreloadCommand(opts: options_lib.EnterpriseOptions, records: int) -> str:
  return ('memtier_benchmark -t 1 -c 1 --ratio 1:0 --pipeline 100 '
          f'-d {opts.data_size_bytes} --key-pattern S:S --key-minimum 1 '
          f'--key-maximum {records} -n allkeys' +
          (' --cluster-mode' if opts.cluster_api else ''))


def StepCommand(opts: options_lib.EnterpriseOptions, records: int) -> str:
  return (f'memtier_benchmark -t <threads> --ratio 1:1 --pipeline '
          f'{opts.pipeline} -c {opts.loadgen_clients} -d '
          f'{opts.data_size_bytes} --key-minimum 1 --key-maximum {records} '
          f'--test-time {opts.probe_seconds}' +
          (' --cluster-mode' if opts.cluster_api else ''))


def _Steps(steps: List[int]) -> str:
  if len(steps) <= 6:
    return ', '.join(map(str, steps))
  return f'{steps[0]}, {steps[1]}, ..., {steps[-1]} ({len(steps)} steps)'


def ImageLine(opts: options_lib.EnterpriseOptions) -> str:
  os_choice = opts.os
  if opts.local:
    return (f'  --os_type={os_choice.requested} recorded as requested; Local '
            'runs on this machine\'s OS (os_type_used: this machine)')
  if os_choice.substituted:
    return (f'  --os_type={os_choice.requested} requested; the VMs boot '
            f'{os_choice.used} instead ({os_choice.reason}); every sample '
            f'records requested_os_type={os_choice.requested} and '
            f'os_type_used={os_choice.used}')
  return f'  --os_type={os_choice.requested}'


def ClientLoadGenerator(opts: options_lib.EnterpriseOptions
                        ) -> Optional[str]:
  """What the clients install (prepare_checks): memtier, unless Local or
  given one with --memtier_path."""
  return None if opts.local or opts.memtier_path else 'memtier'


def DatasetEstimate(opts: options_lib.EnterpriseOptions
                    ) -> prepare_checks.DatasetEstimate:
  """Every database's preload in the cluster's memory (prepare_checks):
  the databases share --enterprise_redis_memory_size_percentage of it
  (of what rladmin calls provisionable, which is less: an upper bound)."""
  return prepare_checks.DatasetEstimate(
      keys=opts.load_records * opts.db_count,
      bytes_per_key=(opts.data_size_bytes +
                     prepare_checks.REDIS_KEY_OVERHEAD_BYTES),
      copies=2 if opts.db_replication else 1,
      memory_fraction=opts.memory_size_percentage,
      fraction_flag='--enterprise_redis_memory_size_percentage',
      key_flag='--enterprise_redis_load_records x --enterprise_redis_db_count')


def CpuWarnings(opts: options_lib.EnterpriseOptions,
                server_vcpus: Optional[int]) -> List[str]:
  """--enterprise_redis_disable_cpu_ids against the server VMs' CPUs
  (None: not known); refuses (errors.UsageError) ids a cloud run would
  fail on after its VMs are up and the cluster installed."""
  ids = sorted(set(opts.disable_cpu_ids))
  if not ids:
    return []
  given = f'--enterprise_redis_disable_cpu_ids={",".join(map(str, ids))}'
  if opts.local:
    return [f'WARNING: {given} is recorded, not applied, on Local: this '
            'machine\'s CPUs stay online.']
  if server_vcpus and (ids[-1] >= server_vcpus or len(ids) >= server_vcpus):
    raise errors.UsageError(
        f'{given}: the server VMs have CPUs 0-{server_vcpus - 1}; give ids '
        'among them and leave at least one online.')
  return []


def RealRunNeeds(opts: options_lib.EnterpriseOptions) -> List[str]:
  """The installer files a real run reads and a dry run was not given."""
  return [f'{flag}=<file you obtained>' for flag, value in (
      ('--enterprise_redis_tarball', opts.tarball),
      ('--enterprise_redis_license_path', opts.license_path)) if not value]


def OptimizerLine(opts: options_lib.EnterpriseOptions, vcpus: int,
                  local: bool) -> str:
  if local:
    return (f'  optimize throughput: shards per server VM hill-climbed in '
            f'[1, {vcpus}] (no proxies on Redis OSS); at most '
            f'{opts.optimizer_max_points} points, each a restart, preload '
            'and step-up')
  shards, proxies = optimizer.Bounds(vcpus, opts.shard_count,
                                     opts.proxy_threads)
  start = optimizer.StartPoint(vcpus, shards, proxies)

  def Axis(axis, name):
    return (f'{name} fixed at {axis.fixed}' if axis.fixed is not None else
            f'{name} in [{axis.low}, {axis.high}]')
  return (f'  optimize throughput: hill climb from {start[0]} shard(s) x '
          f'{start[1]} proxy thread(s); {Axis(shards, "shards")}, '
          f'{Axis(proxies, "proxy threads")}; at most '
          f'{opts.optimizer_max_points} points, each a database rebuild, '
          'preload and step-up')


def NetworkLine(cloud: str, ports: Sequence[Tuple[int, int]]) -> str:
  """The node-to-node TCP ports, as the providers open them (or not)."""
  listed = ', '.join(str(low) if low == high else f'{low}-{high}'
                     for low, high in ports)
  if providers.CapabilitiesOf(cloud).made_by_run:
    return (f'  TCP {listed}: Redis Enterprise\'s node-to-node ports, '
            'opened between the run\'s own VMs only')
  return (f'  TCP {listed} must already be open between the machines '
          '(nothing here changes their firewalls)')


def DescribePlan(spec, opts: options_lib.EnterpriseOptions,
                 scaling: Optional[options_lib.LocalScaling] = None,
                 vcpus: int = 1,
                 peer_ports: Sequence[Tuple[int, int]] = ()) -> List[str]:
  """Software, image, databases, network, preload, steps and optimizer."""
  counts = spec.GroupCounts()
  lines = ['Image:', ImageLine(opts)]
  if not opts.local:  # A group on another image says which and why.
    for group, vm_spec in spec.GroupSpecs().items():
      if vm_spec.os_type == opts.os.used:
        continue
      why = ('they run only memtier, which installs from Redis\'s APT '
             'repository (Debian/Ubuntu)' if group == 'clients' and
             vm_spec.os_type == options_lib.MEMTIER_CLIENT_OS else
             'its vm_group\'s os_type')
      lines.append(f'  {group}: boot {vm_spec.os_type} ({why})')
  if scaling is not None:
    records = scaling.records
    min_t, max_t = scaling.min_threads, scaling.max_threads
    lines += [
        'Software:',
        '  servers: Redis OSS (engine redis, the local redis-server) stands '
        'in for Redis Enterprise on Local; samples say engine=redis',
        f'  {scaling.shards_per_vm} shard(s) per server VM, '
        f'{"one Redis Cluster" if opts.cluster_api else "standalone"}; '
        f'{scaling.databases} database(s) of the {opts.db_count} asked',
        '  clients: memtier_benchmark when installed, else redis-benchmark',
    ]
    if scaling.notes:
      lines.append('Scaled to this machine:')
      lines += [f'  {n}' for n in scaling.notes]
  else:
    records = opts.load_records
    min_t, max_t = opts.min_threads, opts.max_threads
    tarball = opts.tarball or ('(none given: a real run refuses without '
                               '--enterprise_redis_tarball)')
    licence = opts.license_path or ('(none given: a real run refuses '
                                    'without --enterprise_redis_license_path)')
    lines += [
        'Software:',
        f'  servers: Redis Enterprise {opts.version} from your tarball '
        f'{tarball}; licence {licence}; install.sh '
        f'{"with" if opts.tune_on_startup else "without"} OS tuning',
        '  cluster: created on servers-0 through its REST API (POST '
        '/v1/bootstrap/create_cluster, then GET /v1/bootstrap until '
        f'completed), {counts["servers"] - 1} node(s) join one at a time '
        '(POST /v1/bootstrap/join_cluster on each); the admin credentials '
        'and licence go to curl on stdin; proxy threads '
        f'{opts.proxy_threads or "as installed"}'
        f'{", workers pinned per NUMA node" if opts.pin_workers else ""}'
        + (f'; CPUs {",".join(map(str, opts.disable_cpu_ids))} offlined'
           if opts.disable_cpu_ids else ''),
        '  clients: memtier_benchmark, logged in as the restricted user '
        f'{redis_shard.LOAD_USER} (a Redis ACL, role and user through the '
        'REST API)',
        'Databases (REST API /v1/bdbs):',
        f'  {opts.db_count} x {opts.shards_per_db} shard(s)'
        f'{", OSS cluster API" if opts.cluster_api else ""}, replication '
        f'{"on" if opts.db_replication else "off"}, proxy policy '
        f'all-master-shards, {opts.memory_size_percentage:.0%} of '
        'provisionable RAM shared, ports from '
        f'{opts.database_port}' +
        (f', flash (RAM {opts.flash_ram_ratio:.0%})' if opts.flash else ''),
    ]
    if peer_ports:
      lines += ['Network:', NetworkLine(spec.cloud, peer_ports)]
  steps = opts.Steps(min_t, max_t)
  lines += [
      'Workload:',
      f'  preload per database: {PreloadCommand(opts, records)}',
      f'  step-up from each of {counts["clients"]} client VM(s): '
      f'{StepCommand(opts, records)}',
      f'  threads {_Steps(steps)} (+{opts.thread_increment} per step); stop '
      f'at the first step with average latency at or over {opts.cap_ms:g} '
      'ms; answer: the most ops/s under it, summed over client VMs',
  ]
  if opts.optimize_throughput:
    lines.append(OptimizerLine(opts, vcpus, scaling is not None))
  return lines


def EstimatedSeconds(opts: options_lib.EnterpriseOptions, steps: int,
                     grid_points: int = TYPICAL_OPTIMIZER_POINTS) -> float:
  """Step time of a run; with the optimizer, a typical climb's points (at
  most `grid_points`, the size of the grid it may walk)."""
  seconds = steps * (opts.probe_seconds + STEP_OVERHEAD_S)
  if opts.optimize_throughput:
    points = min(opts.optimizer_max_points, TYPICAL_OPTIMIZER_POINTS,
                 grid_points)
    seconds = points * (seconds + REBUILD_S)
  return seconds
