"""Whether a probe's seconds agree with its whole, and whether a load held.

A probe's figure is its whole span; the load generator's per-second series
(memtier's 'Time-Serie', redis-benchmark's progress lines: what each can
give is in `measurement.SecondStats`) says whether every second agreed.
Two rules, over the complete seconds after the warm-up:

  over the cap  a second's latency, in the cap's statistic, at or over the
                cap while the whole probe is under it;
  swing         the lowest second's throughput short of the highest by more
                than SWING_BOUND, the per-second noise measured on this
                machine with the real memtier (docs/search.md, "Every second
                of a probe").

A probe either rule catches is `unsteady`: it carries the figures, its limit
is named `unsteady` unless the CPU rule already named the client or others
as the cause (attribution.py; those say why the seconds moved), and an
answer resting on it is not confirmed (verdict.py).

`OfHold` judges the answer's load held for a longer time after the search
(second by second: under the cap, and not below the searched figure by more
than the swing bound) and says it in words: "held 37 of 60 s under the cap".

Pure: no flags, I/O or clock. Extension seam: a new rule is a field of
`Steadiness` set in `OfSeconds`, with its words in `Steadiness.Words`.
"""

import dataclasses
from typing import Dict, Optional, Sequence, Tuple

from perfkitbenchmarker import attribution
from perfkitbenchmarker import measurement

# The per-second throughput swing a steady probe stays within: 1 - the
# lowest complete second / the highest. scripts/bench_steady_noise.py with
# a real memtier on this 2-core machine (never quiet while this was built):
# 2-second windows swung at most 0.42 (p99 0.36-0.42) at load average 4-20,
# up to 0.81 at 15.6 and 0.98 at 6.5 (stalls: other runs' cgroups of the
# highest CPU weight); a CPU quota cut to 0.1-0.25 CPU swung 0.68-0.85.
# 0.5 is over the moderate machine's noise and under a cut; a quiet
# machine's bound would be lower (docs/search.md, "Every second of a
# probe, and the answer held").
SWING_BOUND = 0.5

KEY = 'unsteady'
# How many of a probe's counted seconds were at or over the cap while the
# whole was under it (Marked's metadata; SecondsOverCap reads it back).
OVER_CAP_KEY = 'per_second_seconds_over_cap'
DETAIL_KEY = 'unsteady_detail'
# The CPU rule's limit, kept when `unsteady` is named instead.
CPU_LIMIT_KEY = 'cpu_limit'
# CPU-rule limits that already say why a probe's seconds moved: the
# client's own limit, or others taking the CPU.
_EXPLAINING_LIMITS = attribution.CLIENT_LIMITS + (attribution.DISTURBED,)


def Counted(per_second: Sequence[measurement.SecondStats]
            ) -> Tuple[Tuple[measurement.SecondStats, ...], int, int]:
  """(the seconds a rule reads, warm-up seconds dropped, incomplete seconds
  dropped): complete seconds after the warm-up."""
  warmup = sum(1 for s in per_second if s.warmup)
  partial = sum(1 for s in per_second if not s.warmup and not s.complete)
  counted = tuple(s for s in per_second if not s.warmup and s.complete)
  return counted, warmup, partial


def WorstSecondMs(per_second: Sequence[measurement.SecondStats],
                  statistic: str = 'avg') -> Optional[float]:
  """The highest latency, in `statistic`, of the seconds a rule reads
  (`Counted`, with operations); None when none has the statistic."""
  figures = [s.LatencyMs(statistic) for s in Counted(per_second)[0] if s.ops]
  return max((ms for ms in figures if ms is not None), default=None)


@dataclasses.dataclass(frozen=True)
class Steadiness:
  """What a probe's seconds say against its whole.

  Attributes:
    seconds: complete seconds after the warm-up that were read.
    warmup_dropped, partial_dropped: seconds left out, and why.
    statistic, cap_ms: the cap the seconds were held to.
    over_cap: (second, latency) of each second at or over the cap while
      the whole was under it.
    unjudged: the tool gave no per-second figure for the statistic, so the
      cap was not checked second by second.
    swing: 1 - lowest / highest second's operations (None: under two
      seconds).
    swing_bound: the bound `swing` was held to.
  """
  seconds: int
  warmup_dropped: int
  partial_dropped: int
  statistic: str
  cap_ms: float
  over_cap: Tuple[Tuple[int, float], ...] = ()
  unjudged: bool = False
  swing: Optional[float] = None
  swing_bound: float = SWING_BOUND

  @property
  def swung(self) -> bool:
    return self.swing is not None and self.swing > self.swing_bound

  @property
  def steady(self) -> bool:
    return not self.over_cap and not self.swung

  def Words(self) -> str:
    """E.g. '2 of 5 s over the 1 ms avg cap (worst s3: 1.42 ms); seconds
    swing 62 % (bound 50 %)'."""
    parts = []
    if self.over_cap:
      second, worst = max(self.over_cap, key=lambda x: x[1])
      parts.append(f'{len(self.over_cap)} of {self.seconds} s over the '
                   f'{self.cap_ms:g} ms {self.statistic} cap (worst s'
                   f'{second}: {worst:.3f} ms)')
    if self.swung:
      parts.append(f'seconds swing {100 * self.swing:.0f} % (bound '
                   f'{100 * self.swing_bound:.0f} %)')
    return '; '.join(parts) or f'{self.seconds} s steady'

  def Metadata(self) -> Dict[str, object]:
    metadata: Dict[str, object] = {
        'per_second_seconds': self.seconds,
        'per_second_warmup_dropped': self.warmup_dropped,
        OVER_CAP_KEY: len(self.over_cap),
        'per_second_cap_checked': not self.unjudged,
        KEY: not self.steady,
    }
    if self.swing is not None:
      metadata['per_second_swing_pct'] = round(100 * self.swing, 1)
      metadata['per_second_swing_bound_pct'] = round(
          100 * self.swing_bound, 1)
    if not self.steady:
      metadata[DETAIL_KEY] = self.Words()
    return metadata


def OfSeconds(per_second: Sequence[measurement.SecondStats],
              cap: measurement.LatencyCap, whole_under_cap: bool = True,
              swing_bound: float = SWING_BOUND) -> Steadiness:
  """The two rules of the module docstring over one probe's series."""
  cap_ms, statistic = cap.ms, cap.statistic
  counted, warmup, partial = Counted(per_second)
  figures = [(s.second, s.LatencyMs(statistic)) for s in counted if s.ops]
  unjudged = bool(counted) and all(ms is None for _, ms in figures)
  over = tuple((second, ms) for second, ms in figures
               if whole_under_cap and ms is not None and ms >= cap_ms)
  ops = [s.ops for s in counted]
  swing = (1 - min(ops) / max(ops)) if len(ops) >= 2 and max(ops) else None
  return Steadiness(len(counted), warmup, partial, statistic, cap_ms, over,
                    unjudged, swing, swing_bound)


def Marked(m: measurement.Measurement, cap: measurement.LatencyCap,
           swing_bound: float = SWING_BOUND) -> measurement.Measurement:
  """m with its steadiness figures; an unsteady probe whose CPU rule named
  no cause of its own gets the limit `unsteady` (the CPU rule's kept as
  `cpu_limit`). A probe without a per-second series is returned as is."""
  if not m.per_second:
    return m
  steadiness = OfSeconds(m.per_second, cap, m.UnderCap(cap), swing_bound)
  metadata = {**m.metadata, **steadiness.Metadata()}
  if not steadiness.steady:
    cpu = m.metadata.get(attribution.KEY)
    if cpu not in _EXPLAINING_LIMITS:
      metadata[CPU_LIMIT_KEY] = cpu
      metadata[attribution.KEY] = attribution.UNSTEADY
      metadata[attribution.DETAIL_KEY] = steadiness.Words()
  return dataclasses.replace(m, metadata=metadata)


def SecondsOverCap(metadata) -> int:
  """How many seconds of a probe `Marked` found over the cap (0: none, or
  not marked)."""
  value = metadata.get(OVER_CAP_KEY)
  if isinstance(value, bool) or not isinstance(value, (int, float)):
    return 0
  return int(value) if value == value else 0  # NaN (a frame's gap): none.


def Unsteady(metadata) -> bool:
  """Whether a probe's seconds disagreed with its whole (`Marked`)."""
  return IsSet(metadata.get(KEY))


def IsSet(value) -> bool:
  """Whether a flag read back from stored metadata is set: true, or the
  text 'true' or '1' (a CSV's); NaN (a frame's gap) is not."""
  if isinstance(value, str):
    return value.strip().lower() in ('true', '1')
  return bool(value) and value == value


@dataclasses.dataclass(frozen=True)
class Hold:
  """The answer's load held after the search, second by second.

  Attributes:
    seconds: complete seconds after the warm-up, and never fewer than the
      hold asked for: a second the load generator did not measure (it
      ended first) is one of them, `missing`, and not held.
    held: seconds under the cap and within the swing bound of the searched
      figure.
    over_cap: seconds at or over the cap (in the cap's statistic).
    short: seconds under the cap whose throughput fell short of the
      searched figure by more than the swing bound.
    statistic, cap_ms, searched_ops: what the seconds were held to.
    unjudged: no per-second figure for the statistic (throughput only).
    throughput: the hold's whole throughput.
    missing: seconds asked for that no complete second measured.
    missing_why: why they were not measured, for the words.
  """
  seconds: int
  held: int
  over_cap: int
  short: int
  statistic: str
  cap_ms: float
  searched_ops: float
  throughput: float
  warmup_dropped: int = 0
  unjudged: bool = False
  swing_bound: float = SWING_BOUND
  failure: str = ''
  missing: int = 0
  missing_why: str = 'the load generator ended before'

  @property
  def ok(self) -> bool:
    return (not self.failure and self.seconds > 0 and
            self.held == self.seconds)

  def Words(self) -> str:
    """E.g. 'held 37 of 60 s under the 1 ms avg cap at the searched
    41,200 ops/s (23 s over the cap)'."""
    text = (f'held {self.held} of {self.seconds} s under the '
            f'{self.cap_ms:g} ms {self.statistic} cap at the searched '
            f'{self.searched_ops:,.0f} ops/s')
    why = []
    if self.over_cap:
      why.append(f'{self.over_cap} s over the cap')
    if self.short:
      why.append(f'{self.short} s more than '
                 f'{100 * self.swing_bound:.0f} % below that figure')
    if self.missing:
      why.append(f'{self.missing} s not measured: {self.missing_why}')
    if self.unjudged:
      why.append('the load generator gives no per-second '
                 f'{self.statistic}: throughput only')
    if self.failure:
      why.append(f'the hold failed: {self.failure}')
    elif not self.seconds:  # Only a hold that asked for no second.
      why.append('no complete second was measured')
    return text + (f' ({"; ".join(why)})' if why else '')

  def Metadata(self) -> Dict[str, object]:
    return {'hold_seconds': self.seconds, 'hold_held_seconds': self.held,
            'hold_seconds_over_cap': self.over_cap,
            'hold_seconds_short': self.short,
            'hold_seconds_missing': self.missing,
            'hold_throughput': round(self.throughput, 1),
            'hold_warmup_dropped': self.warmup_dropped,
            'hold_ok': self.ok, 'hold_words': self.Words()}


def OfHold(m: measurement.Measurement, searched_ops: float,
           cap: measurement.LatencyCap, swing_bound: float = SWING_BOUND,
           asked_s: int = 0, missing_why: Optional[str] = None) -> Hold:
  """Whether the answer's load held: every complete second after the
  warm-up under the cap and within `swing_bound` of `searched_ops`, and at
  least the `asked_s` seconds the hold asked for measured (a request-count
  tool can end before them, the run's deadline can shorten the probe:
  those are not held; `missing_why` says why, default the tool's end)."""
  counted, warmup, _ = Counted(m.per_second)
  missing = max(0, asked_s - len(counted))
  # A second's share of the searched figure: ops over the second's length.
  floor = (1 - swing_bound) * searched_ops
  over = short = 0
  unjudged = bool(counted)
  for s in counted:
    ms = s.LatencyMs(cap.statistic) if s.ops else None
    unjudged = unjudged and ms is None
    if s.ops == 0 or (ms is not None and ms >= cap.ms):
      over += 1
    elif s.ops < floor:
      short += 1
  why = {'missing_why': missing_why} if missing_why else {}
  return Hold(len(counted) + missing, len(counted) - over - short, over,
              short, cap.statistic, cap.ms, searched_ops, m.throughput, warmup,
              unjudged, swing_bound, missing=missing, **why)


def FailedHold(failure: str, searched_ops: float,
               cap: measurement.LatencyCap) -> Hold:
  """A hold whose probe failed (`failure`, one line): nothing held."""
  return Hold(0, 0, 0, 0, cap.statistic, cap.ms, searched_ops, 0.0,
              failure=failure)
