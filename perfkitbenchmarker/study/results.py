"""The study's result samples, sample metadata and summary table.

Extension seam: metadata every sample carries is set in `SetMetadata`; a new
result sample is built in `ResultSamples` from the frozen SearchResult, with
the answer's verdict (verdict.py).
"""

from typing import Any, Dict, List, Optional, Sequence, Tuple

from perfkitbenchmarker import attribution
from perfkitbenchmarker import errors
from perfkitbenchmarker import measurement
from perfkitbenchmarker import price_performance
from perfkitbenchmarker import pricing
from perfkitbenchmarker import sample as sample_lib
from perfkitbenchmarker import steadiness
from perfkitbenchmarker import verdict as verdict_lib
from perfkitbenchmarker.search import driver as search_driver


def SetServerMetadata(spec, deployment, shards_per_vm: int) -> None:
  """Group (with system) and engine metadata, the shards and, on Local, the
  machine type the servers are priced as: every study's, on every sample."""
  spec.metadata.update({
      **spec.GroupMetadata(), **EngineMetadata(deployment),
      'redis_server_version': deployment.engine_version,
      'redis_total_num_processes': shards_per_vm,
      'redis_shards_total': len(deployment.processes),
      'redis_server_cluster_mode': deployment.cluster_mode,
  })
  if spec.can.priced_as_catalog:
    price = spec.GroupPrice('servers')
    spec.metadata['local_priced_as'] = f'{price.cloud}:{price.machine_type}'


def SetMetadata(spec, deployment, opts) -> None:
  """Server (SetServerMetadata) and workload metadata added to every
  sample."""
  SetServerMetadata(spec, deployment, deployment.shards_per_vm)
  workload = opts.workload
  generator = deployment.generators[0]
  spec.metadata.update({
      'redis_primaries': deployment.primaries,
      'load_generator': generator.NAME,
      'load_generator_version': generator.Version(),
      'memtier_ratio': workload.ratio,
      'memtier_data_size': workload.data_size,
      'memtier_key_maximum': workload.key_maximum,
      'memtier_key_pattern': workload.key_pattern,
  })
  # The studies' workload settings, only when used (older series unchanged).
  extras = {'memtier_key_stddev': workload.key_stddev,
            'memtier_key_median': workload.key_median,
            'memtier_distinct_client_seed': workload.distinct_client_seed,
            'memtier_randomize': workload.randomize,
            'memtier_requests': opts.generator.requests,
            'memtier_processes_per_client': (
                opts.generator.processes_per_client
                if opts.generator.processes_per_client > 1 else None)}
  spec.metadata.update({k: v for k, v in extras.items() if v})


def RecordDropped(metadata: Dict[str, Any], dropped: Sequence[str]) -> None:
  """Names in `metadata` the memtier settings a redis-benchmark fallback
  left out, rather than recording them as used (its keys are uniform,
  R:R)."""
  if not dropped:
    return
  metadata['memtier_only_dropped'] = ' '.join(dropped)
  for flag in dropped:
    key = flag[2:].split('=')[0]
    if key == 'memtier_key_pattern':
      metadata[key] = 'R:R'
    else:
      metadata.pop(key, None)


def EngineMetadata(deployment) -> Dict[str, Any]:
  """engine, engine_version, engine_settings (and each setting) and the
  replication layout, for every sample."""
  settings = dict(deployment.engine_settings)
  metadata = {
      'engine': deployment.engine,
      'engine_version': deployment.engine_version,
      'engine_settings': ','.join(
          f'{k}={v}' for k, v in sorted(settings.items())) or 'default',
      'redis_replicas_per_primary': deployment.replicas_per_primary,
  }
  metadata.update({f'engine_{k.replace("-", "_")}': v
                   for k, v in settings.items()})
  if deployment.replicas_per_primary:
    # Deploy waited for INFO replication to show every link up.
    metadata['replication_verified'] = True
  return metadata


def EmitProbe(spec, index: int, m: measurement.Measurement,
              cap: price_performance.Cap, role: str,
              extra: Dict[str, Any]) -> List[sample_lib.Sample]:
  """A probe's samples, each with `extra`; called before the probe is shown:
  a probe on the screen is in the results. Returns them."""
  samples = [s.WithMetadata(**extra) for s in
             price_performance.ProbeSamples(index, m, cap, role)]
  spec.EmitSamples(samples)
  return samples


def PublishProbe(spec, index: int, m: measurement.Measurement,
                 cap: price_performance.Cap,
                 role: str, extra: Dict[str, Any]
                 ) -> List[sample_lib.Sample]:
  """A probe's samples (EmitProbe), then its line; returns the samples."""
  samples = EmitProbe(spec, index, m, cap, role, extra)
  spec.reporter.Probe(index, m, cap, role)
  return samples


def _GroupCosts(spec) -> Tuple[price_performance.GroupCost,
                               List[price_performance.GroupCost]]:
  """(the servers' hourly cost, every other group's): what a study's
  results are priced with."""
  counts = spec.GroupCounts()
  server = price_performance.GroupCost('servers', counts['servers'],
                                       spec.GroupPrice('servers'))
  others = [price_performance.GroupCost(g, counts[g], spec.GroupPrice(g))
            for g in counts if g != 'servers']
  return server, others


def ServersPerHour(spec) -> float:
  """What the server VMs cost an hour (the figure's denominator)."""
  return _GroupCosts(spec)[0].usd_per_hour


def CostSamples(spec, **metadata) -> List[sample_lib.Sample]:
  """The run's cost samples (every group's hourly price), with
  `metadata`."""
  return [s.WithMetadata(**metadata)
          for s in price_performance.CostSamples(*_GroupCosts(spec))]


def ResultSamples(spec, result: search_driver.SearchResult,
                  cap: price_performance.Cap,
                  tags: Optional[Dict[str, Any]] = None,
                  hold: Optional[steadiness.Hold] = None
                  ) -> List[sample_lib.Sample]:
  """Publishes the capped throughput, then the hourly costs and the
  price-performance samples, each with the verdict and `tags` (and whether
  the answer's load held, when it was held); returns them.

  The answer is published before anything is priced: a price that cannot
  be had now (a catalog changed under a resumed run) leaves out the cost
  samples with a warning line, never the answer the search paid for.
  """
  tags = tags or {}
  extra: Dict[str, Any] = {
      'search_policy': result.policy,
      'search_probes': len(result.measured_probes),
      'search_probe_seconds': round(result.probe_seconds, 2),
      'search_stop_reason': result.stop_reason,
      'client_limited': result.client_limited,
  }
  # Every probe the run printed, the holds too: the warnings' 'N of M
  # probes' counts what the console showed.
  measured = [p.measurement for p in result.probes]
  extra.update(InterferenceMetadata(measured))
  # One sample, one set of probes: with confirmation repeats, the value,
  # latencies and load all come from the repeats combined (never the search
  # probe that picked the load, whose selection biases it upwards).
  reported = result.reported
  extra['aggregated_probe_indices'] = ','.join(
      str(i) for i in result.reported_indices)
  extra['chosen_probe_index'] = result.best_index
  if result.confirmed is not None:
    extra['confirmation_repeats'] = len(result.confirmation_probes)
    extra['confirmed_average_latency_ms'] = (
        result.confirmed.average_latency_ms)
  # The interval reached (of the counted repeats, or of every probe at an
  # unconfirmed answer's load) and how many probes the figure rests on.
  if result.reported_ci95 is not None:
    extra['throughput_ci95_ops'] = result.reported_ci95
  extra['answer_probes'] = len(result.reported_indices)
  if result.excluded_probes:
    extra['disturbed_repeats_excluded'] = ','.join(
        str(p.index) for p in result.excluded_probes)
  if hold is not None:
    extra.update(hold.Metadata())
  if result.hold_index is not None:
    extra['hold_probe_index'] = result.hold_index
  # Holds that failed before the answer's (the adaptive search backed off
  # from their loads): their probe indices.
  not_held = [p.index for p in result.probes if p.role == 'hold' and
              not p.under_cap and p.index != result.hold_index]
  if not_held:
    extra['holds_not_held'] = ','.join(map(str, not_held))
  verdict = verdict_lib.OfSearch(result, hold).Metadata()
  extra.update(verdict)
  value = reported.throughput
  samples = [s.WithMetadata(**tags) for s in
             price_performance.CappedSamples(reported, cap, None, extra)]
  spec.EmitSamples(samples)
  try:
    server, others = _GroupCosts(spec)
    priced = [s.WithMetadata(**verdict) for s in
              price_performance.CostSamples(server, others)]
    priced.append(price_performance.PricePerformanceSample(
        value, server, others,
        {**price_performance.MeasurementMetadata(reported),
         **price_performance.CapMetadata(reported, cap), **extra}))
  except (errors.Error, ValueError) as e:
    spec.reporter.Line(
        f'WARNING: the answer is published without its cost: {e} (no '
        f'{price_performance.HOURLY_COST} or '
        f'{price_performance.PRICE_PERFORMANCE} samples).')
  else:
    priced = [s.WithMetadata(**tags) for s in priced]
    spec.EmitSamples(priced)
    samples += priced
  WarnAboutLimits(spec, measured)
  return samples


def InterferenceMetadata(measured: Sequence[measurement.Measurement]
                         ) -> Dict[str, Any]:
  """interference_probes: how many probes were flagged, where any was
  sampled."""
  if not any('foreign_cpu_pct' in m.metadata for m in measured):
    return {}
  return {'interference_probes': sum(
      bool(m.metadata.get('interference')) for m in measured)}


def WarnAboutLimits(spec, measured: Sequence[measurement.Measurement],
                    runs: str = 'probes',
                    figure: str = 'the capped throughput') -> None:
  """One summary line when the load generator was the limit in any of
  `measured` (SearchResult.client_limited), one when any was flagged for
  interference, naming the worst."""
  if any(m.client_saturated for m in measured):
    spec.reporter.Line('WARNING: the load generator was the limit (its CPU '
                       f'or its cgroup\'s quota) in some {runs}; {figure} '
                       'may be the client\'s limit.')
  flagged = [m.metadata['foreign_cpu_pct'] for m in measured
             if m.metadata.get('interference')]
  if flagged:
    spec.reporter.Line(
        f'WARNING: processes foreign to this run used up to '
        f'{max(flagged):g} % of its cores in {len(flagged)} of '
        f'{len(measured)} probes (foreign_cpu_pct; steal time on VMs); the '
        'throughput may be understated.')
  missed = [100 * m.metadata['get_misses'] / m.metadata['get_ops']
            for m in measured
            if m.metadata.get('get_misses') and m.metadata.get('get_ops')]
  if missed:
    spec.reporter.Line(
        f'WARNING: GETs found no key in {len(missed)} of {len(measured)} '
        f'{runs} (up to {max(missed):.3g} % of their GETs; get_misses): '
        'preloaded keys were evicted or expired since, and a miss carries '
        f'no value, so {figure} is of a lighter load than the preloaded '
        "keys'.")


def QuotaWords(quota: float, priced_as: Optional[str],
               usd_per_hour: Optional[float]) -> str:
  """The summary's line on a server held to a CPU quota: what the figure
  is, and what its price is not."""
  price = f' (${usd_per_hour:.4f}/hr)' if usd_per_hour else ''
  return (f'Server CPU: the server was given {quota:g} CPU ({100 * quota:g} '
          '% of a core) by a CPU quota, so the load generator on a core of '
          'its own could drive it to its limit: this is the figure of a '
          f'{quota:g}-CPU server, not of a whole core, priced as a whole '
          f'{priced_as or "machine"}{price}, so its ops/s per $/hr '
          'understates that machine type\'s (README: "The 2-core split").')


def PrintSummary(spec, samples: List[sample_lib.Sample]) -> None:
  by_metric = {s.metric: s for s in samples}
  capped = by_metric[price_performance.CAPPED_THROUGHPUT]
  perf = by_metric.get(price_performance.PRICE_PERFORMANCE)
  machine = spec.vm_groups['servers'][0].machine_type
  quota = spec.metadata.get('servers_cpu_quota')
  if spec.can.priced_as_catalog:
    held = f', server {quota:g} CPU' if quota else ''
    machine = (f'{"local" if spec.can.is_runner_machine else machine}{held} '
               f'(priced as {spec.metadata.get("local_priced_as")})')
  rows = [{
      'machine_type': machine,
      'throughput': capped.value,
      'throughput_ci95': capped.metadata.get('throughput_ci95_ops'),
      'average_latency_ms': capped.metadata.get('average_latency_ms'),
      'p99_latency_ms': capped.metadata.get('p99_latency_ms'),
      'cap_statistic': capped.metadata.get('latency_cap_statistic'),
      'capped_latency_ms': capped.metadata.get('capped_latency_ms'),
      'usd_per_hour': (perf.metadata['servers_usd_per_hour_total']
                       if perf else None),
      'price_performance': perf.value if perf else None,
      'price_basis': (
          f'{pricing.BASIS_NAMES[perf.metadata["servers_pricing_model"]]}, '
          f'{perf.metadata["price_basis"]} '
          f'(x{spec.GroupCounts()["servers"]})' if perf else 'unpriced'),
      'verdict': verdict_lib.WORDS.get(capped.metadata.get(verdict_lib.KEY),
                                       'n/a'),
      'limit': attribution.Short(capped.metadata) or 'n/a',
  }]
  spec.reporter.Summary(rows)
  verdict = verdict_lib.OfMetadata(capped.metadata)
  spec.reporter.Line(f'Verdict: {verdict.Words()}.')
  if quota:
    spec.reporter.Line(QuotaWords(quota, spec.metadata.get('local_priced_as'),
                                  rows[0]['usd_per_hour']))
  if not verdict.confirmed:
    # The samples carrying the verdict; the probes' own samples stay
    # official unless flagged (verdict.IsOfficial), so not "every sample".
    answer = sorted({s.metric for s in samples if verdict_lib.KEY in
                     s.metadata})
    spec.reporter.Line(
        'Not a confirmed server figure: its answer\'s samples (' +
        ', '.join(answer) + ') are not official, '
        'compare leaves it out of rankings, and pkb exits '
        f'{verdict_lib.EXIT_UNCONFIRMED} unless --accept_unconfirmed '
        '(README: "Verdicts").')
