"""Valkey as a server engine: Redis OSS's shard machinery, Valkey's binary
(linux_packages/valkey_server.py).
"""

from perfkitbenchmarker.engines import redis_oss
from perfkitbenchmarker.linux_packages import valkey_server


class ValkeyEngine(redis_oss.RedisOssEngine):
  """valkey-server shards, standalone or as one cluster."""

  NAME = 'valkey'
  PROCESS_KIND = valkey_server.ValkeyProcess.KIND
  PROCESS_CLASS = valkey_server.ValkeyProcess
  CHECK_VERSION = staticmethod(valkey_server.CheckVersion)

  def Install(self, vm) -> None:
    vm.Install('valkey_server', version=self.version)

  def ServerCommand(self, vm) -> str:
    return valkey_server.ServerCommand(vm)
