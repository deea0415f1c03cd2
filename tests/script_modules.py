"""Python files that are no package's modules (scripts/*.py, the plugin) as
modules, for tests to call their functions in-process."""

import importlib.util
import os
import types

SCRIPTS = os.path.join(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'scripts')


def Load(path: str, name: str) -> types.ModuleType:
  """The module the file at `path` makes, run once more under `name`: a
  test file gives its own name to get a copy of its own."""
  spec = importlib.util.spec_from_file_location(name, path)
  module = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(module)
  return module


def Script(name: str) -> types.ModuleType:
  """scripts/<name>.py as the module `name`."""
  return Load(os.path.join(SCRIPTS, f'{name}.py'), name)
