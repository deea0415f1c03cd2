"""Fixed-load runs (--memtier_fixed_load): the given load, no search.

The Redis vs Dragonfly study ran fixed command lines (e.g. `-t 24 -c 1
--pipeline 30 --test-time 180`) and reported throughput and client latency,
not a latency-capped maximum. This runs each load of
`FixedLoadOptions.Runs()` once on every client VM at once, through the
search's own probe driver (so interference is sampled as for a probe), and
publishes each run's `throughput` and `average_latency` samples (probe_role
`fixed`), then the hourly cost samples. Nothing was searched, so there is
no capped or price_performance sample; each run's ops/s per $/hr is in its
metadata.

Takes the frozen options and the deployment, never flags.
"""

import dataclasses
from typing import List, Optional

from perfkitbenchmarker import errors
from perfkitbenchmarker import measurement
from perfkitbenchmarker import verdict as verdict_lib
from perfkitbenchmarker.load_generators import memtier_results
from perfkitbenchmarker.study import deployment as deployment_lib
from perfkitbenchmarker.study import options as options_lib
from perfkitbenchmarker.study import results

ROLE = 'fixed'


def PlanLines(opts: options_lib.RedisStudyOptions,
              tool: Optional[str] = None) -> List[str]:
  """The dry-run lines: every run, how long, how many processes.

  `tool`: the load generator that runs them when it is not memtier (the
  redis-benchmark fallback times its runs and has one set of processes).
  """
  f, g = opts.fixed, opts.generator
  length = (f'-n {g.requests:,} requests per client (at most '
            f'{g.run_duration_s * 3 + 30} s)' if g.requests and not tool else
            f'{g.run_duration_s} s each')
  ratios = ', '.join(f'{s}:{r}' for s, r in f.ratios)
  processes = tool or (f'{g.processes_per_client} memtier process(es) per '
                       'client VM and endpoint')
  return ['Fixed load (no search):',
          f'  {len(f.Runs())} run(s): SET:GET {ratios} x threads '
          f'{",".join(map(str, f.threads))} x {",".join(map(str, f.clients))} '
          'clients x pipeline '
          f'{",".join(map(str, f.pipelines))}; {processes}; {length}']


def CheckGenerator(tool: str, opts: options_lib.RedisStudyOptions) -> None:
  """Refuses, before the preload, a run redis-benchmark cannot split: a
  SET:GET mix needs a SET and a GET process, so at least 2 connections."""
  if tool == memtier_results.LOAD_GENERATOR:
    return
  for (set_ratio, get_ratio), threads, clients, _ in opts.fixed.Runs():
    if set_ratio and get_ratio and threads * clients < 2:
      raise errors.UsageError(
          f'--memtier_fixed_load: {tool} needs at least 2 connections for a '
          'SET:GET mix (a SET and a GET process), but the '
          f'{set_ratio}:{get_ratio} run of {threads} thread(s) x {clients} '
          f'client(s) has {threads * clients}; raise --memtier_clients or use '
          'memtier_benchmark (--memtier_path).')


def EstimatedSeconds(opts: options_lib.RedisStudyOptions,
                     overhead_s: float) -> float:
  """Run time for the dry-run estimate (a request-count run: its bound)."""
  g = opts.generator
  per_run = (g.run_duration_s + g.warmup_s if not g.requests else
             g.run_duration_s)
  return len(opts.fixed.Runs()) * (per_run + overhead_s)


def Run(spec, deployment, opts: options_lib.RedisStudyOptions
        ) -> List[measurement.Measurement]:
  """Runs every fixed load; returns the measurements in order."""
  f, cap = opts.fixed, opts.search.cap
  per_hour = results.ServersPerHour(spec)
  runs = f.Runs()
  tool = deployment.generators[0].NAME
  line = PlanLines(opts, None if tool == memtier_results.LOAD_GENERATOR
                   else tool)[1]
  spec.reporter.Line(
      f'Fixed load: {len(runs)} run(s), no search ({line.strip()}):')
  measured, published = [], []
  for index, ((set_ratio, get_ratio), threads, clients,
              pipeline) in enumerate(runs):
    workload = dataclasses.replace(opts.workload, set_ratio=set_ratio,
                                   get_ratio=get_ratio)
    probe = deployment_lib.ProbeDriver(
        spec, deployment, dataclasses.replace(opts, workload=workload))
    m = probe(measurement.Load(threads, clients, pipeline))
    extra = {'fixed_load': True, 'fixed_load_run': index,
             'memtier_ratio': workload.ratio,
             'ops_per_usd_hour_servers': (m.throughput / per_hour
                                          if per_hour else None)}
    spec.reporter.Line(f'  SET:GET {workload.ratio}')
    published += results.PublishProbe(spec, index, m, cap, ROLE, extra)
    measured.append(m)
  # The cost samples carry the runs' verdict, as a search's carry its
  # answer's: without one they were official under --official beside
  # disturbed or client-bound runs.
  verdict = verdict_lib.FixedLoadVerdict(published)
  spec.EmitSamples(results.CostSamples(
      spec, fixed_load=True, **results.InterferenceMetadata(measured),
      **(verdict.Metadata() if verdict else {})))
  results.WarnAboutLimits(spec, measured, 'runs', 'their throughput')
  quota = spec.metadata.get('servers_cpu_quota')
  if quota:  # As the search's summary says it (README "The 2-core split").
    spec.reporter.Line(results.QuotaWords(
        quota, spec.metadata.get('local_priced_as'), per_hour))
  return measured
