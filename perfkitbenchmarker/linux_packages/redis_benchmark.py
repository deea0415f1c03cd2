"""redis-benchmark from Debian's redis-tools: check for it, read its version.

It is the local stand-in for memtier (see load_generators/redis_benchmark.py
for how its output is made comparable).
"""

import re

from perfkitbenchmarker import errors
from perfkitbenchmarker import virtual_machine


def Install(vm) -> None:
  if vm.CLOUD == 'Local':
    virtual_machine.RequireCommands(
        vm, ['redis-benchmark'],
        "run ./scripts/setup.sh (installs Debian's redis-tools).")
    return
  installer = getattr(vm, 'InstallRedisTools', None)
  if installer is None:
    raise errors.PrerequisiteError(
        f'No way to install redis-tools on {vm.name}.')
  installer()


def GetVersion(vm) -> str:
  out, _, _ = vm.RemoteCommandWithReturnCode('redis-benchmark --version')
  match = re.search(r'redis-benchmark\s+(\S+)', out)
  return match.group(1) if match else out.strip()
