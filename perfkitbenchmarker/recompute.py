"""Recomputes a run's published figures from the evidence kept beside them.

  pkb-recompute RUN_DIR        (a checkout: ./scripts/recompute.py RUN_DIR)

Every figure of RUN_DIR/perfkitbenchmarker_results.json that can be derived
(probes, answers, hourly costs, price-performance) is computed again from
the raw files (evidence.py) and the dated price rows, with the parsers and
combining rules the run used (README, "Rechecking a run"). Exit 0 when all
agree within FLOAT_REL / FLOAT_ABS (published numbers are rounded), 1 with
a line per difference, 2 for bad input (one line).
"""

import argparse
import dataclasses
import json
import math
import os
import sys
from typing import Dict, List, Optional, Sequence, Tuple

from perfkitbenchmarker import errors
from perfkitbenchmarker import evidence
from perfkitbenchmarker import measurement
from perfkitbenchmarker import price_performance as pp
from perfkitbenchmarker import pricing
from perfkitbenchmarker import terminal_text
from perfkitbenchmarker.load_generators import memtier_results
from perfkitbenchmarker.load_generators import redis_benchmark_results as rb
from perfkitbenchmarker.results_history import loader
from perfkitbenchmarker.search import stats

RESULTS_FILE = 'perfkitbenchmarker_results.json'
# Published numbers are rounded (latencies to 5 decimals, values to 3), so
# two figures agree within FLOAT_ABS or FLOAT_REL of the larger.
FLOAT_REL = 1e-6
FLOAT_ABS = 1e-5
EXIT_OK, EXIT_DIFFERENT, EXIT_USAGE = 0, 1, 2
_CAPPED = (pp.CAPPED_THROUGHPUT, pp.PKB_UNDER_1MS)
_LATENCY_KEYS = ('average_latency_ms', 'p50_latency_ms', 'p99_latency_ms')


class BadInput(Exception):
  """The run directory cannot be rechecked (exit 2, one line)."""


@dataclasses.dataclass
class Report:
  """What a recomputation found."""
  checked: int = 0
  probes: int = 0
  prices: int = 0
  differences: List[str] = dataclasses.field(default_factory=list)
  skipped: List[str] = dataclasses.field(default_factory=list)

  def Compare(self, where: str, what: str, published, recomputed) -> None:
    """Counts one figure; records a difference when they disagree."""
    self.checked += 1
    if not Agree(published, recomputed):
      self.differences.append(f'{where}: {what} published {published}, '
                              f'recomputed {recomputed}')


def _Number(value) -> Optional[float]:
  try:
    return float(value)
  except (TypeError, ValueError):
    return None


def Agree(published, recomputed) -> bool:
  a, b = _Number(published), _Number(recomputed)
  if a is None or b is None:
    return a is None and b is None
  if math.isnan(a) or math.isnan(b):
    return math.isnan(a) and math.isnan(b)
  return abs(a - b) <= max(FLOAT_ABS, FLOAT_REL * max(abs(a), abs(b)))


def ProbeMeasurement(run_dir: str, rel: str) -> Optional[measurement.Measurement]:
  """One client VM's probe, measured again from its kept evidence; None for
  evidence no rule here recomputes (a staircase run, YCSB)."""
  parts = evidence.Read(run_dir, rel)
  if evidence.MANIFEST not in parts:
    return None
  manifest = json.loads(parts[evidence.MANIFEST])
  load = measurement.Load(*manifest['load'])
  tool = manifest.get('load_generator')
  if tool == memtier_results.LOAD_GENERATOR and not manifest.get('staircase'):
    return memtier_results.Measure(
        [parts[k] for k in manifest['json']],
        [parts.get(k) for k in manifest['stdout']], load,
        manifest.get('test_time_s'), manifest.get('warmup_s') or 0)
  if tool == rb.LOAD_GENERATOR:
    seconds = []
    for key in manifest['rc']:
      _, start, end = parts[key].split()[:3]
      seconds.append(float(end) - float(start))
    return rb.Measure([parts[k] for k in manifest['stdout']],
                      manifest['groups'], seconds, load)
  return None


def _Probe(run_dir: str, raw_output: str, load: measurement.Load,
           cache: Dict[str, Optional[measurement.Measurement]]
           ) -> Optional[measurement.Measurement]:
  """A probe over all its client VMs (measurement.Combine, as the probe
  driver does), from the evidence `raw_output` names."""
  if raw_output not in cache:
    parts = []
    for rel in raw_output.split(','):
      if not os.path.isdir(os.path.join(run_dir, rel)):
        raise FileNotFoundError(rel)
      parts.append(ProbeMeasurement(run_dir, rel))
    cache[raw_output] = (None if None in parts else
                         measurement.Combine(parts, load))
  return cache[raw_output]


def _LoadOf(metadata) -> measurement.Load:
  return measurement.Load(int(metadata['threads']), int(metadata['clients']),
                          int(metadata.get('pipeline', 1)))


def _CheckLatencies(report, where, metadata, m) -> None:
  for key in _LATENCY_KEYS:
    if _Number(metadata.get(key)) is not None:
      report.Compare(where, key, metadata[key], getattr(m, key))


def _Prices(metadata, catalog: pricing.PriceCatalog
            ) -> Tuple[float, float, int]:
  """(server VMs $/hr, whole deployment $/hr, price rows looked up) from the
  dated price rows the samples name."""
  groups = sorted(k[:-len('_price_usd_per_hour')] for k in metadata
                  if k.endswith('_price_usd_per_hour'))
  totals = {}
  for group in groups:
    source = metadata.get(f'{group}_price_source')
    if source == pricing.USER_SOURCE:
      usd = float(metadata[f'{group}_price_usd_per_hour'])
    else:
      basis = metadata.get(f'{group}_pricing_model', pricing.ON_DEMAND)
      price = catalog.ForRun(basis).Lookup(
          metadata[f'{group}_price_cloud'], metadata[f'{group}_price_region'],
          metadata[f'{group}_machine_type'])
      if price.source_date != metadata.get(f'{group}_price_date'):
        raise BadInput(
            f'the price row of {metadata[f"{group}_machine_type"]} is dated '
            f'{price.source_date} in the catalog, the run used '
            f'{metadata.get(f"{group}_price_date")}; recompute against the '
            'catalog of that date (git checkout the prices file)')
      usd = price.usd_per_hour
    totals[group] = usd * int(metadata.get(f'{group}_vm_count', 1))
  if 'servers' not in totals:
    raise KeyError('servers_price_usd_per_hour')
  return totals['servers'], sum(totals.values()), len(groups)


def Recompute(run_dir: str,
              catalog: Optional[pricing.PriceCatalog] = None) -> Report:
  """Every figure of the run at run_dir, recomputed; BadInput if there is
  nothing to recheck."""
  if not os.path.isdir(run_dir):
    raise BadInput(f'{run_dir}: no such run directory')
  path = os.path.join(run_dir, RESULTS_FILE)
  if not os.path.isfile(path):
    raise BadInput(f'{run_dir}: no {RESULTS_FILE} (not a run directory)')
  try:
    rows = list(loader.IterJsonLines(path))
  except loader.LoadError as e:
    raise BadInput(str(e)) from None
  if not any(evidence.METADATA_KEY in r['metadata'] for r in rows):
    raise BadInput(f'{run_dir}: its samples name no raw files (a run from '
                   'before they were kept, or one without probes)')
  if not os.path.isdir(os.path.join(run_dir, evidence.RAW_DIR)):
    raise BadInput(f'{run_dir}: no {evidence.RAW_DIR}/ directory of raw '
                   'files')
  catalog = catalog or pricing.PriceCatalog.Load()
  report = Report()
  cache: Dict[str, Optional[measurement.Measurement]] = {}
  # Probes since the last answer, by index: an answer aggregates probes of
  # its own search, whose samples come before it (a shard study runs one
  # search after another).
  probes: Dict[int, measurement.Measurement] = {}
  capped_value: Optional[float] = None
  # The whole deployment's $/hr, from the answer's hourly_cost samples (the
  # price_performance sample names only the server VMs' price rows).
  whole_usd: Optional[float] = None
  for number, row in enumerate(rows, 1):
    fixed, metadata = row['fixed'], row['metadata']
    metric, value = fixed['metric'], fixed['value']
    where = f'line {number} {metric}'
    if 'probe_index' in metadata:
      where += f' (probe {metadata["probe_index"]})'
    try:
      if metric in (pp.THROUGHPUT, pp.AVERAGE_LATENCY):
        raw = metadata.get(evidence.METADATA_KEY)
        if not raw:
          report.skipped.append(f'{where}: no raw files named')
          continue
        m = _Probe(run_dir, raw, _LoadOf(metadata), cache)
        if m is None:
          report.skipped.append(f'{where}: {raw} is not a probe this '
                                'command recomputes (staircase, YCSB)')
          continue
        if metric == pp.THROUGHPUT:
          report.probes += 1
          report.Compare(where, 'value', value, m.throughput)
          _CheckLatencies(report, where, metadata, m)
          if metadata.get('probe_index') not in (None, 'None'):
            probes[int(metadata['probe_index'])] = m
        else:
          report.Compare(where, 'value', value, m.average_latency_ms)
      elif metric in _CAPPED:
        indices = _Indices(metadata)
        missing = [i for i in indices if i not in probes]
        if not indices or missing:
          report.skipped.append(f'{where}: probes {missing or "?"} it '
                                'aggregates were not recomputed')
          continue
        repeats = [probes[i] for i in indices]
        combined = measurement.CombineRepeats(repeats)
        capped_value = combined.throughput
        report.Compare(where, 'value', value, combined.throughput)
        _CheckLatencies(report, where, metadata, combined)
        if 'throughput_ci95_ops' in metadata:
          _, ci95 = stats.MeanAndCi95([r.throughput for r in repeats])
          report.Compare(where, 'throughput_ci95_ops',
                         metadata['throughput_ci95_ops'], ci95)
      elif metric == pp.HOURLY_COST:
        servers, whole, rows_used = _Prices(metadata, catalog)
        report.prices += rows_used
        scope = metadata.get('cost_scope')
        report.Compare(f'{where} ({scope})', 'value', value,
                       whole if scope == 'whole deployment' else servers)
        if scope == 'whole deployment':
          whole_usd = whole
      elif metric == pp.PRICE_PERFORMANCE:
        servers, _, _ = _Prices(metadata, catalog)
        if capped_value is None or whole_usd is None:
          report.skipped.append(f'{where}: its answer or costs were not '
                                'recomputed')
          continue
        per_vm = servers / int(metadata.get('servers_vm_count', 1))
        report.Compare(where, 'value', value, capped_value / servers)
        for key, figure in (
            ('servers_usd_per_hour_total', servers),
            ('price_performance_per_server_vm', capped_value / per_vm),
            ('deployment_usd_per_hour', whole_usd),
            ('price_performance_whole_deployment', capped_value / whole_usd)):
          report.Compare(where, key, metadata.get(key), figure)
        _CheckLatencies(report, where, metadata, measurement.CombineRepeats(
            [probes[i] for i in _Indices(metadata)]))
        # The next search's, if any.
        probes, capped_value, whole_usd = {}, None, None
    except FileNotFoundError as e:
      report.differences.append(f'{where}: raw files {e.args[0]} are '
                                'missing from the run directory')
    except (KeyError, ValueError, IndexError, json.JSONDecodeError) as e:
      report.differences.append(f'{where}: cannot be recomputed from its '
                                f'raw files ({type(e).__name__}: {e})')
  if not report.checked and not report.differences:
    raise BadInput(f'{run_dir}: no figure could be recomputed '
                   f'({"; ".join(report.skipped[:2]) or "nothing to check"})')
  return report


def _Indices(metadata) -> List[int]:
  return [int(i) for i in str(metadata.get('aggregated_probe_indices', '')
                              ).split(',') if i]


def Main(argv: Optional[Sequence[str]] = None) -> int:
  parser = argparse.ArgumentParser(
      prog='pkb-recompute', description=__doc__.split('\n\n')[0])
  parser.add_argument('run_dir', metavar='RUN_DIR',
                      help='a run directory, e.g. results/runs/<run_uri>')
  parser.add_argument('--verbose', action='store_true',
                      help='also list the figures that could not be rechecked')
  args = parser.parse_args(argv)
  try:
    report = Recompute(args.run_dir)
  except (BadInput, errors.UsageError) as e:
    print(f'pkb-recompute: {terminal_text.Printable(e)}', file=sys.stderr)
    return EXIT_USAGE
  for line in report.differences:
    print(f'DIFFERENT {terminal_text.Printable(line)}')
  if args.verbose:
    for line in report.skipped:
      print(f'not rechecked: {terminal_text.Printable(line)}')
  skipped = (f'; {len(report.skipped)} not rechecked (--verbose lists them)'
             if report.skipped else '')
  summary = (f'{report.checked} figures from {report.probes} probes\' raw '
             f'files and {report.prices} price rows')
  if report.differences:
    print(f'pkb-recompute: {len(report.differences)} difference(s) in '
          f'{summary}{skipped}', file=sys.stderr)
    return EXIT_DIFFERENT
  print(f'pkb-recompute: 0 differences: {summary} agree{skipped}')
  return EXIT_OK


if __name__ == '__main__':
  sys.exit(Main())
