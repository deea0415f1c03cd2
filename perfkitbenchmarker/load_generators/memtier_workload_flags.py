"""memtier workload flags the published studies need (PKB names where PKB has
them: memtier_distinct_client_seed, memtier_requests, memtier_threads).

Definitions only: `study.workload_options.WorkloadExtras.FromFlags` and
`FixedLoadOptions.FromFlags` read them. Everything here but the fixed-load
mode needs memtier_benchmark; redis-benchmark runs are refused in one line.
"""

from absl import flags

from perfkitbenchmarker import flag_types

flags.DEFINE_boolean(
    'memtier_distinct_client_seed', False,
    'memtier --distinct-client-seed: each client draws its own key sequence '
    '(upstream PKB\'s flag, on there by default; off here so earlier '
    'results stay comparable).')
flags.DEFINE_boolean(
    'memtier_randomize', False,
    'memtier --randomize: seed from the clock, so runs and processes differ.')
flag_types.DEFINE_float(
    'memtier_key_stddev', None,
    'memtier --key-stddev for a G (Gaussian) key pattern (default memtier\'s: '
    'key range / 6).', lower_bound=1, upper_bound=10**12)
flag_types.DEFINE_float(
    'memtier_key_median', None,
    'memtier --key-median for a G key pattern (default: mid-range).',
    lower_bound=0, upper_bound=10**12)
flag_types.DEFINE_float(
    'memtier_ram_hit_ratio', None,
    'Derive --key-stddev so that this share of requests hits the hottest '
    '--memtier_ram_fraction of the keys around the median '
    '(load_generators/key_distribution.py); needs a G key pattern.',
    lower_bound=0, upper_bound=1, above=True)
flag_types.DEFINE_float(
    'memtier_ram_fraction', None,
    'Share of the keys the server holds in RAM (0.2 for RAM:flash 20:80), '
    'for --memtier_ram_hit_ratio.', lower_bound=0, upper_bound=1, above=True)
flags.DEFINE_integer(
    'memtier_requests', None,
    'memtier -n: requests per client instead of --test-time '
    '(--memtier_run_duration, which then only bounds each run: 3 x it + '
    '30 s); fixed-load runs only. Upstream PKB\'s flag, '
    'default 10000 there; unset here, since the capped search times its '
    'probes.', lower_bound=1, upper_bound=10**12)
flags.DEFINE_integer(
    'memtier_processes_per_client', 1,
    'memtier processes per client VM and endpoint, side by side, each '
    'offering the whole threads x clients x pipeline load.',
    lower_bound=1, upper_bound=1024)
flags.DEFINE_boolean(
    'memtier_fixed_load', False,
    'No search: run each of --memtier_threads x --memtier_clients x '
    '--memtier_pipelines for every ratio in --memtier_ratios and report '
    'throughput and latency (the Redis vs Dragonfly study\'s runs).')
flag_types.DEFINE_integerlist(
    'memtier_threads', None,
    'Threads per memtier process for --memtier_fixed_load, an integer list '
    'run once per value (upstream PKB\'s flag; its default is 4, ours is '
    'unset: --memtier_min_threads, the search\'s own thread range).',
    lower_bound=1, upper_bound=1024)
flags.DEFINE_list(
    'memtier_pipelines', [],
    'Pipelines to sweep with --memtier_fixed_load (default '
    '--memtier_pipeline).')
flags.DEFINE_list(
    'memtier_ratios', [],
    'SET:GET ratios to sweep with --memtier_fixed_load (default '
    '--memtier_ratio), e.g. 0:1,1:0 for GET then SET.')
