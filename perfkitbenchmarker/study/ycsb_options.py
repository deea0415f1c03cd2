"""The redis_ycsb benchmark's flags and its frozen, validated options.

`YcsbStudyOptions.FromFlags(flag_values)` is the only place the benchmark
reads flags; the server side is the Redis study's `ServerOptions`, so YCSB
runs deploy servers exactly as redis_memtier does. Extension seam: a new
setting is a flag here, a field, read in `FromFlags`, checked in `Check`.
"""

import dataclasses
import os
from typing import Optional, Tuple

from absl import flags

from perfkitbenchmarker import errors
from perfkitbenchmarker import flag_types
from perfkitbenchmarker import providers
from perfkitbenchmarker.linux_packages import ycsb as ycsb_package
from perfkitbenchmarker.study import options as options_lib
from perfkitbenchmarker.study import search_options

flags.DEFINE_enum('ycsb_command_group', 'hash',
                  list(ycsb_package.COMMAND_GROUPS),
                  'Redis data type each YCSB record is stored as '
                  '(redis.command_group of PKB\'s YCSB binding).')
flags.DEFINE_list('ycsb_workloads', ['workloada', 'workloadc'],
                  'YCSB core workloads to run after the load: names of '
                  'PKB\'s copies (workloada, workloadc) or paths to any '
                  'core workload property file.')
flags.DEFINE_integer('ycsb_record_count', 100000,
                     'Records loaded (YCSB recordcount; upstream PKB leaves '
                     'it unset for its YCSB defaults, ours loads 100,000 so '
                     'a probe is short).', lower_bound=1, upper_bound=10**12)
flags.DEFINE_integer('ycsb_operation_count', 100000,
                     'Operations per probe (YCSB operationcount; unset in '
                     'upstream PKB, ours a short probe).',
                     lower_bound=1, upper_bound=10**12)
flags.DEFINE_integer('ycsb_field_count', None,
                     'Fields per record (YCSB fieldcount); default 1 for '
                     'string, 10 otherwise; upstream PKB: 10 for every '
                     'type).', lower_bound=1, upper_bound=1000)
flags.DEFINE_integer('ycsb_field_length', 128,
                     'Bytes per field (YCSB fieldlength; unset in upstream '
                     'PKB, YCSB\'s 100; ours 128, the Tair study\'s '
                     'smallest).', lower_bound=1, upper_bound=64 * 1024 * 1024)
flags.DEFINE_integer('ycsb_load_threads', 4,
                     'Client threads of the load phase.',
                     lower_bound=1, upper_bound=1024)
flags.DEFINE_integer('ycsb_min_threads', 1,
                     'Client threads of the first probe.',
                     lower_bound=1, upper_bound=1024)
flags.DEFINE_integer('ycsb_max_threads', 32,
                     'Most client threads a probe may use.',
                     lower_bound=1, upper_bound=1024)
flags.DEFINE_integer('ycsb_thread_increment', 1,
                     'Threads added per probe.',
                     lower_bound=1, upper_bound=1024)
flag_types.DEFINE_float('ycsb_latency_cap', 1.0,
                        'Average latency cap in ms over all operations of a '
                        'probe (the search stops past it).',
                        lower_bound=0, upper_bound=60000, above=True)
flags.DEFINE_integer('ycsb_max_probes', 40,
                     'Hard bound on probes per workload.',
                     lower_bound=1, upper_bound=10000)
flags.DEFINE_integer('ycsb_timeout_ms', 30000,
                     'Client socket timeout (redis.timeout), as the Tair '
                     'study used.', lower_bound=1, upper_bound=3600 * 1000)
flags.DEFINE_list('ycsb_properties', [],
                  'Extra YCSB properties key=value (e.g. '
                  'requestdistribution=uniform); connection and size '
                  'properties have their own flags.')
flags.DEFINE_list('ycsb_jvm_options', [],
                  'Options for YCSB\'s JVM, e.g. -XX:TieredStopAtLevel=1 '
                  '(faster start, slower steady state: for short local '
                  'probes only) or -Xmx4g.')
flags.DEFINE_string('ycsb_build_dir', None,
                    'Local runs only: directory scripts/build_ycsb.sh built '
                    'into (default build/ycsb). Remote VMs build YCSB in '
                    'their own scratch directory.')


@dataclasses.dataclass(frozen=True)
class YcsbStudyOptions:
  """Everything a redis_ycsb run needs, validated once."""
  server: options_lib.ServerOptions
  command_group: str
  workloads: Tuple[str, ...]
  record_count: int
  operation_count: int
  field_count: int
  field_length: int
  load_threads: int
  min_threads: int
  max_threads: int
  thread_increment: int
  cap_ms: float
  max_probes: int
  timeout_ms: int
  properties: Tuple[Tuple[str, str], ...] = ()
  build_dir: Optional[str] = None
  jvm_options: Tuple[str, ...] = ()

  @classmethod
  def FromFlags(cls, f) -> 'YcsbStudyOptions':
    search_options.RequireAverageCap(
        f, 'redis_ycsb', 'YCSB reports percentiles per operation only '
        '(nothing to merge them over a probe), so its cap '
        '--ycsb_latency_cap is on the average')
    search_options.RequireNoShardSearch(
        f, 'redis_ycsb', 'use --benchmarks=redis_memtier for a shard search')
    group = f.ycsb_command_group
    field_count = f.ycsb_field_count or (1 if group == 'string' else 10)
    properties = []
    for item in f.ycsb_properties:
      key, sep, value = item.partition('=')
      if not sep or not key.strip():
        raise errors.UsageError(
            f'--ycsb_properties: "{item}" is not key=value.')
      properties.append((key.strip(), value.strip()))
    build_dir = f.ycsb_build_dir
    if build_dir:
      if not providers.CapabilitiesOfRun(f).is_runner_machine:
        raise errors.UsageError(
            f'--ycsb_build_dir={build_dir} is for Local runs: remote VMs '
            'build YCSB from the binding\'s sources in their scratch '
            'directory.')
      if '\0' in build_dir:  # A config's "\0": no command can name it.
        raise errors.UsageError(
            f'--ycsb_build_dir={build_dir!r} holds a NUL byte; give the '
            'directory scripts/build_ycsb.sh built into.')
      # Local "VMs" run their commands in scratch directories.
      build_dir = os.path.abspath(build_dir)
    opts = cls(
        server=options_lib.ServerOptions.FromFlags(f),
        command_group=group,
        workloads=tuple(f.ycsb_workloads),
        record_count=f.ycsb_record_count,
        operation_count=f.ycsb_operation_count,
        field_count=field_count, field_length=f.ycsb_field_length,
        load_threads=f.ycsb_load_threads, min_threads=f.ycsb_min_threads,
        max_threads=f.ycsb_max_threads,
        thread_increment=f.ycsb_thread_increment,
        cap_ms=f.ycsb_latency_cap, max_probes=f.ycsb_max_probes,
        timeout_ms=f.ycsb_timeout_ms, properties=tuple(properties),
        build_dir=build_dir or None, jvm_options=tuple(f.ycsb_jvm_options))
    opts.Check()
    return opts

  def Check(self) -> None:
    self.server.Check()
    if self.command_group == 'string' and self.field_count != 1:
      raise errors.UsageError(
          f'--ycsb_command_group=string stores one value per key; '
          f'--ycsb_field_count={self.field_count} must be 1.')
    if self.min_threads > self.max_threads:
      raise errors.UsageError(
          f'--ycsb_min_threads={self.min_threads} is above '
          f'--ycsb_max_threads={self.max_threads}.')
    if not self.workloads:
      raise errors.UsageError('--ycsb_workloads is empty.')
    for name in self.workloads:
      ycsb_package.WorkloadText(name)
    for option in self.jvm_options:
      if not option.startswith('-') or option in ('-cp', '-classpath',
                                                  '--class-path', '-jar'):
        raise errors.UsageError(
            f'--ycsb_jvm_options: "{option}" is not a JVM option the harness '
            'can pass (the class path and main class are its own).')
    for key, _ in self.properties:
      if key in ycsb_package.MANAGED_PROPERTIES:
        raise errors.UsageError(
            f'--ycsb_properties: {key} is set by the harness (or has its own '
            'flag); remove it.')

  @property
  def probes(self) -> int:
    """Probes of one workload's search at most."""
    return min(self.max_probes, (self.max_threads - self.min_threads) //
               self.thread_increment + 1)

  @property
  def size_properties(self):
    return {'recordcount': self.record_count,
            'fieldcount': self.field_count,
            'fieldlength': self.field_length,
            'redis.command_group': self.command_group}
