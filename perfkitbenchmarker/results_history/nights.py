"""Groups runs into nights: the unit of the leaderboard and of each history.

A run belongs to one night as a whole (all its samples). The night is the
UTC window of `night_hours` (24: the UTC date) in which the run started,
except that a run starting within `matrix_gap_minutes` of the end of the
previous run joins that run's night: the cells of one matrix run back to back
and share a night even when the matrix crosses midnight.

Seam: `AssignNights` takes the window and the gap as arguments; a matrix id
in the metadata (if a later matrix runner records one) would be one more
grouping rule here.
"""

import dataclasses
from typing import List

import pandas as pd

NIGHT_COLUMN = 'night'
NIGHT_START_COLUMN = 'night_start'


@dataclasses.dataclass(frozen=True)
class RunSpan:
  run_uri: str
  start: pd.Timestamp
  end: pd.Timestamp


def RunSpans(frame: pd.DataFrame) -> List[RunSpan]:
  """Each run's first and last sample time, oldest first."""
  spans = frame.groupby('run_uri')['timestamp'].agg(['min', 'max'])
  spans = spans.sort_values(['min', 'max'])
  return [RunSpan(str(uri), row['min'], row['max'])
          for uri, row in spans.iterrows()]


def _WindowStart(when: pd.Timestamp, night_hours: float) -> pd.Timestamp:
  width = pd.Timedelta(hours=night_hours)
  epoch = pd.Timestamp(0, tz='UTC')
  return epoch + ((when - epoch) // width) * width


def _Label(start: pd.Timestamp, night_hours: float) -> str:
  if night_hours % 24 == 0:
    return start.strftime('%Y-%m-%d')
  return start.strftime('%Y-%m-%d %H:%M')


def AssignNights(frame: pd.DataFrame, night_hours: float = 24.0,
                 matrix_gap_minutes: float = 60.0) -> pd.DataFrame:
  """The frame with `night` (a sortable label) and `night_start` columns."""
  if night_hours <= 0:
    raise ValueError('night_hours must be positive')
  frame = frame.copy(deep=False)  # Two columns added, none written in.
  gap = pd.Timedelta(minutes=matrix_gap_minutes)
  night_of_run = {}
  previous = None
  for span in RunSpans(frame):
    if previous is not None and span.start - previous.end <= gap:
      night_of_run[span.run_uri] = night_of_run[previous.run_uri]
    else:
      night_of_run[span.run_uri] = _WindowStart(span.start, night_hours)
    if previous is None or span.end > previous.end:
      previous = span
  starts = frame['run_uri'].astype(str).map(night_of_run)
  frame[NIGHT_START_COLUMN] = pd.to_datetime(starts, utc=True)
  labels = {s: _Label(s, night_hours) for s in set(night_of_run.values())}
  frame[NIGHT_COLUMN] = frame[NIGHT_START_COLUMN].map(labels)
  return frame


def Nights(frame: pd.DataFrame) -> List[str]:
  """Night labels in time order."""
  ordered = frame[[NIGHT_START_COLUMN, NIGHT_COLUMN]].drop_duplicates()
  return list(ordered.sort_values(NIGHT_START_COLUMN)[NIGHT_COLUMN])
