"""Runs several load generator processes side by side on one client VM.

All processes of a probe start together from one shell script on the VM, each
with its stdout/stderr in its own file under the VM's scratch directory and
its own `timeout`, so none can outlive the probe. The probe is a
`probe_processes` record entry before it starts, and the script writes down
the process group it runs in, so cleanup and teardown stop whatever of it a
dead run left behind. `timeout --foreground` keeps them in the script's
process group, so killing that group (SIGINT, deadline) stops them too. A
failing process is reported with the tail of its stderr.

One trip each way: the script ends by printing one bundle on its stdout
(every process's exit code, times, stdout and stderr, the CPU snapshots, and
any files the caller names, such as memtier's JSON; base64, one per line),
so over SSH a probe is one detached job (ssh_jobs.py: one round trip to
start it with the script on stdin, one blocking one to collect the bundle),
and on a Local VM one local command.

Secrets: over SSH the script travels on stdin into a 0600 file of the VM's
0700 scratch directory; locally it is written there; either way it runs as
`bash <file>` and deletes itself at once, so its text is in no process's
argv. Each tool's own argv (and that of `timeout` and `taskset` before it) is
readable in `ps`: a password goes in as argv_secret.TOKEN with `secret=`,
and linux_packages/argv_secret.py hands the real one to the tool only.

Client CPU: a client_cpu snapshot of the load processes is taken when they
start and again after `cpu_window_s` (the load's test time) or, without a
window, every `sample_every_s` while they run (the last one before they end
counts), so a tool's idle start-up and tail (memtier's last second) do not
dilute the figures.
"""

import base64
import dataclasses
import json
import re
import shlex
import signal
from typing import Dict, List, Optional, Sequence, Tuple

from perfkitbenchmarker import errors
from perfkitbenchmarker import evidence
from perfkitbenchmarker import probe_processes
from perfkitbenchmarker import shell_scripts
from perfkitbenchmarker import terminal_text
from perfkitbenchmarker import vm_util
from perfkitbenchmarker.linux_packages import argv_secret
from perfkitbenchmarker.load_generators import client_cpu
from perfkitbenchmarker.load_generators import memtier_results

BUNDLE_END = '@pkb-bundle-end'
# The line scripts/probe.sh puts in place of what it left out of a tool's
# stderr past its bound (ERR_MAX there).
CUT_MARK = '@pkb-cut '


@dataclasses.dataclass(frozen=True)
class ProcessOutput:
  name: str
  stdout: str
  stderr: str
  returncode: int
  seconds: float
  # STOPPED_AT_BOUND when the probe stopped it at its stop_after_s (what it
  # printed until then is what it measured), else ''.
  stopped: str = ''


@dataclasses.dataclass(frozen=True)
class ProbeRun:
  """What one RunProbe brought back."""
  outputs: Tuple[ProcessOutput, ...]
  files: Dict[str, str]  # path -> text, for the paths the caller named
  cpu: Optional[client_cpu.ClientCpu]  # over the load window
  # Where the probe's evidence is kept, relative to the run directory
  # (evidence.py); None outside a run.
  raw_output: Optional[str] = None


# What scripts/probe.sh's BASE.<i>.stopped begins with: why it stopped a
# command (STOP_ON, IDLE_ON, STOP_AFTER_US there).
STOPPED_AT_ERROR = 'error'
STOPPED_IDLE = 'idle'
STOPPED_AT_BOUND = 'bound'


@dataclasses.dataclass(frozen=True)
class Idle:
  """A tool that printed only `words` on its stdout (its progress line of
  an interval with no reply) for `seconds` is stopped (probe.sh's IDLE_ON)."""
  words: str
  seconds: float


def SampleEvery(duration_s: float) -> float:
  """How often to snapshot a probe of about `duration_s` without a window:
  a tenth of it, within 0.2-1 s (each snapshot costs a few processes)."""
  return min(1.0, max(0.2, duration_s / 10.0))


def Script(base: str, pinned_commands: Sequence[str], timeout_s: float,
           cpu_window_s: Optional[float] = None,
           setup_lines: Sequence[str] = (), files: Sequence[str] = (),
           sample_every_s: float = 0.5, run_root: str = '',
           own_pid: str = '', stop_on: str = '',
           idle: Optional[Idle] = None,
           stop_after_s: Optional[float] = None) -> str:
  """The shell script running `pinned_commands` (shell-quoted) side by side:
  scripts/probe.sh (what it does: there) with its arguments.

  `setup_lines` run first (e.g. argv_secret's unexported password variable).
  The script prints the bundle `ParseBundle` reads; `files` (paths) are in
  it too. `run_root`: the directory every process of the run works under
  (the snapshots count the processes that do not as foreign). `stop_on`:
  text that stops a command whose stderr says it (probe.sh's STOP_ON);
  `idle`, one that prints nothing else for that long (IDLE_ON);
  `stop_after_s`, every command still running then (STOP_AFTER_US).
  """
  window_us = (int(round(float(cpu_window_s) * 1e6)) if cpu_window_s
               else '')
  stops = []
  if stop_on:
    stops.append(f'STOP_ON={shlex.quote(stop_on)}')
  if idle:
    stops += [f'IDLE_ON={shlex.quote(idle.words)}',
              f'IDLE_US={int(round(idle.seconds * 1e6))}']
  if stop_after_s:
    stops.append(f'STOP_AFTER_US={int(round(stop_after_s * 1e6))}')
  setup_lines = [*setup_lines, *stops]
  return ''.join(f'{line}\n' for line in setup_lines) + (
      shell_scripts.Sourced(
          'probe.sh', base, int(timeout_s), window_us,
          f'{float(sample_every_s):.3f}', run_root, int(own_pid or 0),
          len(pinned_commands), *pinned_commands, *files))


def ParseBundle(text: str) -> Dict[str, str]:
  """The script's bundle: key -> text.

  Raises:
    errors.ProcessError: the bundle is incomplete (the script was killed).
  """
  parts = {}
  complete = False
  for line in text.splitlines():
    if line == BUNDLE_END:
      complete = True
      continue
    key, _, value = line.partition(' ')
    if key:
      parts[key] = base64.b64decode(value).decode(errors='replace')
  if not complete:
    raise errors.ProcessError('the probe script ended before it reported '
                              f'(output: {vm_util.Tail(text, 2) or "none"})')
  return parts


def RunProbe(vm, name: str, commands: Sequence[Sequence[str]],
             timeout_s: float, cpu_window_s: Optional[float] = None,
             secret: Optional[str] = None, files: Sequence[str] = (),
             sample_every_s: float = 0.5,
             manifest: Optional[Dict[str, object]] = None,
             timeout_hint: str = '', stop_on: str = '',
             idle: Optional[Idle] = None,
             stop_after_s: Optional[float] = None) -> ProbeRun:
  """Starts every argv at once (pinned to the VM's cores) and waits for all.

  With `secret`, the argvs carry argv_secret.TOKEN where the password goes,
  and the tools get the secret without it ever being in their argv. `files`
  are read back in the same trip (e.g. memtier's JSON). Everything brought
  back is kept in the run directory (evidence.py), with `manifest` (what a
  recomputation needs to know of the probe) as probe.json. `timeout_hint`
  follows 'timed out after N s' when the bound ended a process (what sets
  it, when that is not plain). `stop_on`: text on a process's stderr that
  stops it at once (the probe's next sample) rather than at its bound: an
  error reply the tool retries and the run refuses anyway. `idle`: a
  process that printed only its words on stdout for its seconds is
  stopped and fails as the server's stopping to answer. `stop_after_s`:
  processes still running then are stopped (their ProcessOutput.stopped
  says so), not failed: a request-count tool planned for a rate the
  server no longer serves; what they printed is what they measured.
  """
  base = f'{vm.scratch_dir}/{name}'
  if secret is None:
    shell_commands, setup = [vm.Pinned(vm_util.QuoteAll(argv))
                             for argv in commands], []
  else:
    shell_commands, setup = argv_secret.Wrap(vm, commands, secret)
  script = Script(base, shell_commands, timeout_s, cpu_window_s, setup,
                  files, sample_every_s, client_cpu.RunRoot(vm),
                  client_cpu.OwnPid(vm), stop_on, idle, stop_after_s)
  # In the run record before it starts, its process group written down as
  # it starts, so cleanup and teardown can stop whatever of it outlives the
  # run (probe_processes).
  with probe_processes.Marked(vm, name) as probe:
    script = probe.prefix + script
    if hasattr(vm, 'RunDetached'):
      # Over SSH: the probe goes on if the connection drops, and is picked
      # up.
      out, err, rc = vm.RunDetached(script, timeout_s + 30)
      what = f'{name} on {vm.name}'
    else:
      script_path = f'{base}.sh'
      vm.WriteFile(script_path, script, 0o600)
      command = f'bash {shlex.quote(script_path)}'
      out, err, rc = vm.RemoteCommandWithReturnCode(command,
                                                    timeout=timeout_s + 30)
      what = command
  vm_util.CheckedOutput(out, err, rc, what, name)
  bundle = ParseBundle(out)
  raw_output = _KeepEvidence(vm, name, commands, timeout_s, files, bundle,
                             secret, manifest)
  cpu = client_cpu.MeasureText(bundle.get('stat0', ''),
                               bundle.get('stat1', ''), vm.cpu_set)
  outputs = []
  for i in range(len(commands)):
    rc_text = bundle.get(f'rc.{i}', '').split()
    if len(rc_text) < 3:
      raise errors.ProcessError(
          f'{commands[i][0].rsplit("/", 1)[-1]} on {vm.name} left no exit '
          f'status ({_NoStatusReason(vm, err)})')
    code, start, end = int(rc_text[0]), float(rc_text[1]), float(rc_text[2])
    why = bundle.get(f'stop.{i}', '').split(' ', 1)[0].strip()
    outputs.append(ProcessOutput(
        name=f'{name}.{i}', stdout=bundle.get(f'out.{i}', ''),
        stderr=bundle.get(f'err.{i}', ''), returncode=code,
        seconds=end - start,
        stopped=STOPPED_AT_BOUND if why == STOPPED_AT_BOUND else ''))
  for i, output in enumerate(outputs):
    why, _, seen = bundle.get(f'stop.{i}', '').strip().partition(' ')
    if output.returncode != 0 and not output.stopped:
      program = commands[i][0].rsplit('/', 1)[-1]
      side_by_side = (f' ({len(commands)} processes side by side)'
                      if len(commands) > 1 else '')
      reason = f'exited with status {output.returncode}'
      # `timeout` exits 124 at its bound (137 when its KILL 5 s later was
      # needed) and passes a process killed by a signal on as 128 + its
      # number: a memtier killed 0.5 s in is no timeout.
      if output.returncode == 124 or (output.returncode == 137 and
                                      output.seconds >= timeout_s):
        reason = (f'timed out after {int(timeout_s)} s{side_by_side}'
                  f'{timeout_hint}{_Stalled(output.stderr)}')
      elif why == STOPPED_IDLE:
        quiet = f' in its last {idle.seconds:g} s' if idle else ''
        reason = (f'was stopped after {output.seconds:.1f} s, no reply'
                  f'{quiet} (the server stopped answering): '
                  f'{" ".join(seen.split()) or "no output"}')
        raise errors.ProcessError(f'{program} on {vm.name} {reason}')
      elif why == STOPPED_AT_ERROR:
        reason = (f'was stopped after {output.seconds:.1f} s at its first '
                  'error reply, which it retries until its bound')
      elif 128 < output.returncode < 128 + signal.NSIG:
        number = output.returncode - 128
        try:
          name = signal.Signals(number).name
        except ValueError:
          name = f'signal {number}'
        reason = (f'was killed by {name} after {output.seconds:.1f} s '
                  f'(exit status {output.returncode})')
      said = (_Said(output.stderr) or vm_util.Tail(output.stdout) or
              'no output')
      raise errors.ProcessError(
          f'{program} on {vm.name} {reason}: {said}'
          f'{memtier_results.FailureHint(said)}')
  return ProbeRun(tuple(outputs),
                  {path: bundle.get(f'file.{k}', '')
                   for k, path in enumerate(files)}, cpu, raw_output)


def RefuseErrorReplies(vm, outputs: Sequence[ProcessOutput], tool: str,
                       parse, counts: str, advice) -> None:
  """errors.ProcessError when `parse` (a parser's ErrorReplies: a stderr's
  count and first) finds error replies on these processes' stderr: the
  tool `counts` them as requests done, so its figures would count what the
  server refused as served; `advice(first)` says what to check."""
  replies = [parse(o.stderr) for o in outputs]
  count = sum(n for n, _ in replies)
  if not count:
    return
  first = next(reply for _, reply in replies if reply)
  # A stderr cut short (CUT_MARK) held more than were read.
  more = ' or more' if any(CUT_MARK in o.stderr for o in outputs) else ''
  raise errors.ProcessError(
      f'{tool} on {vm.name} got {count:,}{more} error replies in place of '
      f'data (the first: {vm_util.Mask(first[:200])}): {counts}, so its '
      'figures would count requests the server refused as served; '
      f'{advice(first)}.')


# A tool's line saying what went wrong (memtier's progress lines say
# 'conn errors' whatever happened: memtier_results.IsProgressLine).
_FAILURE_WORDS = re.compile(r'error|fail', re.IGNORECASE)


def _ErrorLines(stderr: str) -> List[str]:
  """A process's stderr's distinct lines from the first naming an error or
  a failure on, memtier's progress lines left out, or []: memtier refused
  its login says 'error: authentication failed [...]' once a connection,
  then a progress line a second until its bound; redis-benchmark says
  'Node ... replied with error:' and the reply on the next line."""
  said = [l.strip() for l in terminal_text.Lines(stderr)
          if l.strip() and not memtier_results.IsProgressLine(l)]
  first = next((i for i, l in enumerate(said) if _FAILURE_WORDS.search(l)),
               len(said))
  return list(dict.fromkeys(said[first:]))


def _Said(stderr: str) -> str:
  """What a failed process said: its _ErrorLines, else its last lines."""
  return vm_util.Tail('\n'.join(_ErrorLines(stderr) or [
      l.strip() for l in terminal_text.Lines(stderr)]))


def _Stalled(stderr: str) -> str:
  """What a timed-out process's progress lines say of its end, when its
  words name no error: its last seconds done with 0 operations (a shard
  SIGSTOPped past the bound read 'timed out after 33 s: [RUN #1 ...]'),
  else ''."""
  idle = 0 if _ErrorLines(stderr) else memtier_results.IdleSeconds(stderr)
  if not idle:
    return ''
  return (f', its last {idle} s with 0 operations done (no replies: the '
          'server stopped answering)')


def _KeepEvidence(vm, name, commands, timeout_s, files, bundle, secret,
                  manifest):
  """The probe's command lines (the password as argv_secret's placeholder)
  and everything its bundle holds, in the run directory (evidence.py)."""
  lines = [f'timeout --foreground -s INT -k 5 {int(timeout_s)} '
           f'{vm.Pinned(vm_util.QuoteAll(argv))}' for argv in commands]
  keys = {f'file.{k}': evidence.FileKey(path) for k, path in enumerate(files)}
  parts = {keys.get(key, key): text for key, text in bundle.items()}
  if manifest is not None:
    parts[evidence.MANIFEST] = json.dumps(manifest, sort_keys=True)
  return evidence.Keep(vm, name, lines, parts,
                       secrets=(secret,) if secret else ())


# Below this much free space in the scratch directory, a probe's missing
# files are put down to a full disk.
FULL_DISK_BYTES = 1 << 20


def _NoStatusReason(vm, script_stderr: str) -> str:
  """Why a probe left no exit status: a full scratch disk (its files could
  not be written) named as such, else the script was stopped."""
  free = None
  try:
    out, _, rc = vm.RemoteCommandWithReturnCode(
        f'stat -f -c "%a %S" -- {shlex.quote(vm.scratch_dir)}', timeout=30)
    blocks, size = out.split()
    free = int(blocks) * int(size) if rc == 0 else None
  except (errors.Error, ValueError):
    pass
  if 'No space left on device' in script_stderr or (
      free is not None and free < FULL_DISK_BYTES):
    room = f', {free // 1024:,} KiB free' if free is not None else ''
    return (f'No space left on device: its files in {vm.scratch_dir} could '
            f'not be written{room}; free space on {vm.name} and run again')
  detail = vm_util.Tail(script_stderr, 2)
  return 'the probe script was stopped' + (f': {detail}' if detail else '')


def RunSideBySide(vm, name: str, commands: Sequence[Sequence[str]],
                  timeout_s: float, cpu_window_s: Optional[float] = None,
                  secret: Optional[str] = None,
                  manifest: Optional[Dict[str, object]] = None,
                  files: Sequence[str] = (),
                  stop_on: str = '',
                  idle: Optional[Idle] = None) -> List[ProcessOutput]:
  """RunProbe's process outputs (for callers that need nothing else)."""
  return list(RunProbe(vm, name, commands, timeout_s, cpu_window_s,
                       secret, files=files, manifest=manifest,
                       stop_on=stop_on, idle=idle).outputs)
