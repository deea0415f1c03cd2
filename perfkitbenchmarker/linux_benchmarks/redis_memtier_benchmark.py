"""Redis price-performance: capped throughput and ops/s per $/hr.

Starts --redis_total_num_processes redis-server shards per server VM
(optionally one Redis Cluster), preloads exactly the configured key range,
then searches the load from the client VMs for the most throughput whose
average latency stays under --memtier_latency_cap, and reports it with the
throughput per dollar. Three ways to search:
  * adaptive (default): grows connections geometrically, predicts the cap
    with Little's law and confirms the answer with repeats (mean and 95 %
    interval); see adaptive_search.py and docs/search.md;
  * linear: +--memtier_thread_increment threads per probe, as the published
    T2D study did, kept to reproduce such studies;
  * --memtier_staircase: one memtier run walks the client steps, the best
    step under the cap is confirmed with ordinary probes (staircase_search.py).
--redis_optimize_shards repeats the search for several shard counts per
server VM and reports the best (shard_study.py).

Installing, command building, parsing, the searches and sample building live
in their own modules; this one only wires them.
"""

from typing import List

from absl import flags

from perfkitbenchmarker import capped_search
from perfkitbenchmarker import configs
from perfkitbenchmarker import redis_study as setup
from perfkitbenchmarker import sample
from perfkitbenchmarker import shard_study
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
  capped_search.CheckFlags()
  setup.CheckWorkloadFlags(FLAGS)
  shard_study.CheckFlags(FLAGS)


def DescribePlan(spec) -> List[str]:
  return setup.DescribePlan(spec, FLAGS) + capped_search.SearchPlan()


def EstimatedMinutes(spec) -> float:
  del spec
  return (capped_search.EstimatedSeconds() + 60) / 60


def Prepare(spec):
  """Installs, starts the shards (and cluster), preloads and verifies."""
  setup.PrepareServers(spec, FLAGS)
  if FLAGS.memtier_staircase:
    capped_search.RequireStaircaseGenerator(spec)
  setup.Preload(spec, FLAGS)


def Run(spec) -> List[sample.Sample]:
  """Runs the latency-capped search(es) and returns every sample."""
  capped_search.WarnAboutIgnoredWarmup(spec)
  if FLAGS.redis_optimize_shards:
    shard_study.OptimizeShards(spec, FLAGS, lambda driver, extra, start:
                               capped_search.Search(spec, driver, extra, start))
    return list(spec.emitted)
  result, samples = capped_search.Search(spec, setup.ProbeDriver(spec, FLAGS),
                                         {})
  if result.best is None:
    raise capped_search.NoResultError(result)
  setup.PrintSummary(spec, samples)
  return list(spec.emitted)


def Cleanup(spec):
  """Stops every shard this run started (by PID)."""
  for proc in reversed(spec.state.get('redis_processes', [])):
    proc.Delete()
  spec.state['redis_processes'] = []
