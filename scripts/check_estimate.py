#!/usr/bin/env python3
"""Sets a finished run's measured stage times against its own cost estimate.

  ./pkb.py --cloud=GCP ... --timing_measurements=runtimes
  ./scripts/check_estimate.py results/runs/<run_uri>

The estimate `--dry_run` prints is kept in the run record
(cost_estimate.RunEstimate.Record); the run's `<stage> Runtime` samples
(--timing_measurements=runtimes) measure its phases:

  provision           Resource Provisioning Runtime
  install + preload   Benchmark Prepare Runtime
  search              Benchmark Run Runtime
  teardown            Benchmark Cleanup + Resource Teardown Runtime

One table per benchmark of the run: estimated and measured minutes and
their ratio. A ratio far from 1 on a cloud says which of
cost_estimate.RATES' phase times to correct. Exit 2 with one line when the
run cannot be checked (no estimate or no stage samples, or a record or
results file holding what no run wrote), as for any bad input.
"""

import argparse
import os
import sys
from typing import Dict, List

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(_HERE))

# pylint: disable=g-import-not-at-top,wrong-import-position
from perfkitbenchmarker import venv_reexec
venv_reexec.UseRepoVenv(os.path.dirname(_HERE), __file__)

from perfkitbenchmarker import cost_estimate
from perfkitbenchmarker import errors
from perfkitbenchmarker import measurement
from perfkitbenchmarker import regular_files
from perfkitbenchmarker import run_record as run_record_lib
from perfkitbenchmarker import terminal_text
from perfkitbenchmarker.results_history import loader

RESULTS_FILE = 'perfkitbenchmarker_results.json'
RUNTIME_SUFFIX = ' Runtime'


# The stages whose '<stage> Runtime' samples measure a phase; not 'End to
# End', which every run writes by default (--timing_measurements).
STAGES = frozenset(s for _, stages in cost_estimate.MEASURED_BY
                   for s in stages)
# No stage of a run takes longer: every invocation has a deadline, and
# --timeout_minutes is at most a week.
LONGEST_STAGE_S = 7 * 24 * 3600
# An estimate may be longer (a study larger than its deadline), but not
# this: the flags' bounds keep a dry run's phases far below it (YCSB's
# largest, 10^12 operations a probe, 10^4 probes, is about 10^10 min per
# workload). Past it a record's figure is no estimate, and the table's two
# decimals printed a 1e300 as 300 digits, or summed two to 'inf min'.
LONGEST_ESTIMATE_MIN = 1e12


def StageSeconds(run_dir: regular_files.Directory
                ) -> Dict[str, Dict[str, float]]:
  """Per benchmark ('test'), its '<stage> Runtime' samples in seconds, from
  the run directory's own results file (a downloaded run's is input: never
  read through a symlink, as its record is not)."""
  stages: Dict[str, Dict[str, float]] = {}
  for row in loader.IterJsonLines(RESULTS_FILE, run_dir):
    fixed = row['fixed']
    metric = str(fixed['metric'])
    stage = metric[:-len(RUNTIME_SUFFIX)]
    if (metric.endswith(RUNTIME_SUFFIX) and stage in STAGES and
        fixed['unit'] == 'seconds'):
      seconds = float(fixed['value'])
      if not 0 <= seconds <= LONGEST_STAGE_S:
        raise errors.UsageError(
            f'{os.path.join(run_dir.path, RESULTS_FILE)}: {metric} of {fixed["test"]} is '
            f'{seconds:g} s, which no stage of a run takes (from 0 to a '
            'week, the longest --timeout_minutes); nothing to check.')
      stages.setdefault(str(fixed['test']), {})[stage] = seconds
  return stages


def Lines(benchmark: str, cloud: str,
          checks: List[cost_estimate.PhaseCheck]) -> List[str]:
  # The record is input: its names are shown as text, never as terminal
  # sequences or line breaks.
  lines = [terminal_text.Printable(f'{benchmark} on {cloud}:'),
           f'  {"phases":<18} {"estimated":>10} {"measured":>10} {"ratio":>6}'
           '  measured by']
  for c in checks:
    measured = ('-' if c.measured_min is None
                else f'{c.measured_min:.2f} min')
    ratio = '-' if c.ratio is None else f'{c.ratio:.2f}'
    lines.append(f'  {" + ".join(c.phases):<18} '
                 f'{c.estimated_min:>6.2f} min {measured:>10} {ratio:>6}  '
                 f'{" + ".join(s + RUNTIME_SUFFIX for s in c.stages)}')
  return lines


def EstimatedMinutes(run_dir: str, benchmark: str,
                     estimate) -> Dict[str, float]:
  """The estimate's minutes per phase, as its record keeps them; a record
  is input (a downloaded run's may hold anything), so anything else, or a
  time that is not a number from 0 to LONGEST_ESTIMATE_MIN, is one
  UsageError."""
  minutes = estimate.get('minutes') if isinstance(estimate, dict) else None
  read = ({phase: measurement.FiniteFloat(m) for phase, m in minutes.items()}
          if isinstance(minutes, dict) else {})
  if not read or any(m is None or not 0 <= m <= LONGEST_ESTIMATE_MIN
                     for m in read.values()):
    raise errors.UsageError(
        f'The cost estimate of {benchmark} in '
        f'{os.path.join(run_dir, run_record_lib.RECORD_FILE)} is not minutes '
        f'per phase (each a number from 0 to {LONGEST_ESTIMATE_MIN:g}); '
        'nothing to check.')
  return read


def Check(run_dir: str) -> List[str]:
  if not os.path.isdir(run_dir):  # Load's advice is pkb's (--run_uri).
    raise errors.UsageError(f'{run_dir!r} is no run directory; give '
                            'results/runs/<run_uri>.')
  record = run_record_lib.RunRecord.Load(run_dir)
  estimates = record.info.get('estimate')
  if not isinstance(estimates, dict) or not estimates:
    raise errors.UsageError(
        f'The run in {run_dir} has no cost estimate in its record (runs '
        'before this version, or a --run_stage that skipped provision); '
        'nothing to check.')
  with regular_files.Directory(run_dir) as directory:
    if directory.Kind(RESULTS_FILE) is None:
      raise errors.UsageError(f'No {RESULTS_FILE} in {run_dir}.')
    measured = StageSeconds(directory)
  out = []
  for benchmark, estimate in sorted(estimates.items()):
    stages = measured.get(benchmark, {})
    if not stages:
      raise errors.UsageError(
          f'{benchmark} in {run_dir} has no stage samples; run it with '
          '--timing_measurements=runtimes.')
    checks = cost_estimate.CompareWithRun(
        EstimatedMinutes(run_dir, benchmark, estimate), stages)
    out += Lines(benchmark, str(estimate.get('cloud', '?')), checks)
  return out


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument('run_dir', help='results/runs/<run_uri>')
  args = parser.parse_args(argv)
  try:
    print('\n'.join(Check(args.run_dir)))
  except (errors.Error, loader.LoadError, regular_files.NotRegular, OSError,
          ValueError) as e:
    print(terminal_text.Printable(f'check_estimate: {e}'), file=sys.stderr)
    return 2
  return 0


if __name__ == '__main__':
  sys.exit(main())
