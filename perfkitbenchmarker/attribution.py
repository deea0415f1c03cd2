"""What limited a probe: one rule, decided on counters noise cannot fake.

Every probe measures both sides over its load window (the load generator's
processes on each client VM, the server processes on each server VM; see
load_generators/client_cpu.py for the counters and how they are read):

  * each thread's time ON a CPU (schedstat run time, never runnable time: a
    thread waiting behind other processes is not busy) and its run-queue
    wait;
  * the CPU the side may use: the CPUs its affinity allows (Cpus_allowed_list)
    and its cgroup's CPU quota (v1 cpu.cfs_quota_us / cpu.cfs_period_us, v2
    cpu.max; the tightest level of the hierarchy), the smaller of the two;
  * its cgroup's throttling over the window (cpu.stat: nr_periods,
    nr_throttled, throttled_time / throttled_usec);
  * CPU that processes foreign to the run (and the hypervisor: steal) used on
    the cores it runs on.

`Decide` names the first of these that holds (README, "What limited it"):

  client_quota  the load generator's cgroup throttled it in >= 10 % of the
                window's quota periods, and held it back: it used >= 75 %
                of its quota, or spent >= 10 % of the window throttled
  client_cpu    a load-generator thread was on a CPU >= 90 % of the window
                (of the CPU it may use, if that is less than one), or its
                threads together used >= 90 % of what they may use
  server_quota  the server's cgroup throttled it in >= 10 % of the periods,
                and held it back (as for the client)
  server_cpu    a server's main thread, or every one of its busy worker
                threads, was on a CPU >= 90 % of what it may use, or its
                threads together used >= 90 % of what they may use
  disturbed     a side's thread waited for a CPU >= 10 % of the window while
                foreign processes (or steal) used >= 10 % of its cores
  latency       neither side saturated nor disturbed: the latency cap was
                reached by queueing or the network
  unmeasured    no counters came back (e.g. a tool ended before the window)

One more name is given outside `Decide`, to a latency-throughput curve's
point (latency_curve.RateLimit): `rate_not_achieved`, a point that achieved
less than the rate it was offered, whatever limited it (in its detail).

Another is named from the per-second series, not the counters
(steadiness.py): `unsteady`, a probe whose seconds disagree with its whole,
in place of a server or latency limit (the CPU rule's is kept as
`cpu_limit`).

Throttling and on-CPU time are the process's own counters: foreign load can
take CPU from a side (then it waits, and the probe reads `disturbed`), but it
can neither make a side run nor make it use its quota. (It can make a short
quota period throttle: a side starved by others runs in whole scheduler
slices when it does run, and one slice can outlast a 1 ms quota, for a
moment each time; so a quota is the limit only when the side also used
most of it, or was held throttled for a real share of the window: its
cgroup may hold other processes too, a container's, whose use the side's
threads do not show.) A client limit
makes the probe the client's figure (`client_saturated`); a server limit is a
legitimate server figure (with its quota named).

Pure: no flags, I/O or clock. Extension seam: a new limit is a rule in
`Decide` with its words in `WORDS` and the README's table.
"""

import collections
import dataclasses
from typing import Dict, List, Optional, Sequence, Tuple

SATURATED_FRACTION = 0.9
THROTTLED_FRACTION = 0.1
WAIT_FRACTION = 0.1
FOREIGN_PCT = 10.0
# A side held by its quota used most of it over the window, or was
# throttled for a real share of it (module doc: a starved side is throttled
# for moments, in bursts, while it uses far less).
QUOTA_USED_FRACTION = 0.75
THROTTLED_TIME_FRACTION = 0.1
# A worker thread busier than this counts as one of the server's workers
# (Redis keeps idle background threads: bio_*, jemalloc_bg_thd).
ACTIVE_FRACTION = 0.05

CLIENT_QUOTA = 'client_quota'
CLIENT_CPU = 'client_cpu'
SERVER_QUOTA = 'server_quota'
SERVER_CPU = 'server_cpu'
DISTURBED = 'disturbed'
UNSTEADY = 'unsteady'
LATENCY = 'latency'
UNMEASURED = 'unmeasured'
RATE_NOT_ACHIEVED = 'rate_not_achieved'
LIMITS = (CLIENT_QUOTA, CLIENT_CPU, SERVER_QUOTA, SERVER_CPU, DISTURBED,
          UNSTEADY, LATENCY, UNMEASURED, RATE_NOT_ACHIEVED)
CLIENT_LIMITS = (CLIENT_QUOTA, CLIENT_CPU)
WORDS = {CLIENT_QUOTA: 'client quota', CLIENT_CPU: 'client CPU',
         SERVER_QUOTA: 'server quota', SERVER_CPU: 'server CPU',
         DISTURBED: 'disturbed', UNSTEADY: 'unsteady', LATENCY: 'latency',
         UNMEASURED: 'unmeasured', RATE_NOT_ACHIEVED: 'rate not achieved'}

KEY = 'limit'
DETAIL_KEY = 'limit_detail'


@dataclasses.dataclass(frozen=True)
class ThreadCpu:
  """One thread over the window (fractions of the window; 1.0 = one CPU)."""
  name: str
  on_cpu: float
  wait: float = 0.0
  main: bool = False  # the process's main thread (tid == pid)


@dataclasses.dataclass(frozen=True)
class SideCpu:
  """One side's processes on one machine over the probe window.

  Attributes:
    side: 'client' or 'server'.
    threads: every thread seen long enough in the window.
    window_s: the window's length.
    cores: CPUs its affinity allows (online ones), None if unknown.
    quota_cores: its cgroup's CPU quota in CPUs (tightest level), None if
      it has none.
    periods, throttled_periods, throttled_s: its cgroup's quota periods in
      the window, how many of them throttled it, and the time throttled.
    foreign_pct: CPU foreign processes and steal used on its cores, as a
      percentage of their capacity (None if not measured).
    processes: how many processes the side counts.
  """
  side: str
  threads: Tuple[ThreadCpu, ...]
  window_s: float
  cores: Optional[int] = None
  quota_cores: Optional[float] = None
  periods: int = 0
  throttled_periods: int = 0
  throttled_s: float = 0.0
  foreign_pct: Optional[float] = None
  processes: int = 1

  @property
  def allowed(self) -> Optional[float]:
    """CPUs it may use: its cores, or its quota if that is less."""
    return min((v for v in (self.cores, self.quota_cores) if v), default=None)

  @property
  def one_thread(self) -> float:
    """What one thread may use: a CPU, or the quota if that is less."""
    return min(1.0, self.allowed or 1.0)

  @property
  def used(self) -> float:
    return sum(t.on_cpu for t in self.threads)

  @property
  def used_fraction(self) -> Optional[float]:
    allowed = self.allowed
    return self.used / allowed if allowed else None

  @property
  def throttled_fraction(self) -> float:
    return self.throttled_periods / self.periods if self.periods else 0.0

  @property
  def busiest(self) -> Optional[ThreadCpu]:
    return max(self.threads, key=lambda t: (t.on_cpu, t.wait), default=None)

  @property
  def waited_most(self) -> Optional[ThreadCpu]:
    return max(self.threads, key=lambda t: (t.wait, t.on_cpu), default=None)

  @property
  def mains(self) -> List[ThreadCpu]:
    return [t for t in self.threads if t.main]

  @property
  def workers(self) -> List[ThreadCpu]:
    return [t for t in self.threads
            if not t.main and t.on_cpu >= ACTIVE_FRACTION]


@dataclasses.dataclass(frozen=True)
class Limit:
  """What limited a probe (or an answer), with the figures it rests on."""
  name: str
  detail: str
  figures: Tuple[Tuple[str, object], ...] = ()

  @property
  def client_limited(self) -> bool:
    return self.name in CLIENT_LIMITS

  @property
  def words(self) -> str:
    return WORDS.get(self.name, self.name)

  def Metadata(self) -> Dict[str, object]:
    return {KEY: self.name, DETAIL_KEY: self.detail, **dict(self.figures)}


def Pct(x: Optional[float]) -> Optional[float]:
  return None if x is None else round(100.0 * x, 1)


def _Cpus(x: Optional[float]) -> str:
  if x is None:
    return 'unknown'
  return f'{x:g} CPU' if x == 1 else f'{x:.2g} CPUs'


def _Quota(side: SideCpu) -> Optional[str]:
  if side.throttled_fraction < THROTTLED_FRACTION:
    return None
  quota = ''
  if side.quota_cores is not None:
    used = side.used / side.quota_cores
    if (used < QUOTA_USED_FRACTION and
        side.throttled_s < THROTTLED_TIME_FRACTION * side.window_s):
      return None
    quota = f'quota {_Cpus(side.quota_cores)}, {Pct(used):g} % of it used, '
  return (f'{side.side} cgroup throttled in {Pct(side.throttled_fraction):g}'
          f' % of its {side.periods} CPU periods ({quota}'
          f'{side.throttled_s:.2f} s throttled over {side.window_s:.1f} s)')


def _OfWhat(side: SideCpu) -> str:
  one = side.one_thread
  if one >= 1.0:
    return 'a CPU'
  return f'its {_Cpus(one)} quota'


def _Cpu(side: SideCpu) -> Optional[str]:
  """Why a side's own CPU was the limit, or None."""
  one = side.one_thread
  bar = SATURATED_FRACTION * one
  candidates = side.mains if side.side == 'server' else list(side.threads)
  hot = max(candidates, key=lambda t: t.on_cpu, default=None)
  label = 'main thread' if side.side == 'server' else 'thread'
  if hot is not None and hot.on_cpu >= bar:
    return (f'{side.side} {label} {hot.name} on a CPU {Pct(hot.on_cpu):g} % '
            f'of the window ({Pct(hot.on_cpu / one):g} % of {_OfWhat(side)})')
  workers = side.workers
  if side.side == 'server' and workers and all(
      w.on_cpu >= bar for w in workers):
    low = min(w.on_cpu for w in workers)
    return (f'all {len(workers)} server worker threads on a CPU >= '
            f'{Pct(low / one):g} % of {_OfWhat(side)}')
  allowed = side.allowed
  if allowed and side.used >= SATURATED_FRACTION * allowed:
    return (f'{side.side} threads together used {Pct(side.used / allowed):g}'
            f' % of the {_Cpus(allowed)} they may use')
  return None


def _Disturbed(side: SideCpu) -> Optional[str]:
  waited = side.waited_most
  if (side.foreign_pct is None or side.foreign_pct < FOREIGN_PCT or
      waited is None or waited.wait < WAIT_FRACTION):
    return None
  return (f'{side.side} thread {waited.name} waited for a CPU '
          f'{Pct(waited.wait):g} % of the window (on a CPU '
          f'{Pct(waited.on_cpu):g} %) while foreign processes used '
          f'{side.foreign_pct:g} % of its cores')


def _Describe(side: SideCpu) -> str:
  if side.side == 'server' and side.mains:
    hot = max(side.mains, key=lambda t: t.on_cpu)
    what = f'server main thread {Pct(hot.on_cpu / side.one_thread):g} %'
  else:
    hot = side.busiest
    if hot is None:
      return f'{side.side}: no threads seen'
    what = (f'{side.side} busiest thread {hot.name} '
            f'{Pct(hot.on_cpu / side.one_thread):g} %')
  return what + f' of {_OfWhat(side)}'


def Figures(clients: Sequence[SideCpu], servers: Sequence[SideCpu]
            ) -> Dict[str, object]:
  """The figures the rule reads, per side at its worst, for metadata."""
  figures: Dict[str, object] = {}
  for role, sides in (('client', clients), ('server', servers)):
    if not sides:
      continue

    def Worst(value, sides=sides):
      values = [value(s) for s in sides]
      return max((v for v in values if v is not None), default=None)

    busiest = max((s.busiest for s in sides if s.busiest),
                  key=lambda t: t.on_cpu, default=None)
    if busiest is not None:
      figures[f'{role}_busiest_thread'] = busiest.name
      figures[f'{role}_busiest_thread_pct'] = Pct(busiest.on_cpu)
    figures[f'{role}_thread_wait_pct'] = Pct(Worst(
        lambda s: s.waited_most.wait if s.waited_most else None))
    if role == 'server':
      figures['server_main_thread_pct'] = Pct(Worst(
          lambda s: max((t.on_cpu for t in s.mains), default=None)))
    figures[f'{role}_cpu_used_pct'] = Pct(Worst(lambda s: s.used_fraction))
    figures[f'{role}_cpu_allowed'] = Worst(lambda s: s.allowed)
    figures[f'{role}_cpu_quota'] = Worst(lambda s: s.quota_cores)
    figures[f'{role}_throttled_pct'] = Pct(Worst(
        lambda s: s.throttled_fraction if s.periods else None))
    figures[f'{role}_throttled_s'] = Worst(
        lambda s: round(s.throttled_s, 3) if s.periods else None)
    figures[f'{role}_foreign_cpu_pct'] = Worst(lambda s: s.foreign_pct)
  return {k: v for k, v in figures.items() if v is not None}


def Decide(clients: Sequence[SideCpu], servers: Sequence[SideCpu]) -> Limit:
  """The probe's limit: the first rule of the module doc that holds."""
  clients, servers = list(clients), list(servers)
  figures = tuple(Figures(clients, servers).items())
  if not clients and not servers:
    return Limit(UNMEASURED, 'no CPU counters came back from either side',
                 figures)
  rules = ((CLIENT_QUOTA, clients, _Quota), (CLIENT_CPU, clients, _Cpu),
           (SERVER_QUOTA, servers, _Quota), (SERVER_CPU, servers, _Cpu),
           (DISTURBED, clients + servers, _Disturbed))
  for name, sides, rule in rules:
    for side in sides:
      why = rule(side)
      if why:
        return Limit(name, why, figures)
  parts = [_Describe(s) for s in clients[:1] + servers[:1]]
  missing = [r for r, s in (('client', clients), ('server', servers))
             if not s]
  parts += [f'{r} not measured' for r in missing]
  # Said of the CPU only: the probe may be far under the cap (a search that
  # stopped on its budget), so the words do not claim the cap was reached.
  return Limit(LATENCY, 'neither side saturated nor disturbed (' +
               '; '.join(parts) + '): not CPU-bound at this load; what it '
               'met was latency (queueing or the network)', figures)


def OfAnswer(limits: Sequence[Limit]) -> Optional[Limit]:
  """An answer's limit from its probes' (repeats at one load): the one most
  of them name (ties: the earlier in LIMITS), with that probe's figures."""
  limits = [l for l in limits if l is not None]
  if not limits:
    return None
  counts = collections.Counter(l.name for l in limits)
  name = min(counts, key=lambda n: (-counts[n], LIMITS.index(n)
                                    if n in LIMITS else len(LIMITS)))
  chosen = [l for l in limits if l.name == name][-1]
  if len(limits) == 1:
    return chosen
  return dataclasses.replace(
      chosen, detail=f'{counts[name]} of {len(limits)} probes: '
      f'{chosen.detail}')


def Short(metadata) -> str:
  """The limit and its key figure for a probe line, e.g. 'server CPU
  (main thread 97 %)'; '' when the metadata has no limit."""
  name = metadata.get(KEY)
  if not isinstance(name, str) or not name:
    return ''
  figure = {
      CLIENT_QUOTA: ('throttled', 'client_throttled_pct'),
      CLIENT_CPU: ('busiest thread', 'client_busiest_thread_pct'),
      SERVER_QUOTA: ('throttled', 'server_throttled_pct'),
      SERVER_CPU: ('main thread', 'server_main_thread_pct'),
  }.get(name)
  if name == DISTURBED:
    # The sample's foreign_cpu_pct is the probe's figure (the sides' scans
    # and steal samplers): the line says no other number.
    values = [metadata.get(k) for k in ('foreign_cpu_pct',
                                        'client_foreign_cpu_pct',
                                        'server_foreign_cpu_pct')]
    values = [v for v in values if isinstance(v, (int, float))]
    if values:
      return f'{WORDS[name]} (foreign {max(values):g} %)'
  if name == UNSTEADY:
    over = metadata.get('per_second_seconds_over_cap')
    swing = metadata.get('per_second_swing_pct')
    bound = metadata.get('per_second_swing_bound_pct')
    parts = []
    if isinstance(over, (int, float)) and over:
      parts.append(f'{over:g} s over cap')
    if (isinstance(swing, (int, float)) and isinstance(bound, (int, float))
        and swing > bound):
      parts.append(f'swing {swing:g} %')
    return WORDS[name] + (f' ({", ".join(parts)})' if parts else '')
  if figure and isinstance(metadata.get(figure[1]), (int, float)):
    return f'{WORDS[name]} ({figure[0]} {metadata[figure[1]]:g} %)'
  return WORDS.get(name, name)


def FromMetadata(metadata) -> Optional[Limit]:
  """A stored sample's limit, or None when it was recorded before limits."""
  name = metadata.get(KEY)
  if not isinstance(name, str) or not name or name == 'nan':
    return None
  detail = metadata.get(DETAIL_KEY)
  detail = detail if isinstance(detail, str) else ''
  return Limit(name, detail)
