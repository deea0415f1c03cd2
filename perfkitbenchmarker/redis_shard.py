"""A Redis shard as every layer sees it: where it runs, how it is set up, the
run's password and the user the load generators log in as.

Values and small rules that import only the secret mask (vm_util), so the
engines (engines/) that start shards, the programs (linux_packages/) that
configure them, the study (study/) that sizes them and the load generators
(load_generators/) that log in to them share one definition without
pointing up a layer.

The load user. memtier_benchmark takes a password only as an argument (`-a`),
and Debian's redis-benchmark 7.0 ignores REDISCLI_AUTH.
linux_packages/argv_secret.py keeps the password out of their argv
(docs/secrets.md). That password is not
the run's `requirepass` (the default user, which can read the config,
FLUSHALL, SHUTDOWN or change ACLs) but that of an ACL user the shards' config
defines, limited to data commands. Its password is derived from the run's
password with HMAC-SHA256, one way: seeing it in `ps` reveals nothing of the
run's password, and a resumed run derives it again from the config file. Both
are masked in logs and results (vm_util.RegisterSecret).
"""

import dataclasses
import hashlib
import hmac
import secrets
from typing import Optional, Tuple

from perfkitbenchmarker import vm_util

# A cluster shard also listens on its port + this (the cluster bus), and no
# port is above MAX_PORT: what the study, the firewalls and the security
# groups count a run's ports by.
CLUSTER_BUS_OFFSET = 10000
MAX_PORT = 65535


def MostShardsSearched(min_shards: int, vcpus: Optional[int]) -> int:
  """The most shards per server VM a shard search tries when
  --redis_max_shards does not say: the VM's vCPUs (at least 2, never below
  the fewest it tries)."""
  return max(min_shards, 2, vcpus or 1)


def PortRanges(start_port: int, per_vm: int, cluster_bus: bool
               ) -> Tuple[Tuple[int, int], ...]:
  """The (first, last) ports `per_vm` shards take on a server VM, one after
  another from `start_port`, and in cluster mode their cluster bus's."""
  last = start_port + per_vm - 1
  ranges = ((start_port, last),)
  if cluster_bus:
    ranges += ((start_port + CLUSTER_BUS_OFFSET, last + CLUSTER_BUS_OFFSET),)
  return ranges


def ShardsStartedBySearch(low: int, high: int, max_points: int
                          ) -> Tuple[int, int]:
  """(counts, shards): the most shard counts a search of [low, high]
  evaluates (at most `max_points`), and the most shards it starts on a
  server VM over all of them, each count on ports of its own."""
  counts = min(max_points, high - low + 1)
  return counts, sum(range(high - counts + 1, high + 1))


@dataclasses.dataclass(frozen=True)
class ShardOptions:
  """Per-VM shard settings the study decides (the engine applies them)."""
  cluster_mode: bool = False
  maxmemory_mb: int = 1024
  extra_config: Tuple[str, ...] = ()
  bind: str = '127.0.0.1'


@dataclasses.dataclass(frozen=True)
class Shard:
  """One running shard, as clients and the cluster see it."""
  vm_name: str
  host: str
  port: int
  pid: int
  config_path: str

  @classmethod
  def Of(cls, process) -> 'Shard':
    """The shard a run-record shard process (e.g. RedisProcess) runs."""
    return cls(process.vm.name, process.vm.internal_ip, process.port,
               process.pid, process.config_path)

  @property
  def address(self) -> str:
    return f'{self.host}:{self.port}'


def MaxMemoryPerShardMb(vm_memory_mib: int, shards: int,
                        fraction: float) -> int:
  return max(64, int(vm_memory_mib * fraction / max(1, shards)))


def NewPassword() -> str:
  """A fresh password for the run's shards, masked from now on."""
  password = secrets.token_urlsafe(24)
  RegisterPassword(password)
  return password


def RegisterPassword(password: str) -> None:
  """Masks the password (and the load user's) in logs and results."""
  vm_util.RegisterSecret(password)
  if password:
    vm_util.RegisterSecret(LoadPassword(password))


LOAD_USER = 'pkb-load'
# Data commands only: no CONFIG (it would print requirepass), ACL, SHUTDOWN,
# FLUSHALL, DEBUG, KEYS and the like.
LOAD_USER_RULES = ('~* &* +@all -@admin -@dangerous '
                   # Cluster clients read the topology.
                   '+cluster|slots +cluster|nodes')


def LoadPassword(password: str) -> str:
  """The load user's password for the run password `password`."""
  return hmac.new(password.encode(), LOAD_USER.encode(),
                  hashlib.sha256).hexdigest()


def UserDirective(password: str) -> str:
  """The redis.conf line that defines the load user."""
  return f'user {LOAD_USER} on >{LoadPassword(password)} {LOAD_USER_RULES}'
