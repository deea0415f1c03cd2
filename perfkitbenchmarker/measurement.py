"""Load points and measurements shared by load generators and the search.

This module is pure data: no flags, no VMs, no I/O. Load generators turn their
tool's output into a `Measurement`; the latency-capped search reads only
`Measurement`s and proposes `Load`s. A new load generator plugs in by producing
these records; a new search policy by consuming them.
"""

import dataclasses
from typing import Mapping, Optional, Tuple


@dataclasses.dataclass(frozen=True, order=True)
class Load:
  """One point of offered load for a closed-loop load generator.

  Attributes:
    threads: load generator threads (memtier -t, redis-benchmark --threads).
    clients: connections per thread (memtier -c).
    pipeline: requests in flight per connection (memtier --pipeline, -P).
  """
  threads: int
  clients: int
  pipeline: int = 1

  @property
  def connections(self) -> int:
    return self.threads * self.clients

  @property
  def outstanding_requests(self) -> int:
    """Requests in flight at any moment in a closed loop."""
    return self.connections * self.pipeline

  def Describe(self) -> str:
    text = f'{self.threads}x{self.clients}'
    if self.pipeline != 1:
      text += f' p{self.pipeline}'
    return text


@dataclasses.dataclass(frozen=True)
class SecondStats:
  """One second of a probe, from the load generator's per-second series."""
  second: int
  ops: int
  average_latency_ms: Optional[float]
  warmup: bool = False


@dataclasses.dataclass(frozen=True)
class Measurement:
  """What one probe at one load measured.

  Attributes:
    load: the load the probe offered.
    throughput: operations per second over the measured (non-warm-up) part.
    average_latency_ms: mean request latency, weighted by operation counts.
    p50_latency_ms, p99_latency_ms, p999_latency_ms: percentiles, if known.
    duration_s: seconds the figures above cover.
    ops: operations counted in that span.
    per_second: per-second series (warm-up seconds kept but tagged).
    client_saturated: the load generator's CPU, not the server, was the limit.
    client_cpu_busy_fraction: busy share of the client's cores, if measured.
    metadata: load generator name and version and other facts for samples.
  """
  load: Load
  throughput: float
  average_latency_ms: float
  p50_latency_ms: Optional[float] = None
  p99_latency_ms: Optional[float] = None
  p999_latency_ms: Optional[float] = None
  duration_s: float = 0.0
  ops: int = 0
  per_second: Tuple[SecondStats, ...] = ()
  client_saturated: bool = False
  client_cpu_busy_fraction: Optional[float] = None
  metadata: Mapping[str, object] = dataclasses.field(default_factory=dict)

  def UnderCap(self, cap_ms: float) -> bool:
    return self.average_latency_ms < cap_ms
