"""Installs on every VM of a run at once (deployment.PrepareVms/InstallAll).

Stand-in VMs and a stand-in engine record each install. Installs on
different machines must meet at a barrier (they would time out one after
another); VMs that are one machine (one address, or Local) must never
install at the same time; the generators come back in client-VM order
whatever order the installs end in; a failing VM leaves the others to finish
and its error names it (two failing: one line naming both). The YCSB
benchmark and the Redis Enterprise cluster install the same way.
"""

import collections
import threading
import time
import types

import pytest

from perfkitbenchmarker import errors
from perfkitbenchmarker import providers
from perfkitbenchmarker import run_record
from perfkitbenchmarker import virtual_machine
from perfkitbenchmarker.engines import redis_enterprise
from perfkitbenchmarker.enterprise import options as enterprise_options
from perfkitbenchmarker.linux_packages import memtier as memtier_package
from perfkitbenchmarker.linux_packages import remote_install
from perfkitbenchmarker.load_generators import memtier
from perfkitbenchmarker.load_generators import redis_benchmark
from perfkitbenchmarker.study import deployment
from perfkitbenchmarker.study import options as options_lib
from perfkitbenchmarker.study import ycsb_runner

TIMEOUT_S = 10


class Machines:
  """Which installs are running on each machine, now and at most."""

  def __init__(self, hook=None):
    self.lock = threading.Lock()
    self.active = collections.Counter()
    self.most = collections.Counter()
    self.finished = []  # (vm name, package), in the order they ended
    self.hook = hook  # hook(vm, package, **settings), inside the install

  def Enter(self, machine):
    with self.lock:
      self.active[machine] += 1
      self.most[machine] = max(self.most[machine], self.active[machine])

  def Leave(self, machine):
    with self.lock:
      self.active[machine] -= 1


class FakeVm:
  """What Deploy, ChooseGenerator and the YCSB deploy use of a VM."""

  def __init__(self, name, machines, ip_address=None, cloud='Static',
               machine=None):
    self.name = name
    self.CLOUD = cloud  # pylint: disable=invalid-name
    self.CAN = providers.CapabilitiesOf(cloud)  # pylint: disable=invalid-name
    self.ip_address = ip_address
    self.internal_ip = ip_address
    self.memory_mib = 1024
    self.scratch_dir = f'/tmp/pkb-test/{name}'
    self.machine = machine or ip_address or name
    self.machines = machines
    self.installs = []
    self.tuned = None
    self.files = {}

  def Install(self, package, **settings):
    self.machines.Enter(self.machine)
    try:
      if self.machines.hook:
        self.machines.hook(self, package, **settings)
      self.installs.append((package, settings))
    finally:
      self.machines.Leave(self.machine)
    with self.machines.lock:
      self.machines.finished.append((self.name, package))

  def ApplySystemTuning(self, enabled):
    self.tuned = enabled
    return {}

  # What remote_install and memtier's package use, for their real messages.
  def RemoteCommandWithReturnCode(self, command, timeout=None, **_):
    return '', '', 1  # nothing is installed

  def HasCommand(self, program):
    return False

  def Sudo(self, command):
    return command

  def RunDetached(self, command, timeout):
    return '', 'E: Unable to locate package redis-tools\n', 100

  def DetectSystem(self):
    return types.SimpleNamespace(family='debian')

  def WriteFile(self, path, text, mode=0o600):
    self.files[path] = (text, mode)


class FakeEngine:
  """The ServerEngine calls Deploy makes; shards start only after every
  install (checked when StartShards is called)."""

  NAME = 'fake'

  def __init__(self, vms):
    self.vms = vms
    self.started = []

  def Install(self, vm):
    vm.Install('fake_server', version='distro')

  def StartShards(self, vm, count, password, options, record, start_port):
    unfinished = [v.name for v in self.vms if not v.installs]
    assert not unfinished, f'{vm.name} started before {unfinished} installed'
    self.started.append(vm.name)
    return [types.SimpleNamespace(vm=vm, port=start_port + i, pid=100 + i,
                                  config_path=f'/tmp/{vm.name}-{i}.conf')
            for i in range(count)]

  def Version(self, vm):
    return '7.2'

  def Settings(self):
    return {}


def _Opts(choice='redis_benchmark', system_tuning=True):
  return types.SimpleNamespace(
      server=options_lib.ServerOptions(system_tuning=system_tuning),
      generator=options_lib.GeneratorOptions(choice=choice))


def _Vms(machines, servers, clients, address=lambda i: f'10.0.0.{i + 2}'):
  """Server and client stand-ins, each on its own machine by default."""
  vms = [FakeVm(f'servers-{i}', machines, address(i)) for i in range(servers)]
  vms += [FakeVm(f'clients-{i}', machines, address(servers + i))
          for i in range(clients)]
  return vms[:servers], vms[servers:]


def _Barrier(parties):
  barrier = threading.Barrier(parties, timeout=TIMEOUT_S)
  return lambda vm, package, **_: barrier.wait()


# Lanes -----------------------------------------------------------------------


def test_machine_lane_goes_by_local_then_address_then_name():
  lane = virtual_machine.MachineLane
  machines = Machines()
  local = [FakeVm(f'l{i}', machines, f'127.0.0.{i + 1}', cloud='Local')
           for i in range(2)]
  assert lane(local[0]) == lane(local[1])
  same = [FakeVm(n, machines, '10.0.0.5') for n in ('a', 'b')]
  assert lane(same[0]) == lane(same[1])
  assert lane(same[0]) != lane(FakeVm('c', machines, '10.0.0.6'))
  unaddressed = [FakeVm(n, machines) for n in ('x', 'y')]
  assert lane(unaddressed[0]) != lane(unaddressed[1])
  # A VM named like another's address is still another machine.
  assert lane(FakeVm('10.0.0.5', machines)) != lane(same[0])
  # Stand-ins of other tests have no CLOUD or ip_address: their names.
  assert lane(types.SimpleNamespace(name='n')) == lane(
      types.SimpleNamespace(name='n', CLOUD='GCP', ip_address=None))


# At once ---------------------------------------------------------------------


def test_installs_on_different_machines_run_at_once():
  machines = Machines(hook=_Barrier(9))  # 3 servers + 6 clients
  servers, clients = _Vms(machines, 3, 6)
  generators = deployment.InstallAll(FakeEngine(servers), servers, clients,
                                     _Opts())
  assert [g.vm for g in generators] == clients
  assert all(isinstance(g, redis_benchmark.RedisBenchmarkGenerator)
             for g in generators)
  for vm in servers:
    assert vm.installs == [('fake_server', {'version': 'distro'})]
    assert vm.tuned is True
  for vm in clients:
    assert vm.installs == [('redis_benchmark', {})]
    assert vm.tuned is None


def test_generators_come_back_in_client_order_when_installs_end_reversed():
  machines = Machines()
  servers, clients = _Vms(machines, 1, 4)
  done = {vm.name: threading.Event() for vm in clients}
  ended = []

  def LastFirst(vm, package, **_):
    # Each client ends only after the one after it: the last ends first.
    if vm not in clients:
      return
    index = clients.index(vm)
    if index + 1 < len(clients):
      assert done[clients[index + 1].name].wait(TIMEOUT_S)
    ended.append(vm.name)
    done[vm.name].set()

  machines.hook = LastFirst
  generators = deployment.InstallAll(
      FakeEngine(servers), servers, clients,
      _Opts(choice='memtier'))
  assert ended == ['clients-3', 'clients-2', 'clients-1', 'clients-0']
  assert [g.vm for g in generators] == clients
  assert all(isinstance(g, memtier.MemtierGenerator) for g in generators)
  assert clients[0].installs == [
      ('memtier', {'path': memtier_package.DEFAULT_PATH})]


def test_ycsb_deploy_installs_servers_and_clients_at_once(tmp_path):
  machines = Machines()
  barrier = _Barrier(4)

  def Install(vm, package, **settings):
    barrier(vm, package)
    if package == 'ycsb':
      vm.ycsb = ('ycsb-install', vm.name, settings['build_dir'])

  machines.hook = Install
  servers, clients = _Vms(machines, 2, 2)
  engine = FakeEngine(servers + clients)
  record = run_record.RunRecord.Create(str(tmp_path / 'abc'), 'abc',
                                       cloud='Local')
  spec = types.SimpleNamespace(
      vm_groups={'servers': servers, 'clients': clients}, record=record,
      name='redis_ycsb')
  opts = types.SimpleNamespace(server=options_lib.ServerOptions(),
                               build_dir=None, timeout_ms=2000)
  dep = ycsb_runner.Deploy(spec, opts, engine)
  # What the shards run, kept for a later stage's flags to be checked by,
  # as redis_memtier's (deployment.KeepServer).
  assert run_record.RunRecord.Load(record.run_dir).info['servers'] == {
      'redis_ycsb': {'engine': 'fake', 'version': '7.2', 'settings': {}}}
  assert dep.installs == (('ycsb-install', 'clients-0', None),
                          ('ycsb-install', 'clients-1', None))
  assert engine.started == ['servers-0', 'servers-1']
  for vm in clients:
    assert list(vm.files) == [f'{vm.scratch_dir}/{ycsb_runner.CONNECTION_FILE}']


def test_enterprise_cluster_installs_every_server_at_once(tmp_path):
  tarball = tmp_path / 'redislabs-6.2.4-54-rhel9-x86_64.tar'
  tarball.write_text('tar')
  (tmp_path / 'licence').write_text('licence')
  opts = enterprise_options.EnterpriseOptions(
      cloud='GCP', os=enterprise_options.ChooseOs('centos7', 'GCP'),
      tarball=str(tarball), license_path=str(tmp_path / 'licence'))
  machines = Machines()
  servers, _ = _Vms(machines, 3, 0)
  barrier = threading.Barrier(3, timeout=TIMEOUT_S)
  commands = collections.defaultdict(list)

  def Copy(vm, src, dst):
    barrier.wait()
    commands[vm.name].append(('copy', dst))

  for vm in servers:
    vm.RemoteCommand = (
        lambda command, name=vm.name, **_: commands[name].append(command))
  cluster = redis_enterprise.RedisEnterpriseCluster(
      opts, servers, 'cluster-pw-123', copy=Copy,
      session_factory=lambda vm: None, api_url='https://localhost:9443')
  # The benchmark's prepare (enterprise/cloud_run.Prepare).
  deployment.PrepareVms(servers, (), cluster.InstallOn, None)
  for vm in servers:
    assert any('install.sh' in str(c) for c in commands[vm.name])


# One machine, one install at a time -----------------------------------------


def _SlowInstall(vm, package, **_):
  time.sleep(0.05)  # long enough for a second install there to overlap


def test_vms_sharing_an_address_never_install_at_once():
  # A static VM file listing 10.0.0.5 three times and 10.0.0.6 twice.
  machines = Machines(hook=_SlowInstall)
  addresses = ['10.0.0.5', '10.0.0.6', '10.0.0.5', '10.0.0.5', '10.0.0.6']
  servers, clients = _Vms(machines, 2, 3, address=lambda i: addresses[i])
  generators = deployment.InstallAll(FakeEngine(servers), servers, clients,
                                     _Opts())
  assert [g.vm for g in generators] == clients
  assert dict(machines.most) == {'10.0.0.5': 1, '10.0.0.6': 1}
  # One machine's VMs in the given order: servers before clients.
  assert [n for n, _ in machines.finished if n in ('servers-0', 'clients-0',
                                                   'clients-1')] == [
                                                       'servers-0', 'clients-0',
                                                       'clients-1']


def test_local_vms_install_one_after_another():
  machines = Machines(hook=_SlowInstall)
  # Local VMs are all this machine, whatever their addresses say.
  servers = [FakeVm(f'servers-{i}', machines, f'127.0.0.{i + 1}',
                    cloud='Local', machine='this machine') for i in range(2)]
  clients = [FakeVm(f'clients-{i}', machines, f'127.0.1.{i + 1}',
                    cloud='Local', machine='this machine') for i in range(3)]
  generators = deployment.InstallAll(FakeEngine(servers), servers, clients,
                                     _Opts())
  assert [g.vm for g in generators] == clients
  assert dict(machines.most) == {'this machine': 1}
  # In the order Deploy always used: the servers, then the clients.
  assert [n for n, _ in machines.finished] == [
      'servers-0', 'servers-1', 'clients-0', 'clients-1', 'clients-2']


# Failures --------------------------------------------------------------------


def _FailOn(names):
  """Installs on `names` fail through the real install code's messages:
  redis-tools through remote_install, memtier on a Local VM."""

  def Hook(vm, package, **settings):
    time.sleep(0.02)
    if vm.name not in names:
      return
    if not vm.CAN.installs_packages:
      memtier_package.Install(vm, **settings)
    remote_install.InstallRedisTools(vm)

  return Hook


def test_a_failing_vm_leaves_the_others_to_finish_and_is_named():
  machines = Machines(hook=_FailOn({'clients-1'}))
  # clients-1 shares a machine with servers-1 and clients-3.
  addresses = ['10.0.0.2', '10.0.0.3', '10.0.0.4', '10.0.0.3', '10.0.0.5',
               '10.0.0.3']
  servers, clients = _Vms(machines, 2, 4, address=lambda i: addresses[i])
  engine = FakeEngine(servers)
  with pytest.raises(errors.PrerequisiteError) as caught:
    deployment.InstallAll(engine, servers, clients, _Opts())
  message = str(caught.value)
  assert 'Installing redis-tools on clients-1 failed (exit 100)' in message
  assert 'Unable to locate package' in message
  finished = {n for n, _ in machines.finished}
  assert finished == {vm.name for vm in servers + clients} - {'clients-1'}
  # The VM after it on its machine still installed.
  assert clients[3].installs == [('redis_benchmark', {})]


def test_two_failing_vms_give_one_line_naming_both():
  machines = Machines(hook=_FailOn({'servers-0', 'clients-2'}))
  servers, clients = _Vms(machines, 2, 3)
  clients[2].CAN = providers.CAPABILITIES['Local']  # memtier missing there
  with pytest.raises(errors.Error) as caught:
    deployment.InstallAll(FakeEngine(servers), servers, clients,
                          _Opts(choice='memtier'))
  message = str(caught.value)
  assert '\n' not in message
  assert message.startswith('2 failed: ')
  assert 'servers-0' in message and 'clients-2' in message
  assert 'memtier_benchmark not found on clients-2' in message
  finished = {n for n, _ in machines.finished}
  assert finished == {'servers-1', 'clients-0', 'clients-1'}


def test_deploy_starts_shards_after_every_install_in_server_order(tmp_path):
  machines = Machines(hook=_Barrier(5))
  servers, clients = _Vms(machines, 3, 2)
  engine = FakeEngine(servers + clients)
  record = run_record.RunRecord.Create(str(tmp_path / 'abc'), 'abc',
                                       cloud='Local')
  spec = types.SimpleNamespace(
      vm_groups={'servers': servers, 'clients': clients}, record=record,
      name='redis_memtier')
  dep = deployment.Deploy(spec, _Opts(), engine)
  # What the shards run, kept for a later stage's flags to be checked by.
  assert run_record.RunRecord.Load(record.run_dir).info['servers'] == {
      'redis_memtier': {'engine': dep.engine, 'version': dep.engine_version,
                        'settings': dict(dep.engine_settings)}}
  assert engine.started == ['servers-0', 'servers-1', 'servers-2']
  assert [p.vm.name for p in dep.processes] == [
      'servers-0', 'servers-1', 'servers-2']
  assert [g.vm for g in dep.generators] == clients


def test_deploy_starts_no_shard_when_an_install_fails():
  machines = Machines(hook=_FailOn({'clients-0'}))
  servers, clients = _Vms(machines, 2, 1)
  engine = FakeEngine(servers + clients)
  spec = types.SimpleNamespace(
      vm_groups={'servers': servers, 'clients': clients}, record=None)
  with pytest.raises(errors.PrerequisiteError, match='on clients-0'):
    deployment.Deploy(spec, _Opts(), engine)
  assert engine.started == []
  assert all(vm.installs for vm in servers)


def test_a_stopped_run_starts_nothing_more_on_a_static_machine():
  # Three static VMs on 10.0.0.5 prepare one after another. A signal during
  # servers-0's install (teardown then restores the machine) let
  # clients-0's and clients-1's installs start there afterwards.
  from perfkitbenchmarker import vm_util  # pylint: disable=g-import-not-at-top

  def StopDuringFirst(vm, package, **_):
    if vm.name == 'servers-0':
      vm_util.StopChildren()  # What the signal handler does.

  machines = Machines(hook=StopDuringFirst)
  servers, clients = _Vms(machines, 1, 2, address=lambda i: '10.0.0.5')
  engine = FakeEngine(servers)
  spec = types.SimpleNamespace(
      vm_groups={'servers': servers, 'clients': clients}, record=None)
  with pytest.raises(errors.Error, match='the run was stopped'):
    deployment.Deploy(spec, _Opts(), engine)
  assert [n for n, _ in machines.finished] == ['servers-0']
  assert engine.started == []
