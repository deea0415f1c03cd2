"""The load generator interface.

Extension seam: a new load generator subclasses `LoadGenerator`, builds its
command lines from a `Workload`, runs them on a client VM and parses the
tool's real output into a `Measurement`. The benchmark module picks one by
name; nothing else needs to change.
"""

import abc
import dataclasses
from typing import Optional, Sequence

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


class LoadGenerator(abc.ABC):
  """Drives load from one client VM against a set of Redis endpoints."""

  NAME = ''

  @abc.abstractmethod
  def Version(self) -> str:
    """The tool's version string, recorded in every sample."""

  @abc.abstractmethod
  def Preload(self, endpoints: Sequence[Endpoint], password: str,
              workload: Workload) -> int:
    """Writes every key the probes read exactly once.

    Returns:
      How many keys the servers must hold afterwards, summed over databases
      (each standalone shard is a database of its own), for the DBSIZE check.
    """

  @abc.abstractmethod
  def Probe(self, endpoints: Sequence[Endpoint], password: str,
            workload: Workload, load: measurement.Load,
            duration_s: float) -> measurement.Measurement:
    """Offers `load` for `duration_s` seconds and returns what it measured."""
