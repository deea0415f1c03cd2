"""Local VMs: processes on this machine, each VM pinned to its own cores.

A Local VM is a scratch directory plus a set of CPU cores. Its commands run as
local processes (bash -c) in that directory, under `taskset` when the VM has
cores of its own. Servers get the first cores and clients the next, so on a
2-core machine the server runs on core 0 and the client on core 1; there the
server VM's commands also run under a CPU quota (split.py says when and
why; cpu_quota.py makes, records and removes the cgroup).

Local VMs have no price of their own; the benchmark prices them as the catalog
machine type named by --local_priced_as and says so in the metadata.
"""

import contextlib
import dataclasses
import os
import posixpath
from typing import Annotated, Dict, List, Optional, Sequence

import psutil

from perfkitbenchmarker import errors
from perfkitbenchmarker import measurement
from perfkitbenchmarker import providers
from perfkitbenchmarker import record_checks
from perfkitbenchmarker import resource
from perfkitbenchmarker import run_scope
from perfkitbenchmarker import shell_scripts
from perfkitbenchmarker import terminal_text
from perfkitbenchmarker import trusted_programs
from perfkitbenchmarker import upstream_vm
from perfkitbenchmarker import virtual_machine
from perfkitbenchmarker import vm_util
from perfkitbenchmarker.providers.local import cpu_quota as cpu_quota_lib
from perfkitbenchmarker.providers.local import limits as limits_lib
from perfkitbenchmarker.providers.local import split as split_lib

CLOUD = 'Local'


def _ScratchRoot(environ) -> str:
  """PKB_LOCAL_SCRATCH, or /tmp when it is unset or empty (as an empty
  PKB_KEY_DIR is its default): '' was the current directory, wherever the
  run was started, and the run's workspace went there."""
  return environ.get('PKB_LOCAL_SCRATCH') or '/tmp'


SCRATCH_ROOT = _ScratchRoot(os.environ)
# What a refused scratch root tells the user to do: another --run_uri (the
# advice for a run's own directory) would meet the same root.
SCRATCH_ADVICE = ('It is where Local runs make their private workspaces '
                  '(PKB_LOCAL_SCRATCH, default /tmp): set PKB_LOCAL_SCRATCH '
                  'to a directory of your own, or to one with the sticky bit '
                  'such as /tmp.')


class LocalVirtualMachine(virtual_machine.BaseVirtualMachine):
  """A VM that is a directory and some cores of this machine."""

  CLOUD = CLOUD
  KIND = 'local_vm'
  CAN = providers.CAPABILITIES[CLOUD]

  def __init__(self, *args, **kwargs):
    super().__init__(*args, **kwargs)
    self.ip_address = '127.0.0.1'
    self.internal_ip = '127.0.0.1'
    # CPUs the VM's cgroup quota allows (None: no quota) and that cgroup's
    # directory once made.
    self.cpu_quota: Optional[float] = None
    self.cgroup = ''

  def _Create(self) -> None:
    # <the run's workspace>/<name>, recorded before anything is put in it:
    # the shards' configs and the argv_secret library live here.
    with virtual_machine.WorkspaceLock(self):
      workspace = self.RunWorkspace(_Root())
      if not run_scope.IsOwnDir(workspace):
        workspace = run_scope.MakeTempDir(
            run_scope.WorkspacePrefix(self.run_uri), _Root(), SCRATCH_ADVICE)
      self.Remember(scratch_dir=os.path.join(workspace, self.name))
    try:
      os.mkdir(self.scratch_dir, run_scope.MODE)
    except OSError as e:  # A full disk, no inodes left: one line.
      with contextlib.suppress(OSError):  # Teardown skips what was not made.
        os.rmdir(os.path.dirname(self.scratch_dir))  # If no VM's is in it.
      raise errors.Error(
          f'could not make {self.name}\'s scratch directory '
          f'{self.scratch_dir}: {e.strerror or e}; free space in {_Root()}, '
          'or set PKB_LOCAL_SCRATCH (where Local runs make their '
          'workspaces, default /tmp) to another directory.') from None
    if self.cpu_quota:
      # A resource of its own, recorded before it is made: teardown removes
      # it from the record whatever ended the run.
      quota = cpu_quota_lib.LocalCpuQuota(self.run_uri, self.name,
                                          self.cpu_quota, record=self.record)
      quota.Create()
      self.Remember(cgroup=quota.path)

  def SameMachine(self, data) -> bool:
    return data.get('cloud') == CLOUD

  def _Delete(self) -> None:
    if not self.scratch_dir or not os.path.lexists(self.scratch_dir):
      return
    # Only ever a scratch directory of the run's shape, in a workspace and
    # a directory of our own (another user's, or one others can write to,
    # is refused in one line and left alone).
    problem = run_scope.ScratchProblem(self.scratch_dir, _Root(), self.run_uri)
    if problem:
      raise run_scope.NotOwnDir(f'{problem}; left alone.')
    workspace = os.path.dirname(self.scratch_dir)
    run_scope.CheckOwnDir(workspace)
    # Not while a process still works in it (a shard that could not be
    # stopped): its config and pidfile are how a later teardown finds it.
    run_scope.RemoveOwnDir(self.scratch_dir)
    with contextlib.suppress(OSError):
      os.rmdir(workspace)  # Once the run's last VM here is gone.

  def HasCommand(self, program: str) -> bool:
    """Whether PATH has `program`; one another user could change is
    refused (trusted_programs): the run would execute it here."""
    return trusted_programs.Which(program) is not None

  def RemoteCommandWithReturnCode(self, command, timeout=None, env=None,
                                  stdin=None, **upstream_options):
    command = upstream_vm.UpstreamCommand(command, upstream_options)
    cwd = self.scratch_dir if os.path.isdir(self.scratch_dir) else None
    # Every command of the VM gets them (a script it writes and runs may run
    # one: a check here costs microseconds); never those this process's
    # environment names.
    scripts = self._CheckedScripts() if cwd else ''
    env = dict(env or {}, **{shell_scripts.ENV: scripts})
    return vm_util.RunLocal(command, cwd=cwd, timeout=timeout, env=env,
                            stdin=stdin)

  def _RunShipping(self, command, bundle):
    return vm_util.RunLocal(command, cwd=self.scratch_dir, timeout=60,
                            stdin=bundle)

  def _CheckedScripts(self) -> str:
    """The shipped scripts' directory, checked the run's own right before
    a command runs one, shipped first when missing (shell_scripts)."""
    directory = shell_scripts.ShippedDir(self.scratch_dir)
    problem = shell_scripts.Problem(directory)
    if problem == shell_scripts.MISSING:
      self.ShipScripts()
      problem = shell_scripts.Problem(directory)
    if problem:
      raise virtual_machine.ScriptsRefused(self, problem)
    return directory

  def Pinned(self, command: str) -> str:
    """On its cores, and inside its CPU quota's cgroup when it has one."""
    command = super().Pinned(command)
    if not self.cgroup:
      return command
    return cpu_quota_lib.EnterCommand(self.cgroup, command)

  def WriteFile(self, path: str, content: str, mode: int = 0o600) -> None:
    try:
      fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
      with os.fdopen(fd, 'w') as f:
        f.write(content)
      os.chmod(path, mode)
    except OSError as e:  # A full scratch disk, say: named, in one line.
      raise errors.ProcessError(
          f'could not write {path} on {self.name}: {e.strerror or e}') from None

  def ReadFile(self, path: str) -> str:
    with open(path) as f:
      return f.read()

  def GetResourceMetadata(self):
    metadata = dict(super().GetResourceMetadata(), cpu_set=','.join(
        map(str, self.cpu_set or [])) or 'unpinned')
    if self.cpu_quota:
      metadata['cpu_quota'] = self.cpu_quota
    return metadata

  def RecordData(self):
    return dict(super().RecordData(), cpu_quota=self.cpu_quota,
                cgroup=self.cgroup)

  class Fields(record_checks.Fields):
    # Only a directory of the run's workspace shape is ever used or removed.
    scratch_dir: Annotated[str, record_checks.WithRecord(
        lambda path, record: _RecordedScratchDir(path, record))] = ''
    group: str = ''
    machine_type: str = 'local'
    num_cpus: Optional[int] = None
    memory_mib: Optional[int] = None
    cpu_set: record_checks.Cores = None
    cpu_quota: Optional[float] = None
    cgroup: str = ''

  @classmethod
  def FromRecord(cls, entry, record) -> 'LocalVirtualMachine':
    fields = record_checks.Parse(cls.Fields, entry, record)
    try:  # A directory someone else made or can write to is not the run's.
      for path in (os.path.dirname(fields.scratch_dir), fields.scratch_dir):
        if path and os.path.lexists(path):
          run_scope.CheckOwnDir(path)
    except run_scope.NotOwnDir as e:
      raise record_checks.RecordRefused(
          f'{cls.KIND} {entry["name"]}: {e}') from None
    # Only this VM's own cgroup is ever entered (cpu_quota.PathProblem).
    problem = fields.cgroup and cpu_quota_lib.PathProblem(
        fields.cgroup, record.run_uri,
        cpu_quota_lib.CgroupName(record.run_uri, entry['name']))
    if problem:
      raise record_checks.RecordRefused(
          f'{cls.KIND} {entry["name"]}: {problem}; left alone')
    vm = cls(virtual_machine.VmSpec(cloud=CLOUD, num_cpus=fields.num_cpus,
                                    machine_type=fields.machine_type),
             entry['name'], fields.group, run_uri=record.run_uri)
    vm.scratch_dir, vm.memory_mib = fields.scratch_dir, fields.memory_mib
    vm.cpu_set, vm.created = fields.cpu_set, True
    vm.cpu_quota, vm.cgroup = fields.cpu_quota, fields.cgroup
    return vm


resource.RegisterKind(LocalVirtualMachine.KIND, LocalVirtualMachine.FromRecord)


def _Root() -> str:
  """Where the run's workspace is made on this machine."""
  return os.path.abspath(SCRATCH_ROOT)


def _RecordedScratchDir(path: str, record) -> str:
  """A recorded scratch directory (record_checks.ScratchDir under _Root());
  one of the workspace's shape under another root was made by a run with
  another PKB_LOCAL_SCRATCH: the refusal says to use the run's, as nothing
  else lets a later stage or teardown reach it (its shards kept running)."""
  try:
    return record_checks.ScratchDir(path, _Root(), record)
  except record_checks.RecordRefused as e:
    made_in = posixpath.dirname(posixpath.dirname(path))
    if run_scope.ScratchProblem(path, made_in, record.run_uri):
      raise
    raise record_checks.RecordRefused(
        f'{e}: the run made it with PKB_LOCAL_SCRATCH={made_in}; set that '
        'for this stage (or teardown) as the run had it') from None


def CheckPlan(spec) -> None:
  """Refuses, in every plan (--dry_run too), shards this machine would not
  let listen: a --redis_start_port below the first unprivileged port when
  this run may not bind one (limits.py); the run stopped once its shards
  started ('bind: Permission denied', exit 1)."""
  start_port = getattr(spec.flags, 'redis_start_port', None)
  if spec.starts_redis_shards and start_port:
    problem = limits_lib.LowPortProblem(start_port)
    if problem:
      raise errors.UsageError(problem)


def CheckRunDirs() -> None:
  """Refuses, before anything starts, a scratch root the run's workspace
  could not be private in (another user's, or writable by all without the
  sticky bit)."""
  # The shards' config files (UTF-8 text) name their directories.
  problem = terminal_text.NotUtf8(SCRATCH_ROOT)
  if problem:
    raise errors.UsageError(
        f'PKB_LOCAL_SCRATCH={SCRATCH_ROOT!r} is {problem} (the run writes '
        'its directories\' paths into text files); give a path in UTF-8.')
  if os.path.exists(SCRATCH_ROOT):
    run_scope.CheckRoot(SCRATCH_ROOT, SCRATCH_ADVICE)


def AvailableCores() -> List[int]:
  return sorted(os.sched_getaffinity(0))


# Local VMs beyond this many per core are refused: they would only measure
# each other (41 "VMs" on 2 cores is no deployment of anything).
MAX_VMS_PER_CORE = 8


def FitWarnings(vm_count: int, cores: Optional[int] = None) -> List[str]:
  """Warnings for `vm_count` Local VMs on this machine's cores; raises
  errors.UsageError for more than MAX_VMS_PER_CORE per core."""
  cores = len(AvailableCores()) if cores is None else cores
  if vm_count > MAX_VMS_PER_CORE * cores:
    raise errors.UsageError(
        f'{vm_count} Local VMs on this machine\'s {cores} core(s): at most '
        f'{MAX_VMS_PER_CORE * cores} ({MAX_VMS_PER_CORE} per core); lower '
        'vm_count or choose a --cloud.')
  if vm_count > cores:
    return [f'WARNING: {vm_count} Local VMs share this machine\'s {cores} '
            'core(s), so none has cores of its own: servers and clients '
            'disturb each other and the numbers are not comparable with '
            'pinned runs.']
  return []


def PlannedSplit(spec, cores: Optional[Sequence[int]] = None
                 ) -> split_lib.Split:
  """How ConstructVms splits this machine: each VM's cores (servers first)
  and the servers' CPU quota (split.py). Raises errors.UsageError for a
  --local_server_cpu_quota this machine cannot hold."""
  group_specs = spec.GroupSpecs()
  counts = spec.GroupCounts()
  requests = [(f'{group}-{i}', group_specs[group].num_cpus)
              for group in virtual_machine.GroupOrder(group_specs)
              for i in range(counts[group])]
  return split_lib.Plan(
      requests, AvailableCores() if cores is None else cores,
      getattr(spec.flags, 'local_server_cpu_quota', None),
      cpu_quota_lib.Version() is not None,
      getattr(spec.flags, 'latency_cap_statistic', None) or
      measurement.AVERAGE)


def PlannedCores(spec, cores: Optional[Sequence[int]] = None
                 ) -> Dict[str, Optional[List[int]]]:
  """VM name (servers-0, clients-0, ...) -> the cores it will be pinned to
  (None: unpinned), as ConstructVms places them: servers first."""
  return PlannedSplit(spec, cores).cores


def ConstructVms(spec) -> Dict[str, List[LocalVirtualMachine]]:
  """Builds the run's Local VMs, servers placed first on the cores, and
  says how it split the machine."""
  group_specs = spec.GroupSpecs()
  cores = AvailableCores()
  split = PlannedSplit(spec, cores)
  if getattr(spec, 'reporter', None) is not None:
    spec.reporter.Line(split.Line())
  assignment = split.cores  # Servers first, in VM order.
  memory_each = psutil.virtual_memory().total // 2**20 // max(
      1, len(assignment))
  groups: Dict[str, List[LocalVirtualMachine]] = {}
  for name, pinned in assignment.items():
    group = name.rsplit('-', 1)[0]
    vm_spec = group_specs[group]
    vm_spec = dataclasses.replace(
        vm_spec,
        num_cpus=len(pinned) if pinned else (vm_spec.num_cpus or len(cores)),
        memory_mib=vm_spec.memory_mib or memory_each)
    vm = LocalVirtualMachine(vm_spec, name, group, run_uri=spec.run_uri,
                             record=spec.record)
    vm.cpu_set = pinned
    vm.cpu_quota = split.QuotaCores(name)
    groups.setdefault(group, []).append(vm)
  return groups
