"""CPU cgroups a test makes for itself, and always removes.

`CpuCgroup` creates a cgroup with the CPU controller (v1 under the `cpu`
mount, else v2 where its root delegates `cpu`), sets a CPU quota and/or a
weight, moves processes into it, and on `Remove` moves whatever is left
back to the parent and removes the directory. `Available()` says whether
this machine lets a test do that (root, a writable controller); tests skip
cleanly where the kernel lacks a version.

A test's own cgroups get a high weight (v1 cpu.shares 262144, v2 cpu.weight
10000): on a machine shared with other work the case under test then gets
the CPU it asks for (a hog takes its core, a quota'd server reaches its
quota), so the test decides on throttling and on-CPU counters, which other
load cannot fake.
"""

import os
import uuid
from typing import List, Optional

from perfkitbenchmarker.providers.local import cpu_quota

HIGH_WEIGHT_V1 = 262144
HIGH_WEIGHT_V2 = 10000
PERIOD_US = 100000


# One way to find the CPU controller: the Local provider's, which makes the
# server quota a default Local run on 2 cores holds its server to.
_Mounts = cpu_quota.Mounts
Version = cpu_quota.Version


def Available() -> bool:
  return Version() is not None


class CpuCgroup:
  """One cgroup of the test's own (a unique name under the CPU root)."""

  def __init__(self, quota_cores: Optional[float] = None, high_weight=True,
               prefix: str = 'pkb-test'):
    version = Version()
    if version is None:
      raise RuntimeError('no writable CPU cgroup controller here')
    v1, v2 = _Mounts()
    self.version = version
    root = v1 if version == 1 else v2
    self.path = os.path.join(root, f'{prefix}-{os.getpid()}-'
                             f'{uuid.uuid4().hex[:8]}')
    self.parent = root
    os.mkdir(self.path)
    try:
      if quota_cores is not None:
        self.SetQuota(quota_cores)
      if high_weight:
        if version == 1:
          self._Write('cpu.shares', str(HIGH_WEIGHT_V1))
        else:
          self._Write('cpu.weight', str(HIGH_WEIGHT_V2))
    except BaseException:
      self.Remove()
      raise

  def _Write(self, name: str, value: str) -> None:
    with open(os.path.join(self.path, name), 'w') as f:
      f.write(value)

  def SetWeight(self, tasks: float) -> None:
    """A weight worth `tasks` default tasks (v1 cpu.shares 1024 each, v2
    cpu.weight 100 each): enough for a share against other load without
    starving the run it disturbs, as the full high weight would."""
    if self.version == 1:
      self._Write('cpu.shares', str(int(1024 * tasks)))
    else:
      self._Write('cpu.weight', str(max(1, min(10000, int(100 * tasks)))))

  def SetQuota(self, cores: Optional[float],
               period_us: int = PERIOD_US) -> None:
    """`cores` CPUs per `period_us` (None: no quota)."""
    quota = -1 if cores is None else int(cores * period_us)
    if self.version == 1:
      self._Write('cpu.cfs_period_us', str(period_us))
      self._Write('cpu.cfs_quota_us', str(quota))
    else:
      self._Write('cpu.max', f'{"max" if quota < 0 else quota} {period_us}')

  def Stat(self) -> dict:
    """cpu.stat's counters (nr_periods, nr_throttled, ...)."""
    with open(os.path.join(self.path, 'cpu.stat')) as f:
      return {k: int(v) for k, v in (line.split() for line in f)}

  def Add(self, pid: int) -> None:
    """Moves process `pid` (all its threads) into the cgroup."""
    self._Write('cgroup.procs', str(int(pid)))

  def Pids(self) -> List[int]:
    try:
      with open(os.path.join(self.path, 'cgroup.procs')) as f:
        return [int(p) for p in f.read().split()]
    except OSError:
      return []

  def Throttled(self) -> int:
    """nr_throttled so far (how many periods the quota held it back)."""
    with open(os.path.join(self.path, 'cpu.stat')) as f:
      for line in f:
        key, _, value = line.partition(' ')
        if key == 'nr_throttled':
          return int(value)
    return 0

  def Remove(self) -> None:
    """Moves any process left back to the parent and removes the cgroup."""
    if not os.path.isdir(self.path):
      return
    for _ in range(20):
      pids = self.Pids()
      if not pids:
        break
      for pid in pids:
        try:
          with open(os.path.join(self.parent, 'cgroup.procs'), 'w') as f:
            f.write(str(pid))
        except OSError:
          pass  # It exited meanwhile.
    try:
      os.rmdir(self.path)
    except OSError:
      pass

  def __enter__(self) -> 'CpuCgroup':
    return self

  def __exit__(self, *exc) -> None:
    self.Remove()
