"""A preload split over the client VMs: each writes its own slice, at once.

The slice helper is pure; the spreading step runs on load generator doubles
(their own threads, one failing); real Local runs with two client VMs check
that each client wrote half and DBSIZE still counts the whole range on every
standalone shard, with memtier (its replay stand-in, tests/memtier_replay.py,
which writes preloads for real) and with redis-benchmark.
"""

import glob
import itertools
import json
import os
import re
import subprocess
import threading

import pytest

import e2e_support as e2e
import memtier_replay

from perfkitbenchmarker import errors
from perfkitbenchmarker.load_generators import base
from perfkitbenchmarker.load_generators import commands
from perfkitbenchmarker.load_generators import memtier
from perfkitbenchmarker.study import deployment

# The slice helper ------------------------------------------------------------


@pytest.mark.parametrize('low,high,parts', [
    (1, 100000, 6), (1, 50_000_000, 6), (0, 9, 3), (5, 5, 1), (1, 7, 7),
    (1, 2, 6), (10, 19, 4), (-3, 3, 2), (1, 100001, 2)])
def test_slices_cover_the_range_without_gaps_or_overlaps(low, high, parts):
  slices = base.SplitKeyRange(low, high, parts)
  count = high - low + 1
  assert len(slices) == min(parts, count)
  assert slices[0].first == low and slices[-1].last == high
  for before, after in zip(slices, slices[1:]):
    assert after.first == before.last + 1  # contiguous: no gap, no overlap
  sizes = [s.count for s in slices]
  assert sum(sizes) == count
  assert min(sizes) >= 1 and max(sizes) - min(sizes) <= 1


def test_slices_of_an_even_and_an_uneven_range():
  assert base.SplitKeyRange(1, 20000, 2) == [base.KeySlice(1, 10000),
                                             base.KeySlice(10001, 20000)]
  # The first slices take the leftover keys.
  assert [s.count for s in base.SplitKeyRange(1, 11, 4)] == [3, 3, 3, 2]
  assert str(base.KeySlice(10001, 20000)) == '10,001-20,000'


def test_split_refuses_no_parts_and_empty_ranges():
  with pytest.raises(ValueError, match='0 parts'):
    base.SplitKeyRange(1, 10, 0)
  with pytest.raises(ValueError, match='Empty key range'):
    base.SplitKeyRange(10, 9, 2)


def test_a_slice_must_lie_in_the_workload_range():
  w = base.Workload(key_minimum=1, key_maximum=100)
  assert w.Slice(None) == base.KeySlice(1, 100)
  assert w.Slice(base.KeySlice(51, 100)) == base.KeySlice(51, 100)
  for bad in (base.KeySlice(0, 10), base.KeySlice(90, 101),
              base.KeySlice(20, 10)):
    with pytest.raises(ValueError, match='not inside'):
      w.Slice(bad)


# What each tool writes for a slice -------------------------------------------


def test_redis_benchmark_resp_of_a_slice_is_numbered_from_key_minimum():
  # redis-benchmark reads key:0 .. key:N-1 whatever --memtier_key_minimum is.
  w = base.Workload(key_minimum=101, key_maximum=110, data_size=3)
  halves = [commands.RedisBenchmarkPreloadResp(w, key_slice=s)
            for s in base.SplitKeyRange(101, 110, 2)]
  keys = [re.findall(r'key:(\d{12})', ''.join(h)) for h in halves]
  assert keys == [[f'{i:012d}' for i in range(5)],
                  [f'{i:012d}' for i in range(5, 10)]]
  assert ''.join(halves[0]) + ''.join(halves[1]) == ''.join(
      commands.RedisBenchmarkPreloadResp(w))
  tagged = ''.join(commands.RedisBenchmarkPreloadResp(
      w, 'ab', key_slice=base.KeySlice(110, 110)))
  assert re.findall(r'key:\{ab\}:\d+', tagged) == ['key:{ab}:000000000009']


@pytest.mark.parametrize('keys,clients', [
    (100000, 4), (5, 3), (4, 4), (3, 3), (2, 2), (1, 1)])
def test_memtier_preload_clients_shrink_for_small_slices(keys, clients):
  assert memtier.PreloadClients(keys) == clients
  # The command builder accepts what the generator chooses.
  w = base.Workload(key_minimum=7, key_maximum=7 + keys - 1)
  commands.MemtierPreloadCommand('memtier', base.Endpoint('h', 1), None, w,
                                 clients=clients, key_pattern='P:P')


# The spreading step, on doubles ----------------------------------------------


class Vm:

  def __init__(self, name):
    self.name = name


class Generator(base.LoadGenerator):
  """Records what it was asked to write, and on which thread."""

  NAME = 'double'

  def __init__(self, fail=None, setup='tags'):
    self.fail = fail
    self.setup = setup
    self.setups = 0
    self.calls = []
    self.barrier = None

  def Version(self):
    return '0'

  def PreloadSetup(self, endpoints, password, workload):
    self.setups += 1
    return self.setup

  def Preload(self, endpoints, password, workload, key_slice=None,
              setup=None):
    self.calls.append((key_slice, setup, threading.current_thread().name))
    if self.barrier:
      self.barrier.wait(timeout=5)  # Every VM writes at the same time.
    if self.fail:
      raise self.fail
    return key_slice.count * len(endpoints)

  def Probe(self, *args):
    raise NotImplementedError


ENDPOINTS = [base.Endpoint('10.0.0.1', 7001), base.Endpoint('10.0.0.1', 7002)]


def _Spread(generators, workload=None):
  vms = [Vm(f'clients-{i}') for i in range(len(generators))]
  ticks = itertools.count()  # Safe to share between threads.
  return deployment.PreloadOnClients(
      vms, generators, ENDPOINTS, 'pw',
      workload or base.Workload(key_minimum=1, key_maximum=50_000_000),
      clock=lambda: next(ticks))


def test_every_client_vm_writes_its_slice_at_once_after_one_setup():
  generators = [Generator() for _ in range(6)]
  barrier = threading.Barrier(6)
  for g in generators:
    g.barrier = barrier
  parts = _Spread(generators)
  assert [p.vm for p in parts] == [f'clients-{i}' for i in range(6)]
  assert [p.keys for p in parts] == base.SplitKeyRange(1, 50_000_000, 6)
  # Every standalone shard gets every slice: the whole range each.
  assert sum(p.written for p in parts) == 50_000_000 * len(ENDPOINTS)
  assert all(p.seconds > 0 for p in parts)
  assert [g.setups for g in generators] == [1, 0, 0, 0, 0, 0]
  assert all(g.calls[0][1] == 'tags' for g in generators)
  assert len({g.calls[0][2] for g in generators}) == 6


def test_one_client_vm_writes_the_whole_range_in_this_thread():
  g = Generator()
  parts = _Spread([g], base.Workload(key_minimum=1, key_maximum=10))
  assert parts[0].keys == base.KeySlice(1, 10) and parts[0].written == 20
  assert g.calls[0][2] == threading.current_thread().name


def test_more_client_vms_than_keys_leaves_the_extra_vms_idle():
  generators = [Generator() for _ in range(3)]
  parts = _Spread(generators, base.Workload(key_minimum=1, key_maximum=2))
  assert [p.keys for p in parts] == [base.KeySlice(1, 1), base.KeySlice(2, 2)]
  assert generators[2].calls == []


def test_a_failure_on_any_vm_fails_the_preload_in_one_line_naming_it():
  generators = [Generator() for _ in range(3)]
  generators[1].fail = errors.ProcessError(
      'redis-cli --pipe exited with status 1: Connection refused\nmore')
  with pytest.raises(errors.ProcessError) as e:
    _Spread(generators)
  assert str(e.value) == ('Preload failed on clients-1: redis-cli --pipe '
                          'exited with status 1: Connection refused')
  # The others still ran to their end.
  assert all(g.calls for g in generators)


def test_failures_on_several_vms_are_all_named_and_keep_a_usage_error():
  generators = [Generator() for _ in range(3)]
  generators[0].fail = errors.UsageError('one-primary cluster')
  generators[2].fail = OSError('ssh: connection reset')
  with pytest.raises(errors.UsageError) as e:
    _Spread(generators)
  assert str(e.value) == ('Preload failed on clients-0: one-primary cluster;'
                          ' on clients-2: ssh: connection reset')
  assert '\n' not in str(e.value)


def test_a_failing_setup_names_the_first_vm():
  g = Generator()

  def Fails(*args):
    raise ValueError('no tags')

  g.PreloadSetup = Fails
  with pytest.raises(errors.ProcessError,
                     match='^Preload failed on clients-0: no tags$'):
    _Spread([g, Generator()])


def test_the_preload_line_names_the_primaries_dbsize_counts():
  # '--redis_server_cluster_mode --redis_total_num_processes=3
  # --redis_replicas_per_primary=1' said 'Preload verified: DBSIZE 60,000
  # over 6 shard(s).': DBSIZE is the 3 primaries' (engine.KeyCount), 20,000
  # keys each; the line read as 10,000 a shard.
  import types  # pylint: disable=g-import-not-at-top
  server = types.SimpleNamespace(name='servers-0', internal_ip='127.0.0.1')
  lines = []
  spec = types.SimpleNamespace(
      reporter=types.SimpleNamespace(Line=lines.append),
      vm_groups={'servers': [server], 'clients': [Vm('clients-0')]})
  opts = types.SimpleNamespace(
      workload=base.Workload(key_minimum=1, key_maximum=10),
      generator=types.SimpleNamespace(choice='memtier'))
  # (primaries, replicas per primary, the primaries' DBSIZE, the line's end)
  for primaries, replicas, keys, said in (
      (1, 1, 10, 'over 1 primary shard(s) (their 1 replica(s) hold copies).'),
      # 'Preloading 10 keys', then DBSIZE 20: each shard has them all.
      (2, 0, 20, 'over 2 shard(s) (10 keys in each).'),
      (2, 1, 20, 'over 2 primary shard(s) (10 keys in each; their 2 '
       'replica(s) hold copies).'),
      # A cluster's keys spread over its shards: nothing to add.
      (2, 0, 10, 'DBSIZE 10 over 2 shard(s).')):
    engine = types.SimpleNamespace(
        KeyCount=lambda vm, shards, password, keys=keys: keys)
    processes = tuple(
        types.SimpleNamespace(vm=server, port=7001 + i, pid=1,
                              config_path='c')
        for i in range(primaries * (1 + replicas)))
    generator = Generator()
    generator.Preload = lambda *args, keys=keys, **kwargs: keys
    dep = deployment.Deployment(
        engine='redis', engine_version='7', cluster_mode=False,
        shards_per_vm=primaries, primaries=primaries, processes=processes,
        generators=(generator,), password='pw',
        replicas_per_primary=replicas)
    assert deployment.Preload(spec, dep, opts, engine) == keys
    assert lines[-1].endswith(said), lines


def test_client_vms_with_different_load_generators_are_refused():
  other = Generator()
  other.NAME = 'other'
  with pytest.raises(errors.UsageError, match='clients-0: double, '
                     'clients-1: other'):
    _Spread([Generator(), other])
  assert other.calls == []


# Real Local runs with two client VMs -----------------------------------------

KEYS = 20000
TWO_CLIENTS = ['--config_override=redis_memtier.vm_groups.clients.vm_count=2',
               '--redis_total_num_processes=2',
               f'--memtier_key_maximum={KEYS}', '--run_stage=provision,prepare']


def _Prepare(tmp_path, extra):
  """Provision + prepare with two client VMs; (stdout, run dir, scratch)."""
  scratch = tmp_path / 'scratch'
  scratch.mkdir()
  env = dict(os.environ, PKB_LOCAL_SCRATCH=str(scratch))
  results = str(tmp_path / 'results')
  proc, run_uri = e2e.Run(TWO_CLIENTS + extra, results, env=env)
  # The run's one workspace here: its VMs' scratch directories are in it.
  workspace = e2e.Workspaces(run_uri, scratch)[:1] or ['none']
  return (proc, run_uri, results, scratch / os.path.basename(workspace[0]),
          env)


def _Shards(results, run_uri, run_scratch):
  """(port, password) of each shard the run left running.

  Not the deleted entries: a shard whose port another process took between
  the run's check and its start is recorded, deleted, and started on the
  next port; the port it names is someone else's.
  """
  ports = [e['data']['port'] for e in e2e.Record(results, run_uri)['resources']
           if e['kind'] in e2e.SHARD_KINDS and e['status'] != 'deleted']
  conf = glob.glob(str(run_scratch / 'servers-0' / 'redis-*.conf'))[0]
  with open(conf) as f:
    password = re.search(r'^requirepass (\S+)$', f.read(), re.M).group(1)
  return ports, password


def _Cli(port, password, *args):
  return subprocess.run(
      ['redis-cli', '-p', str(port), *args], capture_output=True, text=True,
      check=True, env=dict(os.environ, REDISCLI_AUTH=password)).stdout


def _CheckAndTearDown(proc, run_uri, results, run_scratch, env):
  """Whole range on every shard, each key SET once; then teardown."""
  try:
    assert proc.returncode == 0, proc.stderr
    assert (f'Preloading {KEYS:,} keys of 100 bytes' in proc.stdout and
            'split over 2 client VMs' in proc.stdout), proc.stdout
    assert re.search(r'Preload verified: DBSIZE 40,000 over 2 shard\(s\) '
                     r'\(20,000 keys in each\); '
                     r'keys 1-10,000 from clients-0 \([\d.]+ s\), '
                     r'10,001-20,000 from clients-1 \([\d.]+ s\)\.',
                     proc.stdout), proc.stdout
    ports, password = _Shards(results, run_uri, run_scratch)
    for port in ports:
      assert _Cli(port, password, 'DBSIZE').strip() == str(KEYS)
      stats = _Cli(port, password, 'INFO', 'commandstats')
      # Every key written once on every shard: the slices did not overlap.
      assert re.search(rf'cmdstat_set:calls={KEYS},', stats), stats
  finally:
    down, _ = e2e.Run(['--run_stage=teardown'], results,
                      run_uri=run_uri, env=env)
  assert down.returncode == 0, down.stderr
  assert e2e.LeftoverProcesses(results, run_uri) == []


@pytest.mark.e2e
@e2e.NeedsTools('redis-server', 'redis-cli')
def test_local_memtier_preload_from_two_client_vms(tmp_path):
  path = memtier_replay.Path()
  proc, run_uri, results, run_scratch, env = _Prepare(
      tmp_path, [f'--memtier_path={path}', '--load_generator=memtier'])
  # memtier's own record of each client's run: its slice, once per shard.
  try:
    for i, (low, high) in enumerate(((1, 10000), (10001, 20000))):
      files = sorted(glob.glob(str(run_scratch / f'clients-{i}' /
                                   'preload-*.json')))
      assert len(files) == 2, files
      for name in files:
        with open(name) as f:
          run = json.load(f)
        config = run['configuration']
        assert (config['key_minimum'], config['key_maximum'],
                config['key_pattern']) == (low, high, 'P:P')
        assert run['ALL STATS']['Sets']['Count'] == high - low + 1
  finally:
    _CheckAndTearDown(proc, run_uri, results, run_scratch, env)


@pytest.mark.e2e
@e2e.NeedsTools('redis-server', 'redis-cli', 'redis-benchmark')
def test_local_redis_benchmark_preload_from_two_client_vms(tmp_path):
  proc, run_uri, results, run_scratch, env = _Prepare(
      tmp_path, ['--load_generator=redis_benchmark'])
  try:
    log = (tmp_path / 'results' / run_uri / 'pkb.log').read_text()
    for vm in ('clients-0', 'clients-1'):  # Each streamed its own RESP.
      # After run_processes.sh's `own` verb, which names the VM's scratch
      # dir and writes down the command's process group (the logged command
      # holds the script's text, many lines, before it).
      pipes = re.findall(
          rf'own \S+/{vm} \S+ \|\| exit \$\?; redis-cli -h .*--pipe', log)
      assert len(pipes) == 2, (vm, pipes)
  finally:
    _CheckAndTearDown(proc, run_uri, results, run_scratch, env)
