"""Load generator processes as run-record resources, stopped by group.

A probe (memtier, redis-benchmark, YCSB's JVM, a preload) is a tree of
processes on a client VM that exists only while the probe runs, but a run
can die in the middle of one (kill -9 of pkb, a lost SSH connection), and a
later `--run_stage=teardown` must then stop what is left. So each one is a
resource like a shard: `Marked(vm, what)` writes a `probe_process` entry with
a mark unique to it to the run record before anything starts. Every command
runs in a process group of its own (vm_util.RunLocal starts a session per
command; over SSH `timeout` leads one), and the probe's `prefix`, put before
the command, writes that group's id and its leader's start time into a file
of the mark in the VM's scratch directory (the run's own) as it starts.
When the command has ended the entry is retired; if it did not end (a
signal, a timeout, a crash), cleanup and teardown delete it: each group such
a file names is killed, whole, while its leader is still the process that
started at the recorded time, and nothing else. Shards are stopped the same
way (virtual_machine.KillProcess).

Extension seam: a benchmark that starts a long-running command on a VM
wraps it in `Marked` and puts `prefix` before it; deployment.StopAll stops
this kind before the shards.
"""

import contextlib
import re
import secrets
import shlex
from typing import Annotated, Hashable, Iterator

from perfkitbenchmarker import errors
from perfkitbenchmarker import process_stat
from perfkitbenchmarker import record_checks
from perfkitbenchmarker import resource
from perfkitbenchmarker import virtual_machine

KIND = 'probe_process'
_MARK = re.compile(r'[a-z0-9_-]{1,64}-[0-9a-f]{16}')
# Rounds of killing one group (a zombie leader is reaped by its parent).
_KILL_ROUNDS = 50


def _GroupFiles(scratch_dir: str, mark: str) -> str:
  """The shell glob of the mark's group files in the VM's scratch dir."""
  if not _MARK.fullmatch(mark):
    raise errors.ResourceError(f'{mark!r} is not a probe mark; left alone')
  return f'{shlex.quote(scratch_dir.rstrip("/"))}/.probe-{mark}.'


def _StoppedFile(scratch_dir: str, mark: str) -> str:
  """The file KillScript leaves: the probe's entry is being deleted. Not
  one of _GroupFiles' (a '-' where they have a '.')."""
  return _GroupFiles(scratch_dir, mark)[:-1] + '-stopped'


def GroupScript(scratch_dir: str, mark: str) -> str:
  """bash that writes "<group id> <leader start>" of the shell's own
  process group to a file of the mark (its name ends in the shell's PID),
  then exits 143 if KillScript already ran for the mark.

  A command can start after its entry was deleted (its SSH session still
  on its way when SIGINT made cleanup kill the mark's groups). The file is
  written before the check and KillScript marks the probe stopped before
  it reads the files, so the command either sees the mark or is killed.
  """
  return (f'{process_stat.SHELL}pstat $$; __g=${{pf[2]}}; '
          'pstat "$__g" || pf=(); '
          f'echo "$__g ${{pf[19]}}" > {_GroupFiles(scratch_dir, mark)}$$; '
          f'[ ! -e {_StoppedFile(scratch_dir, mark)} ] || exit 143; '
          'unset __g pf; ')


def KillScript(scratch_dir: str, mark: str) -> str:
  """bash that marks the probe stopped (a command of it starting later
  exits, GroupScript), then SIGKILLs each process group a file of the mark
  names, while its leader is the process that started at the recorded time.

  The mark is checked against a fixed pattern first and the files' fields
  must be numbers, so the script holds no text from elsewhere. Exits 3
  when a group's leader outlives every round.
  """
  return (
      process_stat.SHELL +
      f': 2>/dev/null > {_StoppedFile(scratch_dir, mark)}; '
      f'for f in {_GroupFiles(scratch_dir, mark)}*; do '
      '[ -f "$f" ] || continue; read -r g t < "$f"; '
      'case "$g" in ""|*[!0-9]*) rm -f -- "$f"; continue;; esac; '
      'case "$t" in ""|*[!0-9]*) rm -f -- "$f"; continue;; esac; '
      f'for i in $(seq {_KILL_ROUNDS}); do alive "$g" "$t" || break; '
      'kill -KILL -- "-$g" 2>/dev/null; sleep 0.1; done; '
      'alive "$g" "$t" && exit 3; rm -f -- "$f"; done; exit 0')


def _RunsMark(mark: str, record) -> str:
  if not (_MARK.fullmatch(mark) and mark.startswith(f'{record.run_uri}-')):
    raise record_checks.RecordRefused(
        f'{mark!r} is not one of run {record.run_uri}')
  return mark


class ProbeProcess(resource.BaseResource):
  """The process groups of one probe command on one VM (by their mark)."""

  KIND = KIND

  def __init__(self, vm, name: str, mark: str, record=None):
    super().__init__(name, record)
    self.vm = vm
    self.mark = mark

  def RecordData(self):
    return {'vm_name': self.vm.name, 'mark': self.mark}

  def TeardownLane(self) -> Hashable:
    return self.vm.CommandLane()  # Over the VM's one SSH connection.

  def _Create(self) -> None:
    pass  # The command starts after; the record entry is what counts.

  def _Delete(self) -> None:
    _, err, rc = self.vm.RemoteCommandWithReturnCode(
        KillScript(self.vm.scratch_dir, self.mark), timeout=60)
    if rc != 0:
      raise errors.ResourceError(
          f'processes of probe {self.mark} on {self.vm.name} are still '
          f'running after SIGKILL ({err.strip()[:200] or f"exit {rc}"})')

  @property
  def prefix(self) -> str:
    """Shell text before a command: records the group it runs in."""
    return GroupScript(self.vm.scratch_dir, self.mark)

  class Fields(record_checks.Fields):
    vm_name: str
    mark: Annotated[str, record_checks.WithRecord(_RunsMark)]

  @classmethod
  def FromRecord(cls, entry, record) -> 'ProbeProcess':
    fields = record_checks.Parse(cls.Fields, entry, record)
    vm = virtual_machine.VmFromRecord(record, fields.vm_name)
    return cls(vm, entry['name'], fields.mark, record)


resource.RegisterKind(KIND, ProbeProcess.FromRecord)


def NewMark(run_uri: str) -> str:
  return f'{run_uri or "run"}-{secrets.token_hex(8)}'


def Mark(vm, what: str) -> ProbeProcess:
  """Records the command `what` on `vm` before it starts; its `prefix`
  writes down the command's process group. `Retire` it once it has ended;
  until then cleanup and teardown kill that group (for a command that
  outlives the call that started it, e.g. a sampler a later call stops)."""
  record = getattr(vm, 'record', None)
  run_uri = record.run_uri if record is not None else ''
  mark = NewMark(run_uri)
  probe = ProbeProcess(vm, f'{vm.name}/{what}/{mark[-16:]}', mark, record)
  probe.Create()
  return probe


def Retire(probe: ProbeProcess) -> None:
  """The marked command has ended: nothing of it is left to kill."""
  if probe.record is not None:
    probe.record.UpdateResource(KIND, probe.name, status='deleted')


@contextlib.contextmanager
def Marked(vm, what: str) -> Iterator[ProbeProcess]:
  """Records the probe `what` on `vm` and yields it: its `prefix` (shell
  text to put before the command) writes down the command's group; retires
  the entry once the block ends normally (the command has exited), leaves
  it for cleanup otherwise (see module doc)."""
  probe = Mark(vm, what)
  yield probe
  Retire(probe)
