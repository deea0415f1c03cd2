"""One pkb process per run_uri: an exclusive lock on the run directory.

Two processes with the same --run_uri would share the record, the scratch
directories and the results files. The first takes `flock` on
<run dir>/run.lock and keeps it until it exits; a second is refused in one
line naming the owner (pid, host, start time, written into the file). The
kernel releases a flock when its holder dies, even by SIGKILL, so a stale
lock file never blocks `--run_stage=teardown` or a resumed stage.
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
    try:
      own_dirs.MakeOwnDir(os.path.dirname(self.path))
      # O_CLOEXEC (Python's default) keeps the lock out of child processes:
      # a daemonized redis-server must not hold the run's lock after pkb.
      fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    except OSError as e:
      raise errors.UsageError(
          f'Cannot create the run lock {self.path}: {e.strerror}.') from None
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
    started = time.strftime('%Y-%m-%d %H:%M:%S', time.localtime())
    os.ftruncate(fd, 0)
    os.pwrite(fd, f'pid {os.getpid()} on {socket.gethostname()} since '
              f'{started}\n'.encode(), 0)
    self._fd = fd
    _HELD[self.path] = self
    return self

  def Release(self) -> None:
    if self._fd is not None:
      os.close(self._fd)  # Closing the last descriptor drops the flock.
      self._fd = None
      _HELD.pop(self.path, None)
