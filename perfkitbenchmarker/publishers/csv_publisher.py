"""CSV in PKB's layout: fixed columns, then every metadata key seen.

The header must hold the union of metadata keys, which grows as samples
arrive, so the file is rewritten (atomically) after every sample; a run that
dies keeps every row written so far. Rows already in the file when the
publisher starts (an earlier stage of the same run, e.g. a resumed
`--run_stage=run`) are kept, as the JSON file keeps its lines.
"""

import csv
import os
import stat
import tempfile
from typing import Any, Dict, List

from perfkitbenchmarker import errors

DEFAULT_FIELDS = ('timestamp', 'test', 'metric', 'value', 'unit',
                  'product_name', 'official', 'owner', 'run_uri', 'sample_uri')


def WriteFailed(path: str, error: OSError) -> errors.ResultsFileError:
  """The one-line error for a results file that could not be written."""
  return errors.ResultsFileError(
      f'could not write the results file {path}: '
      f'{error.strerror or error}; the samples written before are kept there.')


def CheckOwnFile(path: str) -> int:
  """Refuses a results file another user put there; returns open() flags.

  --json_path and --csv_path may name a file in /tmp, where anyone can put
  a symlink (or a file) first: a root run would then append to, or read and
  republish world-readable, whatever it points at. A file (or symlink) of
  another user is refused in one line; where there is none yet, the file
  is opened without following a symlink made meanwhile (O_NOFOLLOW).
  """
  try:
    st = os.lstat(path)
  except FileNotFoundError:
    return os.O_NOFOLLOW
  except OSError as e:
    raise WriteFailed(path, e) from None
  if st.st_uid not in (os.geteuid(), 0):
    kind = 'a symlink' if stat.S_ISLNK(st.st_mode) else 'a file'
    raise errors.UsageError(
        f'the results file {path} is {kind} of uid {st.st_uid}, not this '
        'user\'s; left alone. Give another --json_path/--csv_path.')
  return 0 if stat.S_ISLNK(st.st_mode) else os.O_NOFOLLOW


class CSVPublisher:
  """Keeps the file's earlier rows and rewrites it with each new sample."""

  def __init__(self, path: str):
    self.path = path
    self.rows: List[Dict[str, Any]] = []
    try:
      os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
      nofollow = CheckOwnFile(path)
      if os.path.exists(path):
        fd = os.open(path, os.O_RDONLY | nofollow)
        with open(fd, newline='') as f:
          # Cells an earlier row left empty stay empty when rewritten.
          self.rows = [{k: v for k, v in row.items() if v != ''}
                       for row in csv.DictReader(f)]
    except OSError as e:
      raise WriteFailed(path, e) from None
    except (UnicodeDecodeError, csv.Error) as e:
      raise errors.Error(
          f'the results file {path} is not a CSV this tool wrote ({e}); move '
          'it away or give another --csv_path.') from None

  def Publish(self, row: Dict[str, Any]) -> None:
    flat = {k: v for k, v in row.items() if k != 'metadata'}
    flat.update(row['metadata'])
    self.rows.append(flat)
    self._Write()

  def _Write(self) -> None:
    meta_keys = sorted({k for r in self.rows for k in r} - set(DEFAULT_FIELDS))
    tmp = None
    try:
      # A fresh name (O_EXCL): a fixed one could be another user's symlink.
      fd, tmp = tempfile.mkstemp(
          dir=os.path.dirname(os.path.abspath(self.path)),
          prefix=os.path.basename(self.path) + '.', suffix='.tmp')
      os.fchmod(fd, 0o644)
      with open(fd, 'w', newline='') as f:
        writer = csv.DictWriter(f, list(DEFAULT_FIELDS) + meta_keys)
        writer.writeheader()
        for r in self.rows:
          writer.writerow(r)
      os.replace(tmp, self.path)
    except OSError as e:
      try:  # The previous complete file stays; the partial copy goes.
        if tmp:
          os.remove(tmp)
      except OSError:
        pass
      raise WriteFailed(self.path, e) from None

  def Close(self) -> None:
    pass
