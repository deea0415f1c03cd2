"""EnterpriseOptions: the redis_enterprise benchmark's flags, read once.

`EnterpriseOptions.FromFlags(flag_values)` is the only place the benchmark
reads flags; it validates them (one errors.UsageError line each) and
returns a frozen record every layer below takes.

Two decisions live here because both must be the same in a dry run and a
real run:
  * the OS: the published study ran --os_type=centos7, a retired image
    family. A run takes it as input and boots its named successor
    (`OS_SUCCESSORS`, Rocky Linux 9, RHEL-compatible like CentOS 7 was),
    and the clients, which only run memtier, boot `MEMTIER_CLIENT_OS`;
    every sample records both `requested_os_type` and `os_type_used`.
  * Local scaling: on --cloud=Local the same workload runs against the local
    Redis OSS engine, scaled down where the flags ask for more than this
    machine has (`LocalScaling`); each scaled setting is one line in the
    output and a `local_scaled_*` metadata key.
"""

import dataclasses
import math
import os
import posixpath
from typing import Dict, List, Optional, Tuple

from perfkitbenchmarker import errors
from perfkitbenchmarker import providers
from perfkitbenchmarker import regular_files
from perfkitbenchmarker.engines import redis_enterprise_rladmin as rladmin
from perfkitbenchmarker.enterprise import flags as _  # pylint: disable=unused-import
from perfkitbenchmarker.study import search_options

# Retired OS families the study used -> the image a run boots instead.
OS_SUCCESSORS: Dict[str, Tuple[str, str]] = {
    'centos7': ('rocky9', 'CentOS 7 reached end of life in June 2024; Rocky '
                'Linux 9 is its RHEL-compatible successor (use a Redis '
                'Enterprise rhel9 tarball)'),
}
# The OSS study's server and shard-search flags, which this benchmark does
# not read: Redis Enterprise sets its databases up from the
# --enterprise_redis_* flags, and on Local the stand-in is the study's
# default Redis OSS shard, laid out by the same flags. Refused, as the
# engines refuse each other's flags (engine_options), not ignored:
# '--benchmarks=redis_enterprise --redis_engine=valkey' ran Redis, and
# --redis_server_options, --redis_total_num_processes and the like changed
# nothing.
NOT_READ_FLAGS = (
    'redis_engine', 'redis_server_version', 'redis_server_io_threads',
    'redis_server_options', 'redis_total_num_processes',
    'redis_server_cluster_mode', 'redis_cluster_replicas',
    'redis_replicas_per_primary', 'redis_memory_fraction',
    'redis_min_shards', 'redis_max_shards', 'redis_shard_max_points',
    'redis_shard_reuse_load', 'redis_shard_min_improvement',
    'redis_benchmark_fallback', 'dragonfly_proactor_threads',
    'dragonfly_cluster_mode', 'keydb_server_threads')
# Most bytes a licence file may have: a Redis Enterprise licence key is a
# few KiB of text; the bound keeps a wrong file out of the bootstrap request.
MAX_LICENCE_BYTES = 1 << 20
# The study's answer: the most ops/s with average latency under 1 ms.
ANSWER_CAP_MS = 1.0
LOCAL_ENGINE = 'redis'
# The image client VMs boot when the study's OS is substituted: they run
# only memtier, which installs from Redis's APT repository (Debian/Ubuntu
# packages only). With --memtier_path (the user's memtier on the image) they
# boot the servers' successor like every other VM.
MEMTIER_CLIENT_OS = 'debian12'


@dataclasses.dataclass(frozen=True)
class OsChoice:
  """The OS the user asked for and the one the VMs boot."""
  requested: str
  used: str
  reason: str = ''

  @property
  def substituted(self) -> bool:
    return self.requested != self.used

  def Metadata(self) -> Dict[str, str]:
    return {'requested_os_type': self.requested, 'os_type_used': self.used}


def ChooseOs(requested: str, cloud: str) -> OsChoice:
  """What a run boots for --os_type=requested (Local: this machine's OS)."""
  if providers.CapabilitiesOf(cloud).is_runner_machine:
    return OsChoice(requested, 'this machine',
                    'Local runs on this machine\'s OS')
  if requested in OS_SUCCESSORS:
    used, reason = OS_SUCCESSORS[requested]
    return OsChoice(requested, used, reason)
  return OsChoice(requested, requested)


def UsedOsType(requested: str, cloud: str) -> Optional[str]:
  """The --os_type a cloud provider should check and boot; None on Local
  (the flag is recorded, not applied)."""
  if providers.CapabilitiesOf(cloud).is_runner_machine:
    return None
  return ChooseOs(requested, cloud).used


def _MemtierPath(path: Optional[str], cloud: str) -> Optional[str]:
  """--memtier_path as the client VMs see it (Local "VMs" run in scratch
  directories, so a relative path is taken from here)."""
  here = providers.CapabilitiesOf(cloud).is_runner_machine
  return os.path.abspath(path) if path and here else path


@dataclasses.dataclass(frozen=True)
class EnterpriseOptions:
  """Everything the redis_enterprise benchmark needs, from flags."""
  cloud: str
  os: OsChoice
  license_path: Optional[str] = None
  version: str = '6.2.4-54'
  tarball: Optional[str] = None
  tune_on_startup: bool = True
  proxy_threads: Optional[int] = None
  shard_count: Optional[int] = None
  load_records: int = 1000000
  pipeline: int = 9
  loadgen_clients: int = 24
  max_threads: int = 40
  min_threads: int = 18
  thread_increment: int = 1
  latency_threshold_us: int = 1100
  pin_workers: bool = False
  disable_cpu_ids: Tuple[int, ...] = ()
  data_size_bytes: int = 100
  db_count: int = 1
  db_replication: bool = False
  memory_size_percentage: float = 0.8
  optimize_throughput: bool = False
  probe_seconds: int = 30
  optimizer_max_points: int = 12
  flash: bool = False
  flash_ram_ratio: float = 0.2
  local_max_records: int = 1000000
  dry_run: bool = False
  database_port: int = 12000
  install_dir: Optional[str] = None  # None: the installer's /opt/redislabs
  api_port: int = 9443
  memtier_path: Optional[str] = None

  @classmethod
  def FromFlags(cls, f) -> 'EnterpriseOptions':
    search_options.RequireAverageCap(
        f, 'redis_enterprise', 'its step-up stops at an average latency, '
        '1 ms or upstream PKB\'s --enterprise_redis_latency_threshold if '
        'lower')
    search_options.RequireNoShardSearch(
        f, 'redis_enterprise', 'give --enterprise_redis_optimize_throughput '
        '(its own search of shard and proxy counts)')
    given = [name for name in NOT_READ_FLAGS
             if name in f and f[name].value != f[name].default]
    if given:
      raise errors.UsageError(
          f'--{given[0]} does not apply to redis_enterprise: its servers '
          'and load come from the --enterprise_redis_* flags (on Local too, '
          'where Redis OSS stands in); drop it.')
    cloud = providers.CloudOf(f)
    cpu_ids = f.enterprise_redis_disable_cpu_ids or ()
    if not all(c.isdecimal() for c in cpu_ids):
      raise errors.UsageError(
          f'--enterprise_redis_disable_cpu_ids={",".join(cpu_ids)} must be '
          'CPU ids like 3,4.')
    # Each field named like its flag (--enterprise_redis_<field>) takes it.
    own = {field.name: getattr(f, f'enterprise_redis_{field.name}')
           for field in dataclasses.fields(cls)
           if hasattr(f, f'enterprise_redis_{field.name}')}
    own['disable_cpu_ids'] = tuple(map(int, cpu_ids))
    options = cls(
        **own, cloud=cloud, os=ChooseOs(f.os_type, cloud),
        latency_threshold_us=f.enterprise_redis_latency_threshold,
        dry_run=f.dry_run,
        database_port=getattr(f, 'redis_start_port', None) or 12000,
        memtier_path=_MemtierPath(getattr(f, 'memtier_path', None), cloud))
    options.Check()
    return options

  # Derived settings -------------------------------------------------------

  @property
  def cap_ms(self) -> float:
    """The walk stops at the first step at or over this; the answer is the
    best step under it. Steps between 1 ms and a larger upstream threshold
    can never be the answer, so the walk stops at 1 ms."""
    return min(ANSWER_CAP_MS, self.latency_threshold_us / 1000.0)

  @property
  def programs_dir(self) -> str:
    """Where rladmin and the other programs are on the server VMs."""
    return self.install_dir or rladmin.INSTALL_DIR

  @property
  def shards_per_db(self) -> int:
    return self.shard_count or 1

  @property
  def cluster_api(self) -> bool:
    """Sharded databases expose the OSS cluster API (memtier --cluster-mode)."""
    return self.shards_per_db > 1

  @property
  def local(self) -> bool:
    return providers.CapabilitiesOf(self.cloud).is_runner_machine

  def Steps(self, min_threads: Optional[int] = None,
            max_threads: Optional[int] = None) -> List[int]:
    low = self.min_threads if min_threads is None else min_threads
    high = self.max_threads if max_threads is None else max_threads
    return list(range(low, high + 1, self.thread_increment))

  def Metadata(self) -> Dict[str, object]:
    """Settings every sample carries (upstream's metadata names)."""
    return {
        'redis_tune_on_startup': self.tune_on_startup,
        'redis_pipeline': self.pipeline,
        'db_count': self.db_count,
        'db_shard_count': self.shards_per_db,
        'total_shard_count': self.shards_per_db * self.db_count,
        'redis_proxy_threads': self.proxy_threads,
        'redis_loadgen_clients': self.loadgen_clients,
        'pin_workers': self.pin_workers,
        'disable_cpus': ','.join(map(str, self.disable_cpu_ids)),
        'memtier_data_size': self.data_size_bytes,
        'memtier_key_maximum': self.load_records,
        'replication': self.db_replication,
        'optimize_throughput': self.optimize_throughput,
        'latency_threshold_us': self.latency_threshold_us,
        **self.os.Metadata(),
    }

  # Validation -------------------------------------------------------------

  def Check(self) -> None:
    """Rules across flags; each number's own bounds are on its definition."""
    if self.min_threads > self.max_threads:
      raise errors.UsageError(
          f'--enterprise_redis_min_threads={self.min_threads} is above '
          f'--enterprise_redis_max_threads={self.max_threads}; lower the '
          'first or raise the second.')
    if self.flash_ram_ratio == 1:  # The flag allows (0, 1].
      raise errors.UsageError(
          f'--enterprise_redis_flash_ram_ratio={self.flash_ram_ratio:g} must '
          'be below 1 (the RAM share of a flash database; the rest is flash).')
    if not 1 <= self.database_port <= 65535 - self.db_count:
      raise errors.UsageError(
          f'--redis_start_port={self.database_port}: the {self.db_count} '
          'database port(s) from it must be valid TCP ports.')
    if self.install_dir is not None and (
        not posixpath.isabs(self.install_dir) or
        posixpath.normpath(self.install_dir) != self.install_dir):
      raise errors.UsageError(
          f'--enterprise_redis_install_dir={self.install_dir} must be a '
          'normalized absolute path on the server VMs.')

  def CheckInstallerFiles(self) -> None:
    """A cloud run needs the user's installer and licence (never fetched)."""
    files = (('--enterprise_redis_tarball', self.tarball),
             ('--enterprise_redis_license_path', self.license_path))
    missing = [flag for flag, value in files if not value]
    if missing:
      raise errors.UsageError(
          f'redis_enterprise on {self.cloud} needs {" and ".join(missing)}: '
          'the Redis Enterprise installer tarball and licence you obtained '
          'from Redis (this harness never downloads them); or run '
          '--cloud=Local for the same workload on Redis OSS.')
    for flag, path in files:
      if not os.path.isfile(path):
        raise errors.UsageError(f'{flag}={path}: no such file.')
    # Read now, not first when the cluster is formed (after the VMs are up
    # and the installer ran on them).
    self.LicenceText()

  def LicenceText(self) -> str:
    """The licence, read bounded, a regular file only, as UTF-8 text; one
    line saying why not."""
    flag = f'--enterprise_redis_license_path={self.license_path}'
    try:
      data = regular_files.ReadRegular(self.license_path, MAX_LICENCE_BYTES)
    except regular_files.NotRegular as e:
      raise errors.UsageError(f'{flag}: cannot read it: {e}.') from None
    try:
      return data.decode('utf-8')
    except UnicodeDecodeError:
      raise errors.UsageError(
          f'{flag}: not UTF-8 text; give the licence key file Redis sent '
          '(text).') from None


@dataclasses.dataclass(frozen=True)
class LocalScaling:
  """The Local variant of a run: what the flags asked for, what runs here.

  Pure: built from the options, the requested VM counts and this machine's
  cores and memory.
  """
  server_vms: int
  client_vms: int
  min_threads: int
  max_threads: int
  databases: int
  shards_per_vm: int
  records: int
  replication: bool
  notes: Tuple[str, ...]
  requested: Dict[str, object]

  @classmethod
  def For(cls, opts: EnterpriseOptions, server_vms: int, client_vms: int,
          cores: int) -> 'LocalScaling':
    notes = []
    cores = max(1, cores)
    servers = min(server_vms, max(1, cores // 2))
    clients = max(1, min(client_vms, cores - servers))
    if (servers, clients) != (server_vms, client_vms):
      notes.append(f'VMs: {server_vms} server(s) + {client_vms} client(s) '
                   f'asked, {servers} + {clients} run here ({cores} cores, '
                   'one VM per core)')
    client_cores = max(1, (cores - servers) // clients)
    # redis-benchmark (the local fallback) runs a SET:GET mix as two
    # processes, so the first step needs at least 2 connections.
    min_threads = max(1, min(opts.min_threads, client_cores),
                      min(opts.min_threads,
                          math.ceil(2 / opts.loadgen_clients)))
    max_threads = max(min_threads, min(opts.max_threads, 4 * client_cores))
    if (min_threads, max_threads) != (opts.min_threads, opts.max_threads):
      notes.append(f'threads per client VM: {opts.min_threads}..'
                   f'{opts.max_threads} asked, {min_threads}..{max_threads} '
                   f'here ({client_cores} core(s) per client VM); clients '
                   f'per thread ({opts.loadgen_clients}) and pipeline '
                   f'({opts.pipeline}) unchanged')
    server_cores = max(1, cores // 2) // servers
    databases = min(opts.db_count, server_cores)
    if databases != opts.db_count:
      notes.append(f'databases: {opts.db_count} asked, {databases} here (one '
                   'Redis process per database per server core)')
    wanted = opts.shards_per_db * databases
    shards_per_vm = min(wanted, server_cores)
    if shards_per_vm != wanted:
      notes.append(f'shards: {wanted} asked per server VM, {shards_per_vm} '
                   f'here ({server_cores} core(s) per server VM)')
    records = min(opts.load_records, opts.local_max_records)
    if records != opts.load_records:
      notes.append(f'records: {opts.load_records:,} asked, {records:,} here '
                   '(--enterprise_redis_local_max_records)')
    if opts.db_replication:
      notes.append('replication: asked, not on Local (no replica engine '
                   'here); primaries only')
    return cls(server_vms=servers, client_vms=clients,
               min_threads=min_threads, max_threads=max_threads,
               databases=databases, shards_per_vm=shards_per_vm,
               records=records, replication=False,
               notes=tuple(notes),
               requested={'servers_vm_count': server_vms,
                          'clients_vm_count': client_vms,
                          **{name: getattr(opts, name) for name in (
                              'min_threads', 'max_threads', 'db_count',
                              'load_records', 'db_replication')}})

  @property
  def scaled(self) -> bool:
    return bool(self.notes)

  def Metadata(self) -> Dict[str, object]:
    return {
        'local_scaled': self.scaled,
        **{f'local_requested_{k}': v for k, v in self.requested.items()},
        'local_scaled_min_threads': self.min_threads,
        'local_scaled_max_threads': self.max_threads,
        'local_scaled_db_count': self.databases,
        'local_scaled_shards_per_vm': self.shards_per_vm,
        'local_scaled_load_records': self.records,
        'local_scaled_db_replication': self.replication,
    }
