"""The one reader of a probe's CPU and process counters, on every VM.

Whether a probe measured the server or the client is a question about the
processes' own threads, not the VM: on a 32-vCPU client one fully busy
memtier thread is 3 % of the VM. One snapshot format (JSON lines with a
version), written by one shell function (`snapshot` in scripts/snapshot.sh;
Local and SSH alike) and read by one parser (`Snapshot.Parse`, its stat
lines by process_stat), serves the probe's client snapshots (concurrent.py),
the server sampler's series (scripts/cpu_sampler.sh, interference.py) and,
with `ProcStat`, steal time and the fallback client CPU. What a snapshot
holds: scripts/snapshot.sh.

`Measure` turns two snapshots into a `ClientCpu` with its `side` (the
`attribution.SideCpu` the one rule decides on); `SideOf` does the same for
a server's processes, `ForeignPct` the foreign CPU on given cores. Tested
on snapshots of real threads and recorded cgroup files
(tests/client_cpu_test.py, tests/attribution_test.py).

Extension seam: another counter is a record written by scripts/snapshot.sh,
read in `Snapshot.Parse`, and a field of `SideCpu`.
"""

import dataclasses
import json
import os
import posixpath
import re
import shlex
from typing import (Collection, Dict, Iterable, List, Optional, Sequence,
                    Tuple)

from perfkitbenchmarker import attribution
from perfkitbenchmarker import measurement
from perfkitbenchmarker import process_stat

# Threads seen for less than this share of the window (born late, ended
# early) are left out: 10 ms of CPU over 20 ms is no saturation.
MIN_THREAD_SHARE = 0.25
DEFAULT_CLK_TCK = 100.0
# scripts/snapshot.sh's format (its head's "v"); the @-lines were 1, and 2
# had no last line saying the snapshot was whole.
FORMAT_VERSION = 3
WHOLE = {'whole': True}  # A snapshot's last line.


@dataclasses.dataclass(frozen=True)
class ThreadTimes:
  """One thread at one snapshot."""
  tid: int
  name: str
  start_ticks: float  # since boot, in clock ticks
  cpu_ticks: float  # user + system
  run_ns: Optional[float] = None  # schedstat: on a CPU
  wait_ns: Optional[float] = None  # schedstat: runnable, waiting for a CPU
  pid: int = 0  # its process (the main thread has tid == pid)


@dataclasses.dataclass(frozen=True)
class CgroupCpu:
  """One cgroup directory's CPU controller at one snapshot."""
  quota_us: Optional[float] = None  # None: no quota (v1 -1, v2 'max')
  period_us: Optional[float] = None
  nr_periods: float = 0.0
  nr_throttled: float = 0.0
  throttled_s: float = 0.0  # v1 throttled_time (ns), v2 throttled_usec

  @property
  def quota_cores(self) -> Optional[float]:
    if self.quota_us is None or not self.period_us or self.quota_us <= 0:
      return None
    return self.quota_us / self.period_us


@dataclasses.dataclass(frozen=True)
class Snapshot:
  wall_s: float
  uptime_s: Optional[float]
  cores: Dict[str, Tuple[float, ...]]  # 'cpu', 'cpu0', ... -> jiffies
  threads: Dict[int, ThreadTimes]
  clk_tck: float = DEFAULT_CLK_TCK
  # pid -> CPUs its affinity allows (Cpus_allowed_list).
  affinity: Dict[int, Tuple[int, ...]] = dataclasses.field(
      default_factory=dict)
  # pid -> its cgroup's CPU-controller directories, its own first, then
  # each parent up to the hierarchy's root.
  cgroup_dirs: Dict[int, Tuple[str, ...]] = dataclasses.field(
      default_factory=dict)
  cgroups: Dict[str, CgroupCpu] = dataclasses.field(default_factory=dict)
  # The scan of processes foreign to the run, by (pid, start) (None: no
  # scan taken), and the uptime as it began (None: not recorded).
  foreign: Optional[Dict[Tuple[int, float], process_stat.Stat]] = None
  scan_uptime_s: Optional[float] = None

  @classmethod
  def Parse(cls, text: str) -> 'Snapshot':
    """A snapshot as scripts/snapshot.sh writes it (JSON lines, the first
    its head with the format's version, then WHOLE after its records and
    after each part appended to it).

    Raises:
      ValueError: not a snapshot of this version (e.g. empty), or cut short
        (mid-line, or between two lines before its first WHOLE).
    """
    try:
      return cls._FromRecords(
          [json.loads(line) for line in text.split('\n') if line])
    except (KeyError, TypeError, AttributeError) as e:
      raise ValueError(f'not a CPU snapshot ({e!r})') from e

  @classmethod
  def _FromRecords(cls, records: List[Dict]) -> 'Snapshot':
    if not records or records[0].get('v') != FORMAT_VERSION:
      raise ValueError(f'not a version {FORMAT_VERSION} CPU snapshot')
    ends = [i for i, record in enumerate(records) if record == WHOLE]
    if not ends:
      raise ValueError('a CPU snapshot cut short (no WHOLE line)')
    # A part appended later (probe.sh's scan of the first snapshot) ends
    # with its own WHOLE: lines after the last one are a part cut short.
    records = [r for r in records[:ends[-1]] if r != WHOLE]
    head = records[0]
    cores: Dict[str, Tuple[float, ...]] = {}
    stats: Dict[int, process_stat.Stat] = {}
    sched: Dict[int, Tuple[float, float]] = {}
    affinity: Dict[int, Tuple[int, ...]] = {}
    dirs: Dict[int, List[str]] = {}
    files: Dict[str, Dict[str, str]] = {}
    foreign: Optional[Dict[Tuple[int, float], process_stat.Stat]] = None
    scan_uptime: Optional[float] = None
    for record in records[1:]:
      if 'cpu' in record:
        cores.update(Cores(record['cpu']))
      elif 'stat' in record:
        stat = process_stat.Parse(record['stat'])
        # A zombie (e.g. a finished helper of the command) is no load.
        if stat is not None and stat.state != 'Z':
          stats[record['tid']] = dataclasses.replace(stat, pid=record['pid'])
      elif 'sched' in record:
        fields = record['sched'].split()
        if len(fields) >= 2:
          sched[record['tid']] = (float(fields[0]), float(fields[1]))
      elif 'cpus' in record:
        affinity[record['pid']] = CpuList(record['cpus'])
      elif 'cgroup' in record:
        dirs.setdefault(record['pid'], []).append(
            record['cgroup'].rstrip('/') or '/')
      elif 'file' in record:
        entry = files.setdefault(record['dir'].rstrip('/') or '/', {})
        if record['file'] == 'cpu.stat':
          key, _, value = record['text'].partition(' ')
          entry[f'stat.{key}'] = value.strip()
        else:
          entry[record['file']] = record['text'].strip()
      elif 'scan' in record:
        foreign = {} if foreign is None else foreign
        if record.get('uptime') is not None:
          scan_uptime = float(record['uptime'])
      elif 'fg' in record:
        process = process_stat.Parse(record['fg'])
        foreign = {} if foreign is None else foreign
        # Kernel threads' work (softirq, I/O) is mostly done for the run.
        if process and process.processor is not None and (
            not process.kernel_thread):
          foreign[(process.pid, process.start_ticks)] = process
    threads = {}
    for tid, stat in stats.items():
      run, wait = sched.get(tid, (None, None))
      threads[tid] = ThreadTimes(tid, stat.name, stat.start_ticks,
                                 stat.cpu_ticks, run, wait, stat.pid)
    return cls(float(head['wall']), float(head['uptime']), cores, threads,
               float(head['clk']) or DEFAULT_CLK_TCK, affinity,
               {pid: tuple(d) for pid, d in dirs.items()},
               {d: _CgroupCpu(f) for d, f in files.items()}, foreign,
               scan_uptime)


def Cores(proc_stat: str) -> Dict[str, Tuple[float, ...]]:
  """The cpu rows of /proc/stat text: 'cpu', 'cpu0', ... -> jiffies."""
  return {f[0]: tuple(float(v) for v in f[1:9])
          for f in (line.split() for line in proc_stat.splitlines())
          if f and f[0].startswith('cpu')}


def ProcStat(vm) -> Snapshot:
  """A snapshot of `vm`'s /proc/stat alone (`Measure` then gives busy and
  steal): one round trip over SSH."""
  return Snapshot(0.0, None, Cores(vm.RemoteCommand('cat /proc/stat')[0]), {})


def CpuList(text: str) -> Tuple[int, ...]:
  """'0-3,8,10-11' (Cpus_allowed_list, cpuset lists) as CPU numbers."""
  cpus: List[int] = []
  for part in text.strip().split(','):
    if not part:
      continue
    low, _, high = part.partition('-')
    cpus.extend(range(int(low), int(high or low) + 1))
  return tuple(cpus)


def _CgroupCpu(files: Dict[str, str]) -> CgroupCpu:
  """v1 (cpu.cfs_quota_us, cpu.cfs_period_us, cpu.stat with throttled_time
  in ns) or v2 (cpu.max 'QUOTA PERIOD' or 'max PERIOD', cpu.stat with
  throttled_usec)."""
  number = measurement.FiniteFloat  # None: missing, 'max' or no number.
  quota = period = None
  if 'cpu.max' in files:
    quota, period = map(number, (files['cpu.max'].split() + [None, None])[:2])
  elif 'cpu.cfs_quota_us' in files:
    quota = number(files['cpu.cfs_quota_us'])
    quota = None if quota is None or quota < 0 else quota
    period = number(files.get('cpu.cfs_period_us'))
  if 'stat.throttled_usec' in files:
    throttled = (number(files['stat.throttled_usec']) or 0.0) / 1e6
  else:
    throttled = (number(files.get('stat.throttled_time')) or 0.0) / 1e9
  return CgroupCpu(quota, period, number(files.get('stat.nr_periods')) or 0.0,
                   number(files.get('stat.nr_throttled')) or 0.0, throttled)


def ParseSeries(text: str) -> List[Snapshot]:
  """Snapshots one after another (the server sampler's file), each from
  its head line on, then SERIES_END; the unreadable ones (cut short: the
  last, when a stop gave up waiting for a starved sampler) are left out."""
  snapshots = []
  text = re.sub(r'^' + re.escape(SERIES_END) + r'\n?\Z', '', text,
                flags=re.M)
  for chunk in re.split(r'^(?={"v":)', text, flags=re.M):
    try:
      snapshots.append(Snapshot.Parse(chunk))
    except ValueError:
      continue
  return snapshots


@dataclasses.dataclass(frozen=True)
class ClientCpu:
  """The client's CPU over one probe's load window (fractions of 1)."""
  window_s: Optional[float]
  busy_fraction: Optional[float]  # the VM's (pinned or all) cores
  busiest_core: Optional[str] = None
  busiest_core_fraction: Optional[float] = None
  busiest_thread: Optional[str] = None
  busiest_thread_fraction: Optional[float] = None  # on a CPU
  busiest_thread_runnable_fraction: Optional[float] = None
  steal_pct: Optional[float] = None  # of the same cores, for interference
  threads_seen: int = 0
  # The load generator's side for attribution.Decide (on-CPU, waits,
  # affinity, quota, throttling, foreign CPU on its cores).
  side: Optional[attribution.SideCpu] = None
  # The window's wall-clock start and end (the server's counters are
  # read over the same span).
  window_start: Optional[float] = None
  window_end: Optional[float] = None

  def Metadata(self) -> Dict[str, object]:
    """The sample metadata keys (client_cpu_busy_pct comes separately)."""
    metadata: Dict[str, object] = {}
    if self.busiest_thread_fraction is not None:
      metadata.update({
          'client_busiest_thread': self.busiest_thread,
          'client_busiest_thread_pct': attribution.Pct(
              self.busiest_thread_fraction),
          'client_busiest_thread_runnable_pct': attribution.Pct(
              self.busiest_thread_runnable_fraction),
          'client_threads_seen': self.threads_seen})
    if self.busiest_core_fraction is not None:
      metadata['client_busiest_core_pct'] = attribution.Pct(
          self.busiest_core_fraction)
    return metadata


def OwnPid(vm) -> str:
  """pkb's PID when `vm` is this machine: pkb works outside the run's
  workspace (its cwd is the user's), yet its CPU is the run's own."""
  return str(os.getpid()) if vm.CAN.is_runner_machine else ''


def RunRoot(vm) -> str:
  """The directory every process of the run works under on `vm` (the
  foreign scan's `run_root`): the parent of its scratch directory, the
  run's workspace there, shared by its VMs on one machine (run_scope)."""
  return posixpath.dirname(vm.scratch_dir.rstrip('/'))


def SampleSchedule(interval_s: float, max_s: float, per_step: int = 50,
                   longest_s: float = 5.0) -> List[float]:
  """The sampler's sleeps: `interval_s` for the first `per_step`
  snapshots, then twice as long for as many, and so on up to `longest_s`,
  until `max_s` in all: short probes are sampled finely, a long one's
  series stays small (its window's edges matter less)."""
  sleeps: List[float] = []
  interval, total = interval_s, 0.0
  while total < max_s:
    for _ in range(per_step):
      sleeps.append(interval)
      total += interval
      if total >= max_s:
        break
    interval = min(longest_s, interval * 2)
  return sleeps


SAMPLER = 'cpu_sampler.sh'  # The server sampler (scripts/).
SERIES_END = '{"end":true}'  # The sampler's last line: it ended.


def SamplerArgs(pids: Sequence[int], base: str, interval_s: float,
                max_s: float, run_root: str, own_pid: str = '') -> List[str]:
  """The arguments of the sampler script (scripts/cpu_sampler.sh says what
  it does with them) that snapshots `pids` (a server's processes) every
  `interval_s`, then less often (SampleSchedule), at most `max_s`."""
  schedule = ' '.join(f'{x:g}' for x in SampleSchedule(interval_s, max_s))
  return [base, run_root, str(int(own_pid or 0)), schedule,
          *(str(int(p)) for p in pids)]


def StopSamplerCommand(base: str, wait_s: float = 10.0) -> str:
  """Shell that wakes the sampler at `base` (SAMPLER; a stop file too, which
  a lost wake line cannot lose), waits for it to end (its lock; at most
  `wait_s`), prints its series and removes its files. Opening the FIFO
  read-write never blocks, with or without a sampler on the other end."""
  q = shlex.quote
  files = ' '.join(q(base + x)
                   for x in ('.out', '.wake', '.lock', '.sh', '.stop'))
  return (f': > {q(base + ".stop")} 2>/dev/null; '
          f'{{ exec 3<>{q(base + ".wake")} && echo >&3; }} 2>/dev/null; '
          f'flock -w {wait_s:g} {q(base + ".lock")} true; '
          f'cat {q(base + ".out")} 2>/dev/null; rm -f {files}')


def _Busy(before: Sequence[float], after: Sequence[float]
          ) -> Optional[float]:
  """Busy share between two /proc/stat rows (idle and iowait are idle)."""
  delta = [a - b for a, b in zip(after, before)]
  total = sum(delta)
  if total <= 0:
    return None
  return (total - delta[3] - delta[4]) / total


def _Steal(before: Sequence[float], after: Sequence[float]
           ) -> Optional[float]:
  if len(before) < 8 or len(after) < 8:
    return None
  total = sum(after) - sum(before)
  return 100.0 * (after[7] - before[7]) / total if total > 0 else None


def _Sum(snap: Snapshot, rows: Iterable[str]) -> Tuple[float, ...]:
  values = [snap.cores[r] for r in rows if r in snap.cores]
  return tuple(sum(column) for column in zip(*values)) if values else ()


def _ThreadRows(before: Snapshot, after: Snapshot,
                pids: Optional[Collection[int]] = None
                ) -> List[Tuple[ThreadTimes, float, float]]:
  """(thread, on-CPU, waiting) fractions of each thread seen long enough
  (of `pids` only, if given)."""
  if before.uptime_s is None or after.uptime_s is None:
    return []
  window = after.uptime_s - before.uptime_s
  if window <= 0:
    return []
  clk = after.clk_tck
  rows = []
  for tid, t1 in after.threads.items():
    if pids is not None and t1.pid not in pids:
      continue
    t0 = before.threads.get(tid)
    if t0 is not None and t0.start_ticks != t1.start_ticks:
      t0 = None  # The tid was reused: another thread.
    since = (before.uptime_s if t0 is not None else
             max(before.uptime_s, t1.start_ticks / clk))
    seen = after.uptime_s - since
    if seen <= 0 or seen < MIN_THREAD_SHARE * window:
      continue
    if t1.run_ns is not None and (t0 is None or t0.run_ns is not None):
      run = t1.run_ns - (t0.run_ns if t0 else 0.0)
      wait = t1.wait_ns - (t0.wait_ns if t0 else 0.0)
      on_cpu, waiting = run / 1e9 / seen, wait / 1e9 / seen
    else:
      ticks = t1.cpu_ticks - (t0.cpu_ticks if t0 else 0.0)
      on_cpu, waiting = ticks / clk / seen, 0.0
    rows.append((t1, min(1.0, max(0.0, on_cpu)),
                 min(1.0, max(0.0, waiting))))
  return rows


def _Cgroup(before: Snapshot, after: Snapshot, pid: int
            ) -> Tuple[Optional[float], List[Tuple[str, float, float, float]]]:
  """(tightest quota in CPUs, (dir, periods, throttled periods, throttled
  seconds) of each level with periods) of one process."""
  quota, levels = None, []
  for directory in after.cgroup_dirs.get(pid, ()):
    c1 = after.cgroups.get(directory)
    if c1 is None:
      continue
    if c1.quota_cores is not None:
      quota = min(q for q in (quota, c1.quota_cores) if q is not None)
    c0 = before.cgroups.get(directory)
    if c0 is not None and c1.nr_periods > 0:
      levels.append((directory, max(0.0, c1.nr_periods - c0.nr_periods),
                     max(0.0, c1.nr_throttled - c0.nr_throttled),
                     max(0.0, c1.throttled_s - c0.throttled_s)))
  return quota, levels


def ForeignPct(before: Snapshot, after: Snapshot, cores: Sequence[int],
               own: Collection[int] = ()) -> Optional[float]:
  """CPU processes foreign to the run (from both snapshots' scans) and the
  hypervisor (steal) used on `cores`, in % of their capacity; None when a
  snapshot has no scan. A process counts on the CPU it last ran on. Over
  the time between the scans when both say when they began (a scan taken
  after its snapshot, probe.sh's, counts from then), else between the
  snapshots."""
  if (before.foreign is None or after.foreign is None or not cores or
      before.uptime_s is None or after.uptime_s is None):
    return None
  window = after.uptime_s - before.uptime_s
  if before.scan_uptime_s is not None and after.scan_uptime_s is not None:
    window = after.scan_uptime_s - before.scan_uptime_s
  if window <= 0:
    return None
  wanted = set(cores)
  ticks = 0.0
  for key, p1 in after.foreign.items():
    if p1.pid in own or p1.processor not in wanted:
      continue
    p0 = before.foreign.get(key)
    ticks += max(0.0, p1.cpu_ticks - (p0.cpu_ticks if p0 else 0.0))
  pct = 100.0 * ticks / after.clk_tck / (window * len(wanted))
  rows = [f'cpu{c}' for c in wanted]
  steal = _Steal(_Sum(before, rows), _Sum(after, rows))
  return round(min(100.0, pct + (steal or 0.0)), 1)


def SideOf(before: Snapshot, after: Snapshot, side: str,
           pids: Optional[Collection[int]] = None,
           cpu_set: Optional[Sequence[int]] = None,
           scans: Optional[Tuple[Snapshot, Snapshot]] = None
           ) -> Optional[attribution.SideCpu]:
  """One side's processes (`pids`, or every process in the snapshots)
  between two snapshots, for attribution.Decide; None without threads.
  `scans`: the snapshots whose foreign scans to read (default: the two)."""
  rows = _ThreadRows(before, after, pids)
  if not rows or after.uptime_s is None or before.uptime_s is None:
    return None
  window = after.uptime_s - before.uptime_s
  processes = sorted({t.pid for t, _, _ in rows})
  online = {int(k[3:]) for k in after.cores if k[3:].isdigit()}
  allowed: set = set()
  for pid in processes:
    allowed.update(after.affinity.get(pid, ()))
  if online:
    allowed &= online
  cores = sorted(allowed) or list(cpu_set or []) or sorted(online)
  quotas, levels = {}, []
  for pid in processes:
    quota, found = _Cgroup(before, after, pid)
    levels += found
    if quota is not None:
      quotas[pid] = quota
  # The level that throttled it most.
  worst = max(levels, key=lambda l: l[2] / l[1] if l[1] else 0.0,
              default=None)
  quota_cores = None
  if quotas and len(quotas) == len(processes):
    # Processes in one cgroup share its quota; in several, each has its own
    # (a process is keyed by its own cgroup directory, else by its PID).
    tightest = {(after.cgroup_dirs.get(pid) or (pid,))[0]: quotas[pid]
                for pid in processes}
    quota_cores = round(sum(tightest.values()), 3)
  threads = tuple(attribution.ThreadCpu(t.name, on, wait, t.tid == t.pid)
                  for t, on, wait in rows)
  own = set(before.threads) | set(after.threads) | set(processes)
  return attribution.SideCpu(
      side=side, threads=threads, window_s=window,
      cores=len(allowed) or None, quota_cores=quota_cores,
      periods=int(worst[1]) if worst else 0,
      throttled_periods=int(worst[2]) if worst else 0,
      throttled_s=worst[3] if worst else 0.0,
      foreign_pct=ForeignPct(*(scans or (before, after)), cores, own),
      processes=len(processes))


def WindowOf(series: Sequence[Snapshot], start: Optional[float],
             end: Optional[float]) -> Optional[Tuple[Snapshot, Snapshot]]:
  """The pair of a series' snapshots that best covers [start, end] (wall
  clock): the first and last inside it when two are, else the nearest
  ones around it; the whole series without a window."""
  if len(series) < 2:
    return None
  if start is None or end is None or end <= start:
    return series[0], series[-1]
  inside = [s for s in series if start <= s.wall_s <= end]
  if len(inside) >= 2:
    return inside[0], inside[-1]
  before = [s for s in series if s.wall_s <= start] or series[:1]
  after = [s for s in series if s.wall_s >= end] or series[-1:]
  return before[-1], after[0]


def Measure(before: Snapshot, after: Snapshot,
            cpu_set: Optional[Sequence[int]]) -> ClientCpu:
  """The client's CPU between two snapshots, on `cpu_set` (None: all)."""
  pinned = [f'cpu{c}' for c in cpu_set] if cpu_set else None
  whole = (_Sum(before, pinned or ['cpu']), _Sum(after, pinned or ['cpu']))
  busy, steal = _Busy(*whole), _Steal(*whole)
  cores = []
  for row in pinned or after.cores:
    if row != 'cpu' and row in before.cores and row in after.cores:
      fraction = _Busy(before.cores[row], after.cores[row])
      if fraction is not None:
        cores.append((fraction, row))
  side = SideOf(before, after, 'client', cpu_set=cpu_set)
  threads = [(min(1.0, t.on_cpu + t.wait), t.on_cpu, t.name)
             for t in (side.threads if side else ())]
  core = max(cores) if cores else (None, None)
  # The busiest thread is the one that wanted a CPU most.
  thread = max(threads) if threads else (None, None, None)
  return ClientCpu(
      window_s=after.wall_s - before.wall_s, busy_fraction=busy,
      busiest_core=core[1], busiest_core_fraction=core[0],
      busiest_thread=thread[2], busiest_thread_fraction=thread[1],
      busiest_thread_runnable_fraction=thread[0], steal_pct=steal,
      threads_seen=len(threads), side=side,
      window_start=before.wall_s, window_end=after.wall_s)


def MeasureText(before: str, after: str, cpu_set: Optional[Sequence[int]]
                ) -> Optional[ClientCpu]:
  """Measure over two snapshot texts; None when either is unreadable."""
  try:
    return Measure(Snapshot.Parse(before), Snapshot.Parse(after), cpu_set)
  except (ValueError, IndexError):
    return None
