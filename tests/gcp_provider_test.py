"""GCP provider against a local fake Compute API, through the real clients.

The google-cloud-compute REST clients talk to tests/fake_gce.py on
127.0.0.1; nothing is mocked inside the provider. The SSH wait is replaced
through the provider's `ssh_waiter` seam (the fake's instances have
loopback addresses nobody listens on), sleeps are no-ops and the wall clock
is fixed.
"""

import logging
import os
import re
import stat
import subprocess
import sys
import time as wall_time
import types
import uuid

import pytest
import requests

import e2e_support
import lazy_modules

from perfkitbenchmarker import benchmark_spec
from perfkitbenchmarker import errors
from perfkitbenchmarker import resource
from perfkitbenchmarker import run_processes
from perfkitbenchmarker import run_record
from perfkitbenchmarker import run_scope
from perfkitbenchmarker import run_signals
from perfkitbenchmarker import ssh_vm
from perfkitbenchmarker import vm_util
from perfkitbenchmarker.linux_benchmarks import redis_enterprise_benchmark
from perfkitbenchmarker.linux_benchmarks import redis_memtier_benchmark
from perfkitbenchmarker.providers.gcp import images
from perfkitbenchmarker.providers.gcp import naming
from perfkitbenchmarker.providers import operator_access

import fake_gce  # pylint: disable=g-bad-import-order
from cloud_stop_test import FakeTime  # pylint: disable=g-bad-import-order

# Imported when a test first uses them (lazy_modules).
compute_v1 = lazy_modules.Module('google.cloud.compute_v1')
compute_api = lazy_modules.Module(
    'perfkitbenchmarker.providers.gcp.compute_api')
gcp_network = lazy_modules.Module('perfkitbenchmarker.providers.gcp.network')
gcp_provider = lazy_modules.Module(
    'perfkitbenchmarker.providers.gcp.provider')
gcp_vm = lazy_modules.Module('perfkitbenchmarker.providers.gcp.vm')

PROJECT = 'pkb-test-project'
ZONE = 'us-central1-a'
OPERATOR = '203.0.113.7/32'
NOW = 1795000000.0  # 2026-11-18 11:06:40 UTC.
LABEL_VALUE = re.compile(r'[a-z0-9_-]{0,63}')
RESOURCE_NAME = re.compile(r'[a-z]([-a-z0-9]{0,61}[a-z0-9])?')
# Redis Enterprise's node-to-node ports, written out to check the module's
# declaration reaches the firewall as reviewed.
ENTERPRISE_PORTS = ['1968', '3333-3349', '8000-8002', '8004', '8006',
                    '8070-8071', '8080', '8443-8444', '9080', '9082', '9091',
                    '9125', '9443', '10000-19999', '20000-29999',
                    '36379-36380']


@pytest.fixture
def fake():
  with fake_gce.FakeGce() as server:
    yield server


def _Flags(**overrides):
  values = dict(
      machine_type=None, zone=None, os_type='debian12', project=PROJECT,
      owner='Jane.Doe', timeout_minutes=60, placement_group_style='cluster',
      gcp_ssh_source_range=[OPERATOR], gcp_network=None,
      gcp_compute_endpoint=None, gcp_boot_disk_type=None, gcp_ssh_user='pkb',
      ssh_wait_timeout_seconds=300)
  values.update(overrides)
  return types.SimpleNamespace(**values)


def _Config(servers='t2d-standard-16', clients='n2-standard-32',
            client_count=2, client_zone=ZONE):
  return {'vm_groups': {
      'servers': {'vm_spec': {'GCP': {'machine_type': servers, 'zone': ZONE}},
                  'vm_count': 1},
      'clients': {'vm_spec': {'GCP': {'machine_type': clients,
                                      'zone': client_zone}},
                  'vm_count': client_count},
  }}


class _Run:
  """One run's spec, record and provider, as pkb would build them."""

  def __init__(self, fake, run_dir, run_uri='abc123', config=None,
               module=None, time=None, clients=None, **flag_overrides):
    self.fake = fake
    self.run_dir = str(run_dir)
    self.record = run_record.RunRecord.Create(self.run_dir, run_uri,
                                              cloud='GCP')
    self.flags = _Flags(**flag_overrides)
    module = module or types.SimpleNamespace(BENCHMARK_NAME='redis_memtier')
    self.spec = benchmark_spec.BenchmarkSpec(
        module, config or _Config(), run_uri, 'GCP', self.record, self.flags,
        None, lambda samples: None)
    self.ssh_waits = []
    self.provider = gcp_provider.GceProvider(
        clients or compute_api.ComputeClients.Create(fake.endpoint),
        gcp_provider.GcpOptions.FromFlags(self.flags),
        ssh_waiter=lambda vm: self.ssh_waits.append(vm.name),
        # `time`: a cloud_stop_test.FakeTime, whose clock its sleeps move.
        sleep=time.sleep if time else lambda s: None,
        **({'clock': time.clock} if time else {}), wall_clock=lambda: NOW)

  def Construct(self):
    self.spec.vm_groups = self.provider.ConstructVms(self.spec)
    self.spec.vms = [v for vms in self.spec.vm_groups.values() for v in vms]
    return self.spec.vms

  def Provision(self):
    self.Construct()
    self.provider.Provision(self.spec)
    return self.spec.vms

  def TeardownFromDisk(self):
    """Teardown as `--run_stage=teardown` does it: from the file alone."""
    return resource.TeardownFromRecord(run_record.RunRecord.Load(self.run_dir))


def _OneVm():
  return {'vm_groups': {'servers': {
      'vm_spec': {'GCP': {'machine_type': 'n2-standard-4', 'zone': ZONE}},
      'vm_count': 1}}}


def _Only(items):
  assert len(items) == 1, items
  return items[0]


def _Rule(fake, suffix):
  return _Only([f for f in fake.Inserted('firewalls')
                if f['name'].endswith(suffix)])


# Provisioning -----------------------------------------------------------------


@pytest.mark.e2e
def test_provision_creates_the_run_and_teardown_from_record_removes_it(
    fake, tmp_path):
  run = _Run(fake, tmp_path)
  vms = run.Provision()

  kinds = sorted(collection for collection, _, _, _ in fake.resources)
  assert kinds == ['firewalls', 'firewalls', 'instances', 'instances',
                   'instances', 'networks', 'resourcePolicies', 'subnetworks']
  assert [vm.name for vm in vms] == ['pkb-abc123-servers-0',
                                     'pkb-abc123-clients-0',
                                     'pkb-abc123-clients-1']
  for vm in vms:
    assert RESOURCE_NAME.fullmatch(vm.name)
    assert vm.ip_address.startswith('127.0.2.')
    assert vm.internal_ip.startswith('10.0.0.')
    assert vm.image.endswith('/images/debian-12-v20261101')
  assert sorted(run.ssh_waits) == sorted(vm.name for vm in vms)
  assert (vms[0].num_cpus, vms[0].memory_mib) == (16, 65536)
  entry = run.record.FindResource('gcp_vm', 'pkb-abc123-servers-0')
  assert entry['status'] == 'created'
  assert entry['data']['ip_address'] == vms[0].ip_address
  assert entry['data']['api_endpoint'] == fake.endpoint

  assert run.TeardownFromDisk() == []
  assert fake.Live() == []
  assert not os.path.exists(vms[0].keyfile)
  assert not os.path.exists(run_scope.RunKeyDir('abc123'))


def _CountClients(monkeypatch):
  """The endpoints ComputeClients.Create is called for from now on."""
  built, create = [], compute_api.ComputeClients.Create
  monkeypatch.setattr(compute_api.ComputeClients, 'Create', staticmethod(
      lambda endpoint=None, **kw: built.append(endpoint) or create(endpoint,
                                                                   **kw)))
  return built


@pytest.mark.e2e
def test_teardown_deletes_in_reverse_dependency_order(fake, tmp_path,
                                                      monkeypatch):
  run = _Run(fake, tmp_path)
  run.Provision()
  del fake.requests[:]
  built = _CountClients(monkeypatch)
  assert run.TeardownFromDisk() == []
  assert built == [fake.endpoint]  # One set for the 3 VMs and 5 others.
  deleted = [r.path.split('/')[-2] for r in fake.requests
             if r.method == 'DELETE']
  assert deleted == ['instances'] * 3 + ['firewalls'] * 2 + [
      'resourcePolicies', 'subnetworks', 'networks']


@pytest.mark.e2e
def test_firewall_opens_redis_only_to_the_run_and_ssh_only_to_operator(
    fake, tmp_path):
  run = _Run(fake, tmp_path)
  run.Provision()
  tag = naming.NetworkTag('abc123')

  ssh = _Rule(fake, '-ssh')
  assert ssh['sourceRanges'] == [OPERATOR]
  assert 'sourceTags' not in ssh
  assert ssh['allowed'] == [{'IPProtocol': 'tcp', 'ports': ['22']}]
  assert ssh['targetTags'] == [tag]
  assert ssh['direction'] == 'INGRESS'

  redis = _Rule(fake, '-redis')
  assert redis['sourceTags'] == [tag]
  assert 'sourceRanges' not in redis
  assert redis['targetTags'] == [tag]
  assert redis['allowed'] == [{'IPProtocol': 'tcp',
                               'ports': ['7001-65535']}]
  for rule in fake.Inserted('firewalls'):
    assert rule['network'] == f'projects/{PROJECT}/global/networks/pkb-abc123'
    assert '0.0.0.0/0' not in rule.get('sourceRanges', [])
  for instance in fake.Inserted('instances'):
    assert instance['tags']['items'] == [tag]


def test_redis_rule_admits_every_port_a_large_shard_study_takes(
    fake, tmp_path, monkeypatch):
  # The run's key as made before (ssh-keygen is a process; fast tier).
  monkeypatch.setattr(ssh_vm, 'GenerateKeyPair', lambda directory, **_: (
      ssh_vm.KeyPair(os.path.join(directory, 'k'), 'ssh-ed25519 AAAA k')))
  run = _Run(fake, tmp_path, redis_start_port=9001)
  run.Provision()
  ports = _Rule(fake, '-redis')['allowed'][0]['ports']
  # Shards take free ports from --redis_start_port on, and a shard search
  # each count's on fresh ports after the last's: 1,500 shards per VM, or
  # a climb over 8 counts of up to 360 on a c3d-standard-360, pass 1,000.
  for port in (9001, 9001 + 1500, 9001 + 1500 + 10000, 65535):
    assert fake_gce.RuleAdmits(ports, port), (port, ports)
  assert not fake_gce.RuleAdmits(ports, 9000)


@pytest.mark.parametrize('flags,refused', [
    ({}, None),
    ({'zone': 'europe-west4-a'}, 'is t2d-standard-16 in us-central1-a (its '
     'record), not t2d-standard-16 in europe-west4-a'),
    ({'machine_type': 'n2-standard-8'}, 'is t2d-standard-16 in '
     'us-central1-a (its record), not n2-standard-8 in us-central1-a'),
])
def test_a_later_stage_naming_other_machines_is_refused(
    fake, tmp_path, monkeypatch, flags, refused):
  # './pkb.py --run_stage=run --run_uri=X' with another --zone or
  # --machine_type priced the recorded t2d-standard-16 in us-central1-a as
  # the flags' machine (GroupPrice reads them): n2-standard-8 in
  # europe-west4, $0.4277/hr for $0.6759/hr, in every price-performance.
  monkeypatch.setattr(ssh_vm, 'GenerateKeyPair', lambda directory, **_: (
      ssh_vm.KeyPair(os.path.join(directory, 'k'), 'ssh-ed25519 AAAA k')))
  run = _Run(fake, tmp_path)
  run.Provision()
  later = benchmark_spec.BenchmarkSpec(
      types.SimpleNamespace(BENCHMARK_NAME='redis_memtier'), _Config(),
      'abc123', 'GCP', run.record, _Flags(**flags), None, lambda s: None)
  if refused is None:
    later.CheckRecordedVms()
    return
  with pytest.raises(errors.UsageError, match=(
      f"Run abc123's .* VM pkb-abc123-.* {re.escape(refused)}; give the "
      'flags it was provisioned with')):
    later.CheckRecordedVms()


@pytest.mark.e2e
@pytest.mark.parametrize('module,peer_ports', [
    (redis_memtier_benchmark, None),
    (redis_enterprise_benchmark, ENTERPRISE_PORTS),
], ids=['redis_memtier', 'redis_enterprise'])
def test_benchmark_peer_ports_get_a_rule_from_the_run_only(
    fake, tmp_path, module, peer_ports):
  run = _Run(fake, tmp_path, module=module)
  run.Provision()
  tag = naming.NetworkTag('abc123')
  # The Redis rule is the same whatever the benchmark declares.
  assert _Rule(fake, '-redis')['allowed'] == [
      {'IPProtocol': 'tcp', 'ports': ['7001-65535']}]
  names = sorted(f['name'] for f in fake.Inserted('firewalls'))
  if peer_ports is None:
    assert names == ['pkb-abc123-redis', 'pkb-abc123-ssh']
    return
  assert names == ['pkb-abc123-peers', 'pkb-abc123-redis', 'pkb-abc123-ssh']
  peers = _Rule(fake, '-peers')
  assert peers['allowed'] == [{'IPProtocol': 'tcp', 'ports': peer_ports}]
  assert peers['sourceTags'] == [tag] and peers['targetTags'] == [tag]
  assert 'sourceRanges' not in peers
  assert peers['direction'] == 'INGRESS'
  assert peers['network'] == f'projects/{PROJECT}/global/networks/pkb-abc123'
  # Recorded like the other rules, before the instances that use it.
  entry = run.record.FindResource('gcp_firewall', 'pkb-abc123-peers')
  assert entry['status'] == 'created'
  assert (entry['data']['ports'], entry['data']['source_tags'],
          entry['data']['source_ranges']) == (peer_ports, [tag], [])
  kinds = [e['kind'] for e in run.record.Resources()]
  assert kinds.index('gcp_vm') > max(
      i for i, k in enumerate(kinds) if k == 'gcp_firewall')
  # Upstream's vm.AllowPort: a port of the run's peer rule is open already;
  # any other is refused in one line naming PEER_TCP_PORTS.
  run.spec.vms[0].AllowPort(3333, 3349)
  with pytest.raises(errors.VirtualMachine.VirtualMachineError,
                     match='PEER_TCP_PORTS'):
    run.spec.vms[0].AllowPort(3350)

  del fake.requests[:]
  assert run.TeardownFromDisk() == []
  deleted = [r.path.split('/')[-1] for r in fake.Calls('firewalls', 'DELETE')]
  assert sorted(deleted) == names
  assert fake.Live() == []


@pytest.mark.e2e
def test_peer_rule_that_fails_is_torn_down_with_the_rest(fake, tmp_path):
  fake.FailInsert('firewalls', nth=3, mode='operation')
  run = _Run(fake, tmp_path, module=redis_enterprise_benchmark)
  with pytest.raises(errors.ResourceError, match='QUOTA_EXCEEDED'):
    run.Provision()
  assert fake.Inserted('instances') == []
  assert run.TeardownFromDisk() == []
  assert fake.Live() == []


@pytest.mark.parametrize('ports', [((20, 30),), ((22, 22),), ((0, 80),),
                                   ((9000, 8000),), ((65535, 65536),)])
def test_bad_peer_ports_are_refused_before_anything_exists(
    fake, tmp_path, ports):
  module = types.SimpleNamespace(BENCHMARK_NAME='bad_peers',
                                 PEER_TCP_PORTS=ports)
  run = _Run(fake, tmp_path, module=module)
  with pytest.raises(errors.ConfigError, match='PEER_TCP_PORTS') as raised:
    run.Provision()
  assert '\n' not in str(raised.value)
  assert fake.resources == {}
  assert list(run.record.LiveResources()) == []


@pytest.mark.e2e
def test_instance_body(fake, tmp_path):
  run = _Run(fake, tmp_path)
  run.Provision()
  public_key = open(os.path.join(run_scope.RunKeyDir('abc123'),
                                 'pkb_ssh_key.pub')).read()
  policy = _Only(fake.Inserted('resourcePolicies'))
  assert policy['name'] == 'pkb-abc123-compact'
  assert policy['groupPlacementPolicy'] == {'collocation': 'COLLOCATED'}
  policy_url = (f'projects/{PROJECT}/regions/us-central1/resourcePolicies/'
                'pkb-abc123-compact')

  instances = {i['name']: i for i in fake.Inserted('instances')}
  server = instances['pkb-abc123-servers-0']
  assert server['machineType'] == (
      f'projects/{PROJECT}/zones/{ZONE}/machineTypes/t2d-standard-16')
  assert instances['pkb-abc123-clients-1']['machineType'].endswith(
      '/machineTypes/n2-standard-32')
  for instance in instances.values():
    assert instance['labels'] == {'owner': 'jane-doe', 'run_uri': 'abc123',
                                  'benchmark': 'redis_memtier',
                                  'timeout': '20261118t1206z'}
    assert all(LABEL_VALUE.fullmatch(v) for v in instance['labels'].values())
    metadata = {i['key']: i['value'] for i in instance['metadata']['items']}
    assert metadata['ssh-keys'] == f'pkb:{public_key.strip()}'
    assert metadata['ssh-keys'].startswith('pkb:ssh-ed25519 ')
    assert instance['resourcePolicies'] == [policy_url]
    assert instance['scheduling']['onHostMaintenance'] == 'TERMINATE'
    disk = _Only(instance['disks'])
    assert disk['autoDelete'] and disk['boot']
    assert disk['initializeParams']['diskType'].endswith(
        '/diskTypes/pd-balanced')
    nic = _Only(instance['networkInterfaces'])
    assert nic['subnetwork'] == (
        f'projects/{PROJECT}/regions/us-central1/subnetworks/pkb-abc123')
    assert nic['accessConfigs'][0]['type'] == 'ONE_TO_ONE_NAT'
  subnet = _Only(fake.Inserted('subnetworks'))
  assert subnet['ipCidrRange'] == '10.0.0.0/20'
  assert _Only(fake.Inserted('networks'))['autoCreateSubnetworks'] is False


@pytest.mark.e2e
def test_ssh_key_is_private_to_the_operator(fake, tmp_path):
  run = _Run(fake, tmp_path)
  vms = run.Provision()
  # Kept out of results, in a directory only the operator can read.
  key_dir = run_scope.RunKeyDir('abc123')
  key = os.path.join(key_dir, 'pkb_ssh_key')
  assert stat.S_IMODE(os.stat(key).st_mode) == 0o600
  assert stat.S_IMODE(os.stat(key_dir).st_mode) == 0o700
  assert all(vm.keyfile == key and vm.user == 'pkb' for vm in vms)
  assert e2e_support.PrivateKeysUnder(run.run_dir) == []
  assert e2e_support.PrivateKeysUnder(key_dir) == [key]
  entry = run.record.FindResource('gcp_ssh_key', 'run-ssh-key')
  assert entry['data']['private_key_path'] == key
  # Teardown from the record alone deletes the key and its directory.
  assert run.TeardownFromDisk() == []
  assert not os.path.exists(key_dir)


def test_an_operation_never_done_fails_in_one_line_at_its_deadline():
  """Each `wait` call is held by the server; the calls go on, with no pause
  between them, until the timeout on the caller's clock."""
  now = [0.0]
  running = types.SimpleNamespace(
      zone='zones/us-central1-b', region='', name='op-1',
      status=compute_v1.Operation.Status.RUNNING,
      operation_type='insert', target_link='projects/p/instances/vm-1')

  def Wait(project, operation, zone, retry, timeout):
    assert (project, operation, zone, retry) == ('p', 'op-1', 'us-central1-b',
                                                 None)
    assert timeout == 150  # Above the server's hold.
    now[0] += 120  # The server held the call about two minutes.
    return running

  clients = types.SimpleNamespace(
      zone_operations=types.SimpleNamespace(wait=Wait), wait_timeout_s=150)
  with pytest.raises(errors.ResourceError) as late:
    compute_api.WaitForOperation(clients, 'p', running, timeout_s=600,
                                 clock=lambda: now[0])
  assert str(late.value) == ('Operation op-1 (insert vm-1) was not done '
                             'after 600s.')
  assert now[0] == 720  # Asked until past the deadline, then no more.


def test_an_operation_wait_never_answered_ends_at_its_deadline():
  """Every `wait` goes unanswered (150 s each): the read of one went on
  over its 8 attempts and 91 s of pauses, to 1291 s for a 455 s wait. Now
  no pause ends past the deadline and no `wait` starts after it."""
  now = [0.0]
  running = types.SimpleNamespace(
      zone='', region='', name='op-1',
      status=compute_v1.Operation.Status.RUNNING,
      operation_type='insert', target_link='projects/p/networks/net-1')

  def Wait(project, operation, retry, timeout):
    del project, operation, retry
    now[0] += timeout
    raise requests.exceptions.ReadTimeout()

  def Sleep(seconds):
    now[0] += seconds

  clients = types.SimpleNamespace(
      global_operations=types.SimpleNamespace(wait=Wait), wait_timeout_s=150)
  with pytest.raises(errors.ResourceError) as late:
    compute_api.WaitForOperation(clients, 'p', running, timeout_s=455,
                                 clock=lambda: now[0], sleep=Sleep)
  assert str(late.value) == (
      'Waiting for operation op-1 (insert net-1): no answer within 150s '
      '(still failing at its deadline)')
  # Sent at 0, 151, 303 s, and at 455 s (the pause of 4 s cut to 2 s).
  assert now[0] == 455 + 150


@pytest.mark.e2e
def test_operations_are_waited_on_in_their_scope(fake, tmp_path):
  _Run(fake, tmp_path).Provision()
  waits = [r.path for r in fake.requests if r.path.endswith('/wait')]
  assert any(f'/zones/{ZONE}/operations/' in p for p in waits)
  assert any('/regions/us-central1/operations/' in p for p in waits)
  assert any('/global/operations/' in p for p in waits)
  inserts = [r for r in fake.requests
             if r.method == 'POST' and not r.path.endswith('/wait')]
  assert len(waits) == len(inserts)


@pytest.mark.e2e
@pytest.mark.parametrize('os_type,machine_type,project,family', [
    ('debian12', 'n2-standard-4', 'debian-cloud', 'debian-12'),
    ('debian13', 'n2-standard-4', 'debian-cloud', 'debian-13'),
    ('ubuntu2204', 'n2-standard-4', 'ubuntu-os-cloud', 'ubuntu-2204-lts'),
    ('ubuntu2404', 'n2-standard-4', 'ubuntu-os-cloud',
     'ubuntu-2404-lts-amd64'),
    ('rocky9', 'n2-standard-4', 'rocky-linux-cloud', 'rocky-linux-9'),
    ('ubuntu2404', 't2a-standard-4', 'ubuntu-os-cloud',
     'ubuntu-2404-lts-arm64'),
    ('debian12', 'c4a-standard-4', 'debian-cloud', 'debian-12-arm64'),
])
def test_image_for_each_os_type(fake, tmp_path, os_type, machine_type,
                                project, family):
  run = _Run(fake, tmp_path, os_type=os_type,
             config=_Config(machine_type, machine_type, client_count=1))
  run.Provision()
  lookups = [r.path for r in fake.requests if '/images/family/' in r.path]
  assert set(lookups) == {
      f'/compute/v1/projects/{project}/global/images/family/{family}'}
  for instance in fake.Inserted('instances'):
    assert instance['disks'][0]['initializeParams']['sourceImage'] == (
        f'{fake_gce.API}/projects/{project}/global/images/'
        f'{family}-v20261101')


@pytest.mark.parametrize('os_type', ['centos7', 'ubuntu2004', 'windows'])
def test_unsupported_os_type_is_one_clear_line(fake, tmp_path, os_type):
  with pytest.raises(errors.UsageError) as raised:
    gcp_provider.CheckPrerequisites(_Flags(os_type=os_type))
  message = str(raised.value)
  assert '\n' not in message
  assert f'--os_type={os_type} is not available on GCP' in message
  assert 'debian12, debian13, rocky9, ubuntu2204, ubuntu2404' in message
  with pytest.raises(errors.UsageError):
    _Run(fake, tmp_path, os_type=os_type).Construct()
  assert fake.requests == []


@pytest.mark.e2e
def test_explicit_image_skips_the_family(fake, tmp_path):
  config = _Config(client_count=1)
  image = 'projects/my-images/global/images/redis-golden'
  for group in config['vm_groups'].values():
    group['vm_spec']['GCP']['image'] = image
  _Run(fake, tmp_path, os_type='centos7', config=config).Provision()
  assert not [r for r in fake.requests if '/images/' in r.path]
  assert {i['disks'][0]['initializeParams']['sourceImage']
          for i in fake.Inserted('instances')} == {image}


@pytest.mark.e2e
def test_no_placement_policy_without_cluster_style(fake, tmp_path):
  _Run(fake, tmp_path, placement_group_style='none').Provision()
  assert fake.Inserted('resourcePolicies') == []
  for instance in fake.Inserted('instances'):
    assert 'resourcePolicies' not in instance
    assert 'scheduling' not in instance


@pytest.mark.e2e
def test_cluster_style_needs_one_zone(fake, tmp_path):
  run = _Run(fake, tmp_path, config=_Config(client_zone='us-central1-b'))
  with pytest.raises(errors.UsageError, match='one zone'):
    run.Construct()
  _Run(fake, tmp_path / 'b', config=_Config(client_zone='us-east1-b'),
       placement_group_style='none').Provision()
  assert sorted(s['ipCidrRange'] for s in fake.Inserted('subnetworks')) == [
      '10.0.0.0/20', '10.1.0.0/20']


@pytest.mark.e2e
def test_existing_network_is_used_not_created_or_deleted(fake, tmp_path):
  run = _Run(fake, tmp_path, gcp_network='default')
  run.Provision()
  assert fake.Inserted('networks') == [] and fake.Inserted('subnetworks') == []
  for rule in fake.Inserted('firewalls'):
    assert rule['network'] == f'projects/{PROJECT}/global/networks/default'
  assert run.TeardownFromDisk() == []
  assert fake.Calls('networks', 'DELETE') == []
  assert fake.Live() == []


# Flags ------------------------------------------------------------------------


@pytest.mark.parametrize('ranges,message', [
    ([], 'needs --gcp_ssh_source_range'),
    (['0.0.0.0/0'], 'would open SSH'),
    (['10.0.0.0/4'], 'would open SSH'),
    (['::/0'], 'IPv6'),
    (['my-laptop'], 'not an IPv4 address'),
])
def test_ssh_source_range_is_required_and_never_the_internet(
    fake, tmp_path, ranges, message):
  with pytest.raises(errors.UsageError, match=message):
    gcp_provider.CheckPrerequisites(_Flags(gcp_ssh_source_range=ranges))
  run = _Run(fake, tmp_path, gcp_ssh_source_range=ranges)
  with pytest.raises(errors.UsageError, match=message):
    run.Provision()
  assert fake.resources == {}
  assert list(run.record.LiveResources()) == []


def test_ssh_source_range_normalized():
  assert gcp_provider.SshSourceRanges(['203.0.113.7', '198.51.100.9/24']) == [
      '203.0.113.7/32', '198.51.100.0/24']


@pytest.mark.parametrize('endpoint', [
    'https://evil.example', 'http://compute.googleapis.com',
    'https://compute.googleapis.com.evil.example',
    'https://compute.googleapis.com@evil.example'])
def test_credentials_go_only_to_a_google_or_loopback_endpoint(endpoint):
  # The run's access token would go with every call (and again at teardown,
  # from the record: tests/record_models_test.py).
  with pytest.raises(errors.UsageError, match='--gcp_compute_endpoint: .* '
                     'is neither https on \\*.googleapis.com'):
    gcp_provider.CheckPrerequisites(_Flags(gcp_compute_endpoint=endpoint))
  for good in ('https://compute.googleapis.com',
               'https://compute-x.p.googleapis.com', 'http://127.0.0.1:9'):
    gcp_provider.CheckPrerequisites(_Flags(gcp_compute_endpoint=good))


class _NoComputeClient:
  """A meta path finder for a machine without google-cloud-compute."""

  def find_spec(self, name, path=None, target=None):
    del path, target
    if name.split('.')[:3] == ['google', 'cloud', 'compute_v1']:
      raise ModuleNotFoundError(f'No module named {name!r}', name=name)
    return None


def test_without_the_compute_client_a_real_run_is_one_line(monkeypatch):
  """compute_v1 is imported at its first client or request body (2 s of CPU,
  which a dry run does not pay): its absence is one line before anything
  starts, and one line at a teardown's first client, never 'internal error
  ImportError' (what a run without it printed)."""
  import google.cloud  # pylint: disable=g-import-not-at-top
  monkeypatch.delattr(google.cloud, 'compute_v1', raising=False)
  for name in list(sys.modules):
    if name.startswith('google.cloud.compute_v1'):
      monkeypatch.delitem(sys.modules, name)
  monkeypatch.setattr(sys, 'meta_path', [_NoComputeClient(), *sys.meta_path])
  needed = '^--cloud=GCP needs the Python package google-cloud-compute; run '
  with pytest.raises(errors.PrerequisiteError, match=needed):
    gcp_provider.CheckPrerequisites(_Flags())
  with pytest.raises(errors.PrerequisiteError, match=needed):
    compute_api.ComputeClients.Create('http://127.0.0.1:9')


@pytest.mark.e2e
def test_the_provider_and_its_checks_import_no_compute_client():
  """A dry run imports the provider (its CheckPlan) and a real run checks
  its flags before the first client: neither imports compute_v1."""
  code = ('import sys\n'
          'from perfkitbenchmarker import flags\n'
          'from perfkitbenchmarker.providers.gcp import provider\n'
          'print(sorted(m for m in sys.modules if "compute_v1" in m))\n')
  proc = subprocess.run([sys.executable, '-c', code], capture_output=True,
                        text=True, check=True, cwd=e2e_support.REPO)
  assert proc.stdout == '[]\n', proc.stdout[-2000:]


@pytest.mark.parametrize('endpoint, words', [
    ('https://x[y', 'Invalid IPv6 URL'),
    ('https://compute.googleapis.com:99999', 'Port out of range')])
def test_an_endpoint_that_is_no_url_is_one_line(endpoint, words):
  # urlsplit raises on it: './pkb.py --cloud=GCP ... --dry_run
  # --gcp_compute_endpoint=https://x[y' (the plan asks whether it is
  # loopback) was 'pkb: internal error ValueError: Invalid IPv6 URL'.
  assert not vm_util.IsLoopbackEndpoint(endpoint)
  with pytest.raises(errors.UsageError, match=f'--gcp_compute_endpoint: '
                     f'.* is not a URL \\({words}'):
    gcp_provider.CheckPrerequisites(_Flags(gcp_compute_endpoint=endpoint))


# --gcp_ssh_user made the VMs, failed their SSH wait, and teardown then left
# both instances, the network, subnetwork and placement policy ('user ... is
# not a user name ...; left alone'), for every later teardown too.
# --project='p/../../x' made every API call 'internal error ValueError:
# Invalid request.' and left the run's network entry for every teardown.
@pytest.mark.parametrize('flags,words', [
    *[(dict(gcp_ssh_user=user), '^--gcp_ssh_user: .* is not a user name')
      for user in ('bad user', '', '-oProxyCommand=x', 'a:b')],
    *[(dict(project=project), 'is not a GCP project id')
      for project in ('p/../../x', 'P Q', 'p?x=1', '-p')],
])
def test_a_user_or_project_that_is_no_name_is_refused_before_anything(
    flags, words):
  with pytest.raises(errors.UsageError, match=words) as e:
    gcp_provider.CheckPrerequisites(_Flags(**flags))
  assert '\n' not in str(e.value)


def test_a_domain_scoped_project_id_is_taken():
  gcp_provider.GcpOptions.FromFlags(_Flags(project='example.com:my-proj_1'))


@pytest.mark.parametrize('text,reason', [
    ('{"type": "service_account", "private_key": "x", "client_email": "a@b"}',
     'Failed to load service account credentials from {path}'),
    ('not json', 'File {path} is not a valid json file.'),
    ('[' * 100000, 'a credentials file nested too deeply to read'),
])
def test_a_credentials_file_it_cannot_use_is_named_with_why(
    tmp_path, monkeypatch, text, reason):
  # It said 'found no Google credentials; ... or set
  # GOOGLE_APPLICATION_CREDENTIALS' to a user who had set it (a deep file:
  # 'internal error RecursionError').
  path = tmp_path / 'key.json'
  path.write_text(text)
  monkeypatch.setenv('GOOGLE_APPLICATION_CREDENTIALS', str(path))
  with pytest.raises(errors.PrerequisiteError) as e:
    compute_api.ComputeClients.Create()
  message = str(e.value)
  assert message.startswith('--cloud=GCP has no usable Google credentials (' +
                            reason.format(path=path))
  assert '\n' not in message and len(message) < 500


def test_a_teardown_builds_the_clients_of_each_endpoint_once(tmp_path,
                                                             monkeypatch):
  """FromRecord built ComputeClients (10 clients; with real credentials a
  google.auth.default lookup, about 76 ms of CPU, and an access token of
  its own) for every entry. Now once per endpoint for a teardown, and the
  next teardown builds its own."""
  with fake_gce.FakeGce(operations_done=True) as one, fake_gce.FakeGce(
      operations_done=True) as two:
    record = run_record.RunRecord.Create(str(tmp_path / 'run'), 'abc123',
                                         cloud='GCP')

    run_clients = [compute_api.ComputeClients.Create(fake.endpoint)
                   for fake in (one, two)]

    def Networks(names):
      for clients in run_clients:
        for name in names:
          gcp_network.GceNetwork(name, clients, PROJECT,
                                 record=record).Create()

    Networks(['pkb-abc123-1', 'pkb-abc123-2', 'pkb-abc123-3'])
    built = _CountClients(monkeypatch)
    assert resource.TeardownFromRecord(record) == []
    assert sorted(built) == sorted([one.endpoint, two.endpoint])
    Networks(['pkb-abc123-4'])
    assert resource.TeardownFromRecord(record) == []
    assert sorted(built) == sorted([one.endpoint, two.endpoint] * 2)
    assert one.Live() == two.Live() == []


def test_a_recorded_project_that_is_no_project_id_is_one_line(tmp_path):
  record = run_record.RunRecord.Create(str(tmp_path / 'r'), 'abc123',
                                       cloud='GCP')
  record.AddResource('gcp_network', 'pkb-abc123', project='p/../../x',
                     api_endpoint='http://127.0.0.1:9')
  record.UpdateResource('gcp_network', 'pkb-abc123', status='created')
  (failure,) = resource.TeardownFromRecord(record)
  assert "'p/../../x' is not a GCP project id" in failure
  assert '\n' not in failure


@pytest.mark.parametrize('groups', [['g' * 55], ['a_b', 'A-b']])
def test_two_vms_of_one_name_are_refused_before_anything(fake, tmp_path,
                                                         groups):
  # A group name cut at 63 characters gave both its VMs one name: the
  # second insert found the first's instance (409, 'already done') and the
  # run went on with two VMs of one instance.
  config = {'vm_groups': {
      group: {'vm_spec': {'GCP': {'machine_type': 'n2-standard-2',
                                  'zone': ZONE}}, 'vm_count': 2}
      for group in groups}}
  run = _Run(fake, tmp_path, config=config)
  with pytest.raises(errors.ConfigError, match=(
      r'a VM would be named pkb-abc123-\S+, as another VM of the run')):
    run.Construct()
  assert fake.requests == [] and run.record.Resources() == []


def test_project_is_required():
  with pytest.raises(errors.UsageError, match='--project'):
    gcp_provider.CheckPrerequisites(_Flags(project=None))


def test_flags_module_imports_only_absl():
  # pylint: disable=g-import-not-at-top
  from absl import flags
  from perfkitbenchmarker.providers.gcp import flags as gcp_flags
  source = open(gcp_flags.__file__).read()
  imports = re.findall(r'^(?:from|import) (\S+)', source, re.M)
  assert imports == ['absl']
  for name in ('gcp_ssh_source_range', 'gcp_network', 'gcp_compute_endpoint',
               'gcp_boot_disk_type', 'gcp_ssh_user'):
    assert name in flags.FLAGS
  assert flags.FLAGS['gcp_ssh_source_range'].default in ([], None)


# Naming -----------------------------------------------------------------------


def test_label_values_follow_gcp_rules():
  assert naming.LabelValue('Jane.Doe@Example.COM') == 'jane-doe-example-com'
  assert len(naming.LabelValue('x' * 100)) == 63
  assert operator_access.ExpiryStamp(NOW, 0) == 'none'
  assert operator_access.ExpiryStamp(NOW, 90) == '20261118t1236z'
  long_name = naming.ResourceName('abc123', 'A_Very.Long--group' * 5, '12')
  assert RESOURCE_NAME.fullmatch(long_name) and len(long_name) <= 63


def test_images_table():
  assert images.FamilyFor('rocky9', 't2a-standard-8') == images.ImageFamily(
      'rocky-linux-cloud', 'rocky-linux-9-arm64')
  with pytest.raises(errors.UsageError, match='end of life'):
    images.FamilyFor('centos7', 'n2-standard-4')


def test_boot_disk_type_follows_the_machine_series():
  assert gcp_vm.DefaultBootDiskType('c4-standard-8') == 'hyperdisk-balanced'
  assert gcp_vm.DefaultBootDiskType('n2-standard-8') == 'pd-balanced'


# Failures and teardown ------------------------------------------------------

_FAILURE_POINTS = [
    ('networks', 1), ('subnetworks', 1), ('firewalls', 1), ('firewalls', 2),
    ('resourcePolicies', 1), ('instances', 1), ('instances', 3),
]


@pytest.mark.e2e
@pytest.mark.parametrize('mode', ['http', 'operation'])
@pytest.mark.parametrize('collection,nth', _FAILURE_POINTS)
def test_failure_after_each_kind_leaves_nothing_after_teardown(
    fake, tmp_path, collection, nth, mode):
  fake.FailInsert(collection, nth=nth, mode=mode)
  run = _Run(fake, tmp_path)
  with pytest.raises(errors.ResourceError) as raised:
    run.Provision()
  assert '\n' not in str(raised.value)
  if mode == 'operation':
    assert 'QUOTA_EXCEEDED' in str(raised.value)
  else:  # A 500 is retried before it is given up on.
    assert 'after 3 attempts' in str(raised.value)
  assert list(run.record.LiveResources()), 'something was made before'

  assert run.TeardownFromDisk() == []
  assert fake.Live() == []
  assert list(run_record.RunRecord.Load(run.run_dir).LiveResources()) == []


@pytest.mark.e2e
def test_teardown_retries_a_transient_delete_failure(fake, tmp_path):
  run = _Run(fake, tmp_path)
  run.Provision()
  fake.FailDelete('resourcePolicies', times=1)
  assert run.TeardownFromDisk() == []
  assert fake.Live() == []


@pytest.mark.e2e
def test_teardown_reports_what_it_could_not_delete_and_can_be_rerun(
    fake, tmp_path):
  run = _Run(fake, tmp_path)
  run.Provision()
  fake.FailDelete('instances', times=100, status=403)
  failures = run.TeardownFromDisk()
  # Three instances are left, and so is what they still use.
  assert len(failures) == 6, failures
  assert all('\n' not in f for f in failures)
  assert {c for c, _, _, _ in fake.resources} == {
      'instances', 'resourcePolicies', 'subnetworks', 'networks'}
  fake.ClearFailures()
  assert run.TeardownFromDisk() == []
  assert fake.Live() == []


@pytest.mark.e2e
def test_stockout_and_unknown_machine_type_are_explained(fake, tmp_path):
  fake.FailInsert('instances', mode='operation',
                  code='ZONE_RESOURCE_POOL_EXHAUSTED')
  with pytest.raises(errors.ResourceError, match='try another --zone'):
    _Run(fake, tmp_path).Provision()
  fake2_dir = tmp_path / 'other'
  run = _Run(fake, fake2_dir, run_uri='def456',
             config=_Config(servers='n2-bogus-4', client_count=1))
  made = {c: len(fake.Inserted(c)) for c in ('networks', 'firewalls')}
  with pytest.raises(errors.ResourceError, match='not offered in zone'):
    run.Provision()
  # Asked before anything of the run was made: nothing to tear down.
  assert {c: len(fake.Inserted(c)) for c in made} == made
  assert run.TeardownFromDisk() == []


@pytest.mark.e2e
def test_resumed_run_takes_vms_from_the_record(fake, tmp_path):
  first = _Run(fake, tmp_path)
  created = {vm.name: vm.ip_address for vm in first.Provision()}
  inserts = len(fake.Inserted('instances'))

  resumed = _Run(fake, tmp_path)  # Same run dir and run_uri: pkb resuming.
  vms = resumed.Construct()
  assert {vm.name: vm.ip_address for vm in vms} == created
  assert all(vm.created and vm.internal_ip for vm in vms)
  resumed.provider.Provision(resumed.spec)
  assert len(fake.Inserted('instances')) == inserts


@pytest.mark.e2e
def test_vm_rebuilt_from_record_can_be_reached_and_deleted(fake, tmp_path):
  run = _Run(fake, tmp_path)
  original = run.Provision()[0]
  record = run_record.RunRecord.Load(run.run_dir)
  vm = resource.FromRecord(
      record.FindResource('gcp_vm', original.name), record)
  assert isinstance(vm, gcp_vm.GceVirtualMachine)
  assert (vm.ip_address, vm.internal_ip, vm.user, vm.keyfile, vm.zone) == (
      original.ip_address, original.internal_ip, 'pkb', original.keyfile,
      ZONE)
  assert original.name in [i['name'] for i in fake.Live('instances')]
  vm.Delete()
  assert original.name not in [i['name'] for i in fake.Live('instances')]


# Transient errors and stops --------------------------------------------------


@pytest.mark.e2e
def test_reads_are_retried_by_the_run_through_its_pauses(fake, tmp_path):
  """A 503 from a get (machine type, image family, instance) is tried
  again by the run, pausing through the run's sleep (so a stop wakes it),
  not by the client library's own retry, which sleeps on the real clock."""
  fake.FailGet('machineTypes')
  fake.FailGet('images')
  fake.FailGet('instances', times=2)
  time = FakeTime()
  run = _Run(fake, tmp_path, config=_OneVm(), time=time)
  vm = _Only(run.Provision())
  assert vm.ip_address and vm.internal_ip
  assert [len(fake.Calls(c, 'GET')) for c in
          ('machineTypes', 'images', 'instances')] == [2, 2, 3]
  # Pauses of 1 s (machine type), 1 s (image), 1 s then 2 s (instance).
  assert time.now == 5
  assert run.TeardownFromDisk() == []
  assert fake.Live() == []


@pytest.mark.e2e
def test_a_stop_ends_a_read_that_gce_answers_with_503s(fake, tmp_path):
  """The client library's retry of a get went on up to 600 s through 503s
  and no stop could end it; the run's own ends at the stop."""
  # Eight 503s, then answers: a retry that ignores the stop ends too (the
  # library's takes a few seconds over eight), so the test fails on the
  # create's success rather than hanging.
  fake.FailGet('instances', times=8)
  # The stop lands in the pause after the second 503 (1 s, then 2 s).
  time = FakeTime(stop_at=1 + 0.5)
  run = _Run(fake, tmp_path, config=_OneVm(), time=time)
  with pytest.raises(errors.ResourceError) as stopped:
    run.Provision()
  assert re.fullmatch(
      r'Looking up gcp_instance pkb-abc123-servers-0: GET \S+: Injected '
      r'failure of instances get; not tried again, the run being stopped',
      str(stopped.value))
  # No get after the stop, which woke the pause within its step.
  assert len(fake.Calls('instances', 'GET')) == 2
  assert time.now == 2
  assert run.TeardownFromDisk() == []
  assert fake.Live() == []


# How GCE refuses a delete as not ready (still being created, or another
# operation on it runs): the call's 400 resourceNotReady, or the delete taken
# and its operation ending in RESOURCE_NOT_READY (which had only the 5
# attempts, ~15 s, of a transient error); the words the failure quotes.
_NOT_READY = {
    'http': (r'DELETE \S+: Injected failure of instances delete',
             'instances delete'),
    'operation': ('RESOURCE_NOT_READY: Injected RESOURCE_NOT_READY',
                  'Injected RESOURCE_NOT_READY'),
}
_each_refusal = pytest.mark.parametrize('refusal', sorted(_NOT_READY))


def _NotReadyVm(fake, tmp_path, times, refusal):
  """A run's one VM, provisioned, whose next `times` deletes GCE refuses as
  not ready (`refusal`: _NOT_READY); with the run's FakeTime."""
  time = FakeTime()
  run = _Run(fake, tmp_path, config=_OneVm(), time=time)
  vm = _Only(run.Provision())
  fake.FailDelete('instances', times=times, status=400,
                  reason='resourceNotReady', mode=refusal,
                  code='RESOURCE_NOT_READY')
  return run, vm, time


@pytest.mark.e2e
@_each_refusal
def test_a_delete_refused_as_not_ready_is_tried_again_until_taken(
    fake, tmp_path, refusal):
  run, vm, time = _NotReadyVm(fake, tmp_path, times=3, refusal=refusal)
  start = time.now
  vm.Delete()  # What teardown calls (with the run's pauses).
  assert fake.Live('instances') == []
  assert len(fake.Calls('instances', 'DELETE')) == 4
  assert time.now - start == 3 * compute_api.NOT_READY_PAUSE_S
  assert run.record.FindResource('gcp_vm', vm.name)['status'] == 'deleted'
  assert run.TeardownFromDisk() == []
  assert fake.Live() == []


@pytest.mark.e2e
@_each_refusal
def test_a_delete_still_refused_as_not_ready_is_one_line_naming_teardown(
    fake, tmp_path, refusal):
  run, vm, time = _NotReadyVm(fake, tmp_path, times=10**6, refusal=refusal)
  start = time.now
  with pytest.raises(errors.ResourceError) as refused:
    vm.Delete()
  again = run_signals.TeardownCommand('abc123', run.run_dir)
  assert '--results_dir=' in again  # The run's results are off the default.
  assert re.fullmatch(
      rf'Deleting gcp_instance {vm.name}: {_NOT_READY[refusal][0]}; still '
      rf'refused as not ready after {compute_api.DELETE_BUDGET_S}s: run '
      rf'`{re.escape(again)}` again later', str(refused.value))
  # Bounded: tried every pause until the deadline, then no more.
  assert time.now - start == compute_api.DELETE_BUDGET_S
  assert len(fake.Calls('instances', 'DELETE')) == (
      compute_api.DELETE_BUDGET_S // compute_api.NOT_READY_PAUSE_S + 1)
  # Still in the record, for that command.
  assert run.record.FindResource('gcp_vm', vm.name)['status'] != 'deleted'
  fake.ClearFailures()
  assert run.TeardownFromDisk() == []
  assert fake.Live() == []


@pytest.mark.e2e
@_each_refusal
def test_a_stop_ends_the_not_ready_retries_naming_teardown(fake, tmp_path,
                                                           refusal):
  run, vm, time = _NotReadyVm(fake, tmp_path, times=10**6, refusal=refusal)
  # The stop lands in the second pause.
  time.stop_at = time.now + compute_api.NOT_READY_PAUSE_S * 1.5
  with pytest.raises(errors.ResourceError) as stopped:
    vm.Delete()
  again = run_signals.TeardownCommand('abc123', run.run_dir)
  assert str(stopped.value).endswith(
      f'{_NOT_READY[refusal][1]}; not tried again, the run being stopped: '
      f'run `{again}` to delete it')
  assert len(fake.Calls('instances', 'DELETE')) == 2
  assert run.record.FindResource('gcp_vm', vm.name)['status'] != 'deleted'
  fake.ClearFailures()
  assert run.TeardownFromDisk() == []
  assert fake.Live() == []


# An operation's wait answered with a transient error -------------------------


def _RunNetwork(fake, tmp_path, time, clients=None):
  """The run's network on `fake`, with the run's record and FakeTime: a
  resource with no readiness check, created once its insert is done."""
  record = run_record.RunRecord.Create(str(tmp_path / 'run'), 'abc123',
                                       cloud='GCP')
  return gcp_network.GceNetwork(
      'pkb-abc123', clients or compute_api.ComputeClients.Create(fake.endpoint),
      PROJECT, record=record, sleep=time.sleep, clock=time.clock)


def _Waits(fake):
  return [r for r in fake.requests if r.path.endswith('/wait')]


def _Operation(fake, kind):
  return _Only([operation for operation in fake.operations.values()
                if operation['operationType'] == kind])


def test_a_503_on_an_inserts_wait_waits_again_and_never_inserts_again(
    tmp_path):
  """The 503 ended the wait as retryable, so the insert was sent again; GCE
  refused it (409) while the first still ran, that was taken for "already
  done", and the network counted as created before its insert was."""
  with fake_gce.FakeGce(insert_looks=2, visible_when_done=True) as fake:
    fake.FailWait(times=2)
    time = FakeTime()
    net = _RunNetwork(fake, tmp_path, time)
    net.Create()
    assert len(fake.Inserted('networks')) == 1
    # Created once its insert was done: the network is there.
    assert _Operation(fake, 'insert')['status'] == 'DONE'
    assert ('networks', PROJECT, 'global', net.name) in fake.resources
    # Two 503s, then the two looks the insert takes; pauses of 1 s, 2 s.
    assert len(_Waits(fake)) == 4
    assert time.now == 1 + 2
    entry = net.record.FindResource('gcp_network', net.name)
    assert entry['status'] == 'created'
    assert entry['data']['pending_insert'] is None


@pytest.mark.parametrize('ends', ['done', 'failed'])
def test_a_503_on_a_deletes_wait_waits_again_and_never_deletes_again(
    tmp_path, ends):
  """The 503 ended the wait as retryable, so the delete was sent again and
  found nothing (a 404, taken for "gone") though the first delete's
  operation was still to end, and it may fail: its own end decides."""
  with fake_gce.FakeGce() as fake:
    time = FakeTime()
    net = _RunNetwork(fake, tmp_path, time)
    net.Create()
    if ends == 'failed':
      fake.FailDelete('networks', mode='operation',
                      code='RESOURCE_IN_USE_BY_ANOTHER_RESOURCE')
    fake.FailWait(times=2)
    start = time.now
    if ends == 'done':
      net.Delete()
      assert fake.Live() == []
      assert net.record.FindResource('gcp_network',
                                     net.name)['status'] == 'deleted'
    else:
      with pytest.raises(errors.ResourceError) as failed:
        net.Delete()
      assert str(failed.value) == (
          'Deleting gcp_network pkb-abc123 failed: '
          'RESOURCE_IN_USE_BY_ANOTHER_RESOURCE: Injected '
          'RESOURCE_IN_USE_BY_ANOTHER_RESOURCE')
      assert [n['name'] for n in fake.Live()] == [net.name]
      assert net.record.FindResource('gcp_network',
                                     net.name)['status'] == 'created'
    assert len(fake.Calls('networks', 'DELETE')) == 1
    assert _Operation(fake, 'delete')['status'] == 'DONE'
    assert time.now - start == 1 + 2


def test_a_stop_ends_an_inserts_waits_again_with_the_insert_recorded(
    tmp_path):
  with fake_gce.FakeGce() as fake:
    fake.FailWait(times=10)
    # The stop lands in the pause after the second 503 (1 s, then 2 s).
    time = FakeTime(stop_at=1 + 0.5)
    net = _RunNetwork(fake, tmp_path, time)
    with pytest.raises(errors.ResourceError) as stopped:
      net.Create()
    insert = _Operation(fake, 'insert')['name']
    assert re.fullmatch(
        rf'Waiting for operation {insert} \(insert pkb-abc123\): POST \S+: '
        rf'Injected failure of the wait on {insert}; not tried again, the '
        'run being stopped', str(stopped.value))
    assert len(fake.Inserted('networks')) == 1
    assert len(_Waits(fake)) == 2 and time.now == 2
    # Teardown waits for that insert, then deletes what it made.
    entry = net.record.FindResource('gcp_network', net.name)
    assert entry['data']['pending_insert'] == insert
    fake.ClearFailures()
    assert resource.TeardownFromRecord(
        run_record.RunRecord.Load(net.record.run_dir)) == []
    assert fake.Live() == []


def test_a_deletes_wait_failing_throughout_ends_in_one_line_sent_once(
    tmp_path):
  with fake_gce.FakeGce() as fake:
    time = FakeTime()
    net = _RunNetwork(fake, tmp_path, time)
    net.Create()
    fake.FailWait(times=10**6)
    start = time.now
    del fake.requests[:]
    with pytest.raises(errors.ResourceError) as failed:
      net.Delete()
    message = str(failed.value)
    assert '\n' not in message
    assert re.search(
        r'Waiting for operation \S+ \(delete pkb-abc123\): POST \S+: '
        rf'Injected failure of the wait on \S+ \(after '
        rf'{compute_api.READ_ATTEMPTS} attempts\)', message), message
    assert len(fake.Calls('networks', 'DELETE')) == 1
    assert len(_Waits(fake)) == compute_api.READ_ATTEMPTS
    assert time.now - start == 1 + 2 + 4 + 8 + 16 + 30 + 30
    # Still live in the record, for a later teardown.
    assert net.record.FindResource('gcp_network',
                                   net.name)['status'] == 'created'
    fake.ClearFailures()
    assert resource.TeardownFromRecord(
        run_record.RunRecord.Load(net.record.run_dir)) == []
    assert fake.Live() == []


# A delete's one budget ----------------------------------------------------


def test_503s_among_not_ready_refusals_share_the_deletes_one_budget(
    tmp_path):
  """resource._Retry (5 attempts over a transient error) wrapped the
  not-ready retries: each 503 among the refusals began another 300 s of
  them, up to 5 x 300 s. Both now share the delete's one budget."""
  with fake_gce.FakeGce() as fake:
    time = FakeTime()
    net = _RunNetwork(fake, tmp_path, time)
    net.Create()
    for _ in range(5):
      fake.FailDelete('networks', times=20, status=400,
                      reason='resourceNotReady')
      fake.FailDelete('networks', times=1, status=503)
    fake.FailDelete('networks', times=10**6, status=400,
                    reason='resourceNotReady')
    start = time.now
    with pytest.raises(errors.ResourceError) as refused:
      net.Delete()
    again = run_signals.TeardownCommand('abc123', net.record.run_dir)
    assert re.fullmatch(
        r'Deleting gcp_network pkb-abc123: DELETE \S+: Injected failure of '
        r'networks delete; still refused as not ready after 300s: run '
        rf'`{re.escape(again)}` again later', str(refused.value))
    assert time.now - start == 300
    # 20 refusals 10 s apart (0..190 s), the 503 (200 s), refusals from
    # 201 s (a pause of 1 s) to 291 s, and the last at the budget's end.
    assert len(fake.Calls('networks', 'DELETE')) == 20 + 1 + 10 + 1
    assert net.record.FindResource('gcp_network',
                                   net.name)['status'] == 'created'
    fake.ClearFailures()
    assert resource.TeardownFromRecord(
        run_record.RunRecord.Load(net.record.run_dir)) == []
    assert fake.Live() == []


def test_a_delete_failing_with_503s_throughout_is_tried_over_the_budget(
    tmp_path):
  with fake_gce.FakeGce() as fake:
    time = FakeTime()
    net = _RunNetwork(fake, tmp_path, time)
    net.Create()
    fake.FailDelete('networks', times=10**6, status=503)
    start = time.now
    with pytest.raises(errors.ResourceError) as failed:
      net.Delete()
    again = run_signals.TeardownCommand('abc123', net.record.run_dir)
    assert re.fullmatch(
        r'Deleting gcp_network pkb-abc123: DELETE \S+: Injected failure of '
        r'networks delete; still failing after 300s: run '
        rf'`{re.escape(again)}` again later', str(failed.value))
    # Sent at 0, 1, 3, 7, 15, 31 s, then every 30 s to 271 s, and at 300 s.
    assert time.now - start == 300
    assert len(fake.Calls('networks', 'DELETE')) == 6 + 8 + 1


# A call the endpoint does not answer -----------------------------------------

# Every call's timeout here (operation waits' too), injected through the
# clients: the fake holds a stalled answer for fake_gce.STALL_HOLD_S, far
# longer, as a client with the library's default (600 s) waits it out.
_TIMEOUT_S = 1.0


def _ShortTimeouts(fake):
  return compute_api.ComputeClients.Create(
      fake.endpoint, call_timeout_s=_TIMEOUT_S, wait_timeout_s=_TIMEOUT_S)


def _StopNow(stops):
  """A Stall's `then`: the run's stop (what a signal's StopChildren counts)
  while the call is held, its time noted in `stops`."""
  def Stop():
    stops.append(wall_time.monotonic())
    run_processes.CountStop()
  return Stop


@pytest.mark.parametrize('headers', [False, True],
                         ids=['no answer', 'headers then nothing'])
def test_a_stalled_get_is_sent_again_and_taken_once_answered(tmp_path,
                                                             headers):
  """Without a timeout of its own the get waited until the fake let its
  answer go (GCE's default: up to 600 s), and no stop ended it; it now ends
  at its timeout and is read again, through the run's pause."""
  with fake_gce.FakeGce() as fake:
    time = FakeTime()
    net = _RunNetwork(fake, tmp_path, time, _ShortTimeouts(fake))
    net.Create()
    fake.Stall('networks', 'GET', headers=headers)
    start = time.now
    assert net.Get().name == net.name
    assert fake.stalled == 1
    assert len(fake.Calls('networks', 'GET')) == 2
    assert time.now - start == 1  # Read's first pause, on the run's sleep.


def test_a_stalled_operation_wait_waits_again_and_inserts_once(tmp_path):
  with fake_gce.FakeGce(insert_looks=2, visible_when_done=True) as fake:
    fake.Stall('operations', 'POST', headers=True)
    time = FakeTime()
    net = _RunNetwork(fake, tmp_path, time, _ShortTimeouts(fake))
    net.Create()
    assert fake.stalled == 1
    assert len(fake.Inserted('networks')) == 1
    # The stalled wait (the insert's first look), then its second: done.
    assert len(_Waits(fake)) == 2 and time.now == 1
    assert _Operation(fake, 'insert')['status'] == 'DONE'
    entry = net.record.FindResource('gcp_network', net.name)
    assert entry['status'] == 'created'
    assert entry['data']['pending_insert'] is None


# How a sent insert or delete goes unanswered: no answer, its headers then
# nothing (each until the call's timeout), or the connection closed.
_UNANSWERED = pytest.mark.parametrize('how', [
    {}, {'headers': True}, {'drop': True}],
    ids=['no answer', 'headers then nothing', 'connection dropped'])


def _RequestIds(fake, collection, method):
  return [r.request_id for r in fake.Calls(collection, method)]


@_UNANSWERED
def test_an_unanswered_insert_is_sent_again_with_its_request_id_made_once(
    tmp_path, how):
  """GCE made the network and its answer was lost. Sent again, the insert
  was refused (409) and taken for "already done" with no operation waited
  on, or (a timeout) not sent again at all, the create failing; now the
  second send carries the first's request_id, GCE answers it with the first
  insert's operation, and that is waited on."""
  with fake_gce.FakeGce(insert_looks=2, visible_when_done=True) as fake:
    fake.Stall('networks', 'POST', **how)
    time = FakeTime()
    net = _RunNetwork(fake, tmp_path, time, _ShortTimeouts(fake))
    net.Create()
    assert fake.stalled == 1
    first, again = _RequestIds(fake, 'networks', 'POST')
    assert first == again and uuid.UUID(first).int
    # One insert, its operation waited on until done: one network.
    insert = _Operation(fake, 'insert')
    assert insert['status'] == 'DONE'
    assert [n['name'] for n in fake.Live()] == [net.name]
    assert time.now == 1  # resource._Retry's pause.
    entry = net.record.FindResource('gcp_network', net.name)
    assert entry['status'] == 'created'
    assert entry['data']['pending_insert'] is None


@_UNANSWERED
def test_an_unanswered_delete_is_sent_again_with_its_request_id(tmp_path,
                                                                 how):
  """GCE took the delete and its answer was lost. Sent again, the delete
  found nothing (404) and was taken for "gone" with its operation's end
  unknown, or (a timeout) not sent again at all; now the second send
  carries the first's request_id and the first delete's operation is
  waited on."""
  with fake_gce.FakeGce() as fake:
    time = FakeTime()
    net = _RunNetwork(fake, tmp_path, time, _ShortTimeouts(fake))
    net.Create()
    fake.Stall('networks', 'DELETE', **how)
    net.Delete()
    first, again = _RequestIds(fake, 'networks', 'DELETE')
    assert first == again and uuid.UUID(first).int
    assert _Operation(fake, 'delete')['status'] == 'DONE'
    assert fake.Live() == []
    assert time.now == 1  # _Delete's first pause over a transient error.
    entry = net.record.FindResource('gcp_network', net.name)
    assert entry['status'] == 'deleted'
    assert entry['data']['delete_request_id'] is None


def test_an_unanswered_delete_whose_operation_fails_is_not_taken_as_gone(
    tmp_path):
  """The first delete's operation fails (the network still in use): sent
  again without its request_id, the 404 was taken for "gone" and the entry
  marked deleted while the network stayed."""
  with fake_gce.FakeGce() as fake:
    time = FakeTime()
    net = _RunNetwork(fake, tmp_path, time, _ShortTimeouts(fake))
    net.Create()
    fake.FailDelete('networks', mode='operation',
                    code='RESOURCE_IN_USE_BY_ANOTHER_RESOURCE')
    fake.Stall('networks', 'DELETE', drop=True)
    with pytest.raises(errors.ResourceError) as failed:
      net.Delete()
    assert str(failed.value) == (
        'Deleting gcp_network pkb-abc123 failed: '
        'RESOURCE_IN_USE_BY_ANOTHER_RESOURCE: Injected '
        'RESOURCE_IN_USE_BY_ANOTHER_RESOURCE')
    assert len(set(_RequestIds(fake, 'networks', 'DELETE'))) == 1
    assert [n['name'] for n in fake.Live()] == [net.name]
    assert net.record.FindResource('gcp_network',
                                   net.name)['status'] == 'created'


def test_a_409_to_an_insert_sent_again_without_its_request_id_is_taken(
    tmp_path, caplog):
  """Another request made the name between the two sends (GCE does not
  know the request_id): the 409 is still taken for "already done", names
  being the run's."""
  caplog.set_level(logging.INFO)
  with fake_gce.FakeGce() as fake:
    other = lambda: fake.Handle(  # pylint: disable=g-long-lambda
        'POST', f'/compute/v1/projects/{PROJECT}/global/networks',
        {'name': 'pkb-abc123'})
    # The first send fails (503, nothing made), and the other request
    # makes the network.
    fake.FailInsert('networks', status=503, persistent=False, then=other)
    time = FakeTime()
    net = _RunNetwork(fake, tmp_path, time, _ShortTimeouts(fake))
    net.Create()
    ours = [r.request_id for r in fake.Calls('networks', 'POST')
            if r.request_id]
    assert len(ours) == 2 and len(set(ours)) == 1
    assert len(fake.Calls('networks', 'POST')) == 3  # Theirs among them.
    assert 'already done' in caplog.text
    assert net.record.FindResource('gcp_network',
                                   net.name)['status'] == 'created'


def test_a_later_teardown_sends_the_recorded_delete_request_again(tmp_path):
  """A stop cut the delete short after GCE took it, unanswered: the
  request_id is in the record, and the teardown command sends it again and
  waits on the first delete's operation (a new delete would find nothing
  and take it for gone while that operation may still fail)."""
  with fake_gce.FakeGce() as fake:
    time = FakeTime()
    net = _RunNetwork(fake, tmp_path, time, _ShortTimeouts(fake))
    net.Create()
    fake.Stall('networks', 'DELETE', then=run_processes.CountStop)
    with pytest.raises(errors.ResourceError, match='the run being stopped'):
      net.Delete()
    first = _Only(_RequestIds(fake, 'networks', 'DELETE'))
    entry = net.record.FindResource('gcp_network', net.name)
    assert entry['data']['delete_request_id'] == first
    assert resource.TeardownFromRecord(
        run_record.RunRecord.Load(net.record.run_dir)) == []
    assert _RequestIds(fake, 'networks', 'DELETE') == [first, first]
    assert _Operation(fake, 'delete')['status'] == 'DONE'
    assert fake.Live() == []


def _StopDuringInsert(fake, tmp_path, time=None, **how):
  """The run's network, whose insert GCE takes and leaves unanswered (as
  `how` says) while the run is stopped: GCE makes the network later, once
  its operation is done (visible_when_done). Returns the network."""
  fake.Stall('networks', 'POST', then=run_processes.CountStop, **how)
  net = _RunNetwork(fake, tmp_path, time or FakeTime(), _ShortTimeouts(fake))
  with pytest.raises(errors.ResourceError, match='the run being stopped'):
    net.Create()
  return net


@_UNANSWERED
def test_teardown_finds_an_unanswered_insert_by_its_request_id(tmp_path,
                                                              how):
  """GCE took the insert, its answer was lost, and the run was stopped
  before it was sent again. The record kept no trace of it (no operation
  answered, the request_id not recorded), and teardown's delete, sent while
  GCE still made the network, was answered 404 and taken for "gone": the
  network appeared after, left behind. Now the record holds the insert's
  request_id, and teardown finds the insert's operation by it
  (clientOperationId) and waits for it before the delete."""
  with fake_gce.FakeGce(insert_looks=2, visible_when_done=True) as fake:
    net = _StopDuringInsert(fake, tmp_path, **how)
    assert resource.TeardownFromRecord(
        run_record.RunRecord.Load(net.record.run_dir)) == []
    assert fake.Live() == []
    first = _Only(_RequestIds(fake, 'networks', 'POST'))  # Never sent again.
    entry = net.record.FindResource('gcp_network', net.name)
    assert entry['data']['insert_request_id'] == first
    assert _Operation(fake, 'insert')['status'] == 'DONE'


def test_an_unanswered_insert_sent_after_a_failed_one_is_found_by_teardown(
    tmp_path):
  """The first insert's operation ended in a retryable error and a new
  insert was sent, unanswered, as the run stopped: the record still named
  the first (done) operation as pending, teardown waited on that one only,
  and the second's network was left."""
  with fake_gce.FakeGce(insert_looks=2, visible_when_done=True) as fake:
    fake.FailInsert('networks', mode='operation', code='RATE_LIMIT_EXCEEDED',
                    persistent=False)
    fake.AtInsert('networks', 2, lambda: fake.Stall(
        'networks', 'POST', then=run_processes.CountStop))
    net = _RunNetwork(fake, tmp_path, FakeTime(), _ShortTimeouts(fake))
    with pytest.raises(errors.ResourceError, match='the run being stopped'):
      net.Create()
    assert len(set(_RequestIds(fake, 'networks', 'POST'))) == 2
    assert resource.TeardownFromRecord(
        run_record.RunRecord.Load(net.record.run_dir)) == []
    assert fake.Live() == []


def test_a_teardown_that_cannot_look_an_unanswered_insert_up_deletes_later(
    tmp_path):
  """A 404 to the delete is not taken for "gone" while GCE may still make
  the network: the entry is left live, its line naming the teardown
  command, and that command deletes it once GCE answers the lookup."""
  with fake_gce.FakeGce(insert_looks=2, visible_when_done=True) as fake:
    net = _StopDuringInsert(fake, tmp_path)
    fake.FailGet('operations', status=403)
    left = resource.TeardownFromRecord(
        run_record.RunRecord.Load(net.record.run_dir))
    again = run_signals.TeardownCommand('abc123', net.record.run_dir)
    # Its middle (the call's URL and GCE's words) cut to bound the line.
    assert re.fullmatch(
        r'gcp_network pkb-abc123: Looking up the insert of gcp_network '
        r'pkb-abc123 by its request_id: GET \S+\.\.\..*: not deleted, as it '
        rf'may still be made: run `{re.escape(again)}` again', _Only(left))
    assert not fake.Calls('networks', 'DELETE')
    assert [n['name'] for n in fake.Live()] == [net.name]
    assert resource.TeardownFromRecord(
        run_record.RunRecord.Load(net.record.run_dir)) == []
    assert fake.Live() == []


class _HeldWaits(FakeTime):
  """FakeTime whose clock, once `held`, moves 100 s at each read: GCE holds
  each `wait` on an operation still running (about two minutes in GCE)."""
  held = False

  def clock(self):
    self.now += 100 if self.held else 0
    return self.now


@pytest.mark.parametrize('answered', [False, True],
                         ids=['insert never answered', 'insert waited on'])
def test_a_404_to_a_delete_before_its_insert_is_seen_done_is_not_gone(
    tmp_path, answered):
  """GCE still makes the network past teardown's wait for its insert
  (OPERATION_TIMEOUT_S): the delete, sent all the same, was answered 404
  and taken for "gone", the entry marked deleted, and the network appeared
  after, left running. Now that 404 leaves the entry live, its line naming
  the teardown command, which deletes the network once the insert is
  done."""
  with fake_gce.FakeGce(insert_looks=30, visible_when_done=True) as fake:
    time = _HeldWaits()
    if answered:  # A stop during the insert's wait: pending_insert.
      fake.FailWait(times=10)
      time.stop_at = 1.5
      net = _RunNetwork(fake, tmp_path, time)
      with pytest.raises(errors.ResourceError, match='the run being stopped'):
        net.Create()
      fake.ClearFailures()
    else:
      net = _StopDuringInsert(fake, tmp_path, time)
    time.held = True
    with pytest.raises(errors.ResourceError) as left:
      net.Delete()
    insert = _Operation(fake, 'insert')
    again = run_signals.TeardownCommand('abc123', net.record.run_dir)
    assert str(left.value) == (
        'Deleting gcp_network pkb-abc123: not found, and its insert was not '
        f'seen done (Operation {insert["name"]} (insert pkb-abc123) was not '
        f'done after {compute_api.OPERATION_TIMEOUT_S}s.): not deleted, as it '
        f'may still be made: run `{again}` again later')
    assert insert['status'] == 'RUNNING'
    assert len(fake.Calls('networks', 'DELETE')) == 1
    record = run_record.RunRecord.Load(net.record.run_dir)
    assert [e['name'] for e in record.LiveResources()] == [net.name]
    # GCE ends the insert: the network appears, and the teardown command
    # deletes it.
    for _ in range(30):
      if fake.Handle('GET', f'/compute/v1/projects/{PROJECT}/global/'
                     f'operations/{insert["name"]}', None)[1][
                         'status'] == 'DONE':
        break
    assert [n['name'] for n in fake.Live()] == [net.name]
    assert resource.TeardownFromRecord(record) == []
    assert fake.Live() == []


@pytest.mark.e2e
def test_an_unanswered_instance_insert_makes_one_instance_and_the_run(
    fake, tmp_path):
  fake.Stall('instances', 'POST')
  run = _Run(fake, tmp_path, config=_OneVm(), time=FakeTime(),
             clients=_ShortTimeouts(fake))
  vm = _Only(run.Provision())
  first, again = _RequestIds(fake, 'instances', 'POST')
  assert first == again
  assert [i['name'] for i in fake.Live('instances')] == [vm.name]
  assert _Only([op for op in fake.operations.values()
                if op['targetLink'].endswith(f'/instances/{vm.name}')]
               )['status'] == 'DONE'
  assert run.record.FindResource('gcp_vm', vm.name)['status'] == 'created'
  assert run.TeardownFromDisk() == []
  assert fake.Live() == []


@pytest.mark.e2e
def test_an_unanswered_instance_insert_stopped_is_found_by_teardown(
    tmp_path):
  """As for the network, through a run: the VM's entry holds its
  instance's insert request_id, and teardown finds the insert's operation
  in the instance's zone (the instance was left running)."""
  with fake_gce.FakeGce(insert_looks=2, visible_when_done=True) as fake:
    fake.Stall('instances', 'POST', then=run_processes.CountStop)
    run = _Run(fake, tmp_path, config=_OneVm(), time=FakeTime(),
               clients=_ShortTimeouts(fake))
    with pytest.raises(errors.Error):
      run.Provision()
    assert run.TeardownFromDisk() == []
    assert fake.Live() == []
    first = _Only(_RequestIds(fake, 'instances', 'POST'))
    entry = run.record.FindResource('gcp_vm', _Only(run.spec.vms).name)
    assert entry['data']['insert_request_id'] == first


@pytest.mark.alone
def test_a_stop_during_a_stalled_call_ends_the_create_at_its_timeout(
    tmp_path):
  """Time is the subject: a stop while GCE holds an operation's wait and
  never answers ends the create at the call's timeout, plus at most a
  second, and no call follows (it waited until the fake let the answer go,
  STALL_HOLD_S, and then took the insert for done). `alone`: a worker
  starved by the tests beside it can take longer than that second."""
  with fake_gce.FakeGce() as fake:
    stops = []
    fake.Stall('operations', 'POST', then=_StopNow(stops))
    time = FakeTime()
    net = _RunNetwork(fake, tmp_path, time, _ShortTimeouts(fake))
    with pytest.raises(errors.ResourceError) as stopped:
      net.Create()
    ended = wall_time.monotonic()
    assert ended - stops[0] <= _TIMEOUT_S + 1
    insert = _Operation(fake, 'insert')['name']
    assert str(stopped.value) == (
        f'Waiting for operation {insert} (insert pkb-abc123): no answer '
        'within 1s; not tried again, the run being stopped')
    assert len(_Waits(fake)) == 1 and time.now == 0
    # Teardown waits for that insert, then deletes what it made.
    entry = net.record.FindResource('gcp_network', net.name)
    assert entry['data']['pending_insert'] == insert
    assert resource.TeardownFromRecord(
        run_record.RunRecord.Load(net.record.run_dir)) == []
    assert fake.Live() == []


@pytest.mark.e2e
@pytest.mark.alone
def test_a_stop_during_a_stalled_get_ends_the_runs_provision_at_its_timeout(
    fake, tmp_path):
  """The same through a run's provision: the instance's readiness get, in
  the create's own thread, is held; the stop ends the provision at the
  get's timeout plus at most a second. `alone`, as above."""
  stops = []
  fake.Stall('instances', 'GET', then=_StopNow(stops))
  run = _Run(fake, tmp_path, config=_OneVm(), time=FakeTime(),
             clients=_ShortTimeouts(fake))
  with pytest.raises(errors.ResourceError) as stopped:
    run.Provision()
  ended = wall_time.monotonic()
  assert ended - stops[0] <= _TIMEOUT_S + 1
  assert str(stopped.value) == (
      'Looking up gcp_instance pkb-abc123-servers-0: no answer within 1s; '
      'not tried again, the run being stopped')
  assert len(fake.Calls('instances', 'GET')) == 1
  assert run.TeardownFromDisk() == []
  assert fake.Live() == []
