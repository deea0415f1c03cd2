"""Normalized PKB rows in, the loader's typed frame out, in bounded memory.

`FrameBuilder.Add` takes one normalized row at a time; every `chunk_rows`
rows the chunk is typed and stored by column (numbers 8 bytes, repeated
text one shared string), and `Frame` joins the columns one at a time,
freeing each chunk's part: a history never exists as one dict per sample.
A column is typed as a whole (booleans, numbers with non-finite ones "not
recorded", else text); one typed differently in two chunks becomes text.
"""

import json
from typing import Any, Dict, Iterable, List, Optional, Tuple

import numpy as np
import pandas as pd

from perfkitbenchmarker import terminal_text
from perfkitbenchmarker.publishers import bigquery_schema
from perfkitbenchmarker.publishers import publisher

FIXED_FIELDS = bigquery_schema.PKB_FIELDS
SOURCE_COLUMN = 'source'
COMMAND_LINE_COLUMN = 'command_line'
CHUNK_ROWS = 20000
_OURS = frozenset(FIXED_FIELDS) | {SOURCE_COLUMN, COMMAND_LINE_COLUMN}


class BadValue(Exception):
  """A sample value or timestamp the frame cannot hold."""


def ColumnName(key: str) -> str:
  """A metadata key's column (a key colliding with ours gets `meta_`)."""
  return 'meta_' + key if key in _OURS else key


def AsText(value: Any) -> Any:
  """Metadata values as the text PKB's labels would hold (None stays None)."""
  if value is None or isinstance(value, str):
    return value
  if isinstance(value, (list, dict)):
    return json.dumps(value, sort_keys=True)
  return str(value)


def TypeColumn(column: pd.Series) -> pd.Series:
  """Booleans, numbers (not finite: "not recorded", NaN) or strings,
  decided for the whole column."""
  present = column.dropna()
  if present.empty:
    return column
  text = present.astype(str)
  if text.isin(['True', 'False', 'true', 'false']).all():
    return column.map({'True': True, 'true': True, 'False': False,
                       'false': False}).astype('boolean')
  numbers = pd.to_numeric(text, errors='coerce')
  if numbers.notna().all() and not text.str.strip().eq('').any():
    numbers = pd.to_numeric(column, errors='coerce')
    if pd.api.types.is_float_dtype(numbers):
      numbers = numbers.where(np.isfinite(numbers))
    return numbers
  return column


def _Kind(column: pd.Series) -> str:
  if pd.api.types.is_bool_dtype(column):
    return 'boolean'
  if pd.api.types.is_numeric_dtype(column):
    return 'number'
  return 'text'


def _NumberText(value: Any) -> Any:
  if value is None or value is pd.NA or value != value:  # pylint: disable=comparison-with-itself
    return None
  if isinstance(value, (bool, np.bool_)):
    return str(bool(value))
  if float(value).is_integer():
    return str(int(value))
  return repr(float(value))


def _Missing(rows: int, kind: str) -> pd.Series:
  if kind == 'boolean':
    return pd.Series(pd.array([pd.NA] * rows, dtype='boolean'))
  if kind == 'number':
    return pd.Series(np.full(rows, np.nan))
  return pd.Series([None] * rows, dtype=object)


def _JoinColumn(parts: List[Tuple[int, Optional[pd.Series]]]) -> pd.Series:
  """One column from its chunks' parts (None: the chunk lacks it)."""
  kinds = {_Kind(p) for _, p in parts if p is not None and p.notna().any()}
  kind = kinds.pop() if len(kinds) == 1 else ('text' if kinds else 'number')
  pieces = []
  for rows, part in parts:
    if part is None or not part.notna().any():
      part = _Missing(rows, kind)
    elif _Kind(part) != kind:
      part = pd.Series([_NumberText(v) for v in part], dtype=object)
    pieces.append(part.reset_index(drop=True))
  joined = pd.concat(pieces, ignore_index=True)
  if kind == 'boolean':
    joined = joined.astype('boolean')
  return joined


class FrameBuilder:
  """Rows in, the typed frame out; `keys`: metadata keys to keep (None: all)."""

  def __init__(self, keys: Optional[Iterable[str]] = None,
               chunk_rows: Optional[int] = None):
    self._keys = None if keys is None else frozenset(keys)
    self._chunk_rows = chunk_rows or CHUNK_ROWS
    self._records: List[Dict[str, Any]] = []
    self._chunks: List[Tuple[int, Dict[str, pd.Series]]] = []
    self._columns: Dict[str, None] = {}  # every column, in first-seen order
    self._shared: Dict[str, str] = {}
    self.rows = 0

  def _Shared(self, value: Any) -> Any:
    """Text as one printable line (terminal_text.Printable), short text
    shared: every view prints names read from the samples, and a newline
    in one (a machine type, a run_uri) forged lines of compare's console
    report, where only controls other than line breaks were escaped."""
    if not isinstance(value, str):
      return value
    shared = self._shared.get(value)
    if shared is None:
      shared = terminal_text.Printable(value)
      if len(value) <= 64:
        self._shared[value] = shared
    return shared

  def Add(self, row: Dict[str, Any]) -> None:
    # sample_uri is identity, never shown; the source is a path compare
    # opens again (compare_cli._OverwritesInput): both kept as read.
    record = {f: (v if f == 'sample_uri' else self._Shared(v))
              for f, v in row['fixed'].items()}
    record[SOURCE_COLUMN] = row.get('source')
    record[COMMAND_LINE_COLUMN] = self._Shared(row.get('command_line'))
    for key, value in row['metadata'].items():
      key = str(key)
      if self._keys is None or key in self._keys:
        record[ColumnName(key)] = self._Shared(AsText(value))
    self._records.append(record)
    self.rows += 1
    if len(self._records) >= self._chunk_rows:
      self._Flush()

  def _Flush(self) -> None:
    if not self._records:
      return
    chunk = pd.DataFrame.from_records(self._records)
    self._records = []
    columns = {}
    for name in chunk.columns:
      if name in ('value', 'timestamp'):
        column = pd.to_numeric(chunk[name], errors='coerce')
      elif name in _OURS:
        column = chunk[name]
      else:
        column = TypeColumn(chunk[name])
      # Own arrays: a view would keep the chunk's whole object block alive.
      columns[name] = column.copy()
      self._columns.setdefault(name)
    self._chunks.append((len(chunk), columns))

  def Frame(self) -> pd.DataFrame:
    """The typed, de-duplicated frame of every row added, oldest first."""
    self._Flush()
    if not self._chunks:
      return pd.DataFrame()
    data = {}
    for name in self._columns:
      data[name] = _JoinColumn([(rows, columns.pop(name, None))
                                for rows, columns in self._chunks])
    self._chunks = []
    frame = pd.DataFrame(data, copy=False)
    del data
    if frame['value'].isna().any():
      raise BadValue('a sample has a value that is not a number')
    frame['timestamp'] = pd.to_datetime(frame['timestamp'], unit='s',
                                        utc=True)
    frame['official'] = TypeColumn(frame['official'])
    for name in ('run_uri', 'sample_uri', 'metric', 'unit', 'test'):
      frame[name] = frame[name].astype('string')
    # Rows say '<run_uri>-<uuid4>' as PKB's do (one uuid per invocation, so a
    # resumed run has two); the history groups by the run itself.
    short = {uri: publisher.ShortRunUri(uri)
             for uri in frame['run_uri'].dropna().unique()}
    frame['run_uri'] = frame['run_uri'].map(short).astype('string')
    duplicate = frame.duplicated(subset=['sample_uri', 'run_uri', 'metric',
                                         'timestamp'])
    if duplicate.any():
      frame = frame[~duplicate]
    order = frame[['timestamp', 'run_uri']].sort_values(
        ['timestamp', 'run_uri'], kind='stable').index
    if order.is_monotonic_increasing:  # Already in order: no second copy.
      return frame.reset_index(drop=True)
    return frame.loc[order].reset_index(drop=True)

