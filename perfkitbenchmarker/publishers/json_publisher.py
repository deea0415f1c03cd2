"""PKB-format JSON lines: one object per sample, appended as produced.

Each line is appended whole under the file's lock (results_file.py), so runs
sharing a --json_path never interleave or lose lines.
"""

import json
from typing import Any, Dict

from perfkitbenchmarker import errors
from perfkitbenchmarker import json_input
from perfkitbenchmarker import sample as sample_lib
from perfkitbenchmarker.publishers import bigquery_schema
from perfkitbenchmarker.publishers import results_file


class JSONPublisher(results_file.Publisher):
  """Appends each row to a JSON-lines file and flushes it at once."""

  def __init__(self, path: str, collapse_labels: bool = True):
    self.collapse_labels = collapse_labels
    super().__init__(path)

  def _CheckExisting(self, fd: int) -> None:
    """A file already there must be PKB JSON lines (its first line a
    sample): lines appended to any other spoil it, and another run's
    run_record.json so spoiled can no longer tear that run down."""
    first = results_file.ReadAll(fd, first_line=True,
                                 limit=bigquery_schema.MAX_LINE_BYTES + 1)
    if not first:
      return
    try:
      row = json_input.Loads(first)
    except json_input.KeyTwice as e:
      raise errors.UsageError(
          f'the results file {self.path}:1: {e}; move it away or give '
          'another --json_path.') from None
    except (ValueError, RecursionError):
      row = None
    if not isinstance(row, dict) or 'metric' not in row:
      # The --json_path given, before the run starts: bad input (exit 2).
      raise errors.UsageError(
          f'the results file {self.path} is not PKB JSON lines this tool '
          'wrote (its first line is not a sample); move it away or give '
          'another --json_path.')

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
