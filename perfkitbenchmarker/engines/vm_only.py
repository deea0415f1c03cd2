"""Dragonfly and KeyDB: engines for cloud and static VMs only.

Neither is installable on this machine, so on the Local provider each
refuses in one line before anything starts (`LOCAL_REFUSAL`). Cluster
formation, key counts and the password read-back are Redis OSS's (both
speak the protocol).
"""

import dataclasses
from typing import Sequence

from perfkitbenchmarker import engines
from perfkitbenchmarker import errors
from perfkitbenchmarker import redis_shard
from perfkitbenchmarker.engines import redis_oss
from perfkitbenchmarker.linux_packages import dragonfly_server
from perfkitbenchmarker.linux_packages import keydb_server


_ONE_PROCESS = ('Dragonfly runs one multi-threaded process per server VM; '
                'set --redis_total_num_processes=1 and '
                '--dragonfly_proactor_threads.')
_EMULATED_CLUSTER = ('Dragonfly cluster mode here is its emulated cluster of '
                     'one node: one server VM, '
                     '--dragonfly_cluster_mode=emulated, no replicas.')


class _VmOnly(redis_oss.RedisOssEngine):
  """Installs its package (`PACKAGE`) from `sources` (download URLs, install
  prefix); refuses Local."""

  PACKAGE = ''

  def __init__(self, version: str = 'distro', **sources):
    super().__init__(version)
    self.sources = sources

  def Install(self, vm) -> None:
    if not vm.CAN.installs_packages:
      engines.RefuseLocal(self.NAME)
    vm.Install(self.PACKAGE, version=self.version, **self.sources)


class DragonflyEngine(_VmOnly):
  """One dragonfly process per server VM (it is multi-threaded)."""

  NAME = 'dragonfly'
  PROCESS_KIND = dragonfly_server.DragonflyProcess.KIND
  READS_REDIS_CONF = False  # A flag file (--dragonfly_* flags).
  CHECK_VERSION = staticmethod(dragonfly_server.ReleaseVersion)
  LOCAL_REFUSAL = ('Dragonfly ships only as release packages from its own '
                   'download host, which this machine cannot reach')
  PACKAGE = 'dragonfly_server'
  PASSWORD_LINE = r'^--requirepass=(\S+)$'  # Its flag file's.
  SETTINGS = {'proactor_threads': 'proactor_threads',
              'cluster_mode': 'cluster_mode'}

  def __init__(self, version: str = 'distro', proactor_threads: int = 0,
               cluster_mode: str = 'none', **sources):
    super().__init__(version, **sources)
    self.proactor_threads = proactor_threads
    self.cluster_mode = cluster_mode

  def ServerCommand(self, vm) -> str:
    return 'dragonfly'

  def ShardConfig(
      self, options: redis_shard.ShardOptions) -> redis_shard.ShardOptions:
    # Settings go on Dragonfly's flag file, not redis.conf lines; Redis
    # Cluster mode is Dragonfly's emulated cluster.
    return dataclasses.replace(options, cluster_mode=False)

  def PROCESS_CLASS(self, *args, **kwargs):  # pylint: disable=invalid-name
    process = dragonfly_server.DragonflyProcess(*args, **kwargs)
    process.settings = self.Settings()
    return process

  def LayoutProblem(self, shards_per_vm, server_vms, cluster_mode, replicas,
                    added_replicas):
    if shards_per_vm != 1:
      return _ONE_PROCESS
    if cluster_mode and (server_vms != 1 or replicas or
                         self.cluster_mode != 'emulated'):
      return _EMULATED_CLUSTER
    return ''

  def StartShards(self, vm, count, password, options, record, start_port):
    if count != 1:
      raise errors.UsageError(_ONE_PROCESS)
    return super().StartShards(vm, count, password, options, record,
                               start_port)

  def FormCluster(self, vm, shards: Sequence[redis_shard.Shard], password: str,
                  replicas: int) -> None:
    if len(shards) != 1 or replicas or self.cluster_mode != 'emulated':
      raise errors.UsageError(_EMULATED_CLUSTER)


class KeydbEngine(_VmOnly):
  """keydb-server shards with server-threads worker threads."""

  NAME = 'keydb'
  PROCESS_KIND = keydb_server.KeydbProcess.KIND
  PROCESS_CLASS = keydb_server.KeydbProcess
  CHECK_VERSION = staticmethod(keydb_server.CheckVersion)
  LOCAL_REFUSAL = ('KeyDB ships only from its own APT repository or a '
                   'source release, neither reachable from this machine')
  PACKAGE = 'keydb_server'
  SETTINGS = {'server-threads': 'server_threads'}  # 0: KeyDB's default.

  def __init__(self, version: str = 'distro', server_threads: int = 0,
               **sources):
    super().__init__(version, **sources)
    self.server_threads = server_threads

  def ServerCommand(self, vm) -> str:
    return 'keydb-server'
