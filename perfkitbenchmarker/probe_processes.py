"""Load generator processes as run-record resources, found by a mark.

A probe (memtier, redis-benchmark, YCSB's JVM, a preload) is a tree of
processes on a client VM that exists only while the probe runs, but a run
can die in the middle of one (kill -9 of pkb, a lost SSH connection), and a
later `--run_stage=teardown` must then stop what is left. So each one is a
resource like a shard: `Marked(vm, what)` writes a `probe_process` entry to
the run record before anything starts, with a mark unique to it
(`PKB_PROBE_MARK=<run_uri>-<random>`), and yields it: its shell prefix or
its env put the mark into the environment of the command and of every
process it starts (environments are inherited, argv rewriting does not lose
them).
When the command has ended the entry is retired; if it did not end (a
signal, a timeout, a crash), cleanup and teardown delete it: every process
on its VM whose /proc/<pid>/environ holds exactly that mark is killed, until
none is left. A process without the mark is never signalled, whatever the
record says, and a process of another user cannot be read and is never
touched.

Extension seam: a benchmark that starts a long-running command on a VM
wraps it in `Marked`; deployment.StopAll stops this kind before the shards.
"""

import contextlib
import re
import secrets
import shlex
from typing import Dict, Hashable, Iterator

from perfkitbenchmarker import errors
from perfkitbenchmarker import record_checks
from perfkitbenchmarker import resource
from perfkitbenchmarker import virtual_machine

KIND = 'probe_process'
ENV = 'PKB_PROBE_MARK'
_MARK = re.compile(r'[a-z0-9_-]{1,64}-[0-9a-f]{16}')
# Rounds of killing (processes may fork while the first round runs).
_KILL_ROUNDS = 5


def KillScript(mark: str) -> str:
  """bash that SIGKILLs every process whose environment holds the mark.

  The mark is checked against a fixed pattern first, so the script holds
  no text from elsewhere; `grep -z -x` matches one whole NUL-separated
  variable. Exits 3 when marked processes outlive every round.
  """
  if not _MARK.fullmatch(mark):
    raise errors.ResourceError(f'{mark!r} is not a probe mark; left alone')
  pattern = shlex.quote(f'{ENV}={mark}')
  return (
      f'for round in $(seq {_KILL_ROUNDS}); do '
      f'found=$(grep -lzxF -- {pattern} /proc/[0-9]*/environ 2>/dev/null); '
      '[ -n "$found" ] || exit 0; '
      'for f in $found; do p=${f#/proc/}; kill -9 "${p%/environ}" '
      '2>/dev/null; done; sleep 0.1; done; exit 3')


class ProbeProcess(resource.BaseResource):
  """The processes of one probe command on one VM, found by their mark."""

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
    _, err, rc = self.vm.RemoteCommandWithReturnCode(KillScript(self.mark),
                                                     timeout=60)
    if rc != 0:
      raise errors.ResourceError(
          f'processes marked {self.mark} on {self.vm.name} are still '
          f'running after SIGKILL ({err.strip()[:200] or f"exit {rc}"})')

  @property
  def prefix(self) -> str:
    """Shell text before a command: exports the mark to all it starts."""
    return f'export {ENV}={self.mark}; '

  @property
  def env(self) -> Dict[str, str]:
    """The same mark as environment for a command (its text unchanged)."""
    return {ENV: self.mark}

  @classmethod
  def FromRecord(cls, entry, record) -> 'ProbeProcess':
    data = entry['data']
    what = f'{KIND} {entry["name"]}'
    mark = record_checks.Field(data, 'mark', str, what)
    if not (_MARK.fullmatch(mark) and
            mark.startswith(f'{record.run_uri}-')):
      raise record_checks.RecordRefused(
          f'{what}: mark {mark!r} is not one of run {record.run_uri}; left '
          'alone')
    vm = virtual_machine.VmFromRecord(
        record, record_checks.Field(data, 'vm_name', str, what))
    return cls(vm, entry['name'], mark, record)


resource.RegisterKind(KIND, ProbeProcess.FromRecord)


def NewMark(run_uri: str) -> str:
  return f'{run_uri or "run"}-{secrets.token_hex(8)}'


def Mark(vm, what: str) -> ProbeProcess:
  """Records the command `what` on `vm` before it starts; its `prefix` or
  `env` marks it. `Retire` it once it has ended; until then cleanup and
  teardown kill whatever carries the mark (for a command that outlives the
  call that started it, e.g. a sampler a later call stops)."""
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
  text to put before the command) or its `env` (for the command's
  environment) marks the command; retires the entry once the block ends
  normally (the command has exited), leaves it for cleanup otherwise (see
  module doc)."""
  probe = Mark(vm, what)
  yield probe
  Retire(probe)
