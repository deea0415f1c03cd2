"""Local VMs: processes on this machine, each VM pinned to its own cores.

A Local VM is a scratch directory plus a set of CPU cores. Its commands run as
local processes (bash -c) in that directory, under `taskset` when the VM has
cores of its own. Servers get the first cores and clients the next, so on a
2-core machine the server runs on core 0 and the client on core 1.

Local VMs have no price of their own; the benchmark prices them as the catalog
machine type named by --local_priced_as and says so in the metadata.
"""

import os
import uuid
from typing import Annotated, Dict, List, Optional, Sequence, Tuple

from perfkitbenchmarker import errors
from perfkitbenchmarker import own_dirs
from perfkitbenchmarker import record_checks
from perfkitbenchmarker import resource
from perfkitbenchmarker import virtual_machine
from perfkitbenchmarker import vm_util

CLOUD = 'Local'
SCRATCH_ROOT = os.environ.get('PKB_LOCAL_SCRATCH', '/tmp')


class LocalVirtualMachine(virtual_machine.BaseVirtualMachine):
  """A VM that is a directory and some cores of this machine."""

  CLOUD = CLOUD
  KIND = 'local_vm'

  def __init__(self, spec, name, group_name, run_uri: str = '', **kwargs):
    super().__init__(spec, name, group_name, **kwargs)
    self.scratch_dir = os.path.join(SCRATCH_ROOT, f'pkb-{run_uri}', name)
    self.ip_address = '127.0.0.1'
    self.internal_ip = '127.0.0.1'

  def _Create(self) -> None:
    # Made fresh (0700, no symlink followed) or reused only when ours: the
    # shards' configs and the argv_secret library live here.
    own_dirs.MakeOwnDir(self.scratch_dir, SCRATCH_ROOT)

  def _Delete(self) -> None:
    # Only ever remove our own scratch directories (another user's, or one
    # others can write to, is refused in one line and left alone).
    if f'{os.sep}pkb-' in self.scratch_dir and os.path.lexists(
        self.scratch_dir):
      own_dirs.CheckOwnDir(os.path.dirname(self.scratch_dir))
      # Not while a process still works in it (a shard that could not be
      # stopped): its config and pidfile are how a later teardown finds it.
      own_dirs.RemoveOwnDir(self.scratch_dir)
      parent = os.path.dirname(self.scratch_dir)
      try:
        os.rmdir(parent)
      except OSError:
        pass

  def _Exists(self) -> bool:
    return os.path.isdir(self.scratch_dir)

  def RemoteCommandWithReturnCode(self, command, timeout=None, env=None,
                                  stdin=None):
    cwd = self.scratch_dir if os.path.isdir(self.scratch_dir) else None
    return vm_util.RunLocal(command, cwd=cwd, timeout=timeout, env=env,
                            stdin=stdin)

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
    metadata = super().GetResourceMetadata()
    metadata['cpu_set'] = ','.join(map(str, self.cpu_set or [])) or 'unpinned'
    return metadata

  class Fields(record_checks.Fields):
    # Only a directory inside this run's scratch root is ever removed.
    scratch_dir: Annotated[str, record_checks.WithRecord(
        lambda path, record: record_checks.LocalPathInside(
            path, [RunScratchRoot(record.run_uri)]))]
    group: str = ''
    machine_type: str = 'local'
    num_cpus: Optional[int] = None
    memory_mib: Optional[int] = None
    cpu_set: record_checks.Cores = None

  @classmethod
  def FromRecord(cls, entry, record) -> 'LocalVirtualMachine':
    fields = record_checks.Parse(cls.Fields, entry, record)
    try:  # A directory someone else made or can write to is not the run's.
      for path in (os.path.dirname(fields.scratch_dir), fields.scratch_dir):
        own_dirs.CheckOwnDirIfExists(path)
    except own_dirs.NotOwnDir as e:
      raise record_checks.RecordRefused(
          f'{cls.KIND} {entry["name"]}: {e}') from None
    vm = cls(virtual_machine.VmSpec(cloud=CLOUD, num_cpus=fields.num_cpus,
                                    machine_type=fields.machine_type),
             entry['name'], fields.group)
    vm.scratch_dir, vm.memory_mib = fields.scratch_dir, fields.memory_mib
    vm.cpu_set, vm.created = fields.cpu_set, True
    return vm


resource.RegisterKind(LocalVirtualMachine.KIND, LocalVirtualMachine.FromRecord)


def RunScratchRoot(run_uri: str) -> str:
  """Where a run's Local VMs keep their scratch directories."""
  return os.path.join(SCRATCH_ROOT, f'pkb-{run_uri}')


def CheckRunDirs(run_uri: str, vm_names: Sequence[str] = ()) -> None:
  """Refuses, before anything is recorded or made, a run whose scratch
  directories exist and are not this user's own (own_dirs): another user
  could have planted what the run would load or signal there."""
  if os.path.exists(SCRATCH_ROOT):
    own_dirs.CheckRoot(SCRATCH_ROOT)
  root = RunScratchRoot(run_uri)
  own_dirs.CheckOwnDirIfExists(root)
  if os.path.isdir(root):
    vm_names = sorted(set(vm_names) | set(os.listdir(root)))
  for name in vm_names:
    path = os.path.join(root, name)
    if os.path.isdir(path) or os.path.islink(path):
      own_dirs.CheckOwnDir(path)


def AvailableCores() -> List[int]:
  return sorted(os.sched_getaffinity(0))


def AssignCores(requests: Sequence[Tuple[str, Optional[int]]],
                cores: Sequence[int]) -> Dict[str, Optional[List[int]]]:
  """Gives each VM its own cores when there are enough.

  Args:
    requests: (vm name, cores wanted or None) in placement order, servers
      first.
    cores: the cores this process may use.
  Returns:
    vm name -> list of cores, or None (unpinned) when the machine has too few
    cores for every VM to have at least one of its own.
  """
  cores = list(cores)
  if len(requests) > len(cores) or not requests:
    return {name: None for name, _ in requests}
  wanted = [max(1, n or 1) for _, n in requests]
  # Shrink the largest requests until they fit; every VM keeps >= 1 core.
  while sum(wanted) > len(cores):
    wanted[wanted.index(max(wanted))] -= 1
  assignment, start = {}, 0
  for (name, _), count in zip(requests, wanted):
    assignment[name] = cores[start:start + count]
    start += count
  return assignment


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


def HostMemoryMib() -> int:
  with open('/proc/meminfo') as f:
    for line in f:
      if line.startswith('MemTotal:'):
        return int(line.split()[1]) // 1024
  return 1024


def NewRunUri() -> str:
  return uuid.uuid4().hex[:8]


def PlannedCores(spec, cores: Optional[Sequence[int]] = None
                 ) -> Dict[str, Optional[List[int]]]:
  """VM name (servers-0, clients-0, ...) -> the cores it will be pinned to
  (None: unpinned), as ConstructVms places them: servers first."""
  group_specs = spec.GroupSpecs()
  counts = spec.GroupCounts()
  order = sorted(group_specs, key=lambda g: (g != 'servers', g))
  requests = [(f'{group}-{i}', group_specs[group].num_cpus)
              for group in order for i in range(counts[group])]
  return AssignCores(requests, AvailableCores() if cores is None else cores)


def ConstructVms(spec) -> Dict[str, List[LocalVirtualMachine]]:
  """Builds the run's Local VMs, servers placed first on the cores."""
  import dataclasses  # pylint: disable=g-import-not-at-top
  group_specs = spec.GroupSpecs()
  counts = spec.GroupCounts()
  order = sorted(group_specs, key=lambda g: (g != 'servers', g))
  requests = [(f'{group}-{i}', group_specs[group].num_cpus)
              for group in order for i in range(counts[group])]
  CheckRunDirs(spec.run_uri, [name for name, _ in requests])
  cores = AvailableCores()
  assignment = PlannedCores(spec, cores)
  memory_each = HostMemoryMib() // max(1, len(requests))
  groups: Dict[str, List[LocalVirtualMachine]] = {}
  for group in order:
    for i in range(counts[group]):
      name = f'{group}-{i}'
      vm_spec = group_specs[group]
      pinned = assignment[name]
      vm_spec = dataclasses.replace(
          vm_spec,
          num_cpus=len(pinned) if pinned else (vm_spec.num_cpus or len(cores)),
          memory_mib=vm_spec.memory_mib or memory_each)
      vm = LocalVirtualMachine(vm_spec, name, group, run_uri=spec.run_uri,
                               record=spec.record)
      vm.cpu_set = pinned
      groups.setdefault(group, []).append(vm)
  return groups
