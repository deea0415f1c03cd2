"""RedisEnterpriseCluster (engines/redis_enterprise.py) over recording VMs
and the local fake REST API: install, rladmin cluster, proxies, pinning,
databases created, checked and deleted."""

import dataclasses

import requests

from perfkitbenchmarker.engines import load_user
from perfkitbenchmarker.engines import redis_enterprise
from perfkitbenchmarker.enterprise import options as options_lib
from tests import fake_redis_enterprise

STATUS = (
    'CLUSTER NODES:\n'
    'NODE:ID ROLE ADDRESS EXTERNAL_ADDRESS HOSTNAME SHARDS CORES FREE_RAM '
    'PROVISIONAL_RAM VERSION STATUS\n'
    '*node:1 master 10.0.0.2 host1 0/100 16 60GB/64GB 50GB/55GB 6.2.4-54 OK\n'
    'node:2 slave 10.0.0.3 host2 0/100 16 60GB/64GB 50GB/55GB 6.2.4-54 OK\n')


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
  licence.write_text('lic')
  return options_lib.EnterpriseOptions(
      cloud='GCP', os=options_lib.ChooseOs('centos7', 'GCP'),
      tarball=str(tarball), license_path=str(licence), **kw)


def _Cluster(opts, fake, vms, copies):
  return redis_enterprise.RedisEnterpriseCluster(
      opts, vms, 'cluster-pw-123',
      copy=lambda vm, src, dst: copies.append((vm.name, src, dst)),
      session_factory=lambda vm: requests.Session(), api_url=fake.url,
      sleep=lambda s: None)


def test_install_form_tune_pin_and_databases(tmp_path):
  opts = _Opts(tmp_path, db_count=2, db_replication=True, pin_workers=True,
               disable_cpu_ids=(15,), tune_on_startup=False)
  vms = [RecordingVm('servers-0', '10.0.0.2'),
         RecordingVm('servers-1', '10.0.0.3')]
  copies = []
  with fake_redis_enterprise.FakeRedisEnterprise(
      redis_enterprise.ADMIN_USER, 'cluster-pw-123', polls_to_active=3,
      polls_to_delete=1) as fake:
    cluster = _Cluster(opts, fake, vms, copies)
    cluster.Install()
    assert sorted(c[0] for c in copies) == ['servers-0', 'servers-0',
                                            'servers-1', 'servers-1']
    for vm in vms:
      texts = [c for c, _ in vm.commands]
      assert any('CONFIG_systune=no ./install.sh -y -n' in t for t in texts)
      assert any('cpu15/online' in t for t in texts)
    cluster.Form()
    create, env = vms[0].commands[-1]
    assert 'cluster create' in create and 'cluster-pw-123' not in create
    assert env == {'PKB_RE_PASSWORD': 'cluster-pw-123'}
    assert 'cluster join nodes 10.0.0.2' in vms[1].commands[-1][0]
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


def test_load_user_is_bound_to_the_databases_and_deleted_after_them(
    tmp_path):
  opts = _Opts(tmp_path)
  vms = [RecordingVm('servers-0', '10.0.0.2')]
  with fake_redis_enterprise.FakeRedisEnterprise(
      redis_enterprise.ADMIN_USER, 'cluster-pw-123', polls_to_active=1) as fake:
    cluster = _Cluster(opts, fake, vms, [])
    cluster.CreateLoadAccess()
    user, = fake.access['users'].values()
    assert user['name'] == load_user.LOAD_USER
    assert user['password'] == load_user.LoadPassword('cluster-pw-123')
    acl, = fake.access['redis_acls'].values()
    assert acl['acl'] == load_user.LOAD_USER_RULES
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
