"""A Local server VM's CPU quota: a cgroup the run makes, records and removes.

`LocalCpuQuota` is a resource of the run record (kind `local_cpu_quota`): a
cgroup directory under the CPU controller (cgroup v1's `cpu` mount, else v2
where its root delegates `cpu`), named `pkb-<run_uri>-<vm>`, with a CFS
quota. It is recorded before the directory is made, so teardown removes it
whatever ended the run (`--run_stage=teardown --run_uri=X` after a kill
too): any process still in it goes back to the parent, then the directory
goes. A record read back names a cgroup only of that shape, directly under
this machine's CPU controller, for that run; anything else is refused and
left alone.

A command joins the cgroup by its shell writing its own PID into
`cgroup.procs` before it execs the command (`EnterCommand`), so the server
and whatever it forks run under the quota from their first instruction.

The period is the shortest that holds half a CPU (PERIOD_US, the kernel's
smallest quota being 1 ms) so that a throttled server waits milliseconds,
not up to half the kernel default's 100 ms period. The waits are still
stalls, not a slower CPU: a server that never blocks is held to its quota
only at scheduler ticks (4 ms at 250 Hz), and each wait holds one request
per connection, so at saturation they reach the p99 (README, "Why the
quota's period is 2 ms"; scripts/bench_quota_period.py measures periods
side by side).
"""

import contextlib
import math
import os
import re
import shlex
from typing import Optional, Tuple

from perfkitbenchmarker import errors
from perfkitbenchmarker import record_checks
from perfkitbenchmarker import resource

KIND = 'local_cpu_quota'
PERIOD_US = 2000
MIN_QUOTA_US = 1000  # The kernel's smallest quota (and period).
NAME_PREFIX = 'pkb-'
MOUNTINFO = '/proc/self/mountinfo'


def Mounts(mountinfo: str = MOUNTINFO) -> Tuple[Optional[str], Optional[str]]:
  """(cgroup v1 cpu mount or None, cgroup v2 mount or None)."""
  v1 = v2 = None
  try:
    with open(mountinfo) as f:
      lines = f.readlines()
  except OSError:
    return None, None
  for line in lines:
    fields = line.split()
    try:
      dash = fields.index('-')
    except ValueError:
      continue
    kind, options = fields[dash + 1], fields[-1].split(',')
    if kind == 'cgroup' and 'cpu' in options and v1 is None:
      v1 = fields[4]
    elif kind == 'cgroup2' and v2 is None:
      v2 = fields[4]
  return v1, v2


def Version() -> Optional[int]:
  """1 or 2: the cgroup version this process can make CPU cgroups in, or
  None (not root, or no writable CPU controller)."""
  root = Root()
  return None if root is None else 1 if root == Mounts()[0] else 2


def Root() -> Optional[str]:
  """The CPU controller's root directory the run's cgroups go under, or
  None where Version is None."""
  if os.geteuid() != 0:
    return None
  v1, v2 = Mounts()
  if v1 and os.access(v1, os.W_OK):
    return v1
  if v2:
    with contextlib.suppress(OSError), open(
        os.path.join(v2, 'cgroup.subtree_control')) as f:
      if 'cpu' in f.read().split():
        return v2
  return None


def CgroupName(run_uri: str, vm_name: str) -> str:
  return f'{NAME_PREFIX}{run_uri}-{vm_name}'


def EnterCommand(path: str, command: str) -> str:
  """`command` (shell text starting with a program) run inside the cgroup
  at `path`: its shell joins the cgroup, then execs it."""
  procs = shlex.quote(os.path.join(path, 'cgroup.procs'))
  return f'sh -c \'echo $$ > "$0" && exec "$@"\' {procs} {command}'


def _Write(path: str, name: str, value: str) -> None:
  with open(os.path.join(path, name), 'w') as f:
    f.write(value)


class LocalCpuQuota(resource.BaseResource):
  """One server VM's cgroup with a CPU quota of `quota_cores` CPUs."""

  KIND = KIND
  CREATE_RETRIES = 1

  def __init__(self, run_uri: str, vm_name: str, quota_cores: float,
               path: str = '', **kwargs):
    super().__init__(CgroupName(run_uri, vm_name), **kwargs)
    root = Root()
    if not path and root is None:
      raise errors.PrerequisiteError(
          'a Local server CPU quota needs a CPU cgroup this machine does '
          'not let the run make (root, a writable cgroup cpu controller)')
    self.path = path or os.path.join(root, self.name)
    self.quota_cores = quota_cores

  def RecordData(self):
    return {'path': self.path, 'quota_cores': self.quota_cores,
            'period_us': self.Period()[1]}

  def Period(self) -> Tuple[int, int]:
    """(quota, period) in microseconds: PERIOD_US, longer only where the
    quota would fall under the kernel's smallest."""
    period = max(PERIOD_US, math.ceil(MIN_QUOTA_US / self.quota_cores))
    return max(MIN_QUOTA_US, round(self.quota_cores * period)), period

  def _Create(self) -> None:
    quota_us, period_us = self.Period()
    try:
      os.mkdir(self.path, 0o755)
      if os.path.exists(os.path.join(self.path, 'cpu.cfs_quota_us')):
        _Write(self.path, 'cpu.cfs_period_us', str(period_us))
        _Write(self.path, 'cpu.cfs_quota_us', str(quota_us))
      else:
        _Write(self.path, 'cpu.max', f'{quota_us} {period_us}')
    except OSError as e:  # E.g. a parent cgroup's own quota refuses it.
      raise errors.ResourceError(
          f'could not make the server CPU quota {self.path} '
          f'({quota_us} us per {period_us} us): {e.strerror or e}; '
          '--local_server_cpu_quota=0 runs without it') from None

  def _Delete(self) -> None:
    if not os.path.isdir(self.path):
      return
    parent = os.path.dirname(self.path)
    # Whatever the run could not stop leaves the quota, not the machine's
    # books: it goes back to the parent (bounded: a forking process could
    # keep adding).
    for _ in range(20):
      try:
        with open(os.path.join(self.path, 'cgroup.procs')) as f:
          pids = f.read().split()
      except OSError:
        pids = []
      if not pids:
        break
      for pid in pids:
        with contextlib.suppress(OSError):  # It exited meanwhile.
          _Write(parent, 'cgroup.procs', pid)
    try:
      os.rmdir(self.path)
    except FileNotFoundError:
      pass
    except OSError as e:
      raise resource.RetryableError(
          f'could not remove cgroup {self.path}: {e.strerror}') from None

  class Fields(record_checks.Fields):
    path: str
    quota_cores: float = 0.0

  @classmethod
  def FromRecord(cls, entry, record) -> 'LocalCpuQuota':
    fields = record_checks.Parse(cls.Fields, entry, record)
    problem = PathProblem(fields.path, record.run_uri, entry['name'])
    if problem:
      raise record_checks.RecordRefused(
          f'{KIND} {entry["name"]}: {problem}; left alone')
    vm_name = entry['name'][len(CgroupName(record.run_uri, '')):]
    return cls(record.run_uri, vm_name, fields.quota_cores, path=fields.path,
               record=record)


def PathProblem(path: str, run_uri: str, name: str) -> str:
  """What is wrong with a recorded cgroup path ('' if nothing): it must be
  the run's own name directly under this machine's CPU controller."""
  if not re.fullmatch(re.escape(CgroupName(run_uri, '')) + r'[a-z0-9-]+',
                      name or ''):
    return f'{name!r} is not a cgroup name of run {run_uri}'
  roots = [m for m in Mounts() if m]
  if os.path.dirname(path) not in roots or os.path.basename(path) != name:
    return (f'path {path!r} is not {name} directly under this machine\'s '
            f'CPU cgroup controller ({", ".join(roots) or "none mounted"})')
  if os.path.islink(path):
    return f'path {path!r} is a symlink'
  return ''


resource.RegisterKind(KIND, LocalCpuQuota.FromRecord)
