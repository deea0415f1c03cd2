"""CPU that processes foreign to the run use on the run's cores, per probe.

Two runs sharing pinned cores each publish about half the real throughput
with nothing to show for it (issue 10, point 5). Each probe is therefore
bracketed by samplers that measure how much of the run's cores something
else used, as a percentage of those cores' capacity over the probe:

* `ForeignCpuSampler` (Local: this machine): the CPU time of every process
  that is not the run's own (not pkb and its children, such as the load
  generators, and not the run's shards), counted in the share of its CPU
  affinity that lies on the run's cores (a process pinned elsewhere counts
  nothing; an unpinned one counts by the fraction of its allowed cores that
  are the run's). Kernel threads are left out: their work (network softirq,
  I/O) is mostly done for the run itself.
* `StealSampler` (VMs): the hypervisor's steal time on the VM's pinned cores
  (or all cores) from /proc/stat, the share of time the VM wanted a CPU the
  host gave to someone else.

A probe whose figure is above `INTERFERENCE_PCT` is flagged (`interference`
in its samples; the summary warns).

Extension seam: every probe path (the search's probe driver, fixed-load
runs, YCSB probes, redis_enterprise's steps) samples through `Bracket` or
`Sampled` with the run's `ForRun`, so its samples carry the same
`foreign_cpu_pct` and `interference` keys; a new probe path does the same.
"""

import dataclasses
import logging
import os
import time
from typing import (Callable, Dict, Iterable, Optional, Sequence, Set, Tuple,
                    TypeVar)

import psutil

from perfkitbenchmarker import errors
from perfkitbenchmarker import measurement

INTERFERENCE_PCT = 10.0
_KTHREADD_PID = 2
_STEAL_FIELD = 8  # cpuN user nice system idle iowait irq softirq steal
_T = TypeVar('_T')


class ForeignCpuSampler:
  """Foreign processes' CPU on `cores` of this machine between Start and Stop.

  Args:
    cores: the run's cores (None: every core of this machine).
    own_pids: returns the run's processes that are not pkb's children (the
      shards); pkb itself and all its descendants are always the run's own.
    clock: seconds, monotonic (injectable for tests).
    root_pid: the run's process (pkb); its descendants are the run's own.
    process_iter: psutil.process_iter or a test's stand-in.
  """

  def __init__(self, cores: Optional[Sequence[int]],
               own_pids: Callable[[], Iterable[int]] = tuple,
               clock: Callable[[], float] = time.monotonic,
               root_pid: Optional[int] = None,
               process_iter: Callable = psutil.process_iter):
    self.cores: Set[int] = set(cores) if cores else set(
        range(psutil.cpu_count() or 1))
    self._own_pids = own_pids
    self._clock = clock
    self._root_pid = os.getpid() if root_pid is None else root_pid
    self._process_iter = process_iter
    self._start: Optional[float] = None
    self._before: Dict[Tuple[int, float], float] = {}

  def _Own(self) -> Set[int]:
    own = {int(p) for p in self._own_pids() if p}
    own.add(self._root_pid)
    try:
      own.update(c.pid for c in
                 psutil.Process(self._root_pid).children(recursive=True))
    except psutil.Error:
      pass
    return own

  def _Snapshot(self) -> Dict[Tuple[int, float], float]:
    """(pid, create time) -> CPU seconds counted on the run's cores."""
    own = self._Own()
    used = {}
    for proc in self._process_iter(
        ['pid', 'ppid', 'create_time', 'cpu_times', 'cpu_affinity']):
      info = proc.info
      if (info['pid'] in own or info['cpu_times'] is None or
          _KTHREADD_PID in (info['pid'], info['ppid'])):
        continue
      affinity = set(info['cpu_affinity'] or ()) or self.cores
      share = len(affinity & self.cores) / len(affinity)
      if share:
        times = info['cpu_times']
        used[(info['pid'], info['create_time'])] = (
            (times.user + times.system) * share)
    return used

  def Start(self) -> None:
    self._before = self._Snapshot()
    self._start = self._clock()

  def Stop(self) -> float:
    """Percent of the run's cores' capacity foreign processes used."""
    elapsed = self._clock() - self._start
    after = self._Snapshot()
    if elapsed <= 0:
      return 0.0
    # Processes born during the probe count whole; ones that ended are lost.
    seconds = sum(max(0.0, cpu - self._before.get(key, 0.0))
                  for key, cpu in after.items())
    return 100.0 * seconds / (elapsed * len(self.cores))


def StealJiffies(proc_stat: str, cpu_set: Optional[Sequence[int]]
                 ) -> Tuple[float, float]:
  """(steal, total) jiffies of `cpu_set` (all cores if None) in /proc/stat."""
  wanted = {f'cpu{c}' for c in cpu_set} if cpu_set else {'cpu'}
  steal = total = 0.0
  for line in proc_stat.splitlines():
    fields = line.split()
    if not fields or fields[0] not in wanted:
      continue
    values = [float(v) for v in fields[1:_STEAL_FIELD + 1]]
    total += sum(values)
    if len(values) == _STEAL_FIELD:
      steal += values[-1]
  return steal, total


class StealSampler:
  """Steal time on a VM's pinned cores (or all) between Start and Stop."""

  def __init__(self, vm):
    self.vm = vm
    self._before: Tuple[float, float] = (0.0, 0.0)

  def _Read(self) -> Tuple[float, float]:
    out, _ = self.vm.RemoteCommand('cat /proc/stat')
    return StealJiffies(out, self.vm.cpu_set)

  def Start(self) -> None:
    self._before = self._Read()

  def Stop(self) -> float:
    steal, total = self._Read()
    elapsed = total - self._before[1]
    return 100.0 * (steal - self._before[0]) / elapsed if elapsed > 0 else 0.0


class ProbeInterference:
  """Brackets one probe with every sampler; the largest figure wins."""

  def __init__(self, samplers: Sequence, threshold_pct: float =
               INTERFERENCE_PCT):
    self.samplers = list(samplers)
    self.threshold_pct = threshold_pct

  def Start(self) -> None:
    for sampler in self.samplers:
      sampler.Start()

  def Stop(self) -> Dict[str, object]:
    """foreign_cpu_pct and interference for the probe's metadata."""
    figures = []
    for sampler in self.samplers:
      try:
        figures.append(sampler.Stop())
      except (errors.Error, OSError, psutil.Error) as e:
        # A figure missing is no reason to lose the probe.
        logging.warning('Interference sampler %s failed: %s',
                        type(sampler).__name__, e)
    if not figures:
      return {}
    pct = round(max(figures), 1)
    return {'foreign_cpu_pct': pct, 'interference': pct > self.threshold_pct}


def ForRun(cloud: str, vms: Sequence, own_pids: Callable[[], Iterable[int]]
           ) -> ProbeInterference:
  """Local: foreign processes on the VMs' cores; elsewhere: steal time."""
  if cloud == 'Local':
    cores: Optional[Set[int]] = set()
    for vm in vms:
      if not vm.cpu_set:
        cores = None  # An unpinned VM: the whole machine is the run's.
        break
      cores.update(vm.cpu_set)
    return ProbeInterference([ForeignCpuSampler(cores, own_pids)])
  return ProbeInterference([StealSampler(vm) for vm in vms])


def Bracket(probe: Optional[ProbeInterference], run: Callable[[], _T]
            ) -> Tuple[_T, Dict[str, object]]:
  """run() between `probe`'s Start and Stop: its result and the figures.

  The figures are `ProbeInterference.Stop`'s (foreign_cpu_pct,
  interference); none without samplers (`probe` None) or when every
  sampler failed.
  """
  if probe is None:
    return run(), {}
  probe.Start()
  result = run()
  return result, probe.Stop()


def Sampled(probe: Optional[ProbeInterference],
            measure: Callable[[measurement.Load], measurement.Measurement]
            ) -> Callable[[measurement.Load], measurement.Measurement]:
  """measure(load) whose Measurement carries its probe's figures."""

  def Measured(load: measurement.Load) -> measurement.Measurement:
    m, figures = Bracket(probe, lambda: measure(load))
    if not figures:
      return m
    return dataclasses.replace(m, metadata={**m.metadata, **figures})

  return Measured
