"""Loads PKB samples from any source into one typed pandas DataFrame.

Sources: a directory (searched for `perfkitbenchmarker_results.json`, with
the command line from a `run_record.json` beside it), a file of PKB JSON
lines (labels collapsed or a `metadata` object), or a BigQuery table
(bigquery_publisher.IterRows, imported only when asked for). A new source is
a function returning rows shaped like one PKB JSON line; typed_frame does
the rest (typing, `meta_` prefixes, `keys`).

Rows are input: anything not a PKB sample is a `LoadError` naming the file
and line, from the one reader of results files (bigquery_schema.IterRows,
bounded: regular files only, read to the size they had when opened). Inside
a directory (a history of run directories, downloaded and shared) every
file is its own: read through regular_files.Directory, no symlink followed.
A results file there that is not the tree's own regular file (a symlink, a
FIFO, another user's hard link), or a symlink to a directory, is skipped,
said in one line (`note`),
and the rest is read: one such file must not cost a nightly report; a
results file that is the tree's own but not PKB samples stops the load.
A run read from two sources (a run directory downloaded twice, a run both
in files and in its BigQuery table) counts once, said in one line; two
sources holding different samples of one run stop the load; a sample one
source holds twice under new sample ids (a table the run was published to
twice) counts once, said the same way (typed_frame.OneCopyPerRun).
"""

import itertools
import os
from typing import Any, Callable, Dict, Iterable, Iterator, Optional

import pandas as pd

from perfkitbenchmarker import json_input
from perfkitbenchmarker import regular_files
from perfkitbenchmarker import terminal_text
from perfkitbenchmarker import vm_util
from perfkitbenchmarker.publishers import bigquery_schema
from perfkitbenchmarker.results_history import typed_frame

RESULTS_FILE = bigquery_schema.RESULTS_FILE
RUN_RECORD_FILE = 'run_record.json'
RUN_RECORD_FORMAT_VERSIONS = (1,)
FIXED_FIELDS = typed_frame.FIXED_FIELDS
# Columns the loader adds itself.
SOURCE_COLUMN = typed_frame.SOURCE_COLUMN
COMMAND_LINE_COLUMN = typed_frame.COMMAND_LINE_COLUMN
# A run record is a few KB (a long run's resources: some hundred KB); one
# larger is not read for its command line.
MAX_RUN_RECORD_BYTES = 16 << 20


# Input that is not a readable set of PKB samples (exit 2 in compare).
LoadError = bigquery_schema.ResultsFileError


def _Shape(row: Dict[str, Any], metadata: Dict[str, Any]) -> Dict[str, Any]:
  """A checked PKB row -> fixed fields + metadata dict (typed_frame's input)."""
  return {'fixed': {f: row.get(f) for f in FIXED_FIELDS}, 'metadata': metadata}


class NotTheTreesOwn(LoadError):
  """A results file in a directory that is not its own regular file."""


def IterJsonLines(path: str,
                  directory: Optional[regular_files.Directory] = None
                 ) -> Iterator[Dict[str, Any]]:
  """Rows of one PKB JSON-lines file (bigquery_schema.IterRows), shaped;
  with `directory`, `path` is a file inside it (read as its own;
  NotTheTreesOwn when it cannot be)."""
  if directory is None:
    rows = bigquery_schema.IterRows(path)
  else:
    try:
      f = directory.Open(path)
    except regular_files.NotRegular as e:
      raise NotTheTreesOwn(str(e)) from None
    rows = bigquery_schema.IterRowsOf(f, os.path.join(directory.path, path))
  for row, metadata in rows:
    yield _Shape(row, metadata)


def ReadCommandLine(results_path: str,
                    directory: Optional[regular_files.Directory] = None
                   ) -> Optional[str]:
  """The command line from the run record beside a results file; None for
  a missing, malformed or unknown-version record (input, never trusted;
  one naming a key twice is malformed: json_input). With `directory`,
  `results_path` is inside it, and so is the record."""
  record_path = os.path.join(os.path.dirname(results_path), RUN_RECORD_FILE)
  try:
    if directory is None:
      text = regular_files.ReadRegular(record_path, MAX_RUN_RECORD_BYTES)
    else:
      text = directory.Read(record_path, MAX_RUN_RECORD_BYTES)
    record = json_input.Loads(text)
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


def ReadBigQuery(table: str, client: Any,
                 read_rows: Optional[Callable[..., Iterable]] = None
                ) -> Iterator[Dict[str, Any]]:
  """Rows of a BigQuery table through `client` (compare makes it with the
  publisher's endpoint and credential rules), by the publisher's reader,
  one at a time as its pages come: a table's whole history held as dicts
  took ten times the memory of the same samples read from a file."""
  if read_rows is None:
    # Here: the Google clients take seconds to import; files never need them.
    from perfkitbenchmarker.publishers import bigquery_publisher  # pylint: disable=g-import-not-at-top
    read_rows = bigquery_publisher.IterRows

  def Failed(e: Exception) -> LoadError:
    said = vm_util.Tail(terminal_text.Lines(str(e).strip())[0], 1)
    return LoadError(f'reading BigQuery table {table} failed: '
                     f'{said or type(e).__name__}')

  try:
    raw = iter(read_rows(table, client))
  except Exception as e:  # pylint: disable=broad-except
    raise Failed(e) from None
  for number in itertools.count(1):
    try:
      row = next(raw, None)
    except Exception as e:  # pylint: disable=broad-except
      raise Failed(e) from None  # A page that failed half way through.
    if row is None:
      return
    row = dict(row)
    if not isinstance(row.get('timestamp'), (int, float, type(None))):
      row['timestamp'] = pd.Timestamp(row['timestamp']).timestamp()
    shaped = _Shape(row, bigquery_schema.SampleMetadata(
        row, f'{table} row {number}'))
    shaped['source'] = f'bigquery:{table}'
    yield shaped


def _RowsOf(path: str, skipped: Callable[[str], None]
            ) -> Iterator[Dict[str, Any]]:
  """The rows of a results file, or of every one under a directory (each
  read as the directory's own file; `skipped` is told of one that is not),
  with their source and command line."""
  found = 0

  def NotOwn(line: str) -> None:
    nonlocal found
    found += 1
    skipped(line)

  for directory, name, source, f in bigquery_schema.IterFiles(
      path, NotOwn, lambda linked: skipped(
          f'skipped {linked}: a symbolic link to a directory (never followed '
          'in a directory read as input); give it by name to read it')):
    found += 1
    command_line = ReadCommandLine(name, directory)
    for row, metadata in bigquery_schema.IterRowsOf(f, source):
      row = _Shape(row, metadata)
      row['source'] = source
      row['command_line'] = command_line
      yield row
  if not found:
    raise LoadError(f'{path}: no {RESULTS_FILE} under this directory')


def Load(paths: Iterable[str] = (), bigquery_table: Optional[str] = None,
         bq_client: Any = None,
         read_rows: Optional[Callable[..., list]] = None,
         keys: Optional[Iterable[str]] = None,
         chunk_rows: Optional[int] = None,
         note: Callable[[str], None] = lambda line: None
         ) -> pd.DataFrame:
  """All samples of the sources as one typed frame; `keys`: only these
  metadata keys (a history's views read a few dozen of a run's hundred).
  LoadError for a missing path, a bad file or table, no samples, or two
  sources holding different samples of one run; `note` gets one line for
  each results file under a directory that is not the directory's own
  (module doc), and for each run read from more than one source, which is
  read from one (typed_frame.OneCopyPerRun)."""
  paths = list(paths)
  builder = typed_frame.FrameBuilder(keys, chunk_rows)
  for path in paths:
    for row in _RowsOf(path, note):
      builder.Add(row)
  if bigquery_table:
    for row in ReadBigQuery(bigquery_table, bq_client, read_rows):
      builder.Add(row)
  if not builder.rows:
    named = ', '.join(paths + ([bigquery_table] if bigquery_table else []))
    raise LoadError(f'no samples in {named or "the given sources"}')
  try:
    return builder.Frame(note)
  except (typed_frame.BadValue, typed_frame.CopiesDisagree) as e:
    raise LoadError(str(e)) from None
