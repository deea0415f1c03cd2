"""Fake upstream (tests only): some of upstream's Redis server flags, with
upstream's names, types and defaults (tests/data/upstream_pkb_flags.json)."""

from absl import flags

flags.DEFINE_list('redis_server_io_threads', None, 'fake upstream flag')
flags.DEFINE_integer('redis_total_num_processes', 1, 'fake upstream flag')
flags.DEFINE_boolean('redis_aof', False, 'fake upstream flag')
flags.DEFINE_string('redis_eviction_policy', 'noeviction',
                    'fake upstream flag')
