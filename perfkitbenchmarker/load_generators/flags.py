"""Workload and load generator flags (PKB's memtier_* names where they exist)."""

from absl import flags

flags.DEFINE_enum('load_generator', 'auto',
                  ['auto', 'memtier', 'redis_benchmark'],
                  'auto: memtier_benchmark when installed, else Debian\'s '
                  'redis-benchmark.')
flags.DEFINE_boolean('redis_benchmark_fallback', False,
                     'With --load_generator=auto and no memtier_benchmark, '
                     'run redis-benchmark without the memtier-only settings '
                     '(each named on the console and in the samples) '
                     'instead of refusing. The local presets set it.')
flags.DEFINE_integer('memtier_run_duration', 2,
                     'Seconds per probe (the published T2D study used 30).',
                     lower_bound=1)
flags.DEFINE_string('memtier_ratio', '1:1', 'SET:GET ratio.')
flags.DEFINE_integer('memtier_data_size', 100, 'Value size in bytes.',
                     lower_bound=1)
flags.DEFINE_integer('memtier_key_minimum', 1, 'Lowest key index.',
                     lower_bound=0)
flags.DEFINE_integer('memtier_key_maximum', 100000,
                     'Highest key index (inclusive); preload writes every key '
                     'from the minimum to this.', lower_bound=1)
flags.DEFINE_string('memtier_key_pattern', 'R:R',
                    'Key pattern of the probes (SET:GET), e.g. R:R, G:G.')
flags.DEFINE_enum('memtier_load_key_pattern', 'P:P', ['P:P', 'S:S'],
                  'Preload key pattern: P:P splits the range across '
                  'threads, S:S walks it sequentially.')
flags.DEFINE_integer('memtier_clients', 32, 'Connections per thread.',
                     lower_bound=1)
flags.DEFINE_integer('memtier_pipeline', 1, 'Requests in flight per '
                     'connection.', lower_bound=1)
flags.DEFINE_integer('memtier_warmup_seconds', 0,
                     'Leading seconds of each probe left out of its figures '
                     '(kept, tagged as warm-up).', lower_bound=0)
