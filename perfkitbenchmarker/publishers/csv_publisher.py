"""CSV in PKB's layout: fixed columns, then every metadata key seen.

The header must hold the union of metadata keys, which grows as samples
arrive, so the file is rewritten (atomically) after every sample; a run that
dies keeps every row written so far.
"""

import csv
import os
from typing import Any, Dict, List

DEFAULT_FIELDS = ('timestamp', 'test', 'metric', 'value', 'unit',
                  'product_name', 'official', 'owner', 'run_uri', 'sample_uri')


class CSVPublisher:

  def __init__(self, path: str):
    self.path = path
    self.rows: List[Dict[str, Any]] = []
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)

  def Publish(self, row: Dict[str, Any]) -> None:
    flat = {k: v for k, v in row.items() if k != 'metadata'}
    flat.update(row['metadata'])
    self.rows.append(flat)
    self._Write()

  def _Write(self) -> None:
    meta_keys = sorted({k for r in self.rows for k in r} - set(DEFAULT_FIELDS))
    tmp = self.path + '.tmp'
    with open(tmp, 'w', newline='') as f:
      writer = csv.DictWriter(f, list(DEFAULT_FIELDS) + meta_keys)
      writer.writeheader()
      for r in self.rows:
        writer.writerow(r)
    os.replace(tmp, self.path)

  def Close(self) -> None:
    pass
