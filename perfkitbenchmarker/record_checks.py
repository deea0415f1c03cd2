"""A run record read back is input: each kind declares its fields once.

A run record may be corrupted or hostile. Each resource kind declares what
its entry's `data` holds as a pydantic model (a subclass of `Fields`, beside
the kind's `FromRecord`); `Parse` validates an entry against it with strict
types (a PID of `true` or "1; rm" is refused) and turns every failure into
one line, `RecordRefused`, which teardown reports, leaving the entry alone.
What a type cannot say is here: a path is used only inside the run's own
roots (after `..` and symlinks are resolved) on this machine, and a VM's
scratch directory only with the shape of the run's workspace (run_scope).
"""

import os
from typing import (Annotated, Any, Callable, Dict, Iterable, List,
                    Optional, Type)

import pydantic

from perfkitbenchmarker import errors
from perfkitbenchmarker import run_scope

# Where a VM's run workspace is made (run_scope.RemoteWorkspaceScript).
REMOTE_SCRATCH_ROOT = '/tmp'


class RecordRefused(errors.ResourceError, ValueError):
  """An entry failed a check and is left alone (a ValueError too, so that
  pydantic reports it from a field validator with the field's name)."""


class Fields(pydantic.BaseModel):
  """What an entry's data holds: strict types; extra fields are ignored
  (a newer run may record more), and null is a field not recorded."""

  model_config = pydantic.ConfigDict(strict=True, frozen=True)

  @pydantic.model_validator(mode='before')
  @classmethod
  def _NullIsMissing(cls, data: Any) -> Any:
    if isinstance(data, dict):
      return {k: v for k, v in data.items() if v is not None}
    return data


def Parse(model: Type[Fields], entry: Dict[str, Any], record) -> Any:
  """entry's data as `model`, or RecordRefused naming each bad field."""
  try:
    return model.model_validate(entry['data'], context={'record': record})
  except pydantic.ValidationError as e:
    raise RecordRefused(f'{entry["kind"]} {entry["name"]}: '
                        f'{errors.Problems(e)}; left alone') from None


def WithRecord(check: Callable[[Any, Any], Any]) -> pydantic.AfterValidator:
  """A field check that needs the run record (the one Parse was given)."""
  return pydantic.AfterValidator(
      lambda value, info: check(value, info.context['record']))


def Checked(problem: Callable[[str], Optional[str]]) -> Any:
  """Text `problem` finds nothing wrong with (it says what is), as a field
  type."""
  def Check(value: str) -> str:
    text = problem(value)
    if text:
      raise ValueError(text)
    return value
  return Annotated[str, pydantic.AfterValidator(Check)]


Pid = Annotated[int, pydantic.Field(gt=1, lt=2**22)]
Port = Annotated[int, pydantic.Field(gt=0, lt=65536)]
# The cores a VM's processes are pinned to (None: unpinned).
Cores = Optional[List[Annotated[int, pydantic.Field(ge=0, lt=4096)]]]


def LocalRunRoots(record) -> list:
  """The directories of this machine a run may own files in."""
  # The private SSH key lives outside results (run_scope), still the run's.
  return [record.run_dir, run_scope.RunKeyDir(record.run_uri)]


def LocalPathInside(path: str, roots: Iterable[str],
                    allow_root: bool = False) -> str:
  """The resolved path, if it lies strictly inside one of `roots` (or is
  one, with `allow_root`: for a directory that is read, never deleted)."""
  if not path or '\0' in path:
    raise RecordRefused(f'path {path!r} is not a path')
  resolved = os.path.realpath(path)
  for root in roots:
    # A root that is itself a symlink could point anywhere: not ours.
    if os.path.islink(root):
      continue
    real_root = os.path.realpath(root)
    if resolved.startswith(real_root.rstrip(os.sep) + os.sep) or (
        allow_root and resolved == real_root):
      return resolved
  raise RecordRefused(
      f'path {path} (resolves to {resolved}) is outside the run\'s '
      f'directories ({", ".join(roots)})')


def ScratchDir(path: str, root: str, record) -> str:
  """A VM's scratch directory under `root` as the run recorded it: of a
  workspace's shape (run_scope.ScratchProblem), or '' (never made)."""
  problem = path and run_scope.ScratchProblem(path, root, record.run_uri)
  if problem:
    raise RecordRefused(problem)
  return path


# A file or directory of this machine inside the run's own roots.
LocalPath = Annotated[str, WithRecord(
    lambda path, record: LocalPathInside(path, LocalRunRoots(record)))]
LocalDir = Annotated[str, WithRecord(
    lambda path, record: LocalPathInside(path, LocalRunRoots(record),
                                         allow_root=True))]
# A VM's scratch directory in the run's workspace under /tmp on the VM.
RemoteScratch = Annotated[str, WithRecord(
    lambda path, record: ScratchDir(path, REMOTE_SCRATCH_ROOT, record))]
