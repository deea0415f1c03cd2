"""/proc/<pid>/stat read one way: `Parse` in Python, `SHELL` in bash.

The CPU snapshots (load_generators/client_cpu.py), teardown's identity
checks (virtual_machine.KillProcess: a PID and its start time name one
process while the machine is up), the probes' group files
(probe_processes.py) and detached SSH jobs (remote_shell.py) read a
process's state, group, CPU time and start time through these two.
"""

import dataclasses
from typing import Optional

# bash defining `pstat PID`: sets the array `pf` to the fields after the
# command name (pf[0] state, pf[1] parent, pf[2] process group, pf[19]
# start time in clock ticks since boot); fails once the process is gone.
# Builtins only: it runs on machines being measured.
SHELL = ('pstat() { local l; { read -r l < "/proc/$1/stat"; } 2>/dev/null '
         '|| return 1; read -ra pf <<< "${l##*) }"; }; ')
# bash defining pstat and `alive P T`: process P runs and started at T; a
# zombie has exited, unless other threads of it still run.
ALIVE_SHELL = SHELL + (
    'alive() { local t; pstat "$1" && [ "${pf[19]}" = "$2" ] || return 1; '
    '[ "${pf[0]}" != Z ] && return 0; '
    't=$(grep -s "^Threads:" "/proc/$1/status"); t=${t##*[!0-9]}; '
    '[ "${t:-0}" -gt 1 ]; }; ')
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
  name may hold spaces and parentheses: it ends at the last ') '."""
  head, _, rest = line.rpartition(') ')
  pid, _, name = head.partition(' (')
  fields = rest.split()
  try:
    return Stat(int(pid), name, fields[0], int(fields[1]), int(fields[2]),
                int(fields[6]), float(fields[11]) + float(fields[12]),
                float(fields[19]),
                int(fields[36]) if len(fields) > 36 else None)
  except (ValueError, IndexError):
    return None
