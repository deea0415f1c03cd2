"""Loads PKB samples from any source into one typed pandas DataFrame.

Sources: a directory (searched for `perfkitbenchmarker_results.json`, with
the command line from a `run_record.json` beside it), a file of PKB JSON
lines (labels collapsed or a `metadata` object), or a BigQuery table
(bigquery_publisher.ReadRows, imported only when asked for). A new source is
a function returning rows shaped like one PKB JSON line; typed_frame does
the rest (typing, `meta_` prefixes, `keys`).

Rows are input: anything not a PKB sample is a `LoadError` naming the file
and line. Bounded: only regular files are read (a FIFO is refused, never
waited on), each to the size it had when opened, line by line; a line over
`MAX_LINE_CHARS`, metadata deeper than `MAX_METADATA_DEPTH` or a value that
is not a finite number is refused.
"""

import importlib
import io
import json
import math
import os
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional

import pandas as pd

from perfkitbenchmarker import regular_files
from perfkitbenchmarker import sample as sample_lib
from perfkitbenchmarker.publishers import bigquery_schema
from perfkitbenchmarker.results_history import typed_frame

RESULTS_FILE = bigquery_schema.RESULTS_FILE
RUN_RECORD_FILE = 'run_record.json'
RUN_RECORD_FORMAT_VERSIONS = (1,)
FIXED_FIELDS = typed_frame.FIXED_FIELDS
REQUIRED_FIELDS = ('metric', 'value', 'timestamp', 'run_uri')
# Columns the loader adds itself.
SOURCE_COLUMN = typed_frame.SOURCE_COLUMN
COMMAND_LINE_COLUMN = typed_frame.COMMAND_LINE_COLUMN
BIGQUERY_MODULE = 'perfkitbenchmarker.publishers.bigquery_publisher'
# A PKB sample line is a few KB; metadata values are scalars or small lists.
MAX_LINE_CHARS = 1 << 20
MAX_METADATA_DEPTH = 8
# A run record is a few KB (a long run's resources: some hundred KB); one
# larger is not read for its command line.
MAX_RUN_RECORD_BYTES = 16 << 20


class LoadError(Exception):
  """Input that is not a readable set of PKB samples (exit 2 in compare)."""


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


def _FiniteNumber(value: Any, name: str, where: str) -> float:
  """A sample's value or timestamp as a finite float; LoadError otherwise."""
  try:
    number = math.nan if isinstance(value, bool) else float(value)
  except (TypeError, ValueError):  # None too
    number = math.nan
  if not math.isfinite(number):
    raise LoadError(f'{where}: {name} {str(value)[:40]!r} is not a finite '
                    'number')
  return number


def _Normalize(row: Dict[str, Any], where: str) -> Dict[str, Any]:
  """One PKB row (labels or metadata form) -> fixed fields + metadata dict."""
  if not isinstance(row, dict):
    raise LoadError(f'{where}: not a JSON object')
  missing = [f for f in REQUIRED_FIELDS if f not in row]
  if missing:
    raise LoadError(f'{where}: not a PKB sample (no {", ".join(missing)})')
  _FiniteNumber(row['value'], 'value', where)
  _FiniteNumber(row['timestamp'], 'timestamp', where)
  metadata = row.get('metadata')
  if metadata is None:
    try:
      metadata = sample_lib.ParseLabels(row.get('labels') or '')
    except ValueError as e:
      raise LoadError(f'{where}: {e}') from None
  elif isinstance(metadata, str):  # A table may hold the object as JSON text.
    try:
      metadata = json.loads(metadata)
    except (ValueError, RecursionError):
      raise LoadError(f'{where}: metadata is not a JSON object') from None
  if not isinstance(metadata, dict):
    raise LoadError(f'{where}: metadata is not an object')
  if (any(isinstance(v, (dict, list)) for v in metadata.values()) and
      _Depth(metadata) > MAX_METADATA_DEPTH):
    raise LoadError(f'{where}: metadata nested more than '
                    f'{MAX_METADATA_DEPTH} levels deep; PKB metadata is flat')
  fixed = {f: row.get(f) for f in FIXED_FIELDS}
  return {'fixed': fixed, 'metadata': metadata}


def IterJsonLines(path: str) -> Iterator[Dict[str, Any]]:
  """Rows of one PKB JSON-lines file, one at a time (read to the size it
  had when opened: another run may still be appending)."""
  try:
    raw = regular_files.OpenRegular(path)
  except regular_files.NotRegular as e:
    raise LoadError(f'{path}: {e}') from None
  try:
    size = os.fstat(raw.fileno()).st_size
    with io.TextIOWrapper(io.BufferedReader(_Prefix(raw, size), 1 << 16),
                          encoding='utf-8') as f:
      number = 0
      while True:
        line = f.readline(MAX_LINE_CHARS + 1)
        if not line:
          return
        number += 1
        where = f'{path}:{number}'
        if len(line) > MAX_LINE_CHARS:
          raise LoadError(f'{where}: a line longer than {MAX_LINE_CHARS:,} '
                          'characters is not a PKB sample')
        if not line.strip():
          continue
        try:
          row = json.loads(line)
        except ValueError:
          raise LoadError(f'{where}: not JSON; expected PKB JSON lines') from None
        except RecursionError:
          raise LoadError(f'{where}: JSON nested too deeply to be a PKB '
                          'sample') from None
        yield _Normalize(row, where)
  except UnicodeDecodeError:
    raise LoadError(f'{path}: not a text file of PKB JSON lines') from None
  except OSError as e:
    raise LoadError(f'{path}: {e.strerror}') from None
  finally:
    raw.close()


class _Prefix(io.RawIOBase):
  """The first `size` bytes of a binary file, as a readable raw stream."""

  def __init__(self, f, size: int):
    super().__init__()
    self._f = f
    self._left = size

  def readable(self) -> bool:
    return True

  def readinto(self, buffer) -> int:
    if self._left <= 0:
      return 0
    view = memoryview(buffer)[:self._left]
    count = self._f.readinto(view) or 0
    self._left -= count
    return count

  def close(self) -> None:
    super().close()
    self._f.close()


def ReadCommandLine(results_path: str) -> Optional[str]:
  """The command line from the run record beside a results file; None for
  a missing, malformed or unknown-version record (input, never trusted)."""
  record_path = os.path.join(os.path.dirname(results_path), RUN_RECORD_FILE)
  try:
    record = json.loads(regular_files.ReadRegular(record_path,
                                                  MAX_RUN_RECORD_BYTES))
  except (regular_files.NotRegular, ValueError, RecursionError):
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


def ReadBigQuery(table: str, project: Optional[str] = None,
                 client: Any = None,
                 read_rows: Optional[Callable[..., list]] = None
                ) -> List[Dict[str, Any]]:
  """Rows of a BigQuery table, through the BigQuery publisher's reader."""
  if read_rows is None or client is None:
    try:
      module = importlib.import_module(BIGQUERY_MODULE)
    except ImportError as e:
      raise LoadError(f'reading BigQuery needs {BIGQUERY_MODULE} ({e})') from None
    read_rows = read_rows or module.ReadRows
  if client is None:
    try:
      client = module.MakeReadClient(project)
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


def _FilesOf(path: str) -> List[str]:
  """The results files under a directory, or the path itself (IterJsonLines
  refuses anything but a regular file)."""
  try:
    files = bigquery_schema.FindResultsFiles([path])
  except bigquery_schema.ResultsFileError as e:
    raise LoadError(str(e).rstrip('.')) from None
  if not files:
    raise LoadError(f'{path}: no {RESULTS_FILE} under this directory')
  return files


def Load(paths: Iterable[str] = (), bigquery_table: Optional[str] = None,
         bq_project: Optional[str] = None, bq_client: Any = None,
         read_rows: Optional[Callable[..., list]] = None,
         keys: Optional[Iterable[str]] = None,
         chunk_rows: Optional[int] = None) -> pd.DataFrame:
  """All samples of the sources as one typed frame; `keys`: only these
  metadata keys (a history's views read a few dozen of a run's hundred).
  LoadError for a missing path, a bad file or table, or no samples."""
  paths = list(paths)
  builder = typed_frame.FrameBuilder(keys, chunk_rows)
  for path in paths:
    for file_path in _FilesOf(path):
      command_line = ReadCommandLine(file_path)
      for row in IterJsonLines(file_path):
        row['source'] = file_path
        row['command_line'] = command_line
        builder.Add(row)
  if bigquery_table:
    for row in ReadBigQuery(bigquery_table, bq_project, bq_client, read_rows):
      builder.Add(row)
  if not builder.rows:
    named = ', '.join(paths + ([bigquery_table] if bigquery_table else []))
    raise LoadError(f'no samples in {named or "the given sources"}')
  try:
    return builder.Frame()
  except typed_frame.BadValue as e:
    raise LoadError(str(e)) from None
