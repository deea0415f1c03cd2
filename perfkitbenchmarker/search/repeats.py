"""Confirmation repeats: how many, when to stop, and disturbed repeats.

Every policy that confirms an answer (adaptive, linear with repeats,
staircase) repeats one load through `RepeatRule.Run`. The stop rule (the
95 % interval within its target, the most repeats, or the target out of
reach at the noise shown) and the re-run of disturbed repeats, with why:
docs/search.md, "Searches under noise". Pure: no flags, VMs, I/O or clock.
"""

import dataclasses
import math
import statistics
from typing import Optional, Sequence, Tuple

from perfkitbenchmarker import measurement
from perfkitbenchmarker.search import driver
from perfkitbenchmarker.search import stats

# Why a set stopped (RepeatSet.stop).
STOP_PRECISE = 'precise'        # half-width within the target
STOP_MOST = 'most'              # the most repeats allowed
STOP_OUT_OF_REACH = 'out_of_reach'  # target unreachable within `most`
STOP_FIXED = 'fixed'            # no target: exactly `least`


@dataclasses.dataclass(frozen=True)
class RepeatSet:
  """The repeats of one load.

  Attributes:
    counted: the repeats whose mean and interval are the figure.
    excluded: disturbed repeats that were run again (not in the interval).
    stop: why the set ended (STOP_*).
    reruns_left: re-runs of disturbed repeats the search has left.
    projected_pct: for STOP_OUT_OF_REACH, the half-width `most` repeats
      would give, as % of the mean.
  """
  counted: Tuple[driver.ProbeRecord, ...]
  excluded: Tuple[driver.ProbeRecord, ...] = ()
  stop: str = STOP_FIXED
  projected_pct: Optional[float] = None
  reruns_left: int = 0

  @property
  def mean(self) -> float:
    return statistics.fmean(r.throughput for r in self.counted)

  @property
  def stdev(self) -> float:
    """The spread of one repeat (0 for a single one)."""
    values = [r.throughput for r in self.counted]
    return statistics.stdev(values) if len(values) > 1 else 0.0

  @property
  def latency_ms(self) -> float:
    """The capped statistic over the counted repeats together: the
    operation-weighted average, or the percentile of their merged
    histograms (`measurement.CombineRepeats`), never a mean of percentiles;
    infinite when unknown, like `ProbeRecord.latency_ms`."""
    statistic = self.counted[0].statistic
    if statistic == measurement.AVERAGE:
      return measurement.WeightedAverageLatencyMs(
          [r.measurement for r in self.counted])
    value = measurement.CombineRepeats(
        [r.measurement for r in self.counted]).LatencyMs(statistic)
    return math.inf if value is None else value

  def LatencyWords(self, average_verb: str = 'averaged') -> str:
    """'averaged 0.812 ms' or 'with p99 0.812 ms' (driver.LatencyWords)."""
    return driver.LatencyWords(self.counted[0].statistic, self.latency_ms,
                               average_verb)

  def MergedWords(self) -> str:
    """E.g. 'its 3 repeats merged: p95 2.767 ms', for an unconfirmed answer's
    reason: the repeats alone, while that answer's published figures merge
    every probe at its load (the search probe too), so the two differ and
    each says what it is."""
    count = len(self.counted)
    return (f'its {count} repeat{"" if count == 1 else "s"} merged: '
            f'{self.counted[0].statistic} {self.latency_ms:.3f} ms; the '
            'answer\'s figures merge every probe at that load but the '
            'disturbed repeats run again')

  def Describe(self) -> str:
    """E.g. '3 repeats, +-4.1 % (the 2 % target is out of reach at this
    noise: 6 repeats would give about +-2.6 %), 1 disturbed repeat run
    again'."""
    mean, half = stats.MeanAndCi95([r.throughput for r in self.counted])
    text = f'{len(self.counted)} repeats'
    if half is not None and mean > 0:
      text += f', 95 % interval +-{100 * half / mean:.1f} %'
    if self.stop == STOP_OUT_OF_REACH and self.projected_pct is not None:
      text += (' (target out of reach at this noise: more repeats would give '
               f'about +-{self.projected_pct:.1f} %)')
    if self.excluded:
      text += (f', {len(self.excluded)} disturbed repeat(s) run again and '
               'left out')
    return text


@dataclasses.dataclass(frozen=True)
class RepeatRule:
  """When a load has been repeated enough (module docstring).

  Attributes:
    least: repeats that count, at least (>= 1).
    most: repeats that count, at most (raised to `least` if below).
    ci_target: the half-width to stop at, as a fraction of the mean (0:
      exactly `least` repeats).
    max_reruns: disturbed repeats run again per search, at most.
    stop_out_of_reach: stop once the target is out of reach (False: the
      rule before issue 23, repeats run to `most` while over the target;
      kept for scripts/bench_search_floor.py's side-by-side).
  """
  least: int = 3
  most: int = 6
  ci_target: float = 0.02
  max_reruns: int = 3
  stop_out_of_reach: bool = True

  def __post_init__(self):
    driver.CheckWholeNumbers(vars(self), least=1, most=0, max_reruns=0)
    if not 0 <= self.ci_target < 1:
      raise driver.InvalidSearchArgument(
          f'ci_target={self.ci_target!r}: must be a fraction in [0, 1).')

  @classmethod
  def Fixed(cls, n: int) -> 'RepeatRule':
    """Exactly n repeats that count, up to n disturbed ones run again."""
    return cls(least=n, ci_target=0, max_reruns=n)

  @property
  def upper(self) -> int:
    """Counted repeats at most."""
    return self.least if not self.ci_target else max(self.least, self.most)

  def Stop(self, values: Sequence[float]) -> Tuple[Optional[str],
                                                   Optional[float]]:
    """(why to stop, projected %) after these counted throughputs, or
    (None, None) to repeat again."""
    n = len(values)
    if n < self.least:
      return None, None
    if n >= self.upper:
      return (STOP_FIXED if not self.ci_target else STOP_MOST), None
    if n < 2:
      return None, None
    mean, half = stats.MeanAndCi95(values)
    if mean <= 0 or half <= self.ci_target * mean:
      return STOP_PRECISE, None
    projected = stats.HalfWidth95(statistics.stdev(values), self.upper)
    if self.stop_out_of_reach and projected > self.ci_target * mean:
      return STOP_OUT_OF_REACH, 100 * projected / mean
    return None, None

  def Run(self, load: measurement.Load, note: str = 'confirmation',
          reruns_left: Optional[int] = None, after_disturbed: bool = False):
    """Repeats `load`; a generator for a policy (`yield from`), returning
    a RepeatSet. `reruns_left`: what an earlier set of the same search left
    of `max_reruns` (None: all of it). `after_disturbed`: whether the probe
    the policy took just before this set was disturbed."""
    left = self.max_reruns if reruns_left is None else reruns_left
    counted, excluded = [], []
    rerun = False  # whether this probe re-runs a disturbed one
    before = after_disturbed  # whether the probe before this one was
    while True:
      label = f'{note} {len(counted) + 1} ({self.least}-{self.upper})'
      if rerun:
        label += ', again: the last was disturbed'
      record = yield driver.ProbeRequest(
          load, driver.ROLE_CONFIRM, label,
          runs_again=excluded[-1].index if rerun else None)
      # Disturbed twice running: it lasts, a re-run would not escape it.
      rerun = record.disturbed and not before and left > 0
      before = record.disturbed
      if rerun:
        excluded.append(record)
        left -= 1
        continue
      counted.append(record)
      stop, projected = self.Stop([r.throughput for r in counted])
      if stop:
        return RepeatSet(tuple(counted), tuple(excluded), stop, projected,
                         left)
