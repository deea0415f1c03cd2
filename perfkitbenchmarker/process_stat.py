"""/proc/<pid>/stat read one way: `Parse` (and `Read`) in Python, and in
bash scripts/process_stat.sh (which the scripts that read a process
include), both splitting the process's name off at the line's last ')'.

The CPU snapshots and the foreign-CPU scan (load_generators/client_cpu.py,
scripts/snapshot.sh), the identity checks of the processes a run owns
(run_processes.py, scripts/run_processes.sh) and the benches' CPU accounts
(scripts/local_bench.py) read a process's state, parent, group, CPU time
and start time through these.
"""

import dataclasses
from typing import Optional

# The kernel writes a stat line as "<pid> (<name>) <state> <ppid> ...",
# where the name is any 15 bytes the process chose (spaces, ')', ') R 2 ',
# newlines), so the name ends at the line's LAST ')'; every reader, shell
# or Python, splits it there: Parse below, and process_stat.sh's `pline`,
# `ptail`, `pstat PID` and `alive PID START`.
_PF_KTHREAD = 0x00200000


@dataclasses.dataclass(frozen=True)
class Stat:
  """The fields of one stat line (a process's, or a thread's) we read."""
  pid: int
  name: str
  state: str  # 'Z': a zombie
  ppid: int
  group: int  # its process group
  flags: int
  cpu_ticks: float  # user + system
  start_ticks: float  # since boot
  processor: Optional[int]  # the CPU it last ran on

  @property
  def kernel_thread(self) -> bool:
    return bool(self.flags & _PF_KTHREAD) or 2 in (self.pid, self.ppid)


def Parse(line: str) -> Optional[Stat]:
  """One stat line's fields; None when it is not one (e.g. cut short). The
  name may hold spaces, parentheses and line breaks: it ends at the last
  ')', the kernel's own rule."""
  head, _, rest = line.rpartition(')')
  pid, _, name = head.partition(' (')
  fields = rest.split()
  try:
    return Stat(int(pid), name, fields[0], int(fields[1]), int(fields[2]),
                int(fields[6]), float(fields[11]) + float(fields[12]),
                float(fields[19]),
                int(fields[36]) if len(fields) > 36 else None)
  except (ValueError, IndexError):
    return None


def Read(pid: int) -> Optional[Stat]:
  """This machine's /proc/<pid>/stat parsed; None once the process is
  gone."""
  try:
    with open(f'/proc/{int(pid)}/stat', 'rb') as f:
      return Parse(f.read().decode('utf-8', 'surrogateescape'))
  except OSError:
    return None
