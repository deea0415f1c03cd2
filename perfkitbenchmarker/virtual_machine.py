"""The VM interface every provider implements.

Extension seam: a provider (providers/<cloud>/) subclasses `BaseVirtualMachine`
and implements the resource hooks (`_Create`, `_Delete`, ...) plus
`RemoteCommandWithReturnCode`, `WriteFile` and `ReadFile`. Everything above
(packages, load generators, benchmarks) uses only this interface, so a
benchmark runs unchanged on Local, SSH-reached, GCP and AWS machines.

Every VM also has the methods a benchmark module written for upstream PKB
calls (upstream_vm.UpstreamMethods, built on those hooks; Install's
AptInstall/YumInstall convention is here).
"""

import dataclasses
import importlib
import logging
import posixpath
import shlex
import threading
from typing import (Any, Dict, Hashable, Iterable, List, NamedTuple,
                    Optional, Sequence, Tuple)

from perfkitbenchmarker import errors
from perfkitbenchmarker import process_stat
from perfkitbenchmarker import resource
from perfkitbenchmarker import run_processes
from perfkitbenchmarker import run_scope
from perfkitbenchmarker import shell_scripts
from perfkitbenchmarker import system_info as system_info_lib
from perfkitbenchmarker import trusted_programs
from perfkitbenchmarker import upstream_vm
from perfkitbenchmarker import vm_util

_workspace_locks: Dict[Hashable, threading.Lock] = {}
_workspace_locks_guard = threading.Lock()
# The attributes every VM's run record entry holds (RecordData), besides
# its cloud and group.
_RECORDED = ('machine_type', 'zone', 'num_cpus', 'memory_mib', 'os_type',
             'scratch_dir', 'ip_address', 'internal_ip', 'cpu_set')


@dataclasses.dataclass(frozen=True)
class VmSpec:
  """What a config's vm_spec.<cloud> asks for."""
  cloud: str
  machine_type: str
  zone: Optional[str] = None
  num_cpus: Optional[int] = None
  memory_mib: Optional[int] = None
  os_type: str = 'debian12'
  image: Optional[str] = None
  boot_disk_size: Optional[int] = None
  priced_as: Optional[str] = None


@dataclasses.dataclass(frozen=True)
class Capabilities:
  """What a provider's machines can do: the code above the providers asks
  these instead of naming a cloud (providers.CAPABILITIES has each's)."""
  # Programs come from the OS's packages, installed as root on it (False:
  # they are the runner's own, from ./scripts/setup.sh or a wheel, and
  # nothing is installed there).
  installs_packages: bool = True
  # It is the machine pkb runs on: one kernel, its cores and processes are
  # the runner's too.
  is_runner_machine: bool = False
  # The run made it and deletes it, so programs may come from their own
  # repositories too (memtier from Redis's APT repository); the user's own
  # machines keep to what they have and the OS's packages.
  made_by_run: bool = False
  # It has no price of its own: it is priced as the catalog machine type
  # --local_priced_as names, and its samples say so.
  priced_as_catalog: bool = False


class ScratchGone(errors.VirtualMachine.RemoteCommandError):
  """The VM's scratch directory is not there (removed already): nothing of
  the run's to run its scripts from."""


# ship.sh's exit when the scratch directory is not there.
_SHIP_NO_SCRATCH = 4


def ScriptsRefused(vm, problem: str) -> run_scope.NotOwnDir:
  """The one-line refusal of shipped scripts that are not the run's own."""
  return run_scope.NotOwnDir(
      f'{vm.name}: the run\'s scripts there are not its own: {problem}; '
      f'none of them runs. Remove '
      f'{shell_scripts.ShippedDir(vm.scratch_dir)} if nothing else of the '
      'run was changed (pkb ships them again), and find out who wrote it.')


# The VM group a Redis study's servers are in (its config's vm_groups).
SERVER_GROUP = 'servers'


def GroupOrder(groups: Iterable[str]) -> List[str]:
  """The order VMs are built and placed in: servers first, then the other
  groups by name."""
  return sorted(groups, key=lambda g: (g != SERVER_GROUP, g))


def CheckNameIsNew(group: str, name: str, taken: Iterable[str], rule: str,
                   called: str = 'named', fix: str = '') -> None:
  """Refuses a VM whose cloud name another VM of the run has (in `taken`):
  its create would find that VM's instance by it and take it for its own
  (a group name cut to the cloud's length, or two that differ only in case
  or punctuation). `rule` is the cloud's rule for names."""
  if name in taken:
    raise errors.ConfigError(
        f'vm_groups.{group}: a VM would be {called} {name}, as another VM of '
        f'the run ({rule}); give the group a shorter name{fix}.')


def MachineLane(vm) -> Hashable:
  """The machine `vm` is, as a background_tasks lane: VMs that are one
  machine install one after another (two apt runs there would fight over
  the dpkg lock). Every VM that is the runner's machine is one lane; any
  other VM goes by its address (a static VM file may list one host twice),
  else by its name."""
  if getattr(vm, 'CAN', Capabilities()).is_runner_machine:
    return ('local',)
  address = getattr(vm, 'ip_address', None)
  return ('address', address) if address else ('name', vm.name)


def WorkspaceLock(vm) -> threading.Lock:
  """Two VMs of one machine created at once share one workspace, so they
  make or find it one after another; other machines' round trips go on
  meanwhile (one lock for all serialized a cloud run's VMs)."""
  with _workspace_locks_guard:
    return _workspace_locks.setdefault(MachineLane(vm), threading.Lock())


class BaseVirtualMachine(resource.BaseResource, upstream_vm.UpstreamMethods):
  """A machine that runs shell commands for the benchmark."""

  CLOUD = ''
  KIND = 'vm'
  # What it can do (each provider's VM class sets its provider's).
  CAN = Capabilities()

  def __init__(self, spec: VmSpec, name: str, group_name: str,
               run_uri: str = '',
               stop_wait_s: float = run_processes.STOP_WAIT_S,
               **kwargs):
    super().__init__(name, **kwargs)
    # KillProcess's wait for an exit after each signal (tests of a process
    # that outlives it shorten it).
    self.stop_wait_s = stop_wait_s
    self.run_uri = run_uri or (self.record.run_uri if self.record else '')
    self.spec = spec
    self.group_name = group_name
    self.machine_type = spec.machine_type
    self.zone = spec.zone
    self.num_cpus: Optional[int] = spec.num_cpus
    self.memory_mib: Optional[int] = spec.memory_mib
    self.os_type = spec.os_type
    self.ip_address: Optional[str] = None
    self.internal_ip: Optional[str] = None
    # Cores the benchmark's processes are pinned to; None means unpinned.
    self.cpu_set: Optional[List[int]] = None
    # <the run's workspace>/<name> once Create made it (run_scope), or as
    # the run record holds it; '' before.
    self.scratch_dir = ''
    self._installed: set = set()
    self.system_info: Optional[system_info_lib.SystemInfo] = None
    # TCP port ranges the run's firewall lets its VMs reach on each other
    # (cloud providers set them); None: no firewall of the run's own.
    self.peer_tcp_ports: Optional[Tuple[Tuple[int, int], ...]] = None

  def SameMachine(self, unused_data: Dict[str, Any]) -> bool:
    """Whether the VM of another entry's data is this machine."""
    return False

  def RunWorkspace(self, root: str) -> str:
    """The workspace another VM of the run on this machine recorded, or
    '' (under WorkspaceLock(self)): shared, the run's processes there are all
    the run's own to a sampler's foreign-process scan."""
    for entry in self.record.Resources() if self.record else ():
      data = entry['data']
      if (entry['name'] != self.name and entry['status'] != 'deleted' and
          self.SameMachine(data) and not run_scope.ScratchProblem(
              data.get('scratch_dir'), root, self.record.run_uri)):
        return posixpath.dirname(data['scratch_dir'])
    return ''

  # Provider hooks ---------------------------------------------------------

  def RemoteCommandWithReturnCode(
      self, command: str, timeout: Optional[float] = None,
      env: Optional[Dict[str, str]] = None,
      stdin: vm_util.Stdin = None) -> Tuple[str, str, int]:
    raise NotImplementedError

  def WriteFile(self, path: str, content: str, mode: int = 0o600) -> None:
    raise NotImplementedError

  def ReadFile(self, path: str) -> str:
    out, _ = self.RemoteCommand(f'cat {shlex.quote(path)}')
    return out

  def ShipScripts(self) -> None:
    """Puts the shipped scripts in the VM's scratch directory in one round
    trip, unless something is there already (its commands then check it:
    shell_scripts).

    Raises:
      ScratchGone: the scratch directory is not there.
      errors.VirtualMachine.RemoteCommandError: they could not be written.
    """
    directory = shell_scripts.ShippedDir(self.scratch_dir)
    what = f'shipping the scripts to {directory} on {self.name}'
    logging.debug('[%s] %s', self.name, what)  # Not its text: ship.sh's.
    out, err, rc = self._RunShipping(shell_scripts.ShipCommand(directory),
                                     shell_scripts.Bundle())
    if rc == _SHIP_NO_SCRATCH:
      raise ScratchGone(f'{what}: {vm_util.Tail(err, 1)}')
    vm_util.CheckedOutput(out, err, rc, what, what,
                          error=errors.VirtualMachine.RemoteCommandError)

  def _RunShipping(self, command: str, bundle: str) -> Tuple[str, str, int]:
    """Runs ShipScripts' command, which runs no shipped script."""
    return self.RemoteCommandWithReturnCode(command, timeout=60, stdin=bundle)

  def CommandLane(self) -> Hashable:
    """The background_tasks lane of work that runs commands on this VM.

    Work over one shared connection (SSH) must share a lane, so that it
    never opens more sessions on it at once than sshd allows (see
    resource.py's teardown). The default: the VM is a lane of its own.
    """
    return ('vm', self.name)

  # Shared behaviour -------------------------------------------------------

  def RemoteCommand(self, command: str, timeout: Optional[float] = None,
                    ignore_failure: bool = False,
                    env: Optional[Dict[str, str]] = None,
                    what: Optional[str] = None,
                    stdin: vm_util.Stdin = None,
                    **upstream_options) -> Tuple[str, str]:
    """(stdout, stderr) of a shell command on the VM; a non-zero exit
    raises errors.VirtualMachine.RemoteCommandError unless ignore_failure
    (upstream PKB's shape; its other keywords: UpstreamCommand)."""
    if upstream_options:
      command = upstream_vm.UpstreamCommand(command, upstream_options)
    logging.debug('[%s] %s', self.name, vm_util.Mask(command))  # As it runs.
    out, err, rc = self.RemoteCommandWithReturnCode(command, timeout=timeout,
                                                    env=env, stdin=stdin)
    # Past its timeout it raises even with ignore_failure, as upstream's
    # (its IssueCommand's raise_on_timeout): a module that ignores a
    # command's exit status still learns that the command never finished.
    timed_out = rc == -9 and timeout is not None
    if timed_out or not ignore_failure:
      vm_util.CheckedOutput(out, err, rc, command, what,
                            error=errors.RemoteCommandTimeoutError if timed_out
                            else errors.VirtualMachine.RemoteCommandError)
    return out, err

  def Pinned(self, command: str) -> str:
    """Prefixes a command so it runs on this VM's cores only."""
    if not self.cpu_set:
      return command
    cores = ','.join(str(c) for c in self.cpu_set)
    return f'taskset -c {cores} {command}'

  def HasCommand(self, program: str) -> bool:
    """Whether PATH has `program`; one another user could change is
    refused in one line (trusted_programs): the run would execute it."""
    return trusted_programs.OnPath(self, program)

  def Install(self, package_name: str, **settings) -> None:
    """Installs linux_packages/<package_name>.py on this VM, once.

    A module in upstream PKB's shape has AptInstall(vm) and YumInstall(vm):
    the one for this VM's package manager runs. Otherwise its
    Install(vm, **settings) does (`settings`: e.g. version=, path=).
    """
    if package_name in self._installed:
      return
    try:
      package = importlib.import_module(
          f'perfkitbenchmarker.linux_packages.{package_name}')
    except ModuleNotFoundError as e:
      if e.name != f'perfkitbenchmarker.linux_packages.{package_name}':
        raise
      raise errors.VirtualMachine.RemoteCommandError(
          f'Install(\'{package_name}\') on {self.name}: there is no '
          f'perfkitbenchmarker/linux_packages/{package_name}.py; add one '
          'with AptInstall(vm) and YumInstall(vm), or Install(vm).') from None
    hook = self._InstallHook(package, package_name)
    hook(self, **settings)
    self._installed.add(package_name)

  def _InstallHook(self, package, package_name: str):
    """The module's AptInstall or YumInstall for this VM (upstream's
    convention), else its Install."""
    if not (hasattr(package, 'AptInstall') or hasattr(package, 'YumInstall')):
      return package.Install
    manager = self.DetectSystem().package_manager
    name = {'apt': 'AptInstall', 'yum': 'YumInstall', 'dnf': 'YumInstall'}.get(
        manager or '')
    hook = getattr(package, name, None) if name else None
    hook = hook or getattr(package, 'Install', None)
    if hook is None:
      raise errors.VirtualMachine.RemoteCommandError(
          f'Install(\'{package_name}\') on {self.name}: the module has no '
          f'{name or "install function"} for its package manager '
          f'({manager or "none found"}); add one, or use an apt or '
          'yum/dnf machine.')
    return hook

  def DetectSystem(self) -> system_info_lib.SystemInfo:
    """What the VM is (OS, package manager, CPUs), read once."""
    if self.system_info is None:
      out, _ = self.RemoteCommand(system_info_lib.PROBE_COMMAND,
                                  what=f'probing {self.name}')
      self.system_info = system_info_lib.SystemInfo.Parse(out)
    return self.system_info

  def ReadProcess(self, pid: int) -> Optional['ProcessState']:
    """What one read of /proc on this VM says of a live pid (None: gone).

    A zombie is gone, unless its main thread alone has exited and other
    threads still run (`Threads:` above 1): that process is exiting or
    running without it, and its command line reads empty, as does that of
    any process that is exiting (its memory is released before it becomes
    a zombie). One round trip (run_processes.sh's `read`).
    """
    pid = CheckedPid(pid)
    out, _, rc = self.RemoteCommandWithReturnCode(
        run_processes.Command('read', pid, self.scratch_dir))
    lines = out.split('\n', 4)
    if rc != 0 or len(lines) < 5:
      return None
    stat, threads, workspace, cmdline, cwd = lines
    fields = process_stat.Parse(stat)
    if fields is None:
      return None
    cmdline = cmdline.strip()
    if fields.state == 'Z':
      count = threads.partition(':')[2].strip()  # Of its `Threads:` line.
      if not count.isdigit() or int(count) <= 1:
        return None
      cmdline = ''
    if cwd.endswith('\n'):
      cwd = cwd[:-1]
    return ProcessState(start=fields.start_ticks, group=fields.group,
                        cmdline=cmdline, cwd=cwd or None,
                        workspace=workspace or self.scratch_dir)

  def ProcessIdentity(self, pid: int) -> Optional[Tuple[float, str]]:
    """(start time, command line) of a live pid, or None when it is gone.

    The start time is /proc/<pid>/stat field 22 (clock ticks since boot):
    with the PID it names one process for as long as the machine is up.
    """
    state = self.ReadProcess(pid)
    return None if state is None else (state.start, state.cmdline)

  def KillProcess(self, pid: int, markers: Sequence[str] = (),
                  start_time: Optional[float] = None) -> None:
    """Stops the process group pid leads and waits for pid's exit, if pid is
    still the process the run started.

    The run's processes are long-lived servers started in a session of
    their own (redis-server daemonizes, others run under setsid), so each
    leads its own process group, and stopping the group stops whatever it
    forked too (a background save). The identity check comes first, once:
    the process works in the VM's scratch directory (commands start there;
    redis-server's `dir` is it), a directory of the run's own that no other
    user can enter, so a process working anywhere else is never signalled,
    whatever the record or a pidfile says of it; it started at the recorded
    time (a PID may have been reused since); its command line holds the
    markers; and it leads its own group. A process that is exiting has
    already let go of its command line and working directory, so it cannot
    be judged either way: it is waited for (`_StopExiting`), never taken for
    a foreign one.

    Args:
      pid: the process id recorded when it started.
      markers: strings its command line must all contain.
      start_time: its ProcessIdentity start time, recorded when it started;
        None only for a PID just read from the process's own pidfile.
    Raises:
      errors.ResourceError: the PID now names another process (left alone),
        or it outlived SIGTERM, SIGKILL and the waits after them.
    """
    pid = CheckedPid(pid)
    state = self.ReadProcess(pid)
    if state is not None and (state.cwd is None or not state.cmdline):
      state = self.ReadProcess(pid)  # It may have begun to exit: again.
    if state is None:
      return
    if not state.cmdline:
      self._StopExiting(pid, state, start_time)
      return
    cwd = state.cwd
    if cwd is None or not self.scratch_dir or not run_processes.WorksUnder(
        cwd, state.workspace):
      raise errors.ResourceError(
          f'PID {pid} on {self.name} works in '
          f'{cwd if cwd is not None else "a directory we cannot read"}, not '
          f'in the run\'s scratch directory {state.workspace}: not a process '
          'of this run; left alone')
    self._CheckStart(pid, state, start_time)
    missing = [m for m in markers if m not in state.cmdline]
    if missing:
      raise errors.ResourceError(
          f'PID {pid} on {self.name} is "{state.cmdline[:60]}", not the '
          f'recorded process (no "{missing[0]}" in it); left alone')
    self._StopGroup(pid, state)

  def _CheckStart(self, pid: int, state: 'ProcessState',
                  start_time: Optional[float]) -> None:
    if start_time is not None and not SameStart(state.start, start_time):
      raise errors.ResourceError(
          f'PID {pid} on {self.name} started at {state.start}, not at the '
          f'recorded {start_time}: another process; left alone')

  def _StopExiting(self, pid: int, state: 'ProcessState',
                   start_time: Optional[float]) -> None:
    """Waits for a process that is exiting, whose command line and working
    directory can no longer be read (so neither the run's mark nor the
    markers can be checked): it is neither foreign nor gone yet.

    If it is still there after stop_wait_s (its main thread exited while
    other threads run on), the recorded start time is what names it: then
    its group is stopped like any; without one (a PID read from a pidfile)
    it is left alone, said so.
    """
    _, _, rc = self.RemoteCommandWithReturnCode(
        run_processes.Identity(pid, int(state.start)).WaitCommand(
            self.stop_wait_s))
    if rc != run_processes.OUTLIVED:
      return
    if start_time is None:
      raise errors.ResourceError(
          f'PID {pid} on {self.name} has been exiting for '
          f'{self.stop_wait_s:g} s (no command line or working directory '
          'left to check it by) and no start time was recorded for it; left '
          'alone')
    self._CheckStart(pid, state, start_time)
    self._StopGroup(pid, state)

  def _StopGroup(self, pid: int, state: 'ProcessState') -> None:
    """Stops the group pid leads (run_processes' escalation)."""
    if state.group != pid:
      raise errors.ResourceError(
          f'PID {pid} on {self.name} does not lead a process group of its '
          f'own (its group is {state.group}): not a process the run '
          'started; left alone')
    _, _, rc = self.RemoteCommandWithReturnCode(
        run_processes.Identity(pid, int(state.start)).StopCommand(
            self.stop_wait_s))
    if rc == run_processes.OUTLIVED:
      raise errors.ResourceError(
          f'PID {pid} on {self.name} is still running after SIGKILL.')

  def GetResourceMetadata(self) -> Dict[str, Any]:
    return {
        'machine_type': self.machine_type,
        'num_cpus': self.num_cpus,
        'zone': self.zone,
        'cloud': self.CLOUD,
        'os_type': self.os_type,
        'vm_count': 1,
    }

  def RecordData(self) -> Dict[str, Any]:
    return {'cloud': self.CLOUD, 'group': self.group_name,
            **{name: getattr(self, name) for name in _RECORDED}}


class ProcessState(NamedTuple):
  """One read of a live process on a VM (BaseVirtualMachine.ReadProcess)."""
  start: float  # /proc/<pid>/stat field 22, clock ticks since boot
  group: int  # its process group id
  cmdline: str  # '' while it exits
  cwd: Optional[str]  # None when it cannot be read (exiting, not ours)
  workspace: str  # the VM's scratch directory, as the VM resolves it


def CheckedPid(pid) -> int:
  """pid as an int that can name a process (never text for a shell)."""
  if isinstance(pid, bool) or not isinstance(pid, int) or not 1 < pid < 2**22:
    raise errors.ResourceError(f'{pid!r} is not a process id; left alone')
  return pid


def SameStart(a: float, b: float) -> bool:
  return abs(float(a) - float(b)) < 0.005


def RequireCommands(vm: BaseVirtualMachine, programs: Sequence[str],
                    hint: str) -> None:
  missing = [p for p in programs if not vm.HasCommand(p)]
  if missing:
    raise errors.PrerequisiteError(
        f'{", ".join(missing)} not found on {vm.name}; {hint}')


def VmFromRecord(record, name: str) -> BaseVirtualMachine:
  """Rebuilds the VM called `name` from a run record (for late teardown)."""
  for entry in record.Resources():
    if entry['name'] == name and 'group' in entry['data']:
      return resource.FromRecord(entry, record)
  raise errors.ResourceError(f'VM {name} is not in the run record.')
