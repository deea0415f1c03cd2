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
(the run records them, old value first), `RestoreCommand` writes back each
one the run changed and removes the limits file if the run made it.

Extension seam: add a `Setting` to SETTINGS; its value is applied, read back,
reported under its `name` and, when it has a `file`, restored.
"""

import dataclasses
import re
import shlex
from typing import Dict, List, Mapping, Optional

NOFILE_LIMIT = 1048576
LIMITS_FILE = '/etc/security/limits.d/99-pkb-redis.conf'


@dataclasses.dataclass(frozen=True)
class Setting:
  name: str      # metadata key
  apply: str     # shell, run as root
  read: str      # shell printing the value in force
  file: Optional[str] = None  # where a value is written back (restore)
  values: str = r'[0-9]{1,10}'  # a value restore may write (a regex)


_THP = '/sys/kernel/mm/transparent_hugepage'
# "always madvise [never]" -> "never"
_THP_READ = "sed -n 's/.*\\[\\(.*\\)\\].*/\\1/p' {} 2>/dev/null"

_THP_VALUES = r'[a-z+_]{1,32}'  # always, madvise, never, defer+madvise...


def _Sysctl(name: str, path: str, value: int) -> Setting:
  return Setting(name, f'echo {value} > {path}', f'cat {path}', path)


SETTINGS = (
    Setting('transparent_hugepage', f'echo never > {_THP}/enabled',
            _THP_READ.format(f'{_THP}/enabled'), f'{_THP}/enabled',
            _THP_VALUES),
    Setting('transparent_hugepage_defrag', f'echo never > {_THP}/defrag',
            _THP_READ.format(f'{_THP}/defrag'), f'{_THP}/defrag',
            _THP_VALUES),
    _Sysctl('net_core_somaxconn', '/proc/sys/net/core/somaxconn', 65535),
    _Sysctl('net_ipv4_tcp_max_syn_backlog',
            '/proc/sys/net/ipv4/tcp_max_syn_backlog', 65535),
    _Sysctl('vm_overcommit_memory', '/proc/sys/vm/overcommit_memory', 1),
    Setting('nofile_limit',
            f'printf "* soft nofile {NOFILE_LIMIT}\\n* hard nofile '
            f'{NOFILE_LIMIT}\\nroot soft nofile {NOFILE_LIMIT}\\nroot hard '
            f'nofile {NOFILE_LIMIT}\\n" > {LIMITS_FILE}',
            # The SSH VM raises each command's soft limit to the hard one.
            'ulimit -n'),
)


def ApplyCommand() -> str:
  """Root shell script; prints `tuning_failed=<name>` for each refusal."""
  return '\n'.join(
      f'( {s.apply} ) 2>/dev/null || echo tuning_failed={s.name}'
      for s in SETTINGS)


def ReadCommand() -> str:
  """Unprivileged, read-only: prints `<name>=<value>` for every setting."""
  return '\n'.join(f'echo "{s.name}=$({s.read} 2>/dev/null)"'
                   for s in SETTINGS)


def Parse(text: str, applied: bool) -> Dict[str, str]:
  """Metadata from the output of ApplyCommand (if run) and ReadCommand."""
  values: Dict[str, str] = {}
  failed: List[str] = []
  for line in (text or '').splitlines():
    key, sep, value = line.partition('=')
    if not sep:
      continue
    if key == 'tuning_failed':
      failed.append(value.strip())
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
  can write back, and `limits_file=present|absent`."""
  lines = [f'echo "{s.name}=$({s.read} 2>/dev/null)"' for s in SETTINGS
           if s.file]
  lines.append(f'[ -e {LIMITS_FILE} ] && echo {LIMITS_FILE_KEY}=present || '
               f'echo {LIMITS_FILE_KEY}=absent')
  return '\n'.join(lines)


def ParseSnapshot(text: str) -> Dict[str, str]:
  """SnapshotCommand's output: the values restore may write back (an empty
  or odd value, e.g. a knob this kernel lacks, is left out)."""
  found = {}
  for line in (text or '').splitlines():
    key, _, value = line.strip().partition('=')
    if not RestoreProblem({key: value}):
      found[key] = value
  return found


def RestoreProblem(old: Mapping[str, str]) -> str:
  """What is wrong with recorded old values ('' if nothing): only known
  settings, each value of its setting's form (a record read back is
  input: the values become shell text run as root)."""
  forms = {s.name: s.values for s in SETTINGS if s.file}
  for key, value in old.items():
    if key == LIMITS_FILE_KEY:
      if value not in _LIMITS_FILE_VALUES:
        return f'{key}={value!r} is not one of {", ".join(_LIMITS_FILE_VALUES)}'
    elif key not in forms:
      return f'{key!r} is no setting the run changes'
    elif not isinstance(value, str) or not re.fullmatch(forms[key], value):
      return f'{key}={value!r} is no value of that setting'
  return ''


def RestoreCommand(old: Mapping[str, str]) -> str:
  """Root shell script writing back each recorded value that is no longer
  in force, and removing the limits file the run made; prints
  `restore_failed=<name>` for each it could not. `old` passed
  RestoreProblem."""
  lines = []
  for setting in SETTINGS:
    if setting.file and setting.name in old:
      value = shlex.quote(old[setting.name])
      lines.append(f'[ "$({setting.read} 2>/dev/null)" = {value} ] || '
                   f'( echo {value} > {setting.file} ) 2>/dev/null || '
                   f'echo restore_failed={setting.name}')
  if old.get(LIMITS_FILE_KEY) == 'absent':
    lines.append(f'rm -f {LIMITS_FILE} 2>/dev/null || '
                 'echo restore_failed=nofile_limit')
  return '\n'.join(lines) + '\ntrue'
