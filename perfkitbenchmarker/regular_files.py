"""Opening a file the tool reads as input: regular files only, bounded.

A path read as input (the price catalog, a results file or run record that
compare reads) may name a FIFO, a device or a symlink to one: opening a FIFO
blocks until someone writes to it (forever), /dev/zero never ends, /dev/tty
waits for a key. `OpenRegular` opens without blocking, refuses anything but a
regular file, and with `max_bytes` a file larger than that, so every read of
such a path ends, and soon. Each caller turns `NotRegular` into its own
one-line error (it says why, the caller says which file and what to do).
"""

import os
import stat
from typing import BinaryIO, Optional


class NotRegular(Exception):
  """Why a path cannot be read as an input file (no path, one phrase)."""


def OpenRegular(path: str, max_bytes: Optional[int] = None) -> BinaryIO:
  """The file at `path` opened for binary reading.

  Raises:
    NotRegular: it is missing or unreadable, not a regular file, or larger
      than `max_bytes`.
  """
  try:
    # O_NONBLOCK: opening a FIFO for reading would wait for a writer.
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
  except OSError as e:
    raise NotRegular(e.strerror or str(e)) from None
  try:
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
      raise NotRegular(f'not a regular file ({_Kind(st.st_mode)})')
    if max_bytes is not None and st.st_size > max_bytes:
      raise NotRegular(f'{st.st_size:,} bytes, more than the '
                       f'{max_bytes:,} such a file may have')
    os.set_blocking(fd, True)
    return os.fdopen(fd, 'rb')
  except BaseException:
    os.close(fd)
    raise


def ReadRegular(path: str, max_bytes: int) -> bytes:
  """All of a regular file of at most `max_bytes` (NotRegular otherwise;
  a file that grows past the bound while read is refused too)."""
  try:
    with OpenRegular(path, max_bytes) as f:
      data = f.read(max_bytes + 1)
  except OSError as e:
    raise NotRegular(e.strerror or str(e)) from None
  if len(data) > max_bytes:
    raise NotRegular(f'more than the {max_bytes:,} bytes such a file may '
                     'have')
  return data


def _Kind(mode: int) -> str:
  for test, name in ((stat.S_ISFIFO, 'a FIFO'), (stat.S_ISCHR, 'a device'),
                     (stat.S_ISBLK, 'a device'), (stat.S_ISDIR, 'a directory'),
                     (stat.S_ISSOCK, 'a socket')):
    if test(mode):
      return name
  return 'not a plain file'
