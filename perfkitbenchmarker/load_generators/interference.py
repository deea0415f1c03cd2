"""CPU that processes foreign to the run use on the run's cores, per probe.

Two runs sharing pinned cores each publish about half the real throughput
(issue 10, point 5), so each probe says how much of the run's cores
something else used, in % of their capacity (`foreign_cpu_pct`; above
`INTERFERENCE_PCT` the probe is flagged `interference`):

* Everywhere: what the probe's own snapshots saw (client_cpu.py):
  processes working outside the run's root, and steal, on the client's cores
  and, by `ServerCpuSampler`, on the server's. These are the figures the
  probe's limit names (`client_foreign_cpu_pct`), so the sample's figure is
  never below them.
* VMs, besides: `StealSampler`, the hypervisor's steal time on a VM's cores;
  a client VM whose probe measures its own (`client_steal_pct`) is not read
  again (`ForRun`'s `measured`).

`ServerCpuSampler` also gives the server's side for attribution.py. The
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
                    Tuple, TypeVar)

from perfkitbenchmarker import errors
from perfkitbenchmarker import measurement
from perfkitbenchmarker import probe_processes
from perfkitbenchmarker import run_record
from perfkitbenchmarker import shell_scripts
from perfkitbenchmarker import virtual_machine
from perfkitbenchmarker import attribution
from perfkitbenchmarker.load_generators import client_cpu

INTERFERENCE_PCT = 10.0
# Steal time a probe measured on its own client VM (percent of its cores).
CLIENT_STEAL_KEY = 'client_steal_pct'
_T = TypeVar('_T')


class StealSampler:
  """Steal time on a VM's pinned cores (or all) between Start and Stop."""

  def __init__(self, vm):
    self.vm = vm
    self._before = None

  def Start(self) -> None:
    self._before = client_cpu.ProcStat(self.vm)

  def Stop(self) -> float:
    return client_cpu.Measure(self._before, client_cpu.ProcStat(self.vm),
                              self.vm.cpu_set).steal_pct or 0.0


class ServerCpuSampler:
  """A server VM's processes (the shards) over a probe, as a client_cpu
  side (attribution.py reads it).

  Start launches a bounded background loop on the VM (client_cpu.
  scripts/cpu_sampler.sh), one round trip; Stop signals it and takes the series back
  in one more; Side picks the snapshots that cover the probe's load window.
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
    root = client_cpu.RunRoot(self.vm)
    # In the run record, its group written down as it starts: a run that
    # never gets to Stop (SIGINT, kill -9 of pkb) has teardown kill it.
    self._probe = probe_processes.Mark(self.vm, 'server-cpu')
    script = self._probe.prefix + shell_scripts.Sourced(
        client_cpu.SAMPLER, *client_cpu.SamplerArgs(
            self._pids_used, base, self.INTERVAL_S, self.max_s, root,
            client_cpu.OwnPid(self.vm))) + '\n'
    q = shlex.quote
    # Started from the run's root, not the VM's directory (teardown does not
    # remove a directory a process works in), so still the run's own to the
    # foreign scan. `head -n1` returns with its `ready`.
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
    if out.rstrip().endswith(client_cpu.SERIES_END):
      if self._probe is not None:
        probe_processes.Retire(self._probe)  # It wrote its end: it exited.
    elif out:
      # Starved past the stop's wait: its series is read as far as it got
      # (a snapshot cut short is left out), and it ends on its own.
      logging.info('%s: the server CPU sampler %s had not ended when its '
                   'stop gave up waiting', self.vm.name, self._base)
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
  counts as one more figure (VMs whose probes measure it have no sampler);
  `from_sides`: so does every side's `foreign_pct` (ForRun: always).
  `clock`: monotonic seconds (injectable for tests).
  A probe whose load window ends at a known time before the tool does
  (memtier's idle last second: `Start(stop_after_s)`) has its samplers
  stopped and read then, in that idle tail, rather than after the tool.
  """

  # After the load window's planned end: the client's window starts only
  # once its script runs (a round trip later over SSH).
  STOP_MARGIN_S = 0.5

  def __init__(self, samplers: Sequence, steal_from_probes: bool = False,
               servers: Sequence[ServerCpuSampler] = (),
               clock: Callable[[], float] = time.monotonic,
               from_sides: bool = False):
    self.samplers = list(samplers)
    self._clock = clock
    self.servers = list(servers)
    self.steal_from_probes = steal_from_probes
    self.from_sides = from_sides
    # Each sampler's, then each server's, Start (and planned Stop).
    self._running: List[concurrent.futures.Future] = []
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
    self._running = [self._Pool().submit(self._Run, s, after, self._stop_now)
                     for s in (*self.samplers, *self.servers)]

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

  def _Stopped(self, sampler, running: concurrent.futures.Future,
               then: Callable = lambda result: result):
    """then(what the sampler's Stop returned: by `_Run` at its planned
    time, or now when `_Run` did not stop it); None when it failed (a
    figure missing is no reason to lose the probe)."""
    try:
      result = running.result()
      return then(sampler.Stop() if result is self._NOT_STOPPED else result)
    except run_record.RecordNotSaved as e:
      # The run stops on it, in its one line (a full disk): a warning here
      # would say it twice.
      logging.debug('%s: %s', type(sampler).__name__, e)
      return None
    except (errors.Error, OSError, ValueError) as e:
      logging.warning('%s failed: %s', type(sampler).__name__, e)
      return None

  def StopAll(self, probe_steal_pct: Optional[float] = None,
              window: Optional[Tuple[float, float]] = None,
              client_sides: Sequence[attribution.SideCpu] = ()
              ) -> Tuple[Dict[str, object], List[attribution.SideCpu]]:
    """foreign_cpu_pct and interference for the probe's metadata (none
    without a figure), and the server VMs' sides over `window` (those that
    came back); every sampler stopped side by side, on a worker of its
    own."""
    self._stop_now.set()
    servers = [self._Pool().submit(self._Stopped, s, f,
                                   lambda text, s=s: s.Side(text, window))
               for s, f in zip(self.servers,
                               self._running[len(self.samplers):])]
    stops = [self._Pool().submit(self._Stopped, s, f)
             for s, f in zip(self.samplers, self._running)]
    sides = [side for side in (f.result() for f in servers) if side]
    figures = [f.result() for f in stops]
    if self.steal_from_probes:
      figures.append(probe_steal_pct)
    if self.from_sides:
      figures += [side.foreign_pct for side in (*client_sides, *sides)]
    figures = [float(x) for x in figures if x is not None]
    if not figures:
      return {}, sides
    pct = round(max(figures), 1)
    return ({'foreign_cpu_pct': pct, 'interference': pct > INTERFERENCE_PCT},
            sides)


def ForRun(vms: Sequence, measured: Sequence = (),
           server_pids: Optional[Callable[[Any], Iterable[int]]] = None
           ) -> ProbeInterference:
  """The foreign CPU the probe's sides saw; when a VM is not the runner's
  machine, its steal time too.

  `measured`: client VMs whose probes report their own steal time
  (`client_steal_pct`); no sampler reads their machines again.
  `server_pids(vm)`: the server processes on a VM (none: not a server VM);
  each server VM then gets a ServerCpuSampler.
  """
  servers = [ServerCpuSampler(vm, lambda vm=vm: server_pids(vm))
             for vm in vms if server_pids and list(server_pids(vm))]
  if all(vm.CAN.is_runner_machine for vm in vms):
    return ProbeInterference([], from_sides=True, servers=servers)
  if not measured:
    return ProbeInterference([StealSampler(vm) for vm in vms],
                             servers=servers, from_sides=True)
  # Steal time is the machine's: one sampler per machine (and core set).
  seen = {(virtual_machine.MachineLane(vm), tuple(vm.cpu_set or ()))
          for vm in measured}
  samplers = []
  for vm in vms:
    key = (virtual_machine.MachineLane(vm), tuple(vm.cpu_set or ()))
    if key not in seen:
      seen.add(key)
      samplers.append(StealSampler(vm))
  return ProbeInterference(samplers, steal_from_probes=True, servers=servers,
                           from_sides=True)


def BracketSides(probe: Optional[ProbeInterference], run: Callable[[], _T],
                 clients_of: Callable[[_T], Iterable[Any]] = lambda _: ()
                 ) -> Tuple[_T, Dict[str, object],
                            List[attribution.SideCpu]]:
  """run() between `probe`'s Start and StopAll: its result, the figures
  (foreign_cpu_pct, interference; none without samplers or when every
  sampler failed) and the server sides over the whole run, for `Attributed`
  on a path with no one load window (a YCSB probe, a staircase).
  `clients_of(result)`: the client_cpu.ClientCpu (or None) the run measured
  on its client VMs (their steal time and foreign CPU).
  """
  if probe is None:
    return run(), {}, []
  probe.Start()
  try:
    result = run()
  except Exception:
    probe.StopAll()  # No sampler outlives its probe.
    raise
  cpus = [c for c in clients_of(result) if c is not None]
  steal = [c.steal_pct for c in cpus if c.steal_pct is not None]
  figures, servers = probe.StopAll(max(steal, default=None), None,
                                   [c.side for c in cpus if c.side])
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
                                     m.load_window, m.client_sides)
    return Attributed(dataclasses.replace(
        m, metadata={**m.metadata, **figures}), servers)

  return Measured
