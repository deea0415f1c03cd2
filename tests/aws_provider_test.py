"""AWS provider against moto: firewall, tags, placement, AMIs, teardown.

boto3 talks to moto (mock_aws) through its real client code. Two gaps in
moto 5 are filled here, in the test set-up only:
  * moto serves the /aws/service/ami-amazon-linux-latest parameters but not
    Canonical's or Debian's, and refuses PutParameter under /aws, so the
    Debian and Ubuntu parameters are put straight into moto's SSM backend,
    pointing at moto's bundled arm64 and x86_64 AMIs;
  * moto implements no placement-group calls, so CreatePlacementGroup,
    DescribePlacementGroups and DeletePlacementGroup are added to moto's EC2
    responder (an in-memory table per test), and the group an instance asks
    for is read from the RunInstances arguments the provider sent.
And one cost: besides the AMIs it bundles for every region (ARM_AMI and
X86_AMI among them), moto makes each new us-east-1 EC2 backend 1,257
"latest" and ECS-optimized AMIs, an EBS volume and a snapshot each, which
no test looks up: 0.4 CPU-s a test. MOTO_AMIS_PATH, moto's own setting,
names a file of the bundled ones, and then only those are made.
No test reaches a moto instance over SSH: the SSH wait is injected.
"""

import contextlib
import datetime
import json
import logging
import os
import re
import socket
import stat
import threading
import time as wall_time
import types
import uuid

import botocore.awsrequest
import botocore.exceptions
import botocore.parsers
import pytest

import e2e_support
import lazy_modules

from perfkitbenchmarker import benchmark_spec
from perfkitbenchmarker import errors
from perfkitbenchmarker import record_checks
from perfkitbenchmarker import resource
from perfkitbenchmarker import run_processes
from perfkitbenchmarker import run_record
from perfkitbenchmarker import run_signals
from perfkitbenchmarker import run_scope
from perfkitbenchmarker import virtual_machine
from perfkitbenchmarker.linux_benchmarks import redis_enterprise_benchmark
from perfkitbenchmarker.linux_benchmarks import redis_memtier_benchmark
from perfkitbenchmarker.providers.aws import api
from perfkitbenchmarker.providers.aws import images
from perfkitbenchmarker.providers.aws import naming
from perfkitbenchmarker.providers.aws import network
from perfkitbenchmarker.providers.aws import provider
from perfkitbenchmarker.providers import operator_access

from cloud_stop_test import FakeTime  # pylint: disable=g-bad-import-order

# Imported when a test first uses them (lazy_modules).
moto_lib = lazy_modules.Module('moto')
moto_core = lazy_modules.Module('moto.core')
moto_stubber = lazy_modules.Module('moto.core.botocore_stubber')
moto_responses = lazy_modules.Module('moto.core.responses')
moto_ec2_exceptions = lazy_modules.Module('moto.ec2.exceptions')
moto_ec2_responses = lazy_modules.Module('moto.ec2.responses')
moto_ssm = lazy_modules.Module('moto.ssm.models')
moto_utils = lazy_modules.Module('moto.utilities.utils')

REGION = 'us-east-1'
ZONE = 'us-east-1a'
RUN_URI = 'awstest1'
OPERATOR = '203.0.113.7/32'
# Images moto bundles, with the architectures the lookup must match.
ARM_AMI = 'ami-0e9271c829888680e'
X86_AMI = 'ami-076f415166b04f5fe'
FACTORY = api.ClientFactory()
LIVE = ['pending', 'running', 'stopping', 'stopped', 'shutting-down']
RUN_FILTER = [{'Name': 'tag:run_uri', 'Values': [RUN_URI]}]
REDIS_RANGES = {(6379, 8999), (16379, 18999)}  # --aws_redis_ports' default.
# Redis Enterprise's node-to-node ports, written out to check the module's
# declaration reaches the security group as reviewed.
ENTERPRISE_RANGES = {
    (1968, 1968), (3333, 3349), (8000, 8002), (8004, 8004), (8006, 8006),
    (8070, 8071), (8080, 8080), (8443, 8444), (9080, 9080), (9082, 9082),
    (9091, 9091), (9125, 9125), (9443, 9443), (10000, 19999),
    (20000, 29999), (36379, 36380)}


# moto set-up ------------------------------------------------------------------


def _SeedSsmParameters():
  backend = moto_ssm.ssm_backends[moto_core.DEFAULT_ACCOUNT_ID][REGION]
  for os_type in ('debian12', 'ubuntu2204', 'ubuntu2404'):
    for arch, ami in ((images.ARM64, ARM_AMI), (images.X86_64, X86_AMI)):
      name = images.ParameterName(os_type, arch)
      parameters = backend._parameters  # pylint: disable=protected-access
      parameters[name].append(moto_ssm.Parameter(
          account_id=moto_core.DEFAULT_ACCOUNT_ID, name=name, value=ami,
          parameter_type='String', description=None, allowed_pattern=None,
          keyid=None, last_modified_date=datetime.datetime.now(), version=1,
          data_type='aws:ec2:image'))


def _BundledAmisOnly(monkeypatch, directory):
  """moto's EC2 backends made from here on hold only the AMIs moto bundles
  for every region (the module docstring says why); `directory` keeps their
  file."""
  path = os.path.join(directory, 'moto_bundled_amis.json')
  if not os.path.exists(path):
    with open(path, 'w') as f:
      json.dump(moto_utils.load_resource('ec2/resources/amis.json'), f)
  monkeypatch.setenv('MOTO_AMIS_PATH', path)


def _AddPlacementGroupsToMoto(monkeypatch):
  """CreatePlacementGroup & co. on moto's EC2 responder; returns the table."""
  groups = {}

  def Unknown(name):
    return moto_ec2_exceptions.EC2ClientError(
        'InvalidPlacementGroup.Unknown',
        f'The Placement Group \'{name}\' is unknown.')

  def create_placement_group(self):
    name = self._get_param('GroupName')
    if name in groups:
      raise moto_ec2_exceptions.EC2ClientError(
          'InvalidPlacementGroup.Duplicate',
          f'The Placement Group \'{name}\' already exists.')
    tags = self._parse_tag_specification().get('placement-group', {})
    groups[name] = {
        'GroupName': name, 'Strategy': self._get_param('Strategy'),
        'State': 'available', 'GroupId': f'pg-{uuid.uuid4().hex[:17]}',
        'Tags': [{'Key': k, 'Value': v} for k, v in tags.items()]}
    return moto_responses.ActionResult({'PlacementGroup': groups[name]})

  def describe_placement_groups(self):
    names = self._get_param('GroupNames', []) or list(groups)
    for name in names:
      if name not in groups:
        raise Unknown(name)
    return moto_responses.ActionResult(
        {'PlacementGroups': [groups[n] for n in names]})

  def delete_placement_group(self):
    name = self._get_param('GroupName')
    if groups.pop(name, None) is None:
      raise Unknown(name)
    return moto_responses.ActionResult({})

  for method in (create_placement_group, describe_placement_groups,
                 delete_placement_group):
    monkeypatch.setattr(moto_ec2_responses.EC2Response, method.__name__,
                        method, raising=False)
  return groups


@pytest.fixture
def moto(monkeypatch, tmp_path_factory):
  for key in ('AWS_PROFILE', 'AWS_DEFAULT_PROFILE'):
    monkeypatch.delenv(key, raising=False)
  _BundledAmisOnly(monkeypatch, tmp_path_factory.getbasetemp())
  monkeypatch.setenv('AWS_ACCESS_KEY_ID', 'testing')
  monkeypatch.setenv('AWS_SECRET_ACCESS_KEY', 'testing')
  monkeypatch.setenv('AWS_DEFAULT_REGION', REGION)
  groups = _AddPlacementGroupsToMoto(monkeypatch)
  with moto_lib.mock_aws():
    _SeedSsmParameters()
    clients = FACTORY.ForRegion(REGION)
    yield clients, groups


class FlakyEc2:
  """An EC2 client that fails chosen calls of one method and logs all calls.

  The failure is a botocore ClientError raised either before the call
  reaches moto, or after it did (a lost reply: the object exists).
  """

  def __init__(self, client, method=None, nth=1, after=False,
               code='InjectedFailure', times=1):
    self._client = client
    self.method, self.nth, self.after = method, nth, after
    self.code, self.times = code, times
    self.calls = []
    self.failed = 0
    self._lock = threading.Lock()

  def Calls(self, method):
    return [kwargs for name, kwargs in self.calls if name == method]

  def __getattr__(self, name):
    real = getattr(self._client, name)
    if not callable(real):
      return real

    def Call(**kwargs):
      with self._lock:
        self.calls.append((name, kwargs))
        n = len(self.Calls(name))
      fail = name == self.method and self.nth <= n < self.nth + self.times
      if fail and not self.after:
        self.failed += 1
        raise self._Error(name)
      result = real(**kwargs)
      if fail:
        self.failed += 1
        raise self._Error(name)
      return result
    return Call

  def _Error(self, operation):
    return botocore.exceptions.ClientError(
        {'Error': {'Code': self.code, 'Message': 'injected by the test'}},
        operation)


# Helpers ----------------------------------------------------------------------


def _Options(**overrides):
  values = dict(ssh_source_cidrs=(OPERATOR,), owner='tester',
                timeout_minutes=60)
  values.update(overrides)
  return provider.AwsOptions(**values)


def _GroupSpecs(server_type='c6gn.16xlarge', client_type='i4i.4xlarge',
                os_type='debian12'):
  return {
      'servers': virtual_machine.VmSpec(cloud='AWS', machine_type=server_type,
                                        zone=ZONE, os_type=os_type,
                                        boot_disk_size=50),
      'clients': virtual_machine.VmSpec(cloud='AWS', machine_type=client_type,
                                        zone=ZONE, os_type=os_type),
  }


class Run:
  """One provisioning attempt with injected clients and no SSH or sleep."""

  def __init__(self, tmp_path, clients, ec2=None, options=None,
               ssh_waiter=None, benchmark='redis_memtier'):
    self.run_dir = str(tmp_path / RUN_URI)
    self.record = run_record.RunRecord.Create(self.run_dir, RUN_URI)
    self.ec2 = ec2 or FlakyEc2(clients.ec2)
    self.ssh_waited = []
    self.sleeps = []
    injected = api.AwsClients(REGION, self.ec2, clients.ssm)
    self.provisioner = provider.AwsProvisioner(
        options or _Options(), injected, RUN_URI, self.record,
        benchmark=benchmark,
        ssh_waiter=ssh_waiter or self.ssh_waited.append,
        sleep=self.sleeps.append, now=lambda: 1_800_000_000.0)

  def Provision(self, counts=None, peer_ports=()):
    self.groups = self.provisioner.ConstructVms(
        _GroupSpecs(), counts or {'servers': 1, 'clients': 1})
    self.vms = [vm for vms in self.groups.values() for vm in vms]
    self.provisioner.Provision(self.vms, peer_ports)
    return self.vms


def _Spec(module):
  """The benchmark spec pkb builds for `module`: what carries its ports."""
  return benchmark_spec.BenchmarkSpec(
      module, {}, RUN_URI, 'AWS', None, types.SimpleNamespace(), None,
      lambda samples: None)


def _Inventory(ec2, placement_groups, run_uri=RUN_URI):
  """Counts of everything in moto's region, and of what the run tagged."""
  instances = [i for r in ec2.describe_instances(Filters=[
      {'Name': 'instance-state-name', 'Values': LIVE}])['Reservations']
               for i in r['Instances']]
  key_pairs = ec2.describe_key_pairs()['KeyPairs']
  listed = {
      'instances': instances,
      'vpcs': ec2.describe_vpcs()['Vpcs'],
      'subnets': ec2.describe_subnets()['Subnets'],
      'security_groups': ec2.describe_security_groups()['SecurityGroups'],
      'internet_gateways':
          ec2.describe_internet_gateways()['InternetGateways'],
      'route_tables': ec2.describe_route_tables()['RouteTables'],
      'key_pairs': key_pairs,
  }
  totals = {kind: len(items) for kind, items in listed.items()}
  totals['placement_groups'] = len(placement_groups)

  def OfRun(item):
    tags = {t['Key']: t['Value'] for t in item.get('Tags', [])}
    names = (item.get('KeyName'), item.get('GroupName'))
    return (tags.get('run_uri') == run_uri or
            any(n and run_uri in n for n in names))
  of_run = {kind: sum(map(OfRun, items)) for kind, items in listed.items()}
  of_run['placement_groups'] = sum(run_uri in n for n in placement_groups)
  return totals, of_run


def _Tags(item):
  return {t['Key']: t['Value'] for t in item.get('Tags', [])}


def _AssertNothingLeft(ec2, placement_groups, baseline):
  totals, of_run = _Inventory(ec2, placement_groups)
  assert of_run == {kind: 0 for kind in of_run}
  assert totals == baseline


# Provisioning -----------------------------------------------------------------


@pytest.mark.e2e
def test_provision_builds_tagged_firewalled_cluster_then_tears_down(
    moto, tmp_path):
  clients, placement_groups = moto
  baseline, _ = _Inventory(clients.ec2, placement_groups)
  run = Run(tmp_path, clients)
  vms = run.Provision()
  ec2 = clients.ec2
  name = f'pkb-{RUN_URI}'

  # Recorded in creation order, so teardown (newest first) is reversed.
  assert [e['kind'] for e in run.record.Resources()] == [
      'aws_vpc', 'aws_subnet', 'aws_internet_gateway', 'aws_route_table',
      'aws_security_group', 'aws_key_pair', 'aws_placement_group',
      'aws_vm', 'aws_vm']
  assert {e['status'] for e in run.record.Resources()} == {'created'}

  # Firewall: SSH from the operator only, Redis from the group only.
  group = ec2.describe_security_groups(Filters=RUN_FILTER)['SecurityGroups']
  assert len(group) == 1
  group = group[0]
  assert group['GroupName'] == name
  rules = {(p['FromPort'], p['ToPort']): p for p in group['IpPermissions']}
  assert set(rules) == {(22, 22), (6379, 8999), (16379, 18999)}
  assert [r['CidrIp'] for r in rules[22, 22]['IpRanges']] == [OPERATOR]
  assert not rules[22, 22]['UserIdGroupPairs']
  for ports in ((6379, 8999), (16379, 18999)):
    assert rules[ports]['IpProtocol'] == 'tcp'
    assert not rules[ports]['IpRanges'] and not rules[ports]['Ipv6Ranges']
    assert [p['GroupId'] for p in rules[ports]['UserIdGroupPairs']] == [
        group['GroupId']]
  for permission in group['IpPermissions']:
    assert '0.0.0.0/0' not in [r['CidrIp'] for r in permission['IpRanges']]
    assert not permission['Ipv6Ranges']

  # Tags on everything that takes them.
  expected = {'Name': name, 'owner': 'tester', 'run_uri': RUN_URI,
              'benchmark': 'redis_memtier',
              'timeout': operator_access.ExpiryStamp(1_800_000_000.0, 60)}
  assert expected['timeout'] == '20270115t0900z'
  for items in (ec2.describe_vpcs(Filters=RUN_FILTER)['Vpcs'],
                ec2.describe_subnets(Filters=RUN_FILTER)['Subnets'],
                ec2.describe_internet_gateways(
                    Filters=RUN_FILTER)['InternetGateways'],
                ec2.describe_route_tables(Filters=RUN_FILTER)['RouteTables'],
                [group],
                ec2.describe_key_pairs(KeyNames=[name])['KeyPairs'],
                list(placement_groups.values())):
    assert len(items) == 1
    assert _Tags(items[0]) == expected
  instances = {_Tags(i)['Name']: i for r in ec2.describe_instances(
      Filters=RUN_FILTER)['Reservations'] for i in r['Instances']}
  assert set(instances) == {f'{name}-servers-0', f'{name}-clients-0'}
  for instance in instances.values():
    assert dict(_Tags(instance), Name=name) == expected
  volumes = ec2.describe_volumes(Filters=RUN_FILTER)['Volumes']
  assert sorted(v['Size'] for v in volumes) == [8, 50]  # Only servers asked.

  # Cluster placement group, asked for by every instance.
  assert list(placement_groups) == [name]
  assert placement_groups[name]['Strategy'] == 'cluster'
  launches = run.ec2.Calls('run_instances')
  assert [c['Placement'] for c in launches] == [
      {'AvailabilityZone': ZONE, 'GroupName': name}] * 2
  assert all(c['NetworkInterfaces'][0]['Groups'] == [group['GroupId']]
             for c in launches)

  # Architecture-matched AMIs: Graviton server, x86 client.
  server = instances[f'{name}-servers-0']
  client = instances[f'{name}-clients-0']
  assert (server['ImageId'], server['Architecture']) == (ARM_AMI, 'arm64')
  assert (client['ImageId'], client['Architecture']) == (X86_AMI, 'x86_64')
  assert server['InstanceType'] == 'c6gn.16xlarge'
  assert server['KeyName'] == name

  # VMs are reachable objects; SSH was waited for (by the injected hook).
  assert run.ssh_waited == vms
  servers_vm, clients_vm = vms
  assert servers_vm.ip_address == server['PublicIpAddress']
  assert servers_vm.internal_ip == server['PrivateIpAddress']
  assert (servers_vm.num_cpus, servers_vm.memory_mib) == (64, 131072)
  assert clients_vm.num_cpus == 16
  assert servers_vm.user == 'admin'
  assert oct(stat.S_IMODE(os.stat(servers_vm.keyfile).st_mode)) == '0o600'
  # The private key is kept out of results, in a directory only we can read.
  key_dir = run_scope.RunKeyDir(RUN_URI)
  assert os.path.dirname(servers_vm.keyfile) == key_dir
  assert oct(stat.S_IMODE(os.stat(key_dir).st_mode)) == '0o700'
  assert e2e_support.PrivateKeysUnder(run.run_dir) == []
  assert e2e_support.PrivateKeysUnder(key_dir) == [servers_vm.keyfile]
  with open(servers_vm.keyfile + '.pub') as f:
    assert f.read().startswith('ssh-ed25519 ')

  # Teardown from the record alone, with new objects and default clients.
  record = run_record.RunRecord.Load(run.run_dir)
  assert resource.TeardownFromRecord(record) == []
  assert not list(record.LiveResources())
  _AssertNothingLeft(ec2, placement_groups, baseline)
  assert not os.path.exists(servers_vm.keyfile)
  assert not os.path.exists(key_dir)


@pytest.mark.e2e
@pytest.mark.parametrize('module,peer_ranges', [
    (redis_memtier_benchmark, set()),
    (redis_enterprise_benchmark, ENTERPRISE_RANGES),
], ids=['redis_memtier', 'redis_enterprise'])
def test_benchmark_peer_ports_are_opened_within_the_group_only(
    moto, tmp_path, module, peer_ranges):
  clients, placement_groups = moto
  baseline, _ = _Inventory(clients.ec2, placement_groups)
  spec = _Spec(module)
  run = Run(tmp_path, clients, benchmark=spec.name)
  run.Provision(peer_ports=spec.peer_tcp_ports)

  [group] = clients.ec2.describe_security_groups(
      Filters=RUN_FILTER)['SecurityGroups']
  rules = {(p['FromPort'], p['ToPort']): p for p in group['IpPermissions']}
  assert len(rules) == len(group['IpPermissions'])  # No range twice.
  assert set(rules) == {(22, 22)} | REDIS_RANGES | peer_ranges
  assert [r['CidrIp'] for r in rules[22, 22]['IpRanges']] == [OPERATOR]
  for ports, rule in rules.items():
    if ports == (22, 22):
      continue
    assert rule['IpProtocol'] == 'tcp'
    assert not rule['IpRanges'] and not rule['Ipv6Ranges'], ports
    assert [p['GroupId'] for p in rule['UserIdGroupPairs']] == [
        group['GroupId']], ports
  entry = run.record.FindResource('aws_security_group', f'pkb-{RUN_URI}')
  assert {tuple(r) for r in entry['data']['peer_ports']} == peer_ranges

  # The rules go with the group: teardown from the record leaves nothing.
  assert resource.TeardownFromRecord(
      run_record.RunRecord.Load(run.run_dir)) == []
  _AssertNothingLeft(clients.ec2, placement_groups, baseline)
  assert not clients.ec2.describe_security_groups(
      Filters=[{'Name': 'group-id', 'Values': [group['GroupId']]}])[
          'SecurityGroups']


@pytest.mark.e2e
def test_module_provision_takes_the_ports_from_the_spec(moto, tmp_path,
                                                      pkb_flags):
  clients, placement_groups = moto
  baseline, _ = _Inventory(clients.ec2, placement_groups)
  pkb_flags.aws_ssh_source_cidr = [OPERATOR]
  pkb_flags.cloud = 'AWS'
  config = redis_enterprise_benchmark.GetConfig({})
  record = run_record.RunRecord.Create(str(tmp_path / RUN_URI), RUN_URI)
  spec = benchmark_spec.BenchmarkSpec(
      redis_enterprise_benchmark, config, RUN_URI, 'AWS', record, pkb_flags,
      None, lambda samples: None, ssh_waiter=lambda vm: None)
  spec.vm_groups = provider.ConstructVms(spec)
  spec.vms = [vm for vms in spec.vm_groups.values() for vm in vms]
  provider.Provision(spec)
  assert [vm.name for vm in spec.vms] == ['servers-0', 'clients-0',
                                          'clients-1']
  # Upstream's vm.AllowPort: a port the run's firewall opens is fine, any
  # other is refused in one line naming PEER_TCP_PORTS.
  low, high = sorted(ENTERPRISE_RANGES)[0]
  for vm in spec.vms:
    vm.AllowPort(low, high)
  with pytest.raises(errors.VirtualMachine.VirtualMachineError,
                     match='PEER_TCP_PORTS'):
    spec.vms[0].AllowPort(high + 1)
  [group] = clients.ec2.describe_security_groups(
      Filters=RUN_FILTER)['SecurityGroups']
  assert {(p['FromPort'], p['ToPort']) for p in group['IpPermissions']} == (
      {(22, 22)} | REDIS_RANGES | ENTERPRISE_RANGES)
  assert resource.TeardownFromRecord(record) == []
  _AssertNothingLeft(clients.ec2, placement_groups, baseline)


def test_peer_range_equal_to_a_redis_range_is_sent_once():
  permissions = network.IngressPermissions(
      'sg-1', [OPERATOR], [(6379, 8999)], [(6379, 8999), (8000, 8002)])
  assert [(p['FromPort'], p['ToPort']) for p in permissions] == [
      (22, 22), (6379, 8999), (8000, 8002)]
  assert permissions[2]['UserIdGroupPairs'] == [
      {'GroupId': 'sg-1', 'Description': 'benchmark ports within the run'}]


@pytest.mark.e2e
def test_default_vpc_without_placement_group(moto, tmp_path):
  clients, placement_groups = moto
  baseline, _ = _Inventory(clients.ec2, placement_groups)
  run = Run(tmp_path, clients, options=_Options(
      use_default_vpc=True, placement_group_style='none'))
  run.Provision()
  default_vpc = clients.ec2.describe_vpcs(
      Filters=[{'Name': 'is-default', 'Values': ['true']}])['Vpcs'][0]
  group = clients.ec2.describe_security_groups(
      Filters=RUN_FILTER)['SecurityGroups'][0]
  assert group['VpcId'] == default_vpc['VpcId']
  assert [e['kind'] for e in run.record.Resources()] == [
      'aws_security_group', 'aws_key_pair', 'aws_vm', 'aws_vm']
  assert not placement_groups
  assert all('GroupName' not in c['Placement']
             for c in run.ec2.Calls('run_instances'))
  assert resource.TeardownFromRecord(
      run_record.RunRecord.Load(run.run_dir)) == []
  _AssertNothingLeft(clients.ec2, placement_groups, baseline)


@pytest.mark.e2e
def test_resumed_run_gets_its_vms_back_from_the_record(moto, tmp_path):
  clients, _ = moto
  run = Run(tmp_path, clients)
  vms = run.Provision()
  # What SSH would record once it made the VM's scratch directory.
  made = f'/tmp/pkb-{RUN_URI}.Ab3dE6gH/servers-0'
  vms[0].Remember(scratch_dir=made)
  again = Run(tmp_path, clients).provisioner.ConstructVms(
      _GroupSpecs(), {'servers': 1, 'clients': 1})
  assert [(vm.instance_id, vm.ip_address, vm.internal_ip, vm.num_cpus)
          for vm in again['servers'] + again['clients']] == [
              (vm.instance_id, vm.ip_address, vm.internal_ip, vm.num_cpus)
              for vm in vms]
  rebuilt = virtual_machine.VmFromRecord(run.record, 'servers-0')
  assert isinstance(rebuilt, provider.AwsVirtualMachine)
  assert (rebuilt.ip_address, rebuilt.user, rebuilt.keyfile) == (
      vms[0].ip_address, 'admin', vms[0].keyfile)
  assert rebuilt.scratch_dir == made  # As recorded, not rebuilt.
  assert resource.TeardownFromRecord(run.record) == []


def test_module_functions_build_vms_from_flags(moto, tmp_path, pkb_flags,
                                              private_key_dir):
  del moto  # Only needed active.
  pkb_flags.aws_ssh_source_cidr = ['203.0.113.7']
  pkb_flags.owner = 'flag-owner'
  run_dir = str(tmp_path / RUN_URI)
  spec = types.SimpleNamespace(
      flags=pkb_flags, run_uri=RUN_URI, name='redis_memtier', ssh_waiter=None,
      record=run_record.RunRecord.Create(run_dir, RUN_URI),
      GroupSpecs=_GroupSpecs, GroupCounts=lambda: {'servers': 2, 'clients': 1},
      peer_tcp_ports=())
  groups = provider.ConstructVms(spec)
  assert [vm.name for vm in groups['servers'] + groups['clients']] == [
      'servers-0', 'servers-1', 'clients-0']
  vm = groups['servers'][1]
  assert (vm.CLOUD, vm.zone, vm.clients.region) == ('AWS', ZONE, REGION)
  assert vm.keyfile == os.path.join(private_key_dir, RUN_URI, 'aws_ssh_key')
  assert vm.tags['owner'] == 'flag-owner' and vm.tags['run_uri'] == RUN_URI
  assert vm.name_tag == f'pkb-{RUN_URI}-servers-1'
  assert not spec.record.Resources()  # Constructing creates nothing.


# Failure injection ------------------------------------------------------------

# (method, which call fails, whether it fails after reaching moto).
FAILURES = [
    ('create_vpc', 1, False), ('create_vpc', 1, True),
    ('create_subnet', 1, False), ('create_subnet', 1, True),
    ('create_internet_gateway', 1, False),
    ('create_internet_gateway', 1, True),
    ('attach_internet_gateway', 1, False),
    ('create_route_table', 1, False), ('create_route_table', 1, True),
    ('create_route', 1, False), ('associate_route_table', 1, False),
    ('create_security_group', 1, False), ('create_security_group', 1, True),
    ('authorize_security_group_ingress', 1, False),
    ('import_key_pair', 1, False), ('import_key_pair', 1, True),
    ('create_placement_group', 1, False),
    ('create_placement_group', 1, True),
    ('run_instances', 1, False), ('run_instances', 1, True),
    ('run_instances', 2, False), ('run_instances', 2, True),
    # While waiting for the first instance to run.
    ('describe_instances', 3, False),
]


@pytest.mark.e2e
@pytest.mark.parametrize('method,nth,after', FAILURES)
def test_failed_provision_is_torn_down_from_the_record(moto, tmp_path, method,
                                                       nth, after):
  clients, placement_groups = moto
  baseline, _ = _Inventory(clients.ec2, placement_groups)
  flaky = FlakyEc2(clients.ec2, method, nth=nth, after=after)
  run = Run(tmp_path, clients, ec2=flaky)
  with pytest.raises(errors.ResourceError, match='InjectedFailure'):
    run.Provision()
  assert flaky.failed == 1
  _, of_run = _Inventory(clients.ec2, placement_groups)
  if after:
    assert any(of_run.values())  # The failed call did create something.
  record = run_record.RunRecord.Load(run.run_dir)
  assert resource.TeardownFromRecord(record) == []
  _AssertNothingLeft(clients.ec2, placement_groups, baseline)


@pytest.mark.e2e
def test_failed_ssh_wait_is_torn_down(moto, tmp_path):
  clients, placement_groups = moto
  baseline, _ = _Inventory(clients.ec2, placement_groups)

  def RefuseSecond(vm):
    if vm.name == 'clients-0':
      raise errors.ResourceError('SSH to clients-0 never answered')

  run = Run(tmp_path, clients, ssh_waiter=RefuseSecond)
  with pytest.raises(errors.ResourceError, match='never answered'):
    run.Provision()
  assert resource.TeardownFromRecord(
      run_record.RunRecord.Load(run.run_dir)) == []
  _AssertNothingLeft(clients.ec2, placement_groups, baseline)


@pytest.mark.e2e
@pytest.mark.parametrize('method', [
    'create_vpc', 'create_subnet', 'create_internet_gateway',
    'create_security_group', 'import_key_pair', 'create_placement_group',
    'run_instances'])
def test_lost_reply_is_retried_without_duplicates(moto, tmp_path, method):
  clients, placement_groups = moto
  flaky = FlakyEc2(clients.ec2, method, after=True,
                   code='RequestLimitExceeded')
  run = Run(tmp_path, clients, ec2=flaky)
  run.Provision()
  assert flaky.failed == 1 and run.sleeps  # Retried after a back-off.
  _, of_run = _Inventory(clients.ec2, placement_groups)
  assert of_run == dict({kind: 1 for kind in of_run}, instances=2)
  assert resource.TeardownFromRecord(run.record) == []


class _LostAnswer(FlakyEc2):
  """An EC2 client whose first `method` call is taken but its answer lost
  (a read timeout), and whose next lookup of that kind (describe_<kind>s)
  does not see the object yet, as EC2's eventual consistency allows."""

  def __init__(self, client, method):
    super().__init__(client, method, after=True)
    self.lookup = f'describe_{method.split("_", 1)[1]}s'
    self.hidden = 0

  def _Error(self, operation):
    return botocore.exceptions.ReadTimeoutError(endpoint_url='https://ec2')

  def __getattr__(self, name):
    call = super().__getattr__(name)
    if name != self.lookup:
      return call

    def Lookup(**kwargs):
      reply = call(**kwargs)
      if self.failed and not self.hidden:
        self.hidden += 1
        reply = {key: [] if isinstance(value, list) else value
                 for key, value in reply.items()}
      return reply
    return Lookup


# EC2's create calls that take no ClientToken, each answered as it is sent
# again: (the call, how many the run then has).
RESENT_CREATES = [
    ('create_vpc', 2),
    ('create_subnet', 1),  # InvalidSubnet.Conflict: the VPC's one CIDR.
    ('create_internet_gateway', 2),
    ('create_security_group', 1),  # InvalidGroup.Duplicate: its name.
    ('import_key_pair', 1),  # Named: its Duplicate, then replaced.
    ('create_placement_group', 1),  # InvalidPlacementGroup.Duplicate.
]


@pytest.mark.e2e
@pytest.mark.parametrize('method,made', RESENT_CREATES)
def test_a_create_sent_again_after_its_answer_was_lost_leaves_nothing(
    moto, tmp_path, method, made):
  """A create EC2 took but whose answer was lost is sent again when the
  retry's lookup does not see the object yet: a second one is made, which
  teardown deletes with the recorded one (both tagged), or the send is
  refused as a duplicate and the next attempt's lookup finds the first (the
  run failed on the refusal, though nothing was wrong)."""
  clients, placement_groups = moto
  baseline, _ = _Inventory(clients.ec2, placement_groups)
  lost = _LostAnswer(clients.ec2, method)
  run = Run(tmp_path, clients, ec2=lost)
  run.Provision()
  assert lost.failed == 1 and len(lost.Calls(method)) > 1
  _, of_run = _Inventory(clients.ec2, placement_groups)
  assert of_run[method.split('_', 1)[1] + 's'] == made
  assert resource.TeardownFromRecord(
      run_record.RunRecord.Load(run.run_dir)) == []
  _AssertNothingLeft(clients.ec2, placement_groups, baseline)


class _StoppedUnlisted(FlakyEc2):
  """An EC2 client whose first `method` call is cut by a stop of the run,
  its answer lost (a read timeout), after EC2 took it (`after`) or before;
  EC2 then lists the object to none of the next `unlisted` lookups of its
  kind (describe_<kind>s), nor deletes it by name while so (DeleteKeyPair
  answers success, DeletePlacementGroup Unknown), as its eventual
  consistency allows."""

  def __init__(self, client, method, unlisted, after=True):
    super().__init__(client, method, after=after)
    kind = 'instances' if method == 'run_instances' else (
        method.split('_', 1)[1] + 's')
    self.lookup = f'describe_{kind}'
    self.unlisted = unlisted

  def _Error(self, operation):
    run_processes.CountStop()  # What a signal's StopChildren counts.
    return botocore.exceptions.ReadTimeoutError(endpoint_url='https://ec2')

  def __getattr__(self, name):
    call = super().__getattr__(name)

    def Unlisted(**kwargs):
      if not (self.failed and self.after and self.unlisted):
        return call(**kwargs)
      if name == self.lookup:
        self.unlisted -= 1
        return {key: [] if isinstance(value, list) else value
                for key, value in call(**kwargs).items()}
      if name == 'delete_key_pair':
        return {}
      if name == 'delete_placement_group':
        raise botocore.exceptions.ClientError(
            {'Error': {'Code': 'InvalidPlacementGroup.Unknown'}}, name)
      return call(**kwargs)
    return Unlisted


def _TeardownFromDisk(monkeypatch, run, time):
  """TeardownFromRecord of the run's record on disk, its resources rebuilt
  on `time` and the run's EC2 client (not the real clock and
  DEFAULT_CLIENTS)."""
  init = resource.BaseResource.__init__
  with monkeypatch.context() as patch:
    patch.setattr(
        resource.BaseResource, '__init__',
        lambda self, name, record=None, sleep=None, clock=None: init(
            self, name, record, time.sleep, time.clock))
    patch.setattr(
        api.DEFAULT_CLIENTS, 'ForRegion', lambda region, profile=None:
        api.AwsClients(region, run.ec2, FACTORY.ForRegion(region).ssm))
    return resource.TeardownFromRecord(
        run_record.RunRecord.Load(run.run_dir))


UNANSWERED_CREATES = ['create_vpc', 'create_subnet', 'create_internet_gateway',
                      'create_security_group', 'import_key_pair',
                      'create_placement_group', 'run_instances']


@pytest.mark.e2e
@pytest.mark.parametrize('method', UNANSWERED_CREATES)
def test_a_create_a_stop_left_unanswered_is_looked_for_again_by_teardown(
    moto, tmp_path, monkeypatch, method):
  """EC2 took the create, the run was stopped before its answer came, and
  teardown's lookup by tags, moments later, did not list the object yet:
  it was taken for never made, its entry marked deleted (a delete by name
  of a key pair or placement group EC2 did not know yet counted as done),
  and the object appeared after, left running. Now the entry says its
  create went unanswered, and teardown looks for it again, pausing, until
  EC2 lists it."""
  clients, placement_groups = moto
  baseline, _ = _Inventory(clients.ec2, placement_groups)
  stopped = _StoppedUnlisted(clients.ec2, method, unlisted=2)
  run = Run(tmp_path, clients, ec2=stopped)
  with pytest.raises(errors.ResourceError, match='the run being stopped'):
    run.Provision()
  assert len(stopped.Calls(method)) == 1  # Never sent again.
  assert sum(_Inventory(clients.ec2, placement_groups)[1].values()) > 0
  time = FakeTime()
  assert _TeardownFromDisk(monkeypatch, run, time) == []
  _AssertNothingLeft(clients.ec2, placement_groups, baseline)
  assert stopped.unlisted == 0 and time.now == 1 + 2  # Two pauses.


@pytest.mark.e2e
@pytest.mark.parametrize('code,pauses', [
    (None, 1 + 2 + 4 + 8 + 16 + 30 * 9),  # Cut before EC2 took it.
    ('InvalidParameterValue', 0),  # Refused: no pause.
])
def test_a_create_never_made_is_looked_for_only_when_unanswered(
    moto, tmp_path, monkeypatch, caplog, code, pauses):
  """A create cut by a stop before EC2 took it is looked for over the
  whole window (about five minutes, as AWS advises) and then taken for
  never made, the console told of the wait once (it said nothing for
  those minutes); one EC2 refused is not looked for again."""
  clients, placement_groups = moto
  baseline, _ = _Inventory(clients.ec2, placement_groups)
  if code:
    failing = FlakyEc2(clients.ec2, 'create_security_group', code=code)
  else:
    failing = _StoppedUnlisted(clients.ec2, 'create_security_group', 0,
                               after=False)
  run = Run(tmp_path, clients, ec2=failing)
  with pytest.raises(errors.ResourceError):
    run.Provision()
  time = FakeTime()
  caplog.clear()
  with caplog.at_level(logging.WARNING):
    assert _TeardownFromDisk(monkeypatch, run, time) == []
  assert time.now == pauses
  name = f'pkb-{RUN_URI}'
  said = [r.getMessage() for r in caplog.records
          if r.levelno == logging.WARNING and 'looking again' in
          r.getMessage()]
  assert said == ([
      f'looking up aws_security_group {name}, whose create went '
      'unanswered: not listed yet; looking again for up to 301s (EC2 may '
      'list a new object late)'] if pauses else [])
  looked = len(failing.Calls('describe_security_groups'))
  assert looked == 1 + (api.LOOK_AGAIN_ATTEMPTS if pauses else 1)
  _AssertNothingLeft(clients.ec2, placement_groups, baseline)


@pytest.mark.e2e
def test_a_stop_ends_teardowns_look_again_and_keeps_the_entry(
    moto, tmp_path, monkeypatch):
  """A second signal during the look-again ends it within a pause step:
  the object may still be listed, so the entry stays live and its line
  names the teardown command, which deletes it later."""
  clients, placement_groups = moto
  baseline, _ = _Inventory(clients.ec2, placement_groups)
  stopped = _StoppedUnlisted(clients.ec2, 'create_security_group', 100)
  run = Run(tmp_path, clients, ec2=stopped)
  with pytest.raises(errors.ResourceError, match='the run being stopped'):
    run.Provision()
  time = FakeTime(stop_at=0.5)
  left = _TeardownFromDisk(monkeypatch, run, time)
  name = f'pkb-{RUN_URI}'
  again = run_signals.TeardownCommand(RUN_URI, run.run_dir)
  assert left[0] == (
      f'aws_security_group {name}: looking up aws_security_group {name}, '
      'whose create went unanswered: not listed; not deleted, as EC2 may '
      f'list it later: run `{again}` again')
  assert time.now == 1
  record = run_record.RunRecord.Load(run.run_dir)
  assert record.FindResource('aws_security_group', name)['status'] != (
      'deleted')
  stopped.unlisted = 0
  assert _TeardownFromDisk(monkeypatch, run, FakeTime()) == []
  _AssertNothingLeft(clients.ec2, placement_groups, baseline)


@pytest.mark.e2e
def test_delete_waits_out_dependency_violation(moto, tmp_path):
  clients, placement_groups = moto
  run = Run(tmp_path, clients, options=_Options(use_default_vpc=True))
  run.Provision()
  flaky = FlakyEc2(clients.ec2, 'delete_security_group',
                   code='DependencyViolation', times=2)
  sleeps = []
  group = network.SecurityGroup(
      api.AwsClients(REGION, flaky, clients.ssm), RUN_URI, sleep=sleeps.append)
  for vm in reversed(run.vms):
    vm.Delete()
  group.Delete()
  assert len(flaky.Calls('delete_security_group')) == 3
  assert sum(sleeps) == 1 + 2  # Paused before each retry (in 1 s steps).
  _, of_run = _Inventory(clients.ec2, placement_groups)
  assert of_run['security_groups'] == 0 and of_run['instances'] == 0
  assert resource.TeardownFromRecord(run.record) == []


class _NeverTerminated(FlakyEc2):
  """An EC2 client whose terminated instances still say shutting-down."""

  def __getattr__(self, name):
    call = super().__getattr__(name)
    if name != 'describe_instances':
      return call

    def Describe(**kwargs):
      reply = call(**kwargs)
      for reservation in reply['Reservations']:
        for instance in reservation['Instances']:
          if instance['State']['Name'] == 'terminated':
            instance['State'] = {'Code': 32, 'Name': 'shutting-down'}
      return reply
    return Describe


@pytest.mark.e2e
def test_a_slow_termination_names_the_runs_own_teardown_command(moto,
                                                                tmp_path):
  """The run's directory is not under the default results directory: the
  command the message named ('./pkb.py --run_stage=teardown --run_uri=X')
  looked for the run's record where it is not (the PKB plugin patched
  the --results_dir in with a regular expression)."""
  clients, _ = moto
  run = Run(tmp_path, clients, ec2=_NeverTerminated(clients.ec2))
  vm = run.Provision()[0]
  vm.TERMINATE_TIMEOUT_S = 0  # Past its wait at the first look.
  with pytest.raises(errors.ResourceError) as raised:
    vm.Delete()
  assert str(raised.value) == (
      f'terminating {vm.name} took more than 0s; run `./pkb.py '
      f'--run_stage=teardown --run_uri={RUN_URI} --results_dir={tmp_path}` '
      'again later.')
  # Left live in the record for the teardown the message names.
  assert run.record.FindResource(vm.KIND, vm.name)['status'] == 'created'


@pytest.mark.e2e
def test_vpc_in_use_fails_in_one_line_after_retries(moto, tmp_path):
  clients, _ = moto
  run = Run(tmp_path, clients)
  vms = run.Provision()
  vpc_entry = next(e for e in run.record.Resources()
                   if e['kind'] == 'aws_vpc')
  sleeps = []
  vpc = network.Vpc(clients, RUN_URI, sleep=sleeps.append)
  vpc.Restore(record_checks.Parse(vpc.Fields, vpc_entry, run.record))
  with pytest.raises(errors.ResourceError, match='DependencyViolation'):
    vpc.Delete()
  # A pause before each of the 9 retries, up to 30 s (in 1 s steps).
  assert network.Vpc.DELETE_RETRIES == 10
  assert sum(sleeps) == 1 + 2 + 4 + 8 + 16 + 30 * 4
  assert vms[0].instance_id
  assert resource.TeardownFromRecord(run.record) == []


def test_an_answer_that_is_not_ec2s_is_one_line_not_an_internal_error():
  # What botocore raises for an HTML page (a proxy's 500, an emulator at
  # AWS_ENDPOINT_URL without the call: moto's server and placement groups).
  page = botocore.parsers.ResponseParserError(
      'Unable to parse response (syntax error: line 1, column 0), invalid '
      "XML received. Further retries may succeed:\nb'<!doctype html>\n"
      "<html lang=en>\n<title>500 Internal Server Error</title>\n'")
  with pytest.raises(errors.ResourceError) as raised:
    with api.Translated('creating placement group pkb-x'):
      raise page
  message = str(raised.value)
  assert message.startswith('creating placement group pkb-x failed: the '
                            "endpoint's answer is not an EC2 reply")
  assert '\n' not in message and 'doctype' not in message


@pytest.mark.parametrize('variable', ['AWS_CONFIG_FILE',
                                      'AWS_SHARED_CREDENTIALS_FILE'])
def test_an_aws_configuration_that_does_not_parse_is_one_line(
    tmp_path, monkeypatch, variable):
  # It was 'internal error ConfigParseError: Unable to parse config file:
  # ... (traceback in .../pkb.log)' (a credential_process that fails was
  # 'internal error CredentialRetrievalError' the same way).
  broken = tmp_path / 'aws_file'
  broken.write_text('[default\nregion = us-east-1\n')
  monkeypatch.setenv(variable, str(broken))
  with pytest.raises(errors.PrerequisiteError) as e:
    api.ClientFactory().ForRegion(REGION)
  assert str(e.value) == (
      f'AWS configuration unusable: Unable to parse config file: {broken}; '
      'fix it (aws configure), or pick another --aws_profile.')


def test_two_vms_of_one_name_tag_are_refused_before_anything(tmp_path):
  # Cut at 63 characters, both VMs of a long group name had one Name tag:
  # the second's launch would find the first's instance by it.
  spec = virtual_machine.VmSpec(cloud='AWS', machine_type='m6i.large',
                                zone=ZONE)
  provisioner = provider.AwsProvisioner(
      _Options(), api.AwsClients(REGION, None, None), RUN_URI,
      run_record.RunRecord.Create(str(tmp_path / RUN_URI), RUN_URI))
  with pytest.raises(errors.ConfigError, match='as another VM of the run'):
    provisioner.ConstructVms({'g' * 60: spec}, {'g' * 60: 2})
  assert provisioner.record.Resources() == []


# Refusals ---------------------------------------------------------------------


@pytest.mark.parametrize('cidrs,match', [
    ([], 'needs --aws_ssh_source_cidr'),
    (['0.0.0.0/0'], 'would open SSH'),
    (['10.0.0.0/8'], 'would open SSH'),
    (['::/0'], 'IPv6'),
    (['my-laptop'], 'not an IPv4'),
])
def test_ssh_source_must_be_the_operator(cidrs, match):
  with pytest.raises(errors.UsageError, match=match) as raised:
    network.SshSourceCidrs(cidrs)
  assert '\n' not in str(raised.value)
  with pytest.raises(errors.UsageError):
    _Options(ssh_source_cidrs=tuple(cidrs))


def test_ssh_source_is_normalised():
  assert network.SshSourceCidrs(['203.0.113.7', '198.51.100.0/24']) == (
      '203.0.113.7/32', '198.51.100.0/24')


def test_security_group_refuses_world_ssh_even_when_called_directly(moto):
  clients, _ = moto
  group = network.SecurityGroup(clients, RUN_URI, vpc_id='vpc-1',
                                ssh_cidrs=('0.0.0.0/0',),
                                redis_ports=((6379, 6379),))
  with pytest.raises(errors.UsageError):
    group.Create()
  assert not clients.ec2.describe_security_groups(
      Filters=RUN_FILTER)['SecurityGroups']


@pytest.mark.parametrize('os_type', ['centos7', 'ubuntu2004', 'windows'])
def test_unsupported_os_type_is_one_line_naming_alternatives(os_type):
  with pytest.raises(errors.UsageError) as raised:
    images.OsImageFor(os_type)
  message = str(raised.value)
  assert '\n' not in message and os_type in message
  assert 'debian12' in message and 'ubuntu2404' in message


def test_check_prerequisites_reads_the_flags(pkb_flags):
  pkb_flags.os_type = 'debian12'
  pkb_flags.aws_ssh_source_cidr = []
  with pytest.raises(errors.UsageError, match='aws_ssh_source_cidr'):
    provider.CheckPrerequisites(pkb_flags)
  pkb_flags.aws_ssh_source_cidr = ['203.0.113.7']
  provider.CheckPrerequisites(pkb_flags)
  pkb_flags.os_type = 'centos7'
  with pytest.raises(errors.UsageError, match='centos7'):
    provider.CheckPrerequisites(pkb_flags)
  pkb_flags.os_type = 'debian12'
  pkb_flags.zone = 'us-east-1'
  with pytest.raises(errors.UsageError, match='availability zone'):
    provider.CheckPrerequisites(pkb_flags)


def test_groups_must_share_one_zone():
  specs = _GroupSpecs()
  specs['clients'] = virtual_machine.VmSpec(
      cloud='AWS', machine_type='m6i.large', zone='us-east-1b')
  with pytest.raises(errors.UsageError, match='different zones'):
    provider.ZoneOf(specs)


def test_image_and_machine_lookup(moto):
  clients, _ = moto
  assert images.ParameterName('ubuntu2404', images.ARM64) == (
      '/aws/service/canonical/ubuntu/server/24.04/stable/current/arm64/hvm/'
      'ebs-gp3/ami-id')
  assert images.ParameterName('debian12', images.X86_64) == (
      '/aws/service/debian/release/12/latest/amd64')
  assert images.ParameterName('al2023', images.ARM64) == (
      '/aws/service/ami-amazon-linux-latest/al2023-ami-kernel-default-arm64')
  for machine_type, arch in (('c6gn.16xlarge', 'arm64'), ('c7g.8xlarge',
                                                          'arm64'),
                             ('m6g.large', 'arm64'), ('i4i.4xlarge', 'x86_64'),
                             ('c6i.large', 'x86_64')):
    info = images.DescribeMachine(clients, machine_type, ZONE)
    assert info.architecture == arch, machine_type
  choice = images.LookUpImage(clients, 'ubuntu2204', images.ARM64)
  assert (choice.image_id, choice.root_device_name) == (ARM_AMI, '/dev/xvda')
  with pytest.raises(errors.UsageError, match='is x86_64 but'):
    images.LookUpImage(clients, 'debian12', images.ARM64, image_id=X86_AMI)
  with pytest.raises(errors.UsageError, match='not an EC2 instance type'):
    images.DescribeMachine(clients, 'zz9.huge', ZONE)


@pytest.mark.parametrize('zone,region', [
    ('us-east-1a', 'us-east-1'), ('us-gov-west-1b', 'us-gov-west-1'),
    ('us-west-2-lax-1a', 'us-west-2'), ('ap-southeast-3c', 'ap-southeast-3'),
])
def test_region_of_zone(zone, region):
  assert naming.RegionOf(zone) == region


def test_run_tags_fit_ec2s_value_limit():
  tags = naming.RunTags('o' * 300, RUN_URI, 'redis_memtier', 'none')
  assert tags['owner'] == 'o' * naming.MAX_TAG_VALUE_LENGTH
  assert tags['run_uri'] == RUN_URI


def test_region_refuses_non_zones():
  for value in ('us-east-1', 'us-central1-a', ''):
    with pytest.raises(errors.UsageError):
      naming.RegionOf(value)


@pytest.mark.parametrize('flags,closed', [
    ({'redis_start_port': 9001}, 9001),
    ({'redis_start_port': 6000}, 6000),
    ({'redis_total_num_processes': 2000}, 9000),
    ({'redis_server_cluster_mode': True, 'redis_start_port': 8990,
      'redis_total_num_processes': 4}, None),
    ({'redis_server_cluster_mode': True, 'redis_start_port': 8990,
      'redis_total_num_processes': 20}, 9000),
    ({'redis_optimize_shards': True, 'redis_max_shards': 3000}, 9000),
    ({'aws_redis_ports': ['7001-7004', '17001-17003'],
      'redis_server_cluster_mode': True, 'redis_total_num_processes': 4},
     17004),
    # Each server VM holds its primaries' replicas too, on the next ports.
    ({'aws_redis_ports': ['7001-7003', '17001-17003'],
      'redis_server_cluster_mode': True, 'redis_total_num_processes': 3,
      'redis_replicas_per_primary': 1}, 7004),
])
def test_shards_on_ports_the_security_group_keeps_closed_are_refused(
    tmp_path, pkb_flags, flags, closed):
  # Before anything is made: the clients would never reach such a shard.
  pkb_flags.aws_ssh_source_cidr = [OPERATOR]
  for name, value in flags.items():
    setattr(pkb_flags, name, value)
  calls = []
  ec2 = types.SimpleNamespace(**{name: lambda *a, **k: calls.append(a)
                                 for name in ('describe_instance_types',
                                              'create_vpc')})
  clients = api.AwsClients(REGION, ec2, None)
  provisioner = provider.AwsProvisioner(
      provider.AwsOptions.FromFlags(pkb_flags), clients, RUN_URI,
      run_record.RunRecord.Create(str(tmp_path / RUN_URI), RUN_URI))
  vms = [vm for vms in provisioner.ConstructVms(
      _GroupSpecs(), {'servers': 1, 'clients': 1}).values() for vm in vms]
  if closed is None:
    network.CheckShardPorts(provisioner.options.shard_ports,
                            provisioner.options.redis_ports)
    return
  with pytest.raises(errors.UsageError, match=(
      rf'leaves {closed} closed between the VMs; widen --aws_redis_ports')):
    provisioner.Provision(vms)
  assert not calls and not provisioner.record.Resources()
  # A benchmark's own peer ports (Redis Enterprise's databases) count too.
  network.CheckShardPorts(provisioner.options.shard_ports,
                          provisioner.options.redis_ports, [(1, 65535)])


def test_a_shard_search_up_to_the_servers_vcpus_is_checked_before_anything(
    moto, tmp_path):
  # Without --redis_max_shards a search goes up to the server VM's vCPUs:
  # from port 8900 on a c6gn.16xlarge (64), 2 points (64 and 63 shards,
  # each on ports of its own) take 8900-9026, where the default
  # --aws_redis_ports stops at 8999. Only its first shard was checked, and
  # the run was built.
  clients, _ = moto
  shards = provider.ShardLayout(start_port=8900, search=(1, None, 2))
  run = Run(tmp_path, clients, options=_Options(shards=shards))
  with pytest.raises(errors.UsageError, match=(
      r'ports 8900-9026, but --aws_redis_ports=6379-8999,16379-18999 '
      r'leaves 9000 closed')):
    run.Provision()
  assert not run.record.Resources()
  assert not run.ec2.Calls('create_vpc')
  # Before the vCPUs are known, its fewest; on 64 vCPUs, 8 points of 64
  # down to 57 shards (484 ports); a --redis_max_shards of 3 with 8 points
  # tries 1, 2 and 3 shards (6 ports), with replicas twice that.
  search = provider.ShardLayout(start_port=7001, search=(1, None, 8))
  assert (search.Ranges(), search.Ranges(64)) == (((7001, 7001),),
                                                  ((7001, 7484),))
  assert provider.ShardLayout(
      start_port=7001, search=(1, 3, 8), replicas_per_primary=1,
      cluster_bus=True).Ranges() == ((7001, 7012), (17001, 17012))


def test_a_module_that_starts_no_redis_shards_is_not_refused_for_them(
    tmp_path, pkb_flags):
  # An upstream module with --aws_redis_ports=6379 (say) was refused for
  # the shards the default --redis_start_port (7001) would have put where
  # it starts none.
  pkb_flags.aws_ssh_source_cidr = [OPERATOR]
  pkb_flags.aws_redis_ports = ['6379']
  options = provider.AwsOptions.FromFlags(pkb_flags)
  with pytest.raises(errors.UsageError, match='leaves 7001 closed'):
    network.CheckShardPorts(options.shard_ports, options.redis_ports)
  calls = []

  def Refuse(*args, **kwargs):
    calls.append(args)
    raise RuntimeError('the cloud was called')

  ec2 = types.SimpleNamespace(describe_instance_types=Refuse)
  provisioner = provider.AwsProvisioner(
      options, api.AwsClients(REGION, ec2, None), RUN_URI,
      run_record.RunRecord.Create(str(tmp_path / RUN_URI), RUN_URI))
  vms = [vm for vms in provisioner.ConstructVms(
      _GroupSpecs(), {'servers': 1, 'clients': 1}).values() for vm in vms]
  # Past the port check, to the machine check (the first cloud call).
  with pytest.raises(RuntimeError, match='the cloud was called'):
    provisioner.Provision(vms, starts_redis_shards=False)
  assert calls
  with pytest.raises(errors.UsageError, match='leaves 7001 closed'):
    provisioner.Provision(vms)


def test_a_dry_run_refuses_the_shard_ports_provision_would(pkb_main, capsys,
                                                            tmp_path):
  # The dry run planned 3 shards and a replica each on ports the security
  # group keeps closed (exit 0, 'nothing is created'), which the real run
  # then refused in Provision. A search that follows the vCPUs is checked
  # for the catalog's c6gn.16xlarge (64: 2 points take 8900-9026).
  common = ['--dry_run', '--cloud=AWS', '--zone=us-east-1a',
            f'--aws_ssh_source_cidr={OPERATOR}',
            f'--results_dir={tmp_path}']
  for extra, closed in (
      (['--aws_redis_ports=7001-7003,17001-17003',
        '--redis_total_num_processes=3',
        '--redis_replicas_per_primary=1'], 7004),
      (['--redis_start_port=8900', '--redis_optimize_shards',
        '--redis_shard_max_points=2', '--machine_type=c6gn.16xlarge'], 9000)):
    code = pkb_main(common + extra)
    err = capsys.readouterr().err
    assert code == 2 and err.count('\n') == 1, err
    assert f'leaves {closed} closed between the VMs' in err, err
  # Ports the group admits plan as before.
  assert pkb_main(common + ['--redis_total_num_processes=3']) == 0
  assert 'Dry run of redis_memtier on AWS' in capsys.readouterr().out


# Calls: each sent once, with timeouts; the run's own retries -----------------


def test_every_client_sends_a_call_once_with_its_own_timeouts(monkeypatch):
  """botocore's default was 60 s to connect and 60 s per read, and its
  retries (here 8 more sends, sleeping up to 20 s between them on the real
  clock, which no stop ends)."""
  for key in ('AWS_PROFILE', 'AWS_DEFAULT_PROFILE'):
    monkeypatch.delenv(key, raising=False)
  monkeypatch.setenv('AWS_ACCESS_KEY_ID', 'testing')
  monkeypatch.setenv('AWS_SECRET_ACCESS_KEY', 'testing')
  clients = api.ClientFactory().ForRegion(REGION)
  for client in (clients.ec2, clients.ssm):
    config = client.meta.config
    assert (config.connect_timeout, config.read_timeout) == (10, 60)
    assert config.retries == {'mode': 'standard', 'total_max_attempts': 1}


class _Raw:
  """The raw body botocore reads an AWSResponse's content from."""

  def __init__(self, body):
    self._body = body

  def stream(self, **unused_kwargs):
    yield self._body


_THROTTLED = (b'<?xml version="1.0" encoding="UTF-8"?><Response><Errors>'
              b'<Error><Code>RequestLimitExceeded</Code><Message>Request '
              b'limit exceeded.</Message></Error></Errors><RequestID>r-1'
              b'</RequestID></Response>')


def _Throttle(monkeypatch, operation, times):
  """The next `times` sends of EC2's `operation` answered as EC2 answers a
  caller over its request limit (HTTP 503, RequestLimitExceeded), before
  moto sees them, inside botocore's own retry loop (where moto answers:
  its before-send handler), so botocore takes them as it would EC2's.
  Returns the list of the operation's sends (each a wall-clock time)."""
  sends = []
  answer = moto_stubber.BotocoreStubber.__call__

  def Answer(self, event_name, request, **kwargs):
    if event_name == f'before-send.ec2.{operation}':
      sends.append(wall_time.monotonic())
      if len(sends) <= times:
        return botocore.awsrequest.AWSResponse(request.url, 503, {},
                                               _Raw(_THROTTLED))
    return answer(self, event_name, request, **kwargs)

  monkeypatch.setattr(moto_stubber.BotocoreStubber, '__call__', Answer)
  return sends


def _Provisioner(clients, time, tmp_path):
  record = run_record.RunRecord.Create(str(tmp_path / RUN_URI), RUN_URI)
  return provider.AwsProvisioner(
      _Options(), clients, RUN_URI, record, sleep=time.sleep,
      clock=time.clock, now=lambda: 1_800_000_000.0)


def _OneServer(provisioner):
  return provisioner.ConstructVms(
      {'servers': _GroupSpecs()['servers']}, {'servers': 1})['servers']


def test_a_throttled_lookup_is_retried_by_the_runs_own_pauses(
    moto, tmp_path, monkeypatch):
  """botocore waited the throttling out itself, on the real clock: the run
  saw nothing, and no stop could end it."""
  clients, _ = moto
  time = FakeTime()
  provisioner = _Provisioner(clients, time, tmp_path)
  vms = _OneServer(provisioner)
  sends = _Throttle(monkeypatch, 'DescribeInstanceTypes', 2)
  provisioner._Check(vms)  # pylint: disable=protected-access
  assert len(sends) == 3
  assert time.sleeps == [1, 1, 1]  # 1 s, then 2 s, in 1 s steps.
  assert vms[0].num_cpus == 64


def test_a_stop_ends_a_throttled_lookup_within_a_pause_step(
    moto, tmp_path, monkeypatch):
  clients, _ = moto
  # The stop lands in the pause after the second throttle (1 s, then 2 s).
  # Three throttles, then answers: a retry that ignores the stop (botocore's
  # took a few seconds over three) ends too, so the test fails on the
  # lookup's success rather than hanging.
  time = FakeTime(stop_at=1 + 0.5)
  provisioner = _Provisioner(clients, time, tmp_path)
  vms = _OneServer(provisioner)
  sends = _Throttle(monkeypatch, 'DescribeInstanceTypes', 3)
  with pytest.raises(errors.ResourceError) as stopped:
    provisioner._Check(vms)  # pylint: disable=protected-access
  assert str(stopped.value) == (
      'looking up machine type c6gn.16xlarge: RequestLimitExceeded: Request '
      'limit exceeded.; not tried again, the run being stopped')
  assert len(sends) == 2  # None after the stop, which woke the pause.
  assert time.now == 2


@pytest.mark.parametrize('stop_at', [None, 1 + 0.5], ids=['no stop', 'stop'])
def test_a_throttled_create_is_retried_by_the_runs_own_pauses(
    moto, tmp_path, monkeypatch, stop_at):
  """A create botocore kept re-sending through throttling (on the real
  clock, no stop ending it) is the run's create retry's: paused on the
  run's clock, and ended by a stop within a pause step with no send after
  it."""
  clients, _ = moto
  time = FakeTime(stop_at=stop_at)
  record = run_record.RunRecord.Create(str(tmp_path / RUN_URI), RUN_URI)
  vpc = network.Vpc(clients, RUN_URI, tags={naming.TAG_RUN_URI: RUN_URI},
                    record=record, sleep=time.sleep, clock=time.clock)
  sends = _Throttle(monkeypatch, 'CreateVpc', 3 if stop_at else 2)
  if stop_at:
    with pytest.raises(errors.ResourceError) as stopped:
      vpc.Create()
  else:
    vpc.Create()
  if stop_at:
    # The stop came in the pause after the second throttle: no third send.
    assert str(stopped.value) == (
        f'Creating aws_vpc pkb-{RUN_URI} not tried again: the run was '
        'stopped')
    assert len(sends) == 2 and time.now == 2 and not vpc.FindIds()
  else:
    assert len(sends) == 3 and time.sleeps == [1, 1, 1]
    assert vpc.FindIds() == [vpc.id]
  assert resource.TeardownFromRecord(record) == []
  assert not vpc.FindIds()


def test_a_route_tables_resends_carry_one_client_token(moto):
  """botocore put a new ClientToken in each send of CreateRouteTable, so a
  send EC2 took but did not answer, sent again, made a second table."""
  clients, _ = moto
  ec2 = clients.ec2
  vpc_id = ec2.create_vpc(CidrBlock='10.0.0.0/16')['Vpc']['VpcId']
  subnet_id = ec2.create_subnet(VpcId=vpc_id, CidrBlock='10.0.0.0/24')[
      'Subnet']['SubnetId']
  gateway_id = ec2.create_internet_gateway()['InternetGateway'][
      'InternetGatewayId']
  ec2.attach_internet_gateway(InternetGatewayId=gateway_id, VpcId=vpc_id)
  flaky = FlakyEc2(ec2, 'create_route_table', code='RequestLimitExceeded')
  table = network.RouteTable(
      api.AwsClients(REGION, flaky, clients.ssm), RUN_URI, vpc_id=vpc_id,
      gateway_id=gateway_id, subnet_id=subnet_id, sleep=lambda s: None)
  table.Create()
  tokens = [c.get('ClientToken') for c in flaky.Calls('create_route_table')]
  assert len(tokens) == 2 and tokens[0] and tokens[0] == tokens[1]
  # A new object (a new provision attempt) sends a new one.
  other = network.RouteTable(clients, RUN_URI, vpc_id=vpc_id)
  assert other._client_token != tokens[0]  # pylint: disable=protected-access


class _StalledEndpoint:
  """An EC2 endpoint on loopback that takes each call and holds its answer
  (none, or its headers and then nothing) for HOLD_S at most, released as
  it closes; `requests` counts the calls it took."""

  HOLD_S = 10

  def __init__(self, headers=False):
    self.requests = 0
    self._headers = headers
    self._released = threading.Event()
    self._listener = socket.create_server(('127.0.0.1', 0))
    self.url = f'http://127.0.0.1:{self._listener.getsockname()[1]}'
    self._threads = [threading.Thread(target=self._Accept, daemon=True)]
    self._threads[0].start()

  def _Accept(self):
    while not self._released.is_set():
      try:
        connection, _ = self._listener.accept()
      except OSError:
        return  # Closed.
      thread = threading.Thread(target=self._Hold, args=(connection,),
                                daemon=True)
      self._threads.append(thread)
      thread.start()

  def _Hold(self, connection):
    with connection:
      data = b''
      while b'\r\n\r\n' not in data:
        chunk = connection.recv(65536)
        if not chunk:
          return
        data += chunk
      self.requests += 1
      if self._headers:
        connection.sendall(b'HTTP/1.1 200 OK\r\nContent-Type: text/xml\r\n'
                           b'Content-Length: 1000\r\n\r\n<')
      self._released.wait(self.HOLD_S)

  def __enter__(self):
    return self

  def __exit__(self, *unused_exc):
    self._released.set()
    with contextlib.suppress(OSError):
      self._listener.shutdown(socket.SHUT_RDWR)  # Wakes its accept().
    self._listener.close()
    for thread in self._threads:
      thread.join(self.HOLD_S)


@pytest.mark.parametrize('headers', [False, True],
                         ids=['no answer', 'headers then nothing'])
def test_a_stalled_call_ends_at_its_read_timeout_and_a_stop_ends_the_read(
    monkeypatch, headers):
  """botocore's read timeout (60 s) held a stalled call that long, and
  its retries sent it again up to 8 times; the client's timeout (1 s here)
  ends it, once sent, and a stop in the pause after it ends the read."""
  for key in ('AWS_PROFILE', 'AWS_DEFAULT_PROFILE'):
    monkeypatch.delenv(key, raising=False)
  monkeypatch.setenv('AWS_ACCESS_KEY_ID', 'testing')
  monkeypatch.setenv('AWS_SECRET_ACCESS_KEY', 'testing')
  with _StalledEndpoint(headers) as endpoint:
    monkeypatch.setenv('AWS_ENDPOINT_URL', endpoint.url)
    clients = api.ClientFactory(connect_timeout_s=1,
                                read_timeout_s=1).ForRegion(REGION)
    time = FakeTime(stop_at=0.5)  # In the pause after the first call.
    began = wall_time.monotonic()
    with pytest.raises(errors.ResourceError) as stopped:
      images.DescribeMachine(clients, 'm6i.large', ZONE, sleep=time.sleep)
    took = wall_time.monotonic() - began
    assert endpoint.requests == 1
  # Its timeout, not the endpoint's hold (nor botocore's 60 s).
  assert 1 <= took < _StalledEndpoint.HOLD_S - 1
  assert re.fullmatch(
      r'looking up machine type m6i\.large: Read timeout on endpoint URL: '
      r'"http://127\.0\.0\.1:\d+/"; not tried again, the run being stopped',
      str(stopped.value)), str(stopped.value)
  assert time.now == 1


def test_a_5xx_of_any_code_is_transient_where_the_block_retries():
  """botocore retried every 5xx itself; sent once, a 503 whose code the
  run does not list (a proxy's, none at all) failed the create at once."""
  for code in ('', 'ServiceUnavailableException'):
    error = botocore.exceptions.ClientError(
        {'Error': {'Code': code, 'Message': 'Service Unavailable'},
         'ResponseMetadata': {'HTTPStatusCode': 503}}, 'CreateVpc')
    with pytest.raises(resource.RetryableError):
      with api.Translated('creating aws_vpc pkb-x', retry=api.TRANSIENT_CODES):
        raise error
    with pytest.raises(errors.ResourceError, match='AWS refused'):
      with api.Translated('deleting aws_vpc pkb-x'):  # Retries nothing.
        raise error
