"""How a Local run splits this machine between its servers and its clients.

Each Local VM gets cores of its own, servers first (`AssignCores`). On a
machine whose cores the VMs take up entirely, with the clients on no more
cores than the servers (a 2-core machine: server on core 0, client on core
1), the load generator fills its core before a single-threaded server fills
its own: every answer would be the client's limit (`client_cpu`), never the
server's. There the server VMs get a CPU quota (`DEFAULT_SERVER_QUOTA` of
each of their cores, a cgroup the run creates and removes; cpu_quota.py):
the load generator, on a whole core, can then drive the server to its
quota, and the figure is a server figure for that quota (attribution's
`server_quota`), said so in the plan line, the samples
(`servers_cpu_quota`) and the summary. A machine with cores to spare keeps
the plain split, and so does a cap on a percentile (p99, ...): the quota
holds the server back in waits of milliseconds (README, "Why the quota's
period is 2 ms"), and a percentile cap would measure those waits, not the
server. `--local_server_cpu_quota` sets the quota (0: none).

Pure: the cores, the flag's value and whether this machine can make a CPU
cgroup come in as arguments.
"""

import dataclasses
from typing import Dict, List, Optional, Sequence, Tuple

from perfkitbenchmarker import errors
from perfkitbenchmarker import measurement
from perfkitbenchmarker import virtual_machine

# Half of each core: measured on a quiet 2-core machine, the load generator
# on the other core (redis-benchmark's two processes, or one memtier
# thread) then stays well under 90 % of its core while the server is held
# at its quota (README, "What you see").
DEFAULT_SERVER_QUOTA = 0.5
SERVER_GROUP = virtual_machine.SERVER_GROUP


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


def IsServer(vm_name: str) -> bool:
  return vm_name.rsplit('-', 1)[0] == SERVER_GROUP


@dataclasses.dataclass(frozen=True)
class Split:
  """The machine's cores per VM and the servers' CPU quota.

  Attributes:
    cores: vm name -> its cores (None: unpinned), servers first.
    machine_cores: how many cores this run may use.
    server_quota: the fraction of each of its cores a server VM may use
      (0.5: half of each), or None for no quota.
    why: why the quota is there or not, in words for the plan line.
    problem: a warning for the plan when a quota was wanted but this
      machine cannot make one ('' when none).
    short: vm name -> the cores its spec asked for, for each VM given fewer
      (AssignCores shrinks the largest requests until they fit).
  """
  cores: Dict[str, Optional[List[int]]]
  machine_cores: int
  server_quota: Optional[float] = None
  why: str = ''
  problem: str = ''
  short: Dict[str, int] = dataclasses.field(default_factory=dict)

  def QuotaCores(self, vm_name: str) -> Optional[float]:
    """The CPUs a VM's cgroup quota allows (None: no quota)."""
    if self.server_quota is None or not IsServer(vm_name):
      return None
    return self.server_quota * len(self.cores.get(vm_name) or
                                   range(self.machine_cores))

  def Line(self) -> str:
    """The plan's line, e.g. 'Local split of 2 cores: servers-0 on core 0
    held to 50 % of it by a CPU quota, clients-0 on core 1 (...)'."""
    parts = []
    for name, cores in self.cores.items():
      where = _Cores(cores)
      if name in self.short:  # A config's num_cpus this machine cannot give.
        where += f' instead of the {self.short[name]} cores it asked for'
      quota = self.QuotaCores(name)
      if quota is not None:
        where += (f' held to {100 * self.server_quota:g} % of '
                  f'{"it" if cores and len(cores) == 1 else "them"} by a '
                  'CPU quota')
      parts.append(f'{name} {where}')
    why = f' ({self.why})' if self.why else ''
    return (f'Local split of {self.machine_cores} core'
            f'{"" if self.machine_cores == 1 else "s"}: '
            f'{", ".join(parts)}{why}.')


def _Cores(cores: Optional[Sequence[int]]) -> str:
  if not cores:
    return 'unpinned'
  return (f'on core {cores[0]}' if len(cores) == 1 else
          f'on cores {",".join(map(str, cores))}')


def Plan(requests: Sequence[Tuple[str, Optional[int]]],
         machine_cores: Sequence[int], quota: Optional[float],
         can_make_quota: bool,
         cap_statistic: str = measurement.AVERAGE) -> Split:
  """The split of `machine_cores` for `requests` (servers first).

  Args:
    requests: (vm name, cores wanted or None) in placement order.
    machine_cores: the cores this process may use.
    quota: --local_server_cpu_quota: None for the default rule (module
      doc), 0 for none, else the fraction of each server core.
    can_make_quota: whether this machine lets the run make a CPU cgroup
      (root, a writable controller).
    cap_statistic: the statistic the latency cap bounds (--latency_cap_
      statistic): the default rule holds the server back only for the
      average.
  Raises:
    errors.UsageError: a quota asked for by flag that cannot be made here.
  """
  cores = AssignCores(requests, machine_cores)
  short = {name: asked for name, asked in requests
           if asked and cores[name] and len(cores[name]) < asked}
  return dataclasses.replace(
      _WithQuota(cores, len(machine_cores), quota, can_make_quota,
                 cap_statistic), short=short)


def _WithQuota(cores: Dict[str, Optional[List[int]]], count: int,
               quota: Optional[float], can_make_quota: bool,
               cap_statistic: str) -> Split:
  """Plan's split of the assigned `cores` (of `count`), with the servers'
  quota by Plan's rule."""
  if quota == 0:
    return Split(cores, count, None, 'no server quota: '
                 '--local_server_cpu_quota=0')
  if quota is not None:
    if not can_make_quota:
      raise errors.UsageError(
          f'--local_server_cpu_quota={quota:g} needs a CPU cgroup this '
          'machine does not let the run make (run as root, with the cgroup '
          'v1 cpu controller or v2 with cpu delegated); drop the flag.')
    return Split(cores, count, quota, '--local_server_cpu_quota')
  if not _ClientCanOutrunServer(cores, count):
    return Split(cores, count)
  why = ('the load generator would fill its core before the server filled '
         'its own')
  if cap_statistic != measurement.AVERAGE:
    # Measured under load with a high CPU weight: with the quota the lowest
    # p99 was 4.08 ms (at 4 connections), without it answers at 95-121k
    # ops/s had p99 repeats under 1 ms, the client at 66-71 % of its core.
    return Split(cores, count, None, (
        f'no server quota: a {cap_statistic} cap would measure the quota\'s '
        'throttling waits (milliseconds at this kernel\'s tick), not the '
        'server; at a high cap the load generator may fill its core first '
        '(client-bound); --local_server_cpu_quota sets a quota'))
  if not can_make_quota:
    return Split(cores, count, None, problem=(
        f'WARNING: on this {count}-core machine {why}, and no CPU quota can '
        'be made here to hold the server back (needs root and a writable '
        'cgroup cpu controller): the answer will likely be the client\'s '
        'limit (client-bound).'))
  return Split(cores, count, DEFAULT_SERVER_QUOTA,
               f'a whole core for the load generator so it can drive the '
               f'server to its limit; without the quota {why}')


def _ClientCanOutrunServer(cores: Dict[str, Optional[List[int]]],
                           count: int) -> bool:
  """Whether the plain split leaves the clients short: every VM pinned,
  every core taken, and the clients on no more cores than the servers."""
  if not cores or any(c is None for c in cores.values()):
    return False
  if sum(len(c) for c in cores.values()) < count:
    return False  # Cores to spare: the plain split stays.
  server = sum(len(c) for n, c in cores.items() if IsServer(n))
  client = sum(len(c) for n, c in cores.items() if not IsServer(n))
  return server > 0 and 0 < client <= server
