"""The Redis Enterprise REST client against the local fake API (cluster
bootstrap, databases), and the rladmin / curl command builders as text."""

import json
import re
import shlex

import pytest
import requests

from perfkitbenchmarker import errors
from perfkitbenchmarker import vm_util
from perfkitbenchmarker.engines import redis_enterprise_rest as rest_client
from perfkitbenchmarker.engines import redis_enterprise_rladmin as rladmin
from tests import fake_redis_enterprise

USER, PASSWORD = 'admin@example.com', 's3cret-pw'


def _Client(fake, clock, password=PASSWORD):
  return rest_client.RestClient(requests.Session(), fake.url,
                                (USER, password), sleep=clock.Sleep,
                                clock=clock.Now)


def _Spec(name='db1', shards=1, **kw):
  return rest_client.DatabaseSpec(name=name, memory_size=10**9,
                                  password='dbpw', shards=shards, **kw)


def test_create_waits_through_slow_pending_then_active():
  clock = fake_redis_enterprise.FakeClock()
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
  clock = fake_redis_enterprise.FakeClock()
  with fake_redis_enterprise.FakeRedisEnterprise(
      USER, PASSWORD, polls_to_active=1000) as fake:
    client = _Client(fake, clock)
    uid = client.CreateDatabase(_Spec())['uid']
    with pytest.raises(errors.ResourceError, match='still pending after 20'):
      client.WaitActive(uid, timeout_s=20, poll_s=5)
    assert len(clock.sleeps) <= 5  # bounded


def test_creation_failed_status_is_an_error():
  clock = fake_redis_enterprise.FakeClock()
  with fake_redis_enterprise.FakeRedisEnterprise(
      USER, PASSWORD, polls_to_active=1, fail_creation=True) as fake:
    client = _Client(fake, clock)
    uid = client.CreateDatabase(_Spec())['uid']
    with pytest.raises(errors.ResourceError, match='creation-failed'):
      client.WaitActive(uid)


# Cluster bootstrap ------------------------------------------------------------

LICENCE = '----- licence -----\nkey: "42" \\ end\n'


def _Create(**kw):
  return rest_client.ClusterBootstrap(
      rest_client.CREATE_CLUSTER, USER, PASSWORD,
      cluster_name=kw.pop('cluster_name', 'pkb-cluster'),
      license=kw.pop('license', LICENCE), **kw)


def _Join(nodes=('10.0.0.2',), password=PASSWORD):
  return rest_client.ClusterBootstrap(rest_client.JOIN_CLUSTER, USER,
                                      password, nodes=tuple(nodes))


def test_bootstrap_bodies_have_the_documented_fields():
  assert _Create().ToJson() == {
      'action': 'create_cluster',
      'cluster': {'name': 'pkb-cluster', 'nodes': []},
      'credentials': {'username': USER, 'password': PASSWORD},
      'license': LICENCE}
  assert 'license' not in _Create(license='').ToJson()  # a trial licence
  assert _Join(['10.0.0.2', '10.0.0.4']).ToJson() == {
      'action': 'join_cluster',
      'cluster': {'nodes': ['10.0.0.2', '10.0.0.4']},
      'credentials': {'username': USER, 'password': PASSWORD}}
  assert PASSWORD not in repr(_Create()) and 'licence' not in repr(_Create())
  with pytest.raises(ValueError):
    _Create(cluster_name='')
  with pytest.raises(ValueError):
    _Join(nodes=())
  with pytest.raises(ValueError):
    rest_client.ClusterBootstrap('recover_cluster', USER, PASSWORD)


def test_create_cluster_waits_through_slow_bootstrap_then_logs_in():
  clock = fake_redis_enterprise.FakeClock()
  with fake_redis_enterprise.FakeRedisEnterprise(
      user=None, password=None, polls_to_bootstrap=4) as fake:
    client = _Client(fake, clock)
    with pytest.raises(rest_client.RestError) as before:
      client.ListDatabases()  # no cluster yet: nothing to log in to
    assert before.value.status == 401
    client.Bootstrap(_Create())
    assert fake.bootstrap['state'] == 'initiated'
    status = client.WaitBootstrapped('cluster create', timeout_s=60,
                                     poll_s=2)
    assert status['state'] == 'completed' and 'end_time' in status
    assert clock.sleeps == [2, 2, 2]  # three reads under way, then done
    assert fake.password == PASSWORD and fake.license == LICENCE
    assert fake.cluster == {'name': 'pkb-cluster', 'username': USER}
    assert client.ListDatabases() == []  # the new credentials work
    # In a cluster now: the status wants credentials, a new bootstrap 409s.
    stranger = _Client(fake, clock, password='not-the-password')
    with pytest.raises(rest_client.RestError, match='HTTP 401'):
      stranger.BootstrapStatus()
    with pytest.raises(rest_client.RestError) as again:
      client.Bootstrap(_Create())
    assert again.value.status == 409


def test_bootstrap_in_progress_is_409():
  clock = fake_redis_enterprise.FakeClock()
  with fake_redis_enterprise.FakeRedisEnterprise(
      user=None, password=None, polls_to_bootstrap=3) as fake:
    client = _Client(fake, clock)
    client.Bootstrap(_Create())
    with pytest.raises(rest_client.RestError) as conflict:
      client.Bootstrap(_Create())
    assert conflict.value.status == 409
    assert 'bootstrap_in_progress' in str(conflict.value)


@pytest.mark.parametrize('body, why', [
    (None, 'not JSON'),
    ({'action': 'create_cluster', 'cluster': {'name': 'c'}}, 'credentials'),
    ({'cluster': {'name': 'c'},
      'credentials': {'username': USER, 'password': ''}}, 'credentials'),
    ({'credentials': {'username': USER, 'password': 'p'}}, 'cluster is'),
    ({'cluster': {'name': 'bad name!'},
      'credentials': {'username': USER, 'password': 'p'}}, 'cluster.name'),
    ({'cluster': {'name': 'x' * 65},
      'credentials': {'username': USER, 'password': 'p'}}, 'cluster.name'),
    ({'cluster': {'name': 'c'}, 'license': 42,
      'credentials': {'username': USER, 'password': 'p'}}, 'license'),
    ({'action': 'join_cluster', 'cluster': {'name': 'c'},
      'credentials': {'username': USER, 'password': 'p'}}, 'action'),
])
def test_bad_create_cluster_body_is_400_and_changes_nothing(body, why):
  with fake_redis_enterprise.FakeRedisEnterprise(
      user=None, password=None) as fake:
    raw = 'not json{' if body is None else json.dumps(body)
    answer = requests.post(f'{fake.url}/v1/bootstrap/create_cluster',
                           data=raw, timeout=10)
    assert answer.status_code == 400, answer.text
    assert answer.json()['error_code'] == 'invalid_schema'
    assert why in answer.json()['description']
    assert fake.bootstrap['state'] == 'idle' and fake.password is None


def test_join_without_nodes_and_unknown_action_are_400():
  clock = fake_redis_enterprise.FakeClock()
  with fake_redis_enterprise.FakeRedisEnterprise(
      user=None, password=None) as fake:
    client = _Client(fake, clock)
    no_nodes = dict(_Join().ToJson(), cluster={'nodes': []})
    answer = requests.post(f'{fake.url}/v1/bootstrap/join_cluster',
                           json=no_nodes, timeout=10)
    assert answer.status_code == 400 and 'cluster.nodes' in answer.text
    answer = requests.post(f'{fake.url}/v1/bootstrap/recover_cluster',
                           json=_Join().ToJson(), timeout=10)
    assert answer.status_code == 400
    with pytest.raises(rest_client.RestError) as refused:
      client.Bootstrap(_Create(cluster_name='no spaces allowed'))
    assert refused.value.status == 400 and '\n' not in str(refused.value)


def test_bootstrap_error_state_is_one_line_and_may_be_retried():
  clock = fake_redis_enterprise.FakeClock()
  with fake_redis_enterprise.FakeRedisEnterprise(
      user=None, password=None, polls_to_bootstrap=2,
      bootstrap_error='invalid_license') as fake:
    client = _Client(fake, clock)
    client.Bootstrap(_Create())
    with pytest.raises(errors.ResourceError) as failed:
      client.WaitBootstrapped('cluster create on servers-0')
    message = str(failed.value)
    assert message == ('Redis Enterprise cluster create on servers-0 '
                       'failed: invalid_license scripted bootstrap failure')
    assert PASSWORD not in message and fake.password is None
    # The documented rule: from `error` a new bootstrap starts afresh.
    fake.bootstrap_error = None
    client.Bootstrap(_Create())
    assert client.WaitBootstrapped('cluster create')['state'] == 'completed'


def test_bootstrap_timeout_is_bounded_and_one_line():
  clock = fake_redis_enterprise.FakeClock()
  with fake_redis_enterprise.FakeRedisEnterprise(
      user=None, password=None, polls_to_bootstrap=10**6) as fake:
    client = _Client(fake, clock)
    client.Bootstrap(_Create())
    with pytest.raises(errors.ResourceError) as late:
      client.WaitBootstrapped('cluster create', timeout_s=20, poll_s=5)
    assert str(late.value) == (
        'Redis Enterprise cluster create is still creating_cluster after '
        '20 s.')
    assert len(clock.sleeps) <= 5 and clock.now <= 25


def test_bootstrap_status_answers_5xx_or_none_while_the_node_restarts():
  clock = fake_redis_enterprise.FakeClock()
  with fake_redis_enterprise.FakeRedisEnterprise(
      user=None, password=None, polls_to_bootstrap=2) as fake:
    client = _Client(fake, clock)
    client.Bootstrap(_Create())
    fake.fail_next['GET'].extend([503, 503, 503])  # one poll's three tries
    assert client.WaitBootstrapped('cluster create',
                                   poll_s=2)['state'] == 'completed'
    assert clock.sleeps == [1.0, 1.0, 2, 2]

  class Unreachable:

    def request(self, *args, **kwargs):
      raise rest_client.TransportError('curl: (7) Failed to connect')

  client = rest_client.RestClient(Unreachable(), 'https://localhost:9443',
                                  (USER, PASSWORD), sleep=clock.Sleep,
                                  clock=clock.Now)
  with pytest.raises(errors.ResourceError) as late:
    client.WaitBootstrapped('cluster create', timeout_s=10, poll_s=5)
  assert 'still unknown after 10 s (last answer: curl: (7)' in str(
      late.value)


def test_bootstrap_status_refusal_other_than_5xx_is_not_waited_out():
  clock = fake_redis_enterprise.FakeClock()
  with fake_redis_enterprise.FakeRedisEnterprise(
      user=None, password=None) as fake:
    client = _Client(fake, clock)
    client.Bootstrap(_Create())
    fake.fail_next['GET'].append(403)
    with pytest.raises(rest_client.RestError, match='HTTP 403'):
      client.WaitBootstrapped('cluster create')
    assert clock.sleeps == []


def test_join_cluster_checks_the_members_address_and_credentials():
  clock = fake_redis_enterprise.FakeClock()
  with fake_redis_enterprise.FakeRedisEnterprise(
      user=None, password=None, address='10.0.0.2') as first:
    _Client(first, clock).Bootstrap(_Create())
    _Client(first, clock).WaitBootstrapped('cluster create')
    peers = {'10.0.0.2': first}
    for nodes, password, error in (
        (['10.0.0.9'], PASSWORD, 'connect_error'),
        (['10.0.0.2'], 'wrong-password', 'access_denied')):
      with fake_redis_enterprise.FakeRedisEnterprise(
          user=None, password=None, address='10.0.0.3', peers=peers) as node:
        client = _Client(node, clock)
        client.Bootstrap(_Join(nodes, password))
        with pytest.raises(errors.ResourceError, match=error):
          client.WaitBootstrapped('join')
        assert node.password is None
    with fake_redis_enterprise.FakeRedisEnterprise(
        user=None, password=None, address='10.0.0.3', peers=peers,
        polls_to_bootstrap=2) as node:
      client = _Client(node, clock)
      client.Bootstrap(_Join(['10.0.0.9', '10.0.0.2']))
      assert client.WaitBootstrapped('join')['state'] == 'completed'
      assert node.joined == '10.0.0.2' and node.password == PASSWORD
      assert node.cluster == {'name': 'pkb-cluster', 'username': USER}
      assert first.members == ['10.0.0.2', '10.0.0.3']


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
  clock = fake_redis_enterprise.FakeClock()
  with fake_redis_enterprise.FakeRedisEnterprise(USER, PASSWORD) as fake:
    client = _Client(fake, clock)
    bdb = client.CreateDatabase(_Spec(flash=True, flash_ram_ratio=0.2))
    assert bdb['bigstore'] is True
    assert bdb['bigstore_ram_size'] == 2 * 10**8


def test_conflict_and_bad_request_are_one_line_with_error_code():
  clock = fake_redis_enterprise.FakeClock()
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
  clock = fake_redis_enterprise.FakeClock()
  with fake_redis_enterprise.FakeRedisEnterprise(USER, PASSWORD) as fake:
    fake.fail_next['POST'].append(500)
    client = _Client(fake, clock)
    with pytest.raises(rest_client.RestError, match='HTTP 500'):
      client.CreateDatabase(_Spec())
    assert [r for r in fake.requests if r[0] == 'POST'] == [
        ('POST', '/v1/bdbs')]
    assert not fake.bdbs  # nothing half-created


def test_transient_503_on_read_is_retried_a_bounded_number_of_times():
  clock = fake_redis_enterprise.FakeClock()
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
  clock = fake_redis_enterprise.FakeClock()
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
  clock = fake_redis_enterprise.FakeClock()
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


def test_bootstrap_credentials_and_licence_stay_off_the_command_line():
  body = _Create().ToJson()
  config = rest_client.CurlConfig('POST', (USER, PASSWORD), body)
  command = rest_client.CurlCommand(
      'https://localhost:9443/v1/bootstrap/create_cluster', 30, verify=False)
  assert PASSWORD not in command and 'licence' not in command
  # One config line per option: the licence's newlines stay JSON escapes.
  data_line, = [l for l in config.splitlines() if l.startswith('data = ')]
  unquoted = re.sub(r'\\(.)', r'\1', data_line[len('data = "'):-1])
  assert json.loads(unquoted) == body


def test_curl_that_gets_no_answer_is_a_transport_error():

  class Failing(_RecordingVm):

    def RemoteCommandWithReturnCode(self, command, timeout=None, env=None,
                                    stdin=None):
      self.calls.append((command, stdin))
      return '', 'curl: (7) Failed to connect to localhost port 9443', 7

  with pytest.raises(rest_client.TransportError, match='Failed to connect'):
    rest_client.CurlOnVm(Failing('')).request(
        'GET', 'https://localhost:9443/v1/bootstrap', auth=(USER, PASSWORD))


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
  # The cluster is formed through the REST API's bootstrap requests: no
  # rladmin command takes a password.
  assert not hasattr(rladmin, 'ClusterCreate')
  assert not hasattr(rladmin, 'ClusterJoin')
  assert rladmin.Status('/srv/re') == 'sudo /srv/re/bin/rladmin status nodes'
  assert rladmin.TuneProxy(12) == [
      'sudo /opt/redislabs/bin/rladmin tune proxy all max_threads 12 '
      'threads 12', 'sudo /opt/redislabs/bin/dmc_ctl restart']
  assert rladmin.OfflineCpus([3]) == [
      'echo 0 | sudo tee /sys/devices/system/cpu/cpu3/online']
  pin = rladmin.PinWorkers('0-7,16-23', 4, 4)
  assert 'head -n -4 | tail -n 4' in pin and 'taskset -pc 0-7,16-23' in pin
  with pytest.raises(ValueError):
    rladmin.PinWorkers('0-7; rm -rf /', 0, 1)
  assert rladmin.TuneProxy(2, '/srv/re x; reboot')[0].startswith(
      "sudo '/srv/re x; reboot/bin/rladmin' tune proxy")


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
