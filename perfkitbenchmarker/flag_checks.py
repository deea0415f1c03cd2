"""One check per flag value, wherever the value comes from.

A flag reaches a run three ways: the command line, a config file's `flags:`
section (top level or a benchmark's) and a matrix axis (which becomes a
cell's `flags:`). All three go through this module, so a value refused on
the command line is refused, with the same words, from a config or an axis:

  * `ParseConfigValue(flag_values, name, value)` turns a YAML value into the
    flag's value exactly as `configs.ApplyConfigFlags` sets it (the flag's
    own absl parser), without setting anything;
  * `CheckValue(name, value)` refuses a number outside the flag's bounds:
    every int and float flag has a finite lower and upper bound (its own
    `lower_bound`/`upper_bound`, else the row in `LIMITS`), floats must be
    finite (absl lets nan through any bound), and a list flag's numbers are
    checked one by one;
  * `CheckFlagValues(flag_values)` checks every flag's current value (the
    command line, before anything starts).

Each problem is one `errors.UsageError` line naming the flag, the value, the
limit and why. Cross-flag rules (min above max, connections above
maxclients) stay with the options builder that owns them.

Extension seam: a new numeric flag with no upper_bound of its own gets a row
in `LIMITS` (tests/flag_checks_test.py fails until it has one).
"""

import copy
import math
from typing import Any, Mapping, NamedTuple, Optional

from absl import flags

from perfkitbenchmarker import errors


class Limit(NamedTuple):
  """Bounds of one numeric flag; `low_open` excludes `low` itself."""
  low: float
  high: float
  why: str = ''
  low_open: bool = False


_MIB = 1024 * 1024
_DAY_S = 24 * 3600
_MANY = 10 ** 12  # Keys, records, operations: far above any real run.
_THREADS = 1024
_PORT = Limit(1, 65535, 'a TCP port')
_FRACTION = Limit(0, 1, 'a share', low_open=True)

# Bounds for the numeric flags whose definition has no upper bound. Lower
# bounds here apply where the definition has none.
LIMITS: Mapping[str, Limit] = {
    # 0 is refused: every run has a deadline.
    'timeout_minutes': Limit(0, 7 * 24 * 60, 'minutes; a week',
                             low_open=True),
    'max_cost_usd': Limit(0, 1e6, 'US dollars'),
    'run_processes': Limit(1, 64, 'cells at once'),
    'bq_timeout_seconds': Limit(0, 3600, 'an hour', low_open=True),
    'ssh_wait_timeout_seconds': Limit(0, _DAY_S, 'a day', low_open=True),
    # Redis and engines.
    'redis_start_port': _PORT,
    'redis_total_num_processes': Limit(1, 10000, 'shards per VM'),
    'redis_cluster_replicas': Limit(0, 16, 'replicas'),
    'redis_replicas_per_primary': Limit(0, 16, 'replicas'),
    'redis_memory_fraction': _FRACTION,
    'redis_server_io_threads': Limit(1, 128, 'Redis io-threads'),
    'redis_min_shards': Limit(1, 10000, 'shards per VM'),
    'redis_max_shards': Limit(1, 10000, 'shards per VM'),
    'redis_shard_max_points': Limit(1, 1000, 'search points'),
    'redis_shard_min_improvement': Limit(0, 10, 'a ratio'),
    'dragonfly_proactor_threads': Limit(0, _THREADS, 'threads'),
    # Load generators and the search.
    'memtier_clients': Limit(1, 10000, 'connections per thread; Redis '
                             'accepts 10,000 clients by default'),
    'memtier_pipeline': Limit(1, 10000, 'requests in flight per connection'),
    'memtier_data_size': Limit(1, 512 * _MIB, 'Redis\'s largest string'),
    'memtier_key_minimum': Limit(0, _MANY, 'keys'),
    'memtier_key_maximum': Limit(1, _MANY, 'keys'),
    'memtier_key_median': Limit(0, _MANY, 'keys'),
    'memtier_key_stddev': Limit(1, _MANY, 'keys'),
    'memtier_ram_hit_ratio': _FRACTION,
    'memtier_ram_fraction': _FRACTION,
    'memtier_requests': Limit(1, _MANY, 'requests per client'),
    'memtier_run_duration': Limit(1, _DAY_S, 'a day'),
    'memtier_warmup_seconds': Limit(0, _DAY_S, 'a day'),
    'memtier_processes_per_client': Limit(1, _THREADS, 'processes'),
    'memtier_latency_cap': Limit(0, 60000, 'milliseconds', low_open=True),
    'memtier_min_threads': Limit(1, _THREADS, 'threads'),
    'memtier_max_threads': Limit(1, _THREADS, 'threads'),
    'memtier_threads': Limit(1, _THREADS, 'threads per memtier process'),
    'memtier_thread_increment': Limit(1, _THREADS, 'threads'),
    'memtier_max_probes': Limit(1, 10000, 'probes'),
    'memtier_adaptive_min_connections': Limit(1, 100000, 'connections'),
    'memtier_adaptive_max_connections': Limit(1, 100000, 'connections'),
    'memtier_adaptive_start_connections': Limit(1, 100000, 'connections'),
    'memtier_adaptive_max_threads': Limit(1, _THREADS, 'threads'),
    'memtier_confirm_repeats': Limit(0, 100, 'repeats'),
    'memtier_linear_confirm_repeats': Limit(0, 100, 'repeats'),
    'memtier_cap_margin': _FRACTION,
    'memtier_staircase_clients_start': Limit(1, 10000, 'clients'),
    'memtier_staircase_clients_step': Limit(1, 10000, 'clients'),
    'memtier_staircase_step_seconds': Limit(1, 3600, 'an hour'),
    'memtier_staircase_max_clients': Limit(2, 10000, 'clients'),
    # YCSB.
    'ycsb_field_count': Limit(1, 1000, 'fields'),
    'ycsb_field_length': Limit(1, 64 * _MIB, 'bytes'),
    'ycsb_latency_cap': Limit(0, 60000, 'milliseconds', low_open=True),
    'ycsb_load_threads': Limit(1, _THREADS, 'threads'),
    'ycsb_min_threads': Limit(1, _THREADS, 'threads'),
    'ycsb_max_threads': Limit(1, _THREADS, 'threads'),
    'ycsb_thread_increment': Limit(1, _THREADS, 'threads'),
    'ycsb_max_probes': Limit(1, 10000, 'probes'),
    'ycsb_operation_count': Limit(1, _MANY, 'operations'),
    'ycsb_record_count': Limit(1, _MANY, 'records'),
    'ycsb_timeout_ms': Limit(1, 3600 * 1000, 'an hour'),
    # Redis Enterprise.
    'enterprise_redis_api_port': _PORT,
    'enterprise_redis_data_size_bytes': Limit(1, 512 * _MIB, 'bytes'),
    'enterprise_redis_db_count': Limit(1, 1000, 'databases'),
    'enterprise_redis_flash_ram_ratio': _FRACTION,
    'enterprise_redis_memory_size_percentage': _FRACTION,
    'enterprise_redis_latency_threshold': Limit(1, 60 * 10 ** 6,
                                                'microseconds'),
    'enterprise_redis_load_records': Limit(1, _MANY, 'records'),
    'enterprise_redis_run_records': Limit(1, _MANY, 'records'),
    'enterprise_redis_local_max_records': Limit(1, _MANY, 'records'),
    'enterprise_redis_loadgen_clients': Limit(1, 10000, 'clients'),
    'enterprise_redis_min_threads': Limit(1, _THREADS, 'threads'),
    'enterprise_redis_max_threads': Limit(1, _THREADS, 'threads'),
    'enterprise_redis_thread_increment': Limit(1, _THREADS, 'threads'),
    'enterprise_redis_optimizer_max_points': Limit(1, 1000, 'points'),
    'enterprise_redis_pipeline': Limit(1, 10000, 'requests'),
    'enterprise_redis_probe_seconds': Limit(1, _DAY_S, 'a day'),
    'enterprise_redis_proxy_threads': Limit(1, _THREADS, 'threads'),
    'enterprise_redis_shard_count': Limit(1, 10000, 'shards'),
}


def _ElementParser(flag) -> Optional[flags.ArgumentParser]:
  """The numeric parser of a flag or of its list items, else None."""
  parser = flag.parser
  for candidate in (parser, getattr(parser, '_element_parser', None),
                    getattr(parser, 'element_parser', None)):
    if isinstance(candidate, (flags.IntegerParser, flags.FloatParser)):
      return candidate
  return None


def IsNumeric(flag) -> bool:
  return _ElementParser(flag) is not None or flag.name in LIMITS


def LimitOf(flag) -> Optional[Limit]:
  """The flag's bounds: its own where it has them, else LIMITS's row."""
  row = LIMITS.get(flag.name)
  parser = _ElementParser(flag)
  low = getattr(parser, 'lower_bound', None)
  high = getattr(parser, 'upper_bound', None)
  if row is None:
    if low is None or high is None:
      return None
    return Limit(low, high)
  return Limit(row.low if low is None else max(low, row.low),
               row.high if high is None else min(high, row.high), row.why,
               row.low_open)


def _Show(value: Any) -> str:
  if isinstance(value, float):
    return f'{value:g}'
  return str(value)


def _Problem(limit: Optional[Limit], value: Any) -> Optional[str]:
  if isinstance(value, bool) or not isinstance(value, (int, float)):
    try:
      value = float(str(value).strip())
    except ValueError:
      return None  # Not a number: the flag's own parser says so.
  if isinstance(value, float) and not math.isfinite(value):
    return 'must be a finite number'
  if limit is None:
    return None
  why = f' ({limit.why})' if limit.why else ''
  if (value < limit.low or (limit.low_open and value == limit.low) or
      value > limit.high):
    word = 'above' if limit.low_open else 'at least'
    return (f'must be {word} {_Show(limit.low)} and at most '
            f'{_Show(limit.high)}{why}')
  return None


def CheckValue(flag_values, name: str, value: Any, where: str = '') -> None:
  """Refuses a value of flag `name` outside its bounds (see module doc).

  `where` names the source in front of the flag, e.g. 'config flags: '.
  Any object standing in for the flags (a test's namespace) means the
  process's own flag definitions.
  """
  if not isinstance(flag_values, flags.FlagValues):
    flag_values = flags.FLAGS
  if name not in flag_values or value is None:
    return
  flag = flag_values[name]
  if not IsNumeric(flag):
    return
  limit = LimitOf(flag)
  values = value if isinstance(value, (list, tuple)) else [value]
  for item in values:
    problem = _Problem(limit, item)
    if problem:
      shown = (','.join(_Show(v) for v in values)
               if isinstance(value, (list, tuple)) else _Show(value))
      item_part = (f' ({_Show(item)} {problem})' if len(values) > 1 else
                   f' {problem}')
      raise errors.UsageError(f'{where}--{name}={shown}:{item_part}.'
                              if len(values) > 1 else
                              f'{where}--{name}={shown}{item_part}.')


def CheckFlagValues(flag_values) -> None:
  """Checks every flag's current value (the command line's and defaults)."""
  for name in sorted(flag_values):
    flag = flag_values[name]
    if flag.name == name:
      CheckValue(flag_values, name, flag.value)


def ConfigText(value: Any) -> str:
  """A YAML value as the text absl parses (lists joined with commas)."""
  if isinstance(value, list):
    return ','.join(str(v) for v in value)
  if isinstance(value, bool):
    return str(value).lower()
  return value if isinstance(value, str) else str(value)


def ParseConfigValue(flag_values, name: Any, value: Any,
                     where: str = 'Config') -> Any:
  """The value a config's `flags: {name: value}` gives the flag, checked.

  Nothing is set: a matrix checks every axis value this way before any
  cell runs, and `configs.ApplyConfigFlags` sets what this returns.
  """
  if name not in flag_values:
    raise errors.ConfigError(
        f'{where} sets unknown flag "{name}"; see ./pkb.py --helpfull for '
        'flag names.')
  scratch = copy.deepcopy(flag_values[name])  # Parsed, nothing set.
  try:
    scratch.parse(ConfigText(value))
  except Exception as e:  # pylint: disable=broad-except  (absl raises many)
    raise errors.ConfigError(
        f'{where} flag {name}={value!r} is invalid: {e}') from None
  parsed = scratch.value
  CheckValue(flag_values, name, parsed, f'{where} flag ')
  return parsed
