"""Kernel and limit settings Redis's own documentation asks for.

Redis warns at start-up about transparent huge pages (latency spikes on fork
and allocation), a small `net.core.somaxconn` (the listen backlog caps its
`tcp-backlog`) and `vm.overcommit_memory` other than 1 (background saves can
fail); hundreds of client connections per shard also need a high open-file
limit. `ApplyCommand` sets all of them as well as it can (each step on its
own, so one read-only knob does not stop the others) and `ReadCommand` prints
what is in force afterwards; the SSH VM runs both and puts the result in the
sample metadata, so a result always says which settings it was measured
under. Nothing here is persistent across a reboot except the limits file,
which only affects new logins.

On a machine that outlives the run (a static VM, lent for it) the settings
are host-wide and the lender gets the machine back as it was:
`SnapshotCommand` prints the values in force before anything is applied
(the run records them, old value first). Two runs may tune one machine
(side by side, overlapping in prepare and teardown, or one never torn
down), so the values written back are the machine's own record of them:
`ApplyCommand` first takes the run's place in a lease kept by root on the
machine (LEASE_FILE: the values before the first tuning in force, and one
holder line per tuning), and `RestoreCommand` gives that place up; the last
holder's writes back each value that changed and removes the limits file
if the first holder made it.

The shell is scripts/system_tuning.sh (what each setting is, where it is
kept and how it is set); here are the settings' names and the forms of the
values restore may write, and the parsers.

Extension seam: add a setting to system_tuning.sh and a `Setting` of the
same name to SETTINGS; its value is applied, read back, reported under its
`name` and, when `restorable`, restored.
"""

import dataclasses
import re
import shlex
from typing import Dict, List, Mapping

from perfkitbenchmarker import shell_scripts
from perfkitbenchmarker import terminal_text

SCRIPT = 'system_tuning.sh'  # What each setting is and how it is set.
# The open-file limits file the tuning writes (the script's $limits).
LIMITS_FILE = '/etc/security/limits.d/99-pkb-redis.conf'
# The lease (the script's $lease): NAME=VALUE before the first tuning in
# force, a `holder=<run_uri>/<vm>` line for each tuning in force.
LEASE_FILE = '/var/lib/pkb-host-settings'


@dataclasses.dataclass(frozen=True)
class Setting:
  name: str  # metadata key, and the script's name of it
  restorable: bool = True  # kept in a file the run writes back at teardown
  values: str = r'[0-9]{1,10}'  # a value restore may write (a regex)


_THP_VALUES = r'[a-z+_]{1,32}'  # always, madvise, never, defer+madvise...

SETTINGS = (
    Setting('transparent_hugepage', values=_THP_VALUES),
    Setting('transparent_hugepage_defrag', values=_THP_VALUES),
    Setting('net_core_somaxconn'),
    Setting('net_ipv4_tcp_max_syn_backlog'),
    Setting('vm_overcommit_memory'),
    # The SSH VM raises each command's soft limit to the hard one.
    Setting('nofile_limit', restorable=False),
)


def Holder(run_uri: str, vm_name: str) -> str:
  """A tuning's name in the lease: one per run and VM (a machine listed
  twice holds it twice)."""
  return f'{run_uri}/{vm_name}'


def ApplyCommand(holder: str = '', root: str = '') -> str:
  """Root command; takes `holder`'s place in the lease (a machine that
  outlives the run; none: a cloud VM, deleted with the settings), then
  tunes; prints `tuning_failed=<name>` for each refusal (`lease`: nothing
  was changed) and `tuning_shared=<holder>,...` when other tunings are in
  force (SharedWith), with `root` (where runs make their workspaces)
  `tuning_unseen=<holder>,...` for those whose run has none there (Unseen)
  and `tuning_workspace=<holder> <workspace>` for each workspace of the
  others' runs (Workspaces)."""
  return shell_scripts.Command(SCRIPT, 'apply', holder, root)


def _Listed(text: str, key: str) -> List[str]:
  """The holders on `key=` lines of the script's output."""
  return [holder for line in terminal_text.Lines(text)
          if line.startswith(f'{key}=')
          for holder in line.partition('=')[2].strip().split(',') if holder]


def SharedWith(text: str) -> List[str]:
  """ApplyCommand's output: the other holders whose tunings are in force."""
  return _Listed(text, 'tuning_shared')


def Holders(text: str) -> List[str]:
  """SnapshotCommand's output: the holders of the lease."""
  return _Listed(text, 'holder')


def Deferred(text: str) -> List[str]:
  """RestoreCommand's output: the holders the settings stay tuned for."""
  return _Listed(text, 'restore_deferred')


# The prefix of Unseen's and Workspaces' keys in each command's output.
_VERB_KEYS = {'apply': 'tuning', 'restore': 'restore'}


def Unseen(text: str, verb: str = 'restore') -> List[str]:
  """RestoreCommand's output (`verb` 'apply': ApplyCommand's): the holders
  of Deferred (of SharedWith) whose run has no workspace on the machine (a
  run whose record is lost holds its place for good: GiveBackCommand drops
  it)."""
  return _Listed(text, f'{_VERB_KEYS[verb]}_unseen')


def Workspaces(text: str, verb: str = 'restore') -> Dict[str, List[str]]:
  """RestoreCommand's output (`verb` 'apply': ApplyCommand's): the
  workspaces on the machine of each holder of Deferred not Unseen (of
  SharedWith) (<root>/pkb-<run_uri>.*, any user's: names for the runner to
  check against the run's record), in the order listed."""
  found: Dict[str, List[str]] = {}
  for line in terminal_text.Lines(text):
    key, _, value = line.partition('=')
    holder, _, workspace = value.partition(' ')
    if key == f'{_VERB_KEYS[verb]}_workspace' and holder and workspace:
      found.setdefault(holder, []).append(workspace)
  return found


def ReadCommand() -> str:
  """Unprivileged, read-only: prints `<name>=<value>` for every setting."""
  return shell_scripts.Command(SCRIPT, 'read')


def Parse(text: str, applied: bool) -> Dict[str, str]:
  """Metadata from the output of ApplyCommand (if run) and ReadCommand."""
  values: Dict[str, str] = {}
  failed: List[str] = []
  for line in terminal_text.Lines(text):
    key, sep, value = line.partition('=')
    if not sep:
      continue
    if key == 'tuning_failed':
      failed.append(value.strip())
    elif key in ('tuning_shared', 'tuning_unseen', 'tuning_workspace'):
      continue  # Said by the VM (SharedWith, Unseen, Workspaces).
    else:
      values[key.strip()] = value.strip() or 'unknown'
  values['system_tuning'] = 'applied' if applied else 'off'
  if failed:
    values['system_tuning_failed'] = ','.join(failed)
  return values


# The snapshot's key for whether the limits file was there before the run.
LIMITS_FILE_KEY = 'limits_file'
_LIMITS_FILE_VALUES = ('present', 'absent')


def SnapshotCommand() -> str:
  """Unprivileged, read-only: `<name>=<value>` of every setting restore
  can write back, `limits_file=present|absent`, and a `holder=<holder>`
  line for each tuning in force (Holders)."""
  return shell_scripts.Command(SCRIPT, 'snapshot')


# The snapshot's prefix of the lease's values (the machine's own).
_LEASE_PREFIX = 'lease_'


def ParseSnapshot(text: str, lease: bool = False) -> Dict[str, str]:
  """SnapshotCommand's output: the values restore may write back (an empty
  or odd value, e.g. a knob this kernel lacks, is left out); with `lease`,
  the lease's values instead (the machine's own, before the first tuning
  in force; {} when no tuning is)."""
  found = {}
  for line in terminal_text.Lines(text):
    key, _, value = line.strip().partition('=')
    if lease != key.startswith(_LEASE_PREFIX):
      continue
    key = key[len(_LEASE_PREFIX):] if lease else key
    if not RestoreProblem({key: value}):
      found[key] = value
  return found


def RestoreProblem(old: Mapping[str, str]) -> str:
  """What is wrong with recorded old values ('' if nothing): only known
  settings, each value of its setting's form (a record read back is
  input: the values go into teardown's messages)."""
  forms = {s.name: s.values for s in SETTINGS if s.restorable}
  for key, value in old.items():
    if key == LIMITS_FILE_KEY:
      if value not in _LIMITS_FILE_VALUES:
        return f'{key}={value!r} is not one of {", ".join(_LIMITS_FILE_VALUES)}'
    elif key not in forms:
      return f'{key!r} is no setting the run changes'
    elif not isinstance(value, str) or not re.fullmatch(forms[key], value):
      return f'{key}={value!r} is no value of that setting'
  return ''


def RestoreCommand(holder: str, root: str = '') -> str:
  """Root command giving `holder`'s place in the lease up; the last holder
  writes back each value of the lease no longer in force and removes the
  limits file the first made. Prints `restore_deferred=<holder>,...` while
  other tunings are in force (Deferred), with `root` (where runs make their
  workspaces) `restore_unseen=<holder>,...` for those whose run has none
  there (Unseen) and `restore_workspace=<holder> <workspace>` for each
  workspace of the others' runs (Workspaces), and `restore_failed=<name>`
  for each value it could not write back."""
  return shell_scripts.Command(SCRIPT, 'restore', holder, root)


def GiveBackCommand(holder: str, ssh: str) -> str:
  """What a user runs (from the repository's top) to give `holder`'s place
  in a machine's lease up when its run can no longer be torn down (its
  record lost): the script's restore, sent over `ssh` (the machine's ssh
  command line, ending in its address), as root."""
  return (f'{ssh} sudo bash -s restore {shlex.quote(holder)} '
          f'< perfkitbenchmarker/scripts/{SCRIPT}')
