"""Latency-capped throughput search: the driver and its records.

A search finds the highest throughput a server sustains while a latency
statistic (the average unless the cap names a percentile:
`measurement.LatencyCap`) stays under a cap, split like a controller and an
actuator: a step policy decides which load to offer next, and when to stop;
`FindLatencyCappedMaximum` calls the injected `measure(load) ->
Measurement`, records every probe, enforces a hard probe budget and freezes
the policy's conclusion into a `SearchResult`.

Extension seam: a new policy implements `StepPolicy`: a `NAME` and a
`Steps(cap_ms)` generator that yields `ProbeRequest`s, is sent each probe's
`ProbeRecord`, and returns an `Outcome`. A policy compares
`record.latency_ms` (the capped statistic of that probe) and
`record.under_cap` with `cap_ms`, so it never needs to know which statistic
is capped. The generator's frame holds one search's state, so a policy
object is immutable configuration (linear.py, adaptive.py, staircase.py).
Pure: the only effect is calling `measure`, so tests drive it with scripted
curves.

The answer's hold (`hold`, optional: the runner's longer probe of the
answer's load, README "Every second, and the answer held") goes through the
same protocol: a policy that can act on it asks for it (a `ProbeRequest` of
role ROLE_HOLD, sent the hold's ProbeRecord, or None when no hold is run)
and backs off when it fails; the driver holds any other policy's answer when
it stops. Holds are records among the probes (role ROLE_HOLD) but not
probes of the budget, and no answer's figure counts them.
"""

import dataclasses
import math
from typing import (Callable, ClassVar, Generator, List, Mapping, Optional,
                    Protocol, Sequence, Tuple, Union)

from perfkitbenchmarker import measurement
from perfkitbenchmarker import search
from perfkitbenchmarker import steadiness
from perfkitbenchmarker import verdict
from perfkitbenchmarker.search import stats

Load = measurement.Load
Measurement = measurement.Measurement

ROLE_SEARCH = 'search'    # a probe that explores the load curve
ROLE_CONFIRM = 'confirm'  # a repeat of a chosen load, averaged for the result
ROLE_HOLD = 'hold'        # the answer's load held for the hold's seconds

DEFAULT_MAX_PROBES = 40


InvalidSearchArgument = search.InvalidSearchArgument


def CheckWholeNumbers(values: Mapping[str, object], **least: int) -> None:
  """Refuses each named value that is not a whole number of at least its
  bound (a policy passes vars(self))."""
  for name, bound in least.items():
    value = values[name]
    if isinstance(value, bool) or not isinstance(value, int) or value < bound:
      raise InvalidSearchArgument(
          f'{name}={value!r}: must be a whole number of at least {bound}.')


@dataclasses.dataclass(frozen=True)
class ProbeRequest:
  """What a policy asks the driver to measure next, and why (`note`, kept
  in the record for reports); a hold (role ROLE_HOLD) names the figure its
  seconds are held to (`searched_ops`). `runs_again`: the index of the
  disturbed repeat this request runs again, which the policy set aside
  (repeats.RepeatRule); said as it happens, so a search the probe budget
  ends still knows what its policy set aside."""
  load: Load
  role: str = ROLE_SEARCH
  note: str = ''
  searched_ops: Optional[float] = None
  runs_again: Optional[int] = None


@dataclasses.dataclass(frozen=True)
class ProbeRecord:
  """One probe as it happened (`index` from 0; `under_cap`: the capped
  `statistic` strictly below the cap, and no counted second of the probe
  at or over it; for a hold, that it held: steadiness.OfHold)."""
  index: int
  measurement: Measurement
  role: str
  under_cap: bool
  note: str = ''
  statistic: str = measurement.AVERAGE

  @property
  def load(self) -> Load:
    return self.measurement.load

  @property
  def throughput(self) -> float:
    return self.measurement.throughput

  @property
  def latency_ms(self) -> float:
    """The capped statistic; infinite when the probe did not measure it (it
    is then never under the cap, and no model extrapolates from it)."""
    value = self.measurement.LatencyMs(self.statistic)
    return math.inf if value is None else value

  @property
  def worst_second_ms(self) -> Optional[float]:
    """The capped statistic of the probe's worst counted second (complete,
    after the warm-up); None when the tool gave none for the statistic."""
    return steadiness.WorstSecondMs(self.measurement.per_second,
                                    self.statistic)

  @property
  def aimed_latency_ms(self) -> float:
    """What a search aims under its target: the whole's statistic or its
    worst counted second's, whichever is higher. The verdict holds every
    second of an answer to the cap, and a closed loop's seconds read
    above its whole (redis-benchmark on the 2-core quota: the worst of 2-3
    seconds 3-11 % above, README "The 2-core split")."""
    worst = self.worst_second_ms
    return self.latency_ms if worst is None else max(self.latency_ms, worst)

  @property
  def disturbed(self) -> bool:
    """Others took CPU this probe's threads waited for (its limit, or its
    `interference` flag): a repeat so disturbed is run again rather than
    counted (repeats.RepeatRule)."""
    return verdict.Disturbed(self.measurement.metadata)


@dataclasses.dataclass(frozen=True)
class Outcome:
  """What a policy concludes when it stops.

  Attributes:
    stop_reason: why it stopped and what it found, for people.
    best_index: the probe whose load is the answer (under the cap), or None.
    confirmation_indices: the repeats whose mean is the answer (not the
      disturbed ones that were run again: `excluded_indices`).
    unconfirmed_reason: set for an answer the policy could not confirm; its
      figure is then the mean of every probe at its load but those in
      `excluded_indices` (all of them if every one is there).
    hold_index: the hold of the answer's load the policy asked for (None:
      the driver holds the answer, if holds are run).
  """
  stop_reason: str
  best_index: Optional[int] = None
  confirmation_indices: Tuple[int, ...] = ()
  excluded_indices: Tuple[int, ...] = ()
  unconfirmed_reason: Optional[str] = None
  hold_index: Optional[int] = None


PolicySteps = Generator[ProbeRequest, ProbeRecord, Outcome]


class StepPolicy(Protocol):
  """A search policy: decides loads from earlier probes, never measures."""

  NAME: ClassVar[str]

  def Steps(self, cap_ms: float) -> PolicySteps:
    """Starts one search; see the module docstring for the protocol."""


@dataclasses.dataclass(frozen=True)
class SearchResult:
  """Everything a latency-capped search did and found.

  Attributes:
    probes: every probe in the order it ran, search and confirmation alike,
      and the holds (role ROLE_HOLD).
    best: the search probe under the cap the policy chose (None: no load
      under the cap); `best_index` its index.
    confirmation_probes: the repeats at the answer's load (empty if the policy
      did not confirm); they exclude the search probe that picked the load, so
      their mean is not biased upwards by that selection.
    confirmed_throughput_ci95: half-width of the repeats' mean throughput's
      95 % confidence interval (Student t); None with fewer than two.
    confirmed: the repeats as one Measurement (`measurement.CombineRepeats`:
      mean throughput, operation-weighted latency, merged percentiles); None
      without repeats. Report this, not `best`, whenever it exists.
    client_limited: some probe saturated the load generator's CPU, so part of
      the curve is the client's, not the server's.
    budget_exhausted: the probe budget ended the search before the policy
      did, so the answer is unconfirmed.
    excluded_probes: the disturbed repeats the policy set aside to run
      again (so far, when the budget ended the search).
    unconfirmed_reason: why the policy or the budget left the answer
      unconfirmed (the verdict adds its own rules).
    at_load: every probe at an unconfirmed answer's load combined (but the
      disturbed repeats set aside, unless all were), its
      figure (never the best single probe, whose selection biases it
      upwards); `at_load_indices` and `at_load_ci95` go with it.
    hold_index: the answer's hold among `probes` (None: not held).
  """
  probes: Tuple[ProbeRecord, ...]
  best: Optional[Measurement]
  best_index: Optional[int]
  cap_ms: float
  policy: str
  stop_reason: str
  statistic: str = measurement.AVERAGE
  confirmation_probes: Tuple[ProbeRecord, ...] = ()
  confirmed_throughput_ci95: Optional[float] = None
  client_limited: bool = False
  confirmed: Optional[Measurement] = None
  budget_exhausted: bool = False
  excluded_probes: Tuple[ProbeRecord, ...] = ()
  unconfirmed_reason: Optional[str] = None
  at_load: Optional[Measurement] = None
  at_load_indices: Tuple[int, ...] = ()
  at_load_ci95: Optional[float] = None
  hold_index: Optional[int] = None

  @property
  def reported(self) -> Optional[Measurement]:
    """What the result samples report: `at_load`, `confirmed` or `best`."""
    if self.at_load is not None:
      return self.at_load
    return self.confirmed if self.confirmed is not None else self.best

  @property
  def reported_indices(self) -> Tuple[int, ...]:
    if self.at_load is not None:
      return self.at_load_indices
    if self.confirmation_probes:
      return tuple(p.index for p in self.confirmation_probes)
    return (self.best_index,) if self.best_index is not None else ()

  @property
  def reported_ci95(self) -> Optional[float]:
    if self.at_load is not None:
      return self.at_load_ci95
    return self.confirmed_throughput_ci95

  @property
  def cap(self) -> measurement.LatencyCap:
    return measurement.LatencyCap(self.cap_ms, self.statistic)

  @property
  def probe_seconds(self) -> float:
    """Measured seconds spent on all probes: the search's cost."""
    return sum(p.measurement.duration_s for p in self.probes)

  @property
  def all_over_cap(self) -> bool:
    return bool(self.probes) and not any(p.under_cap for p in self.probes)

  @property
  def search_probes(self) -> Tuple[ProbeRecord, ...]:
    return tuple(p for p in self.probes if p.role == ROLE_SEARCH)

  @property
  def measured_probes(self) -> Tuple[ProbeRecord, ...]:
    """The probes of the search and its repeats, the holds left out."""
    return tuple(p for p in self.probes if p.role != ROLE_HOLD)

  @property
  def capped_throughput(self) -> Optional[float]:
    reported = self.reported
    return reported.throughput if reported is not None else None


def LatencyWords(statistic: str, latency_ms: float, average_verb: str) -> str:
  """A latency for the policies' notes: 'averaged 0.812 ms' (with the verb
  given) for the average, 'with p99 0.812 ms' for a percentile."""
  if statistic == measurement.AVERAGE:
    return f'{average_verb} {latency_ms:.3f} ms'
  return f'with {statistic} {latency_ms:.3f} ms'


def _HeldUnderCap(result: Measurement, cap: measurement.LatencyCap) -> bool:
  """Under the cap as a whole and in every counted second: a probe with a
  second over the cap (steadiness.Marked's count) is not an answer the
  verdict confirms, so the search treats it as over and looks lower
  instead of ending on it (on the 2-core split's quota, answers the search
  aimed at 0.94-0.97 ms average had seconds at 1.03-1.08 ms: 2 of 3
  quiet redis-benchmark runs ended unconfirmed)."""
  return result.UnderCap(cap) and not steadiness.SecondsOverCap(
      result.metadata)


def HighestUnderCapIndex(probes: Sequence[ProbeRecord]) -> Optional[int]:
  """Index of the highest-throughput probe under the cap (earliest on ties;
  holds left out)."""
  best = max((p for p in probes if p.under_cap and p.role != ROLE_HOLD),
             key=lambda p: p.throughput, default=None)
  return best.index if best is not None else None


def _Result(probes: Sequence[ProbeRecord], cap: measurement.LatencyCap,
            policy_name: str, outcome: Outcome,
            budget_exhausted: bool = False) -> SearchResult:
  """Checks the policy's conclusion and freezes it with the statistics."""
  best = None
  if outcome.best_index is not None:
    if not 0 <= outcome.best_index < len(probes):
      raise InvalidSearchArgument(
          f'policy {policy_name!r} named probe {outcome.best_index} as best '
          f'but only {len(probes)} probes ran; fix the policy.')
    if not probes[outcome.best_index].under_cap:
      raise InvalidSearchArgument(
          f'policy {policy_name!r} named probe {outcome.best_index} as best '
          f'but its {cap.StatisticName()} latency is not under the {cap.ms} '
          'ms cap; fix the policy.')
    best = probes[outcome.best_index].measurement
  confirmations = tuple(probes[i] for i in outcome.confirmation_indices)
  ci95 = confirmed = None
  if confirmations:
    _, ci95 = stats.MeanAndCi95([p.throughput for p in confirmations])
    confirmed = measurement.CombineRepeats(
        [p.measurement for p in confirmations])
  unconfirmed = outcome.unconfirmed_reason
  if budget_exhausted and not unconfirmed:
    spent = sum(1 for p in probes if p.role != ROLE_HOLD)
    unconfirmed = (f'probe budget of {spent} spent before the answer '
                   'was confirmed')
  at_load = at_load_ci95 = None
  at_load_indices = ()
  if best is not None and (unconfirmed or len(confirmations) < 2):
    # Not confirmed: the figure is every probe at the answer's load (the
    # search probe that picked it and the repeats) but the disturbed
    # repeats the policy set aside, as a confirmed answer leaves them out;
    # all of them only when every probe there was set aside.
    same = [p for p in probes if p.load == best.load and p.role != ROLE_HOLD]
    kept = [p for p in same if p.index not in outcome.excluded_indices]
    same = kept or same
    at_load_indices = tuple(p.index for p in same)
    at_load = measurement.CombineRepeats([p.measurement for p in same])
    _, at_load_ci95 = stats.MeanAndCi95([p.throughput for p in same])
  return SearchResult(
      probes=tuple(probes),
      best=best,
      best_index=outcome.best_index,
      cap_ms=cap.ms,
      policy=policy_name,
      stop_reason=outcome.stop_reason,
      statistic=cap.statistic,
      confirmation_probes=confirmations,
      confirmed_throughput_ci95=ci95,
      confirmed=confirmed,
      client_limited=any(p.measurement.client_saturated for p in probes),
      budget_exhausted=budget_exhausted,
      excluded_probes=tuple(probes[i] for i in outcome.excluded_indices),
      unconfirmed_reason=unconfirmed, at_load=at_load,
      at_load_indices=at_load_indices, at_load_ci95=at_load_ci95,
      hold_index=outcome.hold_index)


# Holds one search may ask for: its answer's and a back-off's, with room.
MAX_HOLDS = 4

# The hold: (load, figure held to, index) -> (its measurement, whether it
# held), or None when it could not run (the caller keeps why).
HoldFn = Callable[[Load, float, int], Optional[Tuple[Measurement, bool]]]


def FindLatencyCappedMaximum(
    measure: Callable[[Load], Measurement],
    cap_ms: Union[float, measurement.LatencyCap],
    policy: StepPolicy,
    max_probes: int = DEFAULT_MAX_PROBES,
    on_probe: Optional[Callable[[ProbeRecord], None]] = None,
    hold: Optional[HoldFn] = None,
) -> SearchResult:
  """Runs `policy` against `measure` until it stops or `max_probes` ran
  (a hard bound, so every search ends even if a policy never would).

  `cap_ms` is a number of ms (a cap on the average) or a
  `measurement.LatencyCap` naming the statistic it caps. `on_probe` sees
  each ProbeRecord as soon as it exists (the caller publishes live
  samples). When the budget runs out first, the answer is the load of the
  highest-throughput probe under the cap (an undisturbed one, if any),
  unconfirmed, its figure without the repeats the policy set aside. With
  `hold`, the answer's load is held (the policy's hold requests, else once
  at the end; holds are not probes of the budget, and `hold` publishes its
  own).
  Raises InvalidSearchArgument for a bad cap or budget, or a policy that
  broke the protocol.
  """
  if not isinstance(cap_ms, measurement.LatencyCap) and not (
      isinstance(cap_ms, (int, float)) and cap_ms > 0 and
      math.isfinite(cap_ms)):
    raise InvalidSearchArgument(
        f'cap_ms={cap_ms!r}: the latency cap must be a positive, finite '
        'number of milliseconds, e.g. 1.0.')
  cap = measurement.AsCap(cap_ms)
  if not isinstance(max_probes, int) or max_probes < 1:
    raise InvalidSearchArgument(
        f'max_probes={max_probes!r}: the probe budget must be a whole number '
        'of at least 1.')
  probes = []
  asked = []  # the holds the policy asked for (a record, or None)

  def Hold(load: Load, searched_ops: float, note: str
           ) -> Optional[ProbeRecord]:
    done = hold(load, searched_ops, len(probes)) if hold else None
    if done is None:
      return None
    record = ProbeRecord(index=len(probes), measurement=done[0],
                         role=ROLE_HOLD, under_cap=done[1], note=note,
                         statistic=cap.statistic)
    probes.append(record)
    return record

  def Finish(outcome: Outcome, budget_exhausted: bool = False):
    result = _Result(probes, cap, policy.NAME, outcome, budget_exhausted)
    if result.best is None or outcome.hold_index is not None:
      return result
    # The answer's load held already (a policy's answer it did not name),
    # or a hold that could not run: not run again.
    record = next((r for r in reversed(asked) if r is None or
                   r.load == result.best.load), False)
    if record is False:
      record = Hold(result.best.load, result.reported.throughput, 'hold')
    if record is None:
      return result
    return dataclasses.replace(result, probes=tuple(probes),
                               hold_index=record.index)

  set_aside = []  # the requests' runs_again: repeats the policy set aside
  steps = policy.Steps(cap.ms)
  measured = 0
  try:
    request = next(steps)
    while True:
      if request.role == ROLE_HOLD:
        if len(asked) >= MAX_HOLDS:
          raise InvalidSearchArgument(
              f'policy {policy.NAME!r} asked for more than {MAX_HOLDS} '
              'holds; fix the policy.')
        asked.append(Hold(request.load, request.searched_ops, request.note))
        request = steps.send(asked[-1])
        continue
      if measured >= max_probes:
        break
      _NoteSetAside(request, probes, policy.NAME, set_aside)
      if min(request.load.threads, request.load.clients,
             request.load.pipeline) < 1:
        raise InvalidSearchArgument(
            f'policy {policy.NAME!r} asked for load {request.load}: threads, '
            'clients and pipeline must each be at least 1; fix the policy or '
            'its bounds.')
      result = measure(request.load)
      record = ProbeRecord(index=len(probes), measurement=result,
                           role=request.role,
                           under_cap=_HeldUnderCap(result, cap),
                           note=request.note, statistic=cap.statistic)
      probes.append(record)
      measured += 1
      if on_probe is not None:
        on_probe(record)
      request = steps.send(record)
    # The request the budget leaves unmeasured still says whether the
    # policy set the last probe aside.
    _NoteSetAside(request, probes, policy.NAME, set_aside)
  except StopIteration as stop:
    outcome = stop.value
    if not isinstance(outcome, Outcome):
      raise TypeError(f'policy {policy.NAME!r} stopped without returning an '
                      'Outcome; fix the policy.') from None
    return Finish(outcome)
  finally:
    steps.close()
  return Finish(_BudgetOutcome(probes, set_aside, policy.NAME),
                budget_exhausted=True)


def _NoteSetAside(request: ProbeRequest, probes: Sequence[ProbeRecord],
                  policy_name: str, set_aside: List[int]) -> None:
  """Adds the probe `request` runs again to `set_aside`."""
  index = request.runs_again
  if index is None:
    return
  if not 0 <= index < len(probes):
    raise InvalidSearchArgument(
        f'policy {policy_name!r} asked to run probe {index} again but only '
        f'{len(probes)} probes ran; fix the policy.')
  set_aside.append(index)


def _BudgetOutcome(probes: Sequence[ProbeRecord], set_aside: Sequence[int],
                   policy_name: str) -> Outcome:
  """The answer when the probe budget ends the search: the load of the
  highest-throughput probe under the cap, unconfirmed. The policy's rule
  still holds: the disturbed repeats it set aside to run again stay out of
  the figure (`excluded_indices`, as when it finishes), and a disturbed
  probe's throughput picks the load only when no undisturbed probe is
  under the cap (others' CPU use, not the load, made that figure)."""
  best_index = HighestUnderCapIndex([p for p in probes if not p.disturbed])
  chosen = 'undisturbed probe under the cap'
  if best_index is None:
    best_index = HighestUnderCapIndex(probes)
    if best_index is not None:
      chosen = 'probe under the cap (every one was disturbed)'
  figure = 'the mean of every probe at that load'
  if set_aside:
    figure += (' but the disturbed repeat(s) set aside to run again: probe(s) '
               + ', '.join(str(i) for i in set_aside))
  answer = (f'the answer is the load of the highest-throughput {chosen}, '
            f'unconfirmed ({figure})')
  if best_index is None:
    answer = 'no probe was under the cap, so there is no answer'
  budget = sum(1 for p in probes if p.role != ROLE_HOLD)
  return Outcome(
      stop_reason=(f'probe budget of {budget} exhausted before the '
                   f'{policy_name} policy finished; {answer}'),
      best_index=best_index, excluded_indices=tuple(set_aside))
