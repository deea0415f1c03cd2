"""The processes a run owns: how one is named, judged ours, and stopped.

Every process a run starts (a shard, a probe's process group, a detached
SSH job, a local command) is stopped through this module and its shell
half, scripts/run_processes.sh, which runs on every machine of the run
with its values as arguments (`Command`).

The ownership rule, stated once: **a process is the run's when its working
directory is the run's directory or below it.** The run's directories are
its own (0700, unguessable names: run_scope), so no other user's process
works there, and every command the run starts begins in one. `WorksUnder`
is the rule in Python (a shard found by PID: KillProcess; a directory of
the run that is busy: run_scope) and
`works_under` in run_processes.sh on the VMs (its `busy`; the foreign-CPU
scan, scripts/snapshot.sh, includes it).

An identity (`Identity`, or a "<pid> <start>" line the run writes down as
the process starts: a probe's group file, a detached job's sid file) is a
process that leads a group or a session and its start time in clock ticks
since boot: together they name one process while the machine is up, so a
PID reused since is never taken for it.

The escalation, the one way a process of the run is stopped
(run_processes.sh's `escalate`): SIGTERM to the whole group or session, a
bounded wait for all of it to exit, then SIGKILL and the wait again; before
each signal the leader's identity is checked, or, once the leader has
exited, that its group or session still holds a process (the kernel gives
no new process that ID while it does, so those are what the leader led: a
member that ignores TERM goes too). A probe whose command did not end by
itself stops, one process at a time by the same escalation, what is left
in its own group besides itself (`stop_strays`: a tool whose `timeout` was
killed). One exception:
`KillStartedGroup`, a local command's group that pkb itself started and has
not yet reaped, killed at once from a signal handler (no waiting there, and
an unreaped child's PID cannot name another process); `Forward`, a
signal the user sent the matrix, passed on to the cells it started and has
not reaped (each stops as a pkb run does); scripts/probe.sh ends its own
sampler, a background job it has not reaped, likewise.
"""

import contextlib
import dataclasses
import os
import signal
import subprocess

from perfkitbenchmarker import shell_scripts

SCRIPT = 'run_processes.sh'
# How long a stop waits for a leader's exit after each signal.
STOP_WAIT_S = 5.0
# What an identity's leader leads: what the signals go to.
GROUP, SESSION = 'group', 'session'
# run_processes.sh's exits: a process outlived the whole escalation; a
# process works under the directory `busy` was given (stdout: its PID and
# name).
OUTLIVED = BUSY = 3


# How many times the run's commands were stopped (vm_util.StopChildren: a
# signal, the deadline). A list: a signal handler adds to it.
_STOPS = [0]


def CountStop() -> None:
  """Notes a stop of the run (safe in a signal handler)."""
  _STOPS[0] += 1


def StopCount() -> int:
  """How many times the run was stopped so far: a loop that retries, waits
  or starts work (background_tasks' lanes) ends when it moved since it
  began."""
  return _STOPS[0]


def WorksUnder(cwd: str, root: str) -> bool:
  """The ownership rule (module doc): `cwd` is `root` or below it."""
  root = root.rstrip('/')
  return cwd == root or cwd.startswith(root + '/')


def Command(verb: str, *args: object) -> str:
  """One shell command running run_processes.sh's `verb` with `args`."""
  return shell_scripts.Command(SCRIPT, verb, *args)


def WaitMs(wait_s: float) -> int:
  return max(0, int(wait_s * 1000))


@dataclasses.dataclass(frozen=True)
class Identity:
  """A process the run started: it leads a group (or a session), and it
  started `start_ticks` clock ticks after boot."""
  pid: int
  start_ticks: int
  leads: str = GROUP

  def StopCommand(self, wait_s: float = STOP_WAIT_S) -> str:
    """Shell that stops what the process leads (the escalation); exits
    OUTLIVED if it outlived it, 0 once it is gone or was never it."""
    return Command('stop', int(self.pid), int(self.start_ticks), self.leads,
                   WaitMs(wait_s))

  def WaitCommand(self, wait_s: float = STOP_WAIT_S) -> str:
    """Shell that waits up to wait_s for the process's exit, sending
    nothing; exits OUTLIVED if it is still there."""
    return Command('wait', int(self.pid), int(self.start_ticks),
                   WaitMs(wait_s))


def KillStartedGroup(pid: int) -> None:
  """SIGKILL to the group of a local command pkb started with a session
  of its own and has not reaped (module doc: the one exception)."""
  with contextlib.suppress(ProcessLookupError, PermissionError):
    os.killpg(pid, signal.SIGKILL)


def Forward(child: subprocess.Popen, signum: int) -> None:
  """Passes the user's `signum` on to a child pkb started and has not yet
  reaped (module doc); nothing once it has exited."""
  if child.poll() is None:
    child.send_signal(signum)
