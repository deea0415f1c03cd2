"""The Redis study's options: built from flags once, validated, frozen.

`RedisStudyOptions.FromFlags(flag_values)` is the only place the study reads
flags; a bad value is one line (errors.UsageError) before anything is
created. Extension seam: a new setting is a field on the record it belongs
to (the search's are in search_options.py), read in its `FromFlags` and
checked in its `Check`.
"""

import dataclasses
import math
import os
import re
from typing import Optional, Tuple

from perfkitbenchmarker import engines
from perfkitbenchmarker import errors
from perfkitbenchmarker import providers
from perfkitbenchmarker import redis_shard
from perfkitbenchmarker.engines import engine_options
from perfkitbenchmarker.linux_packages import redis_config
from perfkitbenchmarker.load_generators import base
from perfkitbenchmarker.load_generators import flags as _  # pylint: disable=unused-import
from perfkitbenchmarker.linux_packages import redis_server as _server_flags  # pylint: disable=unused-import
from perfkitbenchmarker.study import flags as _study_flags  # pylint: disable=unused-import
from perfkitbenchmarker.study import search_options
from perfkitbenchmarker.study import workload_options


DEFAULT_MAXCLIENTS = 10000  # redis.conf's default


def CheckServerOption(line: str) -> None:
  """Refuses a --redis_server_options line in one line unless it is a
  tuning directive (redis_config.UserLineProblem: the one check of a user's
  config line, read as redis-server reads it)."""
  problem = redis_config.UserLineProblem(line)
  if problem:
    raise errors.UsageError(f'--redis_server_options: {problem}')


@dataclasses.dataclass(frozen=True)
class ServerOptions:
  """What runs on the server VMs."""
  engine: str = 'redis'
  version: str = 'distro'
  cluster_mode: bool = False
  shards_per_vm: int = 1
  cluster_replicas: int = 0
  start_port: int = 7001
  extra_config: Tuple[str, ...] = ()
  memory_fraction: float = 0.7
  system_tuning: bool = True
  # The engine's own settings as (constructor argument, value) pairs, and
  # replicas added per primary (engines/flags.py).
  engine_settings: Tuple[Tuple[str, object], ...] = ()
  replicas_per_primary: int = 0

  @classmethod
  def FromFlags(cls, f) -> 'ServerOptions':
    return cls(engine=f.redis_engine,
               engine_settings=engine_options.SettingsFromFlags(f),
               replicas_per_primary=f.redis_replicas_per_primary,
               version=f.redis_server_version,
               cluster_mode=f.redis_server_cluster_mode,
               shards_per_vm=f.redis_total_num_processes,
               cluster_replicas=f.redis_cluster_replicas,
               start_port=f.redis_start_port,
               extra_config=tuple(f.redis_server_options),
               memory_fraction=f.redis_memory_fraction,
               system_tuning=f.system_tuning)

  def Engine(self):
    """The server engine these options name (engines/)."""
    return engines.Get(self.engine, version=self.version,
                       **dict(self.engine_settings))

  @property
  def mode(self) -> str:
    mode = 'one Redis Cluster' if self.cluster_mode else 'standalone'
    if self.replicas_per_primary:
      mode += f', {self.replicas_per_primary} replica(s) per primary'
    return mode

  def CheckLayout(self, server_vms: int) -> None:
    """Refuses, before anything is created, shards the engine would refuse
    to start or join once the VMs are up and the software installed."""
    problem = self.Engine().LayoutProblem(
        self.shards_per_vm, server_vms, self.cluster_mode,
        self.replicas_per_primary or self.cluster_replicas,
        bool(self.replicas_per_primary))
    if problem:
      raise errors.UsageError(problem)

  def CheckPorts(self, per_vm: int, what: str) -> None:
    """Refuses `per_vm` shards on a server VM (`what` says whose) whose
    consecutive ports from --redis_start_port would run past the last."""
    # Cluster shards also listen on port + 10000 (the cluster bus).
    last = redis_shard.PortRanges(self.start_port, per_vm,
                                  self.cluster_mode)[-1][1]
    if self.start_port < 1 or last > redis_shard.MAX_PORT:
      raise errors.UsageError(
          f'--redis_start_port={self.start_port} with {what} needs ports up '
          f'to {last}; ports run from 1 to {redis_shard.MAX_PORT}.')

  @property
  def maxclients(self) -> int:
    """Each shard's connection limit (redis.conf maxclients)."""
    for line in self.extra_config:
      parts = redis_config.SplitArgs(line.strip()) or []
      if len(parts) == 2 and parts[0].lower() == 'maxclients':
        try:
          return int(parts[1])
        except ValueError:
          pass
    return DEFAULT_MAXCLIENTS

  def Check(self) -> None:
    """Refuses settings the shards cannot start with, in one line (each
    number's own bounds are on its flag's definition)."""
    # Every server VM also holds the replicas of a VM's primaries (the next
    # VM's, or its own when it is the only one), on the ports after its
    # own; cluster shards also listen on port + 10000 (the cluster bus).
    replicas = (f' and {self.replicas_per_primary} replica(s) per primary'
                if self.replicas_per_primary else '')
    self.CheckPorts(self.shards_per_vm * (1 + self.replicas_per_primary),
                    f'{self.shards_per_vm} shard(s) per VM{replicas}')
    for line in self.extra_config:
      CheckServerOption(line)
    if any(redis_config.Directive(l) for l in self.extra_config) and (
        self.engine in engines.Names() and
        not engines.ReadsRedisConf(self.engine)):
      raise errors.UsageError(
          f'--redis_server_options are redis.conf lines; the {self.engine} '
          'engine reads none (it would run without them); use its own '
          f'--{self.engine}_* flags, or remove them.')


@dataclasses.dataclass(frozen=True)
class GeneratorOptions:
  """Which load generator, and how long each probe runs."""
  choice: str = 'auto'  # auto | memtier | redis_benchmark
  memtier_path: Optional[str] = None
  load_key_pattern: str = 'P:P'
  run_duration_s: int = 2
  warmup_s: int = 0
  clients: int = 32
  pipeline: int = 1
  requests: Optional[int] = None  # memtier -n per client instead of a time
  processes_per_client: int = 1  # memtier processes per client VM, endpoint
  # Without memtier (choice auto): run redis-benchmark minus memtier-only
  # settings instead of refusing.
  fallback: bool = False

  @classmethod
  def FromFlags(cls, f) -> 'GeneratorOptions':
    path = f.memtier_path
    if path and providers.CapabilitiesOfRun(f).is_runner_machine:
      path = os.path.abspath(path)  # Local "VMs" run in scratch directories.
    return cls(choice=f.load_generator, memtier_path=path,
               load_key_pattern=f.memtier_load_key_pattern,
               run_duration_s=f.memtier_run_duration,
               warmup_s=f.memtier_warmup_seconds,
               clients=f.memtier_clients[0], pipeline=f.memtier_pipeline[0],
               requests=f.memtier_requests,
               processes_per_client=f.memtier_processes_per_client,
               fallback=f.redis_benchmark_fallback)


@dataclasses.dataclass(frozen=True)
class RedisStudyOptions:
  """Everything the redis_memtier study needs, from flags, validated."""
  server: ServerOptions
  workload: base.Workload
  generator: GeneratorOptions
  search: search_options.SearchOptions
  shards: search_options.ShardSearchOptions
  fixed: workload_options.FixedLoadOptions = (
      workload_options.FixedLoadOptions())
  curve: search_options.CurveOptions = search_options.CurveOptions()

  @classmethod
  def FromFlags(cls, f) -> 'RedisStudyOptions':
    _CheckWorkloadFlags(f)
    search_options.RequireOneCappedAnswer(f)
    if (providers.CapabilitiesOfRun(f).is_runner_machine and
        f.redis_server_version != 'distro'):
      engine_options.CheckLocalVersion(f.redis_engine,
                                       f.redis_server_version)
    set_ratio, get_ratio = workload_options.ParseRatio(f.memtier_ratio,
                                                       'memtier_ratio')
    options = cls(
        server=ServerOptions.FromFlags(f),
        workload=base.Workload(
            set_ratio=set_ratio, get_ratio=get_ratio,
            data_size=f.memtier_data_size, key_minimum=f.memtier_key_minimum,
            key_maximum=f.memtier_key_maximum,
            key_pattern=f.memtier_key_pattern,
            cluster_mode=f.redis_server_cluster_mode,
            **workload_options.KeyDistributionFromFlags(f)),
        generator=GeneratorOptions.FromFlags(f),
        search=search_options.SearchOptions.FromFlags(f),
        shards=search_options.ShardSearchOptions.FromFlags(f),
        fixed=workload_options.FixedLoadOptions.FromFlags(f),
        curve=search_options.CurveOptions.FromFlags(f))
    options.Check()
    return options

  def Check(self) -> None:
    """Rejects impossible combinations before anything is created."""
    self.server.Check()
    search_options.CheckSearch(self.search, self.generator)
    search_options.CheckShards(self.shards, self.server)
    workload_options.CheckWorkload(self)

  def CheckConnections(self, client_vms: int, server_vms: int,
                       shard_limit: Optional[Tuple[int, str, str]] = None
                       ) -> None:
    """Refuses a search that would open more connections than maxclients,
    or than `shard_limit` lets a shard take where it runs: (connections,
    why, what else to do; the Local provider's limits.ConnectionLimit)."""
    s = self.search
    if s.staircase is not None:
      per_client = s.max_threads * s.staircase.max_clients
      source = ('--memtier_max_threads x --memtier_staircase_max_clients '
                f'({s.max_threads} x {s.staircase.max_clients})')
    elif s.policy == 'linear':
      per_client = s.max_threads * self.generator.clients
      source = ('--memtier_max_threads x --memtier_clients '
                f'({s.max_threads} x {self.generator.clients})')
    else:
      per_client = s.adaptive_max_connections
      source = f'--memtier_adaptive_max_connections={per_client}'
    total = per_client * client_vms
    shards = max(1, self.server.shards_per_vm * server_vms)
    # Standalone shards share the connections; a cluster client connects
    # every connection to every primary.
    per_shard = total if self.server.cluster_mode else math.ceil(
        total / shards)
    takes, why, remedy = shard_limit or (None, '', '')
    if takes is not None and per_shard > takes < self.server.maxclients:
      raise errors.UsageError(
          f'{source} over {client_vms} client VM(s) and {shards} shard(s) '
          f'means {per_shard:,} connections per shard, above the '
          f'{takes:,} Redis takes here ({why}); lower it, or {remedy}.')
    if per_shard > self.server.maxclients:
      raise errors.UsageError(
          f'{source} over {client_vms} client VM(s) and {shards} shard(s) '
          f'means {per_shard:,} connections per shard, above Redis '
          f'maxclients ({self.server.maxclients:,}); lower it or add '
          '"maxclients N" to --redis_server_options.')


def _CheckWorkloadFlags(f) -> None:
  if f.memtier_key_minimum > f.memtier_key_maximum:
    raise errors.UsageError(
        f'--memtier_key_minimum={f.memtier_key_minimum} is above '
        f'--memtier_key_maximum={f.memtier_key_maximum}.')
  if not re.fullmatch(r'[RSGP]:[RSGP]', f.memtier_key_pattern):
    raise errors.UsageError(
        f'--memtier_key_pattern="{f.memtier_key_pattern}" must be two of '
        'R, S, G, P joined by ":", e.g. R:R.')
