"""CSV in PKB's layout: fixed columns, then every metadata key seen.

The header must hold the union of metadata keys, which grows as samples
arrive, so the file is rewritten (atomically) after every sample; a run that
dies keeps every row written so far. Rows already in the file when the
publisher starts (an earlier stage of the same run, e.g. a resumed
`--run_stage=run`) are kept, as the JSON file keeps its lines.
"""

import csv
import os
from typing import Any, Dict, List

from perfkitbenchmarker import errors

DEFAULT_FIELDS = ('timestamp', 'test', 'metric', 'value', 'unit',
                  'product_name', 'official', 'owner', 'run_uri', 'sample_uri')


def WriteFailed(path: str, error: OSError) -> errors.ResultsFileError:
  """The one-line error for a results file that could not be written."""
  return errors.ResultsFileError(
      f'could not write the results file {path}: '
      f'{error.strerror or error}; the samples written before are kept there.')


class CSVPublisher:
  """Keeps the file's earlier rows and rewrites it with each new sample."""

  def __init__(self, path: str):
    self.path = path
    self.rows: List[Dict[str, Any]] = []
    try:
      os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
      if os.path.exists(path):
        with open(path, newline='') as f:
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
    tmp = self.path + '.tmp'
    try:
      with open(tmp, 'w', newline='') as f:
        writer = csv.DictWriter(f, list(DEFAULT_FIELDS) + meta_keys)
        writer.writeheader()
        for r in self.rows:
          writer.writerow(r)
      os.replace(tmp, self.path)
    except OSError as e:
      try:  # The previous complete file stays; the partial copy goes.
        os.remove(tmp)
      except OSError:
        pass
      raise WriteFailed(self.path, e) from None

  def Close(self) -> None:
    pass
