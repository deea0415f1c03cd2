"""Groups runs into nights: the unit of the leaderboard and of each history.

A run's night is the UTC window of `night_hours` it started in, except that
a run starting within `matrix_gap_minutes` of the previous run's end joins
its night: a matrix's cells share a night even across midnight. A night
never holds runs starting `night_hours` or more after its first run's
start: runs an hour apart (a scheduled hourly run, a day of manual runs)
otherwise chained into one night for as long as they went on, a week of
them one leaderboard and one point of each history series.
"""

from typing import List

import pandas as pd

NIGHT_COLUMN = 'night'
NIGHT_START_COLUMN = 'night_start'


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
  width = pd.Timedelta(hours=night_hours)
  night_of_run = {}
  first_start = {}  # run_uri -> the start of its night's first run
  previous = None  # (run_uri, end) of the run that ends last so far
  spans = frame.groupby('run_uri')['timestamp'].agg(['min', 'max'])
  for uri, start, end in spans.sort_values(['min', 'max']).itertuples():
    uri = str(uri)
    if (previous is not None and start - previous[1] <= gap and
        start - first_start[previous[0]] < width):
      night_of_run[uri] = night_of_run[previous[0]]
      first_start[uri] = first_start[previous[0]]
    else:
      night_of_run[uri] = _WindowStart(start, night_hours)
      first_start[uri] = start
    if previous is None or end > previous[1]:
      previous = (uri, end)
  starts = frame['run_uri'].astype(str).map(night_of_run)
  frame[NIGHT_START_COLUMN] = pd.to_datetime(starts, utc=True)
  labels = {s: _Label(s, night_hours) for s in set(night_of_run.values())}
  frame[NIGHT_COLUMN] = frame[NIGHT_START_COLUMN].map(labels)
  return frame


def Nights(frame: pd.DataFrame) -> List[str]:
  """Night labels in time order."""
  ordered = frame[[NIGHT_START_COLUMN, NIGHT_COLUMN]].drop_duplicates()
  return list(ordered.sort_values(NIGHT_START_COLUMN)[NIGHT_COLUMN])
