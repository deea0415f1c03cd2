"""Real hosts behind fake clouds: the cloud rehearsal's machinery.

Test support code, not product code. A rehearsal runs `./pkb.py --cloud=GCP`
or `--cloud=AWS` for real against tests/fake_gce.py or moto, with every VM
the fake cloud creates backed by a real host on this machine:

  * `Netns`: one network namespace per rehearsal, loopback only, that pkb,
    the fake cloud APIs and every host live in. Extra addresses (a GCE
    instance's internal 10.0.0.n, moto's public and private addresses) are
    added to its `lo`, so the addresses the clouds hand out are the ones
    SSH and Redis really use; nothing outside the namespace can reach them
    and nothing in it can reach out. A trap interface (a veth whose peer
    sits in a second, empty namespace) carries the default route: any
    packet for an address outside the namespace (a metadata server, a DNS
    server, a real cloud API) goes there and is counted, so `Escaped()`
    catches every process, Python or not.
  * `Host`: one VM. `sshd` runs as PID 1 of its own PID and mount
    namespaces (so its processes are the VM's and die with it), listening
    on the VM's address port 22 and accepting only the user and public key
    the provider put in the instance (GCE `ssh-keys` metadata, the EC2 key
    pair), the way the image's guest agent or cloud-init would. The user
    exists only inside the host (a private /etc/passwd): like a cloud
    image's login it is not root (uid 1000) and has passwordless sudo
    (the real sudo, with the host's private /etc/sudoers), so everything
    pkb does as root goes through `sudo -n`; /tmp is the host's own tmpfs,
    and what system tuning writes (transparent huge pages,
    vm.overcommit_memory, the open-file limits file in
    /etc/security/limits.d) is private to the host (somaxconn and the SYN
    backlog are the namespace's own), so tuning runs for real without
    changing this machine. `Processes()` lists what runs on
    the host besides sshd; `Stop()` ends them all, as deleting a VM does.
  * sitecustomize in tests/rehearsal_guard/: an audit hook in every Python
    process of the run that refuses and logs connections and lookups
    outside loopback and the namespace's own addresses.

Needs root (namespaces, mounts), ip, nsenter, unshare, sshd and sudo.
"""

import contextlib
import ctypes
import dataclasses
import ipaddress
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import threading
import time
import uuid
from typing import Dict, Iterator, List, Optional

import e2e_support

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GUARD_DIR = os.path.join(REPO, 'tests', 'rehearsal_guard')
SSHD = '/usr/sbin/sshd'
_CLONE_NEWNET = 0x40000000
_LIBC = ctypes.CDLL(None, use_errno=True)


def Available() -> bool:
  return (os.geteuid() == 0 and os.path.exists(SSHD) and
          all(shutil.which(t) for t in ('ip', 'nsenter', 'unshare', 'ssh',
                                        'sudo')))


def _Ip(*args: str) -> str:
  return subprocess.run(['ip', *args], check=True, capture_output=True,
                        text=True).stdout


def _SetNs(fd: int) -> None:
  if _LIBC.setns(fd, _CLONE_NEWNET) != 0:
    raise OSError(ctypes.get_errno(), 'setns failed')


NETNS_DIR = '/run/netns'
# A rehearsal's namespaces are named for the test process that made them
# (pkbr-<pid>-<random>, the trap's sink with an 's' after it): a run killed
# by SIGKILL cannot delete its own, and the next one to make a namespace
# deletes those whose maker is gone, never one of a suite still running.
_NAME = re.compile(r'pkbr-(\d+)-[0-9a-f]+s?')


def _DeleteNetns(name: str) -> None:
  subprocess.run(['ip', 'netns', 'delete', name], capture_output=True,
                 check=False)


def SweepLeftovers(netns_dir: str = NETNS_DIR) -> List[str]:
  """Deletes the rehearsal namespaces whose maker has died, after killing
  what still runs in them (that run's hosts, pkb and servers); returns
  their names. A reused pid keeps its namespace until that process is gone
  too."""
  try:
    names = os.listdir(netns_dir)
  except FileNotFoundError:
    return []
  swept = []
  for name in sorted(names):
    match = _NAME.fullmatch(name)
    if match and not e2e_support.ProcessAlive(int(match.group(1))):
      pids = subprocess.run(['ip', 'netns', 'pids', name],
                            capture_output=True, text=True, check=False)
      for pid in pids.stdout.split():
        try:
          os.kill(int(pid), signal.SIGKILL)
        except (ProcessLookupError, ValueError):
          pass
      _DeleteNetns(name)
      swept.append(name)
  return swept


class Netns:
  """A network namespace with loopback, a trap route and nothing else."""

  def __init__(self, name: Optional[str] = None):
    self.name = name or f'pkbr-{os.getpid()}-{uuid.uuid4().hex[:6]}'
    self.sink = self.name + 's'
    self.path = os.path.join(NETNS_DIR, self.name)
    self.addresses: List[str] = []
    self._lock = threading.Lock()

  def Create(self) -> 'Netns':
    SweepLeftovers()
    _Ip('netns', 'add', self.name)
    _Ip('netns', 'add', self.sink)
    _Ip('-n', self.name, 'link', 'set', 'lo', 'up')
    _Ip('link', 'add', 'trap0', 'netns', self.name, 'type', 'veth', 'peer',
        'name', 'sink0', 'netns', self.sink)
    # No IPv6 on the trap: its router solicitations would count as escapes.
    self.Run(['sh', '-c',
              'echo 1 > /proc/sys/net/ipv6/conf/trap0/disable_ipv6'])
    _Ip('-n', self.name, 'link', 'set', 'trap0', 'up')
    _Ip('-n', self.sink, 'link', 'set', 'sink0', 'up')
    _Ip('-n', self.name, 'route', 'add', 'default', 'dev', 'trap0')
    return self

  def Delete(self) -> None:
    for name in (self.name, self.sink):
      _DeleteNetns(name)

  def AddAddress(self, address: str) -> None:
    """Makes `address` local to the namespace (loopback ones already are)."""
    with self._lock:
      if address in self.addresses:
        return
      self.addresses.append(address)
    if not ipaddress.ip_address(address).is_loopback:
      _Ip('-n', self.name, 'addr', 'add', f'{address}/32', 'dev', 'lo')

  def Escaped(self) -> int:
    """Packets sent towards anything outside the namespace (must be 0)."""
    stats = json.loads(_Ip('-n', self.name, '-s', '-j', 'link', 'show',
                           'trap0'))
    return int(stats[0]['stats64']['tx']['packets'])

  @contextlib.contextmanager
  def Inside(self) -> Iterator[None]:
    """This thread in the namespace: sockets made meanwhile live there."""
    original = os.open('/proc/thread-self/ns/net', os.O_RDONLY)
    target = os.open(self.path, os.O_RDONLY)
    try:
      _SetNs(target)
      try:
        yield
      finally:
        _SetNs(original)
    finally:
      os.close(target)
      os.close(original)

  def Argv(self, argv: List[str]) -> List[str]:
    return ['nsenter', f'--net={self.path}', '--'] + list(argv)

  def Run(self, argv: List[str], **kwargs) -> subprocess.CompletedProcess:
    kwargs.setdefault('capture_output', True)
    kwargs.setdefault('text', True)
    kwargs.setdefault('check', True)
    return subprocess.run(self.Argv(argv), **kwargs)  # pylint: disable=subprocess-run-check

  def GuardEnv(self, log_path: str) -> Dict[str, str]:
    """Environment that installs the audit-hook guard in Python children."""
    env = dict(os.environ)
    env['PYTHONPATH'] = os.pathsep.join(
        p for p in (GUARD_DIR, env.get('PYTHONPATH')) if p)
    env['PKB_REHEARSAL_GUARD_LOG'] = log_path
    env['PKB_REHEARSAL_ALLOWED'] = ','.join(self.addresses)
    return env


_SETUP = r'''
set -e
mount --bind "$1" /mnt
mount -t tmpfs -o mode=1777,size=256m rehearsal-tmp /tmp
mkdir -m 0700 /tmp/home
chown "$2" /tmp/home
mount --bind /mnt/passwd /etc/passwd
mount --bind /mnt/sudoers /etc/sudoers
mount --bind /mnt/shadow /etc/shadow
mount --bind /mnt/thp /sys/kernel/mm/transparent_hugepage
mount --bind /mnt/overcommit_memory /proc/sys/vm/overcommit_memory
if [ -d /etc/security/limits.d ]; then
  mount --bind /mnt/limits.d /etc/security/limits.d
fi
exec /usr/sbin/sshd -D -e -f /mnt/sshd_config
'''


def _FreeUid() -> int:
  with open('/etc/passwd') as f:
    taken = {int(l.split(':')[2]) for l in f if l.count(':') >= 6}
  return next(u for u in range(1000, 60000) if u not in taken)


@dataclasses.dataclass(frozen=True)
class HostProcess:
  pid: int
  comm: str
  cmdline: str


class Host:
  """One VM: an sshd in its own PID and mount namespaces."""

  def __init__(self, directory: str, netns: Netns, name: str, address: str,
               user: str, public_key: str):
    self.directory = directory
    self.netns = netns
    self.name = name
    self.address = address
    self.user = user
    self.public_key = public_key.strip()
    # A cloud image's login is not root: a uid no user of this machine has
    # (the host's passwd is this machine's plus the user).
    self.uid = 0 if user == 'root' else _FreeUid()
    self.log_path = os.path.join(directory, 'sshd.log')
    self._proc: Optional[subprocess.Popen] = None
    self.init_pid: Optional[int] = None
    self._pid_ns = ''

  def _WriteFiles(self) -> None:
    d = self.directory
    os.makedirs(os.path.join(d, 'thp'), exist_ok=True)
    os.makedirs(self.LimitsDir(), exist_ok=True)
    subprocess.run(['ssh-keygen', '-q', '-t', 'ed25519', '-N', '', '-f',
                    os.path.join(d, 'host_key')], check=True,
                   capture_output=True)
    # sshd reads the keys as the user; the directory is /mnt in the host.
    os.chmod(d, 0o755)
    with open(os.path.join(d, 'authorized_keys'), 'w') as f:
      f.write(self.public_key + '\n')
    os.chmod(os.path.join(d, 'authorized_keys'), 0o644)
    with open('/etc/passwd') as f:
      lines = [l for l in f if not l.startswith(self.user + ':')]
    if self.user != 'root':
      lines.append(f'{self.user}:x:{self.uid}:{self.uid}:rehearsal VM user:'
                   '/tmp/home:/bin/bash\n')
    with open(os.path.join(d, 'passwd'), 'w') as f:
      f.writelines(lines)
    # sudo's PAM account check needs the user in shadow: no password (`*`:
    # the key is the only way in), an account that is valid.
    with open('/etc/shadow') as f:
      lines = [l for l in f if not l.startswith(self.user + ':')]
    if self.user != 'root':
      lines.append(f'{self.user}:*:20000:0:99999:7:::\n')
    shadow = os.path.join(d, 'shadow')
    with open(os.open(shadow, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600),
              'w') as f:
      f.writelines(lines)
    # What a cloud image gives its login: root through sudo, no password.
    # sudo reads only a root-owned file no one else can write.
    sudoers = os.path.join(d, 'sudoers')
    with open(sudoers, 'w') as f:
      f.write(f'{self.user} ALL=(ALL:ALL) NOPASSWD: ALL\n')
    os.chmod(sudoers, 0o440)
    for knob in ('enabled', 'defrag'):
      with open(os.path.join(d, 'thp', knob), 'w') as f:
        f.write('always defer defer+madvise [madvise] never\n')
    with open(os.path.join(d, 'overcommit_memory'), 'w') as f:
      f.write('0\n')
    with open(os.path.join(d, 'sshd_config'), 'w') as f:
      f.write('\n'.join([
          f'ListenAddress {self.address}', 'Port 22',
          'HostKey /mnt/host_key', 'PidFile none',
          'AuthorizedKeysFile /mnt/authorized_keys',
          f'AllowUsers {self.user}',
          'PermitRootLogin prohibit-password',
          'PubkeyAuthentication yes', 'PasswordAuthentication no',
          'KbdInteractiveAuthentication no', 'UsePAM no', 'StrictModes no',
          'SetEnv SHLVL=1', 'MaxSessions 64', 'MaxStartups 64',
          'LogLevel INFO',
      ]) + '\n')

  def LimitsDir(self) -> str:
    """The host's own /etc/security/limits.d (system tuning writes there)."""
    return os.path.join(self.directory, 'limits.d')

  def Start(self, timeout: float = 10) -> 'Host':
    os.makedirs(self.directory, exist_ok=True)
    self._WriteFiles()
    self.netns.AddAddress(self.address)
    if not os.path.isdir('/run/sshd'):
      os.makedirs('/run/sshd', mode=0o755, exist_ok=True)
    with open(self.log_path, 'w') as log:
      self._proc = subprocess.Popen(
          self.netns.Argv(['unshare', '--mount', '--pid', '--fork',
                           '--kill-child', '--mount-proc',
                           'sh', '-c', _SETUP, 'rehearsal-host',
                           self.directory, str(self.uid)]),
          stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
          start_new_session=True)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
      if self._proc.poll() is not None:
        raise RuntimeError(f'host {self.name}: sshd exited: {self.Log()}')
      if self.init_pid is None:
        self.init_pid = self._FindInit()
      if self.init_pid and self._Listening():
        self._CheckPrivateLimits()
        return self
      time.sleep(0.05)
    self.Stop()
    raise RuntimeError(f'host {self.name}: no sshd on {self.address}:22: '
                       f'{self.Log()}')

  def _CheckPrivateLimits(self) -> None:
    """The host's /etc/security/limits.d is its own directory (mounted
    before sshd started): tuning there never reaches this machine's."""
    if not os.path.isdir('/etc/security/limits.d'):
      return
    seen = os.stat(f'/proc/{self.init_pid}/root/etc/security/limits.d')
    own = os.stat(self.LimitsDir())
    if (seen.st_dev, seen.st_ino) != (own.st_dev, own.st_ino):
      self.Stop()
      raise RuntimeError(f'host {self.name}: /etc/security/limits.d is this '
                         'machine\'s, not the host\'s own')

  def _FindInit(self) -> Optional[int]:
    """The host's PID 1 (unshare's child), seen from here."""
    for pid in _Pids():
      if _PPid(pid) == self._proc.pid:
        try:
          self._pid_ns = os.readlink(f'/proc/{pid}/ns/pid')
        except OSError:
          return None
        if self._pid_ns == os.readlink('/proc/self/ns/pid'):
          continue  # Not yet in its namespace.
        return pid
    return None

  def _Listening(self) -> bool:
    with self.netns.Inside():
      try:
        with socket.create_connection((self.address, 22), timeout=0.5):
          return True
      except OSError:
        return False

  def Processes(self) -> List[HostProcess]:
    """Every process on the host but sshd (its listener and sessions)."""
    if not self._pid_ns:
      return []
    found = []
    for pid in _Pids():
      try:
        if os.readlink(f'/proc/{pid}/ns/pid') != self._pid_ns:
          continue
        with open(f'/proc/{pid}/comm') as f:
          comm = f.read().strip()
        with open(f'/proc/{pid}/cmdline', 'rb') as f:
          cmdline = f.read().replace(b'\0', b' ').decode(errors='replace')
      except OSError:
        continue
      if comm == 'sshd' or pid == self.init_pid:
        continue
      found.append(HostProcess(pid, comm, cmdline.strip()))
    return found

  def Exists(self, path: str) -> bool:
    """Whether `path` exists in the host's own file system view."""
    return bool(self.init_pid) and os.path.lexists(
        f'/proc/{self.init_pid}/root{path}')

  def Log(self) -> str:
    try:
      with open(self.log_path) as f:
        return f.read()[-2000:]
    except OSError:
      return ''

  def Stop(self) -> None:
    """Ends every process of the host, as deleting the VM does."""
    if self.init_pid:
      try:
        os.kill(self.init_pid, 9)
      except ProcessLookupError:
        pass
    if self._proc is not None:
      try:
        self._proc.wait(timeout=10)
      except subprocess.TimeoutExpired:
        self._proc.kill()
        self._proc.wait()
    self._proc = None


def _Pids() -> List[int]:
  return [int(p) for p in os.listdir('/proc') if p.isdigit()]


def _PPid(pid: int) -> Optional[int]:
  try:
    with open(f'/proc/{pid}/stat') as f:
      return int(f.read().rsplit(')', 1)[1].split()[1])
  except (OSError, IndexError, ValueError):
    return None


@dataclasses.dataclass
class StoppedHost:
  name: str
  address: str
  leftovers: List[HostProcess]
  scratch_left: bool


class Hosts:
  """The rehearsal's hosts by address; what each left when its VM went."""

  def __init__(self, directory: str, netns: Netns):
    self.directory = directory
    self.netns = netns
    self.live: Dict[str, Host] = {}
    self.stopped: List[StoppedHost] = []
    self.refuse_ssh: set = set()  # VM names whose SSH never comes up.
    self.started: List[str] = []
    self._lock = threading.Lock()

  def Up(self, name: str, address: str, internal: Optional[str], user: str,
         public_key: str) -> None:
    if internal:
      self.netns.AddAddress(internal)
    if name in self.refuse_ssh:
      self.netns.AddAddress(address)
      return
    host = Host(os.path.join(self.directory, name), self.netns, name,
                address, user, public_key).Start()
    with self._lock:
      self.live[address] = host
      self.started.append(name)

  def Down(self, address: str, scratch: str = '') -> None:
    with self._lock:
      host = self.live.pop(address, None)
    if host is None:
      return
    leftovers = host.Processes()
    scratch_left = bool(scratch) and host.Exists(scratch)
    host.Stop()
    self.stopped.append(StoppedHost(host.name, address, leftovers,
                                    scratch_left))

  def StopAll(self) -> List[StoppedHost]:
    """Stops hosts whose VMs were never deleted; returns what they held."""
    left = []
    for address in list(self.live):
      host = self.live[address]
      left.append(StoppedHost(host.name, address, host.Processes(), False))
      self.Down(address)
    return left
