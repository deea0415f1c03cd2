"""Benchmark modules: every *_benchmark.py here, keyed by BENCHMARK_NAME.

Extension seam: drop a module named <something>_benchmark.py with PKB's
contract into this directory, or into a directory listed in the environment
variable PKB_BENCHMARK_DIRS (os.pathsep-separated; for benchmarks kept
outside the checkout), and it is runnable as --benchmarks=<BENCHMARK_NAME>.
(Upstream PKB has no flag for such directories: its modules live in its own
package. A module written for upstream's API runs from one unchanged:
docs/upstream_api.md.)

The contract is perfkitbenchmarker/benchmark_contract.py's table: PKB's
required names (BENCHMARK_NAME, BENCHMARK_CONFIG, GetConfig, Prepare, Run,
Cleanup) and the optional hooks, with their arguments. Every module found
is checked against it as it loads, so a module that breaks it stops pkb
with one line naming the module and the name, before any flag is read.
"""

import importlib
import importlib.machinery
import importlib.util
import os
import pkgutil
import sys
from typing import Dict, Optional

from perfkitbenchmarker import benchmark_contract
from perfkitbenchmarker import errors
from perfkitbenchmarker import trusted_programs

DIRS_ENV = 'PKB_BENCHMARK_DIRS'


def _Files():
  """(import name or None, path) of every *_benchmark.py to load."""
  here = os.path.dirname(__file__)
  for info in pkgutil.iter_modules([here]):
    if info.name.endswith('_benchmark'):
      yield f'{__name__}.{info.name}', os.path.join(here, info.name + '.py')
  # A directory named twice (a profile that appends it each time it is
  # sourced) is read once: its modules loaded twice were refused as 'X and
  # X both name the benchmark', naming one file. The path given is the one
  # checked and loaded (a symbolic link on it is checked too). This
  # package's own directory is read above.
  named = {os.path.realpath(here)}
  for directory in filter(None, os.environ.get(DIRS_ENV, '').split(
      os.pathsep)):
    if os.path.realpath(directory) in named:
      continue
    named.add(os.path.realpath(directory))
    if not os.path.isdir(directory):
      raise errors.Error(f'{DIRS_ENV} names {directory}, which is not a '
                         'directory.')
    for entry in sorted(os.listdir(directory)):
      if entry.endswith('_benchmark.py'):
        yield None, _Trusted(os.path.join(directory, entry))


def _Trusted(path: str) -> str:
  """`path` when no other user could change the code it holds.

  Loading a module runs it, as the user pkb runs as (often root), before
  any flag is read: so, as for a program pkb runs (trusted_programs), the
  module and every directory above it must be root's or that user's and
  writable by no one else, and a symbolic link on the way too.
  """
  problem = trusted_programs.Problem(path)
  if problem:
    raise errors.Error(
        f'{DIRS_ENV}: {path} is not loaded: {problem}; a benchmark module '
        'pkb loads runs as you (often root), so it must be owned by root or '
        'by you and writable by no one else, and so must every directory '
        f'above it: {trusted_programs.Fix(problem.reason)}, or move it.')
  return path


class _SourceOnlyLoader(importlib.machinery.SourceFileLoader):
  """Runs a module from its source (the file _Trusted checked), never from
  a .pyc in the __pycache__ beside it: nothing checks that directory, and
  one made under umask 000 lets any user plant a .pyc whose header matches
  the source's mtime and size, which Python's import would run instead."""

  def get_code(self, fullname):
    return self.source_to_code(self.get_data(self.path), self.path)


def _Load(import_name: Optional[str], path: str):
  if import_name:
    return importlib.import_module(import_name)
  # A module outside the package: its own name under a private prefix, so
  # it can neither shadow nor be shadowed by an installed module.
  name = 'pkb_benchmark_dirs.' + os.path.basename(path)[:-3]
  spec = importlib.util.spec_from_file_location(
      name, path, loader=_SourceOnlyLoader(name, path))
  module = importlib.util.module_from_spec(spec)
  sys.modules[name] = module
  spec.loader.exec_module(module)
  return module


def _Discover() -> Dict[str, object]:
  modules = {}
  for import_name, path in _Files():
    try:
      module = _Load(import_name, path)
    except errors.Error:
      raise
    except Exception as e:  # pylint: disable=broad-except
      # A module someone dropped in with a mistake: one line, not a
      # traceback from inside pkb's imports.
      raise errors.Error(f'{path} could not be loaded: {type(e).__name__}: '
                         f'{e}') from None
    benchmark_contract.Check(module, path)
    other = modules.get(module.BENCHMARK_NAME)
    if other is not None:
      raise errors.Error(f'{path} and {other.__file__} both name the '
                         f'benchmark {module.BENCHMARK_NAME}.')
    modules[module.BENCHMARK_NAME] = module
  return modules


# Loaded on import: the modules define their flags before pkb parses any.
# A module that breaks the contract is kept as LOAD_ERROR, which pkb.Main
# prints as its one line (an import has no place to print it).
try:
  BENCHMARKS = _Discover()
  LOAD_ERROR: Optional[errors.Error] = None
except errors.Error as _e:
  BENCHMARKS, LOAD_ERROR = {}, _e


def Get(name: str):
  if LOAD_ERROR is not None:
    raise LOAD_ERROR
  try:
    return BENCHMARKS[name]
  except KeyError:
    raise errors.UsageError(
        f'Unknown benchmark "{name}"; available: '
        f'{", ".join(sorted(BENCHMARKS))}.') from None
