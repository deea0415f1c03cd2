"""A benchmark module in the shape of upstream PKB's example_vm_benchmark.

Written for upstream's API alone: GetConfig through configs.LoadConfig,
one VM group of `*default_dual_core` with `vm_count: null` (--num_vms),
RemoteCommand returning (stdout, stderr). Prepare writes a line into the
VM's scratch directory, Run reads it back and reports its size, Cleanup
removes it. tests/upstream_modules_test.py dry-runs and runs it on Local
and on a Static machine over a loopback sshd.
"""

import logging
from typing import Any

from perfkitbenchmarker import benchmark_spec as bm_spec
from perfkitbenchmarker import configs
from perfkitbenchmarker import sample

BENCHMARK_NAME = 'upstream_example_vm'
BENCHMARK_CONFIG = """
upstream_example_vm:
  description: Writes a line on a VM and reads it back.
  vm_groups:
    default:
      vm_spec: *default_dual_core
      vm_count: null
"""

_TEXT = 'Hello World'


def _Path(vm) -> str:
  return f'{vm.GetScratchDir()}/upstream_example_vm.txt'


def GetConfig(user_config: dict[str, Any]) -> dict[str, Any]:
  return configs.LoadConfig(BENCHMARK_CONFIG, user_config, BENCHMARK_NAME)


def Prepare(benchmark_spec: bm_spec.BenchmarkSpec):
  vm = benchmark_spec.vms[0]
  vm.RemoteCommand(f'echo "{_TEXT}" > {_Path(vm)}')
  logging.info('Wrote "%s" to %s.', _TEXT, _Path(vm))


def Run(benchmark_spec: bm_spec.BenchmarkSpec) -> list[sample.Sample]:
  vm = benchmark_spec.vms[0]
  stdout, _ = vm.RemoteCommand(f'cat {_Path(vm)}')
  samples = [sample.Sample('read_back_bytes', len(stdout), 'bytes',
                           {'text': stdout.strip()})]
  # Upstream's modules add their common metadata to the samples they built.
  for s in samples:
    s.metadata.update({'vm_count': len(benchmark_spec.vms),
                       'num_cpus': vm.NumCpusForBenchmark()})
  return samples


def Cleanup(benchmark_spec: bm_spec.BenchmarkSpec):
  for vm in benchmark_spec.vm_groups['default']:
    vm.RemoveFile(_Path(vm))
