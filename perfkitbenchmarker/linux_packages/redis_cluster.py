"""Redis Cluster and replication over running shards: form, wait, query.

The seam with redis_server.py: that module installs, configures, starts and
stops shards (one process each, a run record resource); this one only talks
to shards that are already up, through redis-cli with the password in its
environment (redis_server.Cli): joining them into one cluster, making
replicas follow primaries, and reading back cluster state, replication
state and key counts. engines/redis_oss.py maps the engine interface onto
both; a Redis-compatible engine whose servers speak the same commands
(Valkey, KeyDB) reuses this module as it is.
"""

import shlex
import time
from typing import Callable, Dict, List, Sequence, Tuple

from perfkitbenchmarker import errors
from perfkitbenchmarker import redis_shard
from perfkitbenchmarker import virtual_machine
from perfkitbenchmarker import waits
from perfkitbenchmarker.linux_packages import redis_server


CLUSTER_SLOTS = 16384
# `redis-cli --cluster create` takes every address in one argv, which grows
# with the shard count (hundreds per VM hit "Argument list too long" once
# wrapped for SSH); above this many shards the cluster is built by pieces,
# one small redis-cli command per step, so no command grows with the count.
MAX_CLUSTER_CREATE_SHARDS = 64


def ReplicaProblem(shards: int, replicas: int,
                   flag: str = '--redis_cluster_replicas') -> str:
  """Why `shards` processes cannot be one cluster with `replicas` replicas
  per primary ('' when they can): a replica is placed by redis-cli, which
  needs 3 primaries. `flag` is the one that asked for the replicas."""
  if replicas and shards // (1 + replicas) < 3:
    return ('Cluster replicas need at least 3 primaries; raise '
            f'--redis_total_num_processes or set {flag}=0.')
  return ''


def CreateCluster(vm: virtual_machine.BaseVirtualMachine,
                  shards: Sequence[redis_shard.Shard], password: str,
                  replicas: int = 0,
                  sleep: Callable[[float], None] = time.sleep,
                  clock: Callable[[], float] = time.monotonic,
                  timeout_s: float = 60) -> None:
  """Joins the shards into one cluster and waits until it serves all slots;
  by pieces (ClusterCommands) below 3 primaries, which redis-cli --cluster
  create refuses, or above MAX_CLUSTER_CREATE_SHARDS shards."""
  primaries = len(shards) // (1 + replicas)
  problem = ReplicaProblem(len(shards), replicas)
  if problem:
    raise errors.UsageError(problem)
  if 3 <= primaries and len(shards) <= MAX_CLUSTER_CREATE_SHARDS:
    addresses = ' '.join(shlex.quote(s.address) for s in shards)
    vm.RemoteCommand(
        f'redis-cli --no-auth-warning --cluster create {addresses} '
        f'--cluster-replicas {replicas} --cluster-yes',
        env={'REDISCLI_AUTH': password}, timeout=120,
        what='redis-cli --cluster create')
  else:
    for shard, args in ClusterCommands(shards, replicas):
      redis_server.Cli(vm, shard.host, shard.port, password, args)
    _Replicate(vm, shards[primaries:], shards[:primaries], password, sleep,
               clock, timeout_s)
  WaitForClusterOk(vm, shards, password, sleep, clock, timeout_s)


def ClusterCommands(shards: Sequence[redis_shard.Shard], replicas: int = 0):
  """(shard, redis-cli args) joining and slotting a cluster by pieces.

  The first `len(shards) // (1 + replicas)` shards are primaries: the first
  shard meets every other one (one CLUSTER MEET each; gossip does the rest)
  and each primary gets an equal range of slots. Every command holds at
  most one address, whatever the shard count.
  """
  primaries = list(shards[:len(shards) // (1 + replicas)])
  first = shards[0]
  for other in shards[1:]:
    yield first, f'CLUSTER MEET {shlex.quote(other.host)} {int(other.port)}'
  per = CLUSTER_SLOTS // len(primaries)
  for i, shard in enumerate(primaries):
    low = i * per
    high = CLUSTER_SLOTS - 1 if i == len(primaries) - 1 else low + per - 1
    yield shard, f'CLUSTER ADDSLOTSRANGE {low} {high}'


def _Replicate(vm, replica_shards: Sequence[redis_shard.Shard],
               primaries: Sequence[redis_shard.Shard], password: str,
               sleep: Callable[[float], None], clock: Callable[[], float],
               timeout_s: float) -> None:
  """Each replica follows primary i % len(primaries), once it knows it (a
  replica learns its primary by gossip)."""
  for i, replica in enumerate(replica_shards):
    primary = primaries[i % len(primaries)]
    node_id = redis_server.Cli(vm, primary.host, primary.port, password,
                  'CLUSTER MYID').strip()
    known, _ = _AwaitAnswers(vm, [replica], password, 'CLUSTER NODES',
                             lambda nodes, n=node_id: n in nodes[0],
                             sleep, clock, timeout_s)
    if not known:
      raise errors.ProcessError(
          f'Shard {replica.port} never learnt primary {primary.port} in '
          f'{timeout_s:.0f}s.')
    redis_server.Cli(vm, replica.host, replica.port, password,
        f'CLUSTER REPLICATE {shlex.quote(node_id)}')


def _AwaitAnswers(vm, shards: Sequence[redis_shard.Shard], password: str,
                  command: str, done: Callable[[List[str]], bool],
                  sleep: Callable[[float], None], clock: Callable[[], float],
                  timeout_s: float) -> Tuple[bool, List[str]]:
  """Asks every shard `command` every 0.2 s until done(the answers, in
  shard order) or timeout_s passed; (whether done, the last answers).

  The one wait on what shards say: a replica learning its primary, the
  cluster serving every slot, replicas linking up.
  """
  return waits.Poll(
      lambda: [redis_server.Cli(vm, s.host, s.port, password, command)
               for s in shards],
      done, timeout_s, 0.2, clock, sleep)


def _FieldsOf(answer: str) -> Dict[str, str]:
  """A `key:value` a line answer (CLUSTER INFO, INFO) as a dict."""
  return dict(line.strip().split(':', 1) for line in answer.splitlines()
              if ':' in line and not line.startswith('#'))


def ClusterInfo(vm, shard: redis_shard.Shard, password: str) -> Dict[str, str]:
  return _FieldsOf(redis_server.Cli(vm, shard.host, shard.port, password,
                                    'CLUSTER INFO'))


def WaitForClusterOk(vm, shards: Sequence[redis_shard.Shard], password: str,
                     sleep=time.sleep, clock=time.monotonic,
                     timeout_s: float = 60) -> None:
  def AllOk(infos: List[Dict[str, str]]) -> bool:
    return all(i.get('cluster_state') == 'ok' and
               i.get('cluster_slots_assigned') == str(CLUSTER_SLOTS) and
               i.get('cluster_known_nodes') == str(len(shards))
               for i in infos)

  ok, answers = _AwaitAnswers(
      vm, shards, password, 'CLUSTER INFO',
      lambda answers: AllOk([_FieldsOf(a) for a in answers]),
      sleep, clock, timeout_s)
  if not ok:
    infos = [_FieldsOf(a) for a in answers]
    states = ', '.join(f'{s.port}:{i.get("cluster_state")}'
                       for s, i in zip(shards, infos))
    raise errors.ProcessError(
        f'Redis cluster not ok after {timeout_s:.0f}s ({states}).')


def DbSize(vm, shards: Sequence[redis_shard.Shard], password: str) -> int:
  """Keys held by primaries (replicas would double count)."""
  total = 0
  for shard in shards:
    role = redis_server.Cli(vm, shard.host, shard.port, password, 'ROLE').split()
    if role and role[0] != 'master':
      continue
    total += int(redis_server.Cli(vm, shard.host, shard.port, password, 'DBSIZE').strip())
  return total


def ReplicaOf(vm, replica: redis_shard.Shard, primary: redis_shard.Shard,
              password: str) -> None:
  """Makes `replica` replicate `primary` (it authenticates with masterauth,
  the run's password, set in every shard's config)."""
  redis_server.Cli(vm, replica.host, replica.port, password,
      f'REPLICAOF {shlex.quote(primary.host)} {int(primary.port)}')


def ReplicationInfo(vm, shard: redis_shard.Shard,
                    password: str) -> Dict[str, str]:
  """`INFO replication` of one shard (role, master_link_status, ...)."""
  return _FieldsOf(redis_server.Cli(vm, shard.host, shard.port, password,
                                    'INFO replication'))


def ReplicationProblems(infos: Sequence[Dict[str, str]], primaries: int,
                        replicas_per_primary: int) -> List[str]:
  """What keeps `infos` (one INFO replication per shard) from being
  `primaries` primaries with `replicas_per_primary` linked replicas each;
  empty when replication is up."""
  problems = []
  masters = [i for i in infos if i.get('role') == 'master']
  replicas = [i for i in infos if i.get('role') == 'slave']
  if len(masters) != primaries or len(replicas) != (
      primaries * replicas_per_primary):
    problems.append(f'{len(masters)} primaries and {len(replicas)} replicas, '
                    f'expected {primaries} and '
                    f'{primaries * replicas_per_primary}')
  for info in replicas:
    if info.get('master_link_status') != 'up':
      problems.append(f'replica of {info.get("master_host")}:'
                      f'{info.get("master_port")} has master_link_status '
                      f'{info.get("master_link_status")}')
  for info in masters:
    if info.get('connected_slaves') != str(replicas_per_primary):
      problems.append(f'a primary has connected_slaves '
                      f'{info.get("connected_slaves")}')
  return problems


def WaitForReplication(vm, shards: Sequence[redis_shard.Shard], password: str,
                       primaries: int, replicas_per_primary: int,
                       sleep: Callable[[float], None] = time.sleep,
                       clock: Callable[[], float] = time.monotonic,
                       timeout_s: float = 60) -> List[Dict[str, str]]:
  """Waits until INFO replication shows every replica linked to its primary;
  returns the last INFO of each shard."""
  def Problems(infos):
    return ReplicationProblems(infos, primaries, replicas_per_primary)

  up, answers = _AwaitAnswers(
      vm, shards, password, 'INFO replication',
      lambda answers: not Problems([_FieldsOf(a) for a in answers]),
      sleep, clock, timeout_s)
  infos = [_FieldsOf(a) for a in answers]
  if not up:
    raise errors.ProcessError(
        f'Replication not up after {timeout_s:.0f}s: '
        f'{"; ".join(Problems(infos)[:3])}.')
  return infos
