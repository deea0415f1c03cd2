"""How sure an answer is: the verdict a latency-capped result carries.

Every latency-capped answer (the `latency_capped_throughput` sample and the
samples derived from it: PKB's 1 ms metric, `hourly_cost`,
`price_performance`) carries metadata `verdict`, one of

  confirmed     repeats at the answer's load, most of them under the cap,
                with a 95 % interval: a server figure one can publish;
  unconfirmed   the figure is not established: the probe budget ran out
                first, the policy took a single probe without repeats, the
                repeats did not hold under the cap, their seconds did not
                agree with their whole (`unsteady`, steadiness.py), or the
                answer's load did not hold when held after the search;
  client_bound  the load generator was saturated on the answer's probes: the
                figure is the client's limit, not the server's;
  disturbed     foreign processes (steal time on VMs) used the run's cores
                on the answer's probes (`interference`);

plus `verdict_reason` (a short phrase) and `verdict_flags` (every verdict
that applies, most telling first; the first is `verdict`). A sample whose
verdict is not `confirmed` is never official (`IsOfficial`; nor is a probe
sample flagged `client_saturated` or `interference`), compare leaves
it out of rankings and change points unless asked, and a run whose answer is
not confirmed exits with `EXIT_UNCONFIRMED` (README, "Verdicts").

Seam: `OfSearch` decides from a frozen `SearchResult`; `OfMetadata` reads a
stored sample back (and derives a verdict for samples recorded before
verdicts existed), so history tools and the driver share one rule. Pure: no
flags, VMs, I/O or clock.
"""

import dataclasses
import math
from typing import Any, Iterable, List, Mapping, Optional, Tuple

from perfkitbenchmarker import attribution
from perfkitbenchmarker import measurement
from perfkitbenchmarker import steadiness

CONFIRMED = 'confirmed'
UNCONFIRMED = 'unconfirmed'
CLIENT_BOUND = 'client_bound'
DISTURBED = 'disturbed'
# Most telling first: an unestablished figure, then whose limit it is, then
# whether neighbours took from it.
PROBLEMS = (UNCONFIRMED, CLIENT_BOUND, DISTURBED)
VERDICTS = (CONFIRMED,) + PROBLEMS
WORDS = {CONFIRMED: 'confirmed', UNCONFIRMED: 'unconfirmed',
         CLIENT_BOUND: 'client-bound', DISTURBED: 'disturbed'}

KEY = 'verdict'
REASON_KEY = 'verdict_reason'
FLAGS_KEY = 'verdict_flags'
CAPPED_METRIC = 'latency_capped_throughput'
# pkb's exit code for a run that finished but whose answer is not confirmed.
EXIT_UNCONFIRMED = 4


@dataclasses.dataclass(frozen=True)
class Verdict:
  """One answer's verdict: every problem that applies, most telling first
  (empty: confirmed), a phrase per flag joined with '; ' as the reason, and
  what limited its probes (attribution.py), when measured."""
  flags: Tuple[str, ...]
  reason: str
  limit: Optional[attribution.Limit] = None

  @property
  def name(self) -> str:
    return self.flags[0] if self.flags else CONFIRMED

  @property
  def confirmed(self) -> bool:
    return not self.flags

  def Metadata(self) -> dict:
    metadata = {KEY: self.name, REASON_KEY: self.reason,
                FLAGS_KEY: ','.join(self.flags) or CONFIRMED}
    if self.limit is not None:
      metadata.update(self.limit.Metadata())
    return metadata

  def LimitWords(self) -> str:
    """E.g. 'limit: server quota (server cgroup throttled in 98 % ...)'."""
    if self.limit is None:
      return ''
    detail = f' ({self.limit.detail})' if self.limit.detail else ''
    return f'limit: {self.limit.words}{detail}'

  def Words(self) -> str:
    """E.g. 'UNCONFIRMED (also client-bound): probe budget of 3 spent...'."""
    limit = self.LimitWords()
    limit = f'; {limit}' if limit else ''
    if self.confirmed:
      return f'confirmed: {self.reason}{limit}'
    also = [WORDS[f] for f in self.flags[1:]]
    return (WORDS[self.name].upper() +
            (f' (also {", ".join(also)})' if also else '') +
            f': {self.reason}{limit}')


def _Make(problems: List[Tuple[str, str]], confirmed_reason: str,
          limit: Optional[attribution.Limit] = None) -> Verdict:
  if not problems:
    return Verdict((), confirmed_reason, limit)
  problems = sorted(problems, key=lambda p: PROBLEMS.index(p[0]))
  flags = tuple(dict.fromkeys(p[0] for p in problems))
  return Verdict(flags, '; '.join(p[1] for p in problems), limit)


def Disturbed(metadata: Mapping[str, Any]) -> bool:
  """Whether a probe's figure was disturbed by others: its limit says so
  (others took CPU its threads waited for); a probe recorded before limits
  by its `interference` flag (foreign CPU above 10 % of the run's cores)."""
  name = metadata.get(attribution.KEY)
  if isinstance(name, str) and name in attribution.LIMITS:
    return name == attribution.DISTURBED
  return steadiness.IsSet(metadata.get('interference'))


def ClientLimited(metadata: Mapping[str, Any]) -> bool:
  """Whether a probe's figure is the client's limit (its limit, else the
  older `client_saturated` flag)."""
  name = metadata.get(attribution.KEY)
  if isinstance(name, str) and name in attribution.LIMITS:
    return name in attribution.CLIENT_LIMITS
  return steadiness.IsSet(metadata.get('client_saturated'))


def OfSearch(result, hold: Optional[steadiness.Hold] = None) -> Verdict:
  """The verdict of a `search.driver.SearchResult` that has an answer, and
  of its load held after the search (`hold`), when it was. A confirmed
  answer's repeats together (their merged histograms, for a percentile
  cap) are under the cap in the capped statistic."""
  statistic = getattr(result, 'statistic', measurement.AVERAGE)
  cap = measurement.LatencyCap(result.cap_ms, statistic).Short()
  repeats = result.confirmation_probes
  problems = []
  unconfirmed = getattr(result, 'unconfirmed_reason', None)
  if unconfirmed:
    problems.append((UNCONFIRMED, unconfirmed))
  elif result.budget_exhausted:
    problems.append((UNCONFIRMED,
                     f'probe budget of {len(result.measured_probes)} spent '
                     'before the answer was confirmed'))
  elif not repeats:
    problems.append((UNCONFIRMED, 'a single probe, no repeats'))
  elif len(repeats) < 2 or result.confirmed_throughput_ci95 is None:
    problems.append((UNCONFIRMED, 'one repeat, no interval'))
  else:
    over = sum(1 for p in repeats if not p.under_cap)
    confirmed = getattr(result, 'confirmed', None)
    merged = (confirmed.LatencyMs(statistic) if confirmed is not None
              else None)
    if 2 * over >= len(repeats):
      problems.append((UNCONFIRMED, f'{over} of {len(repeats)} repeats over '
                       f'the {cap} cap'))
    elif merged is None or merged >= result.cap_ms:
      together = ('not measured' if merged is None else
                  f'{merged:.3f} ms')
      problems.append((UNCONFIRMED, f'the {len(repeats)} repeats together '
                       f'have {measurement.StatisticName(statistic)} '
                       f'latency {together}, not under the {cap} cap'))
  # The probes the figure rests on: the repeats that count (disturbed ones
  # run again are not among them), else every probe at the answer's load
  # but those disturbed repeats.
  indices = sorted(set(result.reported_indices))
  answer = [result.probes[i].measurement for i in indices]
  unsteady = [(i, m.metadata) for i, m in zip(indices, answer)
              if steadiness.Unsteady(m.metadata)]
  if unsteady:
    index, worst = unsteady[-1]
    problems.append((UNCONFIRMED, f'the seconds of {len(unsteady)} of the '
                     f'answer\'s {len(answer)} probe(s) did not agree with '
                     f'their whole (probe {index}: '
                     f'{worst.get(steadiness.DETAIL_KEY, "unsteady")})'))
  if hold is not None and not hold.ok:
    problems.append((UNCONFIRMED, f'the answer\'s load did not hold: '
                     f'{hold.Words()}'))
  saturated = [m for m in answer if m.client_saturated]
  if saturated:
    names = sorted({attribution.WORDS.get(str(m.metadata.get(
        attribution.KEY)), 'client') for m in saturated
                    if m.metadata.get(attribution.KEY)})
    how = f' ({", ".join(names)})' if names else ''
    problems.append((CLIENT_BOUND, f'load generator was the limit{how} in '
                     f'{len(saturated)} of the answer\'s {len(answer)} '
                     'probe(s)'))
  disturbed = [m.metadata for m in answer if Disturbed(m.metadata)]
  if disturbed:
    figures = [d.get(k) for d in disturbed for k in (
        'client_foreign_cpu_pct', 'server_foreign_cpu_pct',
        'foreign_cpu_pct')]
    worst = max((d for d in figures if isinstance(d, (int, float))),
                default=None)
    problems.append((DISTURBED, 'others took CPU the run\'s threads waited '
                     f'for in {len(disturbed)} of the answer\'s '
                     f'{len(answer)} probe(s)' +
                     (f' (foreign CPU up to {worst:g} %)'
                      if worst is not None else '')))
  limited = [attribution.FromMetadata(m.metadata) for m in answer]
  limit = attribution.OfAnswer([l for l in limited if l is not None])
  if limit is not None:
    # The answer's limit carries the figures of a probe that named it.
    source = [m for m in answer
              if m.metadata.get(attribution.KEY) == limit.name][-1]
    limit = dataclasses.replace(limit, figures=tuple(
        (k, v) for k, v in source.metadata.items()
        if k in _LIMIT_FIGURES))
  confirmed_reason = ''
  if repeats and result.confirmed_throughput_ci95 is not None:
    mean = result.confirmed.throughput if result.confirmed else 0
    pct = 100 * result.confirmed_throughput_ci95 / mean if mean else math.inf
    # Most repeats under the cap confirm an answer, not all: one over it
    # is counted, never called under it.
    under = sum(1 for p in repeats if p.under_cap)
    counted = (f'{len(repeats)}' if under == len(repeats) else
               f'{under} of {len(repeats)}')
    confirmed_reason = (f'{counted} repeats under the {cap} cap, '
                        f'95 % interval +-{pct:.1f} %')
    if hold is not None and hold.ok:
      confirmed_reason += f', {hold.Words()}'

  return _Make(problems, confirmed_reason, limit)


# The probe figures an answer's limit carries (attribution.Figures' keys).
_LIMIT_FIGURES = frozenset(
    f'{side}_{name}' for side in ('client', 'server') for name in (
        'busiest_thread', 'busiest_thread_pct', 'thread_wait_pct',
        'main_thread_pct', 'cpu_used_pct', 'cpu_allowed', 'cpu_quota',
        'throttled_pct', 'throttled_s', 'foreign_cpu_pct')) | frozenset((
            'per_second_seconds_over_cap', 'per_second_swing_pct',
            'per_second_swing_bound_pct', steadiness.CPU_LIMIT_KEY))


def _Present(value: Any) -> bool:
  return value is not None and not (isinstance(value, float) and
                                    math.isnan(value))


def OfMetadata(metadata: Mapping[str, Any]) -> Verdict:
  """The verdict a stored answer sample carries; one recorded before
  verdicts existed gets one derived from what it did record."""
  name = metadata.get(KEY)
  reason = metadata.get(REASON_KEY)
  reason = str(reason) if _Present(reason) else ''
  limit = attribution.FromMetadata(metadata)
  if isinstance(name, str) and name in VERDICTS:
    flags = metadata.get(FLAGS_KEY)
    listed = tuple(f for f in str(flags).split(',') if f in PROBLEMS
                   ) if _Present(flags) else ()
    if name == CONFIRMED:
      return Verdict((), reason, limit)
    return Verdict(listed if listed[:1] == (name,) else (name,), reason,
                   limit)
  problems = []
  stop = metadata.get('search_stop_reason')
  repeats = metadata.get('confirmation_repeats')
  if _Present(stop) and 'budget' in str(stop) and 'exhausted' in str(stop):
    problems.append((UNCONFIRMED, 'probe budget spent before the answer was '
                     'confirmed (recorded before verdicts)'))
  elif (not _Present(repeats) or float(repeats) < 2 or
        not _Present(metadata.get('throughput_ci95_ops'))):
    problems.append((UNCONFIRMED, 'no confirming repeats recorded'))
  if ClientLimited(metadata):
    problems.append((CLIENT_BOUND, 'load generator saturated at the answer'))
  if Disturbed(metadata):
    problems.append((DISTURBED, 'foreign CPU on the run\'s cores at the '
                     'answer'))
  return _Make(problems, 'recorded before verdicts', limit)


def IsOfficial(metadata: Mapping[str, Any]) -> bool:
  """False for a sample whose verdict is not `confirmed`, or whose own
  measurement was client-bound or disturbed (probe samples carry no verdict
  but those flags). A probe over the cap is a real measurement of that load
  and stays official unless flagged."""
  name = metadata.get(KEY)
  if _Present(name) and name != CONFIRMED:
    return False
  return not (ClientLimited(metadata) or Disturbed(metadata))


def RunVerdict(samples: Iterable[Any]) -> Optional[Verdict]:
  """The least sure of a run's answers (its capped-throughput samples; of a
  shard study, only the optimum's), or None when it has none."""
  capped = [s.metadata for s in samples
            if s.metric == CAPPED_METRIC and KEY in s.metadata]
  optimum = [m for m in capped if m.get('shard_search_role') == 'optimum']
  answers = [OfMetadata(m) for m in (optimum or capped)]
  if not answers:
    return None
  return min(answers, key=lambda v: (
      PROBLEMS.index(v.name) if v.flags else len(PROBLEMS)))


def FixedLoadVerdict(samples: Iterable[Any]) -> Optional[Verdict]:
  """The verdict of a run of fixed loads (no capped answer): client_bound or
  disturbed when any of its runs was, so it exits as a capped search with
  that verdict would. None without fixed runs."""
  runs = [s.metadata for s in samples
          if s.metric == 'throughput' and s.metadata.get('probe_role') ==
          'fixed']
  if not runs:
    return None
  problems = []
  client = sum(1 for m in runs if ClientLimited(m))
  if client:
    problems.append((CLIENT_BOUND, f'the load generator was the limit in '
                     f'{client} of {len(runs)} fixed-load run(s)'))
  disturbed = sum(1 for m in runs if Disturbed(m))
  if disturbed:
    problems.append((DISTURBED, f'others took the CPU in {disturbed} of '
                     f'{len(runs)} fixed-load run(s)'))
  return _Make(problems, f'{len(runs)} fixed-load run(s), none limited by '
               'the client or disturbed')


def OfRun(samples: Iterable[Any]) -> Tuple[Optional[Verdict], str]:
  """A run's verdict and what it judges: its answer (RunVerdict) or, in a
  run of fixed loads only, those loads (FixedLoadVerdict); (None, '') for
  a run with neither. pkb's exit code and a matrix cell's status read it."""
  samples = list(samples)
  found = RunVerdict(samples)
  if found is not None:
    return found, 'the answer'
  found = FixedLoadVerdict(samples)
  return found, ('the fixed load' if found is not None else '')
