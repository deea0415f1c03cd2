"""Client CPU is measured over the load window, not the processes' life.

Issue 10 point 6: memtier idles its last second (3 s of process for a 2 s
probe), so the client core's busy share measured over the whole process life
was diluted below the 90 % saturation threshold. The window must be the
load's test time: checked on a recorded /proc/stat sequence (old and new
computations side by side), on the probe script with a real process that
outlives its window, and on a direct memtier probe on loopback whose
recorded window must be memtier's test time (memtier is the replay
stand-in, tests/memtier_replay.py, which lasts its test time, followed by
an idle second as memtier's). No wall-clock bound: each window is checked
against when its process ended, which the tool outlives by construction.
"""

import os
import subprocess
import time

import pytest

import e2e_support
import memtier_replay
import snapshot_text
from perfkitbenchmarker import errors
from perfkitbenchmarker import measurement
from perfkitbenchmarker import redis_shard
from perfkitbenchmarker import virtual_machine
from perfkitbenchmarker import vm_util
from perfkitbenchmarker.load_generators import base
from perfkitbenchmarker.load_generators import client_cpu
from perfkitbenchmarker.load_generators import concurrent
from perfkitbenchmarker.load_generators import memtier
from perfkitbenchmarker.load_generators import memtier_results
from perfkitbenchmarker.providers.local import provider as local

PASSWORD = 'saturation-test-pw'
HZ = 100  # Jiffies per second in the recorded sequence.


def _Stat(when, busy_s, idle_s):
  """A timed /proc/stat snapshot of one core (cpu1) at wall time `when`."""
  user = int(busy_s * HZ)
  idle = int(idle_s * HZ)
  return snapshot_text.Text(when, when, [
      f'cpu  {user} 0 0 {idle} 0 0 0 0 0 0',
      f'cpu0 0 0 0 {idle + user} 0 0 0 0 0 0',
      f'cpu1 {user} 0 0 {idle} 0 0 0 0 0 0'], clk=HZ)


def test_recorded_sequence_old_and_new_windows_side_by_side():
  # memtier on core 1: 2 s of load at 96 % busy, then 1 s idle before exit.
  start = _Stat(100.0, 0.0, 0.0)
  load_end = _Stat(102.0, 1.92, 0.08)
  process_end = _Stat(103.0, 1.93, 1.07)
  cpu = client_cpu.MeasureText(start, load_end, [1])
  assert cpu.window_s == pytest.approx(2.0)
  assert cpu.busy_fraction == pytest.approx(0.96)
  # The old computation: the same counters over the whole process life.
  old = client_cpu.MeasureText(start, process_end, [1])
  assert old.window_s == pytest.approx(3.0)
  # Saturation only seen over the load window.
  assert old.busy_fraction < 0.9 < cpu.busy_fraction


def _UntilThenIdle(path, idle_s):
  """A tool that runs until `path` exists (bounded), then idles `idle_s`
  more, as memtier idles its last second: it outlives the snapshot at
  `path` by at least `idle_s`, however late a loaded machine takes it."""
  return (f'bash -c \'for _ in $(seq 600); do [ -e {path} ] && break; '
          f'sleep 0.05; done; sleep {idle_s}\'')


def _Ended(rc_path):
  """When the script's tool `i` ended, from its <base>.<i>.rc line."""
  with open(rc_path) as f:
    code, _, end = f.read().split()
  assert code == '0'
  return float(end)


@pytest.mark.e2e
@pytest.mark.usefixtures('shipped_scripts')
def test_script_snapshots_the_window_not_the_process_life(tmp_path):
  base_path = str(tmp_path / 'probe')
  with open(base_path + '.sh', 'w') as f:
    # The "tool" loads until the window's snapshot, then idles 1 s more.
    f.write(concurrent.Script(base_path,
                              [_UntilThenIdle(base_path + '.stat1', 1)],
                              timeout_s=30, cpu_window_s=1.0))
  out, err, rc = vm_util.RunLocal(f'bash {base_path}.sh', timeout=30)
  assert rc == 0, (out, err)
  with open(base_path + '.stat0') as f0, open(base_path + '.stat1') as f1:
    stat0, stat1 = f0.read(), f1.read()
  window = client_cpu.MeasureText(stat0, stat1, None).window_s
  # The whole 1 s window, and it ended while the tool ran: at least its
  # idle second before the tool's end, not at the end of its life.
  assert window >= 1.0
  ended = _Ended(base_path + '.0.rc')
  assert client_cpu.Snapshot.Parse(stat1).wall_s + 1 <= ended


@pytest.mark.e2e
@pytest.mark.usefixtures('shipped_scripts')
def test_script_ends_the_window_when_the_tool_exits_early(tmp_path):
  base_path = str(tmp_path / 'probe')
  with open(base_path + '.sh', 'w') as f:
    f.write(concurrent.Script(base_path, ['sleep 0.3'], timeout_s=30,
                              cpu_window_s=600.0))
  # The sampler's 600 s window is not awaited: RunLocal's 60 s would end
  # the script (rc -9).
  _, _, rc = vm_util.RunLocal(f'bash {base_path}.sh', timeout=60)
  assert rc == 0
  with open(base_path + '.stat0') as f0, open(base_path + '.stat1') as f1:
    stat1 = f1.read()
    window = client_cpu.MeasureText(f0.read(), stat1, None).window_s
  # The 0.3 s tool's life, taken when it ended, not the 600 s window.
  assert 0.3 <= window < 600
  ended = _Ended(base_path + '.0.rc')
  assert client_cpu.Snapshot.Parse(stat1).wall_s >= ended


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
  vm = local.LocalVirtualMachine(
      virtual_machine.VmSpec(cloud='Local', machine_type='local', num_cpus=1),
      'clients-0', 'clients', run_uri='tsat')
  vm.scratch_dir = str(tmp_path / 'pkb-client')
  os.makedirs(vm.scratch_dir)
  vm.cpu_set = [min(1, os.cpu_count() - 1)]
  # memtier idles its last second: so does the stand-in here, for 1 s after
  # the window's snapshot (the probe's first: memtier-1.stat1).
  stat1 = f'{vm.scratch_dir}/memtier-1.stat1'
  generator = memtier.MemtierGenerator(vm, memtier_replay.Executable(
      str(tmp_path), idle_until=stat1))
  m = generator.Probe([base.Endpoint('127.0.0.1', server)], PASSWORD,
                      base.Workload(key_maximum=1000, data_size=32),
                      measurement.Load(1, 16), duration_s=2)
  assert m.throughput > 0
  # Measured over memtier's whole 2 s test time, and ended while memtier
  # was still there (its idle second after), not around its whole life.
  cpu = generator.last_cpu
  assert cpu.window_s >= 2.0
  with open(stat1 + '.ended') as f:
    assert cpu.window_end + 1 <= float(f.read())
  assert m.metadata['client_cpu_window_s'] == pytest.approx(
      cpu.window_s, abs=0.001)
  assert m.client_cpu_busy_fraction is not None


@pytest.mark.e2e
@pytest.mark.timeout(25)
def test_a_probe_that_times_out_says_how_long_and_how_many(tmp_path):
  vm = local.LocalVirtualMachine(
      virtual_machine.VmSpec(cloud='Local', machine_type='local', num_cpus=1),
      'clients-0', 'clients', run_uri='ttime')
  vm.scratch_dir = str(tmp_path / 'pkb-client')
  os.makedirs(vm.scratch_dir)
  # `timeout` ends them at 1 s, not after the 30 s sleeps (the mark above is
  # the hang guard).
  with pytest.raises(errors.ProcessError) as failure:
    concurrent.RunSideBySide(vm, 'slow', [['sleep', '30']] * 3, timeout_s=1)
  assert str(failure.value).startswith(
      'sleep on clients-0 timed out after 1 s (3 processes side by side)')


@pytest.mark.e2e
@pytest.mark.timeout(25)
def test_a_tool_whose_timeout_was_killed_does_not_outlive_its_probe(
    tmp_path):
  """SIGKILL to a probe's `timeout` wrapper (not to memtier: `pgrep -f
  memtier | head -1` picked the wrapper) left memtier running, reparented,
  after the probe and after pkb; teardown only said it was left in place.
  The probe stops what its commands left in its group."""
  vm = local.LocalVirtualMachine(
      virtual_machine.VmSpec(cloud='Local', machine_type='local', num_cpus=1),
      'clients-0', 'clients', run_uri='tkill')
  vm.scratch_dir = str(tmp_path / 'pkb-client')
  os.makedirs(vm.scratch_dir)
  pid_file = tmp_path / 'tool.pid'
  # The tool kills its own `timeout` ($PPID), then goes on as `sleep`.
  tool = ['bash', '-c', f'echo $$ > {pid_file}; kill -KILL $PPID; '
          'exec sleep 30']
  with pytest.raises(errors.ProcessError) as failure:
    concurrent.RunSideBySide(vm, 'orphan', [tool], timeout_s=20)
  assert 'killed by SIGKILL' in str(failure.value)
  pid = int(pid_file.read_text())
  try:
    with open(f'/proc/{pid}/stat') as stat:
      state = stat.read().rsplit(')', 1)[1].split()[0]
  except FileNotFoundError:
    state = 'gone'
  if state not in ('gone', 'Z'):
    os.kill(pid, 9)
  assert state in ('gone', 'Z')


@pytest.mark.e2e
@pytest.mark.timeout(25)
def test_a_tool_that_retries_an_error_reply_is_stopped_at_the_first(
    tmp_path):
  """redis-benchmark --cluster retries a CLUSTERDOWN a second a connection
  until its request count is done: a 3 s probe of a cluster that stayed
  down ran to its bound, 282 s, before the run said so in one line."""
  vm = local.LocalVirtualMachine(
      virtual_machine.VmSpec(cloud='Local', machine_type='local', num_cpus=1),
      'clients-0', 'clients', run_uri='tstop')
  vm.scratch_dir = str(tmp_path / 'pkb-client')
  os.makedirs(vm.scratch_dir)
  said = 'Error from server 127.0.0.1:7001: CLUSTERDOWN The cluster is down.'
  tool = ['bash', '-c', f'for i in 1 2 3 4 5 6 7 8 9; do echo "{said}" >&2; '
          'sleep 2; done']
  with pytest.raises(errors.ProcessError) as failure:
    concurrent.RunSideBySide(vm, 'down', [tool], timeout_s=20,
                             stop_on='Error from server')
  message = str(failure.value)
  assert message.startswith('bash on clients-0 was stopped after '), message
  assert message.endswith(f'at its first error reply, which it retries '
                          f'until its bound: {said}'), message
  seconds = float(message.split('stopped after ')[1].split(' s ')[0])
  assert seconds < 10


def test_a_shard_out_of_connections_says_which_limit_and_flags():
  # 'ulimit -n 1024; ./pkb.py --memtier_clients=1024 ...' stopped at its
  # first probe on 'Error from server: ERR max number of clients reached':
  # redis-server had lowered its maxclients to 992, which nothing said.
  said = ('WARNING: Could not fetch server CONFIG | Error from server: ERR '
          'max number of clients reached')
  hint = memtier_results.FailureHint(said)
  assert hint.startswith('; the shard took no more connections: Redis lowers '
                         'maxclients to its open-file limit less 32')
  assert 'ulimit -Hn' in hint and '--memtier_clients' in hint
  assert memtier_results.FailureHint('Connection refused') == ''


@pytest.mark.e2e
@pytest.mark.timeout(25)
def test_a_stderr_past_its_bound_comes_back_cut(tmp_path):
  """memtier writes a line per error reply: a preload of 1M keys refused by
  maxmemory wrote 100 MB of stderr, all of it in pkb's memory (663 MB
  RSS). Past 4 MiB a tool's stderr comes back as its first and last 2 MiB
  around one line saying how much was left out."""
  vm = local.LocalVirtualMachine(
      virtual_machine.VmSpec(cloud='Local', machine_type='local', num_cpus=1),
      'clients-0', 'clients', run_uri='tcut')
  vm.scratch_dir = str(tmp_path / 'pkb-client')
  os.makedirs(vm.scratch_dir)
  loud = ['bash', '-c', 'echo first >&2; head -c 6000000 /dev/zero | '
          'tr "\\0" x >&2; echo last >&2']
  out, = concurrent.RunSideBySide(vm, 'loud', [loud], timeout_s=20)
  half = 2 * 1024 * 1024
  assert out.stderr.startswith('first\n') and out.stderr.endswith('last\n')
  size = len('first\n') + 6000000 + len('last\n')
  cut = f'\n{concurrent.CUT_MARK}{size - 2 * half} bytes left out\n'
  assert out.stderr == out.stderr[:half] + cut + out.stderr[-half:]
