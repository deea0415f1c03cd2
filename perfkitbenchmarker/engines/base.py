"""The server engine interface: what a study needs from a Redis-like server.

Every engine manages shards as run-record resources (`ShardProcess`): one
server process per port with the run's password, recorded before it starts
so teardown finds it from the record alone. The study never builds a server
command line itself; it asks the engine.
"""

import abc
from typing import Dict, List, Sequence

from perfkitbenchmarker import redis_shard


class ServerEngine(abc.ABC):
  """A Redis-compatible server on the server VMs."""

  NAME = ''
  # The run-record kind of its shard processes (for a resumed run).
  PROCESS_KIND = ''
  # Whether its shards read redis.conf lines (--redis_server_options).
  READS_REDIS_CONF = True
  # Why this machine cannot install it ('': it can).
  LOCAL_REFUSAL = ''
  # Its settings as recorded (`Settings`): setting name -> attribute.
  SETTINGS: Dict[str, str] = {}

  @abc.abstractmethod
  def Install(self, vm) -> None:
    """Makes the server and its CLI available on `vm` (once per VM)."""

  @abc.abstractmethod
  def Version(self, vm) -> str:
    """The installed server's version, recorded in every sample."""

  @abc.abstractmethod
  def StartShards(self, vm, count: int, password: str,
                  options: redis_shard.ShardOptions, record,
                  start_port: int) -> List:
    """Configures and starts `count` shards on free ports; returns their
    run-record resources (each has `port`, `pid`, `vm`, `config_path` and
    `Delete()`)."""

  @abc.abstractmethod
  def FormCluster(self, vm, shards: Sequence[redis_shard.Shard],
                  password: str, replicas: int) -> None:
    """Joins the shards into one cluster and waits until it serves."""

  def LayoutProblem(self, shards_per_vm: int, server_vms: int,
                    cluster_mode: bool, replicas: int,
                    added_replicas: bool) -> str:
    """Why StartShards or FormCluster would refuse this layout ('' when
    they would not), so that a plan refuses it before any VM is made:
    `shards_per_vm` primaries (replicas counted in when not
    `added_replicas`) on each of `server_vms`, `replicas` per primary."""
    del shards_per_vm, server_vms, cluster_mode, replicas, added_replicas
    return ''

  @abc.abstractmethod
  def KeyCount(self, vm, shards: Sequence[redis_shard.Shard],
               password: str) -> int:
    """Keys held by the primaries (for the preload check)."""

  @abc.abstractmethod
  def ReadPassword(self, process) -> str:
    """The run's password, read back from a shard's config on its VM (for
    a resumed run; it is never in the run record)."""

  def Settings(self) -> Dict[str, str]:
    """Engine settings recorded in every sample (e.g. {'io-threads': '4'}):
    each of `SETTINGS` not at the engine's default (0, None or 'none')."""
    values = {name: getattr(self, attr) for name, attr in self.SETTINGS.items()}
    return {name: str(value) for name, value in values.items()
            if value and value != 'none'}

  # Replicas (engine_options.REPLICA_ENGINES: the flags refuse them for
  # the others before anything starts).

  @abc.abstractmethod
  def AttachReplica(self, vm, replica: redis_shard.Shard,
                    primary: redis_shard.Shard, password: str) -> None:
    """Makes a standalone shard replicate another."""

  @abc.abstractmethod
  def VerifyReplication(self, vm, shards: Sequence[redis_shard.Shard],
                        password: str, primaries: int,
                        replicas_per_primary: int) -> None:
    """Waits until every replica is linked to its primary, or raises."""
