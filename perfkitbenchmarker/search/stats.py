"""The mean of repeats and its 95 % interval (Student t, from scipy.special).

Combining measurements is `measurement.Combine`'s job, not this module's.
"""

import functools
import math
import statistics
import threading
from typing import Optional, Sequence, Tuple

from perfkitbenchmarker import search


@functools.lru_cache(maxsize=None)
def StudentT95(degrees_of_freedom: int) -> float:
  """Two-sided 95 % critical value of Student's t distribution."""
  if degrees_of_freedom < 1:
    raise search.InvalidSearchArgument(
        f'degrees_of_freedom={degrees_of_freedom}: a confidence interval needs '
        'at least two values (one degree of freedom).')
  # scipy.special's inverse t CDF is what scipy.stats.t.ppf computes, at half
  # scipy.stats' import (0.27 s of CPU, not 0.58 s, on this 2-core machine).
  # Imported here: every pkb start (dry runs and refusals included) would
  # otherwise pay it; a search imports it in the background during Prepare.
  from scipy import special  # pylint: disable=g-import-not-at-top
  return float(special.stdtrit(degrees_of_freedom, 0.975))


def ImportInBackground() -> None:
  """Starts importing scipy.special on a daemon thread, so that a search's
  first interval (between two probes, on the probe path) finds it loaded;
  StudentT95 waits for it through the import lock if it is not yet done."""
  threading.Thread(target=StudentT95, args=(1,), daemon=True,
                   name='import-scipy-special').start()


def MeanAndCi95(values: Sequence[float]) -> Tuple[float, Optional[float]]:
  """Mean and 95 % confidence half-width (None for a single value)."""
  mean = statistics.fmean(values)
  if len(values) < 2:
    return mean, None
  return mean, HalfWidth95(statistics.stdev(values), len(values))


def HalfWidth95(stdev: float, n: int) -> float:
  """The 95 % half-width of the mean of `n` values with this spread."""
  return StudentT95(n - 1) * stdev / math.sqrt(n)
