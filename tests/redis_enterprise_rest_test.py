"""The Redis Enterprise REST client against the local fake API, and the
rladmin / curl command builders as text."""

import json
import shlex

import pytest
import requests

from perfkitbenchmarker import errors
from perfkitbenchmarker import vm_util
from perfkitbenchmarker.enterprise import rest_client
from perfkitbenchmarker.enterprise import rladmin
from tests import fake_redis_enterprise

USER, PASSWORD = 'admin@example.com', 's3cret-pw'


class FakeClock:

  def __init__(self):
    self.now = 0.0
    self.sleeps = []

  def Sleep(self, seconds):
    self.sleeps.append(seconds)
    self.now += seconds

  def Now(self):
    return self.now


def _Client(fake, clock, password=PASSWORD):
  return rest_client.RestClient(requests.Session(), fake.url,
                                (USER, password), sleep=clock.Sleep,
                                clock=clock.Now)


def _Spec(name='db1', shards=1, **kw):
  return rest_client.DatabaseSpec(name=name, memory_size=10**9,
                                  password='dbpw', shards=shards, **kw)


def test_create_waits_through_slow_pending_then_active():
  clock = FakeClock()
  with fake_redis_enterprise.FakeRedisEnterprise(
      USER, PASSWORD, polls_to_active=4) as fake:
    client = _Client(fake, clock)
    bdb = client.CreateDatabase(_Spec())
    assert bdb['status'] == 'pending'
    active = client.WaitActive(bdb['uid'], timeout_s=60, poll_s=5)
    assert active['status'] == 'active'
    assert clock.sleeps == [5, 5, 5]  # three pending reads, then active
    assert client.Endpoints() == [('127.0.0.1', 12001)]


def test_wait_active_times_out_with_one_line():
  clock = FakeClock()
  with fake_redis_enterprise.FakeRedisEnterprise(
      USER, PASSWORD, polls_to_active=1000) as fake:
    client = _Client(fake, clock)
    uid = client.CreateDatabase(_Spec())['uid']
    with pytest.raises(errors.ResourceError, match='still pending after 20'):
      client.WaitActive(uid, timeout_s=20, poll_s=5)
    assert len(clock.sleeps) <= 5  # bounded


def test_creation_failed_status_is_an_error():
  clock = FakeClock()
  with fake_redis_enterprise.FakeRedisEnterprise(
      USER, PASSWORD, polls_to_active=1, fail_creation=True) as fake:
    client = _Client(fake, clock)
    uid = client.CreateDatabase(_Spec())['uid']
    with pytest.raises(errors.ResourceError, match='creation-failed'):
      client.WaitActive(uid)


def test_sharded_database_body_has_oss_cluster_and_regex():
  body = _Spec(shards=4, oss_cluster=True, replication=True).ToJson()
  assert body['sharding'] is True and body['shards_count'] == 4
  assert body['oss_cluster'] is True and body['replication'] is True
  assert body['proxy_policy'] == 'all-master-shards'
  assert body['shards_placement'] == 'sparse'
  assert len(body['shard_key_regex']) == 2
  single = _Spec().ToJson()
  assert single['sharding'] is False and 'oss_cluster' not in single


def test_flash_database_sets_bigstore_ram_share():
  clock = FakeClock()
  with fake_redis_enterprise.FakeRedisEnterprise(USER, PASSWORD) as fake:
    client = _Client(fake, clock)
    bdb = client.CreateDatabase(_Spec(flash=True, flash_ram_ratio=0.2))
    assert bdb['bigstore'] is True
    assert bdb['bigstore_ram_size'] == 2 * 10**8


def test_conflict_and_bad_request_are_one_line_with_error_code():
  clock = FakeClock()
  with fake_redis_enterprise.FakeRedisEnterprise(USER, PASSWORD) as fake:
    client = _Client(fake, clock)
    client.CreateDatabase(_Spec('same'))
    with pytest.raises(rest_client.RestError) as conflict:
      client.CreateDatabase(_Spec('same'))
    assert conflict.value.status == 409
    assert 'name_in_use' in str(conflict.value)
    bad = rest_client.DatabaseSpec(name='zero', memory_size=0)
    with pytest.raises(rest_client.RestError) as refused:
      client.CreateDatabase(bad)
    assert refused.value.status == 400 and '\n' not in str(refused.value)


def test_server_error_on_create_is_not_retried():
  clock = FakeClock()
  with fake_redis_enterprise.FakeRedisEnterprise(USER, PASSWORD) as fake:
    fake.fail_next['POST'].append(500)
    client = _Client(fake, clock)
    with pytest.raises(rest_client.RestError, match='HTTP 500'):
      client.CreateDatabase(_Spec())
    assert [r for r in fake.requests if r[0] == 'POST'] == [
        ('POST', '/v1/bdbs')]
    assert not fake.bdbs  # nothing half-created


def test_transient_503_on_read_is_retried_a_bounded_number_of_times():
  clock = FakeClock()
  with fake_redis_enterprise.FakeRedisEnterprise(
      USER, PASSWORD, polls_to_active=1) as fake:
    client = _Client(fake, clock)
    uid = client.CreateDatabase(_Spec())['uid']
    fake.fail_next['GET'].extend([503, 503])
    assert client.WaitActive(uid)['status'] == 'active'
    fake.fail_next['GET'].extend([503, 503, 503])
    with pytest.raises(rest_client.RestError, match='HTTP 503'):
      client.GetDatabase(uid)


def test_delete_waits_until_gone_and_missing_is_fine():
  clock = FakeClock()
  with fake_redis_enterprise.FakeRedisEnterprise(
      USER, PASSWORD, polls_to_active=1, polls_to_delete=2) as fake:
    client = _Client(fake, clock)
    uid = client.CreateDatabase(_Spec())['uid']
    client.WaitActive(uid)
    client.DeleteDatabase(uid, poll_s=1)
    assert client.GetDatabase(uid) is None
    assert client.ListDatabases() == []
    client.DeleteDatabase(uid)  # already gone: no error


def test_wrong_password_is_401_and_password_is_masked():
  clock = FakeClock()
  with fake_redis_enterprise.FakeRedisEnterprise(USER, PASSWORD) as fake:
    client = _Client(fake, clock, password='wrong-password-123')
    with pytest.raises(rest_client.RestError) as e:
      client.ListDatabases()
    assert e.value.status == 401
    assert 'wrong-password-123' not in vm_util.Mask(
        'auth wrong-password-123')


def test_curl_keeps_credentials_and_body_off_the_command_line():
  config = rest_client.CurlConfig('POST', (USER, 'p"w\\x'), {'name': 'a"b'})
  command = rest_client.CurlCommand('https://localhost:9443/v1/bdbs', 30,
                                    verify=False)
  assert 'p"w' not in command and 'a"b' not in command
  assert shlex.split(command)[:3] == ['curl', '-sS', '-K']
  assert 'user = "admin@example.com:p\\"w\\\\x"' in config
  data_line = [l for l in config.splitlines() if l.startswith('data = ')][0]
  unquoted = data_line[len('data = "'):-1].replace('\\"', '"').replace(
      '\\\\', '\\')
  assert json.loads(unquoted) == {'name': 'a"b'}


class _RecordingVm:
  name = 'servers-0'

  def __init__(self, answer):
    self.answer = answer
    self.calls = []

  def RemoteCommandWithReturnCode(self, command, timeout=None, env=None,
                                  stdin=None):
    self.calls.append((command, stdin))
    return self.answer, '', 0


def test_curl_session_parses_body_and_status():
  vm = _RecordingVm('{"uid": 3, "status": "active"}\n200')
  response = rest_client.CurlOnVm(vm).request(
      'GET', 'https://localhost:9443/v1/bdbs/3', auth=(USER, PASSWORD))
  assert response.status_code == 200 and response.json()['uid'] == 3
  assert PASSWORD not in vm.calls[0][0] and PASSWORD in vm.calls[0][1]


def test_rladmin_commands_as_text():
  work = '/tmp/pkb-r1/servers-0/redislabs'
  assert rladmin.InstallCommands(work, 're.tar', True) == [
      f'mkdir -p {work}', f'tar -xf {work}/re.tar -C {work}',
      f'cd {work} && sudo ./install.sh -y']
  assert rladmin.InstallCommands(work, 're.tar', False)[-1] == (
      f'cd {work} && sudo env CONFIG_systune=no ./install.sh -y -n')
  assert rladmin.InstallCommands(work, 're.tar', True, '/srv/re x')[-1] == (
      f"cd {work} && sudo ./install.sh -y --install-dir '/srv/re x'")
  create = rladmin.ClusterCreate(f'{work}/licence', USER)
  assert create == (
      'sudo /opt/redislabs/bin/rladmin cluster create name pkb-cluster '
      'username admin@example.com password "$PKB_RE_PASSWORD" '
      f'license_file {work}/licence')
  assert rladmin.Status('/srv/re') == 'sudo /srv/re/bin/rladmin status nodes'
  assert rladmin.ClusterJoin('10.0.0.2', USER) == (
      'sudo /opt/redislabs/bin/rladmin cluster join nodes 10.0.0.2 '
      'username admin@example.com password "$PKB_RE_PASSWORD"')
  assert rladmin.TuneProxy(12) == [
      'sudo /opt/redislabs/bin/rladmin tune proxy all max_threads 12 '
      'threads 12', 'sudo /opt/redislabs/bin/dmc_ctl restart']
  assert rladmin.OfflineCpus([3]) == [
      'echo 0 | sudo tee /sys/devices/system/cpu/cpu3/online']
  pin = rladmin.PinWorkers('0-7,16-23', 4, 4)
  assert 'head -n -4 | tail -n 4' in pin and 'taskset -pc 0-7,16-23' in pin
  with pytest.raises(ValueError):
    rladmin.PinWorkers('0-7; rm -rf /', 0, 1)
  hostile = rladmin.ClusterJoin('1.2.3.4; reboot', USER)
  assert "'1.2.3.4; reboot'" in hostile


def test_provisionable_ram_from_rladmin_status():
  status = (
      'CLUSTER NODES:\n'
      'NODE:ID ROLE   ADDRESS  EXTERNAL_ADDRESS HOSTNAME SHARDS CORES '
      'FREE_RAM        PROVISIONAL_RAM VERSION  STATUS\n'
      '*node:1 master 10.0.0.2          host1    0/100  16    '
      '60.5GB/64GB     50.25GB/55.5GB  6.2.4-54 OK\n'
      'node:2  slave  10.0.0.3          host2    0/100  16    '
      '60.5GB/64GB     50GB/55.5GB     6.2.4-54 OK\n')
  assert rladmin.ProvisionableRamBytes(status) == int(100.25e9)
  with pytest.raises(ValueError):
    rladmin.ProvisionableRamBytes('no nodes here')
