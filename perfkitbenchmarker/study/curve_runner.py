"""The latency-throughput curve the study runs after its search.

Each point offers the answer's load (its connections, threads and
pipeline) at a fixed rate below the answer's throughput through the load
generator's rate limiter (latency_curve.py plans the rates and names a
point that fell short), and is published like any probe, with probe role
`curve`, the moment it ends. Takes the frozen options, never flags.

Extension seam: a load generator with a rate limiter of its own sets
`RATE_LIMITS` and honours `Load.rate_per_connection`; nothing here changes.
"""

import dataclasses
from typing import Any, Dict, List

from perfkitbenchmarker import latency_curve
from perfkitbenchmarker import measurement
from perfkitbenchmarker.load_generators import driver as driver_lib
from perfkitbenchmarker.search import driver as search_driver
from perfkitbenchmarker.study import options as options_lib
from perfkitbenchmarker.study import results


def RateLimitedConnections(deployment) -> int:
  """Connections memtier's limiter counts per client connection: in a
  cluster each client opens one per primary and each has its own limit
  (cluster_client.cpp: a connection sends the keys of its own slots)."""
  return deployment.primaries if deployment.cluster_mode else 1


def RunCurve(spec, driver: driver_lib.ProbeDriver,
             opts: options_lib.RedisStudyOptions,
             result: search_driver.SearchResult, extra: Dict[str, Any],
             first_index: int, per_connection: int = 1
             ) -> List[measurement.Measurement]:
  """The curve's probes under `result`'s answer, each published (samples,
  then its line) as it ends, numbered from `first_index`, each client
  connection counted `per_connection` times (RateLimitedConnections); none
  without an answer, with the curve off, or with a load generator that
  cannot hold a rate (one line says so)."""
  if not opts.curve.enabled or result.best is None:
    return []
  unable = sorted({g.NAME for g in driver.generators if not g.RATE_LIMITS})
  if unable:
    spec.reporter.Line(
        f'Curve: none: {", ".join(unable)} has no rate limiter (no rate '
        'option in its --help), so it cannot offer a fixed rate; '
        'memtier_benchmark draws the curve.')
    return []
  driver = driver.WithDuration(
      opts.curve.ProbeSeconds(driver.duration_s))
  answer = result.reported
  points = latency_curve.PlanPoints(
      answer.throughput,
      latency_curve.ProbeConnections(answer, per_connection),
      opts.curve.percents)
  spec.reporter.Line(
      f'Curve under the answer ({answer.throughput:,.0f} ops/s at '
      f'{answer.load.Describe()}): {len(points)} '
      f'probe{"" if len(points) == 1 else "s"} at fixed offered '
      'rates, memtier --rate-limiting per connection, '
      f'{driver.duration_s:g} s each:')
  measured = []
  for i, point in enumerate(points):
    load = dataclasses.replace(answer.load,
                               rate_per_connection=point.rate_per_connection)
    m = driver(load)
    m = dataclasses.replace(m, metadata={
        **m.metadata, **latency_curve.CurveMetadata(point, m)})
    index = first_index + i
    # Published before it is shown, as every probe: on the screen is in
    # the results.
    results.EmitProbe(spec, index, m, opts.search.cap, latency_curve.ROLE,
                      extra)
    spec.reporter.CurvePoint(index, m, point.percent, point.offered_ops,
                             opts.search.cap_statistic)
    measured.append(m)
  return measured
