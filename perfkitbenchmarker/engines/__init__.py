"""Server engines: the Redis-compatible servers a study can deploy.

Extension seam: an engine implements `base.ServerEngine` (install,
configure and start shards, which stop by their own Delete, form a cluster,
replicas, version, count keys) in a module here and joins `_ENGINES` below.
That is all a new engine touches: the study only calls the interface, and
finds the engine's shards in a run record by `ShardKinds`. An engine's
module is imported when the engine is asked for, so reading the flags loads
none. Redis Enterprise is no shard engine (its cluster manager starts the
servers): redis_enterprise.py drives one cluster for the redis_enterprise
benchmark.
"""

import importlib
from typing import Optional, Tuple

from perfkitbenchmarker import errors

# name -> (module here, engine class).
_ENGINES = {'redis': ('redis_oss', 'RedisOssEngine'),
            'valkey': ('valkey', 'ValkeyEngine'),
            'dragonfly': ('vm_only', 'DragonflyEngine'),
            'keydb': ('vm_only', 'KeydbEngine')}


def Names():
  return sorted(_ENGINES)


def _Class(name: str):
  if name not in _ENGINES:
    raise errors.UsageError(
        f'Unknown server engine "{name}"; choose one of {", ".join(Names())}.')
  module, cls = _ENGINES[name]
  return getattr(importlib.import_module(f'{__name__}.{module}'), cls)


def Get(name: str, **settings):
  """The engine called `name` (a base.ServerEngine), with `settings`."""
  return _Class(name)(**settings)


def ReadsRedisConf(name: str) -> bool:
  """Whether the engine called `name` takes redis.conf lines."""
  return _Class(name).READS_REDIS_CONF


def CheckVersion(name: str, version: str) -> None:
  """Refuses a --redis_server_version the engine cannot install, once, in
  one line (else every VM's install would refuse it at the same time)."""
  _Class(name).CHECK_VERSION(version)


def RefuseLocal(name: str) -> None:
  reason = _Class(name).LOCAL_REFUSAL
  if reason:
    raise errors.UsageError(
        f'--redis_engine={name} is not installable on this machine: '
        f'{reason}; run it on a cloud or --static_vm_file, or use redis or '
        'valkey locally.')


def NameOfKind(kind: str) -> Optional[str]:
  """The engine whose shards a run record names `kind`, or None."""
  return next((n for n in Names() if _Class(n).PROCESS_KIND == kind), None)


def ShardKinds() -> Tuple[str, ...]:
  """The run-record kinds of every engine's shard processes (loading every
  engine registers those kinds for a teardown from the record)."""
  return tuple(dict.fromkeys(_Class(n).PROCESS_KIND for n in Names()))
