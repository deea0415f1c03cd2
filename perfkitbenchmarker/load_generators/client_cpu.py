"""The one reader of a probe's CPU and process counters, on every VM.

Whether a probe measured the server or the client is a question about the
processes' own threads, not the VM: on a 32-vCPU client one fully busy
memtier thread is 3 % of the VM. One snapshot format, written by one shell
function (`snapshot` in `ShellFunctions`; Local and SSH alike) and read by
one parser (`Snapshot.Parse`, its stat lines by process_stat), serves the
probe's client snapshots (concurrent.py), the server sampler's series
(`SamplerScript`, interference.py) and, with `ProcStat`, steal time and the
fallback client CPU. What a snapshot holds: `ShellFunctions`.

`Measure` turns two snapshots into a `ClientCpu` with its `side` (the
`attribution.SideCpu` the one rule decides on); `SideOf` does the same for
a server's processes, `ForeignPct` the foreign CPU on given cores. Tested
on snapshots of real threads and recorded cgroup files
(tests/client_cpu_test.py, tests/attribution_test.py).

Extension seam: another counter is a line kind written by
`ShellFunctions`, parsed in `Snapshot.Parse`, and a field of `SideCpu`.
"""

import dataclasses
import os
import posixpath
import shlex
from typing import (Collection, Dict, Iterable, List, Optional, Sequence,
                    Tuple)

from perfkitbenchmarker import attribution
from perfkitbenchmarker import process_stat

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
  # scan taken).
  foreign: Optional[Dict[Tuple[int, float], process_stat.Stat]] = None

  @classmethod
  def Parse(cls, text: str) -> 'Snapshot':
    """A snapshot as the probe script writes it (see the module doc).

    Raises:
      ValueError: not a snapshot (e.g. empty, cut short).
    """
    # Lines end at '\n' alone: a process's name may hold '\r', '\x1c' or
    # '\x85', which splitlines would also break at.
    lines = text.rstrip('\n').split('\n')
    if len(lines) < 2:
      raise ValueError('CPU snapshot cut short')
    wall = float(lines[0])
    uptime = None
    clk = DEFAULT_CLK_TCK
    cores: Dict[str, Tuple[float, ...]] = {}
    stats: Dict[int, Tuple[str, float, float, int]] = {}
    sched: Dict[int, Tuple[float, float]] = {}
    affinity: Dict[int, Tuple[int, ...]] = {}
    dirs: Dict[int, List[str]] = {}
    files: Dict[str, Dict[str, str]] = {}
    foreign: Optional[Dict[Tuple[int, float], process_stat.Stat]] = None
    for line in lines[1:]:
      if line.startswith('@uptime '):
        uptime = float(line.split()[1])
      elif line.startswith('@clk '):
        clk = float(line.split()[1]) or DEFAULT_CLK_TCK
      elif line.startswith('@cg '):
        fields = line.split(None, 2)
        if len(fields) == 3 and fields[1].isdigit():
          dirs.setdefault(int(fields[1]), []).append(
              fields[2].rstrip('/') or '/')
      elif line == '@scan':
        foreign = {} if foreign is None else foreign
      elif line.startswith('@fg '):
        process = process_stat.Parse(line[4:])
        foreign = {} if foreign is None else foreign
        # Kernel threads' work (softirq, I/O) is mostly done for the run.
        if process and process.processor is not None and (
            not process.kernel_thread):
          foreign[(process.pid, process.start_ticks)] = process
      elif line.startswith('cpu'):
        cores.update(Cores(line))
      elif line.startswith('/proc/'):
        path, _, content = line.partition(':')
        parts = path.split('/')  # '', proc, pid, task, tid, stat|schedstat
        if len(parts) == 4 and parts[3] == 'status' and parts[2].isdigit():
          key, _, value = content.partition(':')
          if key == 'Cpus_allowed_list':
            affinity[int(parts[2])] = CpuList(value)
          continue
        if len(parts) != 6 or not parts[4].isdigit():
          continue
        tid = int(parts[4])
        if parts[5] == 'stat':
          stat = process_stat.Parse(content)
          # A zombie (e.g. a finished helper of the command) is no load.
          if stat is not None and stat.state != 'Z':
            stats[tid] = (stat.name, stat.start_ticks, stat.cpu_ticks,
                          int(parts[2]) if parts[2].isdigit() else 0)
        elif parts[5] == 'schedstat':
          fields = content.split()
          if len(fields) >= 2:
            sched[tid] = (float(fields[0]), float(fields[1]))
      elif line.startswith('/'):
        path, _, content = line.partition(':')
        directory, _, name = path.rpartition('/')
        if name in _CGROUP_FILES:
          entry = files.setdefault(directory or '/', {})
          if name == 'cpu.stat':
            key, _, value = content.partition(' ')
            entry[f'stat.{key}'] = value.strip()
          else:
            entry[name] = content.strip()
    threads = {}
    for tid, (name, start, cpu, pid) in stats.items():
      run, wait = sched.get(tid, (None, None))
      threads[tid] = ThreadTimes(tid, name, start, cpu, run, wait, pid)
    return cls(wall, uptime, cores, threads, clk, affinity,
               {pid: tuple(d) for pid, d in dirs.items()},
               {d: _CgroupCpu(f) for d, f in files.items()}, foreign)


def Cores(proc_stat: str) -> Dict[str, Tuple[float, ...]]:
  """The cpu rows of /proc/stat text: 'cpu', 'cpu0', ... -> jiffies."""
  return {f[0]: tuple(float(v) for v in f[1:9])
          for f in (line.split() for line in proc_stat.splitlines())
          if f and f[0].startswith('cpu')}


def ProcStat(vm) -> Snapshot:
  """A snapshot of `vm`'s /proc/stat alone (`Measure` then gives busy and
  steal): one round trip over SSH."""
  return Snapshot(0.0, None, Cores(vm.RemoteCommand('cat /proc/stat')[0]), {})


_CGROUP_FILES = ('cpu.stat', 'cpu.max', 'cpu.cfs_quota_us', 'cpu.cfs_period_us')


def CpuList(text: str) -> Tuple[int, ...]:
  """'0-3,8,10-11' (Cpus_allowed_list, cpuset lists) as CPU numbers."""
  cpus: List[int] = []
  for part in text.strip().split(','):
    if not part:
      continue
    low, _, high = part.partition('-')
    cpus.extend(range(int(low), int(high or low) + 1))
  return tuple(cpus)


def _Number(value: Optional[str]) -> Optional[float]:
  try:
    return float(value) if value is not None else None
  except ValueError:
    return None


def _CgroupCpu(files: Dict[str, str]) -> CgroupCpu:
  """v1 (cpu.cfs_quota_us, cpu.cfs_period_us, cpu.stat with throttled_time
  in ns) or v2 (cpu.max 'QUOTA PERIOD' or 'max PERIOD', cpu.stat with
  throttled_usec)."""
  quota = period = None
  if 'cpu.max' in files:
    fields = files['cpu.max'].split()
    if fields:
      quota = None if fields[0] == 'max' else _Number(fields[0])
      period = _Number(fields[1]) if len(fields) > 1 else None
  elif 'cpu.cfs_quota_us' in files:
    quota = _Number(files['cpu.cfs_quota_us'])
    quota = None if quota is None or quota < 0 else quota
    period = _Number(files.get('cpu.cfs_period_us'))
  throttled = 0.0
  if 'stat.throttled_usec' in files:
    throttled = (_Number(files['stat.throttled_usec']) or 0.0) / 1e6
  elif 'stat.throttled_time' in files:
    throttled = (_Number(files['stat.throttled_time']) or 0.0) / 1e9
  return CgroupCpu(quota, period,
                   _Number(files.get('stat.nr_periods')) or 0.0,
                   _Number(files.get('stat.nr_throttled')) or 0.0,
                   throttled)


def ParseSeries(text: str) -> List[Snapshot]:
  """Snapshots one after another, each after a line '@snap' (the server
  sampler's file); the unreadable ones (cut short) are left out."""
  snapshots = []
  for chunk in text.split('@snap\n')[1:]:
    try:
      snapshots.append(Snapshot.Parse(chunk))
    except (ValueError, IndexError):
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


def ShellFunctions(run_root: str = '', own_pid: str = '') -> List[str]:
  """Bash defining `snapshot SCAN PID...`, the one snapshot both sides
  take (the probe script's `snap`, the server sampler's `shot`): `counters`,
  then `pthreads` and `pcg` of each PID, then `fscan` if SCAN is not empty.

    `pthreads PID`  every thread's stat and schedstat line (sets `seen` when
                    a live thread was read);
    `pcg PID`       its Cpus_allowed_list and, for its cgroup and each
                    parent that has a CPU quota file, `@cg PID DIR`, the
                    quota files (v1 cpu.cfs_quota_us and cpu.cfs_period_us,
                    v2 cpu.max) and cpu.stat;
    `fscan`         `@scan`, then `@fg <stat line>` for every process that
                    does not work under `run_root` (the run's own processes
                    all do) and is not `own_pid` (pkb, when the VM is this
                    machine), i.e. processes foreign to the run;
    `counters`      the wall clock, /proc/uptime, CLK_TCK and /proc/stat's
                    cpu rows: every snapshot's head.

  Bash builtins only (read, echo, cd, $EPOCHREALTIME) but getconf once: the
  snapshots run while the machine is measured. The cgroup mounts (v1 with
  the cpu controller, v2) are read once from /proc/self/mountinfo.
  """
  return [
      process_stat.SHELL,
      'clk=$(getconf CLK_TCK 2>/dev/null || echo 100)',
      f'runroot={shlex.quote(run_root.rstrip("/"))}; ownpid={own_pid or 0}',
      # `stamp` sets $t to the time (a fork only where bash lacks
      # $EPOCHREALTIME).
      'stamp() { t=${EPOCHREALTIME/,/.}; [ -n "$t" ] || t=$(date +%s.%N); }',
      'counters() { local l t; stamp; echo "$t"; read -r l _ < /proc/uptime; '
      'echo "@uptime $l"; echo "@clk $clk"; '
      'while IFS= read -r l; do [ "${l#cpu}" = "$l" ] || echo "$l"; '
      'done < /proc/stat; }',
      'cg1=; r1=/; cg2=; r2=/',
      '{ while read -r _ _ _ r m _ rest; do t=${rest#*- }; t=${t%% *}; '
      'case $t in cgroup) [[ ,${rest##* }, == *,cpu,* ]] && '
      '{ cg1=$m; r1=$r; };; cgroup2) cg2=$m; r2=$r;; esac; '
      'done < /proc/self/mountinfo; } 2>/dev/null',
      'pthreads() { local f l pt; '
      'for f in /proc/$1/task/*/stat /proc/$1/task/*/schedstat; do '
      'pline "$f" || continue; echo "$f:$l"; [[ $f == */stat ]] || continue; '
      # A zombie (argv_secret's finished process substitution) is no load.
      'ptail; [[ $pt == ") Z "* ]] || seen=1; done; }',
      'pcg() { local p=$1 l id c path d top r f; '
      'while IFS= read -r l; do [ "${l#Cpus_allowed_list:}" = "$l" ] || '
      '{ echo "/proc/$p/status:$l"; break; }; '
      'done 2>/dev/null < /proc/$p/status; '
      'while IFS=: read -r id c path; do '
      'if [ "$id" = 0 ] && [ -z "$c" ]; then top=$cg2; r=$r2; '
      'elif [[ ,$c, == *,cpu,* ]]; then top=$cg1; r=$r1; else continue; fi; '
      '[ -n "$top" ] || continue; [ "$r" = / ] || path=${path#"$r"}; '
      'top=${top%/}; d=$top${path%/}; '
      'while [ "${#d}" -gt "${#top}" ]; do '
      'if [ -r "$d/cpu.max" ] || [ -r "$d/cpu.cfs_quota_us" ]; then '
      'echo "@cg $p $d"; for f in cpu.max cpu.cfs_quota_us cpu.cfs_period_us; '
      'do [ -r "$d/$f" ] && { read -r l < "$d/$f"; echo "$d/$f:$l"; }; done; '
      'while IFS= read -r l; do echo "$d/cpu.stat:$l"; '
      'done 2>/dev/null < "$d/cpu.stat"; fi; d=${d%/*}; done; '
      'done 2>/dev/null < /proc/$p/cgroup; }',
      'fscan() { [ -n "$runroot" ] || return 0; echo @scan; '
      '( for f in /proc/[0-9]*/stat; do pline "$f" || continue; '
      'p=${f#/proc/}; p=${p%/stat}; ptail; '
      # Kernel threads (PID 2 and its children) are never the run's
      # competitors here: their work (softirq, I/O) is mostly done for it.
      # Nor is the snapshotting shell itself ($$: the sampler works from /).
      # The parent is read after the name (ptail): a name is any 15 bytes.
      '[[ $p == 2 || $p == $$ || $p == $ownpid || $pt == ") "?" 2 "* ]] '
      '&& continue; '
      'if cd -P "/proc/$p/cwd" 2>/dev/null && [[ $PWD/ == "$runroot"/* ]]; '
      'then continue; fi; echo "@fg $l"; done ) }',
      # The shell's own cgroup too: a probe's load processes are born in
      # it, so the first snapshot, taken before they exist, has its
      # counters (their throttling counts from the start).
      'snapshot() { local p; counters; pcg $$; '
      'for p in "${@:2}"; do pthreads $p; pcg $p; done; '
      '[ -z "$1" ] || fscan; }',
  ]


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


def SamplerScript(pids: Sequence[int], base: str, interval_s: float,
                  max_s: float, run_root: str, own_pid: str = '') -> str:
  """Bash that snapshots `pids` (a server's processes) every `interval_s`
  (then less often: SampleSchedule) into `<base>.out`, each snapshot after
  a line '@snap' (ParseSeries); the first and the last also scan for
  foreign processes. It prints `ready` once its first snapshot is written,
  holds an flock on `<base>.lock` while it runs, and ends (last snapshot,
  then '@end') when a line arrives on the FIFO `<base>.wake` (it sleeps
  in `read -t` on it: the stop costs no polling and no signal), when
  `max_s` passed (bounded), or when its directory is gone."""
  listed = ' '.join(str(int(p)) for p in pids)
  schedule = ' '.join(f'{x:g}' for x in SampleSchedule(interval_s, max_s))
  q = shlex.quote
  out = q(base + '.out')
  lines = ShellFunctions(run_root, own_pid) + [
      f'exec {{lk}}>>{q(base + ".lock")}; flock "$lk"',
      f'mkfifo -m 600 {q(base + ".wake")} 2>/dev/null; '
      f'exec {{wake}}<>{q(base + ".wake")}',
      'seen=',
      f'shot() {{ {{ echo @snap; snapshot "$1" {listed}; }} >> {out} '
      '2>/dev/null; }',
      'shot scan',
      'echo ready; exec > /dev/null',
      # Bounded, and gone with the run's directory (a run killed between
      # Start and Stop leaves no sampler behind past its teardown).
      f'for iv in {schedule}; do '
      'read -r -t "$iv" -u "$wake" _ && break; '
      f'[ -d {q(os.path.dirname(base) or ".")} ] || break; shot; done',
      'shot scan',
      f'echo @end >> {out}',
  ]
  return '\n'.join(lines) + '\n'


def StopSamplerCommand(base: str, wait_s: float = 10.0) -> str:
  """Shell that wakes the sampler at `base` (SamplerScript), waits for it
  to end (its lock; at most `wait_s`), prints its series and removes its
  files. Opening the FIFO read-write never blocks, with or without a
  sampler on the other end."""
  q = shlex.quote
  files = ' '.join(q(base + x) for x in ('.out', '.wake', '.lock', '.sh'))
  return (f'{{ exec 3<>{q(base + ".wake")} && echo >&3; }} 2>/dev/null; '
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
  snapshot has no scan. A process counts on the CPU it last ran on."""
  if (before.foreign is None or after.foreign is None or not cores or
      before.uptime_s is None or after.uptime_s is None):
    return None
  window = after.uptime_s - before.uptime_s
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
    # Processes in one cgroup share its quota; in several, each has its own.
    tightest = {}
    for pid in processes:
      dirs = after.cgroup_dirs.get(pid, ())
      tightest[dirs[0] if dirs else pid] = quotas[pid]
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
  whole = ([f'cpu{c}' for c in cpu_set] if cpu_set else ['cpu'])
  busy = _Busy(_Sum(before, whole), _Sum(after, whole))
  steal = _Steal(_Sum(before, whole), _Sum(after, whole))
  cores = []
  for row in ([f'cpu{c}' for c in cpu_set] if cpu_set else after.cores):
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
