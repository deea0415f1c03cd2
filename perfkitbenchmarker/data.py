"""Data files a benchmark module ships (scripts, templates, inputs), found
by name the way upstream PKB's data.ResourcePath finds them.

The search order is upstream's: the directories of --data_search_paths
first (the driver hands them over with SetSearchPaths; given on the command
line, each is searched; left at its default '.', only if it is a directory),
then the package's own perfkitbenchmarker/data/ (when the checkout has one).
vm.PushDataFile pushes what ResourcePath finds.
"""

import os
from typing import List, Sequence

PACKAGE_DATA_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                'data')
_search_paths: List[str] = ['.']
_given = [False]


class ResourceNotFound(ValueError):
  """No search path holds the named data file (upstream's type)."""


def SetSearchPaths(paths: Sequence[str], given: bool) -> None:
  """The --data_search_paths value, and whether the command line gave it."""
  _search_paths[:] = list(paths)
  _given[0] = given


def _Directories(search_user_paths: bool) -> List[str]:
  directories = []
  if search_user_paths:
    directories = [p for p in _search_paths
                   if _given[0] or os.path.isdir(p)]
  if os.path.isdir(PACKAGE_DATA_DIR):
    directories.append(PACKAGE_DATA_DIR)
  return directories


def ResourceExists(resource_name: str, search_user_paths: bool = True) -> bool:
  return any(os.path.exists(os.path.join(d, resource_name))
             for d in _Directories(search_user_paths))


def ResourcePath(resource_name: str, search_user_paths: bool = True) -> str:
  """The absolute path of the first file or directory named
  `resource_name` in the search order above; ResourceNotFound names every
  place looked in."""
  directories = _Directories(search_user_paths)
  for directory in directories:
    path = os.path.join(directory, resource_name)
    if os.path.exists(path):  # Absolute, as upstream's: found again as is.
      return os.path.abspath(path)
  raise ResourceNotFound(
      f'data file {resource_name} is not in '
      f'{", ".join(directories) or "any search path"}; put it there or name '
      'its directory with --data_search_paths.')
