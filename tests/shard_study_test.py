"""--redis_optimize_shards: bounds, shard restarts, and a whole Local run.

The restart test starts real redis-server processes on loopback through a
Local VM; the end-to-end test runs ./pkb.py as a user would, with tiny
settings (at most 3 shards, 1 s probes, the load-proof cap of
tests/e2e_support.py so that a busy test machine cannot push a probe over
it: it checks the orchestration and the samples, not the figures).
"""

import os
import types

import pytest

import e2e_support as e2e
from perfkitbenchmarker import errors
from perfkitbenchmarker import measurement
from perfkitbenchmarker import engines
from perfkitbenchmarker import process_stat
from perfkitbenchmarker import redis_shard
from perfkitbenchmarker import virtual_machine
from perfkitbenchmarker.linux_packages import redis_server
from perfkitbenchmarker.providers.local import provider as local
from perfkitbenchmarker.search import driver as search_driver
from perfkitbenchmarker.study import deployment
from perfkitbenchmarker.study import options
from perfkitbenchmarker.study import search_options
from perfkitbenchmarker.study import shard_study

needs_redis = e2e.NeedsTools('redis-server', 'redis-cli',
                             how='scripts/setup.sh')


def _Shards(**values):
  return search_options.ShardSearchOptions(**dict(dict(enabled=True), **values))


def test_bounds_start_at_half_the_vcpus():
  assert _Shards().Bounds(1) == (1, 1, 2)
  assert _Shards().Bounds(16) == (1, 8, 16)
  assert _Shards(max_shards=3).Bounds(16) == (1, 3, 3)
  assert _Shards(min_shards=4).Bounds(2) == (4, 4, 4)
  assert _Shards().Bounds(None) == (1, 1, 2)


def test_next_point_starts_at_the_best_load_over_all_shards():
  best = measurement.Measurement(measurement.Load(1, 48), 1e5, 0.9)
  result = search_driver.SearchResult((), best, 0, 1.0, 'adaptive', '')
  # pylint: disable=protected-access
  point = shard_study._Point(2, 0, {}, (), result)
  start = shard_study._StartConnections
  assert start(_Shards(), point, 4) == 24
  assert start(_Shards(), point, 1) == 96
  assert start(_Shards(reuse_load=False), point, 4) is None
  assert start(_Shards(), None, 4) is None


def test_the_plan_counts_the_ports_every_count_of_the_search_takes(
    pkb_flags):
  # Each count starts on fresh ports: '--redis_start_port=65532
  # --redis_optimize_shards --redis_min_shards=2 --redis_max_shards=3'
  # passed the plan, searched 2 shards on 65532-65533 and stopped at the
  # second count with 'No free port for redis-server on servers-0'.
  from perfkitbenchmarker.linux_benchmarks import redis_memtier_benchmark  # pylint: disable=g-import-not-at-top
  pkb_flags.redis_optimize_shards = True
  pkb_flags.redis_min_shards = 2
  pkb_flags.redis_max_shards = 3
  spec = types.SimpleNamespace(CachedOptions=lambda build: build(),
                               ServerVcpus=lambda: 1)
  pkb_flags.redis_start_port = 65531
  redis_memtier_benchmark.PlanWarnings(spec)
  pkb_flags.redis_start_port = 65532
  with pytest.raises(errors.UsageError, match='needs ports up to 65536'):
    redis_memtier_benchmark.PlanWarnings(spec)
  assert _Shards(min_shards=2, max_shards=3).MostShardsStarted(1) == (2, 5)
  assert _Shards().MostShardsStarted(16) == (8, 100)
  assert _Shards(max_points=1).MostShardsStarted(16) == (1, 16)


def test_prepare_starts_the_search_at_its_first_count(pkb_flags,
                                                     monkeypatch):
  # Prepare started --redis_total_num_processes (1) and preloaded it, then
  # the search restarted the shards at its first count and preloaded
  # again; redis-benchmark refused that one-primary cluster at its preload
  # ('--redis_min_shards=2 --redis_server_cluster_mode' stopped there).
  from perfkitbenchmarker.linux_benchmarks import redis_memtier_benchmark  # pylint: disable=g-import-not-at-top
  pkb_flags.redis_optimize_shards = True
  pkb_flags.redis_min_shards = 2
  pkb_flags.redis_max_shards = 8
  deployed = []

  def Deploy(spec, opts, engine, shards_per_vm=None):
    deployed.append(shards_per_vm or opts.server.shards_per_vm)
    raise KeyboardInterrupt  # What follows the deployment is not tested.

  monkeypatch.setattr(redis_memtier_benchmark.deployment, 'Deploy', Deploy)
  for vcpus, first in ((1, 2), (12, 6), (32, 8)):
    spec = types.SimpleNamespace(
        CachedOptions=lambda build: build(),
        vm_groups={'servers': [types.SimpleNamespace(num_cpus=vcpus)]})
    with pytest.raises(KeyboardInterrupt):
      redis_memtier_benchmark.Prepare(spec)
    assert deployed.pop() == first
  pkb_flags.redis_optimize_shards = False
  with pytest.raises(KeyboardInterrupt):
    redis_memtier_benchmark.Prepare(spec)
  assert deployed.pop() == 1


@pytest.mark.e2e
@needs_redis
def test_restart_keeps_the_password_and_uses_fresh_ports(tmp_path,
                                                         monkeypatch):
  # Its workspace under tmp_path, removed with it (the VM is not deleted).
  monkeypatch.setattr(local, 'SCRATCH_ROOT', str(tmp_path))
  vm = local.LocalVirtualMachine(
      virtual_machine.VmSpec(cloud='Local', machine_type='local',
                             memory_mib=1024), 'servers-0', 'servers')
  vm.Create()
  password = redis_shard.NewPassword()
  spec = types.SimpleNamespace(vm_groups={'servers': [vm]}, record=None,
                               metadata={})
  opts = types.SimpleNamespace(server=options.ServerOptions(
      memory_fraction=0.1))
  engine = engines.Get('redis')
  first = deployment.Deployment(
      engine='redis', engine_version='x', cluster_mode=False,
      shards_per_vm=1, primaries=1,
      processes=deployment.StartShards(engine, [vm], 1, password,
                                       opts.server, None, 7001),
      generators=(), password=password)
  second = first
  try:
    second = deployment.Restart(spec, first, opts, engine, 2,
                                first.processes[0].port + 1)
    assert len(second.processes) == 2
    assert second.shards_per_vm == 2 and second.password == password
    assert min(p.port for p in second.processes) > first.processes[0].port
    for proc in second.processes:
      assert redis_server.Cli(vm, '127.0.0.1', proc.port, password,
                              'PING').strip() == 'PONG'
    pid = first.processes[0].pid
    stat = process_stat.Read(pid)
    assert stat is None or stat.state == 'Z'
    assert [s.port for s in second.shards] == [
        p.port for p in second.processes]
  finally:
    for proc in second.processes + first.processes:
      proc.Delete()


@pytest.mark.e2e
@needs_redis
def test_local_shard_search_reports_every_point_and_the_best(tmp_path):
  proc, run_uri = e2e.Run(
      ['--redis_optimize_shards', '--redis_max_shards=3',
       '--memtier_run_duration=1', '--memtier_key_maximum=5000',
       *e2e.LOAD_PROOF_CAP,
       '--memtier_confirm_repeats=2', '--memtier_max_probes=5',
       '--timeout_minutes=3'],
      str(tmp_path))
  assert proc.returncode == 0, proc.stderr[-2000:]
  rows = e2e.Samples(str(tmp_path), run_uri)
  labelled = [(r, e2e.Labels(r)) for r in rows]
  points = {}
  for row, labels in labelled:
    if labels.get('shard_search_role') == 'point':
      points.setdefault(labels['shard_search_point'], set()).add(
          (labels['redis_total_num_processes'], row['metric']))
  assert len(points) >= 2
  for metrics in points.values():
    assert len({shards for shards, _ in metrics}) == 1
    assert {'throughput', 'latency_capped_throughput',
            'price_performance'} <= {m for _, m in metrics}
  optimal = [(r, l) for r, l in labelled
             if r['metric'] == 'optimal_shard_count']
  assert len(optimal) == 1
  row, labels = optimal[0]
  assert 1 <= row['value'] <= 3
  assert labels['redis_total_num_processes'] == str(int(row['value']))
  optimum = {r['metric']: l for r, l in labelled
             if l.get('shard_search_role') == 'optimum'}
  assert {'latency_capped_throughput', 'price_performance',
          'optimal_shard_count'} <= set(optimum)
  assert optimum['latency_capped_throughput']['shard_search_point'] == labels[
      'shard_search_point']
  assert 'Shard search (capped ops/s per shard count)' in proc.stdout
  record = e2e.Record(str(tmp_path), run_uri)
  shards = [r for r in record['resources'] if r['kind'] == 'redis_process']
  assert len({r['name'] for r in shards}) == len(shards)
  assert all(r['status'] == 'deleted' for r in record['resources'])
  assert e2e.LeftoverProcesses(str(tmp_path), run_uri) == []


def test_benchmarks_without_the_shard_search_refuse_its_flag(pkb_flags):
  # './pkb.py --benchmarks=redis_ycsb --redis_optimize_shards' (and
  # redis_enterprise's) ran one shard count, the samples saying
  # redis_total_num_processes 1 and nothing of the search asked for.
  from perfkitbenchmarker.enterprise import options as enterprise_options  # pylint: disable=g-import-not-at-top
  from perfkitbenchmarker.study import ycsb_options  # pylint: disable=g-import-not-at-top
  readers = {'redis_ycsb': ycsb_options.YcsbStudyOptions.FromFlags,
             'redis_enterprise': enterprise_options.EnterpriseOptions.FromFlags}
  for benchmark, read in readers.items():
    read(pkb_flags)
    pkb_flags.redis_optimize_shards = True
    with pytest.raises(errors.UsageError) as refused:
      read(pkb_flags)
    message = str(refused.value)
    assert '\n' not in message and message.startswith(
        f'--redis_optimize_shards is not available for {benchmark}'), message
    pkb_flags.redis_optimize_shards = False
