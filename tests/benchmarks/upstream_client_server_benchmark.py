"""A two-VM module in upstream PKB's style: a client VM measures TCP round
trips to a server VM.

Prepare pushes one script (vm.PushDataFile) to both VMs at once
(background_tasks.RunThreaded), starts its echo server on the server VM in
the background, waits for the port it chose (vm_util.Retry) and opens it
(vm.AllowPort). Run has the client reach the server at its internal
address (vm.GetInternalIPs) and parses the round trips' latencies
(regex_util). Cleanup tells the server to quit (it also quits on its own
after _SERVER_SECONDS, so nothing outlives a crashed run for long).
tests/upstream_modules_test.py runs it on Local and Static.
"""

from perfkitbenchmarker import background_tasks
from perfkitbenchmarker import configs
from perfkitbenchmarker import errors
from perfkitbenchmarker import regex_util
from perfkitbenchmarker import sample
from perfkitbenchmarker import vm_util

BENCHMARK_NAME = 'upstream_client_server'
BENCHMARK_CONFIG = """
upstream_client_server:
  description: TCP round trips from a client VM to a server VM.
  vm_groups:
    server:
      vm_spec: *default_single_core
    client:
      vm_spec: *default_single_core
"""

_SCRIPT = 'upstream_echo.py'
_ROUND_TRIPS = 500
_SERVER_SECONDS = 300


def GetConfig(user_config):
  return configs.LoadConfig(BENCHMARK_CONFIG, user_config, BENCHMARK_NAME)


def _Script(vm):
  return f'{vm.GetScratchDir()}/{_SCRIPT}'


def _PortFile(vm):
  return f'{vm.GetScratchDir()}/echo.port'


@vm_util.Retry(poll_interval=0.2, timeout=30, fuzz=0,
               retryable_exceptions=(errors.Benchmarks.PrepareException,))
def _ServerPort(vm):
  stdout, _, retcode = vm.RemoteCommandWithReturnCode(
      f'cat {_PortFile(vm)}', ignore_failure=True)
  if retcode != 0:
    raise errors.Benchmarks.PrepareException('the echo server has no port '
                                             'yet')
  return int(stdout)


def Prepare(benchmark_spec):
  background_tasks.RunThreaded(lambda vm: vm.PushDataFile(_SCRIPT,
                                                          _Script(vm)),
                               benchmark_spec.vms)
  server = benchmark_spec.vm_groups['server'][0]
  server.RemoveFile(_PortFile(server))
  server.RemoteCommand(
      f'nohup python3 {_Script(server)} server {_PortFile(server)} '
      f'{_SERVER_SECONDS} > /dev/null 2>&1 &')
  server.AllowPort(_ServerPort(server))


def Run(benchmark_spec):
  server = benchmark_spec.vm_groups['server'][0]
  client = benchmark_spec.vm_groups['client'][0]
  address = server.GetInternalIPs()[0]
  stdout, _ = client.RemoteCommand(
      f'python3 {_Script(client)} client {address} {_ServerPort(server)} '
      f'{_ROUND_TRIPS}')
  metadata = {'server': server.name, 'client': client.name,
              'server_address': address,
              'round_trips': regex_util.ExtractInt(r'round_trips=(\d+)',
                                                   stdout)}
  return [sample.Sample(f'round_trip_{stat}',
                        regex_util.ExtractFloat(rf'{stat}_us=([\d.]+)',
                                                stdout),
                        'us', metadata)
          for stat in ('mean', 'p50', 'p99', 'max')]


def Cleanup(benchmark_spec):
  server = benchmark_spec.vm_groups['server'][0]
  client = benchmark_spec.vm_groups['client'][0]
  port, _, retcode = server.RemoteCommandWithReturnCode(
      f'cat {_PortFile(server)}', ignore_failure=True)
  if retcode == 0:
    client.RemoteCommand(f'python3 {_Script(client)} quit '
                         f'{server.GetInternalIPs()[0]} {int(port)}',
                         ignore_failure=True)
  server.RemoveFile(_PortFile(server))
