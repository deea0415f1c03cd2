"""Key-access distributions: the Gaussian (G:G) width for a RAM hit ratio.

Pure functions, no flags. memtier's G pattern draws key indices from a normal
distribution around `--key-median` (default: the middle of the range) with
`--key-stddev` (default: range / 6), redrawing draws outside the range. A
server that keeps a fraction of the keys in RAM and the rest on flash (Redis
on Flash) keeps the hottest keys in RAM: the window of that many keys
centred on the median. The share of requests landing in that window is the
RAM hit ratio:

  hit = P(|X - median| <= window / 2) = 2 * Phi(window / (2 * stddev)) - 1

so stddev = window / (2 * Phi^-1((1 + hit) / 2)), window = ram_fraction *
key_count. The redraw of out-of-range draws is ignored: it matters only when
the window is within ~3 standard deviations of the range's ends, which
`GaussianStddevForHitRatio` refuses (then no Gaussian over this range gives
that ratio with memtier's median).

The Redis on Flash I4i study's 85 % case (771,141,855 keys, RAM:flash 20:80)
published --key-stddev=50358491; this formula gives 53,568,947 (6.4 % wider,
an 87.4 % hit ratio for theirs). The study does not say how it derived its
figure.
"""

import dataclasses
import math
import statistics
from typing import Optional

# The standard normal from the standard library: the same ppf/cdf as
# scipy.stats.norm without a second of scipy import on every pkb start.
_NORMAL = statistics.NormalDist()

# Beyond this many standard deviations the out-of-range redraw (ignored
# above) changes the hit ratio by less than 0.3 %.
_MIN_HALF_RANGE_SIGMAS = 3.0


@dataclasses.dataclass(frozen=True)
class GaussianKeys:
  """A G:G key pattern: memtier's --key-median and --key-stddev."""
  median: float
  stddev: float


def DefaultMedian(key_minimum: int, key_maximum: int) -> float:
  """memtier's default median: the middle of the inclusive range."""
  return (key_minimum + key_maximum) / 2


def GaussianStddevForHitRatio(key_minimum: int, key_maximum: int,
                              ram_fraction: float, hit_ratio: float,
                              median: Optional[float] = None) -> float:
  """The --key-stddev whose RAM-resident hottest window (`ram_fraction` of
  the keys, 0.2 for RAM:flash 20:80) gets `hit_ratio` of the requests.

  Raises:
    ValueError: for fractions outside (0, 1), or a window so wide that the
      range's ends would distort the ratio.
  """
  if key_maximum <= key_minimum:
    raise ValueError(f'Key range [{key_minimum}, {key_maximum}] is empty.')
  for name, value in (('ram_fraction', ram_fraction),
                      ('hit_ratio', hit_ratio)):
    if not (math.isfinite(value) and 0 < value < 1):
      raise ValueError(f'{name}={value} must be between 0 and 1.')
  key_count = key_maximum - key_minimum + 1
  window = ram_fraction * key_count
  stddev = window / (2 * _NORMAL.inv_cdf((1 + hit_ratio) / 2))
  if median is None:
    median = DefaultMedian(key_minimum, key_maximum)
  if not key_minimum < median < key_maximum:
    raise ValueError(f'Median {median} is outside [{key_minimum}, '
                     f'{key_maximum}].')
  room = min(median - key_minimum, key_maximum - median)
  if room < _MIN_HALF_RANGE_SIGMAS * stddev:
    raise ValueError(
        f'A {hit_ratio:.0%} hit ratio with {ram_fraction:.0%} of the keys in '
        f'RAM needs --key-stddev {stddev:,.0f}, over a third of the distance '
        'from the median to the range\'s end: memtier would redraw too many '
        'keys outside it. Raise '
        'the hit ratio or lower the RAM fraction.')
  return stddev


def GaussianForHitRatio(key_minimum: int, key_maximum: int,
                        ram_fraction: float, hit_ratio: float,
                        median: Optional[float] = None) -> GaussianKeys:
  """Median (default: memtier's) and whole-key stddev for a hit ratio."""
  if median is None:
    median = DefaultMedian(key_minimum, key_maximum)
  stddev = GaussianStddevForHitRatio(key_minimum, key_maximum, ram_fraction,
                                     hit_ratio, median)
  return GaussianKeys(median=median, stddev=float(round(stddev)))
