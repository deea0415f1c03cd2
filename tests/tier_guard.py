"""The fast tier's rule, enforced: a test not marked `e2e` starts nothing.

The suite has two tiers (pytest markers, registered in tests/conftest.py):
the fast tier is every test without the `e2e` mark and runs in-process only,
no subprocess (so no redis-server, sshd, pkb.py or compiler) and no socket
beyond loopback (in-process fakes on 127.0.0.1, such as tests/fake_gce.py,
are fine); the `e2e` tier is everything else. A mark that could lie would
make `./scripts/test.sh --fast` a partial run that looks whole, so while a
fast-tier test sets up and runs, starting a process or reaching past
loopback raises `TierViolation`, and the test fails naming what it started
even if the code under test caught the exception.

How: the process- and socket-starting entry points of the standard library
(subprocess.Popen, os.fork/forkpty/posix_spawn/system, the fork_exec that
multiprocessing uses, socket connect/bind/sendto) are wrapped once per
session; the wrappers check `Guard.active`, which the conftest hooks set
for the set-up and call phases of an unmarked test only. A fixture's
teardown is not guarded: a session fixture is torn down in whatever test
happens to be last.

One exception, by name: the programs in `ALLOWED` (each with its reason)
start nothing else, talk to nothing and answer in well under a second, so
the fast tier may run them through subprocess (their fork_exec inside
that Popen is allowed with them).
"""

import _posixsubprocess
import ipaddress
import os
import socket
import subprocess
import threading
from typing import List, Optional


class TierViolation(BaseException):
  """A fast-tier test started a process or left loopback.

  A BaseException, so product code's `except Exception` does not turn it
  into an ordinary error message the test might accept.
  """


# Program (argv[0]'s base name) -> why the fast tier may run it.
ALLOWED = {
    'shellcheck': 'a linter: reads shell scripts, starts nothing, '
                  'no network; the issue wants it in the fast tier '
                  '(tests/shell_scripts_test.py)',
}

_LOOPBACK_NAMES = ('localhost', 'localhost.localdomain', 'ip6-localhost')


def _IsLoopback(host) -> bool:
  if isinstance(host, bytes):
    host = host.decode(errors='replace')
  if not isinstance(host, str):
    return False
  if host.lower() in _LOOPBACK_NAMES:
    return True
  try:
    return ipaddress.ip_address(host.split('%', 1)[0]).is_loopback
  except ValueError:
    return False  # A host name other than localhost, or '' (every address).


class Guard:
  """Wraps the standard library's entry points; active for fast tests."""

  def __init__(self):
    self.active = False
    self._lock = threading.Lock()
    self._violations: List[str] = []
    self._installed = False
    self._allowing = threading.local()  # Inside an ALLOWED program's Popen.

  def Take(self) -> List[str]:
    """The violations seen since the last call, cleared."""
    with self._lock:
      found, self._violations = self._violations, []
    return found

  def Started(self, what: str) -> None:
    """A process about to start by a way not wrapped here (a fork server
    of the tests): a violation in a fast-tier test."""
    if self.active:
      self._Violate(what)

  def _Violate(self, what: str) -> None:
    with self._lock:
      self._violations.append(what)
    raise TierViolation(
        f'a fast-tier test {what}; mark the test pytest.mark.e2e '
        '(tests/tier_guard.py)')

  def Install(self) -> None:
    if self._installed:
      return
    self._installed = True
    self._WrapProcesses()
    self._WrapSockets()

  def _WrapProcesses(self) -> None:
    guard = self

    def Wrap(owner, name, describe):
      original = getattr(owner, name, None)
      if original is None:
        return

      def Wrapped(*args, **kwargs):
        allowing = guard._allowing  # pylint: disable=protected-access
        problem = describe(args, kwargs)
        if problem is None:  # An ALLOWED program, its fork_exec with it.
          allowing.on = True
          try:
            return original(*args, **kwargs)
          finally:
            allowing.on = False
        if guard.active and not getattr(allowing, 'on', False):
          guard._Violate(problem)  # pylint: disable=protected-access
        return original(*args, **kwargs)

      Wrapped.__wrapped__ = original
      setattr(owner, name, Wrapped)

    def Argv(args, kwargs):
      """What the Popen starts; None for an ALLOWED program."""
      # Popen._execute_child(self, args, executable, ...).
      argv = args[1] if len(args) > 1 else kwargs.get('args')
      if isinstance(argv, (list, tuple)):
        if argv and os.path.basename(str(argv[0])) in ALLOWED:
          return None
        argv = ' '.join(str(a) for a in argv[:4])
      return f'started a subprocess ({str(argv)[:120]})'

    Wrap(subprocess.Popen, '_execute_child', Argv)
    Wrap(_posixsubprocess, 'fork_exec', lambda a, k: 'started a process '
         '(fork_exec)')
    for name in ('fork', 'forkpty', 'posix_spawn', 'posix_spawnp',
                 'system'):
      Wrap(os, name, lambda a, k, name=name: f'started a process (os.{name})')

  def _WrapSockets(self) -> None:
    guard = self

    def Check(sock, address, verb) -> Optional[str]:
      if sock.family not in (socket.AF_INET, socket.AF_INET6):
        return None  # Unix sockets stay on this machine.
      host = address[0] if isinstance(address, tuple) else address
      if _IsLoopback(host):
        return None
      return f'{verb} a socket beyond loopback ({address!r})'

    def Wrap(name, verb, min_args):
      original = getattr(socket.socket, name)

      def Wrapped(sock, *args):
        # The address is the last argument (sendto may have flags first).
        if guard.active and len(args) >= min_args:
          problem = Check(sock, args[-1], verb)
          if problem:
            guard._Violate(problem)  # pylint: disable=protected-access
        return original(sock, *args)

      Wrapped.__wrapped__ = original
      setattr(socket.socket, name, Wrapped)

    Wrap('connect', 'connected', 1)
    Wrap('connect_ex', 'connected', 1)
    Wrap('bind', 'bound', 1)
    Wrap('sendto', 'sent on', 2)


GUARD = Guard()
