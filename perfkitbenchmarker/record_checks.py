"""Checks for values read back from a run record before teardown uses them.

A run record is input like a command line: it may be corrupted or hostile.
Every `FromRecord` constructor takes its fields through these checks, so a
path is used only when it lies inside the run's own roots (after `..` and
symlinks are resolved) and a PID only as a validated integer. A failed check
raises `RecordRefused`; teardown reports the entry and leaves it alone.

Extension seam: a provider with a new kind of path adds its root here and
checks the path with `LocalPathInside` (this machine) or `RemotePathInside`
(a VM's file system, reached over SSH, where nothing can be resolved).
"""

import os
import posixpath
from typing import Any, Dict, Iterable, Optional

from perfkitbenchmarker import errors
from perfkitbenchmarker import run_keys

# A remote VM's scratch directory: /tmp/pkb-<run_uri>/<vm name>.
REMOTE_SCRATCH_ROOT = '/tmp'


class RecordRefused(errors.ResourceError):
  """An entry of the run record failed a check; it is left alone."""


def Field(data: Dict[str, Any], key: str, types, what: str,
          required: bool = True) -> Any:
  """data[key] if it has one of `types` (None allowed when not required)."""
  value = data.get(key)
  if value is None and not required:
    return None
  # bool is an int subclass; a PID or port of `true` is not a number.
  if isinstance(value, bool) or not isinstance(value, types):
    raise RecordRefused(f'{what}: field "{key}" is {value!r}, not a '
                        f'{_TypeName(types)}; left alone')
  return value


def _TypeName(types) -> str:
  if isinstance(types, tuple):
    return ' or '.join(t.__name__ for t in types)
  return types.__name__


def Pid(data: Dict[str, Any], what: str, key: str = 'pid') -> Optional[int]:
  pid = Field(data, key, int, what, required=False)
  if pid is not None and not 1 < pid < 2**22:
    raise RecordRefused(f'{what}: {key} {pid} is not a process id; left '
                        'alone')
  return pid


def Port(data: Dict[str, Any], what: str) -> int:
  port = Field(data, 'port', int, what)
  if not 0 < port < 65536:
    raise RecordRefused(f'{what}: port {port} is out of range; left alone')
  return port


def LocalRunRoots(record) -> list:
  """The directories of this machine a run may own files in."""
  # The private SSH key lives outside results (run_keys), still the run's.
  return [record.run_dir, run_keys.RunKeyDir(record.run_uri)]


def LocalPathInside(path: Any, roots: Iterable[str], what: str,
                    allow_root: bool = False) -> str:
  """The resolved path, if it lies strictly inside one of `roots` (or is
  one, with `allow_root`: for a directory that is read, never deleted)."""
  if not isinstance(path, str) or not path or '\0' in path:
    raise RecordRefused(f'{what}: path {path!r} is not a path; left alone')
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
      f'{what}: path {path} (resolves to {resolved}) is outside the run\'s '
      f'directories ({", ".join(roots)}); left alone')


def RemotePathInside(path: Any, run_uri: str, what: str,
                     inside: Optional[str] = None) -> str:
  """A path on a VM, if it is normal and inside the run's scratch tree.

  Symlinks on the VM cannot be resolved from here, so the path must be
  absolute and already normal (no `..`, `.` or `//`), and the commands that
  use it never follow a symlink out (rm -rf removes a link, not its target).
  """
  root = inside or posixpath.join(REMOTE_SCRATCH_ROOT, f'pkb-{run_uri}')
  if (not isinstance(path, str) or not path.startswith('/') or
      posixpath.normpath(path) != path or '\0' in path or '\n' in path or
      not path.startswith(root.rstrip('/') + '/')):
    raise RecordRefused(f'{what}: path {path!r} is outside {root}/; left '
                        'alone')
  return path
