"""Server engines: the Redis-compatible servers a study can deploy.

Extension seam: an engine implements `base.ServerEngine` (install,
configure and start shards, form a cluster, replicas, version, count keys,
stop) in a module here and joins `_ENGINES` below. That is all a new engine
touches: the study only calls the interface, and finds the engine's shards
in a run record by `ShardKinds`. Redis Enterprise is no shard engine (its
cluster manager starts the servers): redis_enterprise.py, with its REST
client and rladmin commands beside it, drives one cluster for the
redis_enterprise benchmark.
"""

from typing import Tuple

from perfkitbenchmarker import errors
from perfkitbenchmarker.engines import redis_oss
from perfkitbenchmarker.engines import valkey
from perfkitbenchmarker.engines import vm_only

# name -> engine class.
_ENGINES = {engine.NAME: engine for engine in (
    redis_oss.RedisOssEngine, valkey.ValkeyEngine, vm_only.DragonflyEngine,
    vm_only.KeydbEngine)}


def Names():
  return sorted(_ENGINES)


def Get(name: str, **settings):
  """The engine called `name` (a base.ServerEngine), with `settings`."""
  if name not in _ENGINES:
    raise errors.UsageError(
        f'Unknown server engine "{name}"; choose one of {", ".join(Names())}.')
  return _ENGINES[name](**settings)


def ReadsRedisConf(name: str) -> bool:
  """Whether the engine called `name` takes redis.conf lines (without
  making one)."""
  return _ENGINES[name].READS_REDIS_CONF


def ShardKinds() -> Tuple[str, ...]:
  """The run-record kinds of every engine's shard processes."""
  return tuple(dict.fromkeys(e.PROCESS_KIND for e in _ENGINES.values()))
