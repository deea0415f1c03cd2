"""Benchmark modules: every *_benchmark.py here, keyed by BENCHMARK_NAME.

Extension seam: drop a module named <something>_benchmark.py with PKB's
contract (BENCHMARK_NAME, BENCHMARK_CONFIG, GetConfig, CheckPrerequisites,
Prepare, Run -> list[Sample], Cleanup) and it is runnable as
--benchmarks=<BENCHMARK_NAME>.
"""

import importlib
import os
import pkgutil
from typing import Dict

from perfkitbenchmarker import errors

_REQUIRED = ('BENCHMARK_NAME', 'BENCHMARK_CONFIG', 'GetConfig',
             'CheckPrerequisites', 'Prepare', 'Run', 'Cleanup')


def _Discover() -> Dict[str, object]:
  modules = {}
  for info in pkgutil.iter_modules([os.path.dirname(__file__)]):
    if not info.name.endswith('_benchmark'):
      continue
    module = importlib.import_module(f'{__name__}.{info.name}')
    missing = [a for a in _REQUIRED if not hasattr(module, a)]
    if missing:
      raise errors.Error(f'{info.name} lacks {", ".join(missing)}.')
    modules[module.BENCHMARK_NAME] = module
  return modules


BENCHMARKS = _Discover()


def Get(name: str):
  try:
    return BENCHMARKS[name]
  except KeyError:
    raise errors.UsageError(
        f'Unknown benchmark "{name}"; available: '
        f'{", ".join(sorted(BENCHMARKS))}.') from None
