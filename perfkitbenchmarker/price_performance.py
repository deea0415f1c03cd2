"""Samples for probes, the latency-capped result and throughput per dollar.

Pure functions from measurements and prices to `Sample`s; metric names are a
public contract (other tools read them), so they are constants here.

Price basis: price_performance divides the capped throughput of the whole
deployment by the hourly price of ALL server VMs. The per-server-VM figure
(the one some published studies quote) and the whole-deployment figure
(servers + clients) are given in the metadata, never silently swapped.
"""

import dataclasses
from typing import Any, Dict, List, Mapping, Optional, Union

from perfkitbenchmarker import measurement
from perfkitbenchmarker import pricing
from perfkitbenchmarker import sample

THROUGHPUT = 'throughput'
AVERAGE_LATENCY = 'average_latency'
CAPPED_THROUGHPUT = 'latency_capped_throughput'
PKB_UNDER_1MS = 'max_throughput_for_completion_latency_under_1ms'
HOURLY_COST = 'hourly_cost'
PRICE_PERFORMANCE = 'price_performance'
OPS_PER_SEC = 'ops/sec'
PRICE_PERFORMANCE_UNIT = 'ops/s per $/hr'
PRICE_BASIS = 'all server VMs'
# Upstream PKB's time-series samples (sample.CreateTimeSeriesSample, as its
# --memtier_time_series publishes them): value 0, the series in metadata
# `values`, epoch-ms `timestamps`, `interval` seconds; latency series are
# named after memtier's per-second keys.
OPS_TIME_SERIES = 'OPS_time_series'
TIME_SERIES_SUFFIX = '_time_series'
_PERCENTILE_KEYS = {50.0: 'p50.00', 90.0: 'p90.00', 95.0: 'p95.00',
                    99.0: 'p99.00', 99.9: 'p99.90'}


@dataclasses.dataclass(frozen=True)
class GroupCost:
  group: str
  vm_count: int
  price: pricing.HourlyPrice

  @property
  def usd_per_hour(self) -> float:
    return self.vm_count * self.price.usd_per_hour


def MeasurementMetadata(m: measurement.Measurement) -> Dict[str, Any]:
  metadata: Dict[str, Any] = {
      'threads': m.load.threads,
      'clients': m.load.clients,
      'pipeline': m.load.pipeline,
      'connections': m.load.connections,
      'average_latency_ms': round(m.average_latency_ms, 5),
      **{f'{s}_latency_ms': m.LatencyMs(s) for s in measurement.STATISTICS
         if s != measurement.AVERAGE},  # p50_latency_ms .. p99.9_latency_ms
      'probe_duration_s': round(m.duration_s, 3),
      'ops': m.ops,
      'client_saturated': m.client_saturated,
  }
  if m.client_cpu_busy_fraction is not None:
    metadata['client_cpu_busy_pct'] = round(100 * m.client_cpu_busy_fraction,
                                            1)
  metadata.update(m.metadata)
  return metadata


Cap = Union[float, measurement.LatencyCap]  # a bare number caps the average


def CapMetadata(m: measurement.Measurement, cap: Cap) -> Dict[str, Any]:
  """What a capped figure was held to, and its value in that statistic:
  every capped figure's samples carry these, so no reader takes a p99
  figure for an average one."""
  cap = measurement.AsCap(cap)
  return {'latency_cap_ms': cap.ms, 'latency_cap_statistic': cap.statistic,
          'capped_latency_ms': m.LatencyMs(cap.statistic)}


def ProbeSamples(index: int, m: measurement.Measurement, cap_ms: Cap,
                 role: str = 'search') -> List[sample.Sample]:
  metadata = MeasurementMetadata(m)
  metadata.update({'probe_index': index, 'probe_role': role,
                   **CapMetadata(m, cap_ms),
                   'under_latency_cap': m.UnderCap(cap_ms)})
  return [
      sample.Sample(THROUGHPUT, m.throughput, OPS_PER_SEC, metadata),
      sample.Sample(AVERAGE_LATENCY, m.average_latency_ms, 'ms', metadata),
  ]


def CappedSamples(best: measurement.Measurement, cap_ms: Cap,
                  value: Optional[float] = None,
                  extra: Optional[Mapping[str, Any]] = None
                  ) -> List[sample.Sample]:
  """latency_capped_throughput (and PKB's 1 ms metric when the cap is 1 ms
  on the average: upstream's metric is an average completion latency, so a
  percentile cap never publishes under its name).

  Args:
    best: the reported measurement: the confirmation repeats combined
      (SearchResult.reported) or, without repeats, the chosen probe.
    cap_ms: the cap: a LatencyCap, or a number of ms on the average.
    value: the reported throughput when it is not the probe's own (e.g. the
      mean of confirmation repeats).
    extra: search facts (policy, probes, confidence interval).
  """
  cap = measurement.AsCap(cap_ms)
  metadata = {**MeasurementMetadata(best), **CapMetadata(best, cap),
              **(extra or {})}
  throughput = best.throughput if value is None else value
  samples = [sample.Sample(CAPPED_THROUGHPUT, throughput, OPS_PER_SEC,
                           metadata)]
  if cap.is_average and abs(cap.ms - 1.0) < 1e-9:
    samples.append(sample.Sample(PKB_UNDER_1MS, throughput, OPS_PER_SEC,
                                 metadata))
  return samples


def CostSamples(server: GroupCost,
                others: List[GroupCost]) -> List[sample.Sample]:
  deployment = server.usd_per_hour + sum(g.usd_per_hour for g in others)
  base = server.price.Metadata('servers_')
  base['servers_vm_count'] = server.vm_count
  for g in others:
    base.update(g.price.Metadata(f'{g.group}_'))
    base[f'{g.group}_vm_count'] = g.vm_count
  return [
      sample.Sample(HOURLY_COST, server.usd_per_hour, '$/hr',
                    dict(base, cost_scope='server VMs')),
      sample.Sample(HOURLY_COST, deployment, '$/hr',
                    dict(base, cost_scope='whole deployment')),
  ]


def PricePerformanceSample(capped_throughput: float, server: GroupCost,
                           others: List[GroupCost],
                           extra: Optional[Mapping[str, Any]] = None
                           ) -> sample.Sample:
  deployment = server.usd_per_hour + sum(g.usd_per_hour for g in others)
  metadata = {
      **server.price.Metadata('servers_'), **(extra or {}),
      'price_basis': PRICE_BASIS,
      'servers_usd_per_hour_total': server.usd_per_hour,
      'price_performance_per_server_vm':
          capped_throughput / server.price.usd_per_hour,
      'price_performance_whole_deployment': capped_throughput / deployment,
      'deployment_usd_per_hour': deployment,
  }
  return sample.Sample(PRICE_PERFORMANCE,
                       capped_throughput / server.usd_per_hour,
                       PRICE_PERFORMANCE_UNIT, metadata)


def TimeSeriesSamples(m: measurement.Measurement, start_ms: float,
                      extra: Optional[Mapping[str, Any]] = None
                      ) -> List[sample.Sample]:
  """A probe's per-second series as upstream PKB's time-series samples:
  `OPS_time_series` (operations each second, every client process and VM
  summed), `Average Latency_time_series` (their operation-weighted mean)
  and one per percentile the tool gave each second (`p99.00_time_series`:
  the largest process's, as upstream takes the largest client's). Seconds
  the tool did not load from start to end are left out; warm-up seconds
  stay, and `ramp_up_ends` marks where they end. `start_ms`: second 0's
  time (ms since the epoch)."""
  seconds = [s for s in m.per_second if s.complete]
  if not seconds:
    return []
  timestamps = [int(start_ms + 1000 * s.second) for s in seconds]
  metadata: Dict[str, Any] = {**(extra or {}), 'interval': 1}
  warmup = [s for s in seconds if s.warmup]
  if warmup:
    metadata['ramp_up_ends'] = int(start_ms + 1000 * (warmup[-1].second + 1))
  series = [(OPS_TIME_SERIES, 'ops', [s.ops for s in seconds])]
  if all(s.average_latency_ms is not None for s in seconds):
    series.append(('Average Latency' + TIME_SERIES_SUFFIX, 'ms',
                   [round(s.average_latency_ms, 4) for s in seconds]))
  for percentile, key in _PERCENTILE_KEYS.items():
    values = [dict(s.percentiles).get(percentile) for s in seconds]
    if None not in values:
      series.append((key + TIME_SERIES_SUFFIX, 'ms', values))
  return [sample.Sample(metric, 0, unit, dict(
      metadata, values=values, timestamps=timestamps))
          for metric, unit, values in series]
