"""PKB's timing samples: End to End Runtime and per-stage runtimes.

`Parse` checks --timing_measurements (none, end_to_end_runtime, runtimes,
timestamps; none alone). `StageTimes` is the driver's timer: stage_runner's
RunOne and _Finish wrap each stage in `Measure`, and after teardown `Samples`
gives '<name> Runtime' and, with timestamps, '<name> Start/Stop Timestamp' for
each stage that ran to its end, with PKB's stage names. Real runs' stage
runtimes are what cost_estimate.RATES' phase times should be checked
against.
"""

import contextlib
from typing import Callable, FrozenSet, List, Sequence, Tuple

from perfkitbenchmarker import errors
from perfkitbenchmarker import flags as pkb_flags
from perfkitbenchmarker import sample as sample_lib

# PKB's names for the stages in its timing samples ('<name> Runtime', ...).
STAGE_TIMING_NAMES = {
    'provision': 'Resource Provisioning',
    'prepare': 'Benchmark Prepare',
    'run': 'Benchmark Run',
    'cleanup': 'Benchmark Cleanup',
    'teardown': 'Resource Teardown',
}


def Parse(values: Sequence[str]) -> FrozenSet[str]:
  """--timing_measurements as a set (empty for none); refuses bad values."""
  values = [v.strip() for v in values if v.strip()]
  bad = [v for v in values if v not in pkb_flags.TIMING_MEASUREMENTS]
  if bad:
    raise errors.UsageError(
        f'--timing_measurements has unknown value(s) {", ".join(bad)}; use '
        f'{", ".join(pkb_flags.TIMING_MEASUREMENTS)}.')
  if pkb_flags.TIMING_NONE in values and set(values) != {pkb_flags.TIMING_NONE}:
    raise errors.UsageError(
        f'--timing_measurements={",".join(values)}: none cannot be combined '
        'with other values; give it alone.')
  return frozenset(values) - {pkb_flags.TIMING_NONE}


class StageTimes:
  """When each stage that ran to its end started and stopped (PKB's timer).

  A stage that raises is not recorded: its time is no measurement.
  """

  def __init__(self, clock: Callable[[], float]):
    self._clock = clock
    self.intervals: List[Tuple[str, float, float]] = []

  def Now(self) -> float:
    return self._clock()

  def Add(self, stage: str, start: float) -> None:
    """Records `stage`, from `start` (a Now()) to now, as run to its end."""
    self.intervals.append((stage, start, self._clock()))

  @contextlib.contextmanager
  def Measure(self, stage: str):
    """Times the enclosed stage; one that raises is not recorded."""
    start = self.Now()
    yield
    self.Add(stage, start)

  def Samples(self, runtimes: bool,
              timestamps: bool) -> List[sample_lib.Sample]:
    """Per stage, in order: its Runtime, Start and Stop Timestamp samples."""
    samples = []
    for stage, start, stop in self.intervals:
      name = STAGE_TIMING_NAMES[stage]
      if runtimes:
        samples.append(sample_lib.Sample(f'{name} Runtime', stop - start,
                                         'seconds', {}))
      if timestamps:
        samples += [sample_lib.Sample(f'{name} {edge} Timestamp', at,
                                      'seconds', {})
                    for edge, at in (('Start', start), ('Stop', stop))]
    return samples
