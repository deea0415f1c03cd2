"""KeyDB on remote VMs: install script and its shard kind.

KeyDB is a multi-threaded fork of Redis 6 that reads redis.conf, so its
shards are redis_server.RedisProcess with KeyDB's binary, kind and title,
plus `server-threads N`. Installed from KeyDB's APT repository (Debian/
Ubuntu), or built from a pinned source release elsewhere or when
--redis_server_version names a release; neither is reachable from this
machine, so the Local provider refuses the engine. `source_url` and `prefix`
(on the VM's PATH) are arguments so a mirror or a test
(tests/vm_engines_ssh_test.py, a loopback sshd) can supply its own.
"""

from perfkitbenchmarker import errors
from perfkitbenchmarker import resource
from perfkitbenchmarker.linux_packages import redis_server
from perfkitbenchmarker.linux_packages import package_commands
from perfkitbenchmarker.linux_packages import remote_install

SOURCE_RELEASE = '6.3.4'
SOURCE_URL = 'https://github.com/Snapchat/KeyDB/archive/refs/tags/v{v}.tar.gz'
PREFIX = '/usr/local'
APT_URL = 'https://download.keydb.dev/open-source-dist'
APT_KEYRING = '/usr/share/keyrings/keydb-archive-keyring.gpg'
APT_SOURCE = '/etc/apt/sources.list.d/keydb.list'
DEBIAN_BUILD_DEPS = (
    'build-essential nasm autotools-dev autoconf libjemalloc-dev tcl tcl-dev '
    'uuid-dev libcurl4-openssl-dev libbz2-dev libzstd-dev liblz4-dev '
    'libsnappy-dev libssl-dev git curl ca-certificates redis-tools').split()
RHEL_BUILD_DEPS = (
    'gcc gcc-c++ make nasm autoconf automake libtool tcl libuuid-devel '
    'libcurl-devel openssl-devel bzip2-devel libzstd-devel lz4-devel '
    'snappy-devel git curl tar').split()


def CheckVersion(version: str) -> None:
  package_commands.CheckRelease(version, 'KeyDB', SOURCE_RELEASE)


def InstallScript(info, version: str = 'distro', source_url: str = SOURCE_URL,
                  prefix: str = PREFIX) -> str:
  """Installs keydb-server (and a redis-cli) as root.

  `source_url` has a {v} field, like SOURCE_URL; `prefix` applies to source
  builds (the packages install where they do).
  """
  CheckVersion(version)
  package_commands.RequireFamily(info, 'KeyDB')
  step = package_commands.Step
  if version == 'distro' and info.family == 'debian':
    if not info.os_codename:
      raise errors.PrerequisiteError(
          'Cannot add KeyDB\'s APT repository on '
          f'{info.display_name}: /etc/os-release has no '
          'VERSION_CODENAME; pass --redis_server_version='
          f'{SOURCE_RELEASE} to build KeyDB from source instead.')
    steps = [package_commands.AptRepo(
                 f'{APT_URL}/keyring.gpg', APT_KEYRING, APT_SOURCE, APT_URL,
                 info.os_codename, 'KeyDB\'s APT repository'),
             step('apt', 'install', 'keydb-server', 'keydb-tools',
                  'redis-tools'),
             step('stop', 'keydb-server')]
  else:
    release = SOURCE_RELEASE if version == 'distro' else version
    steps = package_commands.SourceBuild(
        info, DEBIAN_BUILD_DEPS, RHEL_BUILD_DEPS,
        source_url.format(v=release), ['BUILD_TLS=no'], prefix)
  return package_commands.ServerScript(steps, 'keydb-server', 'keydb-cli',
                                       f'{prefix}/bin')


class KeydbProcess(redis_server.RedisProcess):
  """One keydb-server shard as a resource of the run."""

  KIND = 'keydb_process'
  SERVER_NAME = 'keydb-server'
  FILE_PREFIX = 'keydb'


resource.RegisterKind(KeydbProcess.KIND, KeydbProcess.FromRecord)


def Install(vm, version: str = 'distro', source_url: str = SOURCE_URL,
            prefix: str = PREFIX) -> None:
  """Installs KeyDB on a remote VM (the engine refuses Local)."""
  remote_install.InstallServer(vm, 'keydb-server', 'KeyDB', version,
                               InstallScript, version, source_url, prefix)
