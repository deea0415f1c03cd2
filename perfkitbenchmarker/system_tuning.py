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

Extension seam: add a `Setting` to SETTINGS; its value is applied, read back
and reported under its `name`.
"""

import dataclasses
from typing import Dict, List

NOFILE_LIMIT = 1048576
LIMITS_FILE = '/etc/security/limits.d/99-pkb-redis.conf'


@dataclasses.dataclass(frozen=True)
class Setting:
  name: str      # metadata key
  apply: str     # shell, run as root
  read: str      # shell printing the value in force


_THP = '/sys/kernel/mm/transparent_hugepage'
# "always madvise [never]" -> "never"
_THP_READ = "sed -n 's/.*\\[\\(.*\\)\\].*/\\1/p' {} 2>/dev/null"

SETTINGS = (
    Setting('transparent_hugepage', f'echo never > {_THP}/enabled',
            _THP_READ.format(f'{_THP}/enabled')),
    Setting('transparent_hugepage_defrag', f'echo never > {_THP}/defrag',
            _THP_READ.format(f'{_THP}/defrag')),
    Setting('net_core_somaxconn',
            'echo 65535 > /proc/sys/net/core/somaxconn',
            'cat /proc/sys/net/core/somaxconn'),
    Setting('net_ipv4_tcp_max_syn_backlog',
            'echo 65535 > /proc/sys/net/ipv4/tcp_max_syn_backlog',
            'cat /proc/sys/net/ipv4/tcp_max_syn_backlog'),
    Setting('vm_overcommit_memory', 'echo 1 > /proc/sys/vm/overcommit_memory',
            'cat /proc/sys/vm/overcommit_memory'),
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
