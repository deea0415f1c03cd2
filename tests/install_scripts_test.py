"""The root install scripts run for real under bash, every program that would
change this machine or reach a registry replaced by a recording stand-in.

What is real: the scripts the builders return (package_commands.py,
valkey_server.py, keydb_server.py, dragonfly_server.py, argv_secret.py),
scripts/install.sh and packages.sh shipped as a VM ships them
(e2e_support.ShippedScripts), bash, and the coreutils, grep, awk and tar they
run, through a PATH holding links to those programs only.

Stand-ins (STAND_IN below, one script under each name): apt-get, apt-cache,
curl, gpg, systemctl, service, dnf, yum and make record their arguments
(one record a call, the arguments kept apart, so a test sees each one as
the program got it) and change nothing: no registry is reached, nothing is
installed. curl "downloads" a key, a .deb or a tarball made on the spot;
apt-cache answers from the listing a test gives; dnf/yum fail for the
packages a test names missing. The installed programs (redis-server,
keydb-cli, ...) are stand-ins printing a version line.

The paths a script writes as root (APT keyrings and sources lists, links in
/usr/local/bin, an install prefix) point into the test's directory: those
arguments of the built script's steps are replaced, word by word, before it
runs (`_Redirected`), and a run refuses a script still naming /usr or /etc.
"""

import dataclasses
import os
import shlex
import shutil
import stat
import subprocess
from typing import Dict, List

import pytest

import e2e_support as e2e
from perfkitbenchmarker import shell_scripts
from perfkitbenchmarker import ssh_vm
from perfkitbenchmarker import system_info
from perfkitbenchmarker import virtual_machine
from perfkitbenchmarker.linux_packages import argv_secret
from perfkitbenchmarker.linux_packages import dragonfly_server
from perfkitbenchmarker.linux_packages import keydb_server
from perfkitbenchmarker.linux_packages import package_commands
from perfkitbenchmarker.linux_packages import valkey_server

pytestmark = pytest.mark.e2e

UBUNTU = system_info.SystemInfo(
    os_id='ubuntu', os_like=('debian',), os_codename='jammy',
    os_pretty_name='Ubuntu 22.04.4 LTS', arch='x86_64',
    package_managers=('apt-get',))
AMAZON = system_info.SystemInfo(
    os_id='amzn', os_like=('fedora',), os_pretty_name='Amazon Linux 2023',
    arch='aarch64', package_managers=('dnf', 'yum'))
ROCKY = system_info.SystemInfo(
    os_id='rocky', os_like=('rhel',), os_pretty_name='Rocky Linux 9',
    arch='x86_64', package_managers=('dnf',))

APT = ['apt-get', '-o', 'DPkg::Lock::Timeout=600', '-y', '-q']
# `apt-cache madison redis-server` as Redis's repository answers, newest
# first (7.2.40 is made up: 7.2.4 must not take it).
MADISON = '\n'.join(
    f' redis-server | {v} | https://packages.redis.io/deb jammy/main amd64 '
    'Packages' for v in ('6:7.2.40-1rl1~jammy1', '6:7.2.5-1rl1~jammy1',
                         '6:7.2.4-1rl1~jammy1')) + '\n'
# What install.sh's `make -j"$(nproc)"` gets here.
JOBS = len(os.sched_getaffinity(0))
ARMORED_KEY = '-----BEGIN PGP PUBLIC KEY BLOCK-----\nstand-in\n'

# Every stand-in: records "<name>\x1f<arg>\x1f<arg>...\x1e" (apt-get's name
# carries DEBIAN_FRONTEND, which apt-get must get), then acts per name.
STAND_IN = r'''#!/bin/bash
# Its settings (the log, what to answer) from the test's file, not the
# environment: sudo does not pass that on.
. @ROOT@/stand-in.conf
name=${0##*/}
[ "$name" = apt-get ] && name="DEBIAN_FRONTEND=$DEBIAN_FRONTEND $name"
{ printf '%s' "$name"; printf '\037%s' "$@"; printf '\036'; } >> "$STAND_IN_LOG"
out= url=
for ((i = 1; i <= $#; i++)); do
  [ "${!i}" = -o ] && { j=$((i + 1)); out=${!j}; }
  [[ ${!i} == *://* ]] && url=${!i}
done
last=${!#}
case ${0##*/} in
  curl)
    if [ -n "$STAND_IN_CURL_FAILS" ]; then
      echo "curl: (6) Could not resolve host: stand-in" >&2
      exit 6
    fi
    case $url in
      */gpg) printf '%s' "$STAND_IN_KEY" > "$out" ;;
      *.tar.gz)
        # A release tarball: a source tree (top/Makefile) and a binary
        # named like the archive, as Dragonfly's holds.
        d=$(mktemp -d)
        member=${url##*/}
        mkdir "$d/top"
        echo 'all:' > "$d/top/Makefile"
        printf '#!/bin/sh\necho stand-in\n' > "$d/${member%.tar.gz}"
        tar -czf "$out" -C "$d" .
        rm -rf "$d" ;;
      */keyring.gpg) printf '%s' "$STAND_IN_KEY" > "$out" ;;
      *) printf 'stand-in download of %s\n' "$url" > "$out" ;;
    esac ;;
  gpg) { printf 'dearmored '; cat "$last"; } > "$out" ;;
  apt-cache)
    case $1 in
      madison) printf '%s' "$STAND_IN_MADISON" ;;
      show) [[ " $STAND_IN_PACKAGED " == *" $2 "* ]] || exit 100 ;;
    esac ;;
  dnf|yum)
    for p in "$@"; do
      if [[ " $STAND_IN_MISSING " == *" $p "* ]]; then
        echo "No match for argument: $p" >&2
        exit 1
      fi
    done ;;
  systemctl)
    echo "System has not been booted with systemd as init system" >&2
    exit 1 ;;
  apt-get)
    # Another apt holds the lists' lock for the first N runs.
    held=0
    [ -e "$STAND_IN_LOG.held" ] && read -r held < "$STAND_IN_LOG.held"
    if [ "$held" -lt "${STAND_IN_APT_LOCKED:-0}" ]; then
      echo $((held + 1)) > "$STAND_IN_LOG.held"
      echo "E: Could not get lock /var/lib/apt/lists/lock. It is held by" \
        "process 812 (unattended-upgr)" >&2
      exit 100
    fi
    # Stale lists: an install fails until the lists are updated.
    case " $* " in
      *" update "*) : > "$STAND_IN_LOG.updated" ;;
      *" install "*)
        if [ -n "$STAND_IN_APT_STALE" ] && [ ! -e "$STAND_IN_LOG.updated" ]
        then
          echo "E: Unable to locate package $last" >&2
          exit 100
        fi ;;
    esac ;;
esac
exit 0
'''
RECORDERS = ('apt-get', 'apt-cache', 'curl', 'gpg', 'systemctl', 'service',
             'dnf', 'yum', 'make')
PROGRAMS = ('redis-server', 'redis-benchmark', 'memtier_benchmark',
            'valkey-server', 'valkey-cli', 'keydb-server', 'keydb-cli',
            'dragonfly')
# The real programs the scripts may run, linked into the PATH.
REAL = ('bash', 'mktemp', 'rm', 'mkdir', 'tar', 'gzip', 'grep', 'awk', 'tr',
        'install', 'ln', 'chmod', 'mv', 'cat', 'nproc', 'env', 'sleep')


@dataclasses.dataclass
class Machine:
  """The stand-in machine: its PATH, log, private temp dir and targets."""
  root: str

  def __post_init__(self):
    for sub in ('stand-ins', 'real', 'tmp', 'keyrings', 'sources',
                'prefix/bin', 'cwd'):
      os.makedirs(self.Path(sub))
    for name in RECORDERS:
      self._Write(name, STAND_IN.replace('@ROOT@', shlex.quote(self.root)))
    for name in PROGRAMS:
      self._Write(name, f'#!/bin/sh\necho "{name} v=7.2.4 (stand-in)"\n')
    for name in REAL:
      os.symlink(shutil.which(name), self.Path('real', name))
    self.env = {'PATH': f'{self.Path("stand-ins")}:{self.Path("real")}',
                'TMPDIR': self.Path('tmp'), 'HOME': self.Path('cwd')}
    self.env[shell_scripts.ENV] = e2e.ShippedScripts(
        self.Path('cwd'))[shell_scripts.ENV]
    # Where the builders' root paths go instead (`_Redirected`).
    self.paths = {
        package_commands.REDIS_APT_KEYRING: self.Path('keyrings', 'redis.gpg'),
        package_commands.REDIS_APT_SOURCE: self.Path('sources', 'redis.list'),
        keydb_server.APT_KEYRING: self.Path('keyrings', 'keydb.gpg'),
        keydb_server.APT_SOURCE: self.Path('sources', 'keydb.list'),
        '/usr/local': self.Path('prefix')}  # its bin/ too (LINK_DIR)

  def Path(self, *parts: str) -> str:
    return os.path.join(self.root, *parts)

  def _Write(self, name: str, text: str) -> None:
    path = self.Path('stand-ins', name)
    with open(path, 'w') as f:
      f.write(text)
    os.chmod(path, 0o755)

  def Run(self, script: str, redirect: bool = True, **settings: str):
    """(stdout, stderr, rc) of the script, its root paths redirected."""
    if redirect:
      script = _Redirected(script, self.paths)
    assert '/usr/' not in script and '/etc/' not in script, script
    settings = dict({'log': self.Path('calls.log'), 'key': ARMORED_KEY,
                     'madison': MADISON, 'packaged': '', 'missing': '',
                     'curl_fails': '', 'apt_stale': '', 'apt_locked': '0'},
                    **settings)
    with open(self.Path('stand-in.conf'), 'w') as f:
      f.writelines(f'STAND_IN_{k.upper()}={shlex.quote(v)}\n'
                   for k, v in settings.items())
    done = subprocess.run(
        ['/bin/bash', '-c', script], capture_output=True, text=True,
        timeout=60, check=False, cwd=self.Path('cwd'), env=self.env)
    return done.stdout, done.stderr, done.returncode

  def Calls(self) -> List[List[str]]:
    """Each stand-in call: [name, arg, ...], in order."""
    try:
      with open(self.Path('calls.log')) as f:
        records = f.read().split('\x1e')[:-1]
    except FileNotFoundError:
      return []
    return [r.split('\x1f') for r in records]

  def Leftovers(self) -> List[str]:
    return os.listdir(self.Path('tmp'))


def _Redirected(script: str, paths: Dict[str, str]) -> str:
  """`script` with each step's arguments naming a root path (or holding
  one, as a sources line does) pointing into the test's directory."""
  lines = []
  for line in script.split('\n'):
    head, _, rest = line.partition(e2e.INSTALL_STEP)
    if not rest:
      lines.append(line)
      continue
    words = shlex.split(rest)
    for old, new in sorted(paths.items(), key=lambda p: -len(p[0])):
      words = [w.replace(old, new) for w in words]
    prefix = head.replace('"${BASH:-bash}" ', '')
    lines.append(prefix + package_commands.Step(*words))
  return '\n'.join(lines)


@pytest.fixture
def machine(tmp_path):
  return Machine(str(tmp_path))


def Apt(*args: str) -> List[str]:
  return ['DEBIAN_FRONTEND=noninteractive ' + APT[0]] + APT[1:] + list(args)


STOP_REDIS = [['systemctl', 'disable', '--now', 'redis-server'],
              ['service', 'redis-server', 'stop']]


# --- Redis, redis-tools and memtier ----------------------------------------

def test_redis_distro_on_debian(machine):
  out, err, rc = machine.Run(
      package_commands.RedisServerInstall(UBUNTU, 'distro'))
  assert rc == 0, err
  assert machine.Calls() == [Apt('update'),
                             Apt('install', 'redis-server', 'redis-tools'),
                             *STOP_REDIS]
  assert out == 'redis-server v=7.2.4 (stand-in)\n'


def _RepositoryCalls(machine, key_fetched=True) -> List[List[str]]:
  """The calls adding Redis's repository (the key into a private dir)."""
  calls = [Apt('update'), Apt('install', 'ca-certificates', 'curl', 'gpg')]
  if key_fetched:
    work = os.path.dirname(machine.Calls()[2][-1])
    assert os.path.dirname(work) == machine.Path('tmp')
    calls += [['curl', '-fsSL', package_commands.REDIS_APT_KEY_URL,
               '-o', f'{work}/key'],
              ['gpg', '--batch', '--yes', '--dearmor', '-o',
               f'{work}/keyring', f'{work}/key']]
  return calls + [Apt('update')]


def test_redis_pinned_from_redis_repository(machine):
  out, err, rc = machine.Run(
      package_commands.RedisServerInstall(UBUNTU, '7.2.4'))
  assert rc == 0, err
  build = '6:7.2.4-1rl1~jammy1'  # not 7.2.40, listed first
  assert machine.Calls() == _RepositoryCalls(machine) + [
      ['apt-cache', 'madison', 'redis-server'],
      Apt('install', '--allow-downgrades', f'redis-server={build}',
          f'redis-tools={build}'),
      *STOP_REDIS]
  assert out.endswith('redis-server v=7.2.4 (stand-in)\n')
  keyring = machine.paths[package_commands.REDIS_APT_KEYRING]
  with open(keyring) as f:
    assert f.read() == 'dearmored ' + ARMORED_KEY
  assert stat.S_IMODE(os.stat(keyring).st_mode) == 0o644
  with open(machine.paths[package_commands.REDIS_APT_SOURCE]) as f:
    assert f.read() == (f'deb [signed-by={keyring}] '
                        'https://packages.redis.io/deb jammy main\n')
  assert machine.Leftovers() == []  # the private directory is gone
  # A release line takes its newest build; the key is fetched once.
  os.remove(machine.Path('calls.log'))
  assert machine.Run(package_commands.RedisServerInstall(UBUNTU, '7.2'))[2] == 0
  assert machine.Calls()[:3] == _RepositoryCalls(machine, key_fetched=False)
  assert machine.Calls()[4][-2:] == ['redis-server=6:7.2.40-1rl1~jammy1',
                                     'redis-tools=6:7.2.40-1rl1~jammy1']


def test_a_release_not_packaged_exits_3_with_the_listing(machine):
  _, err, rc = machine.Run(package_commands.RedisServerInstall(UBUNTU, '7.2.9'))
  assert rc == 3
  assert err.strip().splitlines()[-1] == (
      'Redis 7.2.9 is not in packages.redis.io for jammy; packaged versions: '
      '6:7.2.40-1rl1~jammy1 6:7.2.5-1rl1~jammy1 6:7.2.4-1rl1~jammy1')
  assert machine.Calls()[-1] == ['apt-cache', 'madison', 'redis-server']


def test_a_failed_key_download_stops_with_curls_own_error(machine):
  """Found by scripts/try_engine_installs.py in a Debian root: with the key
  fetched in a pipe, an unreachable repository went on to `chmod` a missing
  keyring and reported that. Now curl's own error ends the install."""
  _, err, rc = machine.Run(package_commands.MemtierInstall(UBUNTU),
                           curl_fails='1')
  assert rc == 6
  assert err.strip().endswith('Could not resolve host: stand-in')
  assert [c[0] for c in machine.Calls()][-1] == 'curl'  # no gpg, no install
  assert not os.listdir(machine.Path('keyrings'))
  assert not os.listdir(machine.Path('sources'))
  assert machine.Leftovers() == []


def test_memtier_and_redis_tools_on_debian(machine):
  out, err, rc = machine.Run(package_commands.MemtierInstall(UBUNTU))
  assert rc == 0, err
  assert machine.Calls() == _RepositoryCalls(machine) + [
      Apt('install', 'memtier-benchmark')]
  assert out.endswith('memtier_benchmark v=7.2.4 (stand-in)\n')
  os.remove(machine.Path('calls.log'))
  out, err, rc = machine.Run(package_commands.RedisToolsInstall(UBUNTU))
  assert rc == 0, err
  assert machine.Calls() == [Apt('update'), Apt('install', 'redis-tools')]
  assert out == 'redis-benchmark v=7.2.4 (stand-in)\n'


def test_rhel_redis_and_amazon_linux_redis6(machine):
  stops = [['systemctl', 'disable', '--now', 'redis'],
           ['service', 'redis', 'stop'],
           ['systemctl', 'disable', '--now', 'redis6'],
           ['service', 'redis6', 'stop']]
  rocky = package_commands.RedisServerInstall(ROCKY, 'distro')
  assert machine.Run(rocky)[2] == 0
  assert machine.Calls() == [['dnf', 'install', '-y', 'redis'], *stops]
  assert not os.listdir(machine.Path('prefix', 'bin'))
  # Amazon Linux 2023 has redis6, whose programs are linked as redis-*.
  os.remove(machine.Path('calls.log'))
  out, err, rc = machine.Run(package_commands.RedisToolsInstall(AMAZON),
                             missing='redis')
  assert rc == 0, err
  assert machine.Calls() == [['dnf', 'install', '-y', 'redis'],
                             ['dnf', 'install', '-y', 'redis6'], *stops]
  for program in ('server', 'cli', 'benchmark'):
    assert os.readlink(machine.Path('prefix', 'bin', f'redis-{program}')) == (
        f'/usr/bin/redis6-{program}')
  assert out == 'redis-server v=7.2.4 (stand-in)\n'


# --- Valkey, KeyDB, Dragonfly ----------------------------------------------

def _Build(machine, url: str, *make_args: str) -> List[List[str]]:
  """The calls of install.sh's `build` step (its private dir read back)."""
  source = next(c[2] for c in machine.Calls() if c[0] == 'make')
  assert os.path.dirname(os.path.dirname(source)) == machine.Path('tmp')
  return [['curl', '-fsSL', url, '-o',
           os.path.join(os.path.dirname(source), 'source.tar.gz')],
          ['make', '-C', source, f'-j{JOBS}', *make_args],
          ['make', '-C', source, 'install',
           f'PREFIX={machine.Path("prefix")}', *make_args]]


def test_valkey_from_the_os_package_where_there_is_one(machine):
  out, err, rc = machine.Run(valkey_server.InstallScript(UBUNTU),
                             packaged='valkey-server')
  assert rc == 0, err
  assert machine.Calls() == [
      Apt('update'), ['apt-cache', 'show', 'valkey-server'],
      Apt('install', 'valkey-server', 'valkey-tools'),
      ['systemctl', 'disable', '--now', 'valkey-server'],
      ['service', 'valkey-server', 'stop']]
  # No redis-cli on PATH: valkey-cli is linked under that name.
  assert os.readlink(machine.Path('prefix', 'bin', 'redis-cli')) == (
      machine.Path('stand-ins', 'valkey-cli'))
  assert out == 'valkey-server v=7.2.4 (stand-in)\n'


def test_valkey_built_from_its_release_otherwise(machine):
  url = valkey_server.SOURCE_URL.format(v=valkey_server.SOURCE_VERSION)
  make_args = ('BUILD_TLS=no', 'USE_REDIS_SYMLINKS=no')
  assert machine.Run(valkey_server.InstallScript(UBUNTU))[2] == 0
  assert machine.Calls() == [
      Apt('update'), ['apt-cache', 'show', 'valkey-server'], Apt('update'),
      Apt('install', 'build-essential', 'pkg-config', 'curl',
          'ca-certificates'), *_Build(machine, url, *make_args)]
  assert machine.Leftovers() == []
  os.remove(machine.Path('calls.log'))
  # RHEL-like: the package where dnf has it, else the same build.
  assert machine.Run(valkey_server.InstallScript(ROCKY),
                     missing='valkey')[2] == 0
  assert machine.Calls() == [
      ['dnf', 'install', '-y', 'valkey'],
      ['dnf', 'install', '-y', 'gcc', 'make', 'curl', 'tar',
       'ca-certificates'], *_Build(machine, url, *make_args)]
  os.remove(machine.Path('calls.log'))
  # A release number always builds that release.
  assert machine.Run(valkey_server.InstallScript(ROCKY, '8.1.4'))[2] == 0
  assert machine.Calls()[1:] == _Build(
      machine, valkey_server.SOURCE_URL.format(v='8.1.4'), *make_args)


def test_keydb_from_its_repository_and_from_source(machine):
  out, err, rc = machine.Run(keydb_server.InstallScript(UBUNTU),
                             key='binary key')
  assert rc == 0, err
  keyring = machine.paths[keydb_server.APT_KEYRING]
  calls = machine.Calls()
  work = os.path.dirname(calls[2][-1])
  assert calls == [
      Apt('update'), Apt('install', 'ca-certificates', 'curl', 'gpg'),
      ['curl', '-fsSL', f'{keydb_server.APT_URL}/keyring.gpg', '-o',
       f'{work}/key'],  # a binary key: no gpg --dearmor
      Apt('update'),
      Apt('install', 'keydb-server', 'keydb-tools', 'redis-tools'),
      ['systemctl', 'disable', '--now', 'keydb-server'],
      ['service', 'keydb-server', 'stop']]
  with open(keyring) as f:
    assert f.read() == 'binary key'
  with open(machine.paths[keydb_server.APT_SOURCE]) as f:
    assert f.read() == (f'deb [signed-by={keyring}] {keydb_server.APT_URL} '
                        'jammy main\n')
  assert out == 'keydb-server v=7.2.4 (stand-in)\n'
  os.remove(machine.Path('calls.log'))
  assert machine.Run(keydb_server.InstallScript(ROCKY))[2] == 0
  url = keydb_server.SOURCE_URL.format(v=keydb_server.SOURCE_RELEASE)
  assert machine.Calls() == [
      ['dnf', 'install', '-y', *keydb_server.RHEL_BUILD_DEPS],
      *_Build(machine, url, 'BUILD_TLS=no')]


def test_dragonfly_deb_and_tarball(machine):
  deb, tarball = dragonfly_server.AssetUrls('x86_64', 'distro')
  out, err, rc = machine.Run(dragonfly_server.InstallScript(UBUNTU, 'x86_64'))
  assert rc == 0, err
  calls = machine.Calls()
  package = calls[2][-1]
  assert os.path.dirname(os.path.dirname(package)) == machine.Path('tmp')
  assert calls == [
      Apt('update'), Apt('install', 'curl', 'ca-certificates', 'redis-tools'),
      ['curl', '-fsSL', deb, '-o', package],
      Apt('install', '--allow-downgrades', package),
      ['systemctl', 'disable', '--now', 'dragonfly'],
      ['service', 'dragonfly', 'stop']]
  assert out == 'dragonfly v=7.2.4 (stand-in)\n'
  os.remove(machine.Path('calls.log'))
  # RHEL-like: the release's binary, installed under the prefix.
  assert machine.Run(dragonfly_server.InstallScript(ROCKY, 'x86_64'))[2] == 0
  calls = machine.Calls()
  assert calls[0] == ['dnf', 'install', '-y', 'curl', 'tar', 'redis']
  assert calls[1][:4] == ['curl', '-fsSL', tarball, '-o'] and len(calls) == 2
  binary = machine.Path('prefix', 'bin', 'dragonfly')
  assert stat.S_IMODE(os.stat(binary).st_mode) == 0o755
  assert machine.Leftovers() == []


def test_compiler_for_argv_secret(machine):
  assert machine.Run(argv_secret.CompilerInstall(UBUNTU))[2] == 0
  assert machine.Run(argv_secret.CompilerInstall(AMAZON))[2] == 0
  assert machine.Calls() == [Apt('install', 'gcc', 'libc6-dev'),
                             ['dnf', 'install', '-y', 'gcc']]


def test_os_packages_for_upstream_modules(machine):
  """vm.InstallPackages's root step (ssh_vm.InstallMissingPackages): apt
  updates its lists only when an install fails on them."""
  packages = package_commands.Step('packages', 'apt', 'curl', 'wget')
  assert machine.Run(packages)[2] == 0
  assert machine.Calls() == [Apt('install', 'curl', 'wget')]
  os.remove(machine.Path('calls.log'))
  _, err, rc = machine.Run(packages, apt_stale='1')
  assert rc == 0, err
  assert machine.Calls() == [Apt('install', 'curl', 'wget'), Apt('update'),
                             Apt('install', 'curl', 'wget')]
  os.remove(machine.Path('calls.log'))
  assert machine.Run(package_commands.Step('packages', 'yum', 'curl'))[2] == 0
  assert machine.Calls() == [['yum', 'install', '-y', 'curl']]


def test_apt_waits_while_another_apt_holds_its_lock(machine):
  """A fresh VM's unattended-upgrades holds apt's lists lock for a while
  and `apt-get update` fails at once on it (DPkg::Lock::Timeout covers
  dpkg's lock only), so packages.sh's apt_get tries again; a real lock held
  past the bound: tests/setup_apt_lock_test.py, on scripts/apt_get.sh,
  which runs the same function."""
  machine.env['PKB_APT_LOCK_RETRY_S'] = '0'
  _, err, rc = machine.Run(package_commands.RedisToolsInstall(UBUNTU),
                           apt_locked='2')
  assert rc == 0, err
  assert machine.Calls() == [Apt('update')] * 3 + [Apt('install',
                                                       'redis-tools')]
  assert err.count('Another apt holds its lock; waiting') == 2


# --- Values are arguments, never run ---------------------------------------

def test_a_value_with_shell_metacharacters_arrives_as_one_argument(machine):
  pwned = machine.Path('cwd', 'pwned')
  # Builtins only: the script's PATH has no touch.
  value = (f"x'; echo > {pwned}; echo \"$(echo > {pwned})`echo > {pwned}`"
           '$((1+1))')
  step = package_commands.Step
  script = package_commands.Script([
      step('apt', 'install', value),
      step('build', f'https://example.invalid/{value}.tar.gz',
           machine.Path('prefix'), value),
      step('pinned', 'Redis', value, value, 'redis-server')])
  _, err, rc = machine.Run(script, redirect=False)
  assert rc == 3
  assert err.strip().splitlines()[-1].startswith(
      f'Redis {value} is not in {value}; packaged versions: ')
  source = next(c[2] for c in machine.Calls() if c[0] == 'make')
  assert machine.Calls()[:2] == [
      Apt('install', value),
      ['curl', '-fsSL', f'https://example.invalid/{value}.tar.gz', '-o',
       os.path.join(os.path.dirname(source), 'source.tar.gz')]]
  assert ['make', '-C', source, f'-j{JOBS}', value] in (
      machine.Calls())
  assert not os.path.exists(pwned)


def test_an_unknown_step_is_refused(machine):
  _, err, rc = machine.Run(package_commands.Step('rm', '-rf', '/x'))
  assert rc == 2 and "unknown step 'rm'" in err
  assert machine.Calls() == []


# --- As root, through sudo -------------------------------------------------

SUDO = '''#!/bin/sh
# A stand-in for sudo with its default env_reset: the command gets PATH
# (sudo's secure_path) and nothing else of the caller's environment.
[ "$1" = -n ] && shift
exec env -i PATH="$PATH" "$@"
'''


def test_sudo_hands_root_the_checked_scripts_dir_and_nothing_else(machine):
  """sudo keeps none of the caller's environment: vm.Sudo passes the
  shipped scripts' directory (checked the run user's own right before the
  command) explicitly, so root runs those scripts and no others."""
  vm = ssh_vm.SshVirtualMachine(
      virtual_machine.VmSpec(cloud='Static', machine_type='static'), 'vm-0',
      'servers', user='pkb', ip_address='192.0.2.1')
  vm.system_info = dataclasses.replace(UBUNTU, uid=1000)
  machine._Write('sudo', SUDO)  # pylint: disable=protected-access
  script = package_commands.RedisToolsInstall(UBUNTU)
  out, err, rc = machine.Run(vm.Sudo(script), redirect=False)
  assert rc == 0, err
  assert machine.Calls() == [Apt('update'), Apt('install', 'redis-tools')]
  assert out == 'redis-benchmark v=7.2.4 (stand-in)\n'
  # Without it, root would have no scripts to run (and runs nothing).
  os.remove(machine.Path('calls.log'))
  _, err, rc = machine.Run(f'sudo -n bash -c {shlex.quote(script)}',
                           redirect=False)
  assert rc != 0 and 'PKB_SCRIPTS: parameter null or not set' in err
  assert machine.Calls() == []
