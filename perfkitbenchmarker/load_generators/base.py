"""The load generator interface.

Extension seam: a new load generator subclasses `LoadGenerator`, builds its
command lines from a `Workload`, runs them on a client VM and parses the
tool's real output into a `Measurement`. The benchmark module picks one by
name; nothing else needs to change.

A preload is shared by the client VMs: `SplitKeyRange` gives each its own
contiguous `KeySlice` of the key range, `PreloadSetup` runs once (on one VM)
for whatever must happen before any of them writes, and each VM's
`Preload` writes only its slice (study/deployment.Preload runs them side by
side).
"""

import abc
import dataclasses
from typing import Any, List, Optional, Sequence

from perfkitbenchmarker import measurement


@dataclasses.dataclass(frozen=True)
class Endpoint:
  """A Redis shard the load generator connects to."""
  host: str
  port: int


@dataclasses.dataclass(frozen=True)
class Workload:
  """What the requests look like (independent of how many are in flight).

  Key range is inclusive on both ends, like memtier's --key-minimum and
  --key-maximum; `key_count` is the number of distinct keys.
  """
  set_ratio: int = 1
  get_ratio: int = 1
  data_size: int = 100
  key_minimum: int = 1
  key_maximum: int = 100000
  key_pattern: str = 'R:R'
  key_prefix: str = 'memtier-'
  cluster_mode: bool = False
  # memtier only (study/workload_options.py refuses them for redis-benchmark):
  # G pattern median and stddev (None: memtier's defaults), seeds per client
  # and from the clock.
  key_stddev: Optional[float] = None
  key_median: Optional[float] = None
  distinct_client_seed: bool = False
  randomize: bool = False

  @property
  def key_count(self) -> int:
    return self.key_maximum - self.key_minimum + 1

  @property
  def ratio(self) -> str:
    return f'{self.set_ratio}:{self.get_ratio}'

  def Slice(self, key_slice: Optional['KeySlice']) -> 'KeySlice':
    """`key_slice` checked to lie in the key range; None is the whole range."""
    whole = KeySlice(self.key_minimum, self.key_maximum)
    if key_slice is None:
      return whole
    if not whole.first <= key_slice.first <= key_slice.last <= whole.last:
      raise ValueError(f'Keys {key_slice} are not inside {whole}')
    return key_slice


@dataclasses.dataclass(frozen=True)
class KeySlice:
  """Keys `first`..`last` (inclusive) of a workload's range: one client VM's
  share of a preload."""
  first: int
  last: int

  @property
  def count(self) -> int:
    return self.last - self.first + 1

  def __str__(self) -> str:
    return f'{self.first:,}-{self.last:,}'


def SplitKeyRange(key_minimum: int, key_maximum: int,
                  parts: int) -> List[KeySlice]:
  """[key_minimum, key_maximum] as `parts` contiguous slices, in order.

  No gaps, no overlaps; sizes differ by at most one (the first slices take
  the extra keys). A range of fewer keys than `parts` gives one slice per
  key: no slice is empty.
  """
  if parts < 1:
    raise ValueError(f'Cannot split keys into {parts} parts')
  if key_maximum < key_minimum:
    raise ValueError(f'Empty key range {key_minimum}-{key_maximum}')
  count = key_maximum - key_minimum + 1
  parts = min(parts, count)
  size, extra = divmod(count, parts)
  # Slice i starts after i slices of `size` and the extra keys before it.
  starts = [key_minimum + i * size + min(i, extra) for i in range(parts + 1)]
  return [KeySlice(first, after - 1)
          for first, after in zip(starts, starts[1:])]


class LoadGenerator(abc.ABC):
  """Drives load from one client VM against a set of Redis endpoints."""

  NAME = ''
  # Whether `Probe` can hold a load's `rate_per_connection` (a rate
  # limiter of the tool's own); a tool without one is never asked to.
  RATE_LIMITS = False

  @abc.abstractmethod
  def Version(self) -> str:
    """The tool's version string, recorded in every sample."""

  def PreloadSetup(self, endpoints: Sequence[Endpoint], password: str,
                   workload: Workload) -> Any:
    """What a preload needs done once, before any client VM writes its slice.

    Returns:
      What every VM's `Preload` takes as `setup` (None: nothing to share).
    """
    del endpoints, password, workload  # Most tools need nothing shared.
    return None

  @abc.abstractmethod
  def Preload(self, endpoints: Sequence[Endpoint], password: str,
              workload: Workload, key_slice: Optional[KeySlice] = None,
              setup: Any = None) -> int:
    """Writes every key of `key_slice` (default: the whole key range) that
    the probes read, exactly once, into every database.

    `setup` is what `PreloadSetup` returned for this preload; when None,
    `Preload` does that setup itself (one VM preloading alone).

    Returns:
      How many keys this call leaves on the servers, summed over databases
      (each standalone shard is a database of its own, holding every slice),
      for the DBSIZE check.
    """

  @abc.abstractmethod
  def Probe(self, endpoints: Sequence[Endpoint], password: str,
            workload: Workload, load: measurement.Load,
            duration_s: float) -> measurement.Measurement:
    """Offers `load` for `duration_s` seconds and returns what it measured."""

  def DurationForSeconds(self, seconds: int) -> float:
    """The `duration_s` to ask `Probe` for so that its per-second series
    has at least `seconds` complete seconds after any warm-up (the hold
    asks for whole seconds): `seconds` itself for a tool that runs a fixed
    time."""
    return float(seconds)

  def LoadWindowS(self, duration_s: float) -> Optional[float]:
    """Seconds from a probe's start to the end of its load window when the
    tool runs for a fixed time and idles after it (None: the window ends
    with the tool). The server's counters are then read in that idle tail,
    off the probe path (interference.ProbeInterference)."""
    del duration_s
    return None
