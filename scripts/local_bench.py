"""Local Redis for the search benches: one deployment, many searches.

scripts/bench_search.py and scripts/bench_search_floor.py run several
search policies side by side on the same local study (one shard on core 0,
the load generator on core 1): `LocalStudy` provisions and prepares it as
`./pkb.py` would, hands out its probe driver, and tears it down whatever
happens; `CpuAccount` says how much of the machine others took during a
search; `Rotated` alternates the policies' order between repetitions, so
neither runs first (on a warmer or quieter machine) every time.
"""

import contextlib
import dataclasses
import os
import signal
import sys
import time
from typing import Any, Iterator, List, Optional, Sequence

from absl import flags

from perfkitbenchmarker import benchmark_spec
from perfkitbenchmarker import input_checks
from perfkitbenchmarker import pricing
from perfkitbenchmarker import process_stat
from perfkitbenchmarker import reporting
from perfkitbenchmarker import run_record
from perfkitbenchmarker.linux_benchmarks import redis_memtier_benchmark as bench
from perfkitbenchmarker.study import deployment
from perfkitbenchmarker.study import options as options_lib

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def Log(text: str) -> None:
  print(text, file=sys.stderr, flush=True)


class CpuAccount:
  """Splits the machine's busy CPU time into this run's and everyone else's.

  Ours is this process with its waited-for children plus the shards (read
  from /proc); the rest of /proc/stat's busy time is foreign.
  """

  def __init__(self, shard_pids):
    self._pids = list(shard_pids)
    self._tick = os.sysconf('SC_CLK_TCK')
    self._cpus = os.cpu_count() or 1

  def Snapshot(self):
    with open('/proc/stat') as f:
      fields = [float(x) for x in f.readline().split()[1:9]]
    busy = (sum(fields) - fields[3] - fields[4]) / self._tick
    times = os.times()
    ours = (times.user + times.system + times.children_user +
            times.children_system)
    for pid in self._pids:
      stat = process_stat.Read(pid)
      if stat is not None:
        ours += stat.cpu_ticks / self._tick
    return time.monotonic(), busy, ours

  def ForeignPct(self, before, after):
    wall = (after[0] - before[0]) * self._cpus
    foreign = (after[1] - before[1]) - (after[2] - before[2])
    return max(0.0, foreign / wall * 100) if wall > 0 else 0.0


@dataclasses.dataclass(frozen=True)
class Study:
  """A prepared local study: what a bench needs to run searches on it."""
  spec: Any  # benchmark_spec.BenchmarkSpec
  opts: options_lib.RedisStudyOptions
  driver: deployment.ProbeDriver
  account: CpuAccount
  run_dir: str
  prepare_s: float


@contextlib.contextmanager
def LocalStudy(name: str, argv: List[str], flag_values) -> Iterator[Study]:
  """Provisions and prepares the redis_memtier study on Local with the
  parsed flags, yields it, and always cleans up and tears it down (a
  failure there is logged, the run record says failed)."""
  config = bench.GetConfig({})
  # Before the run's record: a refused bench (no such --memtier_path, ...)
  # leaves no run directory saying 'running' behind.
  bench.CheckPrerequisites(config)
  opts = options_lib.RedisStudyOptions.FromFlags(flag_values)
  run_uri = run_record.NewRunUri()
  run_dir = os.path.join(REPO, 'results', 'runs', run_uri)
  record = run_record.RunRecord.Create(run_dir, run_uri, cloud='Local',
                                       benchmarks=[name], argv=argv)
  spec = benchmark_spec.BenchmarkSpec(
      bench, config, run_uri, 'Local', record, flag_values,
      pricing.PriceCatalog.Load(), lambda samples: None,
      reporter=reporting.ConsoleReporter(sys.stderr))
  signal.signal(signal.SIGTERM, signal.default_int_handler)
  try:
    spec.ConstructVirtualMachines()
    spec.Provision()
    prepared = time.monotonic()
    bench.Prepare(spec)
    yield Study(spec, opts, deployment.ProbeDriver(spec, spec.deployment,
                                                   opts),
                CpuAccount(p.pid for p in spec.deployment.processes),
                run_dir, time.monotonic() - prepared)
  finally:
    bench.Cleanup(spec)
    failures = spec.Teardown()
    record.SetStatus('failed' if failures else 'succeeded')
    for failure in failures:
      Log(f'teardown: {failure}')


def ParseFlags(name: str, doc: str, flag_values, argv: List[str],
               probe_seconds_flag: str,
               output_flags: Sequence[str] = ()) -> Optional[int]:
  """Parses a bench's flags: None to go on, with the probes' length taken
  from `probe_seconds_flag`; or the exit status after --help (0) or a bad
  flag (2, one line). The files `output_flags` name are written after the
  bench's minutes of measuring: one that cannot be is refused now."""
  if any(a in ('-h', '--help', '--helpfull') for a in argv[1:]):
    print(doc)
    print(flag_values.main_module_help())
    return 0
  try:
    flag_values(argv)
  except flags.Error as e:
    print(f'{name}: {e}; see --help', file=sys.stderr)
    return 2
  for flag in output_flags:
    path = flag_values[flag].value
    problem = path and input_checks.FileProblem(path)
    if problem:
      print(f'{name}: --{flag}={path}: {problem}; nothing was run.',
            file=sys.stderr)
      return 2
  flag_values.memtier_run_duration = flag_values[probe_seconds_flag].value
  return None


def Rotated(names: List[str], rep: int) -> List[str]:
  """The policies' order in repetition `rep`: each starts once in turn."""
  shift = rep % len(names)
  return names[shift:] + names[:shift]
