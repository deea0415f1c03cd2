"""One pkb process per run_uri on this machine: an exclusive lock on its name.

A run's identity is its run_uri: it names the run's cloud resources, its
record and its BigQuery rows, whatever --results_dir says. So the lock is
the run_uri's, not the results directory's: two processes with the same
--run_uri, with the same or with different --results_dir, never run at once
(one would tear down what the other's record holds).

The first takes `flock` on <LOCK_ROOT>/<run_uri>.lock and keeps it until it
exits; a second is refused in one line naming the owner (pid, host, start
time, written into the file). The kernel releases a flock when its holder
dies, even by SIGKILL, so a stale file never blocks `--run_stage=teardown`
or a resumed stage. The file is never removed, so whoever opens that name
gets the one file every holder locked (no race between a holder removing
it and a taker opening it); LOCK_ROOT is the running user's own directory
(own_dirs: 0700, refused if another user made it first) in /tmp, and each
file is a line of text.
"""

import fcntl
import os
import socket
import time
from typing import Optional

from perfkitbenchmarker import errors
from perfkitbenchmarker import own_dirs

LOCK_PARENT = '/tmp'
_HELD = {}  # Lock path -> RunLock held by this process.


def LockRoot() -> str:
  """The running user's directory of run locks."""
  return os.path.join(LOCK_PARENT, f'pkb-runs-{os.geteuid()}')


class RunLock:
  """Holds the run's lock for as long as the object (and process) lives."""

  def __init__(self, run_uri: str, root: Optional[str] = None):
    self.root = root or LockRoot()
    self.path = os.path.join(self.root, f'{run_uri}.lock')
    self.run_uri = run_uri
    self._fd: Optional[int] = None

  def Acquire(self) -> 'RunLock':
    if self.path in _HELD:  # This process has it already (in-process runs).
      return _HELD[self.path]
    fd = self._Open()
    try:
      fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
      owner = os.pread(fd, 200, 0).decode(errors='replace').strip()
      os.close(fd)
      raise errors.UsageError(
          f'Run {self.run_uri} is in use by {owner or "another pkb"}; wait '
          'for it to finish or use another --run_uri.') from None
    except OSError:
      os.close(fd)
      raise
    if not self._StillNamed(fd):  # Removed by hand as we opened it.
      os.close(fd)
      raise errors.UsageError(f'The run lock {self.path} was removed as it '
                              'was taken; try again.')
    started = time.strftime('%Y-%m-%d %H:%M:%S', time.localtime())
    os.ftruncate(fd, 0)
    os.pwrite(fd, f'pid {os.getpid()} on {socket.gethostname()} since '
              f'{started}\n'.encode(), 0)
    self._fd = fd
    _HELD[self.path] = self
    return self

  def _Open(self) -> int:
    own_dirs.MakeOwnDir(self.root, os.path.dirname(self.root), advice=(
        'It holds your runs\' locks: remove it if it is yours; if another '
        'user made it, root must remove it.'))
    try:
      # O_CLOEXEC (Python's default) keeps the lock out of child processes:
      # a daemonized redis-server must not hold the run's lock after pkb.
      return os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW,
                     0o600)
    except OSError as e:
      raise errors.UsageError(
          f'Cannot create the run lock {self.path}: {e.strerror}.') from None

  def _StillNamed(self, fd: int) -> bool:
    try:
      named = os.stat(self.path, follow_symlinks=False)
    except OSError:
      return False
    mine = os.fstat(fd)
    return (named.st_dev, named.st_ino) == (mine.st_dev, mine.st_ino)

  def Release(self) -> None:
    """Drops the lock (the file stays: see the module doc)."""
    if self._fd is not None:
      try:
        os.ftruncate(self._fd, 0)  # No owner named once nobody holds it.
      except OSError:
        pass
      os.close(self._fd)  # Closing the last descriptor drops the flock.
      self._fd = None
      _HELD.pop(self.path, None)


def ReleaseAll() -> None:
  """Every lock this process holds, released."""
  for lock in list(_HELD.values()):
    lock.Release()
