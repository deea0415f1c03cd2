"""Opening a file the tool reads as input: regular files only, bounded.

A path read as input (the price catalog, a results file or run record that
compare reads) may name a FIFO, a device or a symlink to one: opening a FIFO
blocks until someone writes to it (forever), /dev/zero never ends, /dev/tty
waits for a key. `OpenRegular` opens without blocking, refuses anything but a
regular file, and with `max_bytes` a file larger than that, so every read of
such a path ends, and soon. Each caller turns `NotRegular` into its own
one-line error (it says why, the caller says which file and what to do).

A directory someone else made (a run directory downloaded from CI, a
history of them) is read through `Directory`: a path inside it is opened
one component at a time below the directory's own descriptor, never
following a symlink and never leaving it (no `..`, no absolute path), so
what it names is the directory's own file, whatever the text of the path
(a `raw_output` of `../../etc/shadow`, a symlink to /dev/zero). A file
with more than one name (a hard link) is read only when it belongs to the
directory's owner: its other name may be outside the directory, and a link
someone made there to another user's file (root's /etc/shadow, where the
kernel lets links be made to files one cannot read) would be read with
the reader's rights. Gzipped
parts are unzipped in bounded steps (`ReadUnzipped`): a bomb stops at the
bound, and Ctrl-C is honoured between steps.
"""

import errno
import os
import stat
import zlib
from typing import BinaryIO, List, Optional

from perfkitbenchmarker import trusted_programs

# What each step of unzipping may read and make: small enough that Ctrl-C
# (raised between Python steps) is seen within milliseconds.
_STEP_BYTES = 1 << 20


class NotRegular(Exception):
  """Why a path cannot be read as an input file (no path, one phrase;
  `Directory`'s start with the path of the file, the directory's first)."""


def _Checked(fd: int, max_bytes: Optional[int]) -> BinaryIO:
  """fd (opened O_NONBLOCK) as a blocking binary file, if it is a regular
  file within the bound; closed otherwise."""
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
  except ValueError:  # A NUL byte (a config's "\0"): no file has that name.
    raise NotRegular('no such file (the path holds a NUL byte)') from None
  return _Checked(fd, max_bytes)


def _ReadBounded(f: BinaryIO, max_bytes: int) -> bytes:
  """All of an open file, refused past `max_bytes` (it may grow while
  read)."""
  try:
    data = f.read(max_bytes + 1)
  except OSError as e:
    raise NotRegular(e.strerror or str(e)) from None
  if len(data) > max_bytes:
    raise NotRegular(f'more than the {max_bytes:,} bytes such a file may '
                     'have')
  return data


def ReadRegular(path: str, max_bytes: int) -> bytes:
  """All of a regular file of at most `max_bytes` (NotRegular otherwise;
  a file that grows past the bound while read is refused too)."""
  with OpenRegular(path, max_bytes) as f:
    return _ReadBounded(f, max_bytes)


class NotText(ValueError):
  """Bytes that are not UTF-8 text: 'not UTF-8 text (byte 0xe9 at offset
  3)', for the caller's one line."""


def Utf8Text(data: bytes) -> str:
  """`data` decoded as UTF-8; NotText saying where it is not."""
  try:
    return data.decode('utf-8')
  except UnicodeDecodeError as e:
    raise NotText(f'not UTF-8 text (byte 0x{data[e.start]:02x} at offset '
                  f'{e.start})') from None


def Gunzip(f: BinaryIO, max_bytes: int) -> bytes:
  """The gzip stream (one member or several) read from `f`, unzipped to at
  most `max_bytes`; NotRegular for more, for a truncated stream or for
  anything not gzip."""
  out = bytearray()
  unzip = zlib.decompressobj(zlib.MAX_WBITS | 16)
  pending = b''
  try:
    while True:
      if not pending:
        pending = f.read(_STEP_BYTES)
        if not pending:
          break
      if unzip.eof:  # The next member (gzip allows several).
        unzip = zlib.decompressobj(zlib.MAX_WBITS | 16)
      out += unzip.decompress(
          pending, min(_STEP_BYTES, max_bytes + 1 - len(out)))
      if len(out) > max_bytes:
        raise NotRegular(f'unzips to more than the {max_bytes:,} bytes such '
                         'a file may have')
      pending = unzip.unconsumed_tail
      if unzip.eof:
        pending = unzip.unused_data + pending
  except zlib.error as e:
    raise NotRegular(f'not gzip data ({e})') from None
  except OSError as e:
    raise NotRegular(e.strerror or str(e)) from None
  if not unzip.eof:  # Nothing read, or the last member's end not reached.
    raise NotRegular('a truncated gzip file (it ends inside its data)')
  return bytes(out)


class Directory:
  """A directory read as input: its own regular files only, bounded.

  Every path given is relative to the directory, of plain components (no
  `..`, `.`, empty or absolute part); each component is opened below the
  one before it with O_NOFOLLOW, so a symlink anywhere on the way is
  refused, not followed. NotRegular names the file (directory/path).
  """

  def __init__(self, path: str):
    self.path = path
    try:
      self._fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as e:
      raise NotRegular(f'{path}: {e.strerror or e}') from None
    self._owner = os.fstat(self._fd).st_uid

  def close(self) -> None:
    if self._fd >= 0:
      os.close(self._fd)
      self._fd = -1

  def __enter__(self) -> 'Directory':
    return self

  def __exit__(self, *unused) -> None:
    self.close()

  def _Shown(self, rel: str) -> str:
    return os.path.join(self.path, rel)

  def _Parts(self, rel: str) -> List[str]:
    parts = rel.split('/')
    if (not rel or '\0' in rel or
        any(p in ('', '.', '..') for p in parts)):
      raise NotRegular(f'{self.path}: {rel!r} is not a path inside it')
    return parts

  def _Open(self, parts: List[str], flags: int) -> int:
    """The last of `parts` opened with `flags`, every component below the
    one before it and none followed if a symlink."""
    fd = self._fd
    try:
      for i, part in enumerate(parts):
        last = i == len(parts) - 1
        try:
          opened = os.open(part, (flags if last else os.O_RDONLY |
                                  os.O_DIRECTORY) | os.O_NOFOLLOW |
                           os.O_CLOEXEC, dir_fd=fd)
        except OSError as e:
          raise NotRegular(f'{self._Shown("/".join(parts[:i + 1]))}: '
                           f'{self._Why(fd, part, e)}') from None
        if fd != self._fd:
          os.close(fd)
        fd = opened
      return fd
    except BaseException:
      if fd != self._fd:
        os.close(fd)
      raise

  @staticmethod
  def _Why(dir_fd: int, name: str, error: OSError) -> str:
    if error.errno in (errno.ELOOP, errno.ENOTDIR):
      try:
        mode = os.lstat(name, dir_fd=dir_fd).st_mode
      except OSError:
        mode = 0
      if stat.S_ISLNK(mode):
        return 'a symbolic link (never followed in a directory read as input)'
      if mode:
        return f'not a directory ({_Kind(mode)})'
    return error.strerror or str(error)

  def Kind(self, rel: str) -> Optional[str]:
    """'file', 'directory', 'symbolic link' (never followed) or 'other' for
    what `rel` names; None when nothing is there."""
    parts = self._Parts(rel)
    try:  # The directory itself for a name in it (_Open of no parts).
      fd = self._Open(parts[:-1], os.O_RDONLY | os.O_DIRECTORY)
    except NotRegular:
      if self.Kind('/'.join(parts[:-1])) is None:
        return None
      raise
    try:
      mode = os.lstat(parts[-1], dir_fd=fd).st_mode
    except FileNotFoundError:
      return None
    except OSError as e:
      raise NotRegular(f'{self._Shown(rel)}: {e.strerror or e}') from None
    finally:
      if fd != self._fd:
        os.close(fd)
    for test, kind in ((stat.S_ISREG, 'file'), (stat.S_ISDIR, 'directory'),
                       (stat.S_ISLNK, 'symbolic link')):
      if test(mode):
        return kind
    return 'other'

  def Open(self, rel: str, max_bytes: Optional[int] = None) -> BinaryIO:
    """The regular file at `rel` inside the directory, for reading."""
    # O_NONBLOCK: a FIFO never blocks the open.
    fd = self._Open(self._Parts(rel), os.O_RDONLY | os.O_NONBLOCK)
    try:
      self._CheckLinks(fd)
      return _Checked(fd, max_bytes)
    except NotRegular as e:
      raise NotRegular(f'{self._Shown(rel)}: {e}') from None

  def _CheckLinks(self, fd: int) -> None:
    """A hard link is read only if it is the directory owner's (module
    doc); `fd` is closed when it is not."""
    st = os.fstat(fd)
    if stat.S_ISREG(st.st_mode) and st.st_nlink > 1 and (
        st.st_uid != self._owner):
      os.close(fd)
      file_owner = trusted_programs.UserName(st.st_uid)
      owner = trusted_programs.UserName(self._owner)
      raise NotRegular(
          f'a hard link ({st.st_nlink} names) to a file of {file_owner}, '
          f'not of the directory\'s owner ({owner}): its other name may be '
          'outside the directory, so it is never read')

  def Read(self, rel: str, max_bytes: int) -> bytes:
    """All of the regular file at `rel`, at most `max_bytes`."""
    return self._ReadWith(_ReadBounded, rel, max_bytes)

  def ReadUnzipped(self, rel: str, max_bytes: int) -> bytes:
    """`Read`, unzipped when `rel` ends in .gz (compressed and unzipped,
    at most `max_bytes` each)."""
    return self._ReadWith(Gunzip if rel.endswith('.gz') else _ReadBounded,
                          rel, max_bytes)

  def _ReadWith(self, read, rel: str, max_bytes: int) -> bytes:
    with self.Open(rel, max_bytes) as f:
      try:
        return read(f, max_bytes)
      except NotRegular as e:
        raise NotRegular(f'{self._Shown(rel)}: {e}') from None

  def Names(self, rel: str) -> List[str]:
    """The names in the directory at `rel` (no symlink followed)."""
    fd = self._Open(self._Parts(rel), os.O_RDONLY | os.O_DIRECTORY)
    try:
      return sorted(os.listdir(fd))
    except OSError as e:
      raise NotRegular(f'{self._Shown(rel)}: {e.strerror or e}') from None
    finally:
      os.close(fd)


def _Kind(mode: int) -> str:
  for test, name in ((stat.S_ISFIFO, 'a FIFO'), (stat.S_ISCHR, 'a device'),
                     (stat.S_ISBLK, 'a device'), (stat.S_ISDIR, 'a directory'),
                     (stat.S_ISSOCK, 'a socket'),
                     (stat.S_ISLNK, 'a symbolic link')):
    if test(mode):
      return name
  return 'not a plain file'
