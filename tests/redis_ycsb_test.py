"""redis_ycsb for real on this machine: all five data types, and failures.

The local preset (configs/ycsb_tair_local.yaml, one cell per data type) runs
as the README says, with YCSB and PKB's binding from scripts/build_ycsb.sh
against real redis-server shards on 127.0.0.1. A YCSB phase whose operations
fail raises, whatever YCSB's exit code (it exits 0 then).
"""

import os
import socket
import subprocess
import time

import pytest

import sys

import e2e_support as e2e
import pkb_forkserver
from perfkitbenchmarker import errors
from perfkitbenchmarker import virtual_machine
from perfkitbenchmarker.linux_packages import ycsb
from perfkitbenchmarker.providers.local import provider as local
from perfkitbenchmarker.study import ycsb_runner

# Every test here starts a process (tests/tier_guard.py).
pytestmark = pytest.mark.e2e

GROUPS = ('string', 'hash', 'list', 'set', 'zset')


def _RequireBuild():
  e2e.RequireTool('java', 'scripts/setup.sh')
  if not os.path.exists(os.path.join(ycsb.LOCAL_BUILD_DIR, ycsb.JAR_NAME)):
    e2e.Unavailable('the YCSB build', 'scripts/build_ycsb.sh')


def _JavaLeftovers(run_uri):
  found = []
  for pid in os.listdir('/proc'):
    if not pid.isdigit():
      continue
    try:
      with open(f'/proc/{pid}/cmdline', 'rb') as f:
        cmdline = f.read().replace(b'\0', b' ').decode(errors='replace')
    except OSError:
      continue
    if 'site.ycsb.Client' in cmdline and f'pkb-{run_uri}' in cmdline:
      found.append(cmdline)
  return found


def test_local_preset_all_five_data_types(tmp_path):
  _RequireBuild()
  start = time.monotonic()
  proc = pkb_forkserver.Run(
      [sys.executable, e2e.PKB,
       '--benchmark_config_file=configs/ycsb_tair_local.yaml',
       f'--results_dir={tmp_path}',
       # Shorter than the preset, two cells at a time (correctness, not
       # figures: cells on 2 cores load each other), and a cap a busy CI
       # machine cannot push every probe over.
       '--ycsb_record_count=300', '--ycsb_operation_count=600',
       '--run_processes=2', '--ycsb_latency_cap=200',
       # YCSB's answer is one probe per thread count: unconfirmed (exit 4).
       '--accept_unconfirmed'],
      cwd=e2e.REPO, timeout=170, check=False)
  assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
  # The matrix's own directory is in the results root too (3339c4c).
  runs = sorted(set(os.listdir(tmp_path)) - {'matrix'})
  assert len(runs) == 5
  seen = set()
  for run_uri in runs:
    rows = e2e.Samples(str(tmp_path), run_uri)
    labels = [e2e.Labels(r) for r in rows]
    group = labels[0]['ycsb_command_group']
    seen.add(group)
    assert all(l['ycsb_command_group'] == group for l in labels)
    assert labels[0]['engine'] == 'redis'
    assert labels[0]['ycsb_field_count'] == ('1' if group == 'string'
                                             else '10')
    by_metric = {}
    for row, l in zip(rows, labels):
      by_metric.setdefault(row['metric'], []).append((row, l))
    phases = {l['ycsb_phase'] for _, l in by_metric['ycsb_throughput']}
    assert phases == {'load', 'run'}
    ops = {l['operation'] for _, l in by_metric['ycsb_average_latency']}
    assert ops == {'INSERT', 'READ', 'UPDATE'}
    assert all(r['unit'] == 'us' for r, _ in by_metric['ycsb_p99_latency'])
    assert {l['return_code'] for _, l in by_metric['ycsb_return_count']} == {
        'OK'}
    capped = {l['ycsb_workload']: r['value']
              for r, l in by_metric['latency_capped_throughput']}
    assert set(capped) == {'workloada', 'workloadc'}
    assert all(v > 0 for v in capped.values())
    assert len(by_metric['price_performance']) == 2
    assert {l['threads'] for _, l in by_metric['throughput']} == {'1', '2'}
    assert e2e.LeftoverProcesses(str(tmp_path), run_uri) == []
    assert _JavaLeftovers(run_uri) == []
  assert seen == set(GROUPS)
  print(f'five data types in {time.monotonic() - start:.1f} s')


def _FreePort():
  with socket.socket() as s:
    s.bind(('127.0.0.1', 0))
    return s.getsockname()[1]


@pytest.fixture
def redis(tmp_path):
  """A real redis-server on loopback with a password, stopped afterwards."""
  port = _FreePort()
  proc = subprocess.Popen(
      ['redis-server', '--port', str(port), '--bind', '127.0.0.1',
       '--save', '', '--appendonly', 'no', '--requirepass', 'runpw',
       '--dir', str(tmp_path)],
      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
  try:
    for _ in range(100):
      with socket.socket() as s:
        if s.connect_ex(('127.0.0.1', port)) == 0:
          break
      time.sleep(0.05)
    yield port
  finally:
    proc.terminate()
    proc.wait(timeout=10)


def _Client(tmp_path):
  vm = local.LocalVirtualMachine(
      virtual_machine.VmSpec('Local', 'local'), 'clients-0', 'clients',
      run_uri='ytest')
  vm.scratch_dir = str(tmp_path)
  return vm, ycsb.Installed(vm)


def _Phase(vm, install, port, password, group, phase, workload):
  vm.WriteFile(f'{vm.scratch_dir}/{ycsb_runner.CONNECTION_FILE}',
               ycsb.ConnectionProperties([('127.0.0.1', port)], 'default',
                                         password, False, 2000))
  fields = 1 if group == 'string' else 10
  props = {'recordcount': 200, 'operationcount': 200, 'fieldcount': fields,
           'fieldlength': 16, 'redis.command_group': group}
  return ycsb_runner.RunPhase(vm, install, phase, workload, props, 1, 200,
                              timeout_s=60)


def test_phase_with_failed_operations_raises(tmp_path, redis):
  _RequireBuild()
  vm, install = _Client(tmp_path)
  result = _Phase(vm, install, redis, 'runpw', 'hash', 'load', 'workloadc')
  assert result.Errors(200) == []
  # Records stored as hashes read as strings: WRONGTYPE on every read.
  with pytest.raises(errors.ProcessError, match='READ returned ERROR'):
    _Phase(vm, install, redis, 'runpw', 'string', 'run', 'workloadc')
  # A wrong password: YCSB exits 0, every operation fails, the phase raises.
  with pytest.raises(errors.ProcessError, match='had errors'):
    _Phase(vm, install, redis, 'wrong', 'hash', 'run', 'workloadc')


def test_binding_refuses_string_with_many_fields(tmp_path, redis):
  _RequireBuild()
  vm, install = _Client(tmp_path)
  vm.WriteFile(f'{vm.scratch_dir}/{ycsb_runner.CONNECTION_FILE}',
               ycsb.ConnectionProperties([('127.0.0.1', redis)], 'default',
                                         'runpw', False, 2000))
  with pytest.raises(errors.ProcessError, match='fieldcount=1'):
    ycsb_runner.RunPhase(
        vm, install, 'load', 'workloada',
        {'recordcount': 5, 'operationcount': 5, 'fieldcount': 10,
         'redis.command_group': 'string'}, 1, 5, timeout_s=60)


def test_cluster_mode_through_jedis_cluster(tmp_path):
  """A 3-shard Redis Cluster: the binding's JedisCluster logs in as the
  restricted load user, reads the slots and spreads the records."""
  _RequireBuild()
  proc, run_uri = e2e.Run(
      ['--benchmarks=redis_ycsb', '--ycsb_command_group=zset',
       '--ycsb_record_count=300', '--ycsb_operation_count=600',
       '--ycsb_max_threads=1', '--ycsb_workloads=workloada',
       '--ycsb_latency_cap=200', '--redis_server_cluster_mode',
       '--redis_total_num_processes=3'], str(tmp_path))
  assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
  assert 'Load verified: 300 keys.' in proc.stdout
  rows = e2e.Samples(str(tmp_path), run_uri)
  labels = [e2e.Labels(r) for r in rows]
  assert labels[0]['redis_server_cluster_mode'] == 'True'
  assert labels[0]['redis_shards_total'] == '3'
  assert any(r['metric'] == 'latency_capped_throughput' for r in rows)
  assert e2e.LeftoverProcesses(str(tmp_path), run_uri) == []
  assert _JavaLeftovers(run_uri) == []


def _LiveShards(results, run_uri):
  return sorted(r['name'] for r in e2e.Record(results, run_uri)['resources']
                if r['kind'] == 'redis_process' and r['status'] == 'created')


def _RefusedLater(results, run_uri, small, shards, flag, needle):
  """A --run_stage=run with `flag` over the prepared run: refused in one
  line naming `needle`, exit 2, no run-phase sample, the shards left
  running and no cleanup."""
  proc, _ = e2e.Run(['--run_stage=run', flag] + small, results,
                    run_uri=run_uri)
  assert proc.returncode == 2, proc.stdout[-2000:] + proc.stderr[-2000:]
  stopped = [line for line in proc.stderr.splitlines()
             if line.startswith('pkb: redis_ycsb stopped: ')]
  assert len(stopped) == 1 and needle in stopped[0], proc.stderr
  assert 'Traceback' not in proc.stderr
  assert not [r for r in e2e.Samples(results, run_uri)
              if e2e.Labels(r).get('ycsb_phase') == 'run']
  assert _LiveShards(results, run_uri) == shards
  assert 'cleanup' not in e2e.Record(results, run_uri)['stages_done']


def test_a_later_stage_with_other_server_or_replica_flags_is_refused(
    tmp_path):
  # redis_ycsb's --run_stage=run measured the shards prepare started but
  # its samples named the server its own flags describe (io-threads 2 on a
  # server started without them), as redis_memtier's did before 6f5658b;
  # and it took its primaries from its own flags: with
  # --redis_replicas_per_primary=1 added to a run prepared without it, YCSB
  # was given no primary (1 shard // 2) and every operation failed (exit
  # 1). Each refusal is one line, exit 2, and leaves the shards running.
  # Another --redis_total_num_processes measures the recorded shards, as
  # redis_memtier's does, and its samples name their count (they named
  # the flag's 2 for the 1 shard measured). One prepared run for all.
  _RequireBuild()
  results = str(tmp_path)
  run_uri = e2e.NewRunUri()
  small = ['--benchmarks=redis_ycsb', '--ycsb_record_count=300',
           '--ycsb_operation_count=600', '--ycsb_max_threads=1',
           '--ycsb_workloads=workloada', '--ycsb_latency_cap=200']
  try:
    proc, _ = e2e.Run(['--run_stage=provision,prepare'] + small, results,
                      run_uri=run_uri)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    shards = _LiveShards(results, run_uri)
    assert len(shards) == 1
    _RefusedLater(results, run_uri, small, shards,
                  '--redis_server_io_threads=2', 'io-threads=2')
    _RefusedLater(
        results, run_uri, small, shards, '--redis_replicas_per_primary=1',
        '1 shards are 1 primaries and 0 replicas, not the 0 primaries these '
        'flags make of them; give the --redis_replicas_per_primary')
    proc, _ = e2e.Run(['--run_stage=run', '--redis_total_num_processes=2']
                      + small, results, run_uri=run_uri)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    labels = [e2e.Labels(r) for r in e2e.Samples(results, run_uri)
              if e2e.Labels(r).get('ycsb_phase') == 'run']
    assert labels and {(l['redis_total_num_processes'],
                        l['redis_shards_total']) for l in labels} == {
                            ('1', '1')}
  finally:
    proc, _ = e2e.Run(['--run_stage=teardown'], results, run_uri=run_uri)
  assert proc.returncode == 0, proc.stderr
  assert e2e.LeftoverProcesses(results, run_uri) == []
  assert _JavaLeftovers(run_uri) == []


def test_cloud_preset_dry_runs_with_cost(tmp_path):
  proc = pkb_forkserver.Run(
      [sys.executable, e2e.PKB,
       '--benchmark_config_file=configs/ycsb_tair_cloud.yaml', '--dry_run',
       f'--results_dir={tmp_path}'],
      cwd=e2e.REPO, timeout=120, check=False)
  assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
  for group in GROUPS:
    assert f'ycsb_command_group={group}' in proc.stdout
  assert 'Total: 17 cell(s)' in proc.stdout
  assert "PKB's binding: records as zset, 10 field(s) x 1024 B" in proc.stdout
  assert 'estimated $' in proc.stdout
  assert os.listdir(tmp_path) == [] or not any(
      os.path.exists(os.path.join(tmp_path, d, 'run_record.json'))
      for d in os.listdir(tmp_path))


def test_second_build_is_skipped():
  _RequireBuild()
  jar = os.path.join(ycsb.LOCAL_BUILD_DIR, ycsb.JAR_NAME)
  built = os.stat(jar).st_mtime_ns
  proc = subprocess.run([os.path.join(e2e.REPO, 'scripts', 'build_ycsb.sh')],
                        capture_output=True, text=True, timeout=60,
                        check=False)
  assert proc.returncode == 0, proc.stderr
  # Skipped, shown by what it did rather than how long it took: it says so
  # and the jar it would rebuild is untouched.
  assert 'up to date' in proc.stdout
  assert os.stat(jar).st_mtime_ns == built
