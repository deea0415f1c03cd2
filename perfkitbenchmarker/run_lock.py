"""One pkb process per run_uri: an exclusive lock on the run directory.

Two processes with the same --run_uri would share the record, the scratch
directories and the results files. The first takes `flock` on
<run dir>/run.lock and keeps it until it exits; a second is refused in one
line naming the owner (pid, host, start time, written into the file). The
kernel releases a flock when its holder dies, even by SIGKILL, so a stale
lock file never blocks `--run_stage=teardown` or a resumed stage. A run that
ends removes its lock file while still holding it (`ReleaseAll`); a taker
that locked a file removed under it sees the path no longer names its file
and tries again, so two processes never both hold the run.
"""

import fcntl
import os
import socket
import time
from typing import Optional

from perfkitbenchmarker import errors
from perfkitbenchmarker import own_dirs

LOCK_FILE = 'run.lock'
_HELD = {}  # Lock path -> RunLock held by this process.


class RunLock:
  """Holds the run's lock for as long as the object (and process) lives."""

  def __init__(self, run_dir: str, run_uri: str):
    self.path = os.path.join(run_dir, LOCK_FILE)
    self.run_uri = run_uri
    self._fd: Optional[int] = None

  def Acquire(self) -> 'RunLock':
    if self.path in _HELD:  # This process has it already (in-process runs).
      return _HELD[self.path]
    for _ in range(10):
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
      if self._StillNamed(fd):
        break
      os.close(fd)  # Its holder removed it as we opened it: take the new one.
    else:
      raise errors.UsageError(f'Cannot take the run lock {self.path}: it is '
                              'removed and made again; try again.')
    started = time.strftime('%Y-%m-%d %H:%M:%S', time.localtime())
    os.ftruncate(fd, 0)
    os.pwrite(fd, f'pid {os.getpid()} on {socket.gethostname()} since '
              f'{started}\n'.encode(), 0)
    self._fd = fd
    _HELD[self.path] = self
    return self

  def _Open(self) -> int:
    try:
      own_dirs.MakeOwnDir(os.path.dirname(self.path))
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
    """Removes the lock file (still holding it), then drops the lock."""
    if self._fd is not None:
      if self._StillNamed(self._fd):
        try:
          os.unlink(self.path)
        except OSError:
          pass  # A read-only or vanished directory: the flock still goes.
      os.close(self._fd)  # Closing the last descriptor drops the flock.
      self._fd = None
      _HELD.pop(self.path, None)


def ReleaseAll() -> None:
  """Every lock this process holds, released and its file removed."""
  for lock in list(_HELD.values()):
    lock.Release()
