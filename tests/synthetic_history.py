"""Histories generated from real runs, with known noise and known steps.

Test support, also for scripts/bench_changepoints.py and bench_compare_memory.py: the change-point detector is
judged on histories whose truth is known. Each night replays one real run per
cell (the loader frame of real result files), with:

  * throughput-like values (probe and capped throughput, ops/s per $/hr and
    the capped sample's interval) multiplied by 1 + N(0, sigma), sigma drawn
    per cell from `noise` (default 2-3 %), the same factor for all of them so
    that price-performance moves with throughput as in a real run;
  * latency percentiles given their own independent factor of the same size;
  * prices left alone (they are reviewed data, not measurements);
  * a step: from night `step_night` on, the cell `step_cell` has its
    throughput-like values multiplied by `1 + step` (-0.10: a 10 % drop).

Runs get new run_uri and sample_uri values and timestamps on consecutive UTC
nights (cells back to back from 02:00), so the loader's typing and the
night grouping are exercised exactly as with real files.
"""

import dataclasses
import json
import os
import uuid
from typing import Optional, Sequence, Tuple

import numpy as np
import pandas as pd

from perfkitbenchmarker import sample as sample_lib
from perfkitbenchmarker.publishers import bigquery_schema
from perfkitbenchmarker.results_history import cells
from perfkitbenchmarker.results_history import loader
from perfkitbenchmarker.results_history import nights

THROUGHPUT_METRICS = ('throughput', 'latency_capped_throughput',
                      'max_throughput_for_completion_latency_under_1ms',
                      'price_performance')
THROUGHPUT_METADATA = ('throughput_ci95_ops',)
LATENCY_METADATA = ('p50_latency_ms', 'p99_latency_ms', 'p99.9_latency_ms')
FIRST_NIGHT = pd.Timestamp('2026-01-01 02:00', tz='UTC')


@dataclasses.dataclass(frozen=True)
class HistorySpec:
  nights: int = 30
  noise: Tuple[float, float] = (0.02, 0.03)
  step_cell: Optional[str] = None
  step_night: int = 0
  step: float = -0.10
  seed: int = 0
  keep_probes: bool = False


def TemplateRuns(frame: pd.DataFrame) -> pd.DataFrame:
  """One real run per cell (the first), the rows a history replays."""
  first_runs = frame.sort_values('timestamp').drop_duplicates('cell')['run_uri']
  return frame[frame['run_uri'].isin(set(first_runs))]


def Generate(templates: pd.DataFrame, spec: HistorySpec) -> pd.DataFrame:
  """A loader-shaped frame of `spec.nights` nights replaying `templates`.

  `templates` needs the `cell` column (cells.AddCellColumns); the result keeps
  it, so callers can check which cell a change point is about.
  """
  rng = np.random.default_rng(spec.seed)
  if not spec.keep_probes:
    templates = templates[~templates['metric'].isin(
        ['throughput', 'average_latency'])]
  cell_names = sorted(templates['cell'].unique())
  order = {c: i for i, c in enumerate(cell_names)}
  sigma = rng.uniform(*spec.noise, size=len(cell_names))
  # One factor per (night, cell), drawn in a fixed order for reproducibility.
  ops = 1.0 + rng.normal(0.0, 1.0, (spec.nights, len(cell_names))) * sigma
  latency = 1.0 + rng.normal(0.0, 1.0, (spec.nights, len(cell_names))) * sigma
  if spec.step_cell is not None:
    ops[spec.step_night:, order[spec.step_cell]] *= 1.0 + spec.step
  templates = templates.assign(
      _cell=templates['cell'].map(order),
      _offset=templates['timestamp'] - templates.groupby('cell')[
          'timestamp'].transform('min'))
  rows = pd.concat([templates] * spec.nights, ignore_index=True)
  night = np.repeat(np.arange(spec.nights), len(templates))
  cell = rows['_cell'].to_numpy()
  ops_factor = ops[night, cell]
  latency_factor = latency[night, cell]
  is_ops = rows['metric'].isin(THROUGHPUT_METRICS).to_numpy()
  rows['value'] = rows['value'].to_numpy() * np.where(is_ops, ops_factor, 1.0)
  for key in THROUGHPUT_METADATA:
    if key in rows.columns:
      rows[key] = rows[key] * ops_factor
  for key in LATENCY_METADATA:
    if key in rows.columns:
      rows[key] = rows[key] * latency_factor
  rows['timestamp'] = (FIRST_NIGHT + pd.to_timedelta(night, unit='D') +
                       pd.to_timedelta(5 * cell, unit='min') + rows['_offset'])
  run_uri = pd.Series([f'g{n:03d}c{c:02d}' for n, c in zip(night, cell)])
  rows['run_uri'] = run_uri.astype('string')
  rows['sample_uri'] = (run_uri + '-' + pd.Series(range(len(rows))).astype(str)
                       ).astype('string')
  return rows.drop(columns=['_cell', '_offset'])


def SeriesOf(cell: str, metrics: Sequence[str] = ('latency_capped_throughput',
                                                 'price_performance')):
  """The (cell, metric) pairs a throughput step in `cell` should move."""
  return {(cell, m) for m in metrics}


def WriteJsonLines(frame: pd.DataFrame, path: str) -> None:
  """Writes loader-shaped rows back as PKB JSON lines (collapsed labels).

  Only the loader's own and derived columns are left out, so reading the file
  back gives the same samples (the round trip the tests rely on).
  """
  derived = set(cells.CELL_COLUMNS) | {'cell', nights.NIGHT_COLUMN,
                                       nights.NIGHT_START_COLUMN,
                                       loader.SOURCE_COLUMN,
                                       loader.COMMAND_LINE_COLUMN}
  metadata_columns = [c for c in frame.columns
                      if c not in loader.FIXED_FIELDS and c not in derived]
  with open(path, 'w', encoding='utf-8') as f:
    for record in frame.to_dict('records'):
      metadata = {c: record[c] for c in metadata_columns
                  if record[c] is not None and not pd.isna(record[c])}
      row = {k: record.get(k) for k in loader.FIXED_FIELDS}
      row = {k: (None if v is not None and not isinstance(v, str) and
                 pd.isna(v) else v) for k, v in row.items()}
      row['timestamp'] = record['timestamp'].timestamp()
      row['value'] = float(record['value'])
      row['official'] = bool(row['official'])
      row['labels'] = sample_lib.FormatLabels(metadata)
      f.write(json.dumps(row, sort_keys=True, default=str) + '\n')


def WriteRepeatedRuns(history_dir: str, path: str, runs: int) -> int:
  """`runs` copies of the real runs under `history_dir`, as new runs an hour
  apart, written to `path` as PKB JSON lines; returns the sample count.

  For sizing tests and scripts/bench_compare_memory.py: every line is a real
  sample's line with a new run_uri, sample_uri and timestamp.
  """
  templates = []
  for found in bigquery_schema.FindResultsFiles([history_dir]):
    with open(found, encoding='utf-8') as f:
      templates.append([json.loads(line) for line in f if line.strip()])
  start = min(row['timestamp'] for run in templates for row in run)
  count = 0
  os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
  with open(path, 'w', encoding='utf-8') as f:
    for i in range(runs):
      for row in templates[i % len(templates)]:
        row = dict(row, run_uri=f'copy{i:07d}-{uuid.uuid4()}',
                   sample_uri=str(uuid.uuid4()),
                   # Ending at 2023-11-14, never in the future (refused).
                   timestamp=row['timestamp'] - start + 1.7e9 -
                   3600 * (runs - i))
        f.write(json.dumps(row) + '\n')
        count += 1
  return count
