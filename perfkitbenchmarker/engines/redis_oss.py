"""Redis OSS (Debian's or Redis's packages) as a server engine.

Installing, the config file, the shard resource and cluster formation are
in linux_packages/redis_server.py (the installed program); this class only
maps the engine interface onto it.
"""

import re
from typing import List, Sequence

from perfkitbenchmarker import errors
from perfkitbenchmarker.engines import base
from perfkitbenchmarker.linux_packages import redis_server


class RedisOssEngine(base.ServerEngine):
  """redis-server shards, standalone or as one Redis Cluster."""

  NAME = 'redis'

  def __init__(self, version: str = 'distro'):
    self.version = version

  def Install(self, vm) -> None:
    vm.Install('redis_server', version=self.version)

  def Version(self, vm) -> str:
    return redis_server.GetVersion(vm)

  def StartShards(self, vm, count: int, password: str,
                  options: base.ShardOptions, record,
                  start_port: int) -> List[redis_server.RedisProcess]:
    return redis_server.StartShards(vm, count, password, options, record,
                                    start_port=start_port)

  def FormCluster(self, vm, shards: Sequence[base.Shard], password: str,
                  replicas: int) -> None:
    redis_server.CreateCluster(vm, shards, password, replicas=replicas)

  def KeyCount(self, vm, shards: Sequence[base.Shard], password: str) -> int:
    return redis_server.DbSize(vm, shards, password)

  def ReadPassword(self, process) -> str:
    config = process.vm.ReadFile(process.config_path)
    match = re.search(r'^requirepass (\S+)$', config, re.M)
    if not match:
      raise errors.ProcessError('The shards\' config has no password.')
    return match.group(1)
