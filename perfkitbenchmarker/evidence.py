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

import errno
import gzip
import logging
import os
import shutil
from typing import Dict, List, Optional, Sequence

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
# (the first failure); nothing more is kept for that run.
_FAILURES: Dict[str, str] = {}


def Failure(run_dir: str) -> Optional[str]:
  """The one line saying a probe's raw output could not be kept in
  run_dir, if one could not (the driver prints it at the run's end)."""
  return _FAILURES.get(run_dir)


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
  if not run_dir or run_dir in _FAILURES:
    return None
  files = {COMMAND_FILE: ''.join(f'{i}\t{line}\n'
                                 for i, line in enumerate(masked)).encode()}
  for key, text in parts.items():
    data = _Masked(text, secrets).encode()
    if len(data) > GZIP_ABOVE:
      files[f'{_SafeName(key)}.gz'] = gzip.compress(data, 6, mtime=0)
    else:
      files[_SafeName(key)] = data
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
