"""/proc/<pid>/stat read one way: `Parse` (and `Read`) in Python, `SHELL`
in bash, both splitting the process's name off at the line's last ')'.

The CPU snapshots and the foreign-CPU scan (load_generators/client_cpu.py),
teardown's identity checks (virtual_machine.KillProcess: a PID and its
start time name one process while the machine is up), the probes' group
files (probe_processes.py), detached SSH jobs (remote_shell.py) and the
benches' CPU accounts (scripts/local_bench.py) read a process's state,
parent, group, CPU time and start time through these.
"""

import dataclasses
from typing import Optional

# The kernel writes a stat line as "<pid> (<name>) <state> <ppid> ...",
# where the name is any 15 bytes the process chose (spaces, ')', ') R 2 ',
# newlines), so the name ends at the line's LAST ')'; every reader, shell
# or Python, splits it there through the functions below.
#
# bash defining `pline FILE`, `ptail` and `pstat PID`, builtins only (they
# run on machines being measured):
#   pline FILE  sets `l` to the stat line in FILE, line breaks in the name
#               read as spaces (one line to print); fails once it is gone;
#   ptail       sets `pt` to what follows the name in `l`: ") S 1 ...";
#   pstat PID   sets the array `pf` to the fields after the name (pf[0]
#               state, pf[1] parent, pf[2] process group, pf[19] start time
#               in clock ticks since boot); fails once the process is gone.
SHELL = ('pline() { local m; l=; { IFS= read -r l && while IFS= read -r m; '
         'do l+=" $m"; done; } 2>/dev/null < "$1"; [ -n "$l" ]; }; '
         'ptail() { pt=${l%)*}; pt=${l:${#pt}}; }; '
         'pstat() { local l pt; pline "/proc/$1/stat" || return 1; ptail; '
         'read -ra pf <<< "${pt:1}"; }; ')
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
