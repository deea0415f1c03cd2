"""Normalized PKB rows in, the loader's typed frame out, in bounded memory.

`FrameBuilder.Add` takes one normalized row at a time; every `chunk_rows`
rows the chunk is typed and stored by column (numbers 8 bytes, repeated
text one shared string), and `Frame` joins the columns one at a time,
freeing each chunk's part: a history never exists as one dict per sample.
A column is typed as a whole (booleans, numbers with non-finite ones "not
recorded", else text), versions never (TEXT_KEYS); one typed differently in
two chunks becomes text.
A run read from two sources is kept from one of them, or refused when the
copies disagree, and a sample one source holds twice under new sample ids
(a table a run was published to twice) is kept once (`OneCopyPerRun`):
every view reads this frame, so this is the one place a run is counted once.
"""

import json
from typing import Any, Callable, Dict, Iterable, List, Optional, Tuple

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
# Metadata kept as the text recorded, never typed: a version is text though
# every one is digits, and read as a number git describe --always's
# '0123456' was 123456, '1e45678' too large for a float (not recorded),
# '7.10' 7.1 and the servers '7.0' and '7' one version.
TEXT_KEYS = frozenset(('redis_server_version', 'load_generator_version',
                       publisher.HARNESS_VERSION_KEY))


class BadValue(Exception):
  """A sample value or timestamp the frame cannot hold."""


class CopiesDisagree(Exception):
  """Two sources hold different samples of one run (OneCopyPerRun)."""


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


# Runs read more than once are named one line each up to this many; the
# rest in one line (a whole history given twice is hundreds of runs).
NAMED_COPIES = 5


def _Shown(value: Any) -> str:
  """A value of the frame in a refusal's words."""
  if value is None or value is pd.NA or (
      isinstance(value, float) and value != value):  # pylint: disable=comparison-with-itself
    return 'not recorded'
  if isinstance(value, float):
    return f'{value:.12g}'
  return str(value)


def _Difference(content: pd.DataFrame, kept: pd.Series,
                other: pd.Series) -> str:
  """How `other`'s first sample that `kept`'s rows lack differs: the
  columns in which it differs from `kept`'s sample of the same metric and
  second, or that `kept` has no such sample. `kept`, `other`: masks."""
  extra = content[other.to_numpy()].iloc[0]
  when = extra['timestamp'].strftime('%Y-%m-%d %H:%M:%S UTC')
  what = f'{extra["metric"]} at {when}'
  mine = content[kept.to_numpy() &
                 (content['metric'] == extra['metric']).to_numpy() &
                 (content['timestamp'] == extra['timestamp']).to_numpy()]
  if mine.empty:
    return f'{what} is only in the second'
  first = mine.iloc[0]
  differ = [c for c in content.columns
            if _Shown(first[c]) != _Shown(extra[c])]
  if not differ:  # Past the digits shown.
    return f'{what} differs'
  return f'{what}: ' + ', '.join(
      f'{c} {_Shown(first[c])} in the first, {_Shown(extra[c])} in the second'
      for c in differ[:2])


def _Comparable(column: pd.Series) -> pd.Series:
  """A text column with each number in one spelling: a column typed text
  in one chunk and numbers in another holds both ('1.0' as read, '1' from
  _NumberText), and two copies of a run in different chunks are still the
  same samples. A version is its text ('007' is not '7': TEXT_KEYS)."""
  if column.name in TEXT_KEYS or pd.api.types.is_numeric_dtype(column) or (
      pd.api.types.is_datetime64_any_dtype(column)):
    return column
  numbers = pd.to_numeric(column.astype(object), errors='coerce')
  return column.astype(object).where(numbers.isna(), numbers.map(repr))


def _CopiesInOneSource(frame: pd.DataFrame, invocation: pd.Series,
                       compared: List[str]
                      ) -> Tuple[pd.DataFrame, List[Tuple[str, str]]]:
  """Each sample of one source once: a table the run published to and
  then its files were imported into again holds each of the run's samples
  twice, under new sample ids.

  A sample read again is one with every compared column the same (times
  exact: both copies went through the one column type of their source,
  while a second's floor would merge two samples one run wrote within a
  second) from the same source and the same invocation ('<run_uri>-<uuid>'
  as rows say it: a run resumed with --run_stage wrote each invocation's
  own samples, at their own times, under their own uuid), under another
  sample id (a line repeated with its id is Frame's to drop). One line per
  run whose samples were read more than once, (run, line): no column tells
  the copies apart in one source, so each sample is counted once.
  """
  keys = frame[[SOURCE_COLUMN, 'metric', 'value', 'timestamp']].assign(
      invocation=invocation)
  # Only rows alike in these few columns are compared whole: hashing every
  # column of every row would double the load of a large history.
  alike = keys.duplicated(keep=False) & ~keys.assign(
      sample_uri=frame['sample_uri']).duplicated()
  if not alike.any():
    return frame, []
  content = frame.loc[alike, compared].apply(_Comparable)
  content['run_uri'] = invocation[alike].astype(str)  # Implies the short.
  content[SOURCE_COLUMN] = frame.loc[alike, SOURCE_COLUMN].astype(str)
  hashes = pd.util.hash_pandas_object(content, index=False)
  again = hashes.duplicated()
  if not again.any():
    return frame, []
  times = pd.DataFrame({'run_uri': frame.loc[alike, 'run_uri'],
                        SOURCE_COLUMN: content[SOURCE_COLUMN],
                        'hash': hashes}).groupby(
                            ['run_uri', SOURCE_COLUMN, 'hash'], sort=False,
                            dropna=False).size()
  times = times[times > 1]
  ids = frame.groupby(['run_uri', SOURCE_COLUMN], dropna=False)[
      'sample_uri'].nunique()
  lines = []
  why = 'copies under new sample ids: published or imported again'
  for (run_uri, source), repeated in times.groupby(level=[0, 1], sort=False):
    samples = int(ids[(run_uri, source)] - (repeated - 1).sum())
    most = int(repeated.max())
    if len(repeated) == samples and repeated.min() == most:
      lines.append((run_uri, f'run {run_uri} read {most} times from {source}, '
                    f'the same samples each time ({why}); counted once'))
    else:
      lines.append((run_uri, f'run {run_uri}: {len(repeated)} of its '
                    f'{samples} samples read '
                    f'{"up to " if repeated.min() < most else ""}{most} '
                    f'times from {source} ({why}); each counted once'))
  return frame.drop(index=hashes.index[again.to_numpy()]), lines


def OneCopyPerRun(frame: pd.DataFrame,
                  note: Callable[[str], None] = lambda line: None,
                  invocation: Optional[pd.Series] = None) -> pd.DataFrame:
  """Each run's samples from one source (a results file, a table), each
  sample once.

  A run is often read twice: its directory downloaded twice into a history,
  `compare results/ copy/`, or a run both in its files and in the table it
  was published to. A second copy must never be a second set of samples:
  the answer was the later copy's by time or by the order the sources were
  given, and an edited copy's figure replaced the run's without a word.
  Copies are compared by what the views read: every column but the sample
  id (a re-published copy has new ones), the source and the command line,
  times to the second (a table of TIMESTAMPs keeps microseconds of the
  files' float seconds). The same samples: one source is read, and `note`
  says so. A copy holding only some of another's samples and nothing else
  (a copy taken while the run was still writing): the fuller one is read,
  said so. Otherwise the copies disagree (a hand-edited copy, another run
  given the same run_uri) and nothing tells which is the run's:
  CopiesDisagree names both sources and how a sample differs.

  Inside one source (a table the run was published to twice) the same
  rule holds sample by sample (_CopiesInOneSource; `invocation`: the rows'
  run_uri as they say it, '<run_uri>-<uuid>', default the frame's): every
  other row of one source is kept, as a run resumed with --run_stage wrote
  them all.
  """
  compared = [c for c in frame.columns
              if c not in ('sample_uri', SOURCE_COLUMN, COMMAND_LINE_COLUMN)]
  frame, lines = _CopiesInOneSource(
      frame, frame['run_uri'] if invocation is None else invocation, compared)
  pairs = frame[['run_uri', SOURCE_COLUMN]].drop_duplicates()
  copied = pairs.loc[pairs['run_uri'].duplicated(keep=False), 'run_uri']
  dropped = []
  if not copied.empty:
    dropped, more = _OneSourcePerRun(frame, copied, compared)
    lines += more
  for _, line in lines[:NAMED_COPIES]:
    note(line)
  more_runs = ({run for run, _ in lines[NAMED_COPIES:]} -
               {run for run, _ in lines[:NAMED_COPIES]})
  if more_runs:
    note(f'{len(more_runs)} more runs read more than once, each the same '
         'samples or part of them; each counted once')
  if not dropped:
    return frame
  return frame.drop(index=np.concatenate([d.to_numpy() for d in dropped]))


def _OneSourcePerRun(frame: pd.DataFrame, copied: pd.Series,
                     compared: List[str]
                    ) -> Tuple[List[pd.Index], List[Tuple[str, str]]]:
  """The rows of the runs `copied` (read from more than one source) not
  read, and (run, line) for each run (OneCopyPerRun)."""
  rows_of_copied = frame[frame['run_uri'].isin(copied.unique())]
  content = rows_of_copied[compared].apply(_Comparable)
  content['timestamp'] = content['timestamp'].dt.floor('s')
  all_hashes = pd.util.hash_pandas_object(content, index=False)
  dropped, lines = [], []
  for run_uri, rows in rows_of_copied.groupby('run_uri', sort=False):
    hashes = all_hashes.loc[rows.index]
    source = rows[SOURCE_COLUMN].astype(str)
    sources = list(dict.fromkeys(source))  # In the order read.
    sets = {s: set(hashes[(source == s).to_numpy()]) for s in sources}
    kept = max(sources, key=lambda s: len(sets[s]))  # First of the fullest.
    for other in sources:
      extra = sets[other] - sets[kept]
      if extra:
        difference = _Difference(
            content.loc[rows.index], (source == kept) & ~hashes.isin(
                sets[other]), (source == other) & hashes.isin(extra))
        raise CopiesDisagree(
            f'run {run_uri} has different samples in {kept} and in {other} '
            f'({difference}); they cannot both be that run\'s: give only '
            'one of them')
    others = [s for s in sources if s != kept]
    partial = [f'{s} has {len(sets[s])}' for s in others
               if sets[s] != sets[kept]]
    if partial:
      lines.append((run_uri,
          f'run {run_uri} read from {len(sources)} sources, {kept} with '
          f'{len(sets[kept])} samples, {", ".join(partial)} of them and no '
          f'other; counted once, from {kept}'))
    else:
      lines.append((run_uri,
          f'run {run_uri} read {len(sources)} times, the same samples each '
          f'time ({", ".join(sources)}); counted once, from {kept}'))
    dropped.append(rows.index[(source != kept).to_numpy()])
  return dropped, lines


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
      elif name in _OURS or name in TEXT_KEYS:
        column = chunk[name]
      else:
        column = TypeColumn(chunk[name])
      # Own arrays: a view would keep the chunk's whole object block alive.
      columns[name] = column.copy()
      self._columns.setdefault(name)
    self._chunks.append((len(chunk), columns))

  def Frame(self, note: Callable[[str], None] = lambda line: None
           ) -> pd.DataFrame:
    """The typed, de-duplicated frame of every row added, oldest first;
    a run read from more than one source is read from one (OneCopyPerRun:
    `note` gets its line, CopiesDisagree when it cannot be)."""
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
    invocation = frame['run_uri']
    frame['run_uri'] = frame['run_uri'].map(short).astype('string')
    frame = OneCopyPerRun(frame, note, invocation)
    del invocation
    duplicate = frame.duplicated(subset=['sample_uri', 'run_uri', 'metric',
                                         'timestamp'])
    if duplicate.any():
      frame = frame[~duplicate]
    order = frame[['timestamp', 'run_uri']].sort_values(
        ['timestamp', 'run_uri'], kind='stable').index
    if order.is_monotonic_increasing:  # Already in order: no second copy.
      return frame.reset_index(drop=True)
    return frame.loc[order].reset_index(drop=True)

