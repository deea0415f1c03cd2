"""A run interrupted mid-probe leaves nothing behind in moto or the fake GCE.

Each test drives pkb's real stage driver (pkb._RunOne: provision, prepare,
run, then _Finish's cleanup and teardown from the run record) with a stub
benchmark module whose Run emits one sample and then raises
errors.RunInterrupted, as pkb's SIGINT handler does when Ctrl-C arrives while
a probe runs. Everything else is the real code: BenchmarkSpec, the provider
modules' ConstructVms(spec)/Provision(spec) built from the flags, the
resources, the run record, resource.TeardownFromRecord and the publishers.

The clouds are local: AWS is moto's mock_aws (in-process, with the SSM
parameters and placement-group calls the AWS provider tests add), GCP is
tests/fake_gce.py on 127.0.0.1 named by --gcp_compute_endpoint (a loopback
endpoint gets anonymous credentials). The SSH wait is skipped through the
spec's injected ssh_waiter (pkb._RunOne passes it to the BenchmarkSpec). A guard refuses any socket
connection or name lookup that is not loopback, so a mistake fails the test
instead of reaching a real cloud or the GCE metadata server.
"""

import io
import ipaddress
import json
import os
import signal
import socket
import threading
import types

import botocore.awsrequest
import pytest

from perfkitbenchmarker import benchmark_spec as spec_lib
from perfkitbenchmarker import configs
from perfkitbenchmarker import errors
from perfkitbenchmarker import flags as pkb_flags_lib
from perfkitbenchmarker import pkb
from perfkitbenchmarker import reporting
from perfkitbenchmarker import run_record
from perfkitbenchmarker import run_scope
from perfkitbenchmarker import run_signals
from perfkitbenchmarker import sample as sample_lib
from perfkitbenchmarker.providers.aws import api as aws_api
from perfkitbenchmarker.providers.aws import provider as aws_provider
from perfkitbenchmarker.publishers import json_publisher
from perfkitbenchmarker.publishers import publisher

# pylint: disable=g-bad-import-order
import aws_provider_test
import lazy_modules
import fake_gce
from aws_provider_test import moto  # pylint: disable=unused-import  (fixture)

# Imported when a test first uses them (lazy_modules).
gcp_provider = lazy_modules.Module(
    'perfkitbenchmarker.providers.gcp.provider')

# Every test here starts a process (tests/tier_guard.py).
pytestmark = pytest.mark.e2e

OPERATOR = '203.0.113.7/32'
AWS_RUN_URI = 'intaws1'
GCP_RUN_URI = 'intgcp1'
GCP_PROJECT = 'pkb-interrupt-test'
INTERRUPT = 'interrupted by SIGINT'

STUB_CONFIG = """
interrupt_stub:
  description: Provisions servers and clients, then is interrupted mid-probe.
  vm_groups:
    servers:
      vm_spec:
        AWS:
          machine_type: m6g.large
          zone: us-east-1a
        GCP:
          machine_type: n2-standard-4
          zone: us-central1-a
      vm_count: 1
    clients:
      vm_spec:
        AWS:
          machine_type: c6i.large
          zone: us-east-1a
        GCP:
          machine_type: n2-standard-2
          zone: us-central1-a
      vm_count: 2
  flags: {}
"""


# Network guard ----------------------------------------------------------------


def _IsLoopback(host) -> bool:
  if isinstance(host, bytes):
    host = host.decode()
  if host in (None, 'localhost'):
    return True
  try:
    return ipaddress.ip_address(str(host).split('%')[0]).is_loopback
  except ValueError:
    return False


@pytest.fixture
def loopback_only(monkeypatch):
  """Refuses connections and lookups that would leave 127.0.0.0/8 (or ::1)."""
  refused = []
  real_connect = socket.socket.connect
  real_connect_ex = socket.socket.connect_ex
  real_getaddrinfo = socket.getaddrinfo

  def Check(sock, address):
    if sock.family in (socket.AF_INET, socket.AF_INET6) and not _IsLoopback(
        address[0]):
      refused.append(address)
      raise OSError(f'cloud_interrupt_test: refused non-loopback {address}')

  def Connect(sock, address):
    Check(sock, address)
    return real_connect(sock, address)

  def ConnectEx(sock, address):
    Check(sock, address)
    return real_connect_ex(sock, address)

  def GetAddrInfo(host, *args, **kwargs):
    if not _IsLoopback(host):
      refused.append(host)
      raise socket.gaierror(f'cloud_interrupt_test: refused lookup of {host}')
    return real_getaddrinfo(host, *args, **kwargs)

  monkeypatch.setattr(socket.socket, 'connect', Connect)
  monkeypatch.setattr(socket.socket, 'connect_ex', ConnectEx)
  monkeypatch.setattr(socket, 'getaddrinfo', GetAddrInfo)
  yield refused
  assert not refused, f'the test tried to leave loopback: {refused}'


# The stub benchmark -------------------------------------------------------------


def _StubBenchmark(snapshot):
  """A benchmark module whose probe is interrupted after one sample.

  `snapshot(spec)` runs inside Run, before the interrupt: what the cloud
  holds at that moment.
  """
  module = types.ModuleType('interrupt_stub_benchmark')
  module.BENCHMARK_NAME = 'interrupt_stub'
  module.BENCHMARK_CONFIG = STUB_CONFIG
  module.calls = []

  def GetConfig(user_config):
    default = configs.LoadYaml(STUB_CONFIG, 'interrupt_stub')['interrupt_stub']
    return configs.MergeConfigs('interrupt_stub', default,
                                user_config.get('file'),
                                user_config.get('overrides', []))

  def CheckPrerequisites(config):
    del config

  def Prepare(spec):
    module.calls.append('prepare')
    del spec

  def Run(spec):
    module.calls.append('run')
    module.during_run = snapshot(spec)
    spec.EmitSamples([sample_lib.Sample(
        'probe throughput', 1234.0, 'ops/sec', {'probe': 1})])
    # What pkb's signal handler raises when Ctrl-C arrives mid-probe.
    raise errors.RunInterrupted(INTERRUPT)

  def Cleanup(spec):
    module.calls.append('cleanup')
    del spec

  module.GetConfig = GetConfig
  module.CheckPrerequisites = CheckPrerequisites
  module.Prepare = Prepare
  module.Run = Run
  module.Cleanup = Cleanup
  return module


def _RunInterrupted(module, run_uri, cloud, tmp_path, capsys, ssh_waiter,
                    interrupts=None):
  """pkb._RunOne over every stage, as RunBenchmarks calls it."""
  config = module.GetConfig({'file': None, 'overrides': []})
  run_dir = str(tmp_path / 'runs' / run_uri)
  record = run_record.RunRecord.Create(
      run_dir, run_uri, cloud=cloud, benchmarks=[module.BENCHMARK_NAME])
  json_path = os.path.join(run_dir, 'perfkitbenchmarker_results.json')
  collector = publisher.SampleCollector(
      [json_publisher.JSONPublisher(json_path)],
      publisher.RunInfo(run_uri=run_uri, owner='tester'))
  stages = list(pkb_flags_lib.RUN_STAGES)
  try:
    code = pkb._RunOne(  # pylint: disable=protected-access
        module, config, run_uri, record, None, collector,
        reporting.ConsoleReporter(io.StringIO()), spec_lib.Deadline(None),
        stages, interrupts or run_signals.Interrupts(),
        ssh_waiter=ssh_waiter)
  finally:
    collector.Close()
  rows = []
  if os.path.exists(json_path):  # Made at the first sample.
    with open(json_path) as f:
      rows = [json.loads(line) for line in f if line.strip()]
  return types.SimpleNamespace(
      code=code, collector=collector, rows=rows, run_dir=run_dir,
      record=run_record.RunRecord.Load(run_dir),
      stderr=capsys.readouterr().err)


def _AssertInterruptedAndTornDown(run, module, vm_kind, vm_count):
  assert run.code == pkb.EXIT_INTERRUPTED
  assert module.calls == ['prepare', 'run', 'cleanup']
  assert f'interrupt_stub stopped: {INTERRUPT}' in run.stderr
  # The sample measured before the interrupt was published and kept.
  assert [(s.metric, s.value) for s in run.collector.samples] == [
      ('probe throughput', 1234.0)]
  assert [(r['metric'], r['value'], r['test']) for r in run.rows] == [
      ('probe throughput', 1234.0, 'interrupt_stub')]
  # Provisioned fully, interrupted in the run stage, then torn down.
  assert run.record.stages_done == ['provision', 'prepare', 'cleanup',
                                    'teardown']
  entries = run.record.Resources()
  assert sum(e['kind'] == vm_kind for e in entries) == vm_count
  assert entries and all(e['status'] == 'deleted' for e in entries), [
      (e['kind'], e['name'], e['status']) for e in entries]
  assert not list(run.record.LiveResources())
  assert not os.path.exists(os.path.join(run.run_dir, 'aws_ssh_key'))
  assert not os.path.exists(os.path.join(run.run_dir, 'pkb_ssh_key'))
  assert not os.path.exists(run_scope.RunKeyDir(run.record.run_uri))


# AWS (moto) ---------------------------------------------------------------------


def _AwsOfRun(ec2, placement_groups, run_uri):
  """What moto holds that belongs to the run (by its tags or names)."""
  return aws_provider_test._Inventory(ec2, placement_groups, run_uri)[1]  # pylint: disable=protected-access


def test_aws_run_interrupted_mid_probe_leaves_nothing_in_moto(
    moto, loopback_only, pkb_flags, tmp_path, monkeypatch, capsys):
  clients, placement_groups = moto
  del loopback_only
  ssh_waited = []
  pkb_flags.cloud = 'AWS'
  pkb_flags.run_uri = AWS_RUN_URI
  pkb_flags.zone = 'us-east-1a'
  pkb_flags.os_type = 'debian12'
  pkb_flags.owner = 'tester'
  pkb_flags.aws_ssh_source_cidr = [OPERATOR]
  pkb_flags.placement_group_style = 'cluster'
  pkb_flags.timeout_minutes = 60
  assert not _AnyNonZero(_AwsOfRun(clients.ec2, placement_groups,
                                   AWS_RUN_URI))

  def Snapshot(spec):
    return dict(
        of_run=_AwsOfRun(clients.ec2, placement_groups, AWS_RUN_URI),
        addresses=[vm.ip_address for vm in spec.vms],
        statuses={e['status'] for e in spec.record.Resources()})

  module = _StubBenchmark(Snapshot)
  run = _RunInterrupted(module, AWS_RUN_URI, 'AWS', tmp_path, capsys,
                        lambda vm: ssh_waited.append(vm.name))

  # Mid-probe, the whole run existed in moto and was recorded as created.
  during = module.during_run
  assert during['of_run'] == {
      'instances': 3, 'vpcs': 1, 'subnets': 1, 'security_groups': 1,
      'internet_gateways': 1, 'route_tables': 1, 'key_pairs': 1,
      'placement_groups': 1}
  assert all(during['addresses']) and during['statuses'] == {'created'}
  assert sorted(ssh_waited) == ['clients-0', 'clients-1', 'servers-0']

  _AssertInterruptedAndTornDown(run, module, 'aws_vm', 3)
  assert [e['kind'] for e in run.record.Resources()] == [
      'aws_vpc', 'aws_subnet', 'aws_internet_gateway', 'aws_route_table',
      'aws_security_group', 'aws_key_pair', 'aws_placement_group',
      'aws_vm', 'aws_vm', 'aws_vm']
  # Afterwards moto holds nothing of the run.
  left = _AwsOfRun(clients.ec2, placement_groups, AWS_RUN_URI)
  assert left == {kind: 0 for kind in left}
  instances = [i for r in clients.ec2.describe_instances(Filters=[
      {'Name': 'tag:run_uri', 'Values': [AWS_RUN_URI]}])['Reservations']
               for i in r['Instances']]
  assert len(instances) == 3
  assert {i['State']['Name'] for i in instances} == {'terminated'}


def _AnyNonZero(counts):
  return any(counts.values())


class _ThrottledEc2:
  """moto's EC2, as one client of the run sees it, rate limited: RunInstances
  from its nth call on fails as EC2 fails a call over its request limit
  (RequestLimitExceeded, HTTP 503; botocore sends each call once, api's
  docstring), which the resource retries after a pause; then() runs at the
  first such failure.
  The failure is answered before the call reaches moto (botocore's
  before-call hook), so moto launches nothing for it. Every EC2 call the
  client makes is noted in order, failed or not."""

  def __init__(self, client, nth, then):
    self.calls = []
    self._events = client.meta.events
    self._nth, self._then = nth, then
    self._events.register_first('before-call.ec2', self._Call)

  def _Call(self, event_name, **unused_kwargs):
    operation = event_name.rsplit('.', 1)[-1]
    self.calls.append(operation)
    if operation != 'RunInstances' or (
        self.calls.count('RunInstances') < self._nth):
      return None  # On to moto.
    if self.calls.count('RunInstances') == self._nth:
      self._then()
    return (botocore.awsrequest.AWSResponse('', 503, {}, None), {
        'Error': {'Code': 'RequestLimitExceeded',
                  'Message': 'Request limit exceeded.'},
        'ResponseMetadata': {'HTTPStatusCode': 503}})

  def Remove(self):
    self._events.unregister('before-call.ec2', self._Call)


def test_aws_sigint_while_a_launch_waits_out_throttling_leaves_nothing(
    moto, loopback_only, pkb_flags, tmp_path, capsys):
  """Ctrl-C while the second VM's RunInstances is throttled and retried:
  no launch goes out once teardown began, and nothing is left in moto.

  AWS launches the run's VMs one after another in the main thread (not in
  parallel lanes as GCP's inserts), so the signal's exception ends the
  resource's retry pause itself."""
  clients, placement_groups = moto
  del loopback_only
  pkb_flags.cloud = 'AWS'
  pkb_flags.run_uri = AWS_RUN_URI
  pkb_flags.zone = 'us-east-1a'
  pkb_flags.os_type = 'debian12'
  pkb_flags.owner = 'tester'
  pkb_flags.aws_ssh_source_cidr = [OPERATOR]
  pkb_flags.placement_group_style = 'cluster'
  pkb_flags.timeout_minutes = 60
  # The run's own client (provider.Provision and teardown from the record
  # both use the default one for the region).
  throttled = _ThrottledEc2(
      aws_api.DEFAULT_CLIENTS.ForRegion('us-east-1').ec2, nth=2,
      then=lambda: threading.Timer(
          0.3, os.kill, (os.getpid(), signal.SIGINT)).start())
  interrupts = run_signals.Interrupts(AWS_RUN_URI)
  interrupts.Install(None)
  try:
    module = _StubBenchmark(lambda spec: None)
    run = _RunInterrupted(module, AWS_RUN_URI, 'AWS', tmp_path, capsys,
                          lambda vm: None, interrupts=interrupts)
  finally:
    interrupts.Restore()
    throttled.Remove()

  assert run.code == pkb.EXIT_INTERRUPTED
  assert module.calls == ['cleanup']
  assert 'interrupted by SIGINT' in run.stderr
  calls = throttled.calls
  assert calls.count('RunInstances') >= 2, calls  # The throttled one too.
  first_terminate = calls.index('TerminateInstances')
  assert 'RunInstances' not in calls[first_terminate:], (
      'a launch went out after teardown began')
  left = _AwsOfRun(clients.ec2, placement_groups, AWS_RUN_URI)
  assert left == {kind: 0 for kind in left}
  launched = [i for r in clients.ec2.describe_instances(Filters=[
      {'Name': 'tag:run_uri', 'Values': [AWS_RUN_URI]}])['Reservations']
              for i in r['Instances']]
  assert len(launched) == 1  # The first VM's; the throttled one never was.
  assert {i['State']['Name'] for i in launched} == {'terminated'}
  assert not list(run.record.LiveResources())


# GCP (fake Compute API on loopback) -------------------------------------------------


@pytest.fixture
def fake():
  with fake_gce.FakeGce() as server:
    yield server


def _GcpFlags(pkb_flags, fake):
  """A GCP run of GCP_RUN_URI against the fake, from this operator."""
  pkb_flags.cloud = 'GCP'
  pkb_flags.run_uri = GCP_RUN_URI
  pkb_flags.project = GCP_PROJECT
  pkb_flags.zone = 'us-central1-a'
  pkb_flags.os_type = 'debian12'
  pkb_flags.owner = 'tester'
  pkb_flags.gcp_ssh_source_range = [OPERATOR]
  pkb_flags.gcp_compute_endpoint = fake.endpoint
  pkb_flags.gcp_network = None
  pkb_flags.placement_group_style = 'cluster'
  pkb_flags.timeout_minutes = 60


def test_gcp_run_interrupted_mid_probe_leaves_nothing_in_the_fake(
    fake, loopback_only, pkb_flags, tmp_path, monkeypatch, capsys):
  del loopback_only
  ssh_waited = []
  _GcpFlags(pkb_flags, fake)
  assert fake.endpoint.startswith('http://127.0.0.1:')

  def Snapshot(spec):
    return dict(
        live=sorted(c for c, _, _, _ in fake.resources),
        addresses=[vm.ip_address for vm in spec.vms],
        statuses={e['status'] for e in spec.record.Resources()})

  module = _StubBenchmark(Snapshot)
  run = _RunInterrupted(module, GCP_RUN_URI, 'GCP', tmp_path, capsys,
                        lambda vm: ssh_waited.append(vm.name))

  # Mid-probe, the whole run existed in the fake and was recorded as created.
  during = module.during_run
  assert during['live'] == ['firewalls', 'firewalls', 'instances',
                            'instances', 'instances', 'networks',
                            'resourcePolicies', 'subnetworks']
  assert all(during['addresses']) and during['statuses'] == {'created'}
  assert sorted(ssh_waited) == [f'pkb-{GCP_RUN_URI}-clients-0',
                                f'pkb-{GCP_RUN_URI}-clients-1',
                                f'pkb-{GCP_RUN_URI}-servers-0']

  _AssertInterruptedAndTornDown(run, module, 'gcp_vm', 3)
  vm_entries = [e for e in run.record.Resources() if e['kind'] == 'gcp_vm']
  assert {e['data']['api_endpoint'] for e in vm_entries} == {fake.endpoint}
  # Afterwards the fake holds nothing of the run (nor anything else).
  assert fake.Live() == []
  deleted = [r.path.split('/')[-2] for r in fake.requests
             if r.method == 'DELETE']
  assert sorted(deleted) == sorted(during['live'])


def test_gcp_sigint_while_an_insert_waits_to_retry_leaves_nothing(
    fake, loopback_only, pkb_flags, tmp_path, capsys):
  """Ctrl-C as one of the parallel inserts is refused with a 429: that
  insert is not tried again after teardown began, and teardown waits for
  the inserts already under way, so nothing is left in the fake."""
  del loopback_only
  _GcpFlags(pkb_flags, fake)
  # The first instance insert is rate limited (a retry would follow), and
  # the operator presses Ctrl-C as that answer goes out.
  fake.FailInsert('instances', nth=1, status=429, persistent=False,
                  then=lambda: os.kill(os.getpid(), signal.SIGINT))
  before = set(threading.enumerate())
  interrupts = run_signals.Interrupts(GCP_RUN_URI)
  interrupts.Install(None)
  try:
    module = _StubBenchmark(lambda spec: None)
    run = _RunInterrupted(module, GCP_RUN_URI, 'GCP', tmp_path, capsys,
                          lambda vm: None, interrupts=interrupts)
  finally:
    interrupts.Restore()
  # Whatever the run left running ends before the fake is looked at (a
  # retry waits at most a few seconds: bounded here, not timed).
  for thread in set(threading.enumerate()) - before:
    if not thread.daemon:
      thread.join(timeout=60)

  assert run.code == pkb.EXIT_INTERRUPTED
  assert module.calls == ['cleanup']
  assert 'interrupted by SIGINT' in run.stderr
  methods = [(r.method, r.path.split('/')[-1] if r.method == 'POST' else '')
             for r in fake.requests]
  first_delete = [m for m, _ in methods].index('DELETE')
  late_inserts = [path for method, path in methods[first_delete:]
                  if method == 'POST' and path == 'instances']
  assert not late_inserts, 'an instance insert went out after teardown began'
  assert fake.Live() == []
  assert not list(run.record.LiveResources())


def test_gcp_sigint_while_instance_inserts_run_leaves_nothing(
    loopback_only, pkb_flags, tmp_path, capsys):
  """Ctrl-C while the parallel instance inserts still run, in a GCE whose
  inserts each take three looks and whose instances are found only once
  their insert is done: the creates stop waiting at the stop, and teardown
  waits for each insert before its delete (one sent earlier would get a
  404 and leave the instance), so nothing is left."""
  del loopback_only
  with fake_gce.FakeGce(insert_looks=3, visible_when_done=True) as slow:
    _GcpFlags(pkb_flags, slow)
    slow.AtInsert('instances', nth=1,
                  then=lambda: os.kill(os.getpid(), signal.SIGINT))
    before = set(threading.enumerate())
    interrupts = run_signals.Interrupts(GCP_RUN_URI)
    interrupts.Install(None)
    try:
      module = _StubBenchmark(lambda spec: None)
      run = _RunInterrupted(module, GCP_RUN_URI, 'GCP', tmp_path, capsys,
                            lambda vm: None, interrupts=interrupts)
    finally:
      interrupts.Restore()
    for thread in set(threading.enumerate()) - before:
      if not thread.daemon:
        thread.join(timeout=60)

    assert run.code == pkb.EXIT_INTERRUPTED
    assert module.calls == ['cleanup']
    inserted = slow.Inserted('instances')
    assert inserted, 'no instance insert went out'
    vm_entries = [e for e in run.record.Resources() if e['kind'] == 'gcp_vm']
    # Every instance inserted was recorded, and deleted.
    assert {e['name'] for e in vm_entries} >= {i['name'] for i in inserted}
    assert slow.Live() == []
    assert not list(run.record.LiveResources())
