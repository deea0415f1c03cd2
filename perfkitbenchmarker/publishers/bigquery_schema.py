"""The BigQuery table's columns and the row conversions both ways (pure).

A row is a PKB sample row (PKB's results table columns) plus two of ours:
`sample_time` TIMESTAMP, the DAY partitioning column (NULLABLE: rows upstream
PKB's `bq load` adds to a shared table lack it), and `metadata` REPEATED
RECORD<key, value>, the labels as pairs so a query filters on a key without
parsing labels (docs/bigquery.md). Values are the labels' text, as in PKB.
`IterRows`, the one reader of results files (the publisher's and compare's),
refuses anything that is not a PKB sample compare can read, naming its file
and line: only regular files, each to the size it had when opened, line by
line; a line over `MAX_LINE_BYTES`, metadata deeper than `MAX_METADATA_DEPTH`,
a value that is not a finite number (or is beyond `MAX_MAGNITUDE`), or a
timestamp before 1970, from 2261 on or more than a day after this machine's
clock is refused.
"""

import codecs
import datetime
import json
import math
import os
import time
import uuid
from typing import (Any, BinaryIO, Callable, Dict, Iterable, Iterator, List,
                    Mapping, Optional, Tuple)

from perfkitbenchmarker import errors
from perfkitbenchmarker import json_input
from perfkitbenchmarker import pricing
from perfkitbenchmarker import regular_files
from perfkitbenchmarker import sample as sample_lib
from perfkitbenchmarker.publishers import publisher

RESULTS_FILE = 'perfkitbenchmarker_results.json'
# (name, type, mode, description); types are the REST API's names.
COLUMNS: Tuple[Tuple[str, str, str, str], ...] = (
    ('metric', 'STRING', 'REQUIRED', 'Sample metric, e.g. throughput.'),
    ('value', 'FLOAT', 'REQUIRED', 'Sample value.'),
    ('unit', 'STRING', 'NULLABLE', 'Unit of value, e.g. ops/sec.'),
    ('timestamp', 'FLOAT', 'REQUIRED', 'Sample time, epoch seconds (PKB).'),
    ('sample_time', 'TIMESTAMP', 'NULLABLE',
     'Same instant as timestamp; the partitioning column (NULL in rows '
     'upstream PKB loaded).'),
    ('test', 'STRING', 'NULLABLE', 'Benchmark name, e.g. redis_memtier.'),
    ('product_name', 'STRING', 'NULLABLE', 'PerfKitBenchmarker.'),
    ('official', 'BOOLEAN', 'NULLABLE', '--official.'),
    ('owner', 'STRING', 'NULLABLE', '--owner or the user who ran it.'),
    ('run_uri', 'STRING', 'REQUIRED', 'The run that produced the sample.'),
    ('sample_uri', 'STRING', 'REQUIRED', 'Unique id of the sample.'),
    ('labels', 'STRING', 'NULLABLE', 'PKB labels |key:value|,|key:value|.'),
    ('metadata', 'RECORD', 'REPEATED', 'The labels as key/value pairs.'),
)
METADATA_FIELDS = (('key', 'STRING', 'REQUIRED', 'Metadata key.'),
                   ('value', 'STRING', 'NULLABLE', 'Value as labels text.'))
PARTITION_COLUMN = 'sample_time'
CLUSTERING = ('test', 'metric', 'run_uri')
# Columns a table made elsewhere (e.g. by PKB's bq load) must have.
CORE_COLUMNS = ('metric', 'value', 'timestamp', 'run_uri', 'sample_uri')
PKB_FIELDS = ('metric', 'value', 'unit', 'timestamp', 'test', 'product_name',
              'official', 'owner', 'run_uri', 'sample_uri')
_REQUIRED = ('metric', 'value', 'timestamp', 'run_uri')
# A PKB sample line is a few KB; metadata values are scalars or small lists.
MAX_LINE_BYTES = 1 << 20
MAX_METADATA_DEPTH = 8
# No measurement, price or time comes near it; a value beyond it overflows
# the arithmetic and axes downstream (a chart's autoscale of 1e308 did).
MAX_MAGNITUDE = 1e300
# Unix seconds of 2261-01-01: pandas' datetimes (nanoseconds) end in 2262.
LATEST_TIMESTAMP = 9_183_110_400
# A sample is stamped when measured, so it is never from this machine's
# future; a day of slack for another machine's clock. One from later (a
# VM's clock set years ahead) became compare's "latest night", ahead of the
# real ones, and each such night pushed a real regression out of
# --recent_nights.
FUTURE_SLACK_SECONDS = 86400


class ResultsFileError(errors.UsageError):
  """A results file that cannot be read as PKB samples."""


def RowLabels(row: Mapping[str, Any]) -> Dict[str, str]:
  """A results-file row's metadata as text, from its `metadata` object
  (--nocollapse_labels) or its |k:v|,|k:v| labels."""
  if row.get('metadata') is None:
    return sample_lib.ParseLabels(row.get('labels') or '')
  return {k: str(v) for k, v in row['metadata'].items()}


def SampleUri(row: Mapping[str, Any]) -> str:
  """The row's sample_uri, or a stable one derived from its content."""
  if row.get('sample_uri'):
    return str(row['sample_uri'])
  canonical = json.dumps(row, sort_keys=True, default=str)
  return str(uuid.uuid5(uuid.NAMESPACE_URL, 'pkb-sample:' + canonical))


def ToTableRow(row: Mapping[str, Any]) -> Dict[str, Any]:
  """A PKB JSON line (checked by SampleMetadata) -> a table row."""
  metadata = RowLabels(row)
  labels = (row.get('labels') or '' if row.get('metadata') is None else
            sample_lib.FormatLabels(metadata))
  when = datetime.datetime.fromtimestamp(float(row['timestamp']),
                                         datetime.timezone.utc)
  official = row.get('official')
  if isinstance(official, str):
    official = official.strip().lower() in ('true', '1')
  return {
      'metric': str(row['metric']),
      'value': float(row['value']),  # Finite: SampleMetadata refuses others.
      'unit': None if row.get('unit') is None else str(row['unit']),
      'timestamp': float(row['timestamp']),
      'sample_time': when.strftime('%Y-%m-%dT%H:%M:%S.%fZ'),
      'test': row.get('test'),
      'product_name': row.get('product_name'),
      'official': None if official is None else bool(official),
      'owner': row.get('owner'),
      'run_uri': str(row['run_uri']),
      'sample_uri': SampleUri(row),
      'labels': labels,
      'metadata': [{'key': k, 'value': v} for k, v in sorted(metadata.items())],
  }


def FromTableRow(row: Mapping[str, Any]) -> Dict[str, Any]:
  """A table row (as the client returns it) -> a PKB JSON line dict."""
  timestamp = row.get('timestamp')
  if timestamp is None and row.get('sample_time') is not None:
    timestamp = row['sample_time'].timestamp()
  labels = row.get('labels')
  if labels is None:
    pairs = row.get('metadata') or []
    labels = sample_lib.FormatLabels({p['key']: p['value'] for p in pairs})
  result = {k: row.get(k) for k in PKB_FIELDS}
  result['timestamp'] = None if timestamp is None else float(timestamp)
  result['labels'] = labels
  return result


def _Depth(value: Any) -> int:
  """Nesting depth of a JSON value (a scalar is 0), walked without recursion."""
  deepest, stack = 0, [(value, 0)]
  while stack:
    item, depth = stack.pop()
    if isinstance(item, dict):
      item = list(item.values())
    if isinstance(item, list):
      deepest = max(deepest, depth + 1)
      if depth + 1 > MAX_METADATA_DEPTH:
        break
      stack.extend((v, depth + 1) for v in item if isinstance(v, (dict, list)))
  return deepest


def _CheckFinite(row: Mapping[str, Any], name: str, where: str) -> None:
  # compare refuses such a sample: a table holding one would be unreadable
  # to it (a --machine_price of 1e400 once made Infinity).
  value = row[name]
  try:
    number = math.nan if isinstance(value, bool) else float(value)
  except (TypeError, ValueError):
    number = math.nan
  except OverflowError:
    # An integer of hundreds of digits (JSON has them): beyond any float.
    number = MAX_MAGNITUDE * (10 if value > 0 else -10)
  if not math.isfinite(number):
    raise ResultsFileError(f'{where}: {name} {str(value)[:40]!r} is not a '
                           'finite number')
  if abs(number) > MAX_MAGNITUDE:
    raise ResultsFileError(f'{where}: {name} {str(value)[:40]!r} is beyond '
                           f'{MAX_MAGNITUDE:g}, not a measurement')


# A run's prices (price_performance.CostSamples, PricePerformanceSample):
# each VM group's price row, checked as a catalog row is when loaded
# (pricing.ValidPrice), and the sums of them, which a price-performance
# figure divides by.
_PRICE_SUFFIX = '_price_usd_per_hour'
_PRICE_TOTALS = ('servers_usd_per_hour_total', 'deployment_usd_per_hour')
_HOURLY_COST = 'hourly_cost'
_PRICE_WORD = 'usd_per_hour'  # In every price key.


def _CheckPrices(row: Mapping[str, Any], metadata: Mapping[str, Any],
                 where: str) -> None:
  """ResultsFileError naming `where` and the field when a price the sample
  records is no price (nan, inf, zero or below: edited or damaged): compare
  would rank by it, recompute would recheck against it."""
  fields = []
  # Most samples name no price: one look at all their keys first (over
  # tests/data/history's run, 9 us a row of SampleMetadata's 27 when each
  # key was looked at; 5 so).
  if _PRICE_WORD in '\0'.join(k for k in metadata if isinstance(k, str)):
    fields = [(k, v) for k, v in metadata.items()
              if isinstance(k, str) and (k.endswith(_PRICE_SUFFIX) or
                                         k in _PRICE_TOTALS)]
  if row.get('metric') == _HOURLY_COST:
    fields.append(('value', row['value']))
  for key, value in fields:
    try:
      number = value if isinstance(value, (int, float)) else float(
          str(value))
    except ValueError:
      number = value  # Said to be no number below.
    try:
      if key.endswith(_PRICE_SUFFIX):
        pricing.ValidPrice(number, key)
      elif isinstance(number, bool) or not isinstance(
          number, (int, float)) or not 0 < number < math.inf:
        raise ValueError(f'{key} {str(value)[:40]!r} is not a price (a '
                         'finite number of dollars per hour above 0)')
    except ValueError as e:
      raise ResultsFileError(f'{where}: {e}; not what a run records (the '
                             'file was edited or damaged)') from None


def _Utc(seconds: Any) -> str:
  return datetime.datetime.fromtimestamp(
      float(seconds), datetime.timezone.utc).strftime('%Y-%m-%d %H:%M UTC')


def SampleMetadata(row: Any, where: str) -> Dict[str, Any]:
  """The metadata of a PKB sample row (its `metadata` object or its parsed
  labels); ResultsFileError naming `where` for anything compare cannot read
  as a sample."""
  if not isinstance(row, dict):
    raise ResultsFileError(f'{where}: not a JSON object')
  missing = [k for k in _REQUIRED if row.get(k) in (None, '')]
  if missing:
    raise ResultsFileError(f'{where}: not a PKB sample (no '
                           f'{", ".join(missing)})')
  _CheckFinite(row, 'value', where)
  _CheckFinite(row, 'timestamp', where)
  if not 0 <= float(row['timestamp']) < LATEST_TIMESTAMP:
    raise ResultsFileError(f'{where}: timestamp {row["timestamp"]!r} is not '
                           'a time from 1970 to 2260 (Unix seconds)')
  now = time.time()
  if float(row['timestamp']) > now + FUTURE_SLACK_SECONDS:
    raise ResultsFileError(
        f'{where}: timestamp {row["timestamp"]!r} is {_Utc(row["timestamp"])},'
        f' more than a day after this machine\'s clock ({_Utc(now)}); a '
        'sample is stamped when it is measured: the clock of the machine '
        'that ran it, or of this one, is wrong')
  metadata = row.get('metadata')
  if metadata is None:
    if not isinstance(row.get('labels'), (str, type(None))):
      raise ResultsFileError(f'{where}: labels is not text; PKB labels are '
                             'one string |key:value|,|key:value|')
    try:
      metadata = sample_lib.ParseLabels(row.get('labels') or '')
    except ValueError as e:
      raise ResultsFileError(f'{where}: not a PKB sample ({e})') from None
  if not isinstance(metadata, dict):
    raise ResultsFileError(f'{where}: metadata is not an object')
  if (any(isinstance(v, (dict, list)) for v in metadata.values()) and
      _Depth(metadata) > MAX_METADATA_DEPTH):
    raise ResultsFileError(f'{where}: metadata nested more than '
                           f'{MAX_METADATA_DEPTH} levels deep; PKB metadata '
                           'is flat')
  _CheckPrices(row, metadata, where)
  return metadata


def IterRows(path: str) -> Iterator[Tuple[Dict[str, Any], Dict[str, Any]]]:
  """(row, SampleMetadata) of each sample of a PKB JSON-lines file, read line
  by line to the size it had when opened (another run may be appending)."""
  yield from IterRowsOf(_OpenRegular(path), path)


def _OpenRegular(path: str) -> BinaryIO:
  try:
    return regular_files.OpenRegular(path)
  except regular_files.NotRegular as e:
    raise ResultsFileError(f'{path}: {e}') from None


def IterRowsOf(f: BinaryIO, path: str
              ) -> Iterator[Tuple[Dict[str, Any], Dict[str, Any]]]:
  """IterRows of a results file already opened (and checked: a regular
  file, e.g. by regular_files.Directory); closes it. `path` names it."""
  with f:
    left, number = os.fstat(f.fileno()).st_size, 0
    while left > 0:
      try:
        line = f.readline(min(left, MAX_LINE_BYTES + 1))
      except OSError as e:
        raise ResultsFileError(f'{path}: {e.strerror}') from None
      if not line:
        return
      left -= len(line)
      number += 1
      where = f'{path}:{number}'
      if len(line) > MAX_LINE_BYTES:
        raise ResultsFileError(f'{where}: a line longer than '
                               f'{MAX_LINE_BYTES:,} bytes is not a PKB sample')
      if number == 1 and line.startswith(codecs.BOM_UTF8):
        # A file saved by an editor that marks UTF-8 (Notepad): JSON's RFC
        # lets a reader ignore the mark, and its line was "not JSON".
        line = line[len(codecs.BOM_UTF8):]
      if not line.strip():
        continue
      try:
        row = json_input.Loads(line.decode('utf-8'))
      except UnicodeDecodeError:
        raise ResultsFileError(f'{where}: not UTF-8 text; expected PKB JSON '
                               'lines') from None
      except json_input.KeyTwice as e:
        raise ResultsFileError(f'{where}: {e}') from None
      except ValueError:
        raise ResultsFileError(f'{where}: not JSON; expected PKB JSON lines'
                               ) from None
      except RecursionError:
        raise ResultsFileError(f'{where}: JSON nested too deeply to be a PKB '
                               'sample') from None
      yield row, SampleMetadata(row, where)


def FindResultsFiles(paths: Iterable[str],
                     linked_dir: Callable[[str], None] = lambda path: None
                     ) -> List[str]:
  """Files as given; directories searched recursively for RESULTS_FILE
  (a symlink to a directory is not followed: `linked_dir` is told)."""
  found = []
  for path in paths:
    if os.path.isdir(path):
      try:
        for root, dirs, files in os.walk(path):
          dirs.sort()
          for name in dirs:
            if os.path.islink(os.path.join(root, name)):
              linked_dir(os.path.join(root, name))
          if RESULTS_FILE in files:
            found.append(os.path.join(root, RESULTS_FILE))
      except RecursionError:
        # os.walk recurses once a level: a tree some hundreds of levels
        # deep (no results tree is) ended in an internal error.
        raise ResultsFileError(
            f'{path}: directories nested too deeply to search (hundreds of '
            'levels; a results tree has a few); give the results '
            'directories or files themselves') from None
    elif os.path.lexists(path):
      found.append(path)  # IterRows reads regular files only.
    else:
      raise ResultsFileError(f'{path}: no such file or directory')
  return found


def IterFiles(path: str,
              not_own: Optional[Callable[[str], None]] = None,
              linked_dir: Callable[[str], None] = lambda path: None
             ) -> Iterator[Tuple[Optional[regular_files.Directory], str, str,
                                 BinaryIO]]:
  """(directory, name, source, open file) of the results file `path`
  (directory None, name and source the path: a regular file only), or of
  every results file under directory `path` (FindResultsFiles; name
  relative to it, source the two joined), each opened as the directory's
  own (regular_files.Directory, as compare reads a tree). One that is not
  (a symlink, a FIFO, another user's hard link) is never followed out of
  it: `not_own` is told one line, or without it a ResultsFileError."""
  found = FindResultsFiles([path], linked_dir)  # A missing path: refused.
  if not os.path.isdir(path):
    yield None, path, path, _OpenRegular(path)
    return
  try:
    directory = regular_files.Directory(path)
  except regular_files.NotRegular as e:
    raise ResultsFileError(str(e)) from None
  with directory:
    for file in found:
      rel = os.path.relpath(file, path)
      try:
        f = directory.Open(rel)
      except regular_files.NotRegular as e:
        if not_own is None:
          raise ResultsFileError(
              f'{e}; give it by name to read it') from None
        not_own(f'skipped {e}; give it by name to read it')
        continue
      yield directory, rel, os.path.join(path, rel), f


def ReadResultsFiles(paths: Iterable[str],
                     run_uri: Optional[str] = None) -> List[Dict[str, Any]]:
  """The PKB rows in `paths` (of run `run_uri` only, when given).

  Rows repeated across or within files (same sample_uri) are kept once.
  """
  rows, seen = [], set()
  for path in paths:
    for _, _, source, f in IterFiles(path):
      for row, _ in IterRowsOf(f, source):
        if run_uri and publisher.ShortRunUri(row['run_uri']) != run_uri:
          continue
        uri = SampleUri(row)
        if uri not in seen:
          seen.add(uri)
          rows.append(row)
  return rows
