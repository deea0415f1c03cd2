"""The enterprise_redis_* flags of the redis_enterprise benchmark.

Names, defaults and meanings follow upstream PKB's redis_enterprise module
(the published T2D study ran with them). Flags marked "(this harness)" are
additions. Read only by options.EnterpriseOptions.FromFlags.
"""

from absl import flags

from perfkitbenchmarker import flag_types

flags.DEFINE_string(
    'enterprise_redis_license_file', 'enterprise_redis_license',
    'Accepted for upstream command lines and unused: upstream pushed the '
    'licence to the VMs under this name; here its text goes in the '
    'bootstrap request (--enterprise_redis_license_path).')
flags.DEFINE_string(
    'enterprise_redis_license_path', None,
    'Path of the Redis Enterprise licence file on this machine (required for '
    'a cloud run; you supply it).')
flags.DEFINE_string(
    'enterprise_redis_version', '6.2.4-54',
    'Redis Enterprise version of the installer tarball.')
flags.DEFINE_string(
    'enterprise_redis_tarball', None,
    '(this harness) Path of the Redis Enterprise installer tarball on this '
    'machine, e.g. redislabs-<version>-rhel9-x86_64.tar; required for a '
    'cloud run (you supply it; it is never downloaded).')
flags.DEFINE_string(
    'enterprise_redis_install_dir', None,
    '(this harness) Where install.sh puts Redis Enterprise on the server VMs '
    '(its --install-dir, custom installation directories); default: the '
    "installer's own, /opt/redislabs.")
flags.DEFINE_integer(
    'enterprise_redis_api_port', 9443,
    '(this harness) Port of the Redis Enterprise REST API on the server VMs, '
    'which curl on servers-0 reaches as https://localhost:PORT.',
    lower_bound=1, upper_bound=65535)
flags.DEFINE_boolean(
    'enterprise_redis_tune_on_startup', True,
    'Whether the installer tunes the OS (install.sh system tuning).')
flags.DEFINE_integer(
    'enterprise_redis_proxy_threads', None,
    'Proxy threads per server VM (rladmin tune proxy all threads N).',
    lower_bound=1, upper_bound=1024)
flags.DEFINE_integer(
    'enterprise_redis_shard_count', None,
    'Shards per database; more than 1 makes a sharded database with the '
    'OSS cluster API (memtier --cluster-mode).',
    lower_bound=1, upper_bound=10000)
flags.DEFINE_integer(
    'enterprise_redis_load_records', 1000000,
    'Keys to preload (key range 1..N); each step-up uses the same range.',
    lower_bound=1, upper_bound=10**12)
flags.DEFINE_integer(
    'enterprise_redis_run_records', 1000000,
    'Accepted for upstream command lines and unused: upstream ran N '
    'requests per memtier client per step (-n); here each step runs for '
    '--enterprise_redis_probe_seconds, so a step cannot hang on a slow '
    'server.',
    lower_bound=1, upper_bound=10**12)
flags.DEFINE_integer(
    'enterprise_redis_pipeline', 9, 'memtier --pipeline of each step.',
    lower_bound=1, upper_bound=10000)
flags.DEFINE_integer(
    'enterprise_redis_loadgen_clients', 24,
    'memtier clients (-c) per thread on each client VM.',
    lower_bound=1, upper_bound=10000)
flags.DEFINE_integer(
    'enterprise_redis_max_threads', 40,
    'Most memtier threads per client VM in the step-up.',
    lower_bound=1, upper_bound=1024)
flags.DEFINE_integer(
    'enterprise_redis_min_threads', 18,
    'memtier threads per client VM of the first step.',
    lower_bound=1, upper_bound=1024)
flags.DEFINE_integer(
    'enterprise_redis_thread_increment', 1,
    'memtier threads added per step.', lower_bound=1, upper_bound=1024)
flags.DEFINE_integer(
    'enterprise_redis_latency_threshold', 1100,
    'Average latency in microseconds at which the step-up stops, or 1 ms '
    'when that is lower: the reported answer is the best step under 1 ms, '
    'so upstream\'s default, 1100, stops it at 1 ms.',
    lower_bound=1, upper_bound=60 * 10**6)
flags.DEFINE_boolean(
    'enterprise_redis_pin_workers', False,
    'Pin the proxy worker threads evenly over the NUMA nodes after startup.')
flags.DEFINE_list(
    'enterprise_redis_disable_cpu_ids', None,
    'CPU ids to take offline on the server VMs before the cluster starts '
    '(ids the server VMs lack, or all of them, are refused; on Local '
    'recorded, not applied).')
flags.DEFINE_integer(
    'enterprise_redis_data_size_bytes', 100,
    'Value size in bytes (memtier -d).',
    lower_bound=1, upper_bound=512 * 1024 * 1024)
flags.DEFINE_integer(
    'enterprise_redis_db_count', 1, 'Databases to create on the cluster.',
    lower_bound=1, upper_bound=1000)
flags.DEFINE_boolean(
    'enterprise_redis_db_replication', False,
    'Give each database a replica on another node (doubles its memory).')
flag_types.DEFINE_float(
    'enterprise_redis_memory_size_percentage', 0.80,
    'Share of the memory rladmin reports as provisionable that the '
    'databases may use (0-1].', lower_bound=0, upper_bound=1, above=True)
flags.DEFINE_boolean(
    'enterprise_redis_optimize_throughput', False,
    'Find the best latency-capped throughput for the machine type by '
    'searching shard count and proxy threads.')
flags.DEFINE_integer(
    'enterprise_redis_probe_seconds', 30,
    '(this harness) Seconds each step runs (memtier --test-time); upstream '
    'used 30.', lower_bound=1, upper_bound=24 * 3600)
flags.DEFINE_integer(
    'enterprise_redis_optimizer_max_points', 12,
    '(this harness) Most (shards, proxy threads) points the optimizer '
    'evaluates.', lower_bound=1, upper_bound=1000)
flags.DEFINE_boolean(
    'enterprise_redis_flash', False,
    '(this harness) Redis on Flash: create the databases with flash storage '
    '(bigstore).')
flag_types.DEFINE_float(
    'enterprise_redis_flash_ram_ratio', 0.2,
    '(this harness) RAM share of a flash database (the RoF study used 20:80).',
    lower_bound=0, upper_bound=1, above=True)
flags.DEFINE_integer(
    'enterprise_redis_local_max_records', 1000000,
    '(this harness) On --cloud=Local, preload at most this many keys (a '
    'larger --enterprise_redis_load_records is scaled down, and the samples '
    'say so).', lower_bound=1, upper_bound=10**12)
