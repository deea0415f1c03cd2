"""Runs several load generator processes side by side on one client VM.

All processes of a probe start together from one shell script on the VM, each
with its stdout/stderr in its own file under the VM's scratch directory and
its own `timeout`, so none can outlive the probe. `timeout --foreground` keeps
them in the script's process group, so killing that group (SIGINT, deadline)
stops them too. A failing process is
reported with the tail of its stderr.

Secrets: the script goes to a 0600 file in the VM's 0700 scratch directory
and runs as `bash <file>` (it deletes itself at once), so the text of the
script is in no process's argv. Each tool's own argv (and that of `timeout`
and `taskset` before it) is readable in `ps`: a password goes in as
argv_secret.TOKEN with `secret=`, and linux_packages/argv_secret.py hands the
real one to the tool only.

Client CPU: /proc/stat is read when the processes start and again after
`cpu_window_s` (the load's test time) or when they all end, whichever comes
first, so a tool's idle start-up and tail (memtier's last second) do not
dilute the busy fraction of the client's cores. Each snapshot is preceded by
its wall-clock time, so the window actually measured is kept
(`cpu_window_s`) and can be checked against the load's test time.
"""

import dataclasses
import shlex
from typing import List, Optional, Sequence, Tuple

from perfkitbenchmarker import errors
from perfkitbenchmarker import vm_util
from perfkitbenchmarker.linux_packages import argv_secret


@dataclasses.dataclass(frozen=True)
class ProcessOutput:
  name: str
  stdout: str
  stderr: str
  returncode: int
  seconds: float
  # Busy share of the VM's cores over the load window (same for each process).
  cpu_busy_fraction: Optional[float] = None
  # Wall-clock seconds between the two /proc/stat snapshots of that window.
  cpu_window_s: Optional[float] = None


def _Snapshot(path: str) -> str:
  """Shell writing the time, then /proc/stat, to path (quoted)."""
  return f'{{ date +%s.%N; cat /proc/stat; }} > {path}'


def Script(base: str, pinned_commands: Sequence[str], timeout_s: float,
           cpu_window_s: Optional[float] = None,
           setup_lines: Sequence[str] = ()) -> str:
  """The shell script running `pinned_commands` (shell-quoted) side by side.

  `setup_lines` run first (e.g. exporting the secret argv_secret reads).
  """
  b = shlex.quote(base)
  lines = ['rm -f -- "$0"', *setup_lines, _Snapshot(f'{b}.stat0'), 'pids=()']
  if cpu_window_s:
    lines.append(f'( sleep {float(cpu_window_s):.3f}; '
                 f'{_Snapshot(f"{b}.stat1.tmp")} && '
                 f'mv -f {b}.stat1.tmp {b}.stat1 ) & sampler=$!')
  for i, command in enumerate(pinned_commands):
    lines.append(
        f'( s=$(date +%s.%N); timeout --foreground -s INT -k 5 '
        f'{int(timeout_s)} {command} > {b}.{i}.out 2> {b}.{i}.err; rc=$?; '
        f'e=$(date +%s.%N); echo "$rc $s $e" > {b}.{i}.rc ) & pids+=($!)')
  lines.append('for p in "${pids[@]}"; do wait "$p"; done')
  if cpu_window_s:
    lines.append(f'[ -e {b}.stat1 ] || {{ pkill -P "$sampler" 2>/dev/null; '
                 f'kill "$sampler" 2>/dev/null; {_Snapshot(f"{b}.stat1")}; }}'
                 '; wait')
  else:
    lines.append(_Snapshot(f'{b}.stat1'))
  return '\n'.join(lines) + '\n'


def CpuTimes(proc_stat: str, cpu_set: Optional[Sequence[int]]
             ) -> Tuple[float, float]:
  """(busy, total) jiffies of `cpu_set` (all cores if None) in /proc/stat."""
  wanted = {f'cpu{c}' for c in cpu_set} if cpu_set else {'cpu'}
  busy = total = 0.0
  for line in proc_stat.splitlines():
    fields = line.split()
    if not fields or fields[0] not in wanted:
      continue
    # user nice system idle iowait irq softirq steal
    values = [float(v) for v in fields[1:9]]
    total += sum(values)
    busy += sum(values) - values[3] - values[4]
  return busy, total


def BusyOverWindow(stat0: str, stat1: str, cpu_set: Optional[Sequence[int]]
                   ) -> Tuple[Optional[float], Optional[float]]:
  """(busy fraction, window seconds) between two timed /proc/stat snapshots.

  Each snapshot is `date +%s.%N` on its first line, then /proc/stat.
  """
  before = CpuTimes(stat0, cpu_set)
  after = CpuTimes(stat1, cpu_set)
  total = after[1] - before[1]
  busy = (after[0] - before[0]) / total if total > 0 else None
  window = float(stat1.split(None, 1)[0]) - float(stat0.split(None, 1)[0])
  return busy, window


def _BusyFraction(vm, base: str) -> Tuple[Optional[float], Optional[float]]:
  try:
    return BusyOverWindow(vm.ReadFile(f'{base}.stat0'),
                          vm.ReadFile(f'{base}.stat1'), vm.cpu_set)
  except (OSError, ValueError, IndexError, errors.Error):
    # No window figures: the caller measures around the probe.
    return None, None


def RunSideBySide(vm, name: str, commands: Sequence[Sequence[str]],
                  timeout_s: float, cpu_window_s: Optional[float] = None,
                  secret: Optional[str] = None) -> List[ProcessOutput]:
  """Starts every argv at once (pinned to the VM's cores) and waits for all.

  With `secret`, the argvs carry argv_secret.TOKEN where the password goes,
  and the tools get the secret without it ever being in their argv.
  """
  base = f'{vm.scratch_dir}/{name}'
  script_path = f'{base}.sh'
  if secret is None:
    shell_commands, setup = [vm.Pinned(vm_util.QuoteAll(argv))
                             for argv in commands], []
  else:
    shell_commands, setup = argv_secret.Wrap(vm, commands, secret)
  vm.WriteFile(script_path, Script(base, shell_commands, timeout_s,
                                   cpu_window_s, setup), 0o600)
  command = f'bash {shlex.quote(script_path)}'
  if hasattr(vm, 'RunDetached'):
    # Over SSH: the probe goes on if the connection drops, and is picked up.
    out, err, rc = vm.RunDetached(command, timeout_s + 30)
    vm_util.CheckedOutput(out, err, rc, command, name)
  else:
    vm.RemoteCommand(command, timeout=timeout_s + 30, what=name)
  busy, window = _BusyFraction(vm, base)
  outputs = []
  for i in range(len(commands)):
    rc_text = vm.ReadFile(f'{base}.{i}.rc').split()
    rc, start, end = int(rc_text[0]), float(rc_text[1]), float(rc_text[2])
    outputs.append(ProcessOutput(
        name=f'{name}.{i}', stdout=vm.ReadFile(f'{base}.{i}.out'),
        stderr=vm.ReadFile(f'{base}.{i}.err'), returncode=rc,
        seconds=end - start, cpu_busy_fraction=busy, cpu_window_s=window))
  for i, out in enumerate(outputs):
    if out.returncode != 0:
      program = commands[i][0].rsplit('/', 1)[-1]
      side_by_side = (f' ({len(commands)} processes side by side)'
                      if len(commands) > 1 else '')
      reason = (f'timed out after {int(timeout_s)} s{side_by_side}'
                if out.returncode in (124, 137) else
                f'exited with status {out.returncode}')
      raise errors.ProcessError(
          f'{program} on {vm.name} {reason}: '
          f'{vm_util.Tail(out.stderr) or vm_util.Tail(out.stdout) or "no output"}')
  return outputs
