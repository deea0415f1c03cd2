"""KeyDB on remote VMs: install script and its shard kind.

KeyDB is a multi-threaded fork of Redis 6 that reads redis.conf, so its
shards are redis_server.RedisProcess with KeyDB's binary, kind and process
title, plus `server-threads N`. It is installed from KeyDB's APT repository
(Debian/Ubuntu; packages `keydb-server` and `keydb-tools`), or built from a
pinned source release on other systems or when --redis_server_version names
a release. Not installable on this machine (neither source is reachable
from here): the Local provider refuses the engine in one line; the builders
are tested as text and with `bash -n`.

Extension seam: `InstallScript` and `ServerThreadsConfig` are pure.
"""

import re
import shlex
from typing import Tuple

from perfkitbenchmarker import errors
from perfkitbenchmarker import resource
from perfkitbenchmarker.linux_packages import redis_server
from perfkitbenchmarker.linux_packages import remote_install

SOURCE_RELEASE = '6.3.4'
SOURCE_URL = 'https://github.com/Snapchat/KeyDB/archive/refs/tags/v{v}.tar.gz'
APT_URL = 'https://download.keydb.dev/open-source-dist'
APT_KEYRING = '/etc/apt/trusted.gpg.d/keydb.gpg'
APT_SOURCE = '/etc/apt/sources.list.d/keydb.list'
_VERSION_RE = re.compile(r'\d+\.\d+\.\d+')
_APT = ('DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 '
        '-y -q')


def CheckVersion(version: str) -> None:
  if version != 'distro' and not _VERSION_RE.fullmatch(version):
    raise errors.UsageError(
        f'--redis_server_version="{version}" must be "distro" (KeyDB\'s '
        f'packages) or a KeyDB release such as {SOURCE_RELEASE}.')


def _SourceLines(info, version: str):
  build = '/tmp/pkb-keydb-build'
  if info.family == 'debian':
    deps = [f'{_APT} update',
            f'{_APT} install build-essential nasm autotools-dev autoconf '
            'libjemalloc-dev tcl tcl-dev uuid-dev libcurl4-openssl-dev '
            'libbz2-dev libzstd-dev liblz4-dev libsnappy-dev libssl-dev '
            'git curl ca-certificates redis-tools']
  else:
    deps = [f'{info.package_manager} install -y gcc gcc-c++ make nasm '
            'autoconf automake libtool tcl libuuid-devel libcurl-devel '
            'openssl-devel bzip2-devel libzstd-devel lz4-devel snappy-devel '
            'git curl tar']
  url = SOURCE_URL.format(v=version)
  return deps + [
      f'rm -rf {build} && mkdir -p {build}',
      f'curl -fsSL {shlex.quote(url)} -o {build}/keydb.tar.gz',
      f'tar -xzf {build}/keydb.tar.gz -C {build} --strip-components=1',
      f'make -C {build} -j"$(nproc)" BUILD_TLS=no',
      f'make -C {build} install PREFIX=/usr/local',
  ]


def InstallScript(info, version: str = 'distro') -> str:
  """Installs keydb-server (and a redis-cli) as root."""
  CheckVersion(version)
  if info.family not in ('debian', 'rhel'):
    raise errors.PrerequisiteError(
        f'Cannot install KeyDB on {info.os_pretty_name or info.os_id}: only '
        'Debian/Ubuntu and RHEL-like systems are supported.')
  if version == 'distro' and info.family == 'debian':
    if not info.os_codename:
      raise errors.PrerequisiteError(
          'Cannot add KeyDB\'s APT repository: /etc/os-release has no '
          'VERSION_CODENAME.')
    source = f'deb {APT_URL} {info.os_codename} main'
    lines = [f'{_APT} update', f'{_APT} install curl ca-certificates',
             f'curl -fsSL {APT_URL}/keyring.gpg -o {APT_KEYRING}',
             f'echo {shlex.quote(source)} > {APT_SOURCE}',
             f'{_APT} update',
             f'{_APT} install keydb-server keydb-tools redis-tools',
             '(systemctl disable --now keydb-server >/dev/null 2>&1 || '
             'true)']
  else:
    lines = _SourceLines(info, SOURCE_RELEASE if version == 'distro'
                         else version)
  lines += ['if ! command -v redis-cli >/dev/null 2>&1; then '
            'ln -sf "$(command -v keydb-cli)" /usr/local/bin/redis-cli; fi',
            'keydb-server --version']
  return '\n'.join(['set -eo pipefail'] + lines)


def ServerThreadsConfig(server_threads: int) -> Tuple[str, ...]:
  """The redis.conf lines for KeyDB's worker threads (0: its default)."""
  return (f'server-threads {int(server_threads)}',) if server_threads else ()


class KeydbProcess(redis_server.RedisProcess):
  """One keydb-server shard as a resource of the run."""

  KIND = 'keydb_process'
  SERVER_NAME = 'keydb-server'
  FILE_PREFIX = 'keydb'


resource.RegisterKind(KeydbProcess.KIND, KeydbProcess.FromRecord)


def ParseVersion(text: str) -> str:
  match = re.search(r'v=(\S+)', text or '')
  return match.group(1) if match else ''


def Install(vm, version: str = 'distro') -> None:
  """Installs KeyDB on a remote VM (the engine refuses Local)."""
  out, _, rc = vm.RemoteCommandWithReturnCode('keydb-server --version')
  if (rc == 0 and remote_install.VersionMatches(ParseVersion(out), version)
      and vm.HasCommand('redis-cli')):
    return
  remote_install.RunAsRoot(vm, InstallScript(vm.DetectSystem(), version),
                           f'Installing KeyDB {version}')


def GetVersion(vm) -> str:
  out, _ = vm.RemoteCommand('keydb-server --version')
  return ParseVersion(out) or out.strip()
