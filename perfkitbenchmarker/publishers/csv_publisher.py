"""CSV in PKB's layout: fixed columns, then every metadata key seen.

Each sample is one row appended under the file's lock (results_file.py), so
runs sharing a --csv_path each keep their rows, and a dying run keeps what
it wrote. A row with a key the header lacks rewrites the file, still under
the lock, from the rows it holds then (another run's and an earlier stage's
included) under the grown header.
"""

import csv
import io
import os
from typing import Any, Dict, List, Sequence

from perfkitbenchmarker import errors
from perfkitbenchmarker.publishers import results_file

DEFAULT_FIELDS = ('timestamp', 'test', 'metric', 'value', 'unit',
                  'product_name', 'official', 'owner', 'run_uri', 'sample_uri')


def _NotOurCsv(path: str, error: Exception) -> errors.Error:
  return errors.Error(
      f'the results file {path} is not a CSV this tool wrote ({error}); move '
      'it away or give another --csv_path.')


def _Encode(header: Sequence[str], rows: List[Dict[str, Any]],
            with_header: bool) -> bytes:
  out = io.StringIO()
  writer = csv.DictWriter(out, list(header))
  if with_header:
    writer.writeheader()
  writer.writerows(rows)
  return out.getvalue().encode('utf-8')


class CSVPublisher(results_file.Publisher):
  """Appends a row per sample; grows the header by a locked rewrite."""

  def _CheckExisting(self, fd: int) -> None:
    try:
      self._Parse(results_file.ReadAll(fd))
    except errors.Error as e:
      # The --csv_path given, before the run starts: bad input (exit 2),
      # as another user's file or a link there is.
      raise errors.UsageError(str(e)) from None

  def _Parse(self, data: bytes) -> List[Dict[str, str]]:
    try:
      reader = csv.DictReader(io.StringIO(data.decode('utf-8'), newline=''))
      rows = list(reader)
    except (UnicodeDecodeError, csv.Error) as e:
      raise _NotOurCsv(self.path, e) from None
    self._CheckHeader(reader.fieldnames or [], bool(data))
    return rows

  def _CheckHeader(self, header: List[str], has_data: bool) -> None:
    """Every CSV this tool writes starts with PKB's fixed columns; any other
    text (another run's JSON lines, a log, one whose first line is blank)
    parses as CSV too, and the header's growth would rewrite it as rows of
    this one. Only an empty file has no header."""
    if has_data and tuple(header[:len(DEFAULT_FIELDS)]) != DEFAULT_FIELDS:
      raise _NotOurCsv(self.path, 'its header is not '
                       f'{",".join(DEFAULT_FIELDS)},...')

  def Publish(self, row: Dict[str, Any]) -> None:
    flat = {k: v for k, v in row.items() if k != 'metadata'}
    flat.update(row['metadata'])
    with results_file.Locked(self.path, self._nofollow) as fd:
      header = self._Header(fd)
      size = os.fstat(fd).st_size
      if (header and set(flat) <= set(header) and
          os.pread(fd, 1, size - 1) == b'\n'):
        results_file.AppendWhole(fd, self.path,
                                 _Encode(header, [flat], False))
        return
      data = results_file.ReadAll(fd)
      # A new key (or a new file): everything the file holds now, plus
      # this row, under one grown header. Cells a row left empty stay so.
      rows = [{k: v for k, v in r.items() if v != '' and k is not None}
              for r in self._Parse(data)] + [flat]
      meta_keys = sorted({k for r in rows for k in r} - set(DEFAULT_FIELDS))
      results_file.Replace(fd, self.path, _Encode(
          list(DEFAULT_FIELDS) + meta_keys, rows, True))

  def _Header(self, fd: int) -> List[str]:
    """The file's header row ([] for an empty file)."""
    first = results_file.ReadAll(fd, first_line=True)
    try:
      header = next(csv.reader([first.decode('utf-8').rstrip('\r\n')]), [])
    except (UnicodeDecodeError, csv.Error) as e:
      raise _NotOurCsv(self.path, e) from None
    self._CheckHeader(header, bool(first))
    return header
