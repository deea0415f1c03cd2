"""A real OpenSSH server on 127.0.0.1 for tests of SSH-driven VMs.

`Sshd(directory).Start()` writes throwaway host and user keys and an
sshd_config into `directory`, runs `/usr/sbin/sshd -D -e -f <config>` on a
free high port of 127.0.0.1 and waits until it accepts connections; `Stop()`
ends it. Logins are by key only, as the user running the tests (root in CI,
allowed with PermitRootLogin prohibit-password); no PAM, and nothing outside
`directory` is read or changed except creating sshd's privilege-separation
directory /run/sshd when it is missing. The `sshd` pytest fixture gives each
test module one server.
"""

import getpass
import os
import shutil
import socket
import subprocess
import time

import pytest

import e2e_support

SSHD = '/usr/sbin/sshd'


def FreePort() -> int:
  with socket.socket() as s:
    s.bind(('127.0.0.1', 0))
    return s.getsockname()[1]


class Sshd:
  """One sshd process and the files it needs."""

  def __init__(self, directory: str):
    self.directory = directory
    self.port = FreePort()
    self.user = getpass.getuser()
    self.host = '127.0.0.1'
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

  def Start(self) -> 'Sshd':
    os.makedirs(self.directory, exist_ok=True)
    host_key = os.path.join(self.directory, 'host_key')
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


@pytest.fixture(scope='module')
def sshd(tmp_path_factory):
  if not Available():
    e2e_support.Unavailable('openssh-server (/usr/sbin/sshd) and ssh',
                            'scripts/setup.sh')
  server = Sshd(str(tmp_path_factory.mktemp('sshd'))).Start()
  yield server
  server.Stop()
