"""Workload and load generator flags (PKB's memtier_* names where they exist)."""

from absl import flags

from perfkitbenchmarker import flag_types

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
                     'Seconds per probe (the published T2D study used 30). '
                     'Upstream PKB leaves it unset and counts requests '
                     '(--memtier_requests); the capped search times its '
                     'probes, 2 s each by default.',
                     lower_bound=1, upper_bound=24 * 3600)
flags.DEFINE_string('memtier_ratio', '1:1',
                    'SET:GET ratio (upstream PKB: 1:9; ours 1:1, the '
                    'published studies\' mix).')
flags.DEFINE_integer('memtier_data_size', 100,
                     'Value size in bytes (upstream PKB: 32; ours 100, the '
                     'published studies\' size).',
                     lower_bound=1, upper_bound=512 * 1024 * 1024)
flags.DEFINE_integer('memtier_key_minimum', 1, 'Lowest key index.',
                     lower_bound=0, upper_bound=10**12)
flags.DEFINE_integer('memtier_key_maximum', 100000,
                     'Highest key index (inclusive); preload writes every key '
                     'from the minimum to this. Upstream PKB: 10,000,000; '
                     'ours 100,000, so a Local preload takes seconds.',
                     lower_bound=1, upper_bound=10**12)
flags.DEFINE_string('memtier_key_pattern', 'R:R',
                    'Key pattern of the probes (SET:GET), e.g. R:R, G:G.')
flags.DEFINE_enum('memtier_load_key_pattern', 'P:P', ['P:P', 'S:S'],
                  'Preload key pattern: P:P splits the range across '
                  'threads, S:S walks it sequentially.')
flag_types.DEFINE_integerlist(
    'memtier_clients', [32],
    'Connections per thread: the capped search\'s starting load (one value), '
    'or a list --memtier_fixed_load runs once per value. Upstream PKB\'s '
    'integer list; its default is 50 (ours 32: the searches start there).',
    lower_bound=1, upper_bound=10000)
flag_types.DEFINE_integerlist(
    'memtier_pipeline', [1],
    'Requests in flight per connection: one value for a capped search, or a '
    'list --memtier_fixed_load runs once per value (upstream PKB\'s integer '
    'list, same default).', lower_bound=1, upper_bound=10000)
flags.DEFINE_integer('memtier_warmup_seconds', 0,
                     'Leading seconds of each probe left out of its figures '
                     '(kept, tagged as warm-up).',
                     lower_bound=0, upper_bound=24 * 3600)
