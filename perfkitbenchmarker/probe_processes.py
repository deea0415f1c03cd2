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
a file names is stopped, whole, while its leader is still the process that
started at the recorded time, and nothing else (run_processes' escalation,
as shards are: virtual_machine.KillProcess).

Extension seam: a benchmark that starts a long-running command on a VM
wraps it in `Marked` and puts `prefix` before it; deployment.StopAll stops
this kind before the shards.
"""

import contextlib
import re
import secrets
from typing import Annotated, Hashable, Iterator

from perfkitbenchmarker import errors
from perfkitbenchmarker import record_checks
from perfkitbenchmarker import resource
from perfkitbenchmarker import run_processes
from perfkitbenchmarker import virtual_machine
from perfkitbenchmarker import vm_util

KIND = 'probe_process'
_MARK = re.compile(r'[a-z0-9_-]{1,64}-[0-9a-f]{16}')


def _Checked(mark: str) -> str:
  if not _MARK.fullmatch(mark):
    raise errors.ResourceError(f'{mark!r} is not a probe mark; left alone')
  return mark


def GroupScript(scratch_dir: str, mark: str) -> str:
  """Shell text before a command: writes the identity of its process group
  to a file of the mark in scratch_dir, then exits 143 if KillScript
  already ran for the mark (run_processes.sh's `own`).

  A command can start after its entry was deleted (its SSH session still
  on its way when SIGINT made cleanup kill the mark's groups). The file is
  written before the check and KillScript marks the probe stopped before
  it reads the files, so the command either sees the mark or is killed.
  """
  return (run_processes.Command('own', scratch_dir, _Checked(mark)) +
          ' || exit $?; ')


def KillScript(scratch_dir: str, mark: str) -> str:
  """Shell that marks the probe stopped (a command of it starting later
  exits, GroupScript), then stops each process group a file of the mark
  names, while its leader is the process that started at the recorded
  time (run_processes.sh's `stop-marked`). Exits run_processes.OUTLIVED
  when a group's leader outlives the escalation."""
  return run_processes.Command('stop-marked', scratch_dir, _Checked(mark),
                               run_processes.WaitMs(run_processes.STOP_WAIT_S))


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
        KillScript(self.vm.scratch_dir, self.mark), timeout=120)
    if rc != 0:
      raise errors.ResourceError(
          f'processes of probe {self.mark} on {self.vm.name} are still '
          'running after SIGTERM and SIGKILL '
          f'({vm_util.Tail(err) or f"exit {rc}"})')

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
