"""Redis price-performance: capped throughput and ops/s per $/hr.

Starts --redis_total_num_processes redis-server shards per server VM
(optionally one Redis Cluster), preloads exactly the configured key range,
then steps the load up from the client VMs until average latency passes
--memtier_latency_cap and reports the latency-capped throughput and
throughput per dollar. Installing, command building, parsing, the search and
sample building live in their own modules; this one only wires them.
"""

from typing import List

from absl import flags

from perfkitbenchmarker import configs
from perfkitbenchmarker import errors
from perfkitbenchmarker import latency_search
from perfkitbenchmarker import price_performance
from perfkitbenchmarker import sample
from perfkitbenchmarker import redis_study as setup
from perfkitbenchmarker.linux_packages import redis_server  # pylint: disable=unused-import  (defines flags)

BENCHMARK_NAME = 'redis_memtier'
BENCHMARK_CONFIG = """
redis_memtier:
  description: >
    Latency-capped Redis throughput and throughput per dollar, measured
    with memtier_benchmark (or redis-benchmark where memtier is missing).
  vm_groups:
    servers:
      vm_spec: &server_spec
        Local:
          machine_type: local
          num_cpus: 1
        GCP:
          machine_type: t2d-standard-16
          zone: us-central1-a
        AWS:
          machine_type: c6gn.16xlarge
          zone: us-east-1a
      vm_count: 1
    clients:
      vm_spec:
        <<: *server_spec
        GCP:
          machine_type: n2-standard-32
          zone: us-central1-a
        AWS:
          machine_type: c6gn.16xlarge
          zone: us-east-1a
      vm_count: 1
  flags: {}
"""

flags.DEFINE_float('memtier_latency_cap', 1.0,
                   'Average-latency cap in ms for the capped throughput.')
flags.DEFINE_enum('memtier_latency_capped_search', 'linear',
                  ['linear', 'adaptive'],
                  'How the load is stepped: linear (the published T2D '
                  'study: +thread_increment threads per probe) or adaptive.')
flags.DEFINE_integer('memtier_min_threads', 1, 'Threads of the first probe.')
flags.DEFINE_integer('memtier_max_threads', 8, 'Most threads a probe uses.')
flags.DEFINE_integer('memtier_thread_increment', 1,
                     'Threads added per probe by the linear search.')
flags.DEFINE_integer('memtier_max_probes', 40, 'Hard bound on probes.')
FLAGS = flags.FLAGS


def GetConfig(user_config):
  """Merges the user's config file and overrides over BENCHMARK_CONFIG."""
  default = configs.LoadYaml(BENCHMARK_CONFIG, BENCHMARK_NAME)[BENCHMARK_NAME]
  config = configs.MergeConfigs(BENCHMARK_NAME, default,
                                user_config.get('file'),
                                user_config.get('overrides', []))
  configs.ApplyConfigFlags(config.get('flags') or {}, FLAGS)
  return config


def CheckPrerequisites(config):
  """Rejects impossible settings before anything is created."""
  del config
  if FLAGS.memtier_latency_cap <= 0:
    raise errors.UsageError(
        f'--memtier_latency_cap={FLAGS.memtier_latency_cap:g} must be above '
        '0 ms (the default is 1).')
  if FLAGS.memtier_min_threads < 1 or FLAGS.memtier_thread_increment < 1:
    raise errors.UsageError(
        '--memtier_min_threads and --memtier_thread_increment must be at '
        'least 1.')
  if FLAGS.memtier_min_threads > FLAGS.memtier_max_threads:
    raise errors.UsageError(
        f'--memtier_min_threads={FLAGS.memtier_min_threads} is above '
        f'--memtier_max_threads={FLAGS.memtier_max_threads}; lower the first '
        'or raise the second.')
  setup.CheckWorkloadFlags(FLAGS)


def DescribePlan(spec) -> List[str]:
  return setup.DescribePlan(spec, FLAGS)


def EstimatedMinutes(spec) -> float:
  return setup.EstimatedMinutes(spec, FLAGS)


def Prepare(spec):
  """Installs, starts the shards (and cluster), preloads and verifies."""
  setup.PrepareServers(spec, FLAGS)
  setup.Preload(spec, FLAGS)


def _Policy():
  if FLAGS.memtier_latency_capped_search == 'adaptive':
    return setup.AdaptivePolicy(FLAGS)
  return latency_search.LinearStepPolicy(
      min_threads=FLAGS.memtier_min_threads,
      max_threads=FLAGS.memtier_max_threads,
      thread_increment=FLAGS.memtier_thread_increment,
      clients=FLAGS.memtier_clients, pipeline=FLAGS.memtier_pipeline)


def Run(spec) -> List[sample.Sample]:
  """Runs the latency-capped search and returns every sample."""
  cap = FLAGS.memtier_latency_cap
  driver = setup.ProbeDriver(spec, FLAGS)

  def OnProbe(record: latency_search.ProbeRecord) -> None:
    m = record.measurement
    spec.reporter.Probe(record.index, m, cap, record.role)
    spec.EmitSamples(price_performance.ProbeSamples(record.index, m, cap,
                                                    record.role))

  spec.reporter.Line(
      f'Searching for the most ops/s under {cap:g} ms average latency '
      f'({FLAGS.memtier_latency_capped_search}, '
      f'{driver.duration_s:g} s probes):')
  result = latency_search.FindLatencyCappedMaximum(
      driver, cap, _Policy(), max_probes=FLAGS.memtier_max_probes,
      on_probe=OnProbe)
  if result.best is None:
    lowest = min(p.measurement.average_latency_ms for p in result.probes)
    raise errors.NoResultError(
        f'Every probe was over the {cap:g} ms cap (lowest average '
        f'{lowest:.3f} ms); start from a lower load, e.g. '
        '--memtier_clients=8 --memtier_min_threads=1.')
  samples = setup.ResultSamples(spec, result, cap, FLAGS)
  spec.EmitSamples(samples)
  setup.PrintSummary(spec, samples)
  return list(spec.emitted)


def Cleanup(spec):
  """Stops every shard this run started (by PID)."""
  for proc in reversed(spec.state.get('redis_processes', [])):
    proc.Delete()
  spec.state['redis_processes'] = []
