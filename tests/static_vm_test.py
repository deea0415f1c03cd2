"""--static_vm_file: parser, provider and a full run over a real sshd."""

import fcntl
import json
import os
import pwd
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import threading
import types

import pytest

import e2e_support
import pkb_forkserver

from perfkitbenchmarker import benchmark_spec
from perfkitbenchmarker import errors
from perfkitbenchmarker import paths
from perfkitbenchmarker import record_checks
from perfkitbenchmarker import redis_shard
from perfkitbenchmarker import resource
from perfkitbenchmarker import run_record
from perfkitbenchmarker import run_scope
from perfkitbenchmarker import shell_scripts
from perfkitbenchmarker import ssh_vm
from perfkitbenchmarker import stage_runner
from perfkitbenchmarker import system_tuning
from perfkitbenchmarker import terminal_text
from perfkitbenchmarker import virtual_machine
from perfkitbenchmarker.linux_packages import redis_server
from perfkitbenchmarker.providers.static import provider

import sshd_fixture
from sshd_fixture import FreePort
from sshd_fixture import sshd  # pylint: disable=unused-import  (fixture)

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Run ids (and so scratch dirs /tmp/pkb-<id>) unique to this test session.
PID = os.getpid()


@pytest.fixture
def keyfile(tmp_path):
  path = tmp_path / 'id_test'
  path.write_text('not really a key\n')
  path.chmod(0o600)
  return str(path)


def _Write(tmp_path, data, name='static.json'):
  path = tmp_path / name
  path.write_text(data if isinstance(data, str) else json.dumps(data))
  return str(path)


def _Machine(keyfile, ip='10.0.0.1', **extra):
  return dict({'ip_address': ip, 'user_name': 'pkb',
               'keyfile_path': keyfile}, **extra)


def _Error(path, counts=None):
  with pytest.raises(errors.UsageError) as raised:
    machines = provider.LoadStaticVmFile(path)
    provider.AssignGroups(machines, counts or {'servers': 1, 'clients': 1},
                          path)
  message = str(raised.value)
  assert '\n' not in message and message.startswith('--static_vm_file ')
  return message


def test_a_file_that_is_no_regular_file_or_too_big_is_one_line(tmp_path):
  # A FIFO waited for a writer for ever, /dev/zero ended in MemoryError.
  fifo = str(tmp_path / 'machines.fifo')
  os.mkfifo(fifo, 0o600)
  assert 'cannot read it: not a regular file (a FIFO)' in _Error(fifo)
  assert 'cannot read it: not a regular file' in _Error('/dev/zero')
  big = _Write(tmp_path, ' ' * (provider.MAX_FILE_BYTES + 1))
  assert 'cannot read it: 1,048,577 bytes, more than' in _Error(big)
  deep = _Write(tmp_path, '[' * 100_000)
  assert 'not valid JSON' in _Error(deep)


def test_bad_files_give_one_line_errors(tmp_path, keyfile):
  assert 'no such file' in _Error(str(tmp_path / 'missing.json'))
  assert 'not valid JSON' in _Error(_Write(tmp_path, '[{"ip_address": '))
  assert 'must be a non-empty list' in _Error(_Write(tmp_path, '{"a": 1}'))
  assert 'must be a non-empty list' in _Error(_Write(tmp_path, '[]'))
  assert 'must be an object' in _Error(_Write(tmp_path, '["10.0.0.1"]'))
  message = _Error(_Write(tmp_path, [{'ip_address': '10.0.0.1'}]))
  assert 'entry 0: user_name is missing; keyfile_path is missing' in message
  message = _Error(_Write(tmp_path, {'servers': [_Machine(keyfile),
                                                 {'ip_address': 'x'}]}))
  assert '"servers" entry 1: user_name is missing' in message
  message = _Error(_Write(tmp_path, [_Machine(keyfile, password='x')]))
  assert 'entry 0: password is unknown' in message
  message = _Error(_Write(tmp_path, [_Machine(keyfile, ssh_port='ssh')]))
  assert "ssh_port 'ssh': input should be a valid integer" in message
  # A port given as text is refused as other mistyped fields are (it was
  # read as a number), naming the file, the machine and the key.
  path = _Write(tmp_path, [_Machine(keyfile), _Machine(keyfile, ssh_port='22')])
  message = _Error(path)
  assert message.startswith(f'--static_vm_file {path}: entry 1: ssh_port '
                            "'22': input should be a valid integer"), message
  message = _Error(_Write(tmp_path, [_Machine(keyfile, zone=3)]))
  assert 'zone 3: input should be a valid string' in message


def test_a_key_given_twice_is_refused_in_one_line(tmp_path, keyfile):
  # Before: json kept the last, so the run reached the machine of a second
  # ip_address in one object, the first silently dropped.
  machine = json.dumps(_Machine(keyfile, '10.0.0.1'))
  twice = machine[:-1] + ', "ip_address": "10.0.0.2"}'
  for text in (f'[{twice}, {machine}]', f'{{"servers": [{twice}]}}',
               f'{{"servers": [{machine}], "servers": [{machine}]}}'):
    message = _Error(_Write(tmp_path, text))
    key = 'servers' if text.count('"servers"') == 2 else 'ip_address'
    assert message == (
        f'--static_vm_file {tmp_path}/static.json: an object gives the key '
        f'"{key}" twice; give each key once (json would keep only the '
        'last).'), message


def test_keyfile_must_exist_and_be_private(tmp_path, keyfile):
  message = _Error(_Write(tmp_path, [_Machine(str(tmp_path / 'nokey'))]))
  assert 'does not exist' in message
  # A loop of symlinks and a path through a file were said not to exist.
  os.symlink('loop', tmp_path / 'loop')
  message = _Error(_Write(tmp_path, [_Machine(str(tmp_path / 'loop'))]))
  assert (f'keyfile_path {tmp_path}/loop: Too many levels of symbolic links; '
          'give the private key that logs in as user_name.') in message
  message = _Error(_Write(tmp_path, [_Machine(f'{keyfile}/id')]))
  assert f'keyfile_path {keyfile}/id: Not a directory; give' in message
  # Was a ValueError traceback (os.stat: embedded null byte), exit 1.
  message = _Error(_Write(tmp_path, [_Machine('ke\0y')]))
  assert "keyfile_path 'ke\\x00y' holds a NUL byte" in message
  os.chmod(keyfile, 0o644)
  message = _Error(_Write(tmp_path, [_Machine(keyfile)]))
  assert f'has mode 644; run chmod 600 {keyfile}' in message


def test_too_few_machines_for_the_config(tmp_path, keyfile):
  path = _Write(tmp_path, [_Machine(keyfile)])
  message = _Error(path, {'servers': 1, 'clients': 2})
  assert 'lists 1 machine(s) but the config needs 3' in message
  path = _Write(tmp_path, {'servers': [_Machine(keyfile)],
                           'clients': [_Machine(keyfile)]})
  message = _Error(path, {'servers': 2, 'clients': 1})
  assert '"servers" lists 1 machine(s)' in message
  path = _Write(tmp_path, {'workers': [_Machine(keyfile)]})
  assert 'group(s) workers are not in the benchmark config' in _Error(path)


def test_list_is_assigned_servers_first_and_keeps_optional_keys(
    tmp_path, keyfile):
  relative = os.path.basename(keyfile)  # relative to the file's directory
  path = _Write(tmp_path, [
      _Machine(relative, '10.0.0.1', internal_ip='192.168.0.1',
               ssh_port=2222, os_type='ubuntu2204', zone='rack-1',
               install_packages=True),
      _Machine(keyfile, '10.0.0.2'), _Machine(keyfile, '10.0.0.3')])
  assigned = provider.AssignGroups(provider.LoadStaticVmFile(path),
                                   {'clients': 1, 'servers': 1}, path)
  server, = assigned['servers']
  assert (server.ip_address, server.internal_ip, server.ssh_port,
          server.os_type, server.zone, server.keyfile_path) == (
              '10.0.0.1', '192.168.0.1', 2222, 'ubuntu2204', 'rack-1',
              keyfile)
  client, = assigned['clients']
  assert (client.ip_address, client.internal_ip, client.ssh_port) == (
      '10.0.0.2', '10.0.0.2', 22)


def _Spec(tmp_path, static_file, counts=(1, 1), run_uri=f'sa{PID}',
          groups=('servers', 'clients')):
  config = {'vm_groups': {
      group: {'vm_spec': {'Local': {'machine_type': 'local'}},
              'vm_count': count}
      for group, count in zip(groups, counts)}}
  record = run_record.RunRecord.Create(str(tmp_path / 'runs' / run_uri),
                                       run_uri)
  flag_values = types.SimpleNamespace(static_vm_file=static_file,
                                      machine_type=None, zone=None)
  module = types.SimpleNamespace(BENCHMARK_NAME='redis_memtier')
  return benchmark_spec.BenchmarkSpec(module, config, run_uri, 'Static',
                                      record, flag_values, None,
                                      lambda samples: None)


def test_construct_vms_calls_nothing(tmp_path, keyfile):
  path = _Write(tmp_path, {'servers': [_Machine(keyfile, machine_type='m5')],
                           'clients': [_Machine(keyfile, '10.0.0.2')]})
  spec = _Spec(tmp_path, path)
  spec.ConstructVirtualMachines()
  client, server = spec.vms  # by group name, as upstream's
  assert (server.name, server.CLOUD, server.KIND) == (
      'servers-0', 'Static', 'static_vm')
  assert server.machine_type == 'm5' and client.machine_type == 'static'
  assert client.internal_ip == '10.0.0.2'
  assert server.scratch_dir == ''  # Made (mktemp -d) once it is reached.
  assert spec.record.Resources() == []  # nothing contacted or recorded yet
  with pytest.raises(errors.UsageError, match='needs --static_vm_file'):
    provider.CheckPrerequisites(types.SimpleNamespace(static_vm_file=None))


def test_a_server_and_a_client_on_one_machine_are_warned_of(tmp_path,
                                                            keyfile):
  """By the file's own words, no name resolved: the same ip_address and
  ssh_port, or the same internal_ip; the plan (a dry run's too) says so
  once, naming the entries."""
  def Warnings(data, counts=(1, 1)):
    spec = _Spec(tmp_path, _Write(tmp_path, data), counts)
    spec.flags.run_stage = ['all']
    return provider.CheckMachines(spec)

  path = str(tmp_path / 'static.json')
  warning, = Warnings([_Machine(keyfile, 'Bench.lab'),
                       _Machine(keyfile, 'bench.lab')])
  assert warning == (
      f'WARNING: --static_vm_file {path}: entry 0 and entry 1 are one '
      "machine (a server and a client): the load generator takes the "
      "server's cores, so the figure understates the server; list the "
      'clients on other machines.')
  warning, = Warnings({
      'servers': [_Machine(keyfile, '10.0.0.1', internal_ip='192.168.0.1')],
      'clients': [_Machine(keyfile, '10.0.0.2'),
                  _Machine(keyfile, '10.0.0.3', internal_ip='192.168.0.1')]},
                      counts=(1, 2))
  assert '"servers" entry 0 and "clients" entry 1 are one machine' in warning
  # Another port of one address is another machine (a forwarded port),
  # when the file gives each its own internal_ip.
  assert Warnings([
      _Machine(keyfile, 'gw', ssh_port=2201, internal_ip='10.0.0.1'),
      _Machine(keyfile, 'gw', ssh_port=2202, internal_ip='10.0.0.2')]) == []
  assert Warnings([_Machine(keyfile, '10.0.0.1'),
                   _Machine(keyfile, '10.0.0.2')]) == []


@pytest.mark.parametrize('groups', [('clients', 'servers'),
                                    ('servers', 'clients')])
def test_vm_groups_are_in_upstreams_order(tmp_path, keyfile, groups):
  # Upstream PKB's spec.vm_groups and spec.vms are by group name (its
  # ConstructVirtualMachines builds sorted(vm_groups)), whatever the
  # config's order; the providers build servers first (placement), which
  # is not the order either. In the config's order, a module's vms[0] was
  # the server here and the client upstream.
  path = _Write(tmp_path, [_Machine(keyfile, '10.0.0.1'),
                           _Machine(keyfile, '10.0.0.2')])
  spec = _Spec(tmp_path, path, groups=groups)
  spec.ConstructVirtualMachines()
  assert list(spec.vm_groups) == ['clients', 'servers']
  assert [vm.name for vm in spec.vms] == ['clients-0', 'servers-0']
  # Servers are still placed first: the first machine of the file.
  assert spec.vm_groups['servers'][0].ip_address == '10.0.0.1'


def _SshdFile(tmp_path, sshd_server, count=2):
  return _Write(tmp_path, [{
      'ip_address': sshd_server.host, 'user_name': sshd_server.user,
      'keyfile_path': sshd_server.user_key, 'ssh_port': sshd_server.port,
  }] * count, name='sshd_vms.json')


@pytest.mark.e2e
def test_provision_and_teardown_from_the_record_kill_redis(
    tmp_path, sshd):  # pylint: disable=redefined-outer-name
  spec = _Spec(tmp_path, _SshdFile(tmp_path, sshd), run_uri=f'sb{PID}')
  spec.ConstructVirtualMachines()
  spec.Provision()
  server = spec.vm_groups['servers'][0]
  assert server.RemoteCommand(f'test -d {server.scratch_dir} && echo y')[0]
  assert server.os_type not in ('', 'detected')  # e.g. debian12
  assert server.num_cpus and server.memory_mib
  password = redis_shard.NewPassword()
  shard, = redis_server.StartShards(
      server, 1, password, redis_shard.ShardOptions(maxmemory_mb=64),
      spec.record, start_port=FreePort())
  marker = f':{shard.port}'  # redis-server retitles itself "<bind>:<port>"
  assert e2e_support.ProcessAlive(shard.pid, marker=marker)
  # A later `--run_stage=teardown` has only the record on disk.
  loaded = run_record.RunRecord.Load(spec.record.run_dir)
  assert resource.TeardownFromRecord(loaded) == []
  assert not e2e_support.ProcessAlive(shard.pid, marker=marker)
  assert not os.path.exists(server.scratch_dir)
  assert e2e_support.Workspaces(f'sb{PID}') == []
  assert {e['status'] for e in loaded.Resources()} == {'deleted'}
  server.StopMaster()


@pytest.mark.e2e
def test_unreachable_machine_fails_provision_in_one_line(tmp_path, keyfile):
  path = _Write(tmp_path, [_Machine(keyfile, '127.0.0.1',
                                    ssh_port=FreePort())] * 2)
  spec = _Spec(tmp_path, path, run_uri=f'sc{PID}')
  spec.ConstructVirtualMachines()
  now = [0.0]
  for vm in spec.vms:
    vm._clock = lambda: now[0]  # pylint: disable=protected-access
    vm._sleep = lambda s: now.__setitem__(0, now[0] + s)  # pylint: disable=protected-access
  with pytest.raises(errors.Error) as raised:
    spec.Provision()
  assert '\n' not in str(raised.value)
  assert 'Connection refused' in str(raised.value)


def _NewKey(tmp_path, name):
  """A fresh private key (no passphrase) no sshd has authorized."""
  path = str(tmp_path / name)
  subprocess.run(['ssh-keygen', '-q', '-t', 'ed25519', '-N', '', '-f', path],
                 check=True, capture_output=True)
  return path


def _KeyedServer(tmp_path, sshd_server, key, run_uri, on_sleep=None):
  """A spec of one static server on sshd_server logging in with `key`, its
  clock moved by its waits' sleeps (no real wait), on_sleep() at each."""
  path = _Write(tmp_path, [{
      'ip_address': sshd_server.host, 'user_name': sshd_server.user,
      'keyfile_path': key, 'ssh_port': sshd_server.port}], name='keyed.json')
  spec = _Spec(tmp_path, path, counts=(1, 0), run_uri=run_uri)
  del spec.config['vm_groups']['clients']
  spec.ConstructVirtualMachines()
  server, = spec.vms
  now = [0.0]

  def Sleep(seconds):
    now[0] += seconds
    if on_sleep:
      on_sleep()

  server._clock = lambda: now[0]  # pylint: disable=protected-access
  server._sleep = Sleep  # pylint: disable=protected-access
  return spec, server


@pytest.mark.e2e
def test_a_machine_refusing_the_key_is_bad_input_in_one_line(
    tmp_path, sshd):  # pylint: disable=redefined-outer-name
  # It was 'no SSH at ... after 30s: u@h: Permission denied (publickey)..',
  # exit 1, as if the run had failed: the file's key or user is wrong.
  key = _NewKey(tmp_path, 'wrong_key')
  spec, _ = _KeyedServer(tmp_path, sshd, key, f'sd{PID}')
  with pytest.raises(errors.UsageError) as raised:
    spec.Provision()
  message = str(raised.value)
  assert '\n' not in message
  assert message.startswith(f'servers-0: {sshd.host} port {sshd.port} '
                            f'refused user {sshd.user} with the key {key} ')
  assert message.endswith('.') and not message.endswith('..'), message
  assert 'Permission denied (publickey)' in message
  with open(key) as f:  # The key's path, never its content.
    assert not set(f.read().splitlines()[1:-1]) & set(message.split())


@pytest.mark.e2e
def test_a_key_refused_while_the_machine_comes_up_is_waited_for(
    tmp_path, sshd):  # pylint: disable=redefined-outer-name
  # A refusal before the deadline is retried (an sshd starting, a machine's
  # agent not yet writing the key): only one to the end is bad input.
  key = _NewKey(tmp_path, 'late_key')
  refused = []

  def Authorize():
    refused.append(True)
    if len(refused) == 2:  # After two refusals, the key is let in.
      with open(key + '.pub') as f:
        sshd.AuthorizeKey(f.read())

  spec, server = _KeyedServer(tmp_path, sshd, key, f'se{PID}', Authorize)
  spec.Provision()
  assert len(refused) >= 2  # Refused twice, then let in.
  assert server.RemoteCommand(f'test -d {server.scratch_dir} && echo y')[0]
  loaded = run_record.RunRecord.Load(spec.record.run_dir)
  assert resource.TeardownFromRecord(loaded) == []
  assert e2e_support.Workspaces(f'se{PID}') == []
  server.StopMaster()


# End to end ------------------------------------------------------------------


def _RunPkb(tmp_path, run_uri, *extra):
  argv = [os.path.join(REPO, '.venv', 'bin', 'python'),
          os.path.join(REPO, 'pkb.py'), f'--run_uri={run_uri}',
          f'--results_dir={tmp_path / "results"}',
          '--memtier_run_duration=1', '--memtier_max_threads=3',
          '--memtier_latency_capped_search=linear', '--memtier_clients=4',
          # A busy test machine must not push every probe over the cap: this
          # test compares which metrics are reported, not their values
          # (tests/e2e_support.py; the walk has 12 connections at most).
          e2e_support.LOAD_PROOF_CAP_FLAG, '--memtier_key_maximum=20000',
          '--timeout_minutes=3',
          # No hold (static machines' default is 60 s): this test compares
          # which metrics are reported, and a hold's time series appear only
          # when it had a whole second to report (cloud_rehearsal_test runs
          # the hold over SSH).
          '--memtier_hold_duration=0',
          # The linear walk's answer is a single probe: unconfirmed (exit 4).
          '--accept_unconfirmed', *extra]
  done = pkb_forkserver.Run(argv, timeout=240, cwd=REPO)
  assert done.returncode == 0, done.stderr[-2000:]
  path = tmp_path / 'results' / run_uri / 'perfkitbenchmarker_results.json'
  with open(path) as f:
    return {json.loads(line)['metric'] for line in f if line.strip()}


def _RedisServersOf(run_uri):
  """redis-servers still running in the run's scratch directories."""
  pids = []
  for pid in filter(str.isdigit, os.listdir('/proc')):
    try:
      with open(f'/proc/{pid}/comm') as f:
        is_redis = f.read().startswith('redis-server')
      cwd = os.readlink(f'/proc/{pid}/cwd')
    except OSError:
      continue
    if is_redis and f'/pkb-{run_uri}.' in cwd and e2e_support.ProcessAlive(
        int(pid)):
      pids.append(int(pid))
  return pids


@pytest.mark.e2e
@pytest.mark.skipif(not os.path.exists(os.path.join(REPO, '.venv')),
                    reason='needs the repo virtualenv (scripts/setup.sh)')
def test_static_run_over_ssh_reports_the_same_metrics_as_local(
    tmp_path, sshd):  # pylint: disable=redefined-outer-name
  local = _RunPkb(tmp_path, f'el{PID}')
  static = _RunPkb(tmp_path, f'es{PID}',
                   f'--static_vm_file={_SshdFile(tmp_path, sshd)}',
                   '--nosystem_tuning')  # never retune the test machine
  assert static == local
  assert _RedisServersOf(f'es{PID}') == []
  assert _RedisServersOf(f'el{PID}') == []
  assert sys.platform.startswith('linux')


# Fields ssh could read as options; what is recorded, teardown accepts -------


@pytest.mark.parametrize('key,value', [
    ('user_name', '-oProxyCommand=touch /tmp/pwned'),
    ('user_name', 'pkb user'),
    ('user_name', 'pkb@10.0.0.9'),
    ('ip_address', '-oProxyCommand=touch /tmp/pwned'),
    ('ip_address', '10.0.0.1 -p 2'),
    ('ip_address', '999.1.1.1'),
    ('internal_ip', '10.0.0.1;true'),
    ('internal_ip', '-x'),
    ('internal_ip', '10.0.0.1\n'),
    ('zone', 'rack\x1b]0;title\x07'),
])
def test_ssh_fields_are_refused_when_the_file_is_read(tmp_path, keyfile, key,
                                                      value):
  machine = _Machine(keyfile)
  machine[key] = value
  message = _Error(_Write(tmp_path, [machine, _Machine(keyfile)]))
  assert f'entry 0: {key} ' in message


def test_what_the_file_accepts_teardown_reads_back(tmp_path, keyfile):
  path = _Write(tmp_path, [
      _Machine(keyfile, 'db-1.rack.example', user_name='ec2-user',
               internal_ip='fd00::7', ssh_port=2222),
      _Machine(keyfile, '10.0.0.2', user_name='u_2.x')])
  spec = _Spec(tmp_path, path, run_uri=f'sf{PID}')
  spec.ConstructVirtualMachines()
  for vm in spec.vms:
    spec.record.AddResource(vm.KIND, vm.name, **vm.RecordData())
  for entry in run_record.RunRecord.Load(spec.record.run_dir).Resources():
    rebuilt = resource.FromRecord(entry, spec.record)
    original = spec.vm_groups[entry['data']['group']][0]
    assert (rebuilt.user, rebuilt.ip_address, rebuilt.internal_ip,
            rebuilt.port, rebuilt.keyfile) == (
                original.user, original.ip_address, original.internal_ip,
                original.port, original.keyfile)


# Teardown of a machine it cannot reach, or whose directory is not the run's --


@pytest.fixture
def own_sshd(tmp_path):
  """An sshd of the test's own, to stop and start again."""
  if not sshd_fixture.Available():
    e2e_support.Unavailable('sshd', 'scripts/setup.sh installs openssh-server')
  server = sshd_fixture.Sshd(str(tmp_path / 'own_sshd')).Start()
  yield server
  server.Stop()


def _OneServer(tmp_path, server_sshd, run_uri):
  """A provisioned run of one static server VM (no clients) on server_sshd:
  (its spec, the VM)."""
  spec = _Spec(tmp_path, _SshdFile(tmp_path, server_sshd, count=1),
               counts=(1, 0), run_uri=run_uri)
  del spec.config['vm_groups']['clients']
  spec.ConstructVirtualMachines()
  spec.Provision()
  server, = spec.vms
  return spec, server


@pytest.mark.e2e
def test_unreachable_machine_stays_in_the_record_until_cleaned(
    tmp_path, own_sshd):  # pylint: disable=redefined-outer-name
  run_uri = f'sg{PID}'
  spec, server = _OneServer(tmp_path, own_sshd, run_uri)
  # What a shard leaves in the scratch directory: its config, with the
  # run's password.
  server.WriteFile(f'{server.scratch_dir}/redis-7002.conf',
                   'requirepass not-for-anyone\n')
  server.StopMaster()
  own_sshd.Stop()  # The machine cannot be reached now.
  try:
    loaded = run_record.RunRecord.Load(spec.record.run_dir)
    failure, = resource.TeardownFromRecord(loaded)
    assert '\n' not in failure
    assert failure.startswith(
        f'static_vm servers-0: its scratch directory /tmp/pkb-{run_uri}.')
    assert 'servers-0 (the run\'s shard configs' in failure
    assert 'Connection refused' in failure
    entry, = run_record.RunRecord.Load(spec.record.run_dir).Resources()
    assert entry['status'] == 'created'
    # A later teardown still knows what is left, and says so.
    done = _Teardown(tmp_path, run_uri)
    assert done.returncode == 1, done.stderr
    assert 'Teardown left 1 resource(s): static_vm servers-0: its scratch' in (
        done.stderr)
  finally:
    own_sshd.Start()
  done = _Teardown(tmp_path, run_uri)
  assert done.returncode == 0, done.stderr
  assert e2e_support.Workspaces(run_uri) == []
  loaded = run_record.RunRecord.Load(spec.record.run_dir)
  assert {e['status'] for e in loaded.Resources()} == {'deleted'}


def _Teardown(tmp_path, run_uri):
  """./pkb.py --run_stage=teardown for a run of _Spec (a new process)."""
  return pkb_forkserver.Run(
      [os.path.join(REPO, '.venv', 'bin', 'python'),
       os.path.join(REPO, 'pkb.py'), '--run_stage=teardown',
       f'--run_uri={run_uri}', f'--results_dir={tmp_path / "runs"}'],
      timeout=120, cwd=REPO)


@pytest.mark.e2e
def test_scratch_dirs_planted_at_the_guessable_names_are_not_used(
    tmp_path, sshd):  # pylint: disable=redefined-outer-name
  """Another user makes /tmp/pkb-<run_uri>/<vm> (the names a run used to
  take), open to all: the run makes its workspace elsewhere, with a name
  nobody knew, and leaves theirs alone."""
  run_uri = f'sh{PID}'
  planted = f'/tmp/pkb-{run_uri}'
  os.makedirs(f'{planted}/servers-0')
  try:
    with open(f'{planted}/servers-0/argv_secret.so', 'w') as f:
      f.write('planted')
    os.chmod(planted, 0o777)
    os.chmod(f'{planted}/servers-0', 0o777)
    spec = _Spec(tmp_path, _SshdFile(tmp_path, sshd), run_uri=run_uri)
    spec.ConstructVirtualMachines()
    spec.Provision()
    server, client = spec.vms
    workspace, = e2e_support.Workspaces(run_uri)
    assert os.path.dirname(server.scratch_dir) == workspace
    assert os.path.dirname(client.scratch_dir) == workspace
    assert stat.S_IMODE(os.stat(workspace).st_mode) == 0o700
    loaded = run_record.RunRecord.Load(spec.record.run_dir)
    assert resource.TeardownFromRecord(loaded) == []
    assert e2e_support.Workspaces(run_uri) == []
    assert sorted(os.listdir(planted)) == ['servers-0']
    assert os.listdir(f'{planted}/servers-0') == ['argv_secret.so']
    server.StopMaster()
  finally:
    shutil.rmtree(planted)


@pytest.mark.e2e
def test_a_record_naming_another_users_workspace_is_refused(
    tmp_path, sshd):  # pylint: disable=redefined-outer-name
  """A hostile record points a VM's scratch directory at a directory of
  the right shape that is not the run's own (open to all): teardown
  refuses in one line and removes nothing of it."""
  run_uri = f'si{PID}'
  planted = f'/tmp/pkb-{run_uri}.planted'
  os.makedirs(f'{planted}/servers-0')
  try:
    os.chmod(planted, 0o777)
    spec, server = _OneServer(tmp_path, sshd, run_uri)
    made = server.scratch_dir
    server.StopMaster()
    path = os.path.join(spec.record.run_dir, 'run_record.json')
    with open(path) as f:
      text = f.read()
    with open(path, 'w') as f:
      f.write(text.replace(made, f'{planted}/servers-0'))
    failure, = resource.TeardownFromRecord(
        run_record.RunRecord.Load(spec.record.run_dir))
    assert '\n' not in failure
    assert f"{planted} is not this run's own directory" in failure, failure
    assert os.path.isdir(f'{planted}/servers-0')
    shutil.rmtree(os.path.dirname(made))
  finally:
    shutil.rmtree(planted)


# One run at a time on a machine ---------------------------------------------


def _Lines(records, text):
  return [r.getMessage() for r in records if text in r.getMessage()]


@pytest.mark.e2e
def test_a_run_on_a_machine_another_live_run_measures_on_is_refused(
    tmp_path, sshd, monkeypatch, caplog):  # pylint: disable=redefined-outer-name
  """Run A has a shard working in its workspace on the machine: run B
  (./pkb.py) is refused in one line naming A, what shows it is alive and
  how to end it, exits as for bad input and makes nothing there; A is
  unharmed. Once nothing of A works there (a crashed run), its workspace
  does not block a run: one WARNING names it. (Other tests' runs on this
  machine are live runs too: B may name them as well, and C be refused
  for them, never for A.)"""
  first, second, third = f'sj{PID}', f'sk{PID}', f'sl{PID}'
  spec, server = _OneServer(tmp_path, sshd, first)  # Not refused: shared.
  shard, = redis_server.StartShards(
      server, 1, redis_shard.NewPassword(),
      redis_shard.ShardOptions(maxmemory_mb=64), spec.record,
      start_port=FreePort())
  marker = f':{shard.port}'
  workspace = os.path.dirname(server.scratch_dir)
  monkeypatch.delenv(provider.SHARED_MACHINES_ENV)
  # Three more live runs of the test's own: more than the line says in
  # full, so the rest are named too, whichever order the machine lists.
  decoys = [tempfile.mkdtemp(prefix=f'pkb-s{n}{PID}.', dir='/tmp')
            for n in 'mno']
  sleepers = [subprocess.Popen(['sleep', '120'], cwd=d) for d in decoys]
  try:
    # B's results beside A's record (_Spec's): B finds it, and names A's
    # teardown command with them.
    done, _ = e2e_support.Run(
        [f'--static_vm_file={_SshdFile(tmp_path, sshd)}',
         '--nosystem_tuning'], str(tmp_path / 'runs'), run_uri=second,
        timeout=120)
    assert done.returncode == stage_runner.EXIT_USAGE, e2e_support.Told(
        done.stdout, done.stderr)
    line, = [line for line in done.stderr.splitlines()
             if 'is in use by' in line]
    if f'run {first} (' in line:  # One of the first three: said in full.
      assert (f'run {first} (redis-server PID {shard.pid} works in its '
              f'workspace {workspace})') in line, line
      assert (f'./pkb.py --run_stage=teardown --run_uri={first} '
              f'--results_dir={tmp_path / "runs"}') in line, line
    else:  # Other tests' live runs came first: A is named among the rest.
      rest = re.search(r' and (\d+) more \(run ([^)]*)\)', line)
      assert rest and first in rest.group(2).split(', '), line
      assert len(rest.group(2).split(', ')) == int(rest.group(1)), line
    for decoy in decoys:
      assert os.path.basename(decoy).split('.')[0][4:] in line, line
    assert e2e_support.Workspaces(second) == []  # Nothing made there.
    assert e2e_support.ProcessAlive(shard.pid, marker=marker)
    for sleeper in sleepers:
      sleeper.kill()
      sleeper.wait()
    assert e2e_support.Workspaces(first) == [workspace]

    # A crashed run: its shard gone, its workspace left, QUIET_S ago.
    os.kill(shard.pid, 9)
    e2e_support.WaitFor(
        lambda: not e2e_support.ProcessAlive(shard.pid, marker=marker),
        'the shard\'s end')
    _Quiet(workspace)
    caplog.set_level('WARNING')
    later = _Spec(tmp_path, _SshdFile(tmp_path, sshd), run_uri=third)
    later.ConstructVirtualMachines()
    try:
      later.Provision()  # Two VMs on the machine: one warning.
      assert len(e2e_support.Workspaces(third)) == 1
    except errors.UsageError as e:
      assert first not in str(e) and 'is in use by' in str(e)
    warned = [r.getMessage() for r in caplog.records
              if f'{first} ({workspace})' in r.getMessage()]
    assert len(warned) == 1, warned
    assert 'with no process working in it and no command of its run' in (
        warned[0])
    # Its record is beside the later run's: its own teardown command.
    assert (f'./pkb.py --run_stage=teardown --run_uri={first} '
            f'--results_dir={tmp_path / "runs"}') in warned[0], warned[0]
    assert resource.TeardownFromRecord(
        run_record.RunRecord.Load(later.record.run_dir)) == []
    later.vms[0].StopMaster()
  finally:
    for sleeper in sleepers:
      sleeper.kill()
      sleeper.wait()
    for decoy in decoys:
      shutil.rmtree(decoy)
    assert resource.TeardownFromRecord(
        run_record.RunRecord.Load(spec.record.run_dir)) == []
    server.StopMaster()
  assert e2e_support.Workspaces(first) == []


# What the machine says of other runs' workspaces (scripts/other_runs.sh's
# lines), read by a VM of run `me1` whose record is in <tmp>/results.
_ROOT = '/srv/scratch'


def _Seeing(tmp_path, keyfile, monkeypatch):
  """A static VM of run me1 (its record under tmp_path/results), asking
  no other process, as CheckNotInUse meets the lines other_runs.sh wrote;
  the default results directory is tmp_path/default."""
  monkeypatch.delenv(provider.SHARED_MACHINES_ENV, raising=False)
  monkeypatch.setattr(record_checks, 'REMOTE_SCRATCH_ROOT', _ROOT)
  monkeypatch.setattr(paths, 'RunsDir',
                      lambda: str(tmp_path / 'default'))
  record = run_record.RunRecord.Create(str(tmp_path / 'results' / 'me1'),
                                       'me1', cloud='Static')
  return provider.StaticVirtualMachine(
      virtual_machine.VmSpec(cloud=provider.CLOUD, machine_type='static'),
      'servers-0', 'servers', user='pkb', ip_address='192.0.2.7',
      keyfile=keyfile, run_uri='me1', record=record)


def _RecordOf(results_dir, run_uri, workspace):
  """The record of run `run_uri` in results_dir, its VM in `workspace`."""
  record = run_record.RunRecord.Create(os.path.join(results_dir, run_uri),
                                       run_uri, cloud='Static')
  record.AddResource('static_vm', 'servers-0',
                     scratch_dir=f'{workspace}/servers-0')


def test_a_refusal_names_a_teardown_command_only_where_the_record_is(
    tmp_path, keyfile, monkeypatch):
  """A run at work on the machine was named with `./pkb.py
  --run_stage=teardown --run_uri=X`, which finds its record only in the
  default results directory of this checkout (through the PKB plugin, the
  harness's full path: for a run of another checkout or results
  directory, a command that was wrong). Now: the run's own command where
  its record is found, listing that workspace; else none."""
  vm = _Seeing(tmp_path, keyfile, monkeypatch)
  results = str(tmp_path / 'results')
  _RecordOf(results, 'aa1', f'{_ROOT}/pkb-aa1.Aa1')
  # Another run under bb2's run_uri, in this run's results directory: not
  # the bb2 at work there (another workspace).
  _RecordOf(results, 'bb2', f'{_ROOT}/pkb-bb2.Other')
  _RecordOf(str(tmp_path / 'default'), 'cc3', f'{_ROOT}/pkb-cc3.Cc3')
  with pytest.raises(errors.UsageError) as refused:
    vm.CheckNotInUse(f'busy {_ROOT}/pkb-aa1.Aa1 4242 redis-server\n'
                     f'busy {_ROOT}/pkb-bb2.Bb2 4343 redis-server\n'
                     f'recent {_ROOT}/pkb-cc3.Cc3 5 pkb\n'
                     f'{_ROOT}/pkb-me1.Me1/servers-0')
  line = str(refused.value)
  assert 'run bb2 (redis-server PID 4343 works in its workspace ' in line
  assert line.endswith(
      'Wait for them to finish, or tear them down: ./pkb.py '
      f'--run_stage=teardown --run_uri=aa1 --results_dir={results}, ./pkb.py '
      '--run_stage=teardown --run_uri=cc3; run bb2 where it was started (its '
      'results directory is not known here) (a run with no command here for '
      f'{provider.QUIET_S // 60} min is not counted)'), line


def test_a_process_name_holding_a_line_separator_stays_one_line(
    tmp_path, keyfile, monkeypatch):
  """A busy process's name (its /proc comm, any bytes) is one field of
  other_runs.sh's line: str.splitlines cut it at a \\x1e or \\u2028, so
  the refusal named a piece of it, and this run's own busy workspace left
  the rest in the scratch directory's line CheckNotInUse returns."""
  vm = _Seeing(tmp_path, keyfile, monkeypatch)
  assert vm.CheckNotInUse(
      f'busy {_ROOT}/pkb-me1.Me1 4141 redis\x1eserver\n'
      f'{_ROOT}/pkb-me1.Me1/servers-0') == f'{_ROOT}/pkb-me1.Me1/servers-0'
  with pytest.raises(errors.UsageError) as refused:
    vm.CheckNotInUse(f'busy {_ROOT}/pkb-bb2.Bb2 4343 redis\u2028server\n'
                     f'{_ROOT}/pkb-me1.Me1/servers-0')
  assert 'run bb2 (redis\\u2028server PID 4343 works in its workspace ' in (
      str(refused.value))


def test_a_holder_name_in_the_lease_stays_one_holder(
    tmp_path, keyfile, monkeypatch, caplog):
  """The holders and workspaces the tuning and teardown of a lent machine
  name (system_tuning.sh's lines, read from the lease and the workspaces'
  root) are its lines as terminal_text.Lines reads them: str.splitlines cut a
  holder at a \\u2028 or \\x85, so the warnings named a piece of it (and
  the command to give its place up gave the piece) and lost the holders
  after it on that line; a \\r\\n line's \\r stayed on a workspace, so its
  run's record was not found. The tuning's metadata (Parse) and the
  values read before it (ParseSnapshot) likewise took a piece of a line
  for a setting's value."""
  vm = _Seeing(tmp_path, keyfile, monkeypatch)
  results = str(tmp_path / 'results')
  _RecordOf(results, 'ab1', f'{_ROOT}/pkb-ab1.Ab1')
  teardown = ('./pkb.py --run_stage=teardown --run_uri=ab1 '
              f'--results_dir={results}')
  workspace = f'restore_workspace=ab1/servers-1 {_ROOT}/pkb-ab1.Ab1\r\n'
  monkeypatch.setattr(vm, 'Sudo', lambda command: command)
  monkeypatch.setattr(vm, 'RemoteCommand', lambda command, **kwargs: (
      'holder=me1/servers-0\n', ''))
  monkeypatch.setattr(vm, 'RemoteCommandWithReturnCode', lambda c, **k: (
      'restore_unseen=zz9/servers-0\x85y\nrestore_deferred=zz9/servers-0'
      '\x85y,ab1/servers-1\n' + workspace, '', 0))
  caplog.set_level('WARNING')
  vm.SayTuningShared('tuning_shared=ab1/servers-1,zz9/servers-0\u2028x\n'
                     + workspace.replace('restore', 'tuning'))
  provider.HostSettings(vm, {})._Delete()  # pylint: disable=protected-access
  said = [r.getMessage() for r in caplog.records]
  assert len(said) == 3, said
  assert ('the tuning of ab1/servers-1, zz9/servers-0\\u2028x is in force '
          f'there too (<run_uri>/<vm>: running, or not torn down: {teardown}; '
          'run zz9 where it was started') in said[0], said
  assert said[1].startswith('Settings on servers-0 stay tuned for '
                            'zz9/servers-0\\x85y, whose run'), said
  assert said[1].endswith("restore 'zz9/servers-0\\x85y' < perfkitbenchmarker"
                          '/scripts/system_tuning.sh'), said
  assert ('stay tuned while the tuning of ab1/servers-1 is in force '
          f'(<run_uri>/<vm>: running, or not torn down: {teardown});'
          ) in said[2], said
  assert 'vm_overcommit_memory' not in system_tuning.Parse(
      'tuning_failed=thp\x1evm_overcommit_memory=0\n', True)
  assert system_tuning.ParseSnapshot(
      'net_core_somaxconn=4096\u2028vm_overcommit_memory=2\n') == {}


def test_a_run_under_way_is_named_with_the_directory_its_lock_names(
    tmp_path, keyfile, monkeypatch):
  """A run provisioning from this runner, its results elsewhere: its lock
  (its pkb's, on this runner) says where its record is."""
  vm = _Seeing(tmp_path, keyfile, monkeypatch)
  monkeypatch.setattr(run_scope, 'LOCK_PARENT', str(tmp_path))
  elsewhere = str(tmp_path / 'elsewhere')
  _RecordOf(elsewhere, 'dd4', f'{_ROOT}/pkb-dd4.Dd4')
  lock = run_scope.RunLock('dd4',
                           run_dir=os.path.join(elsewhere, 'dd4')).Acquire()
  try:
    vm.ClaimScript('true', _ROOT)  # Finds the runs under way here.
    with pytest.raises(errors.UsageError) as refused:
      vm.CheckNotInUse(f'live {_ROOT}/pkb-dd4.Dd4\n'
                       f'{_ROOT}/pkb-me1.Me1/servers-0')
  finally:
    lock.Release()
  line = str(refused.value)
  assert f'its pkb holds its run lock on this runner, pid {os.getpid()} on ' \
      in line, line
  assert line.endswith(
      'Wait for it to finish, or tear it down: ./pkb.py --run_stage=teardown '
      f'--run_uri=dd4 --results_dir={elsewhere}'), line


def test_the_warning_of_an_idle_workspace_names_only_known_commands(
    tmp_path, keyfile, monkeypatch, caplog):
  """It said 'A run's teardown removes it: ./pkb.py --run_stage=teardown
  --run_uri=<run_uri>', with no --results_dir for a run kept elsewhere."""
  vm = _Seeing(tmp_path, keyfile, monkeypatch)
  results = str(tmp_path / 'results')
  _RecordOf(results, 'ee5', f'{_ROOT}/pkb-ee5.Ee5')
  caplog.set_level('WARNING')
  made = vm.CheckNotInUse(f'idle {_ROOT}/pkb-ee5.Ee5\n'
                          f'idle {_ROOT}/pkb-ff6.Ff6\n'
                          f'idle {_ROOT}/pkb-gg7.Gg7\n'
                          f'{_ROOT}/pkb-me1.Me1/servers-0')
  assert made == f'{_ROOT}/pkb-me1.Me1/servers-0'
  warned, = [r.getMessage() for r in caplog.records]
  assert warned.endswith(
      'A run\'s teardown removes its workspace: ./pkb.py --run_stage=teardown '
      f'--run_uri=ee5 --results_dir={results}; run ff6, gg7 where they were '
      'started (their results directory is not known here)'), warned


@pytest.mark.e2e
def test_other_runs_reads_only_workspaces_of_the_users_own(tmp_path):
  """scripts/other_runs.sh, as a machine's hostile /tmp can make it: a
  link to a busy workspace, one others can write, one of another user, a
  name of another shape and the run's own are not taken; a workspace of
  the user's own is busy while a process works in it, else idle; with
  QUIET, recent while a command touched it since (another login's 0700
  one too)."""
  root = tmp_path / 'tmp'
  root.mkdir()
  busy, idle, own, wide, other, odd = (
      root / name for name in ('pkb-ra.Busy1', 'pkb-rb.idle_2', 'pkb-me.x',
                               'pkb-rc.wide', 'pkb-rd.theirs', 'pkb-RE.x'))
  for directory in (busy, idle, own, wide, other, odd):
    directory.mkdir(mode=0o700)
  (root / 'pkb-rf.link').symlink_to(busy)
  (root / 'pkb-rg.x\nbusy').mkdir(mode=0o700)
  wide.chmod(0o770)
  if os.geteuid() == 0:
    os.chown(other, 65534, 65534)
  sleepers = [subprocess.Popen(['sleep', '60'], cwd=str(d))
              for d in (busy, own, wide, odd)]
  if os.geteuid() == 0:
    sleepers.append(subprocess.Popen(['sleep', '60'], cwd=str(other)))
  quiet = root / 'pkb-rh.quiet'
  quiet.mkdir(mode=0o700)
  os.utime(quiet, (0, 0))
  if os.geteuid() == 0:
    (root / 'pkb-ri.open').mkdir(mode=0o750)  # Another login's, not mktemp's.
    os.chown(root / 'pkb-ri.open', 65534, 65534)

  def OtherRuns(*quiet_s):
    return subprocess.run(
        shell_scripts.Inline('other_runs.sh', str(root), 'me', 32,
                             *(('', '', '') + quiet_s if quiet_s else ())),
        capture_output=True, text=True, timeout=60, check=False)

  try:
    done, timed = OtherRuns(), OtherRuns(60)
  finally:
    for sleeper in sleepers:
      sleeper.kill()
      sleeper.wait()
  assert done.returncode == 0, done.stderr
  assert sorted(done.stdout.splitlines()) == [
      f'busy {busy} {sleepers[0].pid} sleep', f'idle {idle}', f'idle {quiet}']
  # With QUIET: a workspace a command touched since is recent, its login
  # named; another login's 0700 one too (only its time shows), not one of
  # any other mode.
  user = pwd.getpwuid(os.geteuid()).pw_name
  assert timed.returncode == 0, timed.stderr
  lines = sorted(re.sub(r'^(recent \S+) \d+ ', r'\1 N ', line)
                 for line in timed.stdout.splitlines())
  assert lines == sorted(
      [f'busy {busy} {sleepers[0].pid} sleep', f'idle {quiet}',
       f'recent {idle} N {user}'] +
      ([f'recent {other} N nobody'] if os.geteuid() == 0 else [])), lines


@pytest.mark.e2e
def test_a_machines_workspace_root_others_may_write_is_refused(
    tmp_path, sshd, monkeypatch):  # pylint: disable=redefined-outer-name
  """A lent machine's /tmp (REMOTE_SCRATCH_ROOT) was never checked: one
  another user may write without the sticky bit (0777 here) got the run's
  workspace, which that user could rename away and replace with theirs.
  Refused there in one line naming the machine and the root, after the
  look for other runs (other_runs.sh runs the making), nothing made."""
  monkeypatch.delenv(provider.SHARED_MACHINES_ENV)
  root = tmp_path / 'root'
  root.mkdir()
  os.chmod(root, 0o777)
  monkeypatch.setattr(record_checks, 'REMOTE_SCRATCH_ROOT', str(root))
  vm = provider.StaticVirtualMachine(
      virtual_machine.VmSpec(cloud=provider.CLOUD, machine_type='static'),
      'servers-0', 'servers', user=sshd.user, ip_address=sshd.host,
      keyfile=sshd.user_key, port=sshd.port, run_uri=f'sr{PID}')
  try:
    with pytest.raises(errors.UsageError) as refused:
      vm.WaitForSsh(30)
  finally:
    vm.StopMaster()
  assert str(refused.value).startswith(
      f'servers-0 ({sshd.user}@{sshd.host} port {sshd.port}): {root} there '
      f'cannot hold the run\'s workspace ({root} is writable by other users '
      '(mode 0777)): '), refused.value
  assert '\n' not in str(refused.value)
  assert os.listdir(root) == [] and not vm.scratch_dir


@pytest.mark.e2e
def test_two_runs_provisioning_at_once_cannot_both_pass_the_check(
    tmp_path, sshd, monkeypatch):  # pylint: disable=redefined-outer-name
  """The look for other runs and the making of the workspace are one step
  under a lock on the machine. Before: run B looked, found nothing, made
  its workspace, while run A, which had looked at the same moment, was
  making its own and starting its server: both measured side by side
  (5 of 5 runs started at one moment made both workspaces). Here A's step
  is the lock held by the test while A's workspace and server appear: B,
  started meanwhile, is refused for A and makes nothing."""
  monkeypatch.delenv(provider.SHARED_MACHINES_ENV)
  # A directory of the test's own: other tests' (and checkouts') live runs
  # in /tmp would refuse B as well.
  root = tmp_path / 'root'
  root.mkdir(mode=0o755)
  monkeypatch.setattr(record_checks, 'REMOTE_SCRATCH_ROOT', str(root))
  b = provider.StaticVirtualMachine(
      virtual_machine.VmSpec(cloud=provider.CLOUD, machine_type='static'),
      'servers-0', 'servers', user=sshd.user, ip_address=sshd.host,
      keyfile=sshd.user_key, port=sshd.port, run_uri=f'sp{PID}')
  outcome = []

  def Provision():
    try:
      b.WaitForSsh(30)
      outcome.append(b.scratch_dir)
    except errors.Error as e:
      outcome.append(e)

  def Waiting():
    """B waits for the lock on `root` (/proc/locks: a blocked FLOCK on its
    inode), or has finished."""
    with open('/proc/locks') as f:
      return not thread.is_alive() or any(
          '->' in line and 'FLOCK' in line and
          line.split()[-3].endswith(f':{root.stat().st_ino}')
          for line in f)

  lock = os.open(root, os.O_RDONLY)
  thread = threading.Thread(target=Provision)
  sleeper = None
  try:
    fcntl.flock(lock, fcntl.LOCK_EX)  # A's step under way.
    thread.start()
    e2e_support.WaitFor(Waiting, 'run B at the lock')
    workspace = tempfile.mkdtemp(prefix=f'pkb-so{PID}.', dir=root)
    sleeper = subprocess.Popen(['sleep', '60'], cwd=workspace)
    fcntl.flock(lock, fcntl.LOCK_UN)
    thread.join(60)
    refusal, = outcome
    assert isinstance(refusal, errors.UsageError), refusal
    assert (f'is in use by run so{PID} (sleep PID {sleeper.pid} works in '
            f'its workspace {workspace})') in str(refusal)
    assert e2e_support.Workspaces(f'sp{PID}', root) == []
    # A still provisioning: nothing works in its workspace yet, but its
    # pkb holds its run lock on this runner. Before: B went on (a WARNING).
    sleeper.kill()
    sleeper.wait()
    a_lock = run_scope.RunLock(f'so{PID}').Acquire()
    try:
      with pytest.raises(errors.UsageError) as refused:
        b.WaitForSsh(30)
    finally:
      a_lock.Release()
    assert (f'is in use by run so{PID} (its pkb holds its run lock on this '
            f'runner, pid {os.getpid()} on ') in str(refused.value)
    assert f'nothing works in its workspace {workspace} yet' in str(
        refused.value)
    assert e2e_support.Workspaces(f'sp{PID}', root) == []
    # A's pkb gone, and no command of A's there since QUIET_S: its
    # workspace is only warned about.
    _Quiet(workspace)
    b.WaitForSsh(30)
    assert len(e2e_support.Workspaces(f'sp{PID}', root)) == 1
  finally:
    os.close(lock)
    thread.join(60)
    if sleeper:
      sleeper.kill()
      sleeper.wait()
    b.StopMaster()


def _StaticVm(server_sshd, run_uri, user=None):
  return provider.StaticVirtualMachine(
      virtual_machine.VmSpec(cloud=provider.CLOUD, machine_type='static'),
      'servers-0', 'servers', user=user or server_sshd.user,
      ip_address=server_sshd.host, keyfile=server_sshd.user_key,
      port=server_sshd.port, run_uri=run_uri)


def _Quiet(workspace):
  """The workspace as a run leaves it that sent no command there for
  QUIET_S: a run killed before its teardown, that long ago."""
  then = os.stat(workspace).st_mtime - provider.QUIET_S - 60
  os.utime(workspace, (then, then))


@pytest.mark.e2e
def test_a_run_provisioning_from_another_runner_is_refused_until_quiet(
    tmp_path, sshd, monkeypatch,  # pylint: disable=redefined-outer-name
    caplog):
  """Run A provisions the machine from another runner: its workspace is
  made, nothing works in it yet, its run lock is that runner's. Before:
  run B only warned about it and went on, so both measured side by side.
  Now B is refused in one line naming A and how to end it, while A sends
  commands there; once A sent none for QUIET_S (killed before its
  teardown), B only warns."""
  monkeypatch.delenv(provider.SHARED_MACHINES_ENV)
  root = tmp_path / 'root'  # Not /tmp: other tests' runs are live there.
  root.mkdir(mode=0o755)
  monkeypatch.setattr(record_checks, 'REMOTE_SCRATCH_ROOT', str(root))
  a, b = _StaticVm(sshd, f'sw{PID}'), _StaticVm(sshd, f'sx{PID}')
  try:
    a.WaitForSsh(30)
    workspace = os.path.dirname(a.scratch_dir)
    with pytest.raises(errors.UsageError) as refused:
      b.WaitForSsh(30)
    line = str(refused.value)
    assert '\n' not in line
    assert re.search(
        f'is in use by run sw{PID} \\(its last command here came \\d+ s ago, '
        f'to its workspace {re.escape(workspace)}\\)', line), line
    # A's record is not on this runner: no command would find it.
    assert (f'run sw{PID} where it was started (its results directory is '
            f'not known here) (a run with no command here for '
            f'{provider.QUIET_S // 60} min is not counted)') in line, line
    assert e2e_support.Workspaces(f'sx{PID}', root) == []
    _Quiet(workspace)
    caplog.set_level('WARNING')
    b.WaitForSsh(30)
    assert len(e2e_support.Workspaces(f'sx{PID}', root)) == 1
    warned, = _Lines(caplog.records, f'sw{PID} ({workspace})')
    assert (f'no command of its run for {provider.QUIET_S // 60} min'
            in warned), warned
  finally:
    for vm in (a, b):
      vm.CleanUpScratch()
      vm.StopMaster()


@pytest.fixture
def other_login():
  """(a second Unix user, an sshd of its own that lets it and the test's
  user in with the test's key, a root for workspaces as /tmp is): all in a
  directory under /tmp both users reach (sshd reads a login's
  authorized_keys as that user), removed afterwards with the user."""
  if os.geteuid() != 0:
    pytest.skip('only root can make a second user')
  useradd = e2e_support.RequireTool('useradd', 'the passwd package')
  if not sshd_fixture.Available():
    e2e_support.Unavailable('sshd', 'scripts/setup.sh installs openssh-server')
  name = f'pkbt{PID}'
  base = tempfile.mkdtemp(prefix='static-login-', dir='/tmp')
  os.chmod(base, 0o755)
  home, root = os.path.join(base, 'home'), os.path.join(base, 'root')
  server = None
  # '*': no password, but not locked (sshd without PAM refuses '!').
  subprocess.run([useradd, '-M', '-d', home, '-s', '/bin/bash', '-p', '*',
                  name], check=True, capture_output=True, timeout=60)
  try:
    os.mkdir(home)
    shutil.chown(home, name, name)
    os.mkdir(root)
    os.chmod(root, 0o1777)  # As /tmp; not /tmp, where other tests run.
    server = sshd_fixture.Sshd(os.path.join(base, 'sshd')).Start()
    os.chmod(server.directory, 0o755)
    os.chmod(server.authorized_keys, 0o644)  # Public keys only.
    yield name, server, root
  finally:
    if server:
      server.Stop()
    subprocess.run([os.path.join(os.path.dirname(useradd), 'userdel'), name],
                   check=False, capture_output=True, timeout=60)
    shutil.rmtree(base)


@pytest.mark.e2e
def test_a_run_of_another_login_user_is_refused_until_quiet(
    monkeypatch, other_login):  # pylint: disable=redefined-outer-name
  """Run A logs in as another user: its workspace is its login's, whose
  processes this login cannot look into. Before: B did not look at it at
  all, and went on. Now B is refused naming A's login while A sends
  commands there, and not once A sent none for QUIET_S."""
  user, server, root = other_login
  monkeypatch.delenv(provider.SHARED_MACHINES_ENV)
  monkeypatch.setattr(record_checks, 'REMOTE_SCRATCH_ROOT', root)
  a = _StaticVm(server, f'sy{PID}', user=user)
  b = _StaticVm(server, f'sz{PID}')
  try:
    a.WaitForSsh(30)
    workspace = os.path.dirname(a.scratch_dir)
    assert os.stat(workspace).st_uid != os.geteuid()
    a.RemoteCommand('true')  # A at work: the workspace's time is now.
    with pytest.raises(errors.UsageError) as refused:
      b.WaitForSsh(30)
    assert re.search(
        f'is in use by run sy{PID} \\(of login {user}; its last '
        f'command here came \\d+ s ago, to its workspace '
        f'{re.escape(workspace)}\\)', str(refused.value)), refused.value
    assert e2e_support.Workspaces(f'sz{PID}', root) == []
    _Quiet(workspace)
    b.WaitForSsh(30)
    assert len(e2e_support.Workspaces(f'sz{PID}', root)) == 1
  finally:
    for vm in (a, b):
      vm.CleanUpScratch()
      vm.StopMaster()


@pytest.mark.e2e
def test_a_login_whose_startup_files_hang_is_said_to_hang(
    tmp_path, sshd, monkeypatch):  # pylint: disable=redefined-outer-name
  """A ~/.bashrc that hangs: the command's own timeout never starts, ssh
  is killed at the local one. Before: 'the login shell ended before
  running the command (exit -9: no output)' (WaitForSsh), and a command
  'ran past its timeout'."""
  monkeypatch.setattr(ssh_vm, 'LOCAL_GRACE_S', 0.5)  # Killed at 1.5 s.
  home = tmp_path / 'home'
  home.mkdir()
  keyfile = sshd.AuthorizeStubbedKey(str(tmp_path / 'login'), {}, env={
      'HOME': str(home), 'SHLVL': '0'})
  vm = provider.StaticVirtualMachine(
      virtual_machine.VmSpec(cloud=provider.CLOUD, machine_type='static'),
      'servers-0', 'servers', user=sshd.user, ip_address=sshd.host,
      keyfile=keyfile, port=sshd.port, run_uri=f'su{PID}',
      connect_timeout=2)
  fresh = provider.StaticVirtualMachine(
      vm.spec, 'servers-0', 'servers', user=sshd.user,
      ip_address=sshd.host, keyfile=keyfile, port=sshd.port,
      run_uri=f'sv{PID}', connect_timeout=1)
  vm.WaitForSsh(20)
  bashrc = home / '.bashrc'
  # Past both kills (1.5 s after each ssh started); ssh's master holds a
  # killed command's output until its session ends, so not much longer.
  bashrc.write_text('sleep 2.5\n')
  try:
    with pytest.raises(ssh_vm.SshError) as hung:
      vm.RemoteCommand('true', timeout=1)
    with pytest.raises(ssh_vm.SshError) as waited:
      fresh.WaitForSsh(1)
  finally:
    bashrc.write_text('')
    vm.CleanUpScratch()
    vm.StopMaster()
    fresh.StopMaster()
  for error in (hung, waited):
    assert re.match(
        f'servers-0: SSH to {re.escape(sshd.user)}@{sshd.host} port '
        rf'{sshd.port} did not start the command within [12] s',
        str(error.value)), error.value
    assert 'startup files (~/.bashrc' in str(error.value)
    assert 'ended before' not in str(error.value)
  assert e2e_support.Workspaces(f'sv{PID}') == []


@pytest.mark.e2e
def test_a_key_of_upstreams_format_left_out_is_said_as_the_run_says(
    tmp_path, keyfile):
  """PKB's disk_specs in a machine's entry means nothing here and is left
  out with a warning; logged before the run's log existed, it came out in
  logging's own form, 'WARNING:root:...'."""
  path = _Write(tmp_path, [dict(_Machine(keyfile), disk_specs=[]),
                           _Machine(keyfile)])
  proc, _ = e2e_support.Run(
      ['--dry_run', f'--static_vm_file={path}',
       '--local_priced_as=GCP:n2d-standard-2'], str(tmp_path / 'results'))
  assert proc.returncode == 0, proc.stderr
  assert proc.stderr.splitlines()[0] == (
      f'WARNING: {path}: ignoring disk_specs in entry 0'), proc.stderr
