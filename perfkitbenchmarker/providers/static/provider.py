"""Existing machines from --static_vm_file, reached over SSH.

The file is PKB's static VM JSON (README: a list assigned to the vm_groups
servers first, or one list per group; StaticMachine: the keys). A relative
keyfile_path is taken from the file's directory. The same machine may be
listed more than once: each listing gets its own scratch directory.

Creating a static VM only checks that SSH works and makes the run's scratch
directory; deleting it only removes that directory. Nothing is bought or
destroyed, and no cloud API is called. A machine teardown cannot reach keeps
its directory (the shards' configs hold the run's Redis password), so it
stays live in the run record: teardown says so, exits non-zero and tries
again the next time.
"""

import json
import logging
import os
import posixpath
import re
import shlex
import stat
import threading
from typing import (Annotated, Any, Dict, List, Optional, Sequence, Tuple,
                    Union)

import pydantic

from perfkitbenchmarker import errors
from perfkitbenchmarker import flags as pkb_flags
from perfkitbenchmarker import json_input
from perfkitbenchmarker import paths
from perfkitbenchmarker import providers
from perfkitbenchmarker import record_checks
from perfkitbenchmarker import regular_files
from perfkitbenchmarker import resource
from perfkitbenchmarker import run_record
from perfkitbenchmarker import run_scope
from perfkitbenchmarker import run_signals
from perfkitbenchmarker import shell_scripts
from perfkitbenchmarker import ssh_vm
from perfkitbenchmarker import system_tuning
from perfkitbenchmarker import terminal_text
from perfkitbenchmarker import virtual_machine
from perfkitbenchmarker import vm_util

CLOUD = 'Static'
# Keys PKB's format allows that mean nothing here.
IGNORED_PKB_KEYS = ('install_packages', 'disk_specs', 'local_disks',
                    'scratch_disk_mountpoints')
SSH_TIMEOUT_S = 30
# One run measures on a machine at a time (StaticVirtualMachine.
# CheckNotInUse). Set to 1 where runs share machines on purpose: the test
# suite's runs all measure on the one machine its loopback sshd is.
SHARED_MACHINES_ENV = 'PKB_SHARED_MACHINES'
# How many workspaces of other runs of the login user that check looks at:
# a user keeps a few (one per run not torn down); each costs a scan of the
# machine's processes.
OTHER_RUNS_AT_MOST = 32
# A run's workspace whose run sent no command there for this long is not
# live (scripts/other_runs.sh: its time, which every command touches). It
# outlasts the longest command (a package install), during which a run of
# another login sends nothing else: its processes are not to see. So a run
# killed before its teardown blocks the machine for at most this long.
QUIET_S = ssh_vm.PACKAGE_INSTALL_TIMEOUT_S + 300
# How long a run waits for another's look-and-make step on the machine
# (StaticVirtualMachine.ClaimScript): a scan of its processes, seconds.
CLAIM_WAIT_S = 60
# (SSH lane, workspace) of each idle workspace of another run this process
# warned about: once per machine, not once per VM listed on it.
_IDLE_SAID = set()
_idle_said_lock = threading.Lock()
# A file of machines is a few KiB; far more is not one.
MAX_FILE_BYTES = 1 << 20


def _Label(value: str) -> str:
  if not value.isprintable():
    raise ValueError(f'{value!r} is not printable text (no control '
                     'characters)')
  return value


Label = Annotated[str, pydantic.AfterValidator(_Label)]


class StaticMachine(record_checks.Fields):
  """One machine of the file, validated; its SSH fields by the rules the run
  record is read back with (ssh_vm.User, Host, Keyfile), so a machine is
  refused here, before anything is recorded, never left in a record that
  teardown then refuses."""

  model_config = pydantic.ConfigDict(extra='forbid')
  ip_address: ssh_vm.Host
  user_name: ssh_vm.User
  keyfile_path: str  # Its file checked, then made absolute: _CheckKeyfile.
  internal_ip: Optional[ssh_vm.Host] = None  # What clients use to reach it.
  # A JSON number, as every field's type is strict (record_checks.Fields):
  # "22" is refused as "ssh" is, not read as one.
  ssh_port: record_checks.Port = 22
  os_type: Label = ''
  zone: Label = ''
  machine_type: Label = ''


_KEYS = ('every machine has ip_address, user_name and keyfile_path, and may '
         'have internal_ip, ssh_port, os_type, zone and machine_type')


def _Fail(path: str, message: str) -> errors.UsageError:
  return errors.UsageError(f'--static_vm_file {path}: {message}')


def _CheckKeyfile(path: str, where: str, keyfile: str) -> str:
  full = os.path.join(os.path.dirname(os.path.abspath(path)),
                      os.path.expanduser(keyfile))
  try:
    mode = os.stat(full).st_mode
  except FileNotFoundError:
    raise _Fail(path, f'{where}: keyfile_path {full} does not exist; give '
                'the private key that logs in as user_name.') from None
  except OSError as e:  # A loop of symlinks, a file on the way: not missing.
    raise _Fail(path, f'{where}: keyfile_path {full}: {e.strerror}; give '
                'the private key that logs in as user_name.') from None
  except ValueError:  # A NUL byte ("\u0000" in the JSON): no path has one.
    raise _Fail(path, f'{where}: keyfile_path {keyfile!r} holds a NUL '
                'byte; give the path of the private key.') from None
  if not stat.S_ISREG(mode):
    raise _Fail(path, f'{where}: keyfile_path {full} is not a file.')
  if mode & 0o077:
    raise _Fail(path, f'{where}: keyfile_path {full} has mode '
                f'{stat.S_IMODE(mode):o}; run chmod 600 {full} (ssh refuses '
                'keys others can read).')
  return full


def _ParseMachine(path: str, where: str, item: Any) -> StaticMachine:
  if not isinstance(item, dict):
    raise _Fail(path, f'{where} must be an object; {_KEYS}.')
  ignored = sorted(set(item) & set(IGNORED_PKB_KEYS))
  if ignored:
    logging.warning('%s: ignoring %s in %s', path, ', '.join(ignored), where)
  try:
    machine = StaticMachine.model_validate(
        {k: v for k, v in item.items() if k not in IGNORED_PKB_KEYS})
  except pydantic.ValidationError as e:
    keys = any(p['type'] in ('missing', 'extra_forbidden') for p in e.errors())
    raise _Fail(path, f'{where}: {errors.Problems(e)}'
                f'{f" ({_KEYS})" if keys else ""}.') from None
  keyfile = _CheckKeyfile(path, where, machine.keyfile_path)
  problem = ssh_vm.FieldProblem('keyfile', keyfile)
  if problem:
    raise _Fail(path, f'{where}: keyfile_path {problem}.')
  return machine.model_copy(update={
      'keyfile_path': keyfile,
      'internal_ip': machine.internal_ip or machine.ip_address})


def LoadStaticVmFile(path: str) -> Union[List[StaticMachine],
                                         Dict[str, List[StaticMachine]]]:
  """Reads and validates the file: a list, or {group: list}."""
  full = os.path.expanduser(path)
  if not os.path.lexists(full):
    raise _Fail(path, 'no such file; give the JSON list of existing '
                'machines.')
  try:
    # Bounded, a regular file only: a FIFO would wait for a writer for
    # ever and /dev/zero fill the memory.
    text = regular_files.ReadRegular(full, MAX_FILE_BYTES)
  except regular_files.NotRegular as e:
    raise _Fail(path, f'cannot read it: {e}.') from None
  try:
    # json keeps the last of a key given twice, silently: a second
    # ip_address in one machine's object was the machine the run reached.
    data = json_input.Loads(text)
  except json_input.KeyTwice as e:
    raise _Fail(path, f'an object gives the key {json.dumps(e.key[:40])} '
                'twice; give each key once (json would keep only the '
                'last).') from None
  except (ValueError, RecursionError) as e:
    raise _Fail(path, f'not valid JSON ({e}).') from None

  def ParseList(items: Any, label: str, prefix: str) -> List[StaticMachine]:
    if not isinstance(items, list) or not items:
      raise _Fail(path, f'{label} must be a non-empty list of machines.')
    return [_ParseMachine(path, f'{prefix}entry {i}', item)
            for i, item in enumerate(items)]

  if isinstance(data, dict):
    return {group: ParseList(items, f'"{group}"', f'"{group}" ')
            for group, items in data.items()}
  return ParseList(data, 'the file', '')


def AssignGroups(machines, counts: Dict[str, int],
                 path: str) -> Dict[str, List[StaticMachine]]:
  """Gives each vm_group its vm_count machines from the parsed file."""
  order = virtual_machine.GroupOrder(counts)
  if isinstance(machines, dict):
    unknown = sorted(set(machines) - set(counts))
    if unknown:
      raise _Fail(path, f'group(s) {", ".join(unknown)} are not in the '
                  f'benchmark config (its groups: {", ".join(order)}).')
    assigned = {}
    for group in order:
      have = machines.get(group, [])
      if len(have) < counts[group]:
        raise _Fail(path, f'"{group}" lists {len(have)} machine(s) but the '
                    f'config needs vm_count={counts[group]}; add machines or '
                    f'lower vm_groups.{group}.vm_count.')
      assigned[group] = have[:counts[group]]
    return assigned
  needed = sum(counts.values())
  if len(machines) < needed:
    wants = ', '.join(f'{g}={counts[g]}' for g in order)
    raise _Fail(path, f'lists {len(machines)} machine(s) but the config '
                f'needs {needed} ({wants}); add machines (the same machine '
                'may be listed twice) or lower the vm_counts.')
  if len(machines) > needed:
    logging.warning('%s lists %d machines; using the first %d.', path,
                    len(machines), needed)
  assigned, start = {}, 0
  for group in order:
    assigned[group] = list(machines[start:start + counts[group]])
    start += counts[group]
  return assigned


class StaticVirtualMachine(ssh_vm.SshVirtualMachine):
  """An existing machine: connected to, never created or destroyed."""

  CLOUD = CLOUD
  KIND = 'static_vm'
  CAN = providers.CAPABILITIES[CLOUD]
  # run_uri -> lock of the other runs whose pkb holds its run lock on this
  # runner, as ClaimScript found them.
  _live: Dict[str, run_scope.HeldLock] = {}

  def _Create(self) -> None:
    self.WaitForSsh(SSH_TIMEOUT_S)
    if self.os_type in ('', 'detected'):
      info = self.DetectSystem()
      self.os_type = f'{info.os_id}{info.os_version_id.split(".")[0]}'

  def ClaimScript(self, make: str, root: str) -> str:
    """Looks for other live runs of the login user (scripts/other_runs.sh)
    and makes the scratch directory (`make`) only if there is none, in one
    step under a lock on the machine (flock on `root`, its workspaces'
    directory): two runs provisioning at the same moment each looked
    before either had made its workspace, and both went on."""
    if os.environ.get(SHARED_MACHINES_ENV) == '1':
      return make
    # A run provisioning has nothing working in its workspace yet; its pkb
    # holds its run lock, which a run started from this runner can see.
    self._live = {lock.run_uri: lock for lock in run_scope.HeldRunLocks()
                  if lock.run_uri != self.run_uri}
    return shlex.join(shell_scripts.Inline(
        'other_runs.sh', root, self.run_uri, OTHER_RUNS_AT_MOST,
        CLAIM_WAIT_S, make, ','.join(self._live), QUIET_S))

  def CheckNotInUse(self, out: str) -> str:
    """Refuses, in one line, a machine where another run is live
    (ClaimScript found it and made nothing of this run there): a process
    works in that run's workspace (run_processes' rule; scripts/other_runs.sh
    reads only directories of the login user's own); or nothing does yet
    but its pkb holds its run lock on this runner (one provisioning:
    installs come before its first server); or its run sent a command there
    less than QUIET_S ago (the workspace's time, which any login reads: a
    run of another runner, or of another login user, whose processes are
    not to see). Another run's workspace of none of these (a run killed
    before its teardown, one between two stages, QUIET_S after its last
    command) gets one WARNING and the run goes on. Checked when the run
    provisions the machine, the one stage every run on it starts with; a
    later stage of the run is not checked again. Returns the rest of
    `out`: the scratch directory's line."""
    if os.environ.get(SHARED_MACHINES_ENV) == '1':
      return out
    root = record_checks.REMOTE_SCRATCH_ROOT
    kinds = ('busy ', 'live ', 'recent ', 'idle ')
    found_lines = [line for line in terminal_text.Lines(out)
                   if line.startswith(kinds)]
    made = '\n'.join(line for line in terminal_text.Lines(out)
                     if not line.startswith(kinds))
    busy, idle, quiet_said = [], [], False
    for line in found_lines:
      found = re.fullmatch(
          r'busy (?P<busy>\S+) (?P<pid>\d+) (?P<name>.*)|idle (?P<idle>\S+)|'
          r'live (?P<live>\S+)|'
          r'recent (?P<recent>\S+) (?P<age>\d+) (?P<user>\S+)', line)
      workspace = found and (found['busy'] or found['idle'] or
                             found['live'] or found['recent'])
      run = workspace and run_scope.WorkspaceRun(workspace, root)
      if not run or run == self.run_uri:
        continue
      if found['busy']:
        busy.append((run, workspace, f'{found["name"]} PID {found["pid"]} '
                     f'works in its workspace {workspace}'))
      elif found['live']:
        held = self._live.get(run)
        busy.append((run, workspace, f'its pkb holds its run lock on this '
                     f'runner, {held and held.owner or "unnamed"}; '
                     f'nothing works in its workspace {workspace} yet'))
      elif found['recent']:
        login = ('' if found['user'] == self.user else
                 f'of login {found["user"]}; ')
        busy.append((run, workspace, f'{login}its last command here came '
                     f'{found["age"]} s ago, to its workspace {workspace}'))
        quiet_said = True
      else:
        idle.append((run, workspace, found))
    where = f'{self._Target()} port {self.port}'
    with _idle_said_lock:
      new = [(run, workspace) for run, workspace, _ in idle
             if (self.CommandLane(), workspace) not in _IDLE_SAID]
      _IDLE_SAID.update((self.CommandLane(), w) for _, w in new)
    if new:
      logging.warning(terminal_text.Printable(
          f'{self.name}: {where} holds the workspace of run(s) '
          f'{", ".join(f"{run} ({workspace})" for run, workspace in new)} '
          'with no process working in it and no command of its run for '
          f'{QUIET_S // 60} min (a run that ended without its teardown, or '
          'one between two stages), which does not stop this run. A run\'s '
          'teardown removes its workspace: '
          + self.TeardownOf([(run, [workspace]) for run, workspace in new])))
    if busy:
      shown = {}  # Each run once, with what shows it is alive.
      for run, workspace, why in busy:
        shown.setdefault(run, (workspace, f'run {run} ({why})'))
      runs, rest = list(shown)[:3], list(shown)[3:]
      # Every live run is named: the ones past the third by run_uri only.
      more = (f' and {len(rest)} more (run {", ".join(rest)})' if rest
              else '')
      them = 'it' if len(shown) == 1 else 'them'
      raise errors.UsageError(terminal_text.Printable(
          f'{self.name}: {where} is in use by '
          f'{"; ".join(shown[run][1] for run in runs)}{more}; nothing of '
          f'this run was made there. Wait for {them} to finish, or tear '
          f'{them} down: '
          + self.TeardownOf([(run, [shown[run][0]]) for run in runs])
          + (f' (a run with no command here for {QUIET_S // 60} min is not '
             'counted)' if quiet_said else '')))
    return made

  def TeardownOf(self, runs: List[Tuple[str, Sequence[str]]]) -> str:
    """How to tear down each of `runs` (run_uri, its workspaces here): the
    teardown command of each whose record is found (`_RunDirOf`, for one of
    its workspaces); the others where they were started, with no command:
    one without the --results_dir of a run kept off the default would look
    for its record where it is not (and from another checkout, where none
    is)."""
    # The runs under way on this runner now: one started since ClaimScript
    # looked (or in a later stage of this run, where it never did), with
    # results of its own, is found there only.
    held = {lock.run_uri: lock for lock in run_scope.HeldRunLocks()}
    commands, unknown = [], []
    for run, workspaces in runs:
      run_dir = next(filter(None, (self._RunDirOf(run, workspace, held)
                                   for workspace in workspaces)), None)
      if run_dir:
        commands.append(run_signals.TeardownCommand(run, run_dir))
      else:
        unknown.append(run)
    advice = ', '.join(commands)
    if unknown:
      one = len(unknown) == 1
      advice += ('; ' if commands else '') + (
          f'run {", ".join(unknown)} where {"it was" if one else "they were"}'
          f' started ({"its" if one else "their"} results directory is not '
          'known here)')
    return advice

  def _RunDirOf(self, run: str, workspace: str,
                held: Dict[str, run_scope.HeldLock]) -> Optional[str]:
    """The directory of run `run`'s record, if one is found that lists a
    scratch directory in `workspace` (a name mktemp chose: the record of
    that run, not of another with its run_uri on another runner). It is
    looked for where that run's lock on this runner says (a run under way:
    its lock now, in `held`, or when ClaimScript looked), then beside this
    run's record and in the default results directory."""
    places = [lock.run_dir for lock in (held.get(run), self._live.get(run))
              if lock and lock.run_dir]
    if self.record is not None:
      places.append(os.path.join(
          os.path.dirname(os.path.normpath(self.record.run_dir)), run))
    places.append(os.path.join(paths.RunsDir(), run))
    for run_dir in dict.fromkeys(places):
      try:
        record = run_record.RunRecord.Load(run_dir, run)
      except (errors.Error, OSError):
        continue  # None there, or not one to read.
      if any(posixpath.dirname(str(entry['data'].get('scratch_dir') or ''))
             == workspace for entry in record.Resources()):
        return run_dir
    return None

  def SayTuningShared(self, applied: str) -> None:
    """Names the other runs whose tunings are in force here too (the
    tuning's tuning_shared line), with each one's teardown (TeardownOf, by
    its workspaces here: the tuning's tuning_workspace lines), and each
    holder whose run has no workspace here (tuning_unseen: no teardown may
    ever come) with how to give its place up (LostHolder), as teardown
    does (HostSettings)."""
    unseen = system_tuning.Unseen(applied, 'apply')
    shared = [h for h in system_tuning.SharedWith(applied) if h not in unseen]
    for lost in unseen:
      logging.warning(terminal_text.Printable(
          f'System tuning on {self.name} shares the settings with '
          + self.LostHolder(lost)))
    if shared:
      logging.warning(terminal_text.Printable(
          f'System tuning on {self.name}: the tuning of {", ".join(shared)} '
          'is in force there too (<run_uri>/<vm>: running, or not torn '
          'down: ' + self.TeardownOf(_HolderRuns(
              shared, system_tuning.Workspaces(applied, 'apply')))
          + '); the settings go back as they were before the first when '
          'the last is torn down.'))

  def LostHolder(self, lost: str) -> str:
    """`lost` (a holder of the machine's lease whose run has no workspace
    here: system_tuning.Unseen), what that means and the command that
    gives its place up, for tuning's and teardown's warnings alike."""
    ssh = shlex.join(['ssh', '-p', str(self.port), '-i', self.keyfile,
                      f'{self.user}@{self.ip_address}'])
    # A run whose record is gone can never be torn down, so without this
    # the machine stayed tuned, with a warning at every tuning and teardown.
    return (f'{lost}, whose run has no workspace there '
            f'({record_checks.REMOTE_SCRATCH_ROOT}/pkb-{lost.split("/")[0]}'
            '.*): nothing of it runs there. If no teardown of that run can '
            'run (its run record lost), give its place up: '
            + system_tuning.GiveBackCommand(lost, ssh))

  def RecordHostSettings(self) -> str:
    """The machine is lent: the settings in force go into the run record
    before the tuning changes them, and teardown gives the VM's place in
    the machine's lease up (the last puts them back)."""
    out, _ = self.RemoteCommand(system_tuning.SnapshotCommand(), timeout=60,
                                what=f'reading settings on {self.name}')
    found = system_tuning.ParseSnapshot(out)
    HostSettings(self, found,
                 system_tuning.ParseSnapshot(out, lease=True) or found,
                 record=self.record).Create()
    return system_tuning.Holder(self.run_uri, self.name)


def _HolderRuns(holders: List[str], spaces: Dict[str, List[str]]
                ) -> List[Tuple[str, List[str]]]:
  """Each run of `holders` (<run_uri>/<vm>, in order) with the workspaces
  on the machine the tuning found of its holders (`spaces`: Workspaces),
  whose record gives its teardown's --results_dir (TeardownOf)."""
  runs: Dict[str, List[str]] = {}
  for holder in holders:
    runs.setdefault(holder.partition('/')[0], []).extend(
        spaces.get(holder, []))
  return list(runs.items())


class HostSettings(resource.BaseResource):
  """Host-wide settings of a static machine before the run's tuning
  (system_tuning.py), recorded first: `old`, those in force when the run
  came (another run's tuning, if one was in force), and `machine`, the
  machine's own (the lease's: before the first tuning in force; `old` when
  none was). When deleted (teardown, whatever ended the run), the VM's
  place in the machine's lease is given up, and the last holder's teardown
  writes back the machine's own."""

  KIND = 'static_host_settings'

  def __init__(self, vm: StaticVirtualMachine, old: Dict[str, str],
               machine: Optional[Dict[str, str]] = None, record=None):
    super().__init__(vm.name, record)
    self.vm = vm
    self.old = dict(old)
    self.machine = dict(old if machine is None else machine)

  def RecordData(self) -> Dict[str, Any]:
    return {'vm_name': self.vm.name, 'old': self.old,
            'machine': self.machine}

  def TeardownLane(self):
    return self.vm.CommandLane()  # Over the VM's connection.

  def _Create(self) -> None:
    pass  # Recorded; ApplySystemTuning changes the settings next.

  def _Delete(self) -> None:
    # Read first, unprivileged: when this VM holds no place in the
    # machine's lease (the tuning never ran, or sudo refused it: a lender's
    # user without passwordless sudo; or it was given up already), there
    # is nothing to put back, and restore's sudo would fail the teardown of
    # a machine the run never changed, run after run.
    holder = system_tuning.Holder(self.vm.run_uri, self.vm.name)
    now, _ = self.vm.RemoteCommand(system_tuning.SnapshotCommand(),
                                   timeout=60,
                                   what=f'reading settings on {self.vm.name}')
    if holder not in system_tuning.Holders(now):
      return
    root = record_checks.REMOTE_SCRATCH_ROOT
    out, err, rc = self.vm.RemoteCommandWithReturnCode(
        self.vm.Sudo(system_tuning.RestoreCommand(holder, root)), timeout=60)
    failed = [vm_util.Tail(line.partition('=')[2], 1) for line in
              terminal_text.Lines(out) if line.startswith('restore_failed=')]
    if rc != 0 or failed:
      raise errors.ResourceError(
          f'could not put back {", ".join(failed) or "the settings"} on '
          f'{self.vm.name} ({vm_util.Tail(err, 1) or "refused"});'
          f' the machine\'s own values: {self.machine}')
    unseen = system_tuning.Unseen(out)
    deferred = [h for h in system_tuning.Deferred(out) if h not in unseen]
    for lost in unseen:
      logging.warning(terminal_text.Printable(
          f'Settings on {self.vm.name} stay tuned for '
          + self.vm.LostHolder(lost)))
    if deferred:
      runs = _HolderRuns(deferred, system_tuning.Workspaces(out))
      logging.warning(terminal_text.Printable(
          f'Settings on {self.vm.name} stay tuned while the tuning of '
          f'{", ".join(deferred)} is in force (<run_uri>/<vm>: running, or '
          f'not torn down: {self.vm.TeardownOf(runs)}); the last one torn '
          'down puts back the values before the first.'))

  class Fields(record_checks.Fields):
    vm_name: str
    old: Dict[str, str]
    machine: Optional[Dict[str, str]] = None  # Records before it: `old`.

  @classmethod
  def FromRecord(cls, entry, record) -> 'HostSettings':
    fields = record_checks.Parse(cls.Fields, entry, record)
    problem = (system_tuning.RestoreProblem(fields.old) or
               system_tuning.RestoreProblem(fields.machine or {}))
    if problem:
      raise record_checks.RecordRefused(
          f'{cls.KIND} {entry["name"]}: {problem}; left alone')
    vm = virtual_machine.VmFromRecord(record, fields.vm_name)
    return cls(vm, fields.old, fields.machine, record=record)


resource.RegisterKind(StaticVirtualMachine.KIND,
                      StaticVirtualMachine.FromRecord)
resource.RegisterKind(HostSettings.KIND, HostSettings.FromRecord)


def _VmFile(flag_values) -> str:
  if not flag_values.static_vm_file:
    raise errors.UsageError(
        '--cloud=Static needs --static_vm_file=<JSON list of machines>.')
  return flag_values.static_vm_file


def CheckPrerequisites(flag_values) -> None:
  """Validates the file before anything starts (counts come later)."""
  LoadStaticVmFile(_VmFile(flag_values))


def _Assigned(spec) -> Dict[str, List[StaticMachine]]:
  """The file, read once, and its machines given to the groups."""
  path = _VmFile(spec.flags)
  return AssignGroups(LoadStaticVmFile(path), spec.GroupCounts(), path)


def SharedMachines(machines, assigned: Dict[str, List[StaticMachine]],
                   path: str) -> List[str]:
  """A WARNING when a server and a load generator are one machine by the
  file's own words (the same ip_address and ssh_port, or the same
  internal_ip; no name is resolved), naming their entries."""
  entries, start = [], 0
  for group, listed in assigned.items():  # In the order AssignGroups took.
    for i, machine in enumerate(listed):
      where = (f'"{group}" entry {i}' if isinstance(machines, dict)
               else f'entry {start + i}')
      entries.append((group == virtual_machine.SERVER_GROUP, where, machine))
    start += len(listed)
  pairs = [f'{server} and {client}'
           for is_server, server, one in entries if is_server
           for is_client_too, client, other in entries if not is_client_too
           if (one.ip_address.lower(), one.ssh_port) ==
           (other.ip_address.lower(), other.ssh_port) or
           one.internal_ip.lower() == other.internal_ip.lower()]
  if not pairs:
    return []
  return [f'WARNING: --static_vm_file {path}: {", ".join(pairs)} are one '
          'machine (a server and a client): the load generator takes the '
          'server\'s cores, so the figure understates the server; list '
          'the clients on other machines.']


def CheckMachines(spec) -> List[str]:
  """The file read and its machines given to the groups as ConstructVms
  will: the plan (a dry run's too) refuses a file the run would, and
  warns of a server sharing a machine with a client. Only when the run
  provisions: later stages take their machines from the run record,
  whatever the file lists now."""
  if 'provision' not in pkb_flags.RunStages(spec.flags.run_stage):
    return []
  path = _VmFile(spec.flags)
  machines = LoadStaticVmFile(path)
  return SharedMachines(
      machines, AssignGroups(machines, spec.GroupCounts(), path), path)


def ConstructVms(spec) -> Dict[str, List[StaticVirtualMachine]]:
  """One StaticVirtualMachine per configured VM, from the file."""
  counts = spec.GroupCounts()
  assigned = _Assigned(spec)
  groups: Dict[str, List[StaticVirtualMachine]] = {}
  for group in virtual_machine.GroupOrder(counts):
    group_config = spec.config.get('vm_groups', {}).get(group) or {}
    # A vm_spec.Static entry in the config is optional defaults.
    defaults = dict((group_config.get('vm_spec') or {}).get(CLOUD) or {})
    for i, machine in enumerate(assigned[group]):
      vm_spec = virtual_machine.VmSpec(
          cloud=CLOUD,
          machine_type=(machine.machine_type or
                        defaults.get('machine_type') or 'static'),
          zone=machine.zone or defaults.get('zone'),
          num_cpus=defaults.get('num_cpus'),
          memory_mib=defaults.get('memory_mib'),
          os_type=(machine.os_type or defaults.get('os_type') or
                   group_config.get('os_type') or 'detected'),
          priced_as=defaults.get('priced_as'))
      groups.setdefault(group, []).append(StaticVirtualMachine(
          vm_spec, f'{group}-{i}', group, user=machine.user_name,
          ip_address=machine.ip_address, keyfile=machine.keyfile_path,
          port=machine.ssh_port, internal_ip=machine.internal_ip,
          record=spec.record, run_uri=spec.run_uri))
  return groups
