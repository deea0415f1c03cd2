"""The run record: what a run created, on disk, before it is used.

results/runs/<run_uri>/run_record.json is rewritten atomically whenever the
run creates or deletes something, so that a crashed run can be torn down later
from the record alone (`./pkb.py --run_stage=teardown --run_uri=X`).

When the disk fills up (or hits a quota, or turns read-only) the record in
memory still drives cleanup. A write teardown would need from disk (a new
resource, facts such as a PID) raises `RecordNotSaved`, so the run stops
before it creates anything the file does not hold; writes that only retire
things (a resource deleted, a stage done, the final status) never raise, and
`WriteProblem` tells the driver what the file on disk is missing. The file is
padded with spaces (JSON allows them) to leave spare room in the blocks it
already has, so that once nothing of the run is left, its final state can be
written in place on a disk with no free block.

Extension seam: a resource is any dict with `kind`, `name` and the data its
provider needs to delete it; providers register a deleter per kind
(see resource.py). Secrets never go into the record.
"""

import contextlib
import json
import os
import threading
import time
import uuid
from typing import Annotated, Any, Dict, Iterator, List, Optional

import pydantic

from perfkitbenchmarker import errors
from perfkitbenchmarker import evidence
from perfkitbenchmarker import json_input
from perfkitbenchmarker import record_checks
from perfkitbenchmarker import regular_files
from perfkitbenchmarker import run_scope
from perfkitbenchmarker import run_signals

FORMAT_VERSION = 1
RECORD_FILE = 'run_record.json'
# Most bytes a record read back may have (as results_history's loader
# reads one): some 50,000 resources, far more than any run records.
MAX_RECORD_BYTES = 16 << 20
# Saves pad the file to whole blocks with at least this much spare room.
_BLOCK = 4096
_SPARE = 1024
# The stages that only end a run: an invocation of these alone never makes
# the run's outcome (RunRecord.SetStatus).
CLOSING_STAGES = ('cleanup', 'teardown')
# Outcomes of a run that went wrong, which a closing invocation keeps.
_WENT_WRONG = ('failed', 'interrupted')


def NewRunUri() -> str:
  """A new run's id: 8 hex digits, unguessable enough for its names."""
  return uuid.uuid4().hex[:8]


def WriteFailure(what: str, path: str, error: OSError) -> str:
  """The one-line description of a run file that could not be written."""
  return f'could not write {what} {path}: {error.strerror or error}'


class RecordNotSaved(errors.ResultsFileError):
  """The run record could not be written; its state in memory still holds."""


class RunRecord:
  """A versioned, atomically rewritten JSON record of one run."""

  def __init__(self, run_dir: str, data: Dict[str, Any]):
    self.run_dir = run_dir
    self._data = data
    self._lock = threading.RLock()
    # The first write that failed, while the file is behind memory.
    self._unsaved: Optional[OSError] = None
    # Made by this process (Create), not read back from an earlier one's.
    self._made_here = False
    # An outcome was set by this process (an earlier benchmark of it).
    self._set_here = False

  @classmethod
  def Create(cls, run_dir: str, run_uri: str, **info: Any) -> 'RunRecord':
    run_scope.MakeOwnDir(run_dir)
    path = os.path.join(run_dir, RECORD_FILE)
    if os.path.exists(path):
      return cls.Load(run_dir)
    record = cls(run_dir, {
        'format_version': FORMAT_VERSION,
        'run_uri': run_uri,
        'created': time.time(),
        'info': info,
        'stages_done': [],
        'resources': [],
        'status': 'running',
    })
    try:
      record.Save()
    except RecordNotSaved as e:
      raise RecordNotSaved(f'{e}; nothing was started.') from None
    record._made_here = True  # pylint: disable=protected-access
    return record

  @classmethod
  def Load(cls, run_dir: str, run_uri: Optional[str] = None) -> 'RunRecord':
    """The record in run_dir, checked (and the run `run_uri`'s, if given)."""
    path = os.path.join(run_dir, RECORD_FILE)
    if not os.path.lexists(path):
      raise errors.UsageError(
          f'No run record at {path}; check --run_uri (runs are listed under '
          f'{os.path.dirname(run_dir)}).')
    try:
      # A run directory may be someone else's (downloaded): its record is
      # read bounded, never through a symlink, never from a FIFO or device.
      with regular_files.Directory(run_dir) as directory:
        data = json_input.Loads(directory.Read(RECORD_FILE,
                                               MAX_RECORD_BYTES))
    except regular_files.NotRegular as e:
      raise errors.UsageError(
          f'Run record {path} is unreadable: '
          f'{str(e).removeprefix(path + ": ")}') from None
    except json_input.KeyTwice as e:
      # json would read the last: a second "resources" hides from teardown
      # what the run made.
      raise errors.UsageError(f'Run record {path}: {e}; nothing was '
                              'deleted.') from None
    except (ValueError, RecursionError) as e:
      raise errors.UsageError(f'Run record {path} is unreadable: {e}') from None
    problem = _Problem(data, run_uri)
    if problem:
      raise errors.UsageError(f'Run record {path} is not usable: {problem}; '
                              'nothing was deleted.')
    return cls(run_dir, data)

  @property
  def path(self) -> str:
    return os.path.join(self.run_dir, RECORD_FILE)

  @property
  def run_uri(self) -> str:
    return self._data['run_uri']

  @property
  def info(self) -> Dict[str, Any]:
    return self._data['info']

  def Save(self) -> None:
    """Rewrites the file atomically; raises RecordNotSaved if it cannot."""
    with self._lock:
      text = json.dumps(self._data, indent=1, sort_keys=True).encode()
      try:
        # On a full disk the run's raw output makes room (evidence): the
        # record is how teardown finds what the run made.
        evidence.WithRoom(self.run_dir, self.path,
                          lambda: _ReplaceAtomically(self.path, text))
      except OSError as e:
        # With nothing of the run left to delete, a torn file could lose
        # nothing that matters: the final state may go in place.
        if not (errors.NoRoom(e) and not any(self.LiveResources()) and
                _OverwriteInPlace(self.path, text)):
          self._unsaved = self._unsaved or e
          raise RecordNotSaved(
              WriteFailure('the run record', self.path, e)) from None
      self._unsaved = None

  def SetInfo(self, key: str, value: Any) -> None:
    """Sets one item of `info` (what a later invocation checks its flags
    against) and saves the record."""
    with self._lock:
      self._data['info'][key] = value
      self.Save()

  def _SaveIfPossible(self) -> None:
    """Save() for writes that only retire things: the run goes on."""
    with contextlib.suppress(RecordNotSaved):  # Kept for WriteProblem.
      self.Save()

  def WriteProblem(self) -> Optional[str]:
    """One line if the file on disk is behind the record in memory."""
    with self._lock:
      if self._unsaved is None:
        return None
      left = ('nothing of the run is left' if not any(self.LiveResources())
              else 'delete what is left with '
              f'{run_signals.TeardownCommand(self.run_uri, self.run_dir)}')
      return (f'{WriteFailure("the run record", self.path, self._unsaved)}, '
              f'so it is out of date; {left}.')

  # Resources ---------------------------------------------------------------

  def AddResource(self, kind: str, name: str, **data: Any) -> Dict[str, Any]:
    """Records a resource as 'creating' before the call that creates it."""
    with self._lock:
      entry = {'kind': kind, 'name': name, 'status': 'creating',
               'data': data, 'recorded': time.time()}
      self._data['resources'].append(entry)
      self.Save()
      return entry

  def UpdateResource(self, kind: str, name: str, status: Optional[str] = None,
                     **data: Any) -> None:
    with self._lock:
      entry = self.FindResource(kind, name)
      if entry is None:
        raise KeyError(f'{kind}/{name} is not in the run record')
      if status:
        entry['status'] = status
      entry['data'].update(data)
      if status == 'deleted' and not data:
        self._SaveIfPossible()  # A stale 'created' is deleted again later.
      else:
        self.Save()

  def FindResource(self, kind: str, name: str) -> Optional[Dict[str, Any]]:
    """The newest live entry of that kind and name, else the newest one.

    A name can come back (--run_stage=cleanup, then prepare again, starts
    the shard servers-0:7001 anew): its updates and its deletion are the
    new entry's, never the deleted one's before it.
    """
    with self._lock:
      found = [entry for entry in reversed(self._data['resources'])
               if entry['kind'] == kind and entry['name'] == name]
      live = [entry for entry in found if entry['status'] != 'deleted']
      return (live or found or [None])[0]

  def LiveResources(self) -> Iterator[Dict[str, Any]]:
    """Resources not yet deleted, newest first (reverse dependency order).

    The ones live when it is called: teardown threads may mark entries
    deleted meanwhile.
    """
    with self._lock:
      live = [entry for entry in reversed(self._data['resources'])
              if entry['status'] != 'deleted']
    return iter(live)

  def Resources(self) -> List[Dict[str, Any]]:
    with self._lock:
      return list(self._data['resources'])

  # Run state ----------------------------------------------------------------

  def MarkStageDone(self, stage: str) -> None:
    with self._lock:
      if stage not in self._data['stages_done']:
        self._data['stages_done'].append(stage)
      self._SaveIfPossible()

  @property
  def stages_done(self) -> List[str]:
    with self._lock:
      return list(self._data['stages_done'])

  def SetStatus(self, status: str, closing_only: bool = False) -> None:
    """The run's outcome as an invocation of it ends. One that ran only
    CLOSING_STAGES (upstream's Cleanup through the PKB plugin after a
    Ctrl-C, a later --run_stage=teardown) says what it did in stages_done
    and cannot make a run that went wrong succeed: what went wrong first
    stays, as within one invocation (stage_runner). A record it read back
    still `running` is of an invocation that ended without saying how (a
    pkb killed: none holds the run's lock now), so the run was
    interrupted. Within one invocation (--benchmarks=a,b) a benchmark that
    went wrong is not undone by the next one's success either."""
    with self._lock:
      earlier = self._data['status']
      if closing_only and earlier == 'running' and not self._made_here:
        earlier = 'interrupted'
      if earlier in _WENT_WRONG and (closing_only or self._set_here):
        status = earlier
      self._data['status'] = status
      self._set_here = True
      self._SaveIfPossible()

  @property
  def status(self) -> str:
    return self._data['status']


def _ReplaceAtomically(path: str, text: bytes) -> None:
  """Writes text, padded, to path.tmp and renames it over path."""
  size = -(-(len(text) + _SPARE) // _BLOCK) * _BLOCK
  tmp = path + '.tmp'
  try:
    # Never written through what is left at that name (a downloaded run
    # directory may hold a symlink there to any file of the user's): it
    # goes, and the file is made anew.
    with contextlib.suppress(FileNotFoundError):
      os.unlink(tmp)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW |
                 os.O_CLOEXEC, 0o666)
    with open(fd, 'wb') as f:
      f.write(text.ljust(size - 1) + b'\n')
      f.flush()
      os.fsync(f.fileno())
    os.replace(tmp, path)
  except OSError:
    # The previous complete file stays; the partial copy goes.
    with contextlib.suppress(OSError):
      os.remove(tmp)
    raise


def _OverwriteInPlace(path: str, text: bytes) -> bool:
  """Rewrites path within its own size (no new block); False if too big."""
  try:
    fd = os.open(path, os.O_WRONLY | os.O_NOFOLLOW)
  except OSError:
    return False
  try:
    size = os.fstat(fd).st_size
    if len(text) >= size:
      return False
    if os.pwrite(fd, text.ljust(size - 1) + b'\n', 0) != size:
      return False
    os.fsync(fd)
    return True
  except OSError:
    return False
  finally:
    os.close(fd)


class _Entry(record_checks.Fields):
  kind: str
  name: str
  status: str
  data: Dict[str, Any]


class _File(record_checks.Fields):
  """What teardown reads of a record (each entry's data is its kind's)."""
  run_uri: Annotated[str, pydantic.Field(pattern=r'^[a-z0-9_-]{1,64}$')]
  info: Dict[str, Any]
  stages_done: List[Any]
  resources: List[_Entry]
  status: str


def _Problem(data: Any, run_uri: Optional[str]) -> Optional[str]:
  """What is wrong with a record read back, or None (it is input too)."""
  if not isinstance(data, dict):
    return f'it holds a JSON {type(data).__name__}, not an object'
  version = data.get('format_version')
  if version != FORMAT_VERSION or isinstance(version, bool):
    return (f'format version {version!r}; this tool reads version '
            f'{FORMAT_VERSION}')
  try:
    _File.model_validate(data)
  except pydantic.ValidationError as e:
    return errors.Problems(e)
  if run_uri is not None and data['run_uri'] != run_uri:
    return f'it is the record of run {data["run_uri"]!r}, not of {run_uri}'
  return None
