"""Recomputes a run's published figures from the evidence kept beside them.

  pkb-recompute RUN_DIR        (a checkout: ./scripts/recompute.py RUN_DIR)

Every figure of RUN_DIR/perfkitbenchmarker_results.json that can be derived
(probes, answers, hourly costs, price-performance) is computed again from
the raw files (evidence.py) and the dated price rows, with the parsers and
combining rules the run used (README, "Rechecking a run"). Exit 0 when all
agree within FLOAT_REL / FLOAT_ABS (published numbers are rounded), 1 with
a line per difference (missing evidence is one), 2 for bad input (one line),
130 when interrupted.

A run directory is input someone else made (downloaded from CI, shared): it
is read through regular_files.Directory (its own regular files only, no
symlink followed, every read bounded) and only the raw files a figure needs
are read (evidence.Probe). A file that cannot be read as its kind, or a
record that is not what the run wrote, ends the recomputation in one line
naming it.
"""

import argparse
import dataclasses
import os
import signal
import sys
from typing import Annotated, Dict, List, Optional, Sequence, Tuple, Union

import pydantic

from perfkitbenchmarker import errors
from perfkitbenchmarker import evidence
from perfkitbenchmarker import json_input
from perfkitbenchmarker import measurement
from perfkitbenchmarker import price_performance as pp
from perfkitbenchmarker import pricing
from perfkitbenchmarker import regular_files
from perfkitbenchmarker import run_record
from perfkitbenchmarker import run_signals
from perfkitbenchmarker import terminal_text
from perfkitbenchmarker.load_generators import concurrent
from perfkitbenchmarker.load_generators import memtier_results
from perfkitbenchmarker.load_generators import redis_benchmark_results as rb
from perfkitbenchmarker.publishers import bigquery_schema
from perfkitbenchmarker.search import stats

RESULTS_FILE = bigquery_schema.RESULTS_FILE
# Published numbers are rounded (latencies to 5 decimals, values to 3), so
# two figures agree within FLOAT_ABS or FLOAT_REL of the larger.
FLOAT_REL = 1e-6
FLOAT_ABS = 1e-5
EXIT_OK, EXIT_DIFFERENT, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130
# A run's results file is some hundred rows of a few KB.
MAX_RESULTS_BYTES = 64 << 20
_CAPPED = (pp.CAPPED_THROUGHPUT, pp.PKB_UNDER_1MS)
_LATENCY_KEYS = ('average_latency_ms', 'p50_latency_ms', 'p90_latency_ms',
                 'p95_latency_ms', 'p99_latency_ms')


class BadInput(Exception):
  """The run directory cannot be rechecked (exit 2, one line)."""


_PartKey = Annotated[str, pydantic.StringConstraints(
    pattern=r'^[A-Za-z0-9_][A-Za-z0-9._-]{0,200}$')]
_Positive = Annotated[int, pydantic.Field(gt=0, lt=1 << 31)]


class ProbeManifest(pydantic.BaseModel):
  """evidence.MANIFEST as the load generators write it (memtier.Manifest,
  redis_benchmark's probe), read strictly: a damaged one is refused."""

  model_config = pydantic.ConfigDict(strict=True, frozen=True)

  load_generator: str
  load: Tuple[_Positive, _Positive, _Positive]  # threads, clients, pipeline
  # memtier's JSON outputs ('json' in the file; a BaseModel attribute here).
  json_parts: List[_PartKey] = pydantic.Field([], alias='json')
  stdout: List[_PartKey] = []
  rc: List[_PartKey] = []
  groups: List[str] = []
  # redis-benchmark: each process's connections (one stopped at its time
  # bound printed no report saying them).
  clients: List[_Positive] = []
  test_time_s: Optional[Annotated[float, pydantic.Field(ge=0)]] = None
  warmup_s: Optional[Annotated[float, pydantic.Field(ge=0)]] = None
  staircase: bool = False


@dataclasses.dataclass
class Report:
  """What a recomputation found."""
  checked: int = 0
  probes: int = 0
  prices: int = 0
  differences: List[str] = dataclasses.field(default_factory=list)
  skipped: List[str] = dataclasses.field(default_factory=list)
  # Evidence files named but gone (each one difference).
  missing: List[str] = dataclasses.field(default_factory=list)

  def Compare(self, where: str, what: str, published, recomputed) -> None:
    """Counts one figure; records a difference when they disagree."""
    self.checked += 1
    if not Agree(published, recomputed):
      self.differences.append(f'{where}: {what} published {published}, '
                              f'recomputed {recomputed}')


def Agree(published, recomputed) -> bool:
  # No figure (missing, NaN, infinite) agrees only with no figure.
  a, b = (measurement.FiniteFloat(v) for v in (published, recomputed))
  if a is None or b is None:
    return a is None and b is None
  return abs(a - b) <= max(FLOAT_ABS, FLOAT_REL * max(abs(a), abs(b)))


# What each error of reading figures out of a damaged file means. The
# error's own text is never shown: it quotes the file ("could not convert
# string to float: '<a line of it>'"), which may be another user's secret.
_FAULTS = (
    (KeyError, 'a field the figures need is missing'),
    (ZeroDivisionError, 'a count or a time is zero'),
    (RecursionError, 'it is nested too deeply'),
    (IndexError, 'a line or a list is shorter than the run writes'),
    (TypeError, 'a value is of the wrong kind (a list where a number was)'),
    (AttributeError, 'a value is of the wrong kind (not an object where a '
     'section was)'),
    (OverflowError, 'a number is too large or infinite'),
    (ValueError, 'a value is not in the form the run writes'),
)
_FAULT_KINDS = tuple(kind for kind, _ in _FAULTS)  # What _Damaged names.


class _Fault(ValueError):
  """A fault this module found in a file, in its own words (a field's name,
  never its value)."""


def _Damaged(what: str, error: BaseException) -> BadInput:
  """One line for a file or record that is not what the run wrote: the
  file and the fault, nothing of its content."""
  fault = str(error) if isinstance(error, _Fault) else next(
      (words for kind, words in _FAULTS if isinstance(error, kind)),
      'it is not what the run writes')
  return BadInput(f'{what} cannot be recomputed: {fault}')


# Metadata of a recomputed probe: what its tools said on stderr of
# requests the server did not serve (Unserved).
UNSERVED = 'unserved'


def Unserved(probe: evidence.Probe, manifest: ProbeManifest
             ) -> Optional[str]:
  """What the probe's tools said on their kept stderr (err.<i> beside each
  out.<i>) of requests the server did not serve, in words, or None:
  memtier's error replies and lost connections, redis-benchmark's
  CLUSTERDOWN replies (or a stderr too large to read).
  Their figures count those as served; a run stops at such a probe
  (memtier.RefuseUnserved, redis_benchmark.RefuseErrorReplies), one kept
  by a run from before is no figure to confirm."""
  replies, lost = 0, None
  for key in manifest.stdout:
    err = 'err.' + key[len('out.'):]
    if not key.startswith('out.') or not probe.Has(err):
      continue
    try:
      text = probe.Text(err)
    except regular_files.NotRegular as e:
      # A flood of error lines can pass the bound (a 10 s probe refused
      # every SET wrote 38 MB): what cannot be read is not confirmed.
      return f'its stderr {err} could not be read: {e}'
    if manifest.load_generator == memtier_results.LOAD_GENERATOR:
      replies += memtier_results.ErrorReplies(text)[0]
      lost = lost or memtier_results.ConnectionLost(text)
    else:
      replies += rb.ErrorReplies(text)[0]
  said = ([f'{replies:,} error replies'] if replies else []) + (
      ['a lost connection'] if lost else [])
  return (f'its raw files say the server did not serve every request '
          f'({" and ".join(said)}), which its figures count as served'
          if said else None)


def ProbeMeasurement(directory: regular_files.Directory, rel: str
                     ) -> Optional[measurement.Measurement]:
  """One client VM's probe, measured again from its kept evidence (only the
  parts its manifest names are read); None for a staircase probe, which
  no rule here recomputes.

  Raises:
    evidence.Missing: its manifest or a part the manifest names is gone.
    regular_files.NotRegular: a part cannot be read as a file.
    BadInput: the manifest or a part is not what the run wrote.
  """
  probe = evidence.Probe(directory, rel)
  where = f'{directory.path}/{rel}'
  manifest = _Manifest(probe.Text(evidence.MANIFEST),
                       f'{where}/{evidence.MANIFEST}')
  load = measurement.Load(*manifest.load)
  unserved = Unserved(probe, manifest)
  facts = {UNSERVED: unserved} if unserved else {}
  try:
    if (manifest.load_generator == memtier_results.LOAD_GENERATOR and
        not manifest.staircase):
      return memtier_results.Measure(
          [probe.Text(k) for k in manifest.json_parts],
          [probe.Text(k) if probe.Has(k) else None for k in manifest.stdout],
          load, manifest.test_time_s, manifest.warmup_s or 0, facts)
    if manifest.load_generator == rb.LOAD_GENERATOR:
      seconds = []
      for key in manifest.rc:
        _, start, end = probe.Text(key).split()[:3]
        seconds.append(float(end) - float(start))
      return rb.Measure([probe.Text(k) for k in manifest.stdout],
                        manifest.groups, seconds, load, facts,
                        _StoppedAtBound(probe, manifest))
  except json_input.KeyTwice as e:
    # A key given twice in a JSON part: that part named, as a manifest is.
    part = (manifest.json_parts[e.part] if e.part is not None
            else 'a JSON part')
    raise BadInput(f'{where}/{part}: {e}') from None
  except _FAULT_KINDS as e:
    raise _Damaged(f'the raw files in {where}', e) from None
  if manifest.staircase:
    return None
  raise BadInput(f'{where}/{evidence.MANIFEST}: a load generator this '
                 'command does not know '
                 f'(it knows {memtier_results.LOAD_GENERATOR} and '
                 f'{rb.LOAD_GENERATOR})')


def _Manifest(text: str, where: str) -> ProbeManifest:
  """The probe manifest `text` (the file `where`), read strictly.

  Raises:
    BadInput: not a manifest, or an object of it names a key twice, which
      pydantic's JSON parser reads as the last, silently (a second "load"
      recomputed another load's figures); refused as the results file's
      own reader refuses one (json_input).
  """
  try:
    json_input.Loads(text)
  except json_input.KeyTwice as e:
    raise BadInput(f'{where}: {e}') from None
  except (ValueError, RecursionError):
    pass  # Not JSON, or too deep: pydantic says which, below.
  try:
    return ProbeManifest.model_validate_json(text)
  except pydantic.ValidationError as e:
    raise BadInput(f'{where} is not a probe manifest: '
                   f'{errors.Problems(e, quote=False)}') from None


def _StoppedAtBound(probe: evidence.Probe, manifest: ProbeManifest
                    ) -> List[Optional[int]]:
  """Per process of a redis-benchmark probe, its connections if the probe
  stopped it at its time bound (its kept stop.<i>), else None."""
  stopped = []
  for n, key in enumerate(manifest.stdout):
    part = 'stop.' + key[len('out.'):]
    why = (probe.Text(part).split(' ', 1)[0].strip() if probe.Has(part)
           else '')
    stopped.append(manifest.clients[n] if (
        why == concurrent.STOPPED_AT_BOUND and n < len(manifest.clients))
                   else None)
  return stopped


_Cached = Union[None, measurement.Measurement, evidence.Missing]


def _Cache(cache: Dict[str, _Cached], key: str, compute) -> _Cached:
  """cache[key], computed once (evidence.Missing kept and raised)."""
  if key not in cache:
    try:
      cache[key] = compute()
    except evidence.Missing as e:
      cache[key] = e
  found = cache[key]
  if isinstance(found, evidence.Missing):
    raise found
  return found


def _Probe(directory: regular_files.Directory, raw_output: str,
           load: measurement.Load, cache: Dict[str, _Cached]
           ) -> Optional[measurement.Measurement]:
  """A probe over all its client VMs (measurement.Combine, as the probe
  driver does), from the evidence `raw_output` names (evidence.Missing
  when some of it is gone).

  Each probe directory is read and measured once (cached by its path, as
  is each `raw_output`): every part's read is bounded, but a results file
  may name one directory any number of times, in one `raw_output` or in
  rows that differ, and reading it again each time made the whole
  unbounded (a raw_output naming a probe whose output unzips to 30 MB ten
  times took 33 s, 3 s a time: 2,000 times, an 87 KB results file, was
  some 1.5 hours).
  """
  def Combined():
    parts = [_Cache(cache, f'probe directory {rel}',
                    lambda rel=rel: ProbeMeasurement(directory, rel))
             for rel in raw_output.split(',')]
    if None in parts:
      return None
    combined = measurement.Combine(parts, load)
    # Combine keeps the first client VM's metadata: any VM's word counts.
    said = [str(p.metadata[UNSERVED]) for p in parts
            if p.metadata.get(UNSERVED)]
    metadata = dict(combined.metadata)
    metadata.pop(UNSERVED, None)
    if said:
      metadata[UNSERVED] = '; '.join(said)
    return dataclasses.replace(combined, metadata=metadata)
  return _Cache(cache, f'raw_output {raw_output}', Combined)


def _Count(metadata, key: str, default=None) -> int:
  """A positive whole number of the row (a VM count, threads)."""
  value = metadata.get(key, default)
  number = measurement.FiniteFloat(value)
  if number is None or number < 1 or number != int(number):
    raise _Fault(f'{key} is not a count (a whole number from 1)')
  return int(number)


def _LoadOf(metadata) -> measurement.Load:
  return measurement.Load(_Count(metadata, 'threads'),
                          _Count(metadata, 'clients'),
                          _Count(metadata, 'pipeline', 1))


def _CheckLatencies(report, where, metadata, m) -> None:
  for key in _LATENCY_KEYS:
    if measurement.FiniteFloat(metadata.get(key)) is not None:
      report.Compare(where, key, metadata[key], getattr(m, key))
  _CheckCap(report, where, metadata, m)


def _CheckCap(report, where, metadata, m) -> None:
  """The capped statistic's value and the probe's side of the cap, under
  the statistic the run recorded (a run from before it existed capped the
  average)."""
  cap_ms = measurement.FiniteFloat(metadata.get('latency_cap_ms'))
  if cap_ms is None:
    return
  statistic = str(metadata.get('latency_cap_statistic') or
                  measurement.AVERAGE)
  cap = measurement.LatencyCap(cap_ms, statistic)  # ValueError: damaged
  if 'capped_latency_ms' in metadata:
    report.Compare(where, 'capped_latency_ms', metadata['capped_latency_ms'],
                   m.LatencyMs(statistic))
  published = metadata.get('under_latency_cap')
  if published is not None:
    report.checked += 1
    recomputed = m.UnderCap(cap)
    if str(published).strip().lower() != str(recomputed).lower():
      report.differences.append(
          f'{where}: under_latency_cap ({cap.Describe()}) published '
          f'{published}, recomputed {recomputed}')


def _Prices(metadata, catalog: pricing.PriceCatalog, at: str
            ) -> Tuple[float, float, int]:
  """(server VMs $/hr, whole deployment $/hr, price rows looked up) from the
  dated price rows the samples name; BadInput naming `at` (the file and
  line) when the catalog has no such row.

  A row it lacks is not priced here with pkb's --machine_price (the
  catalog's own advice): recompute takes no price, since a price given
  now would recheck nothing (a run priced so records the price itself, and
  it is read from the run); the run's row is in the catalog of its date."""
  groups = sorted(k[:-len('_price_usd_per_hour')] for k in metadata
                  if k.endswith('_price_usd_per_hour'))
  totals = {}
  for group in groups:
    source = metadata.get(f'{group}_price_source')
    if source == pricing.USER_SOURCE:
      usd = float(metadata[f'{group}_price_usd_per_hour'])
    else:
      basis = metadata.get(f'{group}_pricing_model', pricing.ON_DEMAND)
      if basis not in pricing.BASES:
        raise _Fault(f'{group}_pricing_model {str(basis)[:40]!r} is not a '
                     f'price basis ({", ".join(pricing.BASES)})')
      cloud, region, machine_type = (
          metadata[f'{group}_price_cloud'], metadata[f'{group}_price_region'],
          metadata[f'{group}_machine_type'])
      # For the message: a label is any length.
      names = ' '.join(str(n)[:80] for n in (cloud, machine_type))
      try:
        price = catalog.ForRun(basis).Lookup(cloud, region, machine_type)
      except errors.UsageError:
        raise BadInput(
            f'{at}: the price catalog has no {pricing.BASIS_NAMES[basis]} '
            f'price for {names} in {str(region)[:80]}, which the run '
            f'priced from its row dated {metadata.get(f"{group}_price_date")}'
            '; recompute against the catalog of that date (git checkout the '
            'prices file)') from None
      if price.source_date != metadata.get(f'{group}_price_date'):
        raise BadInput(
            f'{at}: the price row of {names} is dated '
            f'{price.source_date} in the catalog, the run used '
            f'{metadata.get(f"{group}_price_date")}; recompute against the '
            'catalog of that date (git checkout the prices file)')
      usd = price.usd_per_hour
    totals[group] = usd * _Count(metadata, f'{group}_vm_count', 1)
  if 'servers' not in totals:
    raise KeyError('servers_price_usd_per_hour')
  return totals['servers'], sum(totals.values()), len(groups)


def Recompute(run_dir: str,
              catalog: Optional[pricing.PriceCatalog] = None) -> Report:
  """Every figure of the run at run_dir, recomputed; BadInput if there is
  nothing to recheck or the run directory cannot be read as one."""
  if not os.path.isdir(run_dir):
    raise BadInput(f'{run_dir}: no such run directory')
  try:
    with regular_files.Directory(run_dir) as directory:
      return _Recompute(directory, catalog)
  except regular_files.NotRegular as e:
    raise BadInput(str(e)) from None


def _Rows(directory: regular_files.Directory):
  """The rows of the run's results file, one at a time."""
  if directory.Kind(RESULTS_FILE) is None:
    # A run's own directory without one: its samples went to --json_path
    # (or none were written); 'not a run directory' said otherwise.
    why = (': its run wrote no samples here (--json_path put them '
           'elsewhere, or there were none), and recompute reads the run '
           'directory\'s own'
           if directory.Kind(run_record.RECORD_FILE) == 'file' else
           ' (not a run directory)')
    raise BadInput(f'{directory.path}: no {RESULTS_FILE}{why}')
  # NotRegular: one line, from Recompute.
  f = directory.Open(RESULTS_FILE, MAX_RESULTS_BYTES)
  try:
    yield from bigquery_schema.IterRowsOf(
        f, os.path.join(directory.path, RESULTS_FILE))
  except bigquery_schema.ResultsFileError as e:
    raise BadInput(str(e)) from None


def _Recompute(directory: regular_files.Directory,
               catalog: Optional[pricing.PriceCatalog]) -> Report:
  """Recompute over an open run directory."""
  run_dir = directory.path
  catalog = catalog or pricing.PriceCatalog.Load()
  report = Report()
  cache: Dict[str, _Cached] = {}
  names_raw = False
  # Probes since the last answer, by index: an answer aggregates probes of
  # its own search, whose samples come before it (a shard study runs one
  # search after another).
  probes: Dict[int, measurement.Measurement] = {}
  capped_value: Optional[float] = None
  # The whole deployment's $/hr, from the answer's hourly_cost samples (the
  # price_performance sample names only the server VMs' price rows).
  whole_usd: Optional[float] = None
  for number, (fixed, metadata) in enumerate(_Rows(directory), 1):
    if evidence.METADATA_KEY in metadata and not names_raw:
      names_raw = True
      if directory.Kind(evidence.RAW_DIR) != 'directory':
        raise BadInput(f'{run_dir}: no {evidence.RAW_DIR}/ directory of raw '
                       'files')
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
        try:
          m = _Probe(directory, str(raw), _LoadOf(metadata), cache)
        except regular_files.NotRegular as e:
          raise BadInput(f'{e} (named by {where})') from None
        if m is None:
          report.skipped.append(f'{where}: {raw} is not a probe this '
                                'command recomputes (staircase, YCSB)')
          continue
        if metric == pp.THROUGHPUT:
          report.probes += 1
          if m.metadata.get(UNSERVED):
            report.differences.append(f'{where}: {m.metadata[UNSERVED]}')
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
        servers, whole, rows_used = _Prices(
            metadata, catalog, f'{run_dir}/{RESULTS_FILE} {where}')
        report.prices += rows_used
        scope = metadata.get('cost_scope')
        report.Compare(f'{where} ({scope})', 'value', value,
                       whole if scope == 'whole deployment' else servers)
        if scope == 'whole deployment':
          whole_usd = whole
      elif metric == pp.PRICE_PERFORMANCE:
        servers, _, _ = _Prices(metadata, catalog,
                                f'{run_dir}/{RESULTS_FILE} {where}')
        if capped_value is None or whole_usd is None:
          report.skipped.append(f'{where}: its answer or costs were not '
                                'recomputed')
          continue
        per_vm = servers / _Count(metadata, 'servers_vm_count', 1)
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
    except evidence.Missing as e:
      # Once per missing file; the figures that needed it are not rechecked.
      missing = f'{run_dir}/{e.args[0]}'
      if missing in report.missing:
        report.skipped.append(f'{where}: its raw file {missing} is missing')
      else:
        report.missing.append(missing)
        report.differences.append(f'{where}: its raw file {missing} is '
                                  'missing from the run directory')
    except _FAULT_KINDS as e:
      raise _Damaged(f'{run_dir}/{RESULTS_FILE} {where}', e) from None
  if not names_raw:
    raise BadInput(f'{run_dir}: its samples name no raw files (a run from '
                   'before they were kept, or one without probes)')
  if not report.checked and not report.differences:
    raise BadInput(f'{run_dir}: no figure could be recomputed '
                   f'({"; ".join(report.skipped[:2]) or "nothing to check"})')
  return report


def _Indices(metadata) -> List[int]:
  return [int(i) for i in str(metadata.get('aggregated_probe_indices', '')
                              ).split(',') if i]


def _Interrupted(unused_signum, unused_frame) -> None:
  # It only reads: nothing to undo, so it ends at once, wherever it is (a
  # KeyboardInterrupt inside a C extension's start-up or a library's
  # except clause could become another error and a traceback).
  os.write(2, b'pkb-recompute: interrupted\n')
  os._exit(EXIT_INTERRUPTED)  # pylint: disable=protected-access


def Main(argv: Optional[Sequence[str]] = None) -> int:
  signal.signal(signal.SIGINT, _Interrupted)
  # Once the report's reader has gone (`| head -1`), stdout is /dev/null:
  # the exit status and the summary on stderr still say the verdict.
  run_signals.GuardOutput()
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
