"""Runs several load generator processes side by side on one client VM.

All processes of a probe start together from one shell script on the VM, each
with its stdout/stderr in its own file under the VM's scratch directory and
its own `timeout`, so none can outlive the probe. `timeout --foreground` keeps
them in the script's process group, so killing that group (SIGINT, deadline)
stops them too. A failing process is
reported with the tail of its stderr.
"""

import dataclasses
from typing import List, Sequence

from perfkitbenchmarker import errors
from perfkitbenchmarker import vm_util


@dataclasses.dataclass(frozen=True)
class ProcessOutput:
  name: str
  stdout: str
  stderr: str
  returncode: int
  seconds: float


def RunSideBySide(vm, name: str, commands: Sequence[Sequence[str]],
                  timeout_s: float) -> List[ProcessOutput]:
  """Starts every argv at once (pinned to the VM's cores) and waits for all."""
  base = f'{vm.scratch_dir}/{name}'
  lines = ['pids=()']
  for i, argv in enumerate(commands):
    command = vm.Pinned(vm_util.QuoteAll(argv))
    lines.append(
        f'( s=$(date +%s.%N); timeout --foreground -s INT -k 5 {int(timeout_s)} {command} '
        f'> {base}.{i}.out 2> {base}.{i}.err; rc=$?; e=$(date +%s.%N); '
        f'echo "$rc $s $e" > {base}.{i}.rc ) & pids+=($!)')
  lines.append('for p in "${pids[@]}"; do wait "$p"; done')
  script = '\n'.join(lines)
  if hasattr(vm, 'RunDetached'):
    # Over SSH: the probe goes on if the connection drops, and is picked up.
    out, err, rc = vm.RunDetached(script, timeout_s + 30)
    vm_util.CheckedOutput(out, err, rc, script, name)
  else:
    vm.RemoteCommand(script, timeout=timeout_s + 30, what=name)
  outputs = []
  for i in range(len(commands)):
    rc_text = vm.ReadFile(f'{base}.{i}.rc').split()
    rc, start, end = int(rc_text[0]), float(rc_text[1]), float(rc_text[2])
    outputs.append(ProcessOutput(
        name=f'{name}.{i}', stdout=vm.ReadFile(f'{base}.{i}.out'),
        stderr=vm.ReadFile(f'{base}.{i}.err'), returncode=rc,
        seconds=end - start))
  for i, out in enumerate(outputs):
    if out.returncode != 0:
      program = commands[i][0].rsplit('/', 1)[-1]
      reason = ('timed out' if out.returncode in (124, 137) else
                f'exited with status {out.returncode}')
      raise errors.ProcessError(
          f'{program} on {vm.name} {reason}: '
          f'{vm_util.Tail(out.stderr) or vm_util.Tail(out.stdout) or "no output"}')
  return outputs
