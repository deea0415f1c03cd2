"""Redis Enterprise latency-capped throughput (upstream PKB's redis_enterprise).

Reproduces the Google Cloud T2D study's command lines verbatim: a Redis
Enterprise cluster on the server VMs (your installer tarball and licence,
created and joined through the REST API's bootstrap requests, `rladmin`
proxy tuning and worker pinning), databases through the REST API, a memtier
preload, then from every client VM a thread step-up
(+--enterprise_redis_thread_increment threads per step, 24 clients per
thread, pipeline 9) until average latency passes 1 ms; the answer is the
most ops/s under it. --enterprise_redis_optimize_throughput repeats that over
shard count and proxy threads (enterprise/optimizer.py).

On --cloud=Local the same workload runs against the local Redis OSS engine,
scaled to this machine where the flags ask for more, and is published under
its own test name, never as redis_enterprise (enterprise/local_run.py;
PublishedTestName). A retired --os_type (the study's centos7) boots its
named successor; samples record both (enterprise/options.py).

Every step is sampled for interference as redis_memtier's probes are.
This module keeps PKB's contract and the wiring only: flags become one
frozen EnterpriseOptions (enterprise/options.py); the runs are
enterprise/local_run.py and cloud_run.py.
"""

import os
from typing import List, Optional, Sequence

from absl import flags

from perfkitbenchmarker import configs
from perfkitbenchmarker import errors
from perfkitbenchmarker import providers
from perfkitbenchmarker import sample
from perfkitbenchmarker.enterprise import cloud_run
from perfkitbenchmarker.enterprise import local_run
from perfkitbenchmarker.enterprise import options as options_lib
from perfkitbenchmarker.enterprise import plan
from perfkitbenchmarker.study import deployment

BENCHMARK_NAME = 'redis_enterprise'
STARTS_REDIS_SHARDS = True  # From --redis_start_port (benchmark_contract).
BENCHMARK_CONFIG = f"""
redis_enterprise:
  description: >
    Latency-capped throughput of Redis Enterprise (Redis OSS on Local),
    memtier thread step-up from every client VM.
{configs.RedisVmGroups(client_vms=2)}  flags:
    # Databases listen from here, inside the 10000-19999 of PEER_TCP_PORTS.
    redis_start_port: 12000
"""

# TCP ports Redis Enterprise's nodes (and the clients, for the databases)
# need between the run's VMs; the GCP and AWS providers open them from the
# run's own VMs only, beside the usual Redis range. From Redis's "Network
# port configurations" page, Redis Enterprise Software 6.2 (our default
# 6.2.4) with the additions of the 7.x pages (rhel9 tarballs are 7.x):
# every TCP port whose connection source is Internal, less the Active-Active
# ones (9081; the benchmark makes no Active-Active databases). The
# documented UDP (DNS/mDNS) and ICMP entries are not opened: the cluster is
# addressed by IP and the providers open TCP only.
PEER_TCP_PORTS = (
    (1968, 1968),    # proxy traffic
    # Internode 3333-3344 (6.2); REST API 3346 and metrics 3347-3349 (7.x);
    # one range, so 3345 comes with it.
    (3333, 3349),
    (8000, 8002),    # metrics 8000 (7.x), discovery service 8001, health 8002
    (8004, 8004),    # health monitoring (envoy management server)
    (8006, 8006),    # health monitoring (gossip envoy admin)
    (8070, 8071),    # metrics through the web proxy
    (8080, 8080),    # REST API (HTTP)
    (8443, 8444),    # management UI; web proxy to cnm_http/cm
    (9080, 9080),    # web proxy to cnm_http/cm
    (9082, 9082),    # cluster API internal port (7.x)
    (9091, 9091),    # internal metrics (7.x)
    (9125, 9125),    # internal metrics (7.x)
    (9443, 9443),    # REST API (a joining node calls the cluster's)
    (10000, 19999),  # database endpoints (and Zabbix's 10050 in 7.x)
    (20000, 29999),  # database shards
    (36379, 36380),  # internode communication
)

FLAGS = flags.FLAGS
# Where GetConfig keeps the VM counts asked for before Local scaling.
_REQUESTED_KEY = 'enterprise_requested_vm_counts'


def _Options(spec=None) -> options_lib.EnterpriseOptions:
  build = lambda: options_lib.EnterpriseOptions.FromFlags(FLAGS)
  return build() if spec is None else spec.CachedOptions(build)


def _Cores() -> int:
  return len(os.sched_getaffinity(0))


def GetConfig(user_config):
  """Merges config file and overrides; applies the OS and Local decisions."""
  config = configs.BenchmarkConfig(BENCHMARK_NAME, BENCHMARK_CONFIG,
                                  user_config, FLAGS)
  opts = _Options()
  groups = config.get('vm_groups') or {}
  if opts.os.substituted and not opts.local:
    for name, group in groups.items():  # The successor image, unless pinned.
      if isinstance(group, dict) and not group.get('os_type'):
        group['os_type'] = (options_lib.MEMTIER_CLIENT_OS if
                            name == 'clients' and not opts.memtier_path
                            else opts.os.used)
  if opts.local:
    requested = {g: (c or {}).get('vm_count', 1) for g, c in groups.items()}
    config[_REQUESTED_KEY] = requested
    scaling = _Scaling(opts, config)
    groups['servers']['vm_count'] = scaling.server_vms
    groups['clients']['vm_count'] = scaling.client_vms
  return config


def _Scaling(opts, config) -> options_lib.LocalScaling:
  requested = config.get(_REQUESTED_KEY) or {}
  return options_lib.LocalScaling.For(opts, requested.get('servers', 1),
                                      requested.get('clients', 1), _Cores())


def CheckPrerequisites(config):
  """Refuses what cannot run, before anything is created."""
  opts = _Options()
  groups = config.get('vm_groups') or {}
  if set(groups) != {'servers', 'clients'}:
    raise errors.ConfigError(
        'redis_enterprise needs exactly the vm_groups servers and clients.')
  if not opts.local and not opts.dry_run:
    opts.CheckInstallerFiles()
  # AWS's images here are Ubuntu's and Debian's, whatever the provider can
  # boot for other studies: a fact of this benchmark on that one cloud.
  if opts.cloud == 'AWS' and opts.os.used not in ('ubuntu2204', 'ubuntu2404',
                                                  'debian12'):
    raise errors.UsageError(
        f'--os_type={opts.os.requested}: redis_enterprise on AWS boots '
        'Ubuntu or Debian images here; give --os_type=ubuntu2204 (and the '
        'matching Redis Enterprise tarball).')


def PlanWarnings(spec) -> List[str]:
  """CPUs to take offline that the server VMs lack (refused), or that
  Local does not take offline (said)."""
  vcpus = (None if spec.can.is_runner_machine else
           getattr(spec.GroupPrice('servers'), 'vcpus', None))
  return plan.CpuWarnings(_Options(spec), vcpus)


def ClientLoadGenerator(spec) -> Optional[str]:
  return plan.ClientLoadGenerator(_Options(spec))  # prepare_checks


def RealRunNeeds(spec) -> List[str]:
  return plan.RealRunNeeds(_Options(spec))  # prepare_checks


def DatasetEstimate(spec):
  return plan.DatasetEstimate(_Options(spec))  # prepare_checks


def _Vcpus(spec) -> int:
  if spec.can.is_runner_machine:
    return max(1, _Cores() // 2 // spec.GroupCounts()['servers'])
  vcpus = getattr(spec.GroupPrice('servers'), 'vcpus', None)
  tail = spec.GroupSpecs()['servers'].machine_type.rsplit('-', 1)[-1]
  return vcpus or (int(tail) if tail.isdigit() else 16)


def DescribePlan(spec) -> List[str]:
  opts = _Options(spec)
  scaling = _Scaling(opts, spec.config) if spec.can.is_runner_machine else None
  return plan.DescribePlan(spec, opts, scaling, _Vcpus(spec), PEER_TCP_PORTS)


def EstimatedMinutes(spec) -> float:
  opts = _Options(spec)
  if spec.can.is_runner_machine:
    s = _Scaling(opts, spec.config)
    steps = len(opts.Steps(s.min_threads, s.max_threads))
    return plan.EstimatedSeconds(opts, steps, _Vcpus(spec)) / 60
  return plan.EstimatedSeconds(opts, len(opts.Steps())) / 60


def EstimatedPreloadKeys(spec) -> int:
  opts = _Options(spec)
  if spec.can.is_runner_machine:
    return _Scaling(opts, spec.config).records
  return opts.load_records * opts.db_count


# PKB's contract -------------------------------------------------------------


def Prepare(spec):
  opts = _Options(spec)
  if spec.can.is_runner_machine:
    local_run.Prepare(spec, opts, _Scaling(opts, spec.config))
  else:
    cloud_run.Prepare(spec, opts)


def Run(spec) -> Sequence[sample.Sample]:
  opts = _Options(spec)
  if spec.can.is_runner_machine:
    local_run.Run(spec, opts, _Scaling(opts, spec.config), _Vcpus(spec))
  else:
    if spec.deployment is None or spec.deployment.study is None:
      raise errors.UsageError(
          'redis_enterprise on a cloud runs prepare and run in one '
          'invocation (the cluster password is not kept); use '
          '--run_stage=provision,prepare,run.')
    cloud_run.Run(spec, opts, _Vcpus(spec))
  return spec.published


def Cleanup(spec):
  """Stops local shards; deletes cloud databases and the load user."""
  if spec.can.is_runner_machine:
    deployment.StopAll(spec.record)
  elif spec.deployment is not None:
    cluster = spec.deployment.cluster
    if cluster.formed:  # Before that there is no API to ask.
      try:
        cluster.DeleteDatabases()
      finally:
        cluster.DeleteLoadAccess()
  spec.deployment = None


def PublishedTestName(cloud: str) -> str:
  """The `test` its rows are published under: never redis_enterprise on
  Local, where Redis OSS stands in."""
  here = providers.CapabilitiesOf(cloud).is_runner_machine
  return local_run.TEST_NAME if here else BENCHMARK_NAME


def UsedOsType(requested: str, cloud: str) -> Optional[str]:
  """The image a run boots for --os_type=requested (input_checks and the
  providers check this one); None on Local, where it is only recorded."""
  return options_lib.UsedOsType(requested, cloud)
