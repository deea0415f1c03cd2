"""PKB-format JSON lines: one object per sample, appended as produced."""

import json
import os
from typing import Any, Dict

from perfkitbenchmarker.publishers import publisher


class JSONPublisher:
  """Appends each row to a JSON-lines file and flushes it at once."""

  def __init__(self, path: str, collapse_labels: bool = True):
    self.path = path
    self.collapse_labels = collapse_labels
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)

  def Publish(self, row: Dict[str, Any]) -> None:
    row = dict(row)
    metadata = row.pop('metadata')
    if self.collapse_labels:
      row['labels'] = publisher.FormatLabels(metadata)
    else:
      row['metadata'] = metadata
    with open(self.path, 'a') as f:
      f.write(json.dumps(row, sort_keys=True) + '\n')
      f.flush()
      os.fsync(f.fileno())

  def Close(self) -> None:
    pass
