"""Long commands on SSH VMs that survive a dropped connection, in one trip.

A probe over SSH must cost what it measures: one round trip starts the job
and collects it. `RunDetached` sends the job's script (environment exports,
then the command) on the start command's stdin; the VM writes it to a 0600
file in a fresh job dir and starts it with setsid + nohup under `timeout`
(remote_shell.DetachedStartScript), holding an flock on the job dir for as
long as it runs. The same command then blocks on that lock on the VM
(bounded by the job's deadline, no polling) and prints the exit code,
stdout and stderr at once (remote_shell.DetachedCollectScript); only when
that connection drops does a collector reconnect (`Collect`).

A dropped connection only delays it: the job goes on in its own session; a
collect whose connection drops (output cut short, ssh exit 255, or no
connection for a while) reconnects and waits again until the deadline. A
finished job's dir is deleted by the VM's next start, never by the collect
that reads it (whose output may still be lost on the way). SIGINT, a run's
deadline or any exception while waiting kills the job's whole session.

Extension seam: a VM class with `RemoteCommand`, `RemoteCommandWithReturnCode`,
`scratch_dir`, `name`, `_clock` and `_sleep` can run jobs this way
(ssh_vm.SshVirtualMachine does).
"""

import logging
import threading
import uuid
from typing import Dict, List, Optional, Tuple, Union

import tenacity

from perfkitbenchmarker import errors
from perfkitbenchmarker import remote_shell
from perfkitbenchmarker import run_processes
from perfkitbenchmarker import vm_util
from perfkitbenchmarker import waits

# Beyond the job's own timeout and kill grace, before the collector gives up.
COLLECT_SLACK_S = 30
RECONNECT_PAUSE_S = 1.0
# A job's stop waits this long after SIGTERM, and after SIGKILL, for its
# session leader's exit: a stopped run (SIGINT, its deadline) waits for it.
JOB_STOP_WAIT_S = 1.0


_collected_lock = threading.Lock()


def _TakeCollected(vm) -> List[str]:
  """Job dirs of `vm` read back whole, to delete with its next start."""
  with _collected_lock:
    return vm.__dict__.pop('_collected_jobs', [])


def _AddCollected(vm, jobs: List[str]) -> None:
  with _collected_lock:
    vm.__dict__.setdefault('_collected_jobs', []).extend(jobs)


def _LostConnection(vm, doing: str, rc: int, err: str) -> None:
  logging.warning('Lost the connection to %s while %s a command (exit %s: '
                  '%s); reconnecting', vm.name, doing, rc,
                  remote_shell.CleanStderr(err).strip()[-200:])


def Start(vm, command: str, timeout: float,
          env: Optional[Dict[str, str]] = None, wait_s: float = 0.0
          ) -> Tuple[str, Optional[Tuple[str, str, int]]]:
  """Starts `command` on the VM and, in the same round trip, waits up to
  `wait_s` for it (0: returns once it started). Returns the job dir and
  (stdout, stderr, rc) when it ended in that wait, else None (the job goes
  on: `Collect` it)."""
  job = f'{vm.scratch_dir}/detached/{uuid.uuid4().hex[:12]}'
  script = ('rm -f -- "$0"\n' + remote_shell.EnvScript(env or {}) +
            command + '\n')
  old = _TakeCollected(vm)
  remote = remote_shell.DetachedStartScript(job, timeout, wait_s, old)
  what = f'starting a command on {vm.name}'
  try:
    # As chunks: a wait that a stop (SIGINT, the deadline) must end
    # (vm_util's streaming path watches for it).
    out, err, rc = vm.RemoteCommandWithReturnCode(
        remote, stdin=(script,), timeout=60 + wait_s)
    head, started, rest = out.partition(remote_shell.JOB_STARTED_MARKER +
                                        '\n')
    if not started:
      vm_util.CheckedOutput(head, err, rc or 1, what, what)
  except BaseException:
    _AddCollected(vm, old)
    # The command may have started before its trip was cut short (a stop
    # ends the streaming wait, killing ssh): stop it, as RunDetached stops
    # a job it no longer waits for. No sid file: it never started, no-op.
    Kill(vm, job)
    raise
  if wait_s <= 0:
    return job, None
  try:
    collected = remote_shell.ParseCollected(rest)
  except ValueError:
    _LostConnection(vm, 'waiting for', rc, err)
    return job, None
  if collected is not None:
    _AddCollected(vm, [job])
  return job, collected


def Collect(vm, job: str, deadline: float, stops: Optional[int] = None
            ) -> Optional[Tuple[str, str, int]]:
  """Waits on the VM for the job until `deadline` (vm's clock); returns
  (stdout, stderr, rc), or None when it has not ended by then.

  Raises errors.Error when the run is stopped (its deadline, a signal:
  run_processes.StopCount moved past `stops`) meanwhile, in whatever thread
  it waits, instead of reconnecting until its own deadline.
  """
  stops = run_processes.StopCount() if stops is None else stops
  clock = vm._clock  # pylint: disable=protected-access

  def Attempt() -> Union[Tuple[str, str, int], float]:
    """What the job printed, or the pause before asking again."""
    if run_processes.StopCount() != stops:
      raise errors.Error(f'stopped while waiting for a command on {vm.name}')
    wait = max(1.0, deadline - clock())
    try:
      out, err, rc = vm.RemoteCommandWithReturnCode(
          remote_shell.DetachedCollectScript(job, wait),
          timeout=wait + COLLECT_SLACK_S)
    except errors.Error as e:
      retry_after = getattr(e, 'retry_after', None)
      if retry_after is None:
        logging.warning('%s; still waiting for the detached command', e)
      # A host that did not answer a moment ago is tried again only after
      # its pause (ssh_vm.HostHealth).
      return max(RECONNECT_PAUSE_S, min(retry_after or 0, deadline - clock()))
    try:
      collected = remote_shell.ParseCollected(out)
    except ValueError:  # Cut short: the connection dropped while it printed.
      _LostConnection(vm, 'collecting', rc, err)
      return RECONNECT_PAUSE_S
    if collected is None:
      return 0.0  # Still running: the collect script itself waited.
    _AddCollected(vm, [job])
    return collected

  def Sleep(seconds: float) -> None:
    if seconds:
      vm._sleep(seconds)  # pylint: disable=protected-access

  return tenacity.Retrying(
      retry=tenacity.retry_if_not_result(lambda r: isinstance(r, tuple)),
      stop=waits.PastDeadline(clock, deadline, inclusive=True),
      wait=lambda state: state.outcome.result(), sleep=Sleep,
      retry_error_callback=lambda state: None)(Attempt)


def Kill(vm, job: str) -> None:
  try:
    vm.RemoteCommandWithReturnCode(
        remote_shell.DetachedKillScript(job, JOB_STOP_WAIT_S), timeout=30)
  except errors.Error as e:
    logging.warning('Could not stop a detached command on %s: %s',
                    vm.name, e)


def RunDetached(vm, command: str, timeout: float,
                env: Optional[Dict[str, str]] = None
                ) -> Tuple[str, str, int]:
  """Runs a long command that survives dropped SSH connections.

  Returns (stdout, stderr, returncode) like RemoteCommandWithReturnCode;
  returncode is -9 if it ran past `timeout` (it is then killed on the VM).
  """
  seconds = remote_shell.Seconds(timeout)
  start = vm._clock()  # pylint: disable=protected-access
  stops = run_processes.StopCount()
  deadline = start + seconds + remote_shell.KILL_GRACE_S + COLLECT_SLACK_S
  job, collected = Start(vm, command, timeout, env,
                         wait_s=seconds + remote_shell.KILL_GRACE_S)
  try:
    if collected is None:
      collected = Collect(vm, job, deadline, stops)
    if collected is None:
      Kill(vm, job)
      collected = Collect(vm, job, vm._clock() + 10) or ('', '', -9)  # pylint: disable=protected-access
      collected = (collected[0], collected[1], -9)
  except BaseException:
    Kill(vm, job)
    raise
  out, err, code = collected
  if code in (124, 137) and vm._clock() - start >= seconds:  # pylint: disable=protected-access
    code = -9
  return out, err, code
