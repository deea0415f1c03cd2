"""Dragonfly on remote VMs: install script, flag file, start command.

Dragonfly is one multi-threaded process per VM (`--proactor_threads`, one
per vCPU by default) that speaks the Redis protocol; redis-cli drives it.
It is installed from Dragonfly's release packages for the VM's CPU
(`dragonfly_amd64.deb` / `dragonfly_arm64.deb` on apt systems, the
`dragonfly-<arch>.tar.gz` binary elsewhere), pinned to RELEASE unless
--redis_server_version names another release. Not installable on this
machine (no release host is reachable from here): the Local provider refuses
the engine in one line; the builders are tested as text and with `bash -n`.

Settings go into a 0600 flag file (`--flagfile`), so the password is never
on a command line. `--cluster_mode=emulated` makes one process answer
CLUSTER commands, for clients run in cluster mode.

Extension seam: every function here except `Install` is pure.
"""

import re
import shlex
from typing import Optional

from perfkitbenchmarker import errors
from perfkitbenchmarker import resource
from perfkitbenchmarker.engines import load_user
from perfkitbenchmarker.linux_packages import redis_server
from perfkitbenchmarker.linux_packages import remote_install

RELEASE = '1.36.0'
RELEASE_URL = ('https://github.com/dragonflydb/dragonfly/releases/download/'
               'v{version}/{asset}')
_ARCH = {'x86_64': ('amd64', 'x86_64'), 'amd64': ('amd64', 'x86_64'),
         'aarch64': ('arm64', 'aarch64'), 'arm64': ('arm64', 'aarch64')}
_VERSION_RE = re.compile(r'\d+\.\d+\.\d+')
_APT = ('DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 '
        '-y -q')


def ReleaseVersion(version: str) -> str:
  if version == 'distro':
    return RELEASE
  if not _VERSION_RE.fullmatch(version):
    raise errors.UsageError(
        f'--redis_server_version="{version}" must be "distro" (Dragonfly '
        f'{RELEASE}) or a Dragonfly release such as {RELEASE}.')
  return version


def AssetUrls(machine: str, version: str):
  """(deb URL, tar.gz URL) of the release for a `uname -m` machine."""
  if machine not in _ARCH:
    raise errors.PrerequisiteError(
        f'Dragonfly has release packages for x86_64 and arm64 only, not '
        f'{machine}.')
  deb_arch, tar_arch = _ARCH[machine]
  v = ReleaseVersion(version)
  return (RELEASE_URL.format(version=v, asset=f'dragonfly_{deb_arch}.deb'),
          RELEASE_URL.format(version=v, asset=f'dragonfly-{tar_arch}.tar.gz'))


def InstallScript(info, machine: str, version: str = 'distro') -> str:
  """Installs dragonfly (and redis-cli) as root; stops the packaged service."""
  deb, tarball = AssetUrls(machine, version)
  if info.family == 'debian':
    lines = [f'{_APT} update', f'{_APT} install curl ca-certificates '
             'redis-tools',
             f'curl -fsSL {shlex.quote(deb)} -o /tmp/pkb-dragonfly.deb',
             f'{_APT} install --allow-downgrades /tmp/pkb-dragonfly.deb',
             '(systemctl disable --now dragonfly >/dev/null 2>&1 || true)']
  elif info.family == 'rhel':
    pm = info.package_manager
    lines = [f'{pm} install -y curl tar redis || {pm} install -y curl tar '
             'redis6',
             f'curl -fsSL {shlex.quote(tarball)} -o /tmp/pkb-dragonfly.tgz',
             'tar -xzf /tmp/pkb-dragonfly.tgz -C /tmp',
             # The tarball holds one binary named dragonfly-<arch>.
             'install -m 0755 /tmp/dragonfly-* /usr/local/bin/dragonfly']
  else:
    raise errors.PrerequisiteError(
        f'Cannot install Dragonfly on {info.os_pretty_name or info.os_id}: '
        'only Debian/Ubuntu and RHEL-like systems are supported.')
  return '\n'.join(['set -eo pipefail'] + lines + ['dragonfly --version'])


def FlagFileText(port: int, password: str, options: redis_server.ShardOptions,
                 directory: str, proactor_threads: int = 0,
                 cluster_mode: str = 'none') -> str:
  """Dragonfly's flag file: one --flag=value a line."""
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
  if proactor_threads:
    lines.append(f'--proactor_threads={int(proactor_threads)}')
  if cluster_mode != 'none':
    lines.append(f'--cluster_mode={cluster_mode}')
  return '\n'.join(lines) + '\n'


def AclFileText(password: str) -> str:
  """The load user (engines/load_user.py) in Dragonfly's ACL file."""
  return load_user.UserDirective(password) + '\n'


def StartCommand(flagfile: str, logfile: str,
                 server_command: str = 'dragonfly') -> str:
  """Starts Dragonfly detached (it does not daemonize itself)."""
  return (f'setsid nohup {shlex.quote(server_command)} '
          f'--flagfile={shlex.quote(flagfile)} > {shlex.quote(logfile)} '
          '2>&1 < /dev/null &')


def ParseVersion(text: str) -> str:
  """'1.34.2' from `dragonfly --version` ("dragonfly v1.34.2-<sha>")."""
  match = re.search(r'v(\d+\.\d+\.\d+)', text or '')
  return match.group(1) if match else ''


class DragonflyProcess(redis_server.RedisProcess):
  """One dragonfly process as a resource of the run."""

  KIND = 'dragonfly_process'
  SERVER_NAME = 'dragonfly'
  FILE_PREFIX = 'dragonfly'
  proactor_threads = 0
  cluster_mode = 'none'

  def ConfigText(self) -> str:
    self.vm.WriteFile(f'{self.vm.scratch_dir}/dragonfly-{self.port}.acl',
                      AclFileText(self.password))
    return FlagFileText(self.port, self.password, self.options,
                        self.vm.scratch_dir, self.proactor_threads,
                        self.cluster_mode)

  def StartCommand(self) -> str:
    return StartCommand(self.config_path, self.logfile, self.server_command)


resource.RegisterKind(DragonflyProcess.KIND, DragonflyProcess.FromRecord)


def Install(vm, version: str = 'distro') -> None:
  """Installs Dragonfly on a remote VM (the engine refuses Local)."""
  wanted = ReleaseVersion(version)
  out, _, rc = vm.RemoteCommandWithReturnCode('dragonfly --version')
  if rc == 0 and ParseVersion(out) == wanted and vm.HasCommand('redis-cli'):
    return
  machine, _ = vm.RemoteCommand('uname -m')
  remote_install.RunAsRoot(
      vm, InstallScript(vm.DetectSystem(), machine.strip(), version),
      f'Installing Dragonfly {wanted}')


def GetVersion(vm) -> Optional[str]:
  out, _ = vm.RemoteCommand('dragonfly --version')
  return ParseVersion(out) or out.strip()
