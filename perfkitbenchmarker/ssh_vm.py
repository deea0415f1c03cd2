"""VMs reached over SSH: shared by GCP, AWS and existing (static) machines.

Extension seam: a cloud provider subclasses `SshVirtualMachine`, overrides
`_Create` (create the instance, set `ip_address`/`internal_ip`, then call
`WaitForSsh(timeout)`) and `_Delete` (delete the instance); everything else
(commands, files, long detached commands, installs, system tuning, OS
metadata) comes from here. Used as is, the class is an existing machine:
`_Create` only connects and makes the run's scratch directory, `_Delete`
only removes that directory.

How commands run: the system `ssh` (as PKB does) with the user's ssh config
ignored (`-F /dev/null`) so runs behave the same everywhere; one master
connection per host reused through a control socket in a private 0700
directory; host keys accepted on first contact into a per-run known_hosts
file (machines are throwaway, and a changed key within a run still fails).
Only connection failures are retried (ssh exit 255 before the remote shell
wrote its marker), never a command's own failure. Long commands survive a
dropped connection (ssh_jobs.py); the shell text is built in remote_shell.py.
"""

import atexit
import contextlib
import dataclasses
import functools
import ipaddress
import itertools
import logging
import os
import re
import shlex
import shutil
import stat
import threading
import time
from typing import (Any, Callable, Dict, Hashable, Optional, Sequence, Set,
                    Tuple)

from absl import flags
import tenacity

from perfkitbenchmarker import errors
from perfkitbenchmarker import owned_paths
from perfkitbenchmarker import process_stat
from perfkitbenchmarker import record_checks
from perfkitbenchmarker import remote_shell
from perfkitbenchmarker import run_processes
from perfkitbenchmarker import run_scope
from perfkitbenchmarker import shell_scripts
from perfkitbenchmarker import ssh_jobs
from perfkitbenchmarker import system_info as system_info_lib
from perfkitbenchmarker import system_tuning
from perfkitbenchmarker import terminal_text
from perfkitbenchmarker import trusted_programs
from perfkitbenchmarker import upstream_vm
from perfkitbenchmarker import virtual_machine
from perfkitbenchmarker import vm_util
from perfkitbenchmarker import waits

flags.DEFINE_boolean(
    'system_tuning', True,
    'On remote VMs, turn transparent huge pages off and raise somaxconn, '
    'vm.overcommit_memory and open-file limits before starting Redis (until '
    'reboot). --nosystem_tuning only records the settings in force.')

CONNECT_TIMEOUT_S = 10
# How long a cloud VM just booted may take to answer SSH (the default of
# --ssh_wait_timeout_seconds).
BOOT_SSH_TIMEOUT_S = 300
COMMAND_TIMEOUT_S = 600
PACKAGE_INSTALL_TIMEOUT_S = 1200  # InstallPackages (apt-get, dnf)
# Short, so a master left by a killed run goes away by itself soon.
CONTROL_PERSIST_S = 60
LOCAL_GRACE_S = 15  # local timeout beyond the remote one
# A connection whose server stopped answering (a frozen or lost machine) is
# dropped after this many keepalives this far apart (15 s), so no command
# hangs on it for a minute or more.
SERVER_ALIVE_INTERVAL_S = 5
SERVER_ALIVE_COUNT = 3

_control_lock = threading.Lock()
_control_dir: Optional[str] = None


class SshError(errors.Error):
  """A machine could not be reached over SSH, even after retries.

  `retry_after` (seconds) is set when no connection was tried: the machine
  did not answer a moment ago (HostHealth).
  """

  def __init__(self, message: str, retry_after: Optional[float] = None):
    super().__init__(message)
    self.retry_after = retry_after


class KeyRefused(SshError, errors.UsageError):
  """A machine the run did not make refused its login key to the end of
  the wait: the file's user or key is wrong, bad input (exit 2)."""


# ssh's definite refusal of the key: 'u@h: Permission denied (publickey).'
# or '(publickey,password).' (BatchMode: no other method is tried).
_KEY_REFUSED = re.compile(r'Permission denied \([^)]*\bpublickey\b[^)]*\)')


class HostHealth:
  """SSH hosts (connection lanes) that did not answer, and since when.

  Shared by every VM object of the process (teardown rebuilds one per
  record entry): once a host has not answered, each later command makes one
  attempt, no retries, and a command within `hold` seconds of its last
  failed attempt fails at once, so deleting many resources of a frozen or
  lost machine costs one connect timeout, not three for each of them. An
  answer clears it.
  """

  def __init__(self, clock: Callable[[], float] = time.monotonic):
    self._clock = clock
    self._lock = threading.Lock()
    self._down: Dict[Hashable, Tuple[float, str]] = {}

  def IsDown(self, lane: Hashable) -> bool:
    with self._lock:
      return lane in self._down

  def Refusal(self, lane: Hashable, hold: float
              ) -> Optional[Tuple[float, str]]:
    """(seconds since it last failed, its error) while within `hold`."""
    with self._lock:
      since, error = self._down.get(lane, (None, ''))
      if since is None or self._clock() - since >= hold:
        return None
      return self._clock() - since, error

  def Failed(self, lane: Hashable, error: str) -> None:
    with self._lock:
      self._down[lane] = (self._clock(), error)

  def Answered(self, lane: Hashable) -> None:
    with self._lock:
      self._down.pop(lane, None)


_HOSTS = HostHealth()
# (connection lane, entry) of each login PATH entry left out that this
# process warned about: once per machine, not once per command.
_LEFT_OUT_SAID: Set[Tuple[Hashable, str]] = set()
_left_out_lock = threading.Lock()
# (connection lane, scratch directory) this process shipped the scripts to
# (scratch directories have unguessable names: never one of another VM),
# and a lock for each: machines ship side by side.
_SHIPPED: Set[Tuple[Hashable, str]] = set()
_ship_locks: Dict[Tuple[Hashable, str], threading.Lock] = {}
_ship_locks_guard = threading.Lock()


def CheckRunDirs() -> None:
  """Refuses (run_scope.NotOwnDir, one line) a temporary directory the
  control sockets' directory cannot be private in: the CheckRunDirs of the
  providers of SSH machines, run before anything starts."""
  run_scope.CheckTempRoot()


# A control directory says which process made it (a file naming its PID
# namespace, PID and start time): a process killed by SIGKILL runs no exit
# handler, so the next process that makes a control directory removes
# those whose maker is gone (one per killed run was left in TMPDIR). Not in
# the name: a socket's path must stay short (ssh: about 100 bytes).
_CONTROL_PREFIX = 'pkb-ssh-'
_MAKER_FILE = 'maker'


def _PidNamespace() -> Optional[str]:
  try:
    return os.readlink('/proc/self/ns/pid')
  except OSError:
    return None


def _Maker(pid: int) -> Optional[str]:
  """'<PID namespace> <PID> <start time>' of a running process; None when
  it is not running (or is a zombie)."""
  namespace, found = _PidNamespace(), process_stat.Read(pid)
  if namespace is None or found is None or found.state == 'Z':
    return None
  return f'{namespace} {pid} {int(found.start_ticks)}'


def _MakerGone(directory: str) -> bool:
  """Whether the process that made the control directory has exited (one
  without a maker file, or made in another PID namespace, whose PIDs say
  nothing here: never)."""
  try:
    fd = os.open(os.path.join(directory, _MAKER_FILE),
                 os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    with os.fdopen(fd, 'rb') as f:
      maker = f.read(200).decode().strip()
  except (OSError, UnicodeDecodeError):
    return False
  parts = maker.split()
  if (len(parts) != 3 or parts[0] != _PidNamespace() or
      not parts[1].isdigit()):
    return False
  return _Maker(int(parts[1])) != maker


def _RemoveControlDirsOfTheGone(root: str) -> None:
  """Closes and removes this user's control directories in `root` whose
  maker has exited (killed: it could not)."""
  try:
    entries = [e for e in os.scandir(root)
               if e.name.startswith(_CONTROL_PREFIX)]
  except OSError:
    return
  for entry in entries:
    try:
      st = entry.stat(follow_symlinks=False)
    except OSError:
      continue
    if (stat.S_ISDIR(st.st_mode) and st.st_uid == os.geteuid() and
        not st.st_mode & 0o077 and _MakerGone(entry.path)):
      _CloseControlDir(entry.path)


def _DefaultControlDir() -> str:
  """A private directory for control sockets, removed at exit.

  ssh hands its whole session (the remote command, stdin, stdout, stderr)
  to whatever listens on ControlPath, and the socket's name (%C) can be
  computed by anyone, so the directory must be the run's own for as long
  as it is used: run_scope.MakeTempDir refuses a TMPDIR where another user
  could rename it away and put theirs in its place. It says which process
  made it (`_MAKER_FILE`), so a later process removes it if this one is
  killed before it can.
  """
  global _control_dir
  with _control_lock:
    if _control_dir is None:
      _control_dir = run_scope.MakeTempDir(_CONTROL_PREFIX)
      atexit.register(CloseAllConnections)
      maker = _Maker(os.getpid())
      if maker:
        with open(os.path.join(_control_dir, _MAKER_FILE), 'x') as f:
          f.write(maker + '\n')
      _RemoveControlDirsOfTheGone(os.path.dirname(_control_dir))
    return _control_dir


def CloseAllConnections() -> None:
  """Stops every master connection this process opened (run at exit).

  Goes by socket rather than by VM object: VMs rebuilt for a moment (e.g.
  from the run record) are long gone by now, their masters are not.
  """
  global _control_dir
  with _control_lock:
    directory, _control_dir = _control_dir, None
  if directory:
    _CloseControlDir(directory)


def _CloseControlDir(directory: str) -> None:
  """Stops the master connection of each socket in `directory`, then
  removes it."""
  if not os.path.isdir(directory):
    return
  for socket_name in os.listdir(directory):
    path = os.path.join(directory, socket_name)
    try:
      if not stat.S_ISSOCK(os.lstat(path).st_mode):
        continue  # The maker file.
    except OSError:
      continue
    # With an explicit ControlPath the destination is only a placeholder.
    vm_util.RunLocal(vm_util.QuoteAll(
        ['ssh', '-F', '/dev/null', '-o', f'ControlPath={path}', '-O', 'exit',
         'pkb-master']), timeout=10)
  shutil.rmtree(directory, ignore_errors=True)


# What a user, host or key path of an SSH VM may be. They become ssh
# arguments (user@host, -i keyfile) and the clients' Redis address, so
# nothing ssh could read as an option (`-oProxyCommand=...`), no spaces or
# control characters. One rule for every source: a static VM file is checked
# with it when read, a run record when teardown reads it back, so whatever a
# run recorded, its teardown accepts.
_USER = re.compile(r'[A-Za-z0-9_][A-Za-z0-9_.-]{0,31}')
_LABEL = r'[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?'
_HOSTNAME = re.compile(rf'{_LABEL}(?:\.{_LABEL})*\.?')


def FieldProblem(key: str, value: str) -> Optional[str]:
  """Why `value` cannot be an SSH VM's `key` ('user', 'host' or 'keyfile'),
  or None when it can."""
  shown = vm_util.Printable(repr(value))[:80]
  if key == 'user':
    if not _USER.fullmatch(value):
      return (f'{shown} is not a user name (letters, digits, _ . -, not '
              'starting with -, at most 32)')
  elif key == 'host':
    with contextlib.suppress(ValueError):
      ipaddress.ip_address(value)
      return None
    if (len(value) > 253 or not _HOSTNAME.fullmatch(value) or
        all(part.isdigit() for part in value.rstrip('.').split('.'))):
      return f'{shown} is not an IP address or host name'
  elif (not value.startswith('/') or len(value) > 4096 or
        not value.isprintable()):
    return f'{shown} is not an absolute path of printable characters'
  return None


# Their types as a run record's (or a static VM file's) fields.
User, Host, Keyfile = (record_checks.Checked(functools.partial(FieldProblem, k))
                       for k in ('user', 'host', 'keyfile'))


@dataclasses.dataclass(frozen=True)
class KeyPair:
  private_key_path: str
  public_key: str  # "ssh-ed25519 AAAA... comment", for instance metadata


def GenerateKeyPair(directory: str, comment: str = 'pkb',
                    file_name: str = 'pkb_ssh_key') -> KeyPair:
  """The run's ed25519 key pair in `directory` (made private to the run),
  reused when both halves exist (a resumed run's VMs trust it)."""
  # Another --results_dir (the advice for a runs root) would not move it.
  run_scope.MakePrivateDir(directory, run_scope.KEYS_ADVICE)
  path = os.path.join(directory, file_name)
  if not (os.path.exists(path) and os.path.exists(path + '.pub')):
    for stale in (path, path + '.pub'):
      if os.path.exists(stale):
        os.remove(stale)
    _, err, rc = vm_util.RunLocal(vm_util.QuoteAll(
        ['ssh-keygen', '-q', '-t', 'ed25519', '-N', '', '-C', comment,
         '-f', path]), timeout=60)
    if rc != 0:
      raise errors.PrerequisiteError(
          f'ssh-keygen failed ({vm_util.Tail(err, 2)}); is openssh-client '
          'installed?')
  os.chmod(path, 0o600)
  with open(path + '.pub') as f:
    return KeyPair(path, f.read().strip())


def RemoveKeyPair(path: str) -> None:
  """Deletes a key made by GenerateKeyPair (both halves), then its run's key
  directory once empty."""
  for half in (path, path + '.pub'):
    if os.path.lexists(half):
      os.remove(half)
  run_scope.RemoveKeyDirIfEmpty(path)


def _WithEnvLine(env: Optional[Dict[str, str]],
                 stdin: vm_util.Stdin) -> vm_util.Stdin:
  """stdin preceded by the env line (text stays text; chunks stay chunks).

  Called once per attempt: a chunk iterable is iterated afresh each time.
  """
  if not env:
    return stdin
  if stdin is None or isinstance(stdin, str):
    return remote_shell.EnvLine(env) + (stdin or '')
  return itertools.chain([remote_shell.EnvLine(env)], stdin)


class SshVirtualMachine(virtual_machine.BaseVirtualMachine):
  """A Linux machine driven with the system ssh."""

  KIND = 'ssh_vm'

  def __init__(self, spec: virtual_machine.VmSpec, name: str,
               group_name: str, *, user: str = 'pkb',
               ip_address: Optional[str] = None,
               keyfile: Optional[str] = None, port: int = 22,
               internal_ip: Optional[str] = None,
               known_hosts_file: Optional[str] = None,
               control_dir: Optional[str] = None,
               run_local=vm_util.RunLocal,
               connect_timeout: float = CONNECT_TIMEOUT_S,
               connect_retries: int = 3,
               host_health: Optional[HostHealth] = None,
               ssh_timeout_s: float = BOOT_SSH_TIMEOUT_S,
               ssh_waiter: Optional[Callable[['SshVirtualMachine'],
                                             None]] = None, **kwargs):
    super().__init__(spec, name, group_name, **kwargs)
    self.user = user
    self.ip_address = ip_address
    self.internal_ip = internal_ip or ip_address
    self.keyfile = keyfile
    self.port = int(port)
    self._known_hosts = known_hosts_file
    self._control_dir = control_dir
    self._run_local = run_local
    self.connect_timeout = connect_timeout
    self.connect_retries = max(1, connect_retries)
    self._hosts = host_health or _HOSTS
    # A cloud VM's wait for SSH once booted (AwaitSsh). Test seam: a fake
    # cloud's instances have addresses nobody listens on.
    self.ssh_timeout_s = ssh_timeout_s
    self._ssh_waiter = ssh_waiter or (
        lambda vm: vm.WaitForSsh(vm.ssh_timeout_s))
    self.system_info: Optional[system_info_lib.SystemInfo] = None
    self.tuning: Dict[str, str] = {}

  # Connection --------------------------------------------------------------

  @property
  def known_hosts_file(self) -> str:
    if self._known_hosts is None:
      directory = (self.record.run_dir if self.record is not None else
                   self.control_dir)
      self._known_hosts = os.path.join(directory, 'known_hosts')
    return self._known_hosts

  @property
  def control_dir(self) -> str:
    return self._control_dir or _DefaultControlDir()

  def _Target(self) -> str:
    if not self.ip_address:
      raise SshError(f'{self.name} has no IP address yet.')
    return f'{self.user}@{self.ip_address}'

  def SshOptions(self, connect_timeout: Optional[float] = None) -> list:
    connect_timeout = connect_timeout or self.connect_timeout
    options = {
        'BatchMode': 'yes', 'IdentitiesOnly': 'yes',
        'StrictHostKeyChecking': 'accept-new',
        'UserKnownHostsFile': self.known_hosts_file,
        'GlobalKnownHostsFile': '/dev/null',
        'ConnectTimeout': str(max(1, int(connect_timeout))),
        'ServerAliveInterval': str(SERVER_ALIVE_INTERVAL_S),
        'ServerAliveCountMax': str(SERVER_ALIVE_COUNT),
        'ControlMaster': 'auto',
        'ControlPath': os.path.join(self.control_dir, '%C'),
        'ControlPersist': str(CONTROL_PERSIST_S), 'LogLevel': 'ERROR',
    }
    args = ['-F', '/dev/null']
    if self.keyfile:
      args += ['-i', self.keyfile]
    for key, value in options.items():
      args += ['-o', f'{key}={value}']
    return args

  def _RunSsh(self, remote: str, timeout: float,
              stdin: vm_util.Stdin = None,
              connect_timeout: Optional[float] = None
              ) -> Tuple[str, str, int]:
    """One ssh invocation, no retries."""
    argv = (['ssh'] + self.SshOptions(connect_timeout) +
            ['-p', str(self.port), self._Target(), remote])
    out, err, rc = self._run_local(vm_util.QuoteAll(argv), timeout=timeout,
                                   stdin=stdin)
    self._WarnLeftOutOfPath(err)
    return out, err, rc

  def _WarnLeftOutOfPath(self, stderr: str) -> None:
    """One warning per machine naming the login PATH's entries its
    commands run without (ssh_command.sh's safe_path): a program found only
    there is "not found", which alone would not say why."""
    lane = self.CommandLane()
    with _left_out_lock:
      new = [left for left in remote_shell.LeftOutOfPath(stderr)
             if (lane, left.entry) not in _LEFT_OUT_SAID]
      _LEFT_OUT_SAID.update((lane, left.entry) for left in new)
    if new:
      # The advice by the faults' reasons, never their words (an ACL
      # getfacl could not read is worded otherwise); an ACL's covers the
      # owner and mode too.
      acl = owned_paths.Reason.ACL
      fix = trusted_programs.Fix(
          acl if any(left.reason is acl for left in new)
          else owned_paths.Reason.MODE)
      entries = dict.fromkeys(left.entry for left in new)
      logging.warning(terminal_text.Printable(
          f'On {self.name} ({self._Target()} port {self.port}), directories '
          'other users can add programs to are left out of the PATH its '
          f'commands run with: {"; ".join(entries)}. A program only there '
          'is not found: give its full path (e.g. --memtier_path), or make '
          'the directory root\'s or the user\'s and writable by no one '
          f'else: {fix}.'))

  def CommandLane(self) -> Hashable:
    """One lane per master connection (ControlPath %C: user, host, port).

    Two VMs that are one machine (a static machine listed twice) share it.
    """
    if not self.ip_address:
      return super().CommandLane()
    return ('ssh', self.user, self.ip_address, self.port)

  def TeardownLane(self) -> Hashable:
    # _Delete cleans up over the connection and then closes it: not while
    # another VM on the same machine still uses it. (A cloud VM deleted by
    # an API call is alone on its address, so this keeps it parallel.)
    return self.CommandLane()

  def StopMaster(self) -> None:
    """Closes the shared connection (the next command opens a new one)."""
    if not self.ip_address:
      return
    argv = ['ssh'] + self.SshOptions() + ['-p', str(self.port), '-O', 'exit',
                                          self._Target()]
    self._run_local(vm_util.QuoteAll(argv), timeout=10)

  # BaseVirtualMachine hooks ------------------------------------------------

  def RemoteCommandWithReturnCode(
      self, command: str, timeout: Optional[float] = None,
      env: Optional[Dict[str, str]] = None,
      stdin: vm_util.Stdin = None,
      **upstream_options) -> Tuple[str, str, int]:
    command = upstream_vm.UpstreamCommand(command, upstream_options)
    scripts = bool(self.scratch_dir) and shell_scripts.Uses(command, stdin)
    if scripts:
      self._ShipOnce()
    out, err, rc = self._RunCommand(command, timeout, env, stdin, scripts)
    problem = (remote_shell.ScriptsProblem(err)
               if rc == remote_shell.SCRIPTS_REFUSED else None)
    if problem == shell_scripts.MISSING and (stdin is None or
                                             isinstance(stdin, str)):
      # Removed since they were shipped (nothing ran): once more.
      self.ShipScripts()
      out, err, rc = self._RunCommand(command, timeout, env, stdin, scripts)
      problem = (remote_shell.ScriptsProblem(err)
                 if rc == remote_shell.SCRIPTS_REFUSED else None)
    if problem is not None:
      raise virtual_machine.ScriptsRefused(self, problem)
    return out, remote_shell.CleanStderr(err), rc

  def _ShipOnce(self) -> None:
    """Ships the scripts before the first command of this process that runs
    one on this machine's scratch directory (the VMs rebuilt from the
    record for a later stage or teardown share it): one round trip when
    they are there already."""
    where = (self.CommandLane(), self.scratch_dir)
    with _ship_locks_guard:
      lock = _ship_locks.setdefault(where, threading.Lock())
    with lock:
      if where not in _SHIPPED:
        self.ShipScripts()
        _SHIPPED.add(where)

  def _RunCommand(self, command: str, timeout: Optional[float],
                  env: Optional[Dict[str, str]], stdin: vm_util.Stdin,
                  scripts: bool) -> Tuple[str, str, int]:
    """The command over SSH, retried while the connection fails; with
    `scripts`, once the VM checked the shipped scripts."""
    timeout = timeout or COMMAND_TIMEOUT_S
    remote = remote_shell.CommandScript(command, self.scratch_dir, timeout,
                                        env_on_stdin=bool(env),
                                        scripts=scripts)
    lane = self.CommandLane()
    refusal = self._hosts.Refusal(lane, self.connect_timeout)
    if refusal is not None:
      ago, error = refusal
      raise SshError(
          f'Cannot reach {self.name} over SSH ({self._Target()} port '
          f'{self.port}): it did not answer {ago:.0f}s ago '
          f'({error or "no error output"}); not tried again yet. Check the '
          'address, port, user, key and firewall.',
          retry_after=self.connect_timeout - ago)
    # Retries end when the run is stopped (its deadline, a signal), in any
    # thread; once the host did not answer, each command tries once.
    stopped = waits.RunStopped()
    attempts = 1 if self._hosts.IsDown(lane) else self.connect_retries
    failures = []  # stderr of each attempt whose remote shell never started

    def Attempt():
      start = self._clock()
      out, err, rc = self._RunSsh(remote, timeout + LOCAL_GRACE_S,
                                  _WithEnvLine(env, stdin))
      if remote_shell.Started(err):
        self._hosts.Answered(lane)
      elif rc == 255:  # The remote shell never started: safe to try again.
        self._hosts.Failed(lane, vm_util.Tail(err, 1))
        failures.append(err)
      return start, out, err, rc

    def GaveUp(unused_state=None):
      error = vm_util.Tail(remote_shell.CleanStderr(failures[-1]), 2)
      raise SshError(
          f'Cannot reach {self.name} over SSH ({self._Target()} port '
          f'{self.port}) after {len(failures)} attempt(s): '
          f'{error or "no error output"}; check the address, port, user, '
          'key and firewall.')

    def Warn(state: tenacity.RetryCallState) -> None:
      logging.warning('SSH to %s failed (%s); retrying in %.0fs', self.name,
                      vm_util.Tail(failures[-1], 1), state.next_action.sleep)

    def Sleep(seconds: float) -> None:
      self._sleep(seconds)
      if stopped():
        GaveUp()

    start, out, err, rc = tenacity.Retrying(
        retry=tenacity.retry_if_result(lambda result: result[3] == 255 and
                                       not remote_shell.Started(result[2])),
        stop=tenacity.stop_after_attempt(attempts) | stopped,
        wait=tenacity.wait_exponential(), sleep=Sleep, before_sleep=Warn,
        retry_error_callback=GaveUp)(Attempt)
    if rc in (124, 137) and self._clock() - start >= timeout:
      rc = -9  # Timed out on the VM: report it like a local timeout.
    # Killed before its timeout (a stop: SIGINT, the run's deadline) is no
    # sign of a login that hangs: the -9 goes back as before.
    if not remote_shell.Started(err) and (
        rc != -9 or self._clock() - start >= timeout):
      raise self._NotStarted(rc, out, err, timeout + LOCAL_GRACE_S)
    return remote_shell.CommandStdout(out), err, rc

  def _NotStarted(self, rc: int, out: str, err: str,
                  waited: float) -> SshError:
    """A login that answered but never ran the command (exit 0 too: a
    ~/.bashrc ending in `exit` made every command a silent success), or
    that did not start it before ssh was killed after `waited` s (-9: the
    command's own timeout runs only once it starts, so a startup file that
    hangs was reported as a login shell that had ended)."""
    said = vm_util.Tail(err, 2) or vm_util.Tail(out, 2) or 'no output'
    if rc == -9:
      return SshError(
          f'{self.name}: SSH to {self._Target()} port {self.port} did not '
          f'start the command within {waited:.0f} s ({said}); its startup '
          'files (~/.bashrc, ~/.bash_profile, ~/.profile) hang when ssh '
          'gives a command (waiting for input, a program or a network '
          'mount), or the connection stalled: run ssh there with a command '
          '(ssh host true) to see which.')
    return SshError(
        f'{self.name}: SSH works ({self._Target()} port {self.port}) but '
        f'the login shell ended before running the command (exit {rc}: '
        f'{said}); its startup files (~/.bashrc, ~/.bash_profile, '
        '~/.profile) must not exit or exec another program when ssh gives '
        'a command, and the machine needs bash.')

  def WriteFile(self, path: str, content: str, mode: int = 0o600) -> None:
    """Writes atomically (temp file, chmod, rename) with the given mode."""
    quoted = shlex.quote(path)
    self.RemoteCommand(
        f'umask 077; t=$(mktemp "$(dirname {quoted})/.pkb-write.XXXXXX") && '
        f'cat > "$t" && chmod {mode:o} "$t" && mv -f "$t" {quoted}',
        stdin=content, what=f'writing {path} on {self.name}')

  # Long commands -----------------------------------------------------------

  def RunDetached(self, command: str, timeout: float,
                  env: Optional[Dict[str, str]] = None
                  ) -> Tuple[str, str, int]:
    """A long command that survives dropped connections (ssh_jobs.py)."""
    return ssh_jobs.RunDetached(self, command, timeout, env)

  # Lifecycle ---------------------------------------------------------------

  def WaitForSsh(self, timeout: float) -> None:
    """Waits until a shell answers, then makes the scratch dir and probes."""
    deadline = self._clock() + timeout
    remote = remote_shell.CommandScript('true', self.scratch_dir,
                                        self.connect_timeout)
    stopped = waits.RunStopped()

    def Attempt() -> Optional[str]:
      """None once a shell answered, else ssh's error output."""
      # No attempt outlasts the wait: its connect timeout is what is left.
      connect = min(self.connect_timeout, deadline - self._clock())
      out, err, rc = self._RunSsh(remote, connect + LOCAL_GRACE_S,
                                  connect_timeout=max(1.0, connect))
      if rc == 0 and remote_shell.Started(err):
        self._hosts.Answered(self.CommandLane())
        return None
      if stopped():
        raise SshError(f'{self.name}: stopped while waiting for SSH at '
                       f'{self._Target()} port {self.port}.')
      if remote_shell.Started(err):
        # What the command said: its stderr without the markers, the PATH
        # entries left out and what the login printed before them.
        said = vm_util.Tail(remote_shell.CleanStderr(err), 2) or 'no output'
        raise SshError(f'{self.name}: SSH works but the shell failed '
                       f'(exit {rc}): {said}; the VM needs bash and '
                       'coreutils `timeout`.')
      if rc != 255:
        raise self._NotStarted(rc, out, err, connect + LOCAL_GRACE_S)
      return err

    def NoSsh(state: tenacity.RetryCallState) -> None:
      err = state.outcome.result()
      if not self.CAN.made_by_run and _KEY_REFUSED.search(err):
        # Refused to the end (an sshd still starting, or a cloud's agent
        # not yet writing the key, was retried above): the file's key or
        # user is wrong. Its path is named, never its content.
        raise KeyRefused(
            f'{self.name}: {self.ip_address} port {self.port} refused user '
            f'{self.user} with the key {self.keyfile} (Permission denied '
            f'(publickey), for {timeout:.0f} s); give keyfile_path a '
            'private key without a passphrase whose public key is in that '
            'user\'s ~/.ssh/authorized_keys there, or the user_name it logs '
            'in as.')
      said = vm_util.Tail(err, 2).rstrip('.') or 'no output'
      raise SshError(
          f'{self.name}: no SSH at {self._Target()} port {self.port} after '
          f'{timeout:.0f}s: {said}.')

    tenacity.Retrying(
        retry=tenacity.retry_if_result(lambda err: err is not None),
        stop=waits.PastDeadline(self._clock, deadline, inclusive=True),
        wait=lambda state: min(2.0, max(0.0, deadline - self._clock())),
        sleep=self._sleep, retry_error_callback=NoSsh)(Attempt)
    # <the run's workspace>/<name> (run_scope), recorded before anything is
    # put in it. An answer lost on the way leaves an empty directory of an
    # unguessable name behind, nothing else.
    # The root is checked there first, as CheckRoot checks the runner's.
    root = record_checks.REMOTE_SCRATCH_ROOT
    what = f'making the scratch directory on {self.name}'
    with virtual_machine.WorkspaceLock(self):
      out, err, rc = self.RemoteCommandWithReturnCode(
          self.ClaimScript(run_scope.RemoteWorkspaceScript(
              self.run_uri, self.name, self.RunWorkspace(root), root), root))
      fault = run_scope.RemoteRootFault(rc, err)
      if fault:
        raise run_scope.RemoteRootRefusal(
            f'{self.name} ({self._Target()} port {self.port})', root, fault)
      vm_util.CheckedOutput(out, err, rc, what, what,
                            error=errors.VirtualMachine.RemoteCommandError)
      out = self.CheckNotInUse(out)
      problem = run_scope.ScratchProblem(out.strip(), root, self.run_uri)
      if problem:
        raise SshError(f'{self.name}: mktemp gave {problem}.')
      self.Remember(scratch_dir=out.strip())
    self._ShipOnce()
    self.DetectSystem()

  def AwaitSsh(self) -> None:
    self._ssh_waiter(self)

  def SameMachine(self, data: Dict[str, Any]) -> bool:
    return (data.get('user'), data.get('ip_address'),
            data.get('port') or 22) == (self.user, self.ip_address, self.port)

  def CleanUpScratch(self) -> None:
    # Only ever the run's own directories: a path of the run's shape
    # (mktemp's, or checked by FromRecord: normal, so `..` cannot climb out;
    # rm -rf removes a symlink, not what it points to), in a workspace that
    # is the remote user's own, and not while a process still works in it
    # (scripts/clean_scratch.sh).
    if not self.scratch_dir:
      return  # Never made: nothing of the run's there.
    what = f'cleaning {self.name}'
    # A shell of an earlier command of ours can still be exiting there when
    # its ssh has returned (seen once under a loaded suite): asked again
    # for a moment before the directory is called in use (run_scope).
    try:
      _, (out, err, rc) = waits.Poll(
          lambda: self.RemoteCommandWithReturnCode(shell_scripts.Command(
              'clean_scratch.sh', self.scratch_dir)),
          lambda result: result[2] != run_processes.BUSY,
          timeout_s=run_scope.EXITING_S, interval_s=run_scope.EXITING_POLL_S,
          clock=self._clock, sleep=self._sleep, inclusive=True)
    except virtual_machine.ScratchGone:
      return  # Removed already.
    pid, _, name = out.strip().partition(' ')
    if rc == run_processes.BUSY and pid.isdigit():
      raise run_scope.InUse(self.scratch_dir, int(pid), name)
    vm_util.CheckedOutput(out, err, rc, what, what,
                          error=errors.VirtualMachine.RemoteCommandError)

  def _Create(self) -> None:
    self.WaitForSsh(self.connect_timeout * self.connect_retries + 5)

  def _Delete(self) -> None:
    try:
      self.CleanUpScratch()
    except errors.Error as e:
      # The VM stays live in the run record, so the next teardown tries
      # again: its scratch directory holds the shards' config files, with
      # the run's Redis password and the load user's.
      raise SshError(
          f'its scratch directory {self.scratch_dir} (the run\'s shard '
          f'configs, with its Redis password) is left on it: {e}') from None
    finally:
      self.StopMaster()

  # System ------------------------------------------------------------------

  def DetectSystem(self) -> system_info_lib.SystemInfo:
    if self.system_info is None:
      system = super().DetectSystem()
      self.num_cpus = self.num_cpus or system.num_cpus
      self.memory_mib = self.memory_mib or system.memory_mib
    return self.system_info

  def Sudo(self, command: str) -> str:
    if self.user == 'root' or self.DetectSystem().is_root:
      return command
    # The shipped scripts' checked directory goes along (sudo keeps no
    # environment of the caller's).
    scripts = (f'env {shell_scripts.ENV}="${shell_scripts.ENV}" '
               if shell_scripts.Uses(command) else '')
    return f'sudo -n {scripts}bash -c {shlex.quote(command)}'

  def InstallMissingPackages(self, manager: str,
                             missing: Sequence[str]) -> None:
    """apt-get or dnf/yum as root, detached (an install survives a dropped
    connection)."""
    out, err, rc = self.RunDetached(
        self.Sudo(shell_scripts.Command('install.sh', 'packages', manager,
                                        *missing)),
        PACKAGE_INSTALL_TIMEOUT_S)
    if rc != 0:
      hint = ('; give the user passwordless sudo'
              if 'password is required' in err else '')
      raise errors.VirtualMachine.RemoteCommandError(
          f'installing {" ".join(missing)} on {self.name} failed '
          f'({"timed out" if rc == -9 else f"exit {rc}"}): '
          f'{vm_util.Tail(err, 3) or vm_util.Tail(out, 3)}{hint}')

  # Installs are in linux_packages/ (one module per program, run through
  # remote_install.py); tuning is a property of the machine, so it is here.

  def ApplySystemTuning(self, enabled: bool) -> Dict[str, str]:
    """Applies system_tuning.py if enabled (--nosystem_tuning turns it off);
    returns the settings in force, which SystemMetadata() then includes."""
    applied = ''
    if enabled:
      holder = self.RecordHostSettings()
      out, err, rc = self.RemoteCommandWithReturnCode(
          self.Sudo(system_tuning.ApplyCommand(
              holder, record_checks.REMOTE_SCRATCH_ROOT)), timeout=60)
      applied = out if rc == 0 else 'tuning_failed=sudo\n'
      if rc != 0:
        logging.warning('System tuning on %s failed: %s', self.name,
                        vm_util.Tail(err, 2))
      self.SayTuningShared(applied)
    current, _ = self.RemoteCommand(system_tuning.ReadCommand(), timeout=60,
                                    what=f'reading settings on {self.name}')
    self.tuning = system_tuning.Parse(applied + current, enabled)
    return dict(self.tuning)

  def ClaimScript(self, make: str, root: str) -> str:
    """The shell that makes the VM's scratch directory (`make`, under
    `root`): a machine the run does not make may be in use by another run,
    so the static provider looks for one first, in the same step
    (CheckNotInUse reads what it found); a cloud VM is the run's own."""
    del root  # The static provider's.
    return make

  def CheckNotInUse(self, out: str) -> str:
    """ClaimScript's output: refuses, in one line, a machine another run is
    using (the static provider's); returns the scratch directory's line."""
    return out

  def RecordHostSettings(self) -> str:
    """Before the tuning changes this machine's settings: a machine that
    outlives the run records them here, to put them back at teardown (the
    static provider's), and returns its place in the machine's lease
    (system_tuning.Holder); a cloud VM is deleted with them: ''."""
    return ''

  def SayTuningShared(self, applied: str) -> None:
    """The tuning's output (`applied`): says which other runs' tunings are
    in force on this machine too, with how to tear each down (the static
    provider's: a machine the run's tuning holds a place on,
    RecordHostSettings); a cloud VM holds none, so shares it with none."""
    del applied

  def SystemMetadata(self) -> Dict[str, Any]:
    """OS, kernel, architecture and tuning, for sample metadata."""
    return {**self.DetectSystem().Metadata(), **self.tuning}

  def GetResourceMetadata(self) -> Dict[str, Any]:
    metadata = super().GetResourceMetadata()
    if self.system_info is not None:
      metadata.update(self.SystemMetadata())
    return metadata

  def RecordData(self) -> Dict[str, Any]:
    return dict(super().RecordData(), user=self.user, keyfile=self.keyfile,
                port=self.port, known_hosts_file=self.known_hosts_file)

  class Fields(record_checks.Fields):
    """What an SSH VM's entry holds (its RecordData and the base class's)."""
    cloud: Optional[str] = None
    group: str = ''
    machine_type: str = 'unknown'
    zone: Optional[str] = None
    os_type: str = 'unknown'
    num_cpus: Optional[int] = None
    memory_mib: Optional[int] = None
    cpu_set: record_checks.Cores = None
    # These become ssh arguments: nothing that ssh could read as an option.
    user: User
    ip_address: Host
    internal_ip: Optional[Host] = None
    keyfile: Optional[Keyfile] = None
    port: record_checks.Port = 22
    known_hosts_file: Optional[record_checks.LocalPath] = None
    # Only a directory of the run's workspace shape is ever used or removed.
    scratch_dir: record_checks.RemoteScratch = ''

    def Spec(self, cloud: str) -> virtual_machine.VmSpec:
      return virtual_machine.VmSpec(
          cloud=self.cloud or cloud, machine_type=self.machine_type,
          zone=self.zone, num_cpus=self.num_cpus,
          memory_mib=self.memory_mib, os_type=self.os_type)

    def Args(self, record) -> Dict[str, Any]:
      """The constructor's keyword arguments."""
      return dict(user=self.user, ip_address=self.ip_address,
                  internal_ip=self.internal_ip, keyfile=self.keyfile,
                  port=self.port, known_hosts_file=self.known_hosts_file,
                  record=record)

  @classmethod
  def FromRecord(cls, entry, record) -> 'SshVirtualMachine':
    """Rebuilds the VM for later stages and teardown (SSH and deleting it
    work, creating it does not)."""
    fields = record_checks.Parse(cls.Fields, entry, record)
    vm = cls(fields.Spec(cls.CLOUD), entry['name'], fields.group,
             **fields.Args(record))
    vm.Restore(fields)
    vm.created = True
    return vm

  def RestoreFromRecord(self) -> None:
    """In a resumed run, takes back what provisioning recorded of it."""
    entry = self.record.FindResource(self.KIND, self.name)
    if entry and entry['status'] == 'created':
      self.Restore(record_checks.Parse(self.Fields, entry, self.record))
      self.created = True

  def Restore(self, fields: Fields) -> None:
    """Takes back what an earlier stage of the run recorded."""
    self.scratch_dir, self.cpu_set = fields.scratch_dir, fields.cpu_set
    self.ip_address = fields.ip_address
    self.internal_ip = fields.internal_ip or fields.ip_address
    self.keyfile = fields.keyfile or self.keyfile
    self.num_cpus = fields.num_cpus or self.num_cpus
    self.memory_mib = fields.memory_mib or self.memory_mib
