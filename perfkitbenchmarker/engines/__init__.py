"""Server engines: the Redis-compatible servers a study can deploy.

Extension seam: an engine implements `base.ServerEngine` (install,
configure and start shards, form a cluster, version, count keys, stop) in a
module here and registers itself in `_ENGINES`. Valkey, Dragonfly, KeyDB and
Redis Enterprise plug in the same way Redis OSS (`redis_oss.py`) does; the
study's deployment code only talks to the interface.
"""

from typing import Callable, Dict

from perfkitbenchmarker import errors
from perfkitbenchmarker.engines import base
from perfkitbenchmarker.engines import redis_oss

_ENGINES: Dict[str, Callable[..., base.ServerEngine]] = {
    redis_oss.RedisOssEngine.NAME: redis_oss.RedisOssEngine,
}


def Names():
  return sorted(_ENGINES)


def Get(name: str, **settings) -> base.ServerEngine:
  """The engine called `name`, configured with `settings`."""
  if name not in _ENGINES:
    raise errors.UsageError(
        f'Unknown server engine "{name}"; choose one of {", ".join(Names())}.')
  return _ENGINES[name](**settings)
