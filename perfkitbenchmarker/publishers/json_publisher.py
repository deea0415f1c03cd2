"""PKB-format JSON lines: one object per sample, appended as produced.

Each line is appended whole under the file's lock (results_file.py), so runs
sharing a --json_path never interleave or lose lines.
"""

import json
from typing import Any, Dict

from perfkitbenchmarker import sample as sample_lib
from perfkitbenchmarker.publishers import results_file


class JSONPublisher:
  """Appends each row to a JSON-lines file and flushes it at once."""

  def __init__(self, path: str, collapse_labels: bool = True):
    self.path = path
    self.collapse_labels = collapse_labels
    self._nofollow = results_file.CheckOwnFile(path)

  def Publish(self, row: Dict[str, Any]) -> None:
    row = dict(row)
    metadata = row.pop('metadata')
    if self.collapse_labels:
      row['labels'] = sample_lib.FormatLabels(metadata)
    else:
      row['metadata'] = metadata
    data = (json.dumps(row, sort_keys=True) + '\n').encode()
    with results_file.Locked(self.path, self._nofollow) as fd:
      results_file.AppendWhole(fd, self.path, data)

  def Close(self) -> None:
    pass
