"""The redis_enterprise study's steps, shared by its Local and cloud runs.

Seam: the benchmark's workload expressed as redis_memtier's study options
(`StudyOptions`, no flags read), one thread walk through the study's search
runner (`Search`), and the optimizer's answer reported as a sample
(`Report`). enterprise/local_run.py and enterprise/cloud_run.py drive them;
linux_benchmarks/redis_enterprise_benchmark.py only wires PKB's contract.
"""

from typing import Dict, Optional

from perfkitbenchmarker import errors
from perfkitbenchmarker import sample
from perfkitbenchmarker import verdict
from perfkitbenchmarker.enterprise import optimizer
from perfkitbenchmarker.enterprise import options as options_lib
from perfkitbenchmarker.load_generators import base
from perfkitbenchmarker.study import options as study_options
from perfkitbenchmarker.study import results
from perfkitbenchmarker.study import search_options
from perfkitbenchmarker.study import search_runner


def StudyOptions(opts: options_lib.EnterpriseOptions, records: int,
                  min_threads: int, max_threads: int,
                  shards_per_vm: int = 1) -> study_options.RedisStudyOptions:
  """The redis_memtier study's options for this workload (no flags read)."""
  steps = len(opts.Steps(min_threads, max_threads))
  return study_options.RedisStudyOptions(
      # From --redis_start_port as on a cloud (Local's stand-in shards took
      # the study's default, 7001, whatever it said).
      server=study_options.ServerOptions(
          cluster_mode=opts.cluster_api, shards_per_vm=shards_per_vm,
          start_port=opts.database_port),
      workload=base.Workload(
          set_ratio=1, get_ratio=1, data_size=opts.data_size_bytes,
          key_minimum=1, key_maximum=records, key_pattern='R:R',
          cluster_mode=opts.cluster_api),
      generator=study_options.GeneratorOptions(
          choice='auto' if opts.local else 'memtier',
          memtier_path=opts.memtier_path, load_key_pattern='S:S',
          run_duration_s=opts.probe_seconds, clients=opts.loadgen_clients,
          pipeline=opts.pipeline),
      search=search_options.SearchOptions(
          cap_ms=opts.cap_ms, policy='linear', min_threads=min_threads,
          max_threads=max_threads, thread_increment=opts.thread_increment,
          max_probes=steps, confirm_repeats=0),
      shards=search_options.ShardSearchOptions())


def Search(spec, study, probe_driver, extra: Dict) -> Optional[float]:
  result, samples = search_runner.Search(spec, probe_driver, study, extra)
  if result.best is None:
    spec.reporter.Line(f'  no step held under {study.search.cap_ms:g} ms.')
    return None
  results.PrintSummary(spec, samples)
  return result.reported.throughput


def NoResult(opts) -> str:
  return (f'no step held average latency under {opts.cap_ms:g} ms; start '
          'lower (--enterprise_redis_min_threads) or use fewer clients '
          '(--enterprise_redis_loadgen_clients).')


def Report(spec, opts: options_lib.EnterpriseOptions,
           outcome: optimizer.OptimizerResult) -> None:
  if outcome.best is None:
    raise errors.NoLoadUnderCapError(NoResult(opts))
  shards, proxies = outcome.best.point
  spec.reporter.Line(
      f'Optimizer: best {outcome.best.throughput:,.0f} ops/s at {shards} '
      f'shard(s) x {proxies or "-"} proxy thread(s) after '
      f'{len(outcome.evaluations)} point(s) ({outcome.stop_reason}).')
  spec.EmitSamples([sample.Sample(
      'optimized_latency_capped_throughput', outcome.best.throughput,
      'ops/sec', {'db_shard_count': shards, 'redis_proxy_threads': proxies,
                  'optimizer_points': len(outcome.evaluations),
                  'optimizer_stop_reason': outcome.stop_reason,
                  'optimizer_path': ';'.join(
                      f'{e.point[0]}x{e.point[1]}:'
                      f'{e.throughput or 0:.0f}'
                      for e in outcome.evaluations),
                  **_AnswerVerdict(spec, outcome.best.throughput, shards)})])


def _AnswerVerdict(spec, throughput: float, shards: int) -> Dict[str, str]:
  """The verdict of the best point's answer (its capped sample), so that
  the optimized figure, the same answer, is no more official than it: a
  single-probe step-up is never confirmed (README: "Verdicts")."""
  for s in reversed(spec.published):
    if (s.metric == verdict.CAPPED_METRIC and s.value == throughput and
        s.metadata.get('db_shard_count') == shards):
      return {k: s.metadata[k] for k in (
          verdict.KEY, verdict.REASON_KEY, verdict.FLAGS_KEY)
              if k in s.metadata}
  return {verdict.KEY: verdict.UNCONFIRMED, verdict.FLAGS_KEY:
          verdict.UNCONFIRMED, verdict.REASON_KEY: 'no answer of the best '
          'point was published'}
