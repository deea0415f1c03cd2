"""PKB-format JSON lines: one object per sample, appended as produced."""

import json
import os
from typing import Any, Dict

from perfkitbenchmarker.publishers import csv_publisher
from perfkitbenchmarker.publishers import publisher


class JSONPublisher:
  """Appends each row to a JSON-lines file and flushes it at once."""

  def __init__(self, path: str, collapse_labels: bool = True):
    self.path = path
    self.collapse_labels = collapse_labels
    try:
      os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    except OSError as e:
      raise csv_publisher.WriteFailed(path, e) from None
    self._nofollow = csv_publisher.CheckOwnFile(path)

  def Publish(self, row: Dict[str, Any]) -> None:
    row = dict(row)
    metadata = row.pop('metadata')
    if self.collapse_labels:
      row['labels'] = publisher.FormatLabels(metadata)
    else:
      row['metadata'] = metadata
    data = (json.dumps(row, sort_keys=True) + '\n').encode()
    try:
      fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT |
                   self._nofollow, 0o644)
    except OSError as e:
      raise csv_publisher.WriteFailed(self.path, e) from None
    try:
      end = os.lseek(fd, 0, os.SEEK_END)
      try:
        written = 0
        while written < len(data):
          written += os.write(fd, data[written:])
        os.fsync(fd)
      except OSError as e:
        try:  # No half line: the lines before stay readable.
          os.ftruncate(fd, end)
        except OSError:
          pass
        raise csv_publisher.WriteFailed(self.path, e) from None
    finally:
      os.close(fd)

  def Close(self) -> None:
    pass
