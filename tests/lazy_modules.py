"""Heavy modules a test file imports only when one of its tests runs.

Every pytest-xdist worker collects every test file, so a module a test file
imports at its top is imported by each worker, used or not: over a whole
suite google.cloud.compute_v1 (2 CPU-s), moto (1 CPU-s), the BigQuery
client and scipy were imported by all four workers and used by one or two.
`Module(name)` stands for the module and imports it when a test first reads
or sets one of its public names; a plain `import` of it elsewhere, in a test
or in the product, gets the module itself, the one the stand-in reads from.
"""

import importlib
import types


class _Deferred(types.ModuleType):
  """A module's stand-in: its public names are the module's own."""

  def __getattr__(self, name):  # Only for names the stand-in lacks.
    # pytest's collection probes every global of a test file for its marks
    # and wrappers (_pytestfixturefunction, _mock_name, __wrapped__): those
    # say "none" without importing. The stand-in serves public names only.
    if name.startswith('_'):
      raise AttributeError(name)
    return getattr(importlib.import_module(self.__name__), name)

  def __setattr__(self, name, value):  # monkeypatch.setattr and its undo.
    setattr(importlib.import_module(self.__name__), name, value)

  def __delattr__(self, name):
    delattr(importlib.import_module(self.__name__), name)


def Module(name: str) -> types.ModuleType:
  """The module `name`, imported when one of its names is first used."""
  return _Deferred(name)
