"""Fake upstream (tests only): some of upstream's memtier flags, with
upstream's names, types and defaults (tests/data/upstream_pkb_flags.json).
Upstream defines its list flags through flag_util.DEFINE_integerlist; absl's
list flag stands in."""

from absl import flags

flags.DEFINE_list('memtier_clients', ['50'], 'fake upstream flag')
flags.DEFINE_list('memtier_threads', ['4'], 'fake upstream flag')
flags.DEFINE_list('memtier_pipeline', ['1'], 'fake upstream flag')
flags.DEFINE_string('memtier_ratio', '1:9', 'fake upstream flag')
flags.DEFINE_integer('memtier_data_size', 32, 'fake upstream flag')
flags.DEFINE_integer('memtier_run_duration', None, 'fake upstream flag')
flags.DEFINE_float('memtier_latency_cap', 1.0, 'fake upstream flag')
flags.DEFINE_boolean('memtier_distinct_client_seed', True,
                     'fake upstream flag')
flags.DEFINE_enum('memtier_protocol', 'memcache_binary',
                  ['memcache_binary', 'redis', 'memcache_text'],
                  'fake upstream flag')
flags.DEFINE_integer('memtier_run_count', 1, 'fake upstream flag')
flags.DEFINE_boolean('latency_capped_throughput', False, 'fake upstream flag')
