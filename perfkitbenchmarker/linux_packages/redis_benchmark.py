"""redis-benchmark from Debian's redis-tools: check for it, read its version.

It is the local stand-in for memtier (see load_generators/redis_benchmark.py
for how its output is made comparable).
"""

import re

from perfkitbenchmarker import virtual_machine
from perfkitbenchmarker.linux_packages import remote_install


def Install(vm) -> None:
  if not vm.CAN.installs_packages:
    virtual_machine.RequireCommands(
        vm, ['redis-benchmark'],
        "run ./scripts/setup.sh (installs Debian's redis-tools).")
    return
  remote_install.InstallRedisTools(vm)


def GetVersion(vm) -> str:
  out, _, _ = vm.RemoteCommandWithReturnCode('redis-benchmark --version')
  match = re.search(r'redis-benchmark\s+(\S+)', out)
  return match.group(1) if match else out.strip()
