"""RedisEnterpriseCluster (engines/redis_enterprise.py) over recording VMs
and the local fake REST API, one fake per server VM: install, cluster
bootstrap (create and join), proxies, pinning, databases created, checked
and deleted."""

import contextlib

import pytest
import requests

from perfkitbenchmarker import errors
from perfkitbenchmarker import redis_shard
from perfkitbenchmarker.engines import redis_enterprise
from perfkitbenchmarker.enterprise import options as options_lib
from perfkitbenchmarker.study import deployment
from tests import fake_redis_enterprise

STATUS = (
    'CLUSTER NODES:\n'
    'NODE:ID ROLE ADDRESS EXTERNAL_ADDRESS HOSTNAME SHARDS CORES FREE_RAM '
    'PROVISIONAL_RAM VERSION STATUS\n'
    '*node:1 master 10.0.0.2 host1 0/100 16 60GB/64GB 50GB/55GB 6.2.4-54 OK\n'
    'node:2 slave 10.0.0.3 host2 0/100 16 60GB/64GB 50GB/55GB 6.2.4-54 OK\n')
PASSWORD = 'cluster-pw-123'
LICENCE = 'licence text 7f3a\n'
# What a server VM's curl is given; each VM's session sends it to its node.
API_URL = 'https://localhost:9443'


class RecordingVm:

  def __init__(self, name, internal_ip):
    self.name = name
    self.internal_ip = internal_ip
    self.scratch_dir = f'/tmp/pkb-r1/{name}'
    self.commands = []

  def RemoteCommand(self, command, timeout=None, env=None, **_):
    self.commands.append((command, env))
    if 'rladmin status' in command:
      return STATUS, ''
    if 'node*' in command:
      return '2\n', ''
    if 'cpulist' in command:
      return ('0-7\n' if 'node0' in command else '8-15\n'), ''
    return '', ''


def _Opts(tmp_path, **kw):
  tarball = tmp_path / 'redislabs-6.2.4-54-rhel9-x86_64.tar'
  licence = tmp_path / 'licence'
  tarball.write_text('tar')
  licence.write_text(LICENCE)
  return options_lib.EnterpriseOptions(
      cloud='GCP', os=options_lib.ChooseOs('centos7', 'GCP'),
      tarball=str(tarball), license_path=str(licence), **kw)


class NodeSession(requests.Session):
  """curl on one VM to its own API: requests go to that VM's fake."""

  def __init__(self, base_url):
    super().__init__()
    self._node = base_url

  # pylint: disable-next=arguments-differ
  def request(self, method, url, *args, **kwargs):
    assert url.startswith(API_URL + '/'), url
    return super().request(method, self._node + url[len(API_URL):], *args,
                           **kwargs)


@contextlib.contextmanager
def _Nodes(vms, **kw):
  """One fake node API per VM, in no cluster yet; the later ones may join
  the first."""
  with contextlib.ExitStack() as stack:
    first = stack.enter_context(fake_redis_enterprise.FakeRedisEnterprise(
        user=None, password=None, address=vms[0].internal_ip, **kw))
    nodes = {vms[0].name: first}
    for vm in vms[1:]:
      nodes[vm.name] = stack.enter_context(
          fake_redis_enterprise.FakeRedisEnterprise(
              user=None, password=None, address=vm.internal_ip,
              peers={first.address: first}, **kw))
    yield nodes


def _Cluster(opts, nodes, vms, copies, clock=None, **kw):
  clock = clock or fake_redis_enterprise.FakeClock()
  return redis_enterprise.RedisEnterpriseCluster(
      opts, vms, PASSWORD,
      copy=lambda vm, src, dst: copies.append((vm.name, src, dst)),
      session_factory=lambda vm: NodeSession(nodes[vm.name].url),
      api_url=API_URL, sleep=clock.Sleep, clock=clock.Now, **kw)


def _NoSecretInAnyCommand(vms):
  for vm in vms:
    for command, env in vm.commands:
      assert PASSWORD not in command and LICENCE not in command, command
      assert not env, (command, env)


def test_install_form_tune_pin_and_databases(tmp_path):
  opts = _Opts(tmp_path, db_count=2, db_replication=True, pin_workers=True,
               disable_cpu_ids=(15,), tune_on_startup=False)
  vms = [RecordingVm('servers-0', '10.0.0.2'),
         RecordingVm('servers-1', '10.0.0.3')]
  copies = []
  clock = fake_redis_enterprise.FakeClock()
  with _Nodes(vms, polls_to_active=3, polls_to_delete=1,
              polls_to_bootstrap=3) as nodes:
    fake = nodes['servers-0']
    cluster = _Cluster(opts, nodes, vms, copies, clock)
    deployment.PrepareVms(vms, (), cluster.InstallOn, None)
    # The installer only: the licence goes in the bootstrap request.
    assert sorted(c[0] for c in copies) == ['servers-0', 'servers-1']
    assert all(c[1] == opts.tarball for c in copies)
    for vm in vms:
      texts = [c for c, _ in vm.commands]
      assert any('CONFIG_systune=no ./install.sh -y -n' in t for t in texts)
      assert any('cpu15/online' in t for t in texts)
    commands_before = [len(vm.commands) for vm in vms]
    assert not cluster.formed
    cluster.Form()
    assert cluster.formed
    # Formed through each node's own API, not by any command on the VMs.
    assert [len(vm.commands) for vm in vms] == commands_before
    assert fake.password == PASSWORD and fake.license == LICENCE
    assert fake.cluster == {'name': 'pkb-cluster',
                            'username': redis_enterprise.ADMIN_USER}
    joined = nodes['servers-1']
    assert joined.joined == '10.0.0.2' and joined.password == PASSWORD
    assert fake.members == ['10.0.0.2', '10.0.0.3']
    # Each bootstrap polled through its slow states: 2 x (2 sleeps).
    assert clock.sleeps == [2, 2, 2, 2]
    # servers-1 joined only once the cluster was complete on servers-0.
    assert [r for r in joined.requests if r[0] == 'POST'] == [
        ('POST', '/v1/bootstrap/join_cluster')]
    assert fake.requests[:4] == [('POST', '/v1/bootstrap/create_cluster')] + [
        ('GET', '/v1/bootstrap')] * 3
    cluster.TuneProxies(8)
    texts = [c for c, _ in vms[0].commands]
    assert any('tune proxy all max_threads 8 threads 8' in t for t in texts)
    assert any('taskset -pc 0-7' in t and 'tail -n 4' in t for t in texts)
    assert any('taskset -pc 8-15' in t and 'head -n -4' in t for t in texts)
    endpoints = cluster.CreateDatabases(shards=3)
    assert endpoints == [('127.0.0.1', 12000), ('127.0.0.1', 12001)]
    bdbs = list(fake.bdbs.values())
    assert all(b['status'] == 'active' for b in bdbs)
    # 80 % of the provisionable 100 GB, split over 2 databases.
    assert all(b['memory_size'] == 40 * 10**9 for b in bdbs)
    assert all(b['replication'] and b['oss_cluster'] and
               b['shards_count'] == 3 for b in bdbs)
    cluster.DeleteDatabases()
    assert fake.bdbs == {}
    assert joined.bdbs == {}  # all through servers-0's API
  _NoSecretInAnyCommand(vms)


def test_failed_join_is_one_line_after_the_cluster_exists(tmp_path):
  vms = [RecordingVm('servers-0', '10.0.0.2'),
         RecordingVm('servers-1', '10.0.0.3'),
         RecordingVm('servers-2', '10.0.0.4')]
  with _Nodes(vms) as nodes:
    nodes['servers-1'].bootstrap_error = 'time_not_sync'
    cluster = _Cluster(_Opts(tmp_path), nodes, vms, [])
    with pytest.raises(errors.ResourceError) as failed:
      cluster.Form()
    assert str(failed.value) == (
        'Redis Enterprise join of servers-1 to 10.0.0.2 failed: '
        'time_not_sync scripted bootstrap failure')
    # Cleanup still asks the cluster; the third node was never asked.
    assert cluster.formed
    assert nodes['servers-2'].requests == []
  _NoSecretInAnyCommand(vms)


def test_slow_create_times_out_in_one_line_and_is_not_formed(tmp_path):
  vms = [RecordingVm('servers-0', '10.0.0.2')]
  clock = fake_redis_enterprise.FakeClock()
  with _Nodes(vms, polls_to_bootstrap=10**6) as nodes:
    cluster = _Cluster(_Opts(tmp_path), nodes, vms, [], clock,
                       bootstrap_timeout_s=60)
    with pytest.raises(errors.ResourceError) as late:
      cluster.Form()
    assert str(late.value) == ('Redis Enterprise cluster create on '
                               'servers-0 is still creating_cluster after '
                               '60 s.')
    assert not cluster.formed and clock.now <= 62


@pytest.mark.parametrize('content, why', [
    (b'\xff\xfel\x00i\x00c\x00', 'not UTF-8 text'),  # UTF-16
    (b'x' * ((1 << 20) + 1), 'more than the 1,048,576'),
])
def test_a_licence_that_is_no_text_is_refused_before_anything(
    tmp_path, content, why):
  # It passed the run's check (a file) and was read first at Form, after
  # the VMs were up and the installer ran: an internal UnicodeDecodeError.
  opts = _Opts(tmp_path)
  (tmp_path / 'licence').write_bytes(content)
  with pytest.raises(errors.UsageError,
                     match=f'--enterprise_redis_license_path=.*: .*{why}'):
    opts.CheckInstallerFiles()


def test_refused_create_is_one_line(tmp_path):
  vms = [RecordingVm('servers-0', '10.0.0.2')]
  with _Nodes(vms) as nodes:
    nodes['servers-0'].fail_next['POST'].append(409)
    cluster = _Cluster(_Opts(tmp_path), nodes, vms, [])
    with pytest.raises(errors.Error) as refused:
      cluster.Form()
    message = str(refused.value)
    assert 'bootstrap create_cluster failed with HTTP 409' in message
    assert '\n' not in message and PASSWORD not in message
    assert not cluster.formed


def test_load_user_is_bound_to_the_databases_and_deleted_after_them(
    tmp_path):
  opts = _Opts(tmp_path)
  vms = [RecordingVm('servers-0', '10.0.0.2')]
  with _Nodes(vms, polls_to_active=1) as nodes:
    fake = nodes['servers-0']
    cluster = _Cluster(opts, nodes, vms, [])
    cluster.Form()
    cluster.CreateLoadAccess()
    user, = fake.access['users'].values()
    assert user['name'] == redis_shard.LOAD_USER
    assert user['password'] == redis_shard.LoadPassword(PASSWORD)
    acl, = fake.access['redis_acls'].values()
    assert acl['acl'] == redis_shard.LOAD_USER_RULES
    role, = fake.access['roles'].values()
    assert role['management'] == 'none' and user['role_uids'] == [role['uid']]
    cluster.CreateDatabases(shards=1)
    bdb, = fake.bdbs.values()
    assert bdb['roles_permissions'] == [
        {'role_uid': role['uid'], 'redis_acl_uid': acl['uid']}]
    # A database that is not the benchmark's is neither measured nor deleted.
    fake.bdbs[9] = dict(bdb, uid=9, name='theirs', roles_permissions=[])
    assert cluster.client.Endpoints(cluster._Ours()) == [  # pylint: disable=protected-access
        ('127.0.0.1', 12000)]
    cluster.DeleteDatabases()
    assert [b['name'] for b in fake.bdbs.values()] == ['theirs']
    cluster.DeleteLoadAccess()
    assert not any(fake.access.values())
