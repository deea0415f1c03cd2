"""The load generator's own CPU over a probe: threads, cores and the VM.

Whether a probe measured the server or the client is a question about the
load generator's threads, not about the client VM as a whole: on a 32-vCPU
client one fully busy memtier thread is 3 % of the VM. A probe's script
(concurrent.py) therefore takes timed snapshots of the client at the start
and at the end of the load window; each holds

  * the wall-clock time (`date +%s.%N`) and the time since boot
    (/proc/uptime, the clock thread start times are counted in),
  * /proc/stat (every core and the total; steal time for interference),
  * for every thread of every load-generator process, its
    /proc/<pid>/task/<tid>/stat (name, start time, user and system ticks)
    and /proc/<pid>/task/<tid>/schedstat (nanoseconds on a CPU and waiting
    for one), as `grep -H` prints them: `<path>:<content>`.

`Measure` turns two snapshots into a `ClientCpu`: the busy share of the
VM's (pinned or all) cores, of its busiest core, and of the busiest
load-generator thread, both on a CPU and runnable (on a CPU or waiting in
the run queue: a thread that wants a CPU all the time is CPU-bound even
when other work takes the CPU from it). `Saturation` says which of them, if
any, makes the probe the client's limit. Pure functions: tested with
snapshots of real threads (tests/client_cpu_test.py).

Extension seam: another figure of the load generator's CPU (e.g. softirq
per core) is a field of `ClientCpu` computed in `Measure`, and a rule in
`Saturation`.
"""

import dataclasses
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

# A thread or core busier than this (on a CPU, or runnable for a thread) is
# taken as saturated. Also the whole-VM rule the study always had.
SATURATED_FRACTION = 0.9
# Threads seen for less than this share of the window (born late, ended
# early) are left out: 10 ms of CPU over 20 ms is no saturation.
MIN_THREAD_SHARE = 0.25
DEFAULT_CLK_TCK = 100.0


@dataclasses.dataclass(frozen=True)
class ThreadTimes:
  """One thread at one snapshot."""
  tid: int
  name: str
  start_ticks: float  # since boot, in clock ticks
  cpu_ticks: float  # user + system
  run_ns: Optional[float] = None  # schedstat: on a CPU
  wait_ns: Optional[float] = None  # schedstat: runnable, waiting for a CPU


@dataclasses.dataclass(frozen=True)
class Snapshot:
  wall_s: float
  uptime_s: Optional[float]
  cores: Dict[str, Tuple[float, ...]]  # 'cpu', 'cpu0', ... -> jiffies
  threads: Dict[int, ThreadTimes]
  clk_tck: float = DEFAULT_CLK_TCK

  @classmethod
  def Parse(cls, text: str) -> 'Snapshot':
    """A snapshot as the probe script writes it (see the module doc).

    Raises:
      ValueError: not a snapshot (e.g. empty, cut short).
    """
    lines = text.splitlines()
    if len(lines) < 2:
      raise ValueError('CPU snapshot cut short')
    wall = float(lines[0])
    uptime = None
    clk = DEFAULT_CLK_TCK
    cores: Dict[str, Tuple[float, ...]] = {}
    stats: Dict[int, Tuple[str, float, float]] = {}
    sched: Dict[int, Tuple[float, float]] = {}
    for line in lines[1:]:
      if line.startswith('@uptime '):
        uptime = float(line.split()[1])
      elif line.startswith('@clk '):
        clk = float(line.split()[1]) or DEFAULT_CLK_TCK
      elif line.startswith('cpu'):
        fields = line.split()
        cores[fields[0]] = tuple(float(v) for v in fields[1:9])
      elif line.startswith('/proc/'):
        path, _, content = line.partition(':')
        parts = path.split('/')  # '', proc, pid, task, tid, stat|schedstat
        if len(parts) != 6 or not parts[4].isdigit():
          continue
        tid = int(parts[4])
        if parts[5] == 'stat':
          name, _, rest = content.partition(' (')[2].rpartition(') ')
          fields = rest.split()
          # After the name: state(3) ... utime(14) stime(15) ... start(22).
          # A zombie (e.g. a finished helper of the command) is no load.
          if len(fields) >= 20 and fields[0] != 'Z':
            stats[tid] = (name, float(fields[19]),
                          float(fields[11]) + float(fields[12]))
        elif parts[5] == 'schedstat':
          fields = content.split()
          if len(fields) >= 2:
            sched[tid] = (float(fields[0]), float(fields[1]))
    threads = {}
    for tid, (name, start, cpu) in stats.items():
      run, wait = sched.get(tid, (None, None))
      threads[tid] = ThreadTimes(tid, name, start, cpu, run, wait)
    return cls(wall, uptime, cores, threads, clk)


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

  def Metadata(self) -> Dict[str, object]:
    """The sample metadata keys (client_cpu_busy_pct comes separately)."""
    def Pct(x):
      return None if x is None else round(100 * x, 1)
    metadata: Dict[str, object] = {}
    if self.busiest_thread_fraction is not None:
      metadata.update({
          'client_busiest_thread': self.busiest_thread,
          'client_busiest_thread_pct': Pct(self.busiest_thread_fraction),
          'client_busiest_thread_runnable_pct': Pct(
              self.busiest_thread_runnable_fraction),
          'client_threads_seen': self.threads_seen})
    if self.busiest_core_fraction is not None:
      metadata['client_busiest_core_pct'] = Pct(self.busiest_core_fraction)
    return metadata


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


def _Rows(snap: Snapshot, cpu_set: Optional[Sequence[int]]) -> List[str]:
  if cpu_set:
    return [f'cpu{c}' for c in cpu_set if f'cpu{c}' in snap.cores]
  return sorted(k for k in snap.cores if k != 'cpu')


def _Sum(snap: Snapshot, rows: Iterable[str]) -> Tuple[float, ...]:
  values = [snap.cores[r] for r in rows if r in snap.cores]
  return tuple(sum(column) for column in zip(*values)) if values else ()


def _Threads(before: Snapshot, after: Snapshot
             ) -> List[Tuple[float, float, str]]:
  """(on-CPU, runnable, name) fractions of each thread seen long enough."""
  if before.uptime_s is None or after.uptime_s is None:
    return []
  window = after.uptime_s - before.uptime_s
  if window <= 0:
    return []
  clk = after.clk_tck
  figures = []
  for tid, t1 in after.threads.items():
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
      on_cpu, runnable = run / 1e9 / seen, (run + wait) / 1e9 / seen
    else:
      ticks = t1.cpu_ticks - (t0.cpu_ticks if t0 else 0.0)
      on_cpu = runnable = ticks / clk / seen
    figures.append((min(1.0, on_cpu), min(1.0, runnable), t1.name))
  return figures


def Measure(before: Snapshot, after: Snapshot,
            cpu_set: Optional[Sequence[int]]) -> ClientCpu:
  """The client's CPU between two snapshots, on `cpu_set` (None: all)."""
  whole = ([f'cpu{c}' for c in cpu_set] if cpu_set else ['cpu'])
  busy = _Busy(_Sum(before, whole), _Sum(after, whole))
  steal = _Steal(_Sum(before, whole), _Sum(after, whole))
  cores = []
  for row in _Rows(after, cpu_set):
    if row in before.cores:
      fraction = _Busy(before.cores[row], after.cores[row])
      if fraction is not None:
        cores.append((fraction, row))
  threads = _Threads(before, after)
  core = max(cores) if cores else (None, None)
  # The busiest thread is the one that wanted a CPU most.
  thread = max(threads, key=lambda t: (t[1], t[0])) if threads else None
  return ClientCpu(
      window_s=after.wall_s - before.wall_s, busy_fraction=busy,
      busiest_core=core[1], busiest_core_fraction=core[0],
      busiest_thread=thread[2] if thread else None,
      busiest_thread_fraction=thread[0] if thread else None,
      busiest_thread_runnable_fraction=thread[1] if thread else None,
      steal_pct=steal, threads_seen=len(threads))


def MeasureText(before: str, after: str, cpu_set: Optional[Sequence[int]]
                ) -> Optional[ClientCpu]:
  """Measure over two snapshot texts; None when either is unreadable."""
  try:
    return Measure(Snapshot.Parse(before), Snapshot.Parse(after), cpu_set)
  except (ValueError, IndexError):
    return None


def Saturation(cpu: Optional[ClientCpu], cores_are_the_clients: bool = True
               ) -> Optional[str]:
  """Why the probe is the client's limit: 'thread', 'core', 'vm' or None.

  `cores_are_the_clients`: the busiest core can only be blamed on the load
  generator when no server shares those cores (a client pinned to cores of
  its own, or a machine of its own); otherwise it is reported, not used.
  """
  if cpu is None:
    return None
  if (cpu.busiest_thread_runnable_fraction or 0.0) >= SATURATED_FRACTION:
    return 'thread'
  if cpu.busy_fraction is not None and cpu.busy_fraction > SATURATED_FRACTION:
    return 'vm'
  if cores_are_the_clients and (
      cpu.busiest_core_fraction or 0.0) >= SATURATED_FRACTION:
    return 'core'
  return None
