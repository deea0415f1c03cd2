"""Teardown from the run record in waves of one kind, each wave at once.

Stand-in kinds (registered here with resource.RegisterKind) record when each
delete starts and ends, under a lock; barriers prove deletes overlap (a
sequential teardown would break the barrier after its timeout and report a
failure), and the event order proves what must not overlap. Then real
redis-server shards on Local VMs and on two static VMs that are one machine
(a real sshd) are stopped from the record.
"""

import os
import threading
import time

import pytest

import e2e_support as e2e
from perfkitbenchmarker import errors
from perfkitbenchmarker import redis_shard
from perfkitbenchmarker import resource
from perfkitbenchmarker import run_record
from perfkitbenchmarker import virtual_machine
from perfkitbenchmarker import vm_util
from perfkitbenchmarker.linux_packages import redis_server
from perfkitbenchmarker.linux_packages import valkey_server
from perfkitbenchmarker.providers.local import provider as local
from perfkitbenchmarker.providers.static import provider as static

from sshd_fixture import sshd  # pylint: disable=unused-import  (fixture)

BARRIER_TIMEOUT_S = 10
needs_redis = e2e.NeedsTools('redis-server', 'redis-cli',
                             how='scripts/setup.sh')


class _Events:
  """What the stand-ins did, in the order they did it (thread-safe)."""

  def __init__(self):
    self._lock = threading.Lock()
    self.log = []
    self._active = {}
    self.most_at_once = {}

  def Start(self, lane, name):
    with self._lock:
      self.log.append(('start', name))
      self._active[lane] = self._active.get(lane, 0) + 1
      self.most_at_once[lane] = max(self.most_at_once.get(lane, 0),
                                    self._active[lane])

  def End(self, lane, name):
    with self._lock:
      self.log.append(('end', name))
      self._active[lane] -= 1

  def Index(self, what, name):
    return self.log.index((what, name))


class _StandIn(resource.BaseResource):
  """A resource whose delete runs the test's `on_delete(self)`."""

  on_delete = None  # Set per test.
  lane_of = None  # name -> lane; None: the default lane.
  unbuildable = ()  # names whose FromRecord fails

  def _Create(self):
    pass

  def _Delete(self):
    _StandIn.on_delete(self)  # pylint: disable=not-callable

  def TeardownLane(self):
    if _StandIn.lane_of is None:
      return super().TeardownLane()
    return _StandIn.lane_of(self.name)  # pylint: disable=not-callable


def _Kind(kind):
  cls = type(f'StandIn_{kind}', (_StandIn,), {'KIND': kind})

  def FromRecord(entry, record):
    del record
    if entry['name'] in _StandIn.unbuildable:
      raise errors.ResourceError(f'cannot rebuild\n{entry["name"]}')
    return cls(entry['name'])

  resource.RegisterKind(kind, FromRecord)
  return cls


NETWORK = _Kind('wave_test_network')
SUBNET = _Kind('wave_test_subnet')
VM = _Kind('wave_test_vm')
SHARD = _Kind('wave_test_shard')


@pytest.fixture(autouse=True)
def _reset():
  yield
  _StandIn.on_delete = None
  _StandIn.lane_of = None
  _StandIn.unbuildable = ()


def _Record(tmp_path, *resources):
  """A record holding (class, name) resources, created in that order."""
  record = run_record.RunRecord.Create(str(tmp_path), 'waves')
  for cls, name in resources:
    cls(name, record=record).Create()
  return record


def _Statuses(tmp_path):
  """name -> status, as the file on disk says."""
  return {e['name']: e['status']
          for e in run_record.RunRecord.Load(str(tmp_path)).Resources()}


def _Waiting(barrier, events, lane_of=lambda name: name):
  """An on_delete that meets `barrier`, noting its start and end."""

  def OnDelete(res):
    lane = lane_of(res.name)
    events.Start(lane, res.name)
    try:
      barrier.wait()
    finally:
      events.End(lane, res.name)

  return OnDelete


def test_a_wave_of_one_kind_is_deleted_at_once(tmp_path):
  names = [f'vm-{i}' for i in range(6)]
  record = _Record(tmp_path, *[(VM, n) for n in names])
  events = _Events()
  # Only six deletes running together pass this barrier.
  _StandIn.on_delete = _Waiting(
      threading.Barrier(len(names), timeout=BARRIER_TIMEOUT_S), events)
  assert resource.TeardownFromRecord(record) == []
  assert sorted(n for what, n in events.log if what == 'end') == names
  assert set(_Statuses(tmp_path).values()) == {'deleted'}
  assert not list(record.LiveResources())


def test_waves_go_newest_kind_first_and_one_at_a_time(tmp_path):
  # Created network, subnets, VMs, shards, then one more network: torn down
  # as net-2, then the shards, VMs, subnets, and the first network last.
  created = ([(NETWORK, 'net-1')] + [(SUBNET, f'sub-{i}') for i in range(2)] +
             [(VM, f'vm-{i}') for i in range(3)] +
             [(SHARD, f'shard-{i}') for i in range(4)] + [(NETWORK, 'net-2')])
  record = _Record(tmp_path, *created)
  events = _Events()
  barriers = {'net': threading.Barrier(1), 'sub': threading.Barrier(2),
              'vm': threading.Barrier(3), 'shard': threading.Barrier(4)}

  def OnDelete(res):
    events.Start(res.name, res.name)
    try:
      # Every resource of a wave runs at once: they meet here; a short
      # pause after lets a wrongly started later wave show in the log.
      barriers[res.name.split('-')[0]].wait(timeout=BARRIER_TIMEOUT_S)
      time.sleep(0.02)
    finally:
      events.End(res.name, res.name)

  _StandIn.on_delete = OnDelete
  assert resource.TeardownFromRecord(record) == []
  waves = [['net-2'], [f'shard-{i}' for i in range(4)],
           [f'vm-{i}' for i in range(3)], ['sub-0', 'sub-1'], ['net-1']]
  for newer, older in zip(waves, waves[1:]):
    last_end = max(events.Index('end', n) for n in newer)
    first_start = min(events.Index('start', n) for n in older)
    assert last_end < first_start, (newer, older, events.log)
  assert set(_Statuses(tmp_path).values()) == {'deleted'}


def test_one_lane_goes_in_record_order_and_lanes_overlap(tmp_path):
  # Shards of two VMs, started alternately; each VM is a lane.
  names = [f'{vm}:{port}' for port in (7001, 7002, 7003)
           for vm in ('vm-a', 'vm-b')]
  record = _Record(tmp_path, *[(SHARD, n) for n in names])

  def LaneOf(name):
    return name.split(':')[0]

  events = _Events()
  # Two parties: the lanes pass it only side by side, the i-th delete of
  # one lane with the i-th of the other.
  barrier = threading.Barrier(2, timeout=BARRIER_TIMEOUT_S)

  def OnDelete(res):
    events.Start(LaneOf(res.name), res.name)
    try:
      barrier.wait()
      time.sleep(0.02)  # Room for a second delete of the lane to overlap.
    finally:
      events.End(LaneOf(res.name), res.name)

  _StandIn.lane_of = LaneOf
  _StandIn.on_delete = OnDelete
  assert resource.TeardownFromRecord(record) == []
  assert events.most_at_once == {'vm-a': 1, 'vm-b': 1}
  for vm in ('vm-a', 'vm-b'):
    lane_log = [(what, n) for what, n in events.log if LaneOf(n) == vm]
    # Newest first, each finished before the next starts.
    expected = []
    for port in (7003, 7002, 7001):
      expected += [('start', f'{vm}:{port}'), ('end', f'{vm}:{port}')]
    assert lane_log == expected


def test_failures_are_one_line_each_in_record_order_and_the_rest_goes_on(
    tmp_path):
  created = ([(SUBNET, 'sub-0'), (SUBNET, 'sub-bad')] +
             [(VM, f'vm-{i}') for i in range(4)] + [(VM, 'vm-unbuildable')])
  record = _Record(tmp_path, *created)
  record.AddResource('wave_test_unknown', 'mystery')
  record.UpdateResource('wave_test_unknown', 'mystery', status='created')
  _StandIn.unbuildable = ('vm-unbuildable',)
  vm_barrier = threading.Barrier(4, timeout=BARRIER_TIMEOUT_S)
  deleted = []
  lock = threading.Lock()

  def OnDelete(res):
    if res.KIND == VM.KIND:
      vm_barrier.wait()  # The failing VM's wave-mates run alongside it.
    if res.name in ('vm-1', 'vm-3', 'sub-bad'):
      raise errors.ResourceError(f'{res.name} refused\nsecond line')
    with lock:
      deleted.append(res.name)

  _StandIn.on_delete = OnDelete
  failures = resource.TeardownFromRecord(record)
  assert failures == [
      'wave_test_unknown mystery: Run record holds a resource of unknown '
      'kind "wave_test_unknown"; delete it by hand.',
      'wave_test_vm vm-unbuildable: cannot rebuild\\nvm-unbuildable',
      'wave_test_vm vm-3: vm-3 refused\\nsecond line',
      'wave_test_vm vm-1: vm-1 refused\\nsecond line',
      'wave_test_subnet sub-bad: sub-bad refused\\nsecond line',
  ]
  assert sorted(deleted) == ['sub-0', 'vm-0', 'vm-2']
  statuses = _Statuses(tmp_path)
  assert {n for n, s in statuses.items() if s != 'deleted'} == {
      'mystery', 'vm-unbuildable', 'vm-3', 'vm-1', 'sub-bad'}
  assert [e['name'] for e in record.LiveResources()] == [
      'mystery', 'vm-unbuildable', 'vm-3', 'vm-1', 'sub-bad']


def test_a_lane_that_cannot_be_named_fails_only_its_resource(tmp_path):
  record = _Record(tmp_path, (VM, 'vm-0'), (VM, 'vm-odd'), (VM, 'vm-2'))

  def LaneOf(name):
    if name == 'vm-odd':
      return ['not', 'hashable']
    return name

  _StandIn.lane_of = LaneOf
  _StandIn.on_delete = lambda res: None
  failures = resource.TeardownFromRecord(record)
  assert len(failures) == 1 and failures[0].startswith('wave_test_vm vm-odd:')
  assert _Statuses(tmp_path) == {'vm-0': 'deleted', 'vm-odd': 'created',
                                 'vm-2': 'deleted'}


def test_record_updates_from_many_threads_all_reach_the_file(tmp_path):
  names = [f'vm-{i}' for i in range(40)]
  record = _Record(tmp_path, *[(VM, n) for n in names])
  start = threading.Barrier(8, timeout=BARRIER_TIMEOUT_S)

  def Work(offset):
    start.wait()
    for name in names[offset::8]:
      record.UpdateResource(VM.KIND, name, status='deleted')
      record.UpdateResource(VM.KIND, name, note=name)
      assert record.FindResource(VM.KIND, name)['status'] == 'deleted'
      list(record.LiveResources())

  threads = [threading.Thread(target=Work, args=(i,)) for i in range(8)]
  for thread in threads:
    thread.start()
  for thread in threads:
    thread.join()
  loaded = run_record.RunRecord.Load(str(tmp_path))
  assert [(e['name'], e['status'], e['data']['note'])
          for e in loaded.Resources()] == [(n, 'deleted', n) for n in names]


# --- lanes of the real kinds -----------------------------------------------


def _SshVm(name, ip='10.0.0.1', user='pkb'):
  spec = virtual_machine.VmSpec(cloud='Static', machine_type='static')
  return static.StaticVirtualMachine(spec, name, 'servers', user=user,
                                     ip_address=ip, run_uri='lanes')


def test_shards_share_their_machines_connection_lane():
  options = redis_shard.ShardOptions()
  one = _SshVm('servers-0')
  same_machine = _SshVm('clients-0')  # One machine listed twice.
  other = _SshVm('servers-1', ip='10.0.0.2')
  other_user = _SshVm('servers-2', user='root')

  def Lane(vm, port, cls=redis_server.RedisProcess):
    return cls(vm, port, '', options).TeardownLane()

  assert Lane(one, 7001) == Lane(one, 7002) == Lane(same_machine, 7003)
  assert Lane(one, 7001) == Lane(one, 7004, valkey_server.ValkeyProcess)
  assert Lane(one, 7001) != Lane(other, 7001)
  assert Lane(one, 7001) != Lane(other_user, 7001)
  # The static VMs themselves clean up over that connection and close it.
  assert one.TeardownLane() == same_machine.TeardownLane() == Lane(one, 1)
  assert one.TeardownLane() != other.TeardownLane()
  # Without an address yet, a VM is a lane of its own.
  assert (_SshVm('a', ip=None).TeardownLane() !=
          _SshVm('b', ip=None).TeardownLane())
  # Local VMs have no shared connection: one lane per VM.
  spec = virtual_machine.VmSpec(cloud='Local', machine_type='local')
  local_a = local.LocalVirtualMachine(spec, 'servers-0', 'servers', 'lanes')
  local_b = local.LocalVirtualMachine(spec, 'servers-1', 'servers', 'lanes')
  assert Lane(local_a, 7001) == Lane(local_a, 7002) != Lane(local_b, 7001)


def test_a_resource_is_a_lane_of_its_own_by_default():
  first, second = VM('vm-0'), VM('vm-1')
  assert resource.BaseResource.TeardownLane(first) != (
      resource.BaseResource.TeardownLane(second))


# --- real shards -------------------------------------------------------------


def _Alive(procs):
  return [p.port for p in procs
          if e2e.ProcessAlive(p.pid, marker=f':{p.port}')]


def _StartShardsOn(vms, counts, record, procs):
  """Starts `counts` real shards on the VMs (into `procs`, for the caller's
  clean-up) and returns the run record as a later teardown would load it."""
  options = redis_shard.ShardOptions(maxmemory_mb=64)
  password = redis_shard.NewPassword()
  for vm, count in zip(vms, counts):
    procs += redis_server.StartShards(vm, count, password, options, record,
                                      start_port=e2e.FreePort())
  assert len(_Alive(procs)) == sum(counts)
  return run_record.RunRecord.Load(record.run_dir)


def _StopLeftovers(procs):
  for proc in procs:
    if proc.port in _Alive([proc]):
      proc.record = None
      proc.Delete()


@pytest.mark.e2e
@needs_redis
def test_real_shards_on_local_vms_stop_from_the_record(tmp_path, monkeypatch):
  monkeypatch.setattr(local, 'SCRATCH_ROOT', str(tmp_path / 'scratch'))
  run_uri = e2e.NewRunUri()
  record = run_record.RunRecord.Create(str(tmp_path / 'run'), run_uri)
  spec = virtual_machine.VmSpec(cloud='Local', machine_type='local')
  vms = []
  for i in range(2):
    vm = local.LocalVirtualMachine(spec, f'servers-{i}', 'servers', run_uri,
                                   record=record)
    vm.Create()
    vms.append(vm)
  procs = []
  try:
    loaded = _StartShardsOn(vms, (3, 2), record, procs)
    lanes = {}
    for entry in loaded.LiveResources():
      if entry['kind'] == redis_server.RedisProcess.KIND:
        rebuilt = resource.FromRecord(entry, loaded)
        lanes.setdefault(rebuilt.TeardownLane(), []).append(entry['name'])
    assert sorted(len(names) for names in lanes.values()) == [2, 3]
    assert resource.TeardownFromRecord(loaded) == []
    assert _Alive(procs) == []
    assert e2e.Workspaces(run_uri, tmp_path / 'scratch') == []
    assert {e['status'] for e in loaded.Resources()} == {'deleted'}
  finally:
    _StopLeftovers(procs)


@pytest.mark.e2e
@needs_redis
def test_real_shards_on_one_machine_listed_twice_over_ssh(
    tmp_path, sshd):  # pylint: disable=redefined-outer-name
  run_uri = f'tw{os.getpid()}'
  record = run_record.RunRecord.Create(str(tmp_path / 'run'), run_uri)
  spec = virtual_machine.VmSpec(cloud='Static', machine_type='static',
                                os_type='detected')
  vms = []
  for name in ('servers-0', 'clients-0'):
    vm = static.StaticVirtualMachine(
        spec, name, name.split('-')[0], user=sshd.user, ip_address=sshd.host,
        keyfile=sshd.user_key, port=sshd.port, record=record,
        run_uri=run_uri)
    vm.Create()
    vms.append(vm)
  procs = []
  try:
    loaded = _StartShardsOn(vms, (3, 2), record, procs)
    # Every shard and both VMs: one machine, one connection, one lane.
    lanes = {resource.FromRecord(e, loaded).TeardownLane()
             for e in loaded.LiveResources()}
    assert len(lanes) == 1
    # One machine, one workspace: its samplers count both VMs as the run's.
    assert len({os.path.dirname(vm.scratch_dir) for vm in vms}) == 1
    assert resource.TeardownFromRecord(loaded) == []
    assert _Alive(procs) == []
    assert e2e.Workspaces(run_uri) == []
    assert {e['status'] for e in loaded.Resources()} == {'deleted'}
  finally:
    _StopLeftovers(procs)
    vms[0].StopMaster()
