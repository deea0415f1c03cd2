"""Install commands for Redis, redis-tools and memtier, per OS family, and
the frame every server's install script shares (the other servers' modules
build theirs with it).

Pure functions: each takes a `system_info.SystemInfo` (and the wanted version)
and returns one shell script to run as root (remote_install.py runs it), so
the tests check every OS family's commands without reaching a registry.

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
import shlex

from perfkitbenchmarker import errors

REDIS_APT_KEY_URL = 'https://packages.redis.io/gpg'
REDIS_APT_URL = 'https://packages.redis.io/deb'
REDIS_APT_KEYRING = '/usr/share/keyrings/redis-archive-keyring.gpg'
REDIS_APT_SOURCE = '/etc/apt/sources.list.d/redis.list'
MEMTIER_MIN_VERSION = (2, 4, 4)
# Every install script's apt-get, here and in the other linux_packages
# modules. Fresh cloud VMs often run unattended-upgrades at boot; wait for
# its lock.
APT = ('DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 '
       '-y -q')


def StopService(unit: str) -> str:
  """Stops and disables a packaged server's service (the benchmark starts
  its own shards)."""
  return (f'(systemctl disable --now {unit} >/dev/null 2>&1 || '
          f'service {unit} stop >/dev/null 2>&1 || true)')


def _Script(lines) -> str:
  return '\n'.join(['set -eo pipefail'] + list(lines))


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


def RedisAptRepoLines(codename: str):
  """Adds packages.redis.io with its signing key (idempotent)."""
  if not codename:
    raise errors.PrerequisiteError(
        'Cannot add the Redis APT repository: /etc/os-release has no '
        'VERSION_CODENAME.')
  source = (f'deb [signed-by={REDIS_APT_KEYRING}] {REDIS_APT_URL} '
            f'{codename} main')
  return [
      f'{APT} update',
      f'{APT} install ca-certificates curl gpg',
      # One command a step: a failed download stops the script with its
      # own error (in a pipe or before && it would not, and the next
      # step would fail on the missing keyring instead).
      f'if [ ! -s {REDIS_APT_KEYRING} ]; then key=$(mktemp); '
      f'curl -fsSL {REDIS_APT_KEY_URL} -o "$key" || '
      '{ rc=$?; rm -f "$key"; exit $rc; }; '
      f'gpg --batch --yes --dearmor -o {REDIS_APT_KEYRING}.tmp "$key"; '
      f'rm -f "$key"; mv {REDIS_APT_KEYRING}.tmp {REDIS_APT_KEYRING}; fi',
      f'chmod 644 {REDIS_APT_KEYRING}',
      f'echo {shlex.quote(source)} > {REDIS_APT_SOURCE}',
      f'{APT} update',
  ]


def _PinnedVersionLines(package: str, version: str, codename: str):
  """Sets $v to the newest packaged build of `version`, or fails clearly."""
  pattern = r'^([0-9]+:)?' + re.escape(version) + r'[-.]'
  listing = (f"apt-cache madison {package} | awk -F'|' "
             "'{gsub(/ /, \"\", $2); print $2}'")
  message = (f'Redis {version} is not in packages.redis.io for {codename}; '
             'packaged versions:')
  return [
      f'v=$({listing} | grep -E {shlex.quote(pattern)} | head -n 1 || true)',
      f'if [ -z "$v" ]; then echo {shlex.quote(message)} '
      f'$({listing} | tr "\\n" " ") >&2; exit 3; fi',
  ]


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
    pm = info.package_manager
    return _Script([
        # Amazon Linux 2023 names the package and binaries redis6.
        f'{pm} install -y redis || {{ {pm} install -y redis6 && '
        'for b in server cli benchmark; do '
        'ln -sf /usr/bin/redis6-$b /usr/local/bin/redis-$b; done; }',
        StopService('redis'),
        StopService('redis6'),
        'redis-server --version',
    ])
  lines = []
  if version == 'distro':
    lines += [f'{APT} update',
              f'{APT} install redis-server redis-tools']
  else:
    lines += RedisAptRepoLines(info.os_codename)
    lines += _PinnedVersionLines('redis-server', version, info.os_codename)
    lines += [f'{APT} install --allow-downgrades '
              'redis-server="$v" redis-tools="$v"']
  lines += [StopService('redis-server'),
            'redis-server --version']
  return _Script(lines)


def RedisToolsInstall(info) -> str:
  """redis-cli and redis-benchmark (Debian's redis-tools)."""
  RequireFamily(info, 'redis-tools')
  if info.family == 'rhel':
    # RHEL-like systems ship the tools inside the server package.
    return RedisServerInstall(info, 'distro')
  return _Script([f'{APT} update', f'{APT} install redis-tools',
                  'redis-benchmark --version'])


def MemtierInstall(info) -> str:
  """memtier-benchmark from Redis's APT repository (apt systems only)."""
  if info.family != 'debian':
    raise errors.PrerequisiteError(
        'memtier_benchmark is installed only from Redis\'s APT repository, '
        f'which has no packages for {info.display_name}; use '
        'a Debian/Ubuntu image (--os_type=debian12) or '
        '--load_generator=redis_benchmark.')
  return _Script(RedisAptRepoLines(info.os_codename) + [
      f'{APT} install memtier-benchmark',
      'memtier_benchmark --version'])


def SourceBuildLines(info, debian_deps: str, rhel_deps: str, url: str,
                     make_args: str, prefix: str = '/usr/local'):
  """Installs the build dependencies (Debian's or RHEL's package names), then
  builds and installs a release tarball as root in a private build
  directory, removed however the script ends (a fixed name in /tmp is
  another user's to make first)."""
  if info.family == 'debian':
    deps = [f'{APT} update', f'{APT} install {debian_deps}']
  else:
    deps = [f'{info.package_manager} install -y {rhel_deps}']
  return deps + ['build=$(mktemp -d)', 'trap \'rm -rf "$build"\' EXIT',
          f'curl -fsSL {shlex.quote(url)} -o "$build/src.tar.gz"',
          'tar -xzf "$build/src.tar.gz" -C "$build" --strip-components=1',
          f'make -C "$build" -j"$(nproc)" {make_args}',
          f'make -C "$build" install PREFIX={shlex.quote(prefix)} '
          f'{make_args}']


def ServerScript(lines, program: str, cli: str, bin_dir: str) -> str:
  """The install script: `lines`, then `cli` linked as redis-cli in
  `bin_dir` where no redis-cli came with them (the harness drives every
  shard with redis-cli: same protocol), then the installed version."""
  redis_cli = shlex.quote(f'{bin_dir}/redis-cli')
  return _Script(list(lines) + [
      'if ! command -v redis-cli >/dev/null 2>&1; then '
      f'ln -sf "$(command -v {cli})" {redis_cli}; fi',
      f'{program} --version'])


def ParseVersion(text: str):
  """(major, minor, patch) from the first X.Y[.Z] in text, or None."""
  match = re.search(r'(\d+)\.(\d+)(?:\.(\d+))?', text or '')
  if not match:
    return None
  return tuple(int(g or 0) for g in match.groups())


def ServerVersion(text: str) -> str:
  """'7.0.15' from a server's --version ('v=7.0.15' for redis, valkey and
  keydb; 'v1.34.2-<sha>' in colour codes for dragonfly), else ''."""
  match = re.search(r'v=?(\d+\.\d+\.\d+)', text or '')
  return match.group(1) if match else ''


def MemtierVersionOk(text: str) -> bool:
  version = ParseVersion(text)
  # Builds between releases print 255.255.255; they are newer than any.
  return version is not None and version >= MEMTIER_MIN_VERSION
