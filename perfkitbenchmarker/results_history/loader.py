"""Loads PKB samples from any source into one typed pandas DataFrame.

Sources:
  * a directory: searched recursively for `perfkitbenchmarker_results.json`;
    a `run_record.json` beside a results file adds the run's command line;
  * a file of PKB JSON lines, with labels collapsed (`|key:value|,...`, the
    default) or as a `metadata` object (`--nocollapse_labels`);
  * a BigQuery table, read through
    `perfkitbenchmarker.publishers.bigquery_publisher.ReadRows(table, client)`
    (imported only when asked for).

Seams: a new source kind is a function returning row dicts shaped like one
PKB JSON line (`metric, value, unit, timestamp, run_uri, ...` plus `labels`
or `metadata`); `RowsToFrame` does the rest. Rows are input: anything that is
not a PKB sample is refused with `LoadError` naming the file and line.

The frame has one row per sample: PKB's fixed fields, `timestamp` as a UTC
datetime, then one column per metadata key (a key that collides with a fixed
field gets a `meta_` prefix). Each metadata column is typed as a whole:
booleans when every value is True/False, numbers when every value parses as
one, strings otherwise.
"""

import importlib
import json
import os
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence

import pandas as pd

from perfkitbenchmarker.publishers import publisher

RESULTS_FILE = 'perfkitbenchmarker_results.json'
RUN_RECORD_FILE = 'run_record.json'
RUN_RECORD_FORMAT_VERSIONS = (1,)
FIXED_FIELDS = ('metric', 'value', 'unit', 'timestamp', 'test',
                'product_name', 'official', 'owner', 'run_uri', 'sample_uri')
REQUIRED_FIELDS = ('metric', 'value', 'timestamp', 'run_uri')
# Columns the loader adds itself.
SOURCE_COLUMN = 'source'
COMMAND_LINE_COLUMN = 'command_line'
BIGQUERY_MODULE = 'perfkitbenchmarker.publishers.bigquery_publisher'


class LoadError(Exception):
  """Input that is not a readable set of PKB samples (exit 2 in compare)."""


def ParseLabels(labels: str) -> Dict[str, str]:
  """PKB's collapsed labels `|k:v|,|k:v|` -> {k: v} (values stay strings).

  Values may contain ',' and ':' (e.g. `test_rps:SET=1,GET=2`), so items are
  split on the `|,|` separator and each on its first ':'.
  """
  text = labels.strip()
  if not text:
    return {}
  if not (text.startswith('|') and text.endswith('|')):
    raise ValueError(f'labels do not look like |key:value|,...: {text[:40]!r}')
  result = {}
  for item in text[1:-1].split('|,|'):
    key, sep, value = item.partition(':')
    if not sep or not key:
      raise ValueError(f'label item without key:value: {item[:40]!r}')
    result[key] = value
  return result


def _Normalize(row: Dict[str, Any], where: str) -> Dict[str, Any]:
  """One PKB row (labels or metadata form) -> fixed fields + metadata dict."""
  if not isinstance(row, dict):
    raise LoadError(f'{where}: not a JSON object')
  missing = [f for f in REQUIRED_FIELDS if f not in row]
  if missing:
    raise LoadError(f'{where}: not a PKB sample (no {", ".join(missing)})')
  metadata = row.get('metadata')
  if metadata is None:
    try:
      metadata = ParseLabels(row.get('labels') or '')
    except ValueError as e:
      raise LoadError(f'{where}: {e}') from None
  elif isinstance(metadata, str):  # A table may hold the object as JSON text.
    try:
      metadata = json.loads(metadata)
    except ValueError:
      raise LoadError(f'{where}: metadata is not a JSON object') from None
  if not isinstance(metadata, dict):
    raise LoadError(f'{where}: metadata is not an object')
  fixed = {f: row.get(f) for f in FIXED_FIELDS}
  return {'fixed': fixed, 'metadata': metadata}


def ReadJsonLines(path: str) -> List[Dict[str, Any]]:
  """Rows of one PKB JSON-lines file; LoadError on anything else."""
  rows = []
  try:
    with open(path, encoding='utf-8') as f:
      for number, line in enumerate(f, 1):
        if not line.strip():
          continue
        where = f'{path}:{number}'
        try:
          row = json.loads(line)
        except ValueError:
          raise LoadError(f'{where}: not JSON; expected PKB JSON lines') from None
        rows.append(_Normalize(row, where))
  except UnicodeDecodeError:
    raise LoadError(f'{path}: not a text file of PKB JSON lines') from None
  except OSError as e:
    raise LoadError(f'{path}: {e.strerror}') from None
  return rows


def ReadCommandLine(results_path: str) -> Optional[str]:
  """The command line from the run record beside a results file, if any.

  The record is input too: an unknown format version or a malformed record is
  ignored (the command line is then "not recorded"), never trusted.
  """
  record_path = os.path.join(os.path.dirname(results_path), RUN_RECORD_FILE)
  try:
    with open(record_path, encoding='utf-8') as f:
      record = json.load(f)
  except (OSError, ValueError):
    return None
  if (not isinstance(record, dict) or
      record.get('format_version') not in RUN_RECORD_FORMAT_VERSIONS):
    return None
  argv = (record.get('info') or {}).get('argv')
  if not isinstance(argv, list) or not argv:
    return None
  words = [os.path.basename(str(argv[0]))] + [str(a) for a in argv[1:]]
  if words[0] == 'pkb.py':
    words[0] = './pkb.py'
  return ' '.join(words)


def FindResultFiles(directory: str) -> List[str]:
  """Every results file under a directory, in a stable order."""
  found = []
  for root, dirs, files in os.walk(directory):
    dirs.sort()
    if RESULTS_FILE in files:
      found.append(os.path.join(root, RESULTS_FILE))
  return found


def ReadBigQuery(table: str, project: Optional[str] = None,
                 client: Any = None,
                 read_rows: Optional[Callable[..., list]] = None
                ) -> List[Dict[str, Any]]:
  """Rows of a BigQuery table, through the BigQuery publisher's reader."""
  if read_rows is None:
    try:
      module = importlib.import_module(BIGQUERY_MODULE)
    except ImportError as e:
      raise LoadError(f'reading BigQuery needs {BIGQUERY_MODULE} ({e})') from None
    read_rows = module.ReadRows
  if client is None:
    try:
      from google.cloud import bigquery  # pylint: disable=g-import-not-at-top
      client = bigquery.Client(project=project)
    except Exception as e:  # pylint: disable=broad-except
      raise LoadError(f'no BigQuery client for {table}: {e}') from None
  try:
    raw = read_rows(table, client)
  except Exception as e:  # pylint: disable=broad-except
    raise LoadError(f'reading BigQuery table {table} failed: '
                    f'{str(e).splitlines()[0] if str(e) else type(e).__name__}'
                   ) from None
  rows = []
  for number, row in enumerate(raw, 1):
    row = dict(row)
    if not isinstance(row.get('timestamp'), (int, float, type(None))):
      row['timestamp'] = pd.Timestamp(row['timestamp']).timestamp()
    normalized = _Normalize(row, f'{table} row {number}')
    normalized['source'] = f'bigquery:{table}'
    rows.append(normalized)
  return rows


def _ColumnName(key: str) -> str:
  if key in FIXED_FIELDS or key in (SOURCE_COLUMN, COMMAND_LINE_COLUMN):
    return 'meta_' + key
  return key


def _AsText(value: Any) -> Any:
  """Metadata values as the text PKB's labels would hold (None stays None)."""
  if value is None or isinstance(value, str):
    return value
  if isinstance(value, (list, dict)):
    return json.dumps(value, sort_keys=True)
  return str(value)


def TypeColumn(column: pd.Series) -> pd.Series:
  """Booleans, numbers or strings, decided for the whole column."""
  present = column.dropna()
  if present.empty:
    return column
  text = present.astype(str)
  if text.isin(['True', 'False', 'true', 'false']).all():
    return column.map({'True': True, 'true': True, 'False': False,
                       'false': False}).astype('boolean')
  numbers = pd.to_numeric(text, errors='coerce')
  if numbers.notna().all() and not text.str.strip().eq('').any():
    return pd.to_numeric(column, errors='coerce')
  return column


def RowsToFrame(rows: Sequence[Dict[str, Any]]) -> pd.DataFrame:
  """Normalized rows -> the typed frame described in the module docstring."""
  records = []
  for row in rows:
    record = dict(row['fixed'])
    record[SOURCE_COLUMN] = row.get('source')
    record[COMMAND_LINE_COLUMN] = row.get('command_line')
    for key, value in row['metadata'].items():
      record[_ColumnName(str(key))] = _AsText(value)
    records.append(record)
  frame = pd.DataFrame.from_records(records)
  if frame.empty:
    return frame
  fixed_and_ours = set(FIXED_FIELDS) | {SOURCE_COLUMN, COMMAND_LINE_COLUMN}
  for name in frame.columns:
    if name not in fixed_and_ours:
      frame[name] = TypeColumn(frame[name])
  frame['value'] = pd.to_numeric(frame['value'], errors='coerce')
  if frame['value'].isna().any():
    raise LoadError('a sample has a value that is not a number')
  try:
    frame['timestamp'] = pd.to_datetime(
        pd.to_numeric(frame['timestamp']), unit='s', utc=True)
  except (ValueError, TypeError):
    raise LoadError('a sample has a timestamp that is not seconds since '
                    'the epoch') from None
  frame['official'] = TypeColumn(frame['official'])
  for name in ('run_uri', 'sample_uri', 'metric', 'unit', 'test'):
    frame[name] = frame[name].astype('string')
  # Rows say '<run_uri>-<uuid4>' as PKB's do (one uuid per invocation, so a
  # resumed run has two); the history groups by the run itself.
  frame['run_uri'] = frame['run_uri'].map(
      publisher.ShortRunUri).astype('string')
  frame = frame.drop_duplicates(subset=['sample_uri', 'run_uri', 'metric',
                                        'timestamp'])
  return frame.sort_values(['timestamp', 'run_uri'], kind='stable'
                          ).reset_index(drop=True)


def _RowsFromPath(path: str) -> List[Dict[str, Any]]:
  if os.path.isdir(path):
    files = FindResultFiles(path)
    if not files:
      raise LoadError(f'{path}: no {RESULTS_FILE} under this directory')
  elif os.path.isfile(path):
    files = [path]
  else:
    raise LoadError(f'{path}: no such file or directory')
  rows = []
  for file_path in files:
    command_line = ReadCommandLine(file_path)
    for row in ReadJsonLines(file_path):
      row['source'] = file_path
      row['command_line'] = command_line
      rows.append(row)
  return rows


def Load(paths: Iterable[str] = (), bigquery_table: Optional[str] = None,
         bq_project: Optional[str] = None, bq_client: Any = None,
         read_rows: Optional[Callable[..., list]] = None) -> pd.DataFrame:
  """All samples of the given sources as one typed frame.

  Raises:
    LoadError: a path is missing, a file is not PKB JSON lines, the table
      cannot be read, or there are no samples at all.
  """
  paths = list(paths)
  rows = []
  for path in paths:
    rows.extend(_RowsFromPath(path))
  if bigquery_table:
    rows.extend(ReadBigQuery(bigquery_table, bq_project, bq_client, read_rows))
  if not rows:
    named = ', '.join(paths + ([bigquery_table] if bigquery_table else []))
    raise LoadError(f'no samples in {named or "the given sources"}')
  return RowsToFrame(rows)
