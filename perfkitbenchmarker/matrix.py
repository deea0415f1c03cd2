"""PKB's matrix runs: a config file expanded into cells, upstream's semantics.

As PKB's benchmark_sets.py: a top-level `benchmarks:` list of one-key
mappings is run entry by entry unless `--benchmarks` is given (then each name
picks its section, whose `name:` says which module it configures); top-level
`flags:` apply to every entry, an entry's win over them and matrix values
over both; `flag_matrix_defs.<name>` is a cross product (flags sorted),
`flag_zip_defs.<name>` lists walked together (with a matrix, one more axis,
the first); `flag_matrix_filters.<name>` keeps the cells it is true for,
parsed safely (matrix_filter.py), never eval()ed.

Unlike upstream, an empty or non-list axis, a filter keeping no cell, an
unknown flag in a filter and a malformed `benchmarks:` entry are errors
naming the key, and `benchmarks:` entries may carry a matrix too. Pure:
parsed YAML in, frozen `Cell`s out.
"""

import copy
import dataclasses
import itertools
import math
from typing import (Any, Callable, Dict, List, Mapping, Optional, Sequence,
                    Tuple)

from perfkitbenchmarker import errors
from perfkitbenchmarker import matrix_filter

MATRIX_KEYS = ('flag_matrix', 'flag_matrix_defs', 'flag_matrix_filters',
               'flag_zip', 'flag_zip_defs')
# Most cells a config may describe, counted from the axes' lengths before
# anything is expanded or filtered (each cell is a whole run with its VMs);
# a few hundred bytes of axes could otherwise ask for 10^9 cells.
MAX_CELLS = 10000
# check_flag(where, flag name, value): raises for a value the flag refuses.
FlagCheck = Callable[[str, str, Any], None]


@dataclasses.dataclass(frozen=True)
class Cell:
  """One run of a matrix: a benchmark module and its complete config."""
  index: int                              # 1-based, in expansion order
  benchmark: str                          # the module's BENCHMARK_NAME
  section: str                            # the config section it came from
  config: Mapping[str, Any]               # no matrix keys; merged `flags`
  axes: Tuple[Tuple[str, Any], ...] = ()  # the values the matrix chose

  @property
  def flags(self) -> Mapping[str, Any]:
    return self.config.get('flags') or {}

  @property
  def label(self) -> str:
    values = ' '.join(f'{k}={Show(v)}' for k, v in self.axes)
    return f'{self.section} {values}'.strip()


def Show(value: Any) -> str:
  """An axis value as a cell's label shows it."""
  return str(value).lower() if isinstance(value, bool) else str(value)


def _Error(message: str) -> errors.ConfigError:
  return errors.ConfigError(f'--benchmark_config_file: {message}')


def UsesMatrixFeatures(user_config: Any, benchmark_names: Sequence[str],
                       flag_matrix: Optional[str] = None,
                       flag_zip: Optional[str] = None) -> bool:
  """Whether the file needs the matrix driver rather than one plain run."""
  if flag_matrix or flag_zip:
    return True
  if not isinstance(user_config, Mapping):
    return False
  if 'benchmarks' in user_config or 'flags' in user_config:
    return True
  for name in benchmark_names:
    section = user_config.get(name)
    if isinstance(section, Mapping) and (
        'name' in section or any(k in section for k in MATRIX_KEYS)):
      return True
  return False


def _Entries(user_config: Mapping[str, Any], benchmark_names: Sequence[str],
             benchmarks_on_command_line: bool) -> List[Tuple[str, str, dict]]:
  """(section label, benchmark module name, section config) per entry."""
  listed = user_config.get('benchmarks')
  if listed is not None and not benchmarks_on_command_line:
    if not isinstance(listed, list) or not listed:
      raise _Error('"benchmarks" must be a non-empty list of '
                   '{<benchmark>: <config>} mappings.')
    entries = []
    # An entry aliasing a top-level section (`- redis_memtier: *t2d`) is
    # labelled by that section's name, which --benchmarks selects it by
    # (equal, not identical: the loader may copy aliased nodes).
    sections = [(k, v) for k, v in user_config.items()
                if k not in ('benchmarks', 'flags') and isinstance(v, Mapping)]
    for i, entry in enumerate(listed):
      if not isinstance(entry, Mapping) or len(entry) != 1:
        raise _Error(f'benchmarks[{i}] must be a mapping with exactly one key, '
                     'the benchmark name, e.g. "- redis_memtier: {flags: ...}".')
      (name, config), = entry.items()
      same = [k for k, v in sections if v == config]
      section = same[0] if len(same) == 1 else None
      config = dict(config or {})
      module = config.pop('name', name)
      label = (str(section) if section else
               f'{name}[{i}]' if len(listed) > 1 else str(name))
      entries.append((label, str(module), config))
    return entries
  entries = []
  for name in benchmark_names:
    config = user_config.get(name) or {}
    if not isinstance(config, Mapping):
      raise _Error(f'"{name}" must be a mapping.')
    config = dict(config)
    module = config.pop('name', name)
    entries.append((name, str(module), config))
  return entries


def _Axis(defs: Any, where: str) -> List[Tuple[str, List[Any]]]:
  if not isinstance(defs, Mapping) or not defs:
    raise _Error(f'{where} must be a mapping of flag names to lists of '
                 'values.')
  axes = []
  for flag, values in defs.items():
    if not isinstance(values, list) or not values:
      raise _Error(f'{where}.{flag} must be a non-empty list of values.')
    axes.append((str(flag), values))
  return axes


def _Named(config: Mapping[str, Any], defs_key: str, name: Optional[str],
           label: str) -> Optional[Any]:
  if not name:
    return None
  if isinstance(name, (list, Mapping)):  # YAML's values no name can be.
    raise _Error(f'{label}: {defs_key[:-len("_defs")]} names one of '
                 f'{defs_key}; give one name, not {name!r}.')
  defs = config.get(defs_key) or {}
  if not isinstance(defs, Mapping) or name not in defs:
    raise _Error(f'{label}: no {defs_key}.{name} (known: '
                 f'{", ".join(map(str, defs)) if isinstance(defs, Mapping) and defs else "none"}).')
  return defs[name]


def _ExpandEntry(label: str, config: Dict[str, Any],
                 global_flags: Mapping[str, Any], flag_matrix: Optional[str],
                 flag_zip: Optional[str], flag_defaults: Mapping[str, Any],
                 budget: int, check_flag: Optional[FlagCheck]
                 ) -> List[Tuple[dict, tuple]]:
  matrix_name = flag_matrix or config.get('flag_matrix')
  zip_name = flag_zip or config.get('flag_zip')
  matrix_defs = _Named(config, 'flag_matrix_defs', matrix_name, label)
  zip_defs = _Named(config, 'flag_zip_defs', zip_name, label)
  filters = config.get('flag_matrix_filters') or {}
  if not isinstance(filters, Mapping):
    raise _Error(f'{label}.flag_matrix_filters must be a mapping of matrix '
                 'names to expressions.')
  filter_text = filters.get(matrix_name) if matrix_name else None
  base = {k: copy.deepcopy(v) for k, v in config.items()
          if k not in MATRIX_KEYS}
  local_flags = base.get('flags') or {}
  if not isinstance(local_flags, Mapping):
    raise _Error(f'{label}.flags must be a mapping of flag names to values.')

  crossed: List[List[Tuple[Tuple[str, Any], ...]]] = []
  if zip_defs is not None:
    zipped = _Axis(zip_defs, f'{label}.flag_zip_defs.{zip_name}')
    lengths = {len(values) for _, values in zipped}
    if len(lengths) != 1:
      raise _Error(f'{label}.flag_zip_defs.{zip_name}: every list must have '
                   f'the same length (found {sorted(lengths)}).')
    crossed.append([tuple((flag, values[i]) for flag, values in zipped)
                    for i in range(lengths.pop())])
  if matrix_defs is not None:
    for flag, values in sorted(_Axis(
        matrix_defs, f'{label}.flag_matrix_defs.{matrix_name}')):
      crossed.append([((flag, v),) for v in values])
  count = math.prod(len(values) for values in crossed)
  if count > budget:
    when = ', before filtering' if filter_text else ''
    raise _Error(f'{label}: the matrix has {count:,} cells (the product of '
                 f'its axes\' lengths{when}); at most {MAX_CELLS:,} cells per '
                 'config file. Split it or shorten the axes.')
  if check_flag is not None:  # Every value once, before any cell runs.
    for name, value in local_flags.items():
      check_flag(f'{label}.flags', name, value)
    distinct = {(name, repr(value)): (name, value) for values in crossed
                for group in values for name, value in group}
    for name, value in distinct.values():
      check_flag(f'{label} matrix axis', name, value)

  # A filter that is not a safe expression is refused at the first cell.
  cells = []
  for combination in itertools.product(*crossed):
    axes = tuple(pair for group in combination for pair in group)
    cell_flags = {**global_flags, **local_flags, **dict(axes)}
    if filter_text is not None:
      visible = {**flag_defaults, **cell_flags}
      try:
        if not matrix_filter.Matches(filter_text, visible):
          continue
      except matrix_filter.FilterError as e:
        raise _Error(f'{label}.flag_matrix_filters.{matrix_name} {e}.'
                     ) from None
    cell_config = copy.deepcopy(base)
    if cell_flags:
      cell_config['flags'] = cell_flags
    cells.append((cell_config, axes))
  if not cells:
    raise _Error(f'{label}: flag_matrix_filters.{matrix_name} keeps none of '
                 'the matrix cells.')
  return cells


def Expand(user_config: Any, benchmark_names: Sequence[str],
           benchmarks_on_command_line: bool = False,
           flag_matrix: Optional[str] = None,
           flag_zip: Optional[str] = None,
           flag_defaults: Optional[Mapping[str, Any]] = None,
           check_flag: Optional[FlagCheck] = None) -> List[Cell]:
  """The cells of a parsed config file, numbered from 1 in PKB's order.

  `flag_defaults`: values a filter may name that the config does not set;
  `check_flag(where, name, value)` refuses a value the config sets, axes
  included, before anything is expanded (configs.ParseConfigValue).
  """
  user_config = user_config or {}
  if not isinstance(user_config, Mapping):
    raise _Error('must hold a mapping of benchmark names.')
  global_flags = user_config.get('flags') or {}
  if not isinstance(global_flags, Mapping):
    raise _Error('the top-level "flags" must be a mapping of flag names to '
                 'values.')
  if check_flag is not None:
    for name, value in global_flags.items():
      check_flag('flags', name, value)
  cells = []
  for label, module, config in _Entries(user_config, benchmark_names,
                                        benchmarks_on_command_line):
    for cell_config, axes in _ExpandEntry(label, config, global_flags,
                                          flag_matrix, flag_zip,
                                          flag_defaults or {},
                                          MAX_CELLS - len(cells), check_flag):
      cells.append(Cell(index=len(cells) + 1, benchmark=module, section=label,
                        config=cell_config, axes=axes))
  return cells


def CellConfig(cell: Cell) -> Dict[str, Any]:
  """The plain config file of one cell: `{<benchmark>: <config>}`."""
  return {cell.benchmark: copy.deepcopy(dict(cell.config))}
