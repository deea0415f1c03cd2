"""No command grows with the shard count (issue 10 point 9).

300 shards per VM failed with "Argument list too long": `redis-cli --cluster
create` took every address in one argv. Large clusters are now built by
pieces, one address per command at most; a real small cluster is built that
way on loopback.
"""

import os
import re
import subprocess
import time

import pytest

import e2e_support
from perfkitbenchmarker import errors
from perfkitbenchmarker import redis_shard
from perfkitbenchmarker import vm_util
from perfkitbenchmarker.linux_packages import redis_cluster

ADDRESS = re.compile(r'\b\d+\.\d+\.\d+\.\d+(:| )\d+\b')


def _Shards(count, first_port=7001):
  return [redis_shard.Shard('vm', '127.0.0.1', first_port + i, 1000 + i,
                            f'/tmp/c{i}') for i in range(count)]


class _RecordingVm:
  """Answers redis-cli like a healthy cluster of `count` nodes."""

  name = 'fake'

  def __init__(self, count):
    self.count = count
    self.commands = []

  def RemoteCommand(self, command, timeout=None, ignore_failure=False,
                    env=None, what=None, stdin=None):
    del timeout, ignore_failure, env, what, stdin
    self.commands.append(command)
    match = re.search(r' -p (\d+) ', command)
    port = int(match.group(1)) if match else 0
    if command.endswith('CLUSTER INFO'):
      return (f'cluster_state:ok\ncluster_slots_assigned:'
              f'{redis_cluster.CLUSTER_SLOTS}\n'
              f'cluster_known_nodes:{self.count}\n', '')
    if command.endswith('CLUSTER MYID'):
      return f'node{port:040d}\n', ''
    if command.endswith('CLUSTER NODES'):
      return ''.join(f'node{p:040d} 127.0.0.1:{p}@1{p} master\n'
                     for p in range(7001, 7001 + self.count)), ''
    return 'OK\n', ''


def _LongestCommand(count, replicas=0):
  vm = _RecordingVm(count)
  redis_cluster.CreateCluster(vm, _Shards(count), 'pw', replicas=replicas,
                             sleep=lambda s: None)
  return max(len(c) for c in vm.commands), vm.commands


@pytest.mark.parametrize('replicas', [0, 1])
def test_no_command_grows_with_the_shard_count(replicas):
  longest_300, commands = _LongestCommand(300, replicas)
  longest_2000, _ = _LongestCommand(2000, replicas)
  for command in commands:
    assert len(ADDRESS.findall(command)) <= 1, command[:200]
  assert longest_2000 <= longest_300 < 200
  meets = [c for c in commands if 'CLUSTER MEET' in c]
  assert len(meets) == 299
  slotted = [c for c in commands if 'ADDSLOTSRANGE' in c]
  assert len(slotted) == 300 // (1 + replicas)
  ranges = sorted(tuple(map(int, c.split()[-2:])) for c in slotted)
  assert ranges[0][0] == 0 and ranges[-1][1] == redis_cluster.CLUSTER_SLOTS - 1
  assert all(a[1] + 1 == b[0] for a, b in zip(ranges, ranges[1:]))
  assert sum('CLUSTER REPLICATE' in c for c in commands) == (
      150 if replicas else 0)


def test_small_clusters_still_use_cluster_create():
  _, commands = _LongestCommand(6)
  assert sum('--cluster create' in c for c in commands) == 1
  assert not any('CLUSTER MEET' in c for c in commands)


class _ForgetfulVm(_RecordingVm):
  """A cluster whose replicas never hear of their primaries by gossip."""

  def RemoteCommand(self, command, **kwargs):
    if command.endswith('CLUSTER NODES'):
      self.commands.append(command)
      return 'node-of-nobody 127.0.0.1:1@10001 myself,master\n', ''
    return super().RemoteCommand(command, **kwargs)


def test_a_replica_that_never_learns_its_primary_fails_in_one_line(
    monkeypatch):
  monkeypatch.setattr(redis_cluster, 'MAX_CLUSTER_CREATE_SHARDS', 0)
  now = [0.0]
  def Sleep(seconds):
    now[0] += seconds
  vm = _ForgetfulVm(6)
  with pytest.raises(errors.ProcessError,
                     match=r'Shard 7004 never learnt primary 7001 in 5s'):
    redis_cluster.CreateCluster(vm, _Shards(6), 'pw', replicas=1,
                                sleep=Sleep, clock=lambda: now[0],
                                timeout_s=5)
  asked = sum(c.endswith('CLUSTER NODES') for c in vm.commands)
  assert 5 / 0.2 <= asked <= 5 / 0.2 + 2  # Every 0.2 s, until the deadline.
  assert not any('CLUSTER REPLICATE' in c for c in vm.commands)


class _LocalVm:
  name = 'local'

  def RemoteCommand(self, command, timeout=None, ignore_failure=False,
                    env=None, what=None, stdin=None):
    out, err, rc = vm_util.RunLocal(command, timeout=timeout or 30, env=env,
                                    stdin=stdin)
    if not ignore_failure:
      vm_util.CheckedOutput(out, err, rc, command, what)
    return out, err


def _FreeClusterPorts(count):
  """`count` ports free with their cluster-bus port (port + 10000) free too:
  a bus port some other socket held (an ephemeral port: 32768-60999 here)
  kept that redis-server from starting, and the cluster from forming."""
  import socket  # pylint: disable=g-import-not-at-top
  held, ports = [], []
  try:
    while len(ports) < count and len(held) < 200:
      s = socket.socket()
      held.append(s)
      s.bind(('127.0.0.1', 0))
      port = s.getsockname()[1]
      if port + 10000 >= 65536:
        continue
      bus = socket.socket()
      held.append(bus)
      try:
        bus.bind(('127.0.0.1', port + 10000))
      except OSError:
        continue
      ports.append(port)
    return ports
  finally:
    for s in held:
      s.close()


@pytest.mark.e2e
def test_real_cluster_built_by_pieces_with_replicas(tmp_path, monkeypatch):
  for tool in ('redis-server', 'redis-cli'):
    e2e_support.RequireTool(tool, 'scripts/setup.sh')
  monkeypatch.setattr(redis_cluster, 'MAX_CLUSTER_CREATE_SHARDS', 0)
  ports = _FreeClusterPorts(6)
  assert len(ports) == 6
  password = 'cluster-pieces-pw'
  servers = []
  try:
    for port in ports:
      servers.append(subprocess.Popen(
          ['redis-server', '--port', str(port), '--bind', '127.0.0.1',
           '--save', '', '--appendonly', 'no', '--cluster-enabled', 'yes',
           '--cluster-config-file', str(tmp_path / f'nodes-{port}.conf'),
           '--dir', str(tmp_path), '--requirepass', password,
           '--masterauth', password],
          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    env = dict(os.environ, REDISCLI_AUTH=password)
    for port in ports:
      for _ in range(100):
        if subprocess.run(['redis-cli', '-p', str(port), 'ping'],
                          capture_output=True, text=True, env=env,
                          check=False).stdout.strip() == 'PONG':
          break
        time.sleep(0.05)
    shards = [redis_shard.Shard('local', '127.0.0.1', p, s.pid, '')
              for p, s in zip(ports, servers)]
    redis_cluster.CreateCluster(_LocalVm(), shards, password, replicas=1,
                               timeout_s=60)
    roles = [subprocess.run(['redis-cli', '-p', str(p), 'ROLE'],
                            capture_output=True, text=True, env=env,
                            check=True).stdout.split()[0] for p in ports]
    assert roles == ['master'] * 3 + ['slave'] * 3
  finally:
    for server in servers:
      server.terminate()
    for server in servers:
      server.wait(timeout=10)
