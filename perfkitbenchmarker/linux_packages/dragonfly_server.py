"""Dragonfly on remote VMs: install script, flag file, start command.

Dragonfly is one multi-threaded process per VM (`--proactor_threads`) that
speaks the Redis protocol; redis-cli drives it. It is installed from its
release packages for the VM's CPU (.deb on apt systems, the tar.gz binary
elsewhere), pinned to RELEASE unless --redis_server_version names another;
none is reachable from this machine, so the Local provider refuses the
engine. Settings go into a 0600 flag file (`--flagfile`), so the password is
never on a command line. `release_url` and `prefix` (on the VM's PATH) are
arguments so a mirror or a test (tests/vm_engines_ssh_test.py) can supply
its own.
"""

import shlex
from typing import Dict, Optional

from perfkitbenchmarker import errors
from perfkitbenchmarker import redis_shard
from perfkitbenchmarker import resource
from perfkitbenchmarker.linux_packages import package_commands
from perfkitbenchmarker.linux_packages import redis_server
from perfkitbenchmarker.linux_packages import remote_install

RELEASE = '1.36.0'
RELEASE_URL = ('https://github.com/dragonflydb/dragonfly/releases/download/'
               'v{version}/{asset}')
PREFIX = '/usr/local'
_ARCH = {'x86_64': ('amd64', 'x86_64'), 'amd64': ('amd64', 'x86_64'),
         'aarch64': ('arm64', 'aarch64'), 'arm64': ('arm64', 'aarch64')}


def ReleaseVersion(version: str) -> str:
  package_commands.CheckRelease(version, 'Dragonfly', RELEASE)
  return RELEASE if version == 'distro' else version


def AssetUrls(machine: str, version: str, release_url: str = RELEASE_URL):
  """(deb URL, tar.gz URL) of the release for a `uname -m` machine.

  `release_url` has {version} and {asset} fields, like RELEASE_URL.
  """
  if machine not in _ARCH:
    raise errors.PrerequisiteError(
        f'Cannot install Dragonfly on {machine or "an unknown CPU"}: it has '
        'release packages for x86_64 and arm64 only; use an x86_64 or arm64 '
        'machine type.')
  deb_arch, tar_arch = _ARCH[machine]
  v = ReleaseVersion(version)
  return (release_url.format(version=v, asset=f'dragonfly_{deb_arch}.deb'),
          release_url.format(version=v, asset=f'dragonfly-{tar_arch}.tar.gz'))


def InstallScript(info, machine: str, version: str = 'distro',
                  release_url: str = RELEASE_URL,
                  prefix: str = PREFIX) -> str:
  """Installs dragonfly (and redis-cli) as root; stops the packaged service.

  `prefix` applies to the tar.gz (the .deb puts the binary where it does).
  """
  package_commands.RequireFamily(info, 'Dragonfly')
  deb, tarball = AssetUrls(machine, version, release_url)
  step = package_commands.Step
  if info.family == 'debian':
    steps = [step('apt', 'update'),
             step('apt', 'install', 'curl', 'ca-certificates', 'redis-tools'),
             step('deb', deb), step('stop', 'dragonfly')]
  else:
    steps = [step('rpm-redis', info.package_manager,
                  package_commands.LINK_DIR, 'curl', 'tar'),
             # The tarball holds one binary named dragonfly-<arch>.
             step('binary', tarball, f'dragonfly-{_ARCH[machine][1]}',
                  f'{prefix}/bin/dragonfly')]
  return package_commands.Script(steps + [step('version', 'dragonfly')])


def FlagFileText(port: int, password: str, options: redis_shard.ShardOptions,
                 directory: str, settings: Optional[Dict[str, str]] = None
                 ) -> str:
  """Dragonfly's flag file: one --flag=value a line; `settings` are the
  engine's (e.g. {'proactor_threads': '4'})."""
  lines = [
      f'--port={int(port)}',
      f'--bind={options.bind}',
      f'--requirepass={password}',
      f'--aclfile={directory}/dragonfly-{port}.acl',
      f'--maxmemory={int(options.maxmemory_mb)}MB',
      f'--dir={directory}',
      '--dbfilename=',  # no snapshots
      f'--pidfile={directory}/dragonfly-{port}.pid',
      f'--log_dir={directory}',
  ]
  lines += [f'--{name}={value}' for name, value in (settings or {}).items()]
  return '\n'.join(lines) + '\n'


def StartCommand(flagfile: str, logfile: str,
                 server_command: str = 'dragonfly') -> str:
  """Starts Dragonfly detached (it does not daemonize itself)."""
  return (f'setsid nohup {shlex.quote(server_command)} '
          f'--flagfile={shlex.quote(flagfile)} > {shlex.quote(logfile)} '
          '2>&1 < /dev/null &')


class DragonflyProcess(redis_server.RedisProcess):
  """One dragonfly process as a resource of the run."""

  KIND = 'dragonfly_process'
  SERVER_NAME = 'dragonfly'
  FILE_PREFIX = 'dragonfly'
  settings: Dict[str, str] = {}  # The engine's (DragonflyEngine.Settings).

  def ConfigText(self) -> str:
    self.vm.WriteFile(f'{self.vm.scratch_dir}/dragonfly-{self.port}.acl',
                      redis_shard.UserDirective(self.password) + '\n')
    return FlagFileText(self.port, self.password, self.options,
                        self.vm.scratch_dir, self.settings)

  def StartCommand(self) -> str:
    return StartCommand(self.config_path, self.logfile, self.server_command)

  def KillMarkers(self):
    # Dragonfly keeps the command line it was started with (no
    # "<bind>:<port>" title): its flag file, which holds the port, names it.
    return (self.SERVER_NAME, self.config_path)


resource.RegisterKind(DragonflyProcess.KIND, DragonflyProcess.FromRecord)


def Install(vm, version: str = 'distro', release_url: str = RELEASE_URL,
            prefix: str = PREFIX) -> None:
  """Installs Dragonfly on a remote VM (the engine refuses Local)."""
  remote_install.InstallServer(
      vm, 'dragonfly', 'Dragonfly', ReleaseVersion(version),
      lambda info: InstallScript(info, info.arch, version, release_url,
                                 prefix))
