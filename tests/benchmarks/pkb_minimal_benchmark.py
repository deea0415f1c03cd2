"""A benchmark module with PKB's names alone: the contract's floor.

BENCHMARK_NAME, BENCHMARK_CONFIG, GetConfig, Prepare, Run and Cleanup, as a
PKB user would write them (PKB's example_vm_benchmark's shape), and none of
the harness's optional hooks (benchmark_contract.CONTRACT).
tests/benchmark_contract_test.py loads it the way pkb.py loads any benchmark
(linux_benchmarks, from a directory on PKB_BENCHMARK_DIRS) and dry-runs and
runs it on Local: Prepare writes a file on the VM, Run reads it back and
times a command there, Cleanup removes the file.
"""

import shlex
import time

from perfkitbenchmarker import configs
from perfkitbenchmarker import sample

BENCHMARK_NAME = 'pkb_minimal'
BENCHMARK_CONFIG = """
pkb_minimal:
  description: Writes a file on one VM, reads it back and times a command.
  vm_groups:
    default:
      vm_spec:
        Local:
          machine_type: local
          num_cpus: 1
      vm_count: 1
"""
_FILE = 'pkb_minimal.txt'
_TEXT = 'written by Prepare'


def GetConfig(user_config):
  return configs.LoadConfig(BENCHMARK_CONFIG, user_config, BENCHMARK_NAME)


def _Path(vm):
  return f'{vm.scratch_dir}/{_FILE}'


def Prepare(spec):
  for vm in spec.vms:
    vm.WriteFile(_Path(vm), _TEXT)


def Run(spec):
  samples = []
  for vm in spec.vms:
    text = vm.ReadFile(_Path(vm))
    start = time.monotonic()
    vm.RemoteCommand('true')
    samples.append(sample.Sample(
        'command_seconds', time.monotonic() - start, 'seconds',
        {'vm': vm.name, 'file_read_back': text == _TEXT}))
  return samples


def Cleanup(spec):
  for vm in spec.vms:
    vm.RemoteCommand(f'rm -f -- {shlex.quote(_Path(vm))}')
