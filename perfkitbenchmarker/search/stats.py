"""The mean of repeats and its 95 % interval (Student t).

Combining measurements is `measurement.Combine`'s job, not this module's.
"""

import functools
import math
import statistics
from typing import Optional, Sequence, Tuple

from perfkitbenchmarker import search


# Two-sided 95 % critical values of Student's t for 1-30 degrees of freedom,
# as scipy.special.stdtrit(df, 0.975) gives them (the test compares every one
# with scipy.stats). A search's repeats need no more, and importing scipy for
# them cost each searching pkb run about 0.3 s of CPU.
_T95 = (
    12.706204736432095, 4.302652729696142, 3.182446305284263,
    2.7764451051977987, 2.570581835636314, 2.4469118511449692,
    2.3646242515927844, 2.306004135204166, 2.2621571628540993,
    2.2281388519649385, 2.200985160082949, 2.1788128296634177,
    2.1603686564610127, 2.1447866879169273, 2.131449545559323,
    2.1199052992210112, 2.1098155778331806, 2.10092204024096,
    2.093024054408263, 2.0859634472658364, 2.079613844727662,
    2.0738730679040147, 2.0686576104190406, 2.0638985616280205,
    2.059538552753294, 2.055529438642871, 2.0518305164802833,
    2.048407141795244, 2.045229642132703, 2.0422724563012373,
)


@functools.lru_cache(maxsize=None)
def StudentT95(degrees_of_freedom: int) -> float:
  """Two-sided 95 % critical value of Student's t distribution."""
  if degrees_of_freedom < 1:
    raise search.InvalidSearchArgument(
        f'degrees_of_freedom={degrees_of_freedom}: a confidence interval needs '
        'at least two values (one degree of freedom).')
  if degrees_of_freedom <= len(_T95):
    return _T95[degrees_of_freedom - 1]
  # scipy.special's inverse t CDF is what scipy.stats.t.ppf computes, at half
  # scipy.stats' import; past the table only (a history of many runs).
  from scipy import special  # pylint: disable=g-import-not-at-top
  return float(special.stdtrit(degrees_of_freedom, 0.975))


def MeanAndCi95(values: Sequence[float]) -> Tuple[float, Optional[float]]:
  """Mean and 95 % confidence half-width (None for a single value)."""
  mean = statistics.fmean(values)
  if len(values) < 2:
    return mean, None
  return mean, HalfWidth95(statistics.stdev(values), len(values))


def HalfWidth95(stdev: float, n: int) -> float:
  """The 95 % half-width of the mean of `n` values with this spread."""
  return StudentT95(n - 1) * stdev / math.sqrt(n)
