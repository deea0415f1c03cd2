"""Server engines: the Redis-compatible servers a study can deploy.

Extension seam: an engine implements `base.ServerEngine` (install,
configure and start shards, form a cluster, version, count keys, stop) in a
module here and is listed in `_ENGINES`. Valkey, Dragonfly, KeyDB and
Redis Enterprise plug in the same way Redis OSS (`redis_oss.py`) does; the
study's deployment code only talks to the interface.
"""

import importlib

from perfkitbenchmarker import errors

# name -> (module, class). Imported when asked for: the engine modules import
# linux_packages, which import engines.base, so nothing is imported here.
_ENGINES = {
    'redis': ('perfkitbenchmarker.engines.redis_oss', 'RedisOssEngine'),
    'valkey': ('perfkitbenchmarker.engines.valkey', 'ValkeyEngine'),
    'dragonfly': ('perfkitbenchmarker.engines.vm_only', 'DragonflyEngine'),
    'keydb': ('perfkitbenchmarker.engines.vm_only', 'KeydbEngine'),
}


def Names():
  return sorted(_ENGINES)


def Get(name: str, **settings):
  """The engine called `name` (a base.ServerEngine), with `settings`."""
  if name not in _ENGINES:
    raise errors.UsageError(
        f'Unknown server engine "{name}"; choose one of {", ".join(Names())}.')
  module, cls = _ENGINES[name]
  return getattr(importlib.import_module(module), cls)(**settings)


def ReadsRedisConf(name: str) -> bool:
  """Whether the engine called `name` takes redis.conf lines (without
  making one)."""
  module, cls = _ENGINES[name]
  return getattr(importlib.import_module(module), cls).READS_REDIS_CONF
