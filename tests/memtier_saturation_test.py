"""Client CPU is measured over the load window, not the processes' life.

Issue 10 point 6: memtier idles its last second (3 s of process for a 2 s
probe), so the client core's busy share measured over the whole process life
was diluted below the 90 % saturation threshold. The window must be the
load's test time: checked on a recorded /proc/stat sequence (old and new
computations side by side), on the probe script with a real process that
outlives its window, and on a direct memtier probe on loopback whose
recorded window must match memtier's test time (memtier is the replay
stand-in, tests/memtier_replay.py, which lasts its test time like memtier).
"""

import os
import subprocess
import time

import pytest

import e2e_support
import memtier_replay
from perfkitbenchmarker import errors
from perfkitbenchmarker import measurement
from perfkitbenchmarker import redis_shard
from perfkitbenchmarker import virtual_machine
from perfkitbenchmarker import vm_util
from perfkitbenchmarker.load_generators import base
from perfkitbenchmarker.load_generators import concurrent
from perfkitbenchmarker.load_generators import memtier
from perfkitbenchmarker.providers.local import provider as local

PASSWORD = 'saturation-test-pw'
HZ = 100  # Jiffies per second in the recorded sequence.


def _Stat(when, busy_s, idle_s):
  """A timed /proc/stat snapshot of one core (cpu1) at wall time `when`."""
  user = int(busy_s * HZ)
  idle = int(idle_s * HZ)
  return (f'{when:.3f}\n'
          f'cpu  {user} 0 0 {idle} 0 0 0 0 0 0\n'
          f'cpu0 0 0 0 {idle + user} 0 0 0 0 0 0\n'
          f'cpu1 {user} 0 0 {idle} 0 0 0 0 0 0\n')


def test_recorded_sequence_old_and_new_windows_side_by_side():
  # memtier on core 1: 2 s of load at 96 % busy, then 1 s idle before exit.
  start = _Stat(100.0, 0.0, 0.0)
  load_end = _Stat(102.0, 1.92, 0.08)
  process_end = _Stat(103.0, 1.93, 1.07)
  busy, window = concurrent.BusyOverWindow(start, load_end, [1])
  assert window == pytest.approx(2.0)
  assert busy == pytest.approx(0.96)
  # The old computation: the same counters over the whole process life.
  old_busy, old_window = concurrent.BusyOverWindow(start, process_end, [1])
  assert old_window == pytest.approx(3.0)
  assert old_busy < 0.9 < busy  # Saturation only seen over the load window.


@pytest.mark.e2e
def test_script_snapshots_the_window_not_the_process_life(tmp_path):
  base_path = str(tmp_path / 'probe')
  with open(base_path + '.sh', 'w') as f:
    # The "tool" loads for ~1 s and then idles 1.5 s more before exiting.
    f.write(concurrent.Script(base_path, ['sleep 2.5'], timeout_s=30,
                              cpu_window_s=1.0))
  started = time.monotonic()
  out, err, rc = vm_util.RunLocal(f'bash {base_path}.sh', timeout=30)
  assert rc == 0, (out, err)
  assert time.monotonic() - started >= 2.5
  with open(base_path + '.stat0') as f0, open(base_path + '.stat1') as f1:
    _, window = concurrent.BusyOverWindow(f0.read(), f1.read(), None)
  # The process lives 2.5 s: a window under that is the 1 s window, late
  # only by scheduling on a loaded machine.
  assert 0.95 <= window < 2.4


@pytest.mark.e2e
def test_script_ends_the_window_when_the_tool_exits_early(tmp_path):
  base_path = str(tmp_path / 'probe')
  with open(base_path + '.sh', 'w') as f:
    f.write(concurrent.Script(base_path, ['sleep 0.3'], timeout_s=30,
                              cpu_window_s=20.0))
  started = time.monotonic()
  _, _, rc = vm_util.RunLocal(f'bash {base_path}.sh', timeout=30)
  # The sampler's 20 s window not awaited (a generous bound, for load).
  assert rc == 0 and time.monotonic() - started < 15
  with open(base_path + '.stat0') as f0, open(base_path + '.stat1') as f1:
    _, window = concurrent.BusyOverWindow(f0.read(), f1.read(), None)
  assert 0.25 <= window < 10  # The 0.3 s tool's life, not the 20 s window.


@pytest.fixture
def server():
  e2e_support.RequireTool('redis-server', 'apt-get install redis-server')
  port = e2e_support.FreePort()
  proc = subprocess.Popen(
      ['taskset', '-c', '0', 'redis-server', '--port', str(port), '--bind',
       '127.0.0.1', '--save', '', '--appendonly', 'no', '--requirepass',
       PASSWORD, '--user', redis_shard.LOAD_USER, 'on',
       '>' + redis_shard.LoadPassword(PASSWORD), '~*', '&*', '+@all'],
      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
  try:
    for _ in range(200):
      ping = subprocess.run(
          ['redis-cli', '-p', str(port), 'ping'], capture_output=True,
          text=True, check=False, env=dict(os.environ,
                                           REDISCLI_AUTH=PASSWORD))
      if ping.stdout.strip() == 'PONG':
        break
      time.sleep(0.05)
    else:
      pytest.fail(f'redis-server on port {port} did not answer')
    yield port
  finally:
    proc.terminate()
    proc.wait(timeout=10)


@pytest.mark.e2e
def test_memtier_probe_window_is_its_test_time(server, tmp_path):
  path = memtier_replay.Path()
  vm = local.LocalVirtualMachine(
      virtual_machine.VmSpec(cloud='Local', machine_type='local', num_cpus=1),
      'clients-0', 'clients', run_uri='tsat')
  vm.scratch_dir = str(tmp_path / 'pkb-client')
  os.makedirs(vm.scratch_dir)
  vm.cpu_set = [min(1, os.cpu_count() - 1)]
  generator = memtier.MemtierGenerator(vm, path)
  m = generator.Probe([base.Endpoint('127.0.0.1', server)], PASSWORD,
                      base.Workload(key_maximum=1000, data_size=32),
                      measurement.Load(1, 16), duration_s=2)
  assert m.throughput > 0
  # Measured over memtier's 2 s test time, not around the whole process.
  assert 1.9 <= generator.last_cpu_window_s <= 2.4
  assert m.metadata['client_cpu_window_s'] == pytest.approx(
      generator.last_cpu_window_s, abs=0.001)
  assert m.client_cpu_busy_fraction is not None


@pytest.mark.e2e
def test_a_probe_that_times_out_says_how_long_and_how_many(tmp_path):
  vm = local.LocalVirtualMachine(
      virtual_machine.VmSpec(cloud='Local', machine_type='local', num_cpus=1),
      'clients-0', 'clients', run_uri='ttime')
  vm.scratch_dir = str(tmp_path / 'pkb-client')
  os.makedirs(vm.scratch_dir)
  started = time.monotonic()
  with pytest.raises(errors.ProcessError) as failure:
    concurrent.RunSideBySide(vm, 'slow', [['sleep', '30']] * 3, timeout_s=1)
  # `timeout` ended them at 1 s, not the 30 s sleeps (generous, for load).
  assert time.monotonic() - started < 20
  assert str(failure.value).startswith(
      'sleep on clients-0 timed out after 1 s (3 processes side by side)')
