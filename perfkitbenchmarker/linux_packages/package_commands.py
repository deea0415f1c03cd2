"""Install scripts for Redis, redis-tools and memtier, per OS family, and
the steps every program's install script is made of (the other servers'
modules build theirs with them).

Pure functions: each takes a `system_info.SystemInfo` (and the wanted version)
and returns one shell script to run as root (remote_install.py runs it), so
the tests check every OS family's choices without reaching a registry. A
script is a line a step: `Step` runs one step of the shipped
scripts/install.sh with its values as arguments (nothing is spliced into
shell text), and the first step to fail ends the script.

Where the software comes from:
  * Redis at --redis_server_version=distro: the OS package (Debian/Ubuntu
    `redis-server`, RHEL-like `redis`, Amazon Linux 2023 `redis6`).
  * Redis at a release number (e.g. 7.2.4): Redis's official APT repository
    (packages.redis.io), the newest package of that release, pinned with
    `apt-get install redis-server=<version>`. Chosen over building the release
    tarball: no compiler on the VM, signed packages, minutes saved per VM. The
    repository has Debian/Ubuntu packages only, so RHEL-like systems take
    'distro' only.
  * memtier_benchmark: `memtier-benchmark` from the same APT repository
    (>= 2.4.4, the first release with a correct Ops/sec); never built from
    source, so RHEL-like systems are refused with a clear message.
The distribution's redis-server service is stopped and disabled after
installing: the benchmark starts its own shards, and a stray server on 6379
would take memory and CPU from them.
"""

import re
from typing import List, Sequence

from perfkitbenchmarker import errors
from perfkitbenchmarker import shell_scripts

REDIS_APT_KEY_URL = 'https://packages.redis.io/gpg'
REDIS_APT_URL = 'https://packages.redis.io/deb'
REDIS_APT_KEYRING = '/usr/share/keyrings/redis-archive-keyring.gpg'
REDIS_APT_SOURCE = '/etc/apt/sources.list.d/redis.list'
# Where the links to Amazon Linux 2023's redis6-* programs go (on PATH).
LINK_DIR = '/usr/local/bin'
MEMTIER_MIN_VERSION = (2, 4, 4)


def Step(name: str, *args: object) -> str:
  """One step of scripts/install.sh (its header lists them) with `args`."""
  return shell_scripts.Command('install.sh', name, *args)


def Script(steps: Sequence[str]) -> str:
  """The root script running `steps` in turn; the first to fail ends it."""
  return '\n'.join(['set -e', *steps])


def Either(test: str, then: Sequence[str], otherwise: Sequence[str]
           ) -> List[str]:
  """Steps `then` if the step `test` succeeds, else steps `otherwise`."""
  return ['if ' + test, 'then', *then, 'else', *otherwise, 'fi']


def AptRepo(key_url: str, keyring: str, source: str, url: str,
            codename: str, what: str) -> str:
  """The step adding the APT repository at `url` for `codename`, signed by
  the key at `key_url` (kept in `keyring`, trusted for that repository
  only), in the sources file `source`; `what` names it in the refusal."""
  if not codename:
    raise errors.PrerequisiteError(
        f'Cannot add {what}: /etc/os-release has no VERSION_CODENAME.')
  return Step('apt-repo', key_url, keyring, source,
              f'deb [signed-by={keyring}] {url} {codename} main')


def _RedisRepo(codename: str) -> str:
  return AptRepo(REDIS_APT_KEY_URL, REDIS_APT_KEYRING, REDIS_APT_SOURCE,
                 REDIS_APT_URL, codename, 'the Redis APT repository')


def RequireFamily(info, program: str) -> None:
  if info.family not in ('debian', 'rhel'):
    raise errors.PrerequisiteError(
        f'Cannot install {program} on {info.display_name}: '
        'only Debian/Ubuntu (apt) and RHEL-like (dnf/yum) systems are '
        'supported; install it by hand and rerun.')


def CheckRelease(version: str, product: str, example: str,
                 pattern: str = r'\d+\.\d+\.\d+') -> None:
  if version != 'distro' and not re.fullmatch(pattern, version):
    raise errors.UsageError(
        f'--redis_server_version="{version}" must be "distro" or a '
        f'{product} release such as {example}.')


def CheckRedisVersion(version: str) -> None:
  CheckRelease(version, 'Redis', '7.2.4', r'\d+\.\d+(\.\d+)?')


def RedisServerInstall(info, version: str) -> str:
  """Installs redis-server and redis-cli at `version` ('distro' or X.Y.Z)."""
  CheckRedisVersion(version)
  RequireFamily(info, 'Redis')
  if info.family == 'rhel':
    if version != 'distro':
      raise errors.UsageError(
          f'--redis_server_version={version} needs Redis\'s APT repository, '
          f'which has no packages for {info.display_name}; '
          'use --redis_server_version=distro or a Debian/Ubuntu image.')
    return Script([Step('rpm-redis', info.package_manager, LINK_DIR),
                   Step('stop', 'redis', 'redis6'),
                   Step('version', 'redis-server')])
  if version == 'distro':
    steps = [Step('apt', 'update'),
             Step('apt', 'install', 'redis-server', 'redis-tools')]
  else:
    steps = [_RedisRepo(info.os_codename),
             Step('pinned', 'Redis', version,
                  f'packages.redis.io for {info.os_codename}',
                  'redis-server', 'redis-tools')]
  return Script(steps + [Step('stop', 'redis-server'),
                         Step('version', 'redis-server')])


def RedisToolsInstall(info) -> str:
  """redis-cli and redis-benchmark (Debian's redis-tools)."""
  RequireFamily(info, 'redis-tools')
  if info.family == 'rhel':
    # RHEL-like systems ship the tools inside the server package.
    return RedisServerInstall(info, 'distro')
  return Script([Step('apt', 'update'), Step('apt', 'install', 'redis-tools'),
                 Step('version', 'redis-benchmark')])


def MemtierInstall(info) -> str:
  """memtier-benchmark from Redis's APT repository (apt systems only)."""
  if info.family != 'debian':
    raise errors.PrerequisiteError(
        'memtier_benchmark is installed only from Redis\'s APT repository, '
        f'which has no packages for {info.display_name}; use '
        'a Debian/Ubuntu image (--os_type=debian12) or '
        '--load_generator=redis_benchmark.')
  return Script([_RedisRepo(info.os_codename),
                 Step('apt', 'install', 'memtier-benchmark'),
                 Step('version', 'memtier_benchmark')])


def SourceBuild(info, debian_deps: Sequence[str], rhel_deps: Sequence[str],
                url: str, make_args: Sequence[str],
                prefix: str = '/usr/local') -> List[str]:
  """Installs the build dependencies (Debian's or RHEL's package names), then
  builds and installs a release tarball as root (install.sh's `build`)."""
  if info.family == 'debian':
    deps = [Step('apt', 'update'), Step('apt', 'install', *debian_deps)]
  else:
    deps = [Step('rpm', info.package_manager, *rhel_deps)]
  return deps + [Step('build', url, prefix, *make_args)]


def ServerScript(steps: Sequence[str], program: str, cli: str,
                 bin_dir: str) -> str:
  """The install script: `steps`, then `cli` linked as redis-cli in
  `bin_dir` where no redis-cli came with them, then the installed version."""
  return Script([*steps, Step('link-cli', cli, bin_dir),
                 Step('version', program)])


def ParseVersion(text: str):
  """(major, minor, patch) from the first X.Y[.Z] in text, or None."""
  match = re.search(r'(\d+)\.(\d+)(?:\.(\d+))?', text or '')
  return tuple(int(g or 0) for g in match.groups()) if match else None


def ServerVersion(text: str) -> str:
  """'7.0.15' from a server's --version ('v=7.0.15' for redis, valkey and
  keydb; 'v1.34.2-<sha>' in colour codes for dragonfly), else ''."""
  match = re.search(r'v=?(\d+\.\d+\.\d+)', text or '')
  return match.group(1) if match else ''


def MemtierVersionOk(text: str) -> bool:
  version = ParseVersion(text)
  # Builds between releases print 255.255.255; they are newer than any.
  return version is not None and version >= MEMTIER_MIN_VERSION
