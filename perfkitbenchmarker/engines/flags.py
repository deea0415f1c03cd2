"""Flags that choose the server engine and its settings (PKB-style names).

Definitions only: `study.options.ServerOptions.FromFlags` is the one place
that reads them. Each engine's settings are recorded in every sample
(`engine`, `engine_version`, `engine_settings`).
"""

from absl import flags

from perfkitbenchmarker import flag_types

flags.DEFINE_string(
    'redis_engine', 'redis',
    'Redis-compatible server to deploy: redis (Redis OSS), valkey, '
    'dragonfly or keydb (the last two on VMs only).')
flag_types.DEFINE_integerlist(
    'redis_server_io_threads', None,
    'io-threads of each Redis OSS or Valkey shard (the engine\'s default '
    'when unset). Upstream PKB\'s list syntax and bounds (1-128); one value '
    'per run here (a flag_matrix runs several).',
    lower_bound=1, upper_bound=128)
flags.DEFINE_integer(
    'redis_replicas_per_primary', 0,
    'Replicas added per primary shard (Redis OSS and Valkey): standalone '
    'shards get a replica on the next server VM (the same VM when there is '
    'one), a cluster is created with --cluster-replicas; '
    '--redis_total_num_processes then counts primaries. Verified with INFO '
    'replication before the preload.', lower_bound=0, upper_bound=16)
flags.DEFINE_integer(
    'dragonfly_proactor_threads', 0,
    'Dragonfly --proactor_threads (0: one per vCPU, its default).',
    lower_bound=0, upper_bound=1024)
flags.DEFINE_enum(
    'dragonfly_cluster_mode', 'none', ['none', 'emulated'],
    'Dragonfly --cluster_mode: emulated answers CLUSTER commands as one '
    'node, for clients in cluster mode.')
flags.DEFINE_integer(
    'keydb_server_threads', 0,
    'KeyDB server-threads (0: its default; KeyDB itself refuses more than '
    '16, its MAX_THREADS).', lower_bound=0, upper_bound=16)
