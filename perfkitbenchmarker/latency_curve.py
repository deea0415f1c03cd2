"""The latency-throughput curve under an answer: its rates and their limits.

After the search, the study offers the answer's connections fixed rates
below the answer's throughput (memtier's --rate-limiting, a rate per
connection) and publishes what each point achieved and at what latency: the
curve people choose a machine by, beside the one capped point.

memtier's limiter (shard_connection.cpp, memtier_benchmark.cpp) wakes each
connection on a timer of its own at most 50 times a second and lets it send
ceil(rate / 50) requests per wake-up, rate // that many wake-ups a second;
a request that did not fit in its wake-up is not sent later (the count is
reset, not carried over), and its latency is timed from its actual send. So
the rate a connection is offered is `MemtierOfferedRate`, not always the
rate asked for, and a point whose server (or client) could not keep up
achieves less than it was offered: such a point is named `rate_not_achieved`
(`RateLimit`), with what limited it in its detail, instead of being read as
a latency at that rate.

Pure: no flags, I/O or clock. Extension seam: another tool's limiter is one
more offered-rate rule beside `MemtierOfferedRate`.
"""

import dataclasses
import math
from typing import Any, Dict, Optional, Sequence, Tuple

from perfkitbenchmarker import attribution
from perfkitbenchmarker import measurement

ROLE = 'curve'
# Percent of the answer's throughput of each point: on clouds and static
# machines, whose runs take minutes anyway, and on Local, where the default
# study takes about 25 s and a 2 s curve probe with a real memtier took
# 3.25 s (its idle last second, the harness; load average 14-20), so two
# points of LOCAL_PROBE_S each (study/search_options.CurveOptions).
DEFAULT_PERCENTS = (25, 50, 75, 90)
LOCAL_PERCENTS = (50, 90)
LOCAL_PROBE_S = 1
# memtier's limiter wakes a connection at most this often per second.
MEMTIER_WAKEUPS_PER_SECOND = 50
# A point achieved its rate when its throughput was at least this share of
# the rate offered: a real memtier on loopback achieved 0.991 to 1.001 of
# 2,400 and 6,400 ops/s offered over 32 connections (1 s and 2 s probes, load
# average 4), and 0.76 to 0.97 of 32,000 and 42,880 at that load (its closed
# loop: 64,000): below, the shortfall is the server's or the client's.
ACHIEVED_FRACTION = 0.95

RATE_NOT_ACHIEVED = attribution.RATE_NOT_ACHIEVED


def MemtierOfferedRate(rate_per_connection: int) -> float:
  """Requests per second memtier's limiter offers one connection asked for
  `rate_per_connection` (--rate-limiting): ceil(rate / 50) requests per
  wake-up, rate // that many wake-ups a second; 75 gives 74, 1,010 gives
  1,008."""
  if rate_per_connection < 1:
    raise ValueError(f'A rate per connection is at least 1, not '
                     f'{rate_per_connection}')
  per_wakeup = math.ceil(rate_per_connection / MEMTIER_WAKEUPS_PER_SECOND)
  return float(per_wakeup * (rate_per_connection // per_wakeup))


@dataclasses.dataclass(frozen=True)
class CurvePoint:
  """One point of the curve: `percent` of the answer's throughput, offered
  as `rate_per_connection` on each of `connections` (every connection of
  the probe: its processes and client VMs)."""
  percent: int
  rate_per_connection: int
  connections: int

  @property
  def offered_ops(self) -> float:
    """What memtier's limiter offers in all (ops/s)."""
    return MemtierOfferedRate(self.rate_per_connection) * self.connections


def NearestMemtierRate(per_connection: float) -> int:
  """The --rate-limiting whose offered rate (MemtierOfferedRate) is nearest
  `per_connection`: 1,852 a second is offered as 1,824 (38 x 48), 1,850 as
  1,850 (37 x 50); the lower rate of a tie."""
  # A rate r is offered as at least r minus one wake-up's requests and at
  # most r, so only rates within a wake-up's requests of it can be nearest.
  burst = math.ceil(per_connection / MEMTIER_WAKEUPS_PER_SECOND) + 1
  low = max(1, math.floor(per_connection) - burst)
  high = max(1, math.ceil(per_connection) + burst)
  return min(range(low, high + 1), key=lambda r: (
      abs(MemtierOfferedRate(r) - per_connection), r))


def PlanPoints(answer_ops: float, connections: int,
               percents: Sequence[int]) -> Tuple[CurvePoint, ...]:
  """The curve's points, lowest rate first: each percent of `answer_ops`
  spread over `connections` at the memtier rate nearest it (at least 1 a
  second); points that come to the same rate are one point."""
  if connections < 1 or not answer_ops > 0:
    return ()
  points = {}
  for percent in sorted(set(percents)):
    rate = NearestMemtierRate(answer_ops * percent / 100 / connections)
    points.setdefault(rate, CurvePoint(percent, rate, connections))
  return tuple(points[rate] for rate in sorted(points))


def AchievedShare(point: CurvePoint, achieved_ops: float) -> float:
  return achieved_ops / point.offered_ops


def RateLimit(point: CurvePoint, achieved_ops: float,
              measured: Optional[attribution.Limit]
              ) -> Optional[attribution.Limit]:
  """`rate_not_achieved` when the point achieved less than
  ACHIEVED_FRACTION of its offered rate, its detail saying by how much and
  what limited the probe (`measured`, the one rule's limit); None when
  the rate was achieved (the probe keeps its own limit)."""
  share = AchievedShare(point, achieved_ops)
  if share >= ACHIEVED_FRACTION:
    return None
  detail = (f'achieved {achieved_ops:,.0f} of the {point.offered_ops:,.0f} '
            f'ops/s offered ({100 * share:.1f} %)')
  figures: Tuple[Tuple[str, object], ...] = ()
  if measured is not None:
    detail += f'; {measured.words}: {measured.detail}'
    figures = measured.figures + (('limit_measured', measured.name),)
  return attribution.Limit(RATE_NOT_ACHIEVED, detail, figures)


def ProbeConnections(m: measurement.Measurement,
                     per_connection: int = 1) -> int:
  """Every connection a probe opened: its load on each client process,
  `per_connection` each (a cluster client's: one per primary)."""
  return (m.load.connections * int(m.metadata.get('client_processes', 1)) *
          per_connection)


def CurveMetadata(point: CurvePoint,
                  m: measurement.Measurement) -> Dict[str, Any]:
  """What a curve point's samples say beyond a probe's (which name the
  cap's statistic and its figure, capped_latency_ms, beside p99): the rate
  offered and achieved, and `rate_not_achieved` (with the probe's own limit
  in its detail) when it fell short."""
  metadata: Dict[str, Any] = {
      'curve_percent': point.percent,
      'rate_per_connection': point.rate_per_connection,
      'offered_ops_per_s': round(point.offered_ops, 1),
      'rate_achieved_pct': round(100 * AchievedShare(point, m.throughput),
                                 1),
  }
  short = RateLimit(point, m.throughput, attribution.FromMetadata(m.metadata))
  if short is not None:
    metadata.update(short.Metadata())
  return metadata
