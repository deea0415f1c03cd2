"""A results file on disk: whose it is, one writer at a time, whole writes.

--json_path and --csv_path may be shared by runs (a matrix's cells, a
nightly job and a by-hand run), so every change is made under an exclusive
`flock` (`Locked`) from what the file holds then. A change that replaces
the file (the CSV header growing) swaps inodes while the old one is locked;
a writer waiting on the old inode takes the new one when it gets the lock.
"""

import contextlib
import fcntl
import os
import stat
import tempfile
from typing import Iterator

from perfkitbenchmarker import errors


def WriteFailed(path: str, error: OSError) -> errors.ResultsFileError:
  """The one-line error for a results file that could not be written."""
  message = (f'could not write the results file {path}: '
             f'{error.strerror or error}; the samples written before are kept '
             'there.')
  if errors.NoRoom(error):
    return errors.NoRoomError(message, error.strerror or str(error))
  return errors.ResultsFileError(message)


def CheckOwnFile(path: str) -> int:
  """Refuses a results file (or symlink) another user put there, e.g. in
  /tmp for a root run to write through; returns open() flags (O_NOFOLLOW
  where there is no file yet, against a symlink made meanwhile). Makes the
  file's directory."""
  try:
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    st = os.lstat(path)
  except FileNotFoundError:
    return os.O_NOFOLLOW
  except OSError as e:
    raise WriteFailed(path, e) from None
  if st.st_uid not in (os.geteuid(), 0):
    kind = 'a symlink' if stat.S_ISLNK(st.st_mode) else 'a file'
    raise errors.UsageError(
        f'the results file {path} is {kind} of uid {st.st_uid}, not this '
        'user\'s; left alone. Give another --json_path/--csv_path.')
  if not stat.S_ISLNK(st.st_mode) and not stat.S_ISREG(st.st_mode):
    raise errors.UsageError(
        f'the results file {path} is not a regular file; give another '
        '--json_path/--csv_path.')
  return 0 if stat.S_ISLNK(st.st_mode) else os.O_NOFOLLOW


@contextlib.contextmanager
def Locked(path: str, nofollow: int) -> Iterator[int]:
  """An fd of the file now at `path` (made if missing), held exclusively;
  ResultsFileError when it cannot be opened or locked."""
  while True:
    try:
      # O_NONBLOCK: a FIFO put there meanwhile never blocks the open.
      fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NONBLOCK | nofollow,
                   0o644)
    except OSError as e:
      raise WriteFailed(path, e) from None
    try:
      st = os.fstat(fd)
      if not stat.S_ISREG(st.st_mode):
        raise errors.UsageError(
            f'the results file {path} is not a regular file; give another '
            '--json_path/--csv_path.')
      os.set_blocking(fd, True)
      fcntl.flock(fd, fcntl.LOCK_EX)
      try:
        now = os.stat(path)
      except FileNotFoundError:
        now = None
      if now is not None and (now.st_dev, now.st_ino) == (st.st_dev,
                                                          st.st_ino):
        yield fd
        return
    except OSError as e:
      raise WriteFailed(path, e) from None
    finally:
      os.close(fd)  # Also releases the lock.
    # Replaced (or removed) while we waited for the lock: take the new one.


def _WriteAll(fd: int, data: bytes) -> None:
  written = 0
  while written < len(data):
    written += os.write(fd, data[written:])
  os.fsync(fd)


def AppendWhole(fd: int, path: str, data: bytes) -> None:
  """Appends all of `data` and syncs; on failure the file is cut back to
  where it ended, so no half row or half line is ever left."""
  end = os.lseek(fd, 0, os.SEEK_END)
  try:
    _WriteAll(fd, data)
  except OSError as e:
    try:
      os.ftruncate(fd, end)
    except OSError:
      pass
    raise WriteFailed(path, e) from None


def ReadAll(fd: int, first_line: bool = False, limit: int = -1) -> bytes:
  """The whole content of a locked results file, or its first line (at
  most `limit` bytes of it)."""
  os.lseek(fd, 0, os.SEEK_SET)
  with open(os.dup(fd), 'rb') as f:  # Closing a dup keeps the flock.
    return f.readline(limit) if first_line else f.read()


def Replace(locked_fd: int, path: str, data: bytes) -> None:
  """Puts `data` at `path` atomically (the caller holds the old file's
  lock, `locked_fd`): written under a fresh name (a fixed one could be
  another user's symlink), synced, then renamed over the old file, with the
  old file's mode (one the user or their umask made 0600 stays so). Through
  the user's own symlink (CheckOwnFile), the file it names is replaced,
  where the rows before went: renamed over the link itself, the rows parted
  from it."""
  tmp = None
  path = os.path.realpath(path)
  try:
    mode = os.fstat(locked_fd).st_mode & 0o777
    fd, tmp = tempfile.mkstemp(
        dir=os.path.dirname(path),
        prefix=os.path.basename(path) + '.', suffix='.tmp')
    try:
      os.fchmod(fd, mode)
      _WriteAll(fd, data)
    finally:
      os.close(fd)
    os.replace(tmp, path)
  except OSError as e:
    try:  # The previous complete file stays; the partial copy goes.
      if tmp:
        os.remove(tmp)
    except OSError:
      pass
    raise WriteFailed(path, e) from None


class Publisher:
  """A publisher appending to the results file `path` (--json_path,
  --csv_path): refuses another user's file at once, and a file already
  there that `_CheckExisting(fd)` (under the lock) says this tool cannot
  add to."""

  def __init__(self, path: str):
    self.path = path
    self._nofollow = CheckOwnFile(path)
    if os.path.lexists(path):  # Refuse a file this tool cannot add to now.
      with Locked(path, self._nofollow) as fd:
        self._CheckExisting(fd)

  def Close(self) -> None:
    pass
