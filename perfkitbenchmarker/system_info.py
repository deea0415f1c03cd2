"""What a remote Linux machine is: OS, package manager, CPU, kernel, memory.

One shell probe (`PROBE_COMMAND`) gathers everything in a single SSH round
trip and `SystemInfo.Parse` turns its output into a frozen record. The install
command builders (package_commands.py) choose their commands from
`SystemInfo.family`; samples carry `SystemInfo.Metadata()`.

Extension seam: another OS family is a new value of `family` (plus its
commands in package_commands.py); the probe itself is POSIX shell.
"""

import dataclasses
import shlex
from typing import Dict, Optional, Tuple

from perfkitbenchmarker import terminal_text
from perfkitbenchmarker import vm_util

PROBE_COMMAND = (
    'cat /etc/os-release 2>/dev/null; '
    'echo "__arch=$(uname -m)"; '
    'echo "__kernel=$(uname -r)"; '
    'echo "__uid=$(id -u)"; '
    'echo "__nproc=$(nproc 2>/dev/null)"; '
    "echo \"__mem_kb=$(awk '/^MemTotal:/ {print $2}' /proc/meminfo)\"; "
    'for p in apt-get dnf yum; do '
    'command -v $p >/dev/null 2>&1 && echo "__pm=$p"; done; true')

# ID / ID_LIKE values of /etc/os-release, by the family whose commands work.
_DEBIAN_IDS = frozenset({'debian', 'ubuntu'})
_RHEL_IDS = frozenset({'rhel', 'fedora', 'centos', 'rocky', 'almalinux',
                       'amzn', 'ol'})


def _Unquote(value: str) -> str:
  value = value.strip()
  try:
    parts = shlex.split(value)
  except ValueError:
    return value.strip('"\'')
  return parts[0] if len(parts) == 1 else value


@dataclasses.dataclass(frozen=True)
class SystemInfo:
  """One machine's OS and hardware as seen by a remote probe."""
  os_id: str = 'unknown'
  os_like: Tuple[str, ...] = ()
  os_version_id: str = ''
  os_codename: str = ''
  os_pretty_name: str = ''
  arch: str = ''
  kernel: str = ''
  uid: Optional[int] = None
  num_cpus: Optional[int] = None
  memory_mib: Optional[int] = None
  package_managers: Tuple[str, ...] = ()

  @classmethod
  def Parse(cls, text: str) -> 'SystemInfo':
    """Reads the output of PROBE_COMMAND."""
    fields: Dict[str, str] = {}
    managers = []
    for line in terminal_text.Lines(text):
      key, sep, value = line.partition('=')
      if not sep:
        continue
      key = key.strip()
      if key == '__pm':
        managers.append(value.strip())
      else:
        fields[key] = _Unquote(value)

    def Int(key: str) -> Optional[int]:
      value = fields.get(key, '').strip()
      return int(value) if value.isdigit() else None

    mem_kb = Int('__mem_kb')
    return cls(
        os_id=fields.get('ID', 'unknown').lower() or 'unknown',
        os_like=tuple(fields.get('ID_LIKE', '').lower().split()),
        os_version_id=fields.get('VERSION_ID', ''),
        os_codename=(fields.get('VERSION_CODENAME') or
                     fields.get('UBUNTU_CODENAME', '')),
        os_pretty_name=fields.get('PRETTY_NAME', ''),
        arch=fields.get('__arch', ''),
        kernel=fields.get('__kernel', ''),
        uid=Int('__uid'),
        num_cpus=Int('__nproc'),
        memory_mib=None if mem_kb is None else mem_kb // 1024,
        package_managers=tuple(managers))

  @property
  def family(self) -> str:
    """'debian' (apt), 'rhel' (dnf/yum) or 'unknown'."""
    ids = {self.os_id, *self.os_like}
    if ids & _DEBIAN_IDS:
      return 'debian'
    if ids & _RHEL_IDS:
      return 'rhel'
    # An unfamiliar distribution: trust the package manager it has.
    if 'apt-get' in self.package_managers:
      return 'debian'
    if {'dnf', 'yum'} & set(self.package_managers):
      return 'rhel'
    return 'unknown'

  @property
  def package_manager(self) -> Optional[str]:
    if self.family == 'debian':
      return 'apt'
    if self.family == 'rhel':
      # dnf where present (RHEL 8+, Fedora, Amazon Linux 2023), else yum.
      return 'yum' if ('yum' in self.package_managers and
                       'dnf' not in self.package_managers) else 'dnf'
    return None

  @property
  def display_name(self) -> str:
    """The OS for messages: its pretty name, else its id (vm_util.Tail)."""
    return vm_util.Tail(self.os_pretty_name or self.os_id, 1) or 'an unknown OS'

  @property
  def is_root(self) -> bool:
    return self.uid == 0

  def Metadata(self) -> Dict[str, object]:
    """Sample metadata: what the numbers were measured on."""
    return {
        'os_release': self.os_pretty_name or
                      f'{self.os_id} {self.os_version_id}'.strip(),
        'os_family': self.family,
        'package_manager': self.package_manager or 'unknown',
        'cpu_arch': self.arch,
        'kernel_version': self.kernel,
    }


def MissingPackagesCommand(manager: str, packages) -> str:
  """Prints each of `packages` the package manager has not installed."""
  check = ("dpkg-query -W -f='${Status}' \"$p\" 2>/dev/null | "
           "grep -q 'install ok installed'" if manager == 'apt'
           else 'rpm -q "$p" >/dev/null 2>&1')
  names = ' '.join(shlex.quote(p) for p in packages)
  return f'for p in {names}; do {check} || echo "$p"; done; true'
