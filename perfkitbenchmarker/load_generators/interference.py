"""CPU that processes foreign to the run use on the run's cores, per probe.

Two runs sharing pinned cores each publish about half the real throughput
(issue 10, point 5), so each probe is bracketed by samplers of how much of
the run's cores something else used, in % of their capacity:

* `ForeignCpuSampler` (Local): every process that is not the run's own (pkb
  and its descendants, the shards), counted by the share of its affinity on
  the run's cores; kernel threads are left out (their work, softirq and
  I/O, is mostly done for the run).
* `StealSampler` (VMs): the hypervisor's steal time on the VM's cores.
* `ServerCpuSampler` (server VMs): the server's side for attribution.py.

Above `INTERFERENCE_PCT` a probe is flagged (`interference`). Over SSH each
read is a round trip: a client VM whose probe measures its own steal time
(`client_steal_pct`) is not read again (`ForRun`'s `measured`), and the
samplers start in the background while the probe starts.

Extension seam: every probe path samples through `Sampled` or
`BracketSides` with the run's `ForRun`, so its samples carry the same
`foreign_cpu_pct` and `interference` keys.
"""

import concurrent.futures
import dataclasses
import logging
import os
import shlex
import threading
import time
from typing import (Any, Callable, Dict, Iterable, List, Optional, Sequence,
                    Set, Tuple, TypeVar)

import psutil

from perfkitbenchmarker import errors
from perfkitbenchmarker import measurement
from perfkitbenchmarker import probe_processes
from perfkitbenchmarker import virtual_machine
from perfkitbenchmarker import attribution
from perfkitbenchmarker.load_generators import client_cpu

INTERFERENCE_PCT = 10.0
# Steal time a probe measured on its own client VM (percent of its cores).
CLIENT_STEAL_KEY = 'client_steal_pct'
_KTHREADD_PID = 2
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


class StealSampler:
  """Steal time on a VM's pinned cores (or all) between Start and Stop."""

  def __init__(self, vm):
    self.vm = vm
    self._before = client_cpu.ProcStat('')

  def _Read(self) -> client_cpu.Snapshot:
    return client_cpu.ProcStat(self.vm.RemoteCommand('cat /proc/stat')[0])

  def Start(self) -> None:
    self._before = self._Read()

  def Stop(self) -> float:
    cpu = client_cpu.Measure(self._before, self._Read(), self.vm.cpu_set)
    return cpu.steal_pct or 0.0


class ServerCpuSampler:
  """A server VM's processes (the shards) over a probe: their threads'
  on-CPU time and waits, affinity, cgroup quota and throttling, and the
  foreign CPU on their cores (attribution.py reads them).

  Start launches a bounded background loop on the VM (client_cpu.
  SamplerScript: a snapshot every `interval_s`, one round trip, no waiting
  for it); Stop signals it, takes the series back in one round trip and
  picks the snapshots that cover the probe's load window (the client's
  wall-clock window, when given). The same shell runs on every kind of VM
  (Local runs it as a local command).
  """

  INTERVAL_S = 0.2
  # max_s bounds a sampler nobody stops (pkb killed mid-probe); a longer
  # probe's later part is then read from the last snapshot taken.

  def __init__(self, vm, pids: Callable[[], Iterable[int]],
               max_s: float = 3600.0):
    self.vm = vm
    self._pids = pids
    self.max_s = max_s
    self._count = 0
    self._base: Optional[str] = None
    self._pids_used: Tuple[int, ...] = ()
    self._probe: Optional[probe_processes.ProbeProcess] = None

  def Start(self) -> None:
    """Starts the sampler; returns once its first snapshot is taken."""
    self._pids_used = tuple(int(p) for p in self._pids() if p)
    if not self._pids_used:
      self._base = None
      return
    self._count += 1
    base = f'{self.vm.scratch_dir}/server-cpu-{os.getpid()}-{self._count}'
    self._base = base
    root = os.path.dirname(self.vm.scratch_dir.rstrip('/'))
    # Recorded before it starts, its group written down as it starts: a run
    # that never gets to Stop (SIGINT mid-probe, kill -9 of pkb) has cleanup
    # or teardown kill it, instead of leaving it sampling on the server
    # until the VM goes.
    self._probe = probe_processes.Mark(self.vm, 'server-cpu')
    script = self._probe.prefix + client_cpu.SamplerScript(
        self._pids_used, base, self.INTERVAL_S, self.max_s, root)
    q = shlex.quote
    # Started from the run's root, above the VM's directory (its paths are
    # absolute): teardown does not remove a VM's directory while a process
    # works in it (run_scope), and under the run's root the sampler is still
    # the run's own to the foreign-process scan.
    # `head -n1` returns with its `ready`: Stop then finds it running.
    self.vm.RemoteCommand(
        f'cat > {q(base + ".sh")} && cd {q(root)} && '
        f'{{ setsid bash {q(base + ".sh")} 2> /dev/null < /dev/null & }} | '
        'head -n1', stdin=script)

  def Stop(self) -> str:
    """The series' text (client_cpu.ParseSeries); '' when nothing ran."""
    if self._base is None:
      return ''
    out, _ = self.vm.RemoteCommand(client_cpu.StopSamplerCommand(self._base),
                                   ignore_failure=True)
    if self._probe is not None and out.rstrip().endswith('@end'):
      probe_processes.Retire(self._probe)  # It wrote its end: it exited.
    self._probe = None
    return out

  def Side(self, text: str, window: Optional[Tuple[float, float]]):
    """The server side (attribution.SideCpu) over `window`, or None."""
    series = client_cpu.ParseSeries(text)
    pair = client_cpu.WindowOf(series, *(window or (None, None)))
    if pair is None:
      return None
    # Foreign processes are scanned at the series' ends only (a scan costs
    # a read per process): their share over the whole probe.
    scanned = [s for s in series if s.foreign is not None]
    return client_cpu.SideOf(
        pair[0], pair[1], 'server', pids=set(self._pids_used),
        cpu_set=self.vm.cpu_set,
        scans=(scanned[0], scanned[-1]) if len(scanned) >= 2 else None)


class ProbeInterference:
  """Brackets one probe with every sampler; the largest figure wins.

  Samplers start in the background (the probe starts meanwhile) and stop
  side by side. `steal_from_probes`: the probe's own `client_steal_pct`
  counts as one more figure (VMs whose probes measure it have no sampler).
  `clock`: monotonic seconds (injectable for tests).
  A probe whose load window ends at a known time before the tool does
  (memtier's idle last second: `Start(stop_after_s)`) has its samplers
  stopped and read then, in that idle tail, rather than after the tool.
  """

  # After the load window's planned end: the client's window starts only
  # once its script runs (a round trip later over SSH).
  STOP_MARGIN_S = 0.5

  def __init__(self, samplers: Sequence, threshold_pct: float =
               INTERFERENCE_PCT, steal_from_probes: bool = False,
               servers: Sequence[ServerCpuSampler] = (),
               clock: Callable[[], float] = time.monotonic):
    self.samplers = list(samplers)
    self._clock = clock
    self.servers = list(servers)
    self.threshold_pct = threshold_pct
    self.steal_from_probes = steal_from_probes
    self._starting: List[concurrent.futures.Future] = []
    self._servers_running: List[concurrent.futures.Future] = []
    self._stop_now = threading.Event()
    self._pool: Optional[concurrent.futures.ThreadPoolExecutor] = None

  def _Pool(self) -> concurrent.futures.ThreadPoolExecutor:
    if self._pool is None:
      self._pool = concurrent.futures.ThreadPoolExecutor(
          max(1, 2 * (len(self.samplers) + len(self.servers))),
          thread_name_prefix='interference')
    return self._pool

  def Start(self, stop_after_s: Optional[float] = None) -> None:
    """Starts every sampler; with `stop_after_s`, each stops by itself that
    long (plus STOP_MARGIN_S) after its start, or when the probe is
    stopped, whichever comes first."""
    self._stop_now = threading.Event()
    after = (None if stop_after_s is None else
             stop_after_s + self.STOP_MARGIN_S)
    self._starting = [
        self._Pool().submit(self._Run, s, after, self._stop_now)
        for s in self.samplers]
    self._servers_running = [
        self._Pool().submit(self._Run, s, after, self._stop_now)
        for s in self.servers]

  _NOT_STOPPED = object()

  def _Run(self, sampler, after_s: Optional[float],
           stop_now: threading.Event):
    """Starts it; with `after_s`, stops it then (or at `stop_now`) and
    returns what its Stop returned, else _NOT_STOPPED."""
    begun = self._clock()
    sampler.Start()
    if after_s is None:
      return self._NOT_STOPPED
    stop_now.wait(max(0.0, begun + after_s - self._clock()))
    return sampler.Stop()

  @classmethod
  def _Stopped(cls, sampler, running: concurrent.futures.Future):
    """What the sampler's Stop returned: by `_Run` at its planned time, or
    now when `_Run` did not stop it."""
    result = running.result()
    return sampler.Stop() if result is cls._NOT_STOPPED else result

  def _StopServer(self, sampler, running, window):
    try:
      return sampler.Side(self._Stopped(sampler, running), window)
    except (errors.Error, OSError, ValueError) as e:
      logging.warning('Server CPU sampler on %s failed: %s',
                      sampler.vm.name, e)
      return None

  def _Stop(self, sampler, running) -> Optional[float]:
    try:
      return self._Stopped(sampler, running)
    except (errors.Error, OSError, psutil.Error) as e:
      # A figure missing is no reason to lose the probe.
      logging.warning('Interference sampler %s failed: %s',
                      type(sampler).__name__, e)
      return None

  def Stop(self, probe_steal_pct: Optional[float] = None
           ) -> Dict[str, object]:
    """foreign_cpu_pct and interference for the probe's metadata."""
    self._stop_now.set()
    futures = [self._Pool().submit(self._Stop, s, f)
               for s, f in zip(self.samplers, self._starting)]
    figures = [f.result() for f in futures]
    figures = [x for x in figures if x is not None]
    if self.steal_from_probes and probe_steal_pct is not None:
      figures.append(float(probe_steal_pct))
    if not figures:
      return {}
    pct = round(max(figures), 1)
    return {'foreign_cpu_pct': pct, 'interference': pct > self.threshold_pct}

  def StopAll(self, probe_steal_pct: Optional[float] = None,
              window: Optional[Tuple[float, float]] = None
              ) -> Tuple[Dict[str, object], List[attribution.SideCpu]]:
    """Stop's figures and the server VMs' sides over `window` (those that
    came back), stopped side by side (each sampler on a worker of its own:
    no task waits for another)."""
    self._stop_now.set()
    futures = [self._Pool().submit(self._StopServer, s, f, window)
               for s, f in zip(self.servers, self._servers_running)]
    figures = self.Stop(probe_steal_pct)
    return figures, [side for side in (f.result() for f in futures) if side]


def ForRun(cloud: str, vms: Sequence, own_pids: Callable[[], Iterable[int]],
           measured: Sequence = (),
           server_pids: Optional[Callable[[Any], Iterable[int]]] = None
           ) -> ProbeInterference:
  """Local: foreign processes on the VMs' cores; elsewhere: steal time.

  `measured`: client VMs whose probes report their own steal time
  (`client_steal_pct`); no sampler reads their machines again.
  `server_pids(vm)`: the server processes on a VM (none: not a server VM);
  each server VM then gets a ServerCpuSampler.
  """
  probe = _ForRun(cloud, vms, own_pids, measured)
  if server_pids is not None:
    probe.servers = [ServerCpuSampler(vm, lambda vm=vm: server_pids(vm))
                     for vm in vms if list(server_pids(vm))]
  return probe


def _ForRun(cloud: str, vms: Sequence, own_pids: Callable[[], Iterable[int]],
            measured: Sequence = ()) -> ProbeInterference:
  if cloud == 'Local':
    cores: Optional[Set[int]] = set()
    for vm in vms:
      if not vm.cpu_set:
        cores = None  # An unpinned VM: the whole machine is the run's.
        break
      cores.update(vm.cpu_set)
    return ProbeInterference([ForeignCpuSampler(cores, own_pids)])
  if not measured:
    return ProbeInterference([StealSampler(vm) for vm in vms])
  # Steal time is the machine's: one sampler per machine (and core set).
  seen = {(virtual_machine.MachineLane(vm), tuple(vm.cpu_set or ()))
          for vm in measured}
  samplers = []
  for vm in vms:
    key = (virtual_machine.MachineLane(vm), tuple(vm.cpu_set or ()))
    if key not in seen:
      seen.add(key)
      samplers.append(StealSampler(vm))
  return ProbeInterference(samplers, steal_from_probes=bool(measured))


def BracketSides(probe: Optional[ProbeInterference], run: Callable[[], _T],
                 steal_of: Callable[[_T], Optional[float]] = lambda _: None
                 ) -> Tuple[_T, Dict[str, object],
                            List[attribution.SideCpu]]:
  """run() between `probe`'s Start and StopAll: its result, the figures
  (foreign_cpu_pct, interference; none without samplers or when every
  sampler failed) and the server sides over the whole run, for `Attributed`
  on a path with no one load window (a YCSB probe, a staircase).
  `steal_of(result)`: the steal time the run measured on its own client VMs.
  """
  if probe is None:
    return run(), {}, []
  probe.Start()
  try:
    result = run()
  except Exception:
    probe.StopAll()  # No sampler outlives its probe.
    raise
  figures, servers = probe.StopAll(steal_of(result))
  return result, figures, servers


def Attributed(m: measurement.Measurement,
               servers: Sequence[attribution.SideCpu] = ()
               ) -> measurement.Measurement:
  """m with its limit (attribution.Decide over its client sides and the
  server sides): `limit`, `limit_detail` and the figures in its metadata,
  and `client_saturated` exactly when the limit is the client's."""
  limit = attribution.Decide(m.client_sides, servers)
  metadata = {**m.metadata, **limit.Metadata()}
  metadata.pop('client_saturated_by', None)
  if limit.client_limited:
    metadata['client_saturated_by'] = limit.name
  return dataclasses.replace(m, metadata=metadata,
                             client_saturated=limit.client_limited)


def Sampled(probe: Optional[ProbeInterference],
            measure: Callable[[measurement.Load], measurement.Measurement],
            window_s: Optional[float] = None
            ) -> Callable[[measurement.Load], measurement.Measurement]:
  """measure(load) whose Measurement carries its probe's figures and its
  limit (`Attributed`). `window_s`: when the load window ends after the
  probe's start, for a tool that idles after it (ProbeInterference.Start)."""

  def Measured(load: measurement.Load) -> measurement.Measurement:
    if probe is None:
      return Attributed(measure(load))
    probe.Start(window_s)
    try:
      m = measure(load)
    except Exception:
      probe.StopAll()  # No sampler outlives its probe.
      raise
    figures, servers = probe.StopAll(m.metadata.get(CLIENT_STEAL_KEY),
                                     m.load_window)
    return Attributed(dataclasses.replace(
        m, metadata={**m.metadata, **figures}), servers)

  return Measured
