"""Replicas of the primary shards (Redis OSS and Valkey).

--redis_replicas_per_primary=R adds R replicas to every primary. Standalone:
the replicas of server VM i's primaries run on server VM i+1 (wrapping; the
same VM when there is only one), each made a replica with REPLICAOF. Cluster
mode: the replica processes join `redis-cli --cluster create
--cluster-replicas R`, which places them on other hosts where it can.
deployment.StartShards then waits (engine.VerifyReplication) until every
link is up, before the preload. Replicas start after every primary, so the primaries come first in
the run record and the deployment (the load goes to primaries only).

Extension seam: `ReplicaVmIndex` is the placement rule (pure); an engine
supports replicas by implementing `AttachReplica` and `VerifyReplication`.
"""

from typing import Callable, List, Sequence

from perfkitbenchmarker import redis_shard


def ReplicaVmIndex(primary_vm: int, server_vms: int) -> int:
  """The server VM that holds the replicas of `primary_vm`'s primaries."""
  return (primary_vm + 1) % server_vms


def StartReplicas(engine, servers: Sequence, primaries: Sequence,
                  shards_per_vm: int, replicas: int, password: str,
                  cluster_mode: bool, shard_options: Callable, record,
                  start_port: int) -> List:
  """Starts `replicas` replicas per primary (`primaries` in VM order,
  `shards_per_vm` each; `shard_options(vm)` their ShardOptions); standalone
  ones are attached with REPLICAOF. Returns their run-record resources."""
  started = []
  for i, vm in enumerate(servers):
    own = primaries[i * shards_per_vm:(i + 1) * shards_per_vm]
    host = servers[ReplicaVmIndex(i, len(servers))]
    new = engine.StartShards(host, len(own) * replicas, password,
                             shard_options(host), record, start_port)
    started.extend(new)
    if not cluster_mode:
      for j, replica in enumerate(new):
        engine.AttachReplica(host, redis_shard.Shard.Of(replica),
                             redis_shard.Shard.Of(own[j % len(own)]), password)
  return started
