"""A probe's evidence, kept in the run directory: its command lines and the
tool's raw output, so a published figure can be recomputed later
(scripts/recompute.py, `pkb-recompute RUN_DIR`).

Everything a probe's script brings back (load_generators/concurrent.py: one
bundle per probe, on every kind of VM) is written here by the pkb process
itself, so it is the same on Local, Static, GCP and AWS and needs no extra
trip to the VM; it outlives cleanup and teardown, which remove only the VMs'
scratch directories. The layout, below <run_dir>:

  raw/<vm name>/<probe name>/command.txt   one line per process: its index
                                           and command line (the password
                                           is argv_secret's placeholder)
  raw/<vm name>/<probe name>/<part>[.gz]   the tool's output: <i>.out,
                                           <i>.err, <i>.rc (exit code, start
                                           and end times), file.<name> (e.g.
                                           memtier's JSON), the CPU snapshots

A part larger than GZIP_ABOVE bytes is gzipped. A probe name used twice on
a VM (YCSB's phases, a resumed stage) gets -2, -3, ... The directories are
the run's own (run_scope: 0700, no symlink followed) and the files 0600,
made fresh (O_EXCL). The run's secrets are masked in every file (the ones
registered with vm_util and any the caller names), as in pkb.log.

Kept evidence is read back as input (a run directory is downloaded from CI
and shared): `Probe(directory, rel)` over a regular_files.Directory reads
only the parts asked for, each a regular file of the probe's own directory
(no symlink followed), bounded before and after unzipping.

Extension seam: `Keep(vm, name, command_lines, parts)` from anything that
brings a tool's output back; `Probe(directory, rel)` gives it back part by
part, gunzipped (`Read(run_dir, rel)`: all of it).
"""

import contextlib
import errno
import gzip
import logging
import os
import shutil
import threading
from typing import Callable, Dict, List, Optional, Sequence, TypeVar

from perfkitbenchmarker import errors
from perfkitbenchmarker import measurement
from perfkitbenchmarker import regular_files
from perfkitbenchmarker import run_scope
from perfkitbenchmarker import vm_util

RAW_DIR = 'raw'
COMMAND_FILE = 'command.txt'
# What a recomputation needs to know of the probe (the load generator, the
# load, which part is which process), JSON.
MANIFEST = 'probe.json'
GZIP_ABOVE = 64 * 1024
# The most a part read back may hold, zipped and unzipped: a probe's
# largest part (memtier's JSON of a long run, per-second series and
# percentiles) is a few MB; a bomb or /dev/zero stops here.
MAX_PART_BYTES = 32 << 20
# Metadata key of a measurement naming its evidence (relative to the run
# directory; several, comma-separated, when client VMs' probes combine).
METADATA_KEY = measurement.RAW_OUTPUT_KEY
_T = TypeVar('_T')


def RunDir(vm) -> Optional[str]:
  """The run directory of the run `vm` belongs to (None: not in a run)."""
  record = getattr(vm, 'record', None)
  return getattr(record, 'run_dir', None)


def _Masked(text: str, secrets: Sequence[str]) -> str:
  for secret in secrets:
    if secret:
      text = text.replace(secret, vm_util.MASK)
  return vm_util.Mask(text)


def _SafeName(name: str) -> str:
  return ''.join(c if c.isalnum() or c in '.-_' else '_' for c in name)


# Run directory -> the one line saying its raw output could not be kept
# (the first failure).
_FAILURES: Dict[str, str] = {}
# Run directory -> the probes' raw output removed to make room for what
# matters more (WithRoom), and the error that asked for it.
_GIVEN: Dict[str, List[str]] = {}
_GIVEN_FOR: Dict[str, str] = {}
# Runs nothing more is kept for (either of the above).
_STOPPED = set()
# Keep's writes and WithRoom's removals, one at a time (probes end on
# threads of their own).
_LOCK = threading.Lock()


def Failure(run_dir: str) -> Optional[str]:
  """The one line saying a probe's raw output could not be kept in
  run_dir, or was removed again, if so (the driver prints it at the run's
  end)."""
  failed, given = _FAILURES.get(run_dir), _GIVEN.get(run_dir)
  if not given:
    return failed
  removed = (f'the raw output of {len(given)} earlier '
             f'probe{"s" if len(given) > 1 else ""} was removed to make room '
             'for the samples and the run record')
  if failed:
    return f'{failed}; {removed}, so it cannot recheck theirs either'
  return (f'no room left in {run_dir} ({_GIVEN_FOR[run_dir]}): {removed}, '
          'and no probe after has its raw output kept, so pkb-recompute '
          'cannot recheck their figures')


def WithRoom(run_dir: str, path: str, write: Callable[[], _T]) -> _T:
  """write() of the file `path` (a sample, the run record), given room on a
  full disk.

  A finished result matters more than the raw output kept beside it: while
  the disk holding run_dir, and `path`, has no room for the write
  (errors.NoRoom), the run's oldest kept probe output is removed and the
  write made again; it fails as it did once none is left. From the first
  removal on, no probe's raw output is kept (it would take the room back);
  Failure says how many were removed.
  """
  while True:
    try:
      return write()
    except (OSError, errors.Error) as e:
      if not (errors.NoRoom(e) and _SameDisk(run_dir, path) and
              _GiveRoom(run_dir, e)):
        raise


def _SameDisk(run_dir: str, path: str) -> bool:
  """Whether removing files in run_dir can give `path` room."""
  try:
    return (os.stat(run_dir).st_dev ==
            os.stat(os.path.dirname(os.path.abspath(path))).st_dev)
  except OSError:
    return False


def _GiveRoom(run_dir: str, error: BaseException) -> bool:
  """Removes the run's oldest kept probe output; False if none is left (or
  it could not be removed)."""
  with _LOCK:
    kept = _KeptProbes(run_dir)
    if not kept:
      return False
    rel = kept[0]
    shutil.rmtree(os.path.join(run_dir, rel), ignore_errors=True)
    if os.path.lexists(os.path.join(run_dir, rel)):
      return False
    why = getattr(error, 'strerror', None) or str(error)
    _GIVEN.setdefault(run_dir, []).append(rel)
    _GIVEN_FOR.setdefault(run_dir, why)
    _STOPPED.add(run_dir)
    logging.debug('removed %s/%s to make room (%s)', run_dir, rel, error)
    return True


def _KeptProbes(run_dir: str) -> List[str]:
  """The probe directories under run_dir/raw/<vm>/ (relative to run_dir),
  oldest first; symlinks and files there are no probe's."""
  found = []
  try:
    vms = list(os.scandir(os.path.join(run_dir, RAW_DIR)))
  except OSError:
    return []
  for vm in vms:
    if not vm.is_dir(follow_symlinks=False):
      continue
    try:
      probes = list(os.scandir(vm.path))
    except OSError:
      continue
    for probe in probes:
      if probe.is_dir(follow_symlinks=False):
        with contextlib.suppress(OSError):
          found.append((probe.stat(follow_symlinks=False).st_mtime_ns,
                        os.path.join(RAW_DIR, vm.name, probe.name)))
  return [rel for _, rel in sorted(found)]


def Keep(vm, name: str, command_lines: Sequence[str],
         parts: Dict[str, str], secrets: Sequence[str] = ()
         ) -> Optional[str]:
  """Writes one probe's evidence; returns its directory relative to the
  run directory, or None when `vm` is in no run (tests' bare VMs) or the
  evidence could not be kept.

  Evidence is the run's diary for rechecking, not its result: a full disk
  or another write failure stops keeping it (what was half written of that
  probe is removed, giving its space back to the samples) and is one line
  at the run's end (`Failure`); the run goes on. The command lines also go
  to pkb.log (debug).
  """
  masked = [_Masked(line, secrets) for line in command_lines]
  for i, line in enumerate(masked):
    logging.debug('[%s] %s.%d: %s', vm.name, name, i, line)
  run_dir = RunDir(vm)
  if not run_dir or run_dir in _STOPPED:
    return None
  files = {COMMAND_FILE: ''.join(f'{i}\t{line}\n'
                                 for i, line in enumerate(masked)).encode()}
  for key, text in parts.items():
    data = _Masked(text, secrets).encode()
    if len(data) > GZIP_ABOVE:
      files[f'{_SafeName(key)}.gz'] = gzip.compress(data, 6, mtime=0)
    else:
      files[_SafeName(key)] = data
  with _LOCK:
    if run_dir in _STOPPED:  # Stopped meanwhile (WithRoom).
      return None
    return _Write(vm, run_dir, name, files)


def _Write(vm, run_dir: str, name: str,
           files: Dict[str, bytes]) -> Optional[str]:
  parent = os.path.join(RAW_DIR, _SafeName(vm.name))
  made = None
  try:
    run_scope.MakeOwnDir(os.path.join(run_dir, parent), run_dir)
    made = _NewProbeDir(run_dir, parent, _SafeName(name))
    fd = os.open(os.path.join(run_dir, made), os.O_RDONLY | os.O_DIRECTORY |
                 os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
      for file_name, data in files.items():
        with os.fdopen(os.open(
            file_name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW |
            os.O_CLOEXEC, 0o600, dir_fd=fd), 'wb') as f:
          f.write(data)
    finally:
      os.close(fd)
  except (OSError, run_scope.NotOwnDir) as e:
    why = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
    where = os.path.join(run_dir, made or parent)
    _STOPPED.add(run_dir)
    _FAILURES[run_dir] = (
        f'could not keep the raw output of {vm.name}\'s {name} in {where} '
        f'({why}); no probe after it has its raw output kept, so '
        'pkb-recompute cannot recheck their figures')
    logging.debug('%s', _FAILURES[run_dir])
    if made:  # What cannot be removed stays (rmtree follows no symlink).
      shutil.rmtree(os.path.join(run_dir, made), ignore_errors=True)
    return None
  return made


def _NewProbeDir(run_dir: str, parent: str, base: str) -> str:
  """A fresh directory for one probe's evidence (relative to run_dir):
  <base>, else <base>-2, -3, ... (a name used again)."""
  for n in range(1, 10000):
    rel = os.path.join(parent, base if n == 1 else f'{base}-{n}')
    try:
      os.mkdir(os.path.join(run_dir, rel), run_scope.MODE)
    except FileExistsError:
      continue
    run_scope.MakeOwnDir(os.path.join(run_dir, rel), run_dir)
    return rel
  raise FileExistsError(errno.EEXIST, f'{run_dir}/{parent}/{base}: too many')


class Missing(Exception):
  """Evidence a sample names is not in the run directory (the path, relative
  to the run directory): a difference, never agreement."""


class Probe:
  """One probe's kept parts in a run directory, read when asked for.

  Raises regular_files.NotRegular for a part that is there but cannot be
  read as one (a symlink, a FIFO, too large, a broken gzip), naming it.
  """

  def __init__(self, directory: regular_files.Directory, rel: str):
    self.directory, self.rel = directory, rel
    kind = directory.Kind(rel)
    if kind is None:
      raise Missing(rel)
    if kind != 'directory':
      raise regular_files.NotRegular(
          f'{directory.path}/{rel}: not a directory of raw files ({kind})')

  def _Path(self, key: str) -> str:
    if not key or _SafeName(key) != key or key.startswith('.'):
      raise regular_files.NotRegular(
          f'{self.directory.path}/{self.rel}: {key!r} is not the name of a '
          'raw file')
    return f'{self.rel}/{key}'

  def _Found(self, key: str) -> Optional[str]:
    path = self._Path(key)
    found = [p for p in (path, path + '.gz') if self.directory.Kind(p)]
    if len(found) > 1:
      raise regular_files.NotRegular(
          f'{self.directory.path}/{path}: kept both plain and gzipped')
    return found[0] if found else None

  def Has(self, key: str) -> bool:
    return self._Found(key) is not None

  def Text(self, key: str) -> str:
    """The part `key` (e.g. out.0), gunzipped; Missing if it is not there."""
    path = self._Found(key)
    if path is None:
      raise Missing(self._Path(key))
    return self.directory.ReadUnzipped(path, MAX_PART_BYTES).decode(
        errors='replace')

  def Keys(self) -> List[str]:
    return sorted({n[:-3] if n.endswith('.gz') else n
                   for n in self.directory.Names(self.rel)})


def Read(run_dir: str, rel: str) -> Dict[str, str]:
  """All the parts one Keep wrote (command.txt included), by key."""
  with regular_files.Directory(run_dir) as directory:
    probe = Probe(directory, rel)
    return {key: probe.Text(key) for key in probe.Keys()}


def FileKey(path: str) -> str:
  """The part key Keep's callers give a file the tool wrote (`path`)."""
  return 'file.' + os.path.basename(path)
