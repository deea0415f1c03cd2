"""A real OpenSSH server on a loopback address, for tests and benches.

`Sshd(directory).Start()` writes throwaway host and user keys and an
sshd_config into `directory`, runs `/usr/sbin/sshd -D -e -f <config>` on a
free high port of `host` (127.0.0.1 unless told; any 127.0.0.x works on
Linux) and waits until it accepts connections; `Stop()` ends it. Logins are
by key only, as the user running it (root allowed with PermitRootLogin
prohibit-password); no PAM, and nothing outside `directory` is read or
changed except creating sshd's privilege-separation directory /run/sshd
when it is missing (as root).

Used by tests/sshd_fixture.py (the `sshd` pytest fixture) and by
scripts/bench_probe_overhead.py, which needs its own server.
"""

import getpass
import os
import shutil
import socket
import subprocess
import time
from typing import Dict, Optional, Sequence

SSHD = '/usr/sbin/sshd'


def FreePort(host: str = '127.0.0.1') -> int:
  with socket.socket() as s:
    s.bind((host, 0))
    return s.getsockname()[1]


class Sshd:
  """One sshd process and the files it needs."""

  def __init__(self, directory: str, host: str = '127.0.0.1'):
    self.directory = directory
    self.host = host
    self.port = FreePort(host)
    self.user = getpass.getuser()
    self.user_key = os.path.join(directory, 'user_key')
    self.authorized_keys = os.path.join(directory, 'authorized_keys')
    self.log_path = os.path.join(directory, 'sshd.log')
    self._proc = None

  def _Keygen(self, path: str) -> None:
    subprocess.run(['ssh-keygen', '-q', '-t', 'ed25519', '-N', '', '-f', path],
                   check=True, capture_output=True)

  def AuthorizeKey(self, public_key: str) -> None:
    with open(self.authorized_keys, 'a') as f:
      f.write(public_key.strip() + '\n')

  def AuthorizeStubbedKey(self, directory: str, tools: Dict[str, str],
                          keyfile: Optional[str] = None,
                          path: Sequence[str] = (),
                          path_after: Sequence[str] = (),
                          env: Optional[Dict[str, str]] = None) -> str:
    """A new key whose logins see stand-in `tools` first on the PATH.

    `tools` maps a program name to its script, written (0755) into
    <directory>/stubs. The key's forced command puts that directory, then
    `path`, before the login's PATH and `path_after` after it, exports `env`
    and runs the original command with bash, so the harness's commands run
    unchanged but find the stand-ins. Returns the private key's path
    (`keyfile`, default <directory>/vm_key).
    """
    stubs = os.path.join(directory, 'stubs')
    os.makedirs(stubs, exist_ok=True)
    for name, text in tools.items():
      with open(os.path.join(stubs, name), 'w') as f:
        f.write(text)
      os.chmod(os.path.join(stubs, name), 0o755)
    exports = {'PATH': ':'.join([stubs, *path, '$PATH', *path_after]),
               **(env or {})}
    login = os.path.join(directory, 'login.sh')
    with open(login, 'w') as f:
      f.write('#!/bin/sh\n' +
              ''.join(f'{k}="{v}"\n' for k, v in exports.items()) +
              f'export {" ".join(exports)}\n'
              'exec /bin/bash -c "$SSH_ORIGINAL_COMMAND"\n')
    os.chmod(login, 0o755)
    keyfile = keyfile or os.path.join(directory, 'vm_key')
    subprocess.run(['ssh-keygen', '-q', '-t', 'ed25519', '-N', '', '-f',
                    keyfile], check=True, capture_output=True)
    with open(keyfile + '.pub') as f:
      self.AuthorizeKey(f'command="{login}" {f.read()}')
    return keyfile

  def Start(self) -> 'Sshd':
    """Starts sshd; after Stop(), the same server again (keys, port)."""
    os.makedirs(self.directory, exist_ok=True)
    host_key = os.path.join(self.directory, 'host_key')
    if not os.path.exists(host_key):
      self._Keygen(host_key)
      self._Keygen(self.user_key)
      with open(self.user_key + '.pub') as f:
        self.AuthorizeKey(f.read())
      os.chmod(self.authorized_keys, 0o600)
    config = os.path.join(self.directory, 'sshd_config')
    with open(config, 'w') as f:
      f.write('\n'.join([
          f'ListenAddress {self.host}',
          f'Port {self.port}',
          f'HostKey {host_key}',
          f'PidFile {os.path.join(self.directory, "sshd.pid")}',
          f'AuthorizedKeysFile {self.authorized_keys}',
          'PermitRootLogin prohibit-password',
          'PubkeyAuthentication yes',
          'PasswordAuthentication no',
          'KbdInteractiveAuthentication no',
          'UsePAM no',
          # The tmp directory's permissions are the test runner's business.
          'StrictModes no',
          # bash sources ~/.bashrc for ssh commands when SHLVL < 2; a test
          # machine's rc file (pyenv, conda) would add 0.3 s to every command.
          'SetEnv SHLVL=1',
          'MaxSessions 64',
          'MaxStartups 64',
          'LogLevel INFO',
      ]) + '\n')
    if os.geteuid() == 0 and not os.path.isdir('/run/sshd'):
      os.makedirs('/run/sshd', mode=0o755, exist_ok=True)
    log = open(self.log_path, 'w')
    self._proc = subprocess.Popen([SSHD, '-D', '-e', '-f', config],
                                  stdout=log, stderr=subprocess.STDOUT,
                                  stdin=subprocess.DEVNULL)
    log.close()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
      if self._proc.poll() is not None:
        raise RuntimeError(f'sshd exited: {self.Log()}')
      try:
        with socket.create_connection((self.host, self.port), timeout=0.5):
          return self
      except OSError:
        time.sleep(0.05)
    self.Stop()
    raise RuntimeError(f'sshd did not listen on {self.port}: {self.Log()}')

  def Log(self) -> str:
    try:
      with open(self.log_path) as f:
        return f.read()[-2000:]
    except OSError:
      return ''

  @property
  def pid(self) -> Optional[int]:
    """The sshd listener's PID (sessions are its children), once started."""
    return self._proc.pid if self._proc is not None else None

  def Stop(self) -> None:
    if self._proc is not None and self._proc.poll() is None:
      self._proc.terminate()
      try:
        self._proc.wait(timeout=5)
      except subprocess.TimeoutExpired:
        self._proc.kill()
        self._proc.wait()
    self._proc = None


def Available() -> bool:
  return os.path.exists(SSHD) and shutil.which('ssh') is not None


def BenchRefusal(bench: str, host: str) -> Optional[str]:
  """Why the bench script `bench` cannot run its own sshd on `host` (one
  line), or None: it logs in as root, needs openssh, and a loopback
  address."""
  if os.geteuid() != 0:
    return (f'{bench} needs root (it runs its own sshd and logs in to it as '
            f'root): sudo ./scripts/{bench}.py')
  if not Available():
    return (f'{bench} needs openssh-server and ssh (./scripts/setup.sh '
            'installs them)')
  if not host.startswith('127.'):
    return f'--host={host} is not a loopback address'
  return None
