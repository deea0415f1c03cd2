"""Command builders: flags, key arithmetic, RESP preload and masking."""

import contextlib
import json
import os
import socket
import subprocess
import time

import pytest

import e2e_support

from perfkitbenchmarker import measurement
from perfkitbenchmarker.load_generators import base
from perfkitbenchmarker.load_generators import commands

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'data')
ENDPOINT = base.Endpoint('10.0.0.5', 6379)
WORKLOAD = base.Workload()  # 1:1, 100 B, keys 1..100000, R:R, memtier-.


def _Flag(argv, flag):
  return argv[argv.index(flag) + 1]


def _MemtierAllkeysWrites(argv):
  """Keys a memtier preload command writes, per memtier's `-n allkeys` rules.

  From memtier_benchmark's source: requests per client = max - min, or for
  P:P (max - min) // N + 1; P:P clients each walk their own slice (the last
  one up to max), S:S clients walk min.. ; both wrap past the slice end.
  """
  low = int(_Flag(argv, '--key-minimum'))
  high = int(_Flag(argv, '--key-maximum'))
  clients = int(_Flag(argv, '-t')) * int(_Flag(argv, '-c'))
  parallel = _Flag(argv, '--key-pattern') == 'P:P'
  requests = (high - low) // clients + 1 if parallel else high - low
  written = set()
  for client in range(clients):
    start, end = low, high
    if parallel:
      start = low + requests * client
      end = high if client == clients - 1 else start + requests - 1
    for i in range(requests):
      written.add(start + i % (end - start + 1))
  return written


def test_allkeys_model_matches_the_preload_fixture():
  # The recorded preload passed --key-maximum 100000 and wrote 99,999 keys.
  with open(os.path.join(DATA, 'memtier_single_preload_p100.json')) as f:
    doc = json.load(f)
  argv = ['memtier', '--key-minimum', '1', '--key-maximum', '100000',
          '-t', '1', '-c', '1', '--key-pattern', 'S:S']
  assert len(_MemtierAllkeysWrites(argv)) == doc['ALL STATS']['Sets']['Count']


def test_memtier_preload_s_s_writes_exactly_the_key_range():
  argv = commands.MemtierPreloadCommand('/opt/memtier', ENDPOINT, 'pw',
                                        WORKLOAD, json_out='/tmp/p.json')
  assert argv[0] == '/opt/memtier'
  assert _Flag(argv, '-s') == '10.0.0.5' and _Flag(argv, '-p') == '6379'
  assert _Flag(argv, '-a') == 'pw'
  assert _Flag(argv, '--ratio') == '1:0'
  assert _Flag(argv, '--pipeline') == '100'
  assert _Flag(argv, '-d') == '100'
  assert _Flag(argv, '--key-pattern') == 'S:S'
  assert _Flag(argv, '--key-prefix') == 'memtier-'
  assert _Flag(argv, '--key-minimum') == '1'
  assert _Flag(argv, '--key-maximum') == '100001'
  assert _Flag(argv, '-n') == 'allkeys'
  assert _Flag(argv, '--json-out-file') == '/tmp/p.json'
  assert '--cluster-mode' not in argv and '--test-time' not in argv
  assert _MemtierAllkeysWrites(argv) == set(range(1, 100001))


@pytest.mark.parametrize('threads,clients', [(1, 1), (1, 3), (2, 4), (4, 50)])
def test_memtier_preload_p_p_writes_exactly_the_key_range(threads, clients):
  workload = base.Workload(key_minimum=5, key_maximum=10004)
  argv = commands.MemtierPreloadCommand(
      'memtier', ENDPOINT, None, workload, threads=threads, clients=clients,
      key_pattern='P:P')
  assert _Flag(argv, '--key-maximum') == '10004'
  assert _MemtierAllkeysWrites(argv) == set(range(5, 10005))


def test_memtier_preload_refusals():
  with pytest.raises(ValueError):
    commands.MemtierPreloadCommand('m', ENDPOINT, None, WORKLOAD,
                                   key_pattern='R:R')
  tiny = base.Workload(key_minimum=1, key_maximum=10)
  with pytest.raises(ValueError):  # The last client would get no keys.
    commands.MemtierPreloadCommand('m', ENDPOINT, None, tiny, clients=8,
                                   key_pattern='P:P')


def test_memtier_preload_cluster_and_no_password():
  workload = base.Workload(cluster_mode=True)
  argv = commands.MemtierPreloadCommand('m', ENDPOINT, '', workload)
  assert '--cluster-mode' in argv
  assert '-a' not in argv and '--json-out-file' not in argv


def test_memtier_probe_command():
  load = measurement.Load(threads=2, clients=16, pipeline=4)
  argv = commands.MemtierProbeCommand('memtier', ENDPOINT, 'pw', WORKLOAD,
                                      load, 5, '/tmp/o.json')
  expected = {'-s': '10.0.0.5', '-p': '6379', '-a': 'pw', '--ratio': '1:1',
              '--pipeline': '4', '-d': '100', '--key-pattern': 'R:R',
              '--key-minimum': '1', '--key-maximum': '100000',
              '--test-time': '5', '-t': '2', '-c': '16',
              '--print-percentiles': '50,90,95,99,99.9',
              '--json-out-file': '/tmp/o.json'}
  for flag, value in expected.items():
    assert _Flag(argv, flag) == value, flag
  assert '--hide-histogram' in argv
  assert '--cluster-mode' not in argv and '--clients-start' not in argv


def test_memtier_probe_matches_fixture_configuration():
  # The probe reproduces the options the recorded t1c32 run was made with.
  with open(os.path.join(DATA, 'memtier_single_t1c32_tt5_under1ms.json')) as f:
    config = json.load(f)['configuration']
  argv = commands.MemtierProbeCommand(
      'memtier', base.Endpoint(config['server'], config['port']), None,
      WORKLOAD, measurement.Load(1, 32), 5, 'o.json')
  assert _Flag(argv, '--ratio') == config['ratio']
  assert _Flag(argv, '--key-pattern') == config['key_pattern']
  assert _Flag(argv, '--key-prefix') == config['key_prefix']
  assert int(_Flag(argv, '--key-maximum')) == config['key_maximum']
  assert int(_Flag(argv, '-c')) == config['clients']
  assert int(_Flag(argv, '--test-time')) == config['test_time']


def test_memtier_probe_staircase_and_cluster():
  staircase = commands.StaircaseSpec(16, 16, 2)
  assert staircase.Steps(256) == list(range(16, 257, 16))
  assert staircase.TestTime(256) == 32  # As in the staircase fixture.
  assert commands.StaircaseSpec(10, 16, 3).Steps(50) == [10, 26, 42, 50]
  argv = commands.MemtierProbeCommand(
      'memtier', ENDPOINT, None, base.Workload(cluster_mode=True),
      measurement.Load(1, 256), 32, 'o.json', staircase=staircase)
  assert _Flag(argv, '--clients-start') == '16'
  assert _Flag(argv, '--clients-step') == '16'
  assert _Flag(argv, '--step-duration') == '2'
  assert '--cluster-mode' in argv and '-a' not in argv
  with pytest.raises(ValueError):
    commands.MemtierProbeCommand('m', ENDPOINT, None, WORKLOAD,
                                 measurement.Load(1, 16), 32, 'o',
                                 staircase=staircase)


def test_memtier_probe_needs_whole_seconds():
  for bad in (0, 2.5):
    with pytest.raises(ValueError):
      commands.MemtierProbeCommand('m', ENDPOINT, None, WORKLOAD,
                                   measurement.Load(1, 1), bad, 'o')


def test_redis_benchmark_command():
  argv = commands.RedisBenchmarkCommand(
      '/usr/bin/redis-benchmark', ENDPOINT, 'pw', 'get', clients=32, threads=1,
      pipeline=1, requests=400000, data_size=100, key_space=100000,
      cluster_mode=False)
  expected = {'-h': '10.0.0.5', '-p': '6379', '-a': 'pw', '-t': 'get',
              '-c': '32', '-n': '400000', '-P': '1', '-d': '100',
              '-r': '100000', '--threads': '1'}
  for flag, value in expected.items():
    assert _Flag(argv, flag) == value, flag
  assert '--cluster' not in argv and '--csv' not in argv
  argv = commands.RedisBenchmarkCommand(
      'rb', ENDPOINT, None, 'set', 256, 2, 1, 10, 100, 10, cluster_mode=True)
  assert '--cluster' in argv and '-a' not in argv
  with pytest.raises(ValueError):
    commands.RedisBenchmarkCommand('rb', ENDPOINT, None, 'mset', 1, 1, 1, 1,
                                   1, 1, False)


def test_resp_set_commands():
  text = ''.join(commands.RespSetCommands('memtier-', 9, 10, 3))
  assert text == ('*3\r\n$3\r\nSET\r\n$9\r\nmemtier-9\r\n$3\r\nxxx\r\n'
                  '*3\r\n$3\r\nSET\r\n$10\r\nmemtier-10\r\n$3\r\nxxx\r\n')
  resp = ''.join(commands.RedisBenchmarkPreloadResp(
      base.Workload(key_minimum=1, key_maximum=3, data_size=5)))
  assert resp.count('*3\r\n') == 3
  assert '$16\r\nkey:000000000000\r\n' in resp
  assert 'key:000000000002' in resp and 'key:000000000003' not in resp
  assert commands.RedisBenchmarkKeyPrefix('06S') == 'key:{06S}:'


def test_redis_cli_pipe_command():
  argv = commands.RedisCliPipeCommand('redis-cli', ENDPOINT, 'pw')
  assert argv == ['redis-cli', '-h', '10.0.0.5', '-p', '6379', '-a', 'pw',
                  '--no-auth-warning', '--pipe']
  assert commands.RedisCliPipeCommand('c', ENDPOINT, None)[-1] == '--pipe'


def _HelpText(tool, *args):
  done = subprocess.run([tool, *args], capture_output=True, text=True,
                        check=False)
  return done.stdout + done.stderr


@pytest.mark.e2e
@e2e_support.NeedsTools('redis-benchmark', how='scripts/setup.sh')
def test_redis_benchmark_flags_exist():
  help_text = _HelpText('redis-benchmark', '--help')
  argv = commands.RedisBenchmarkCommand('rb', ENDPOINT, 'pw', 'set', 1, 1, 1,
                                        1, 1, 1, cluster_mode=True)
  for flag in (a for a in argv if a.startswith('-')):
    assert f' {flag} ' in help_text, flag


@pytest.mark.e2e
@e2e_support.NeedsTools('redis-cli', how='scripts/setup.sh')
def test_redis_cli_flags_exist():
  help_text = _HelpText('redis-cli', '--help')
  for flag in commands.RedisCliPipeCommand('c', ENDPOINT, 'pw'):
    if flag.startswith('-'):
      assert f' {flag} ' in help_text, flag


def _FreePort():
  with socket.socket() as s:
    s.bind(('127.0.0.1', 0))
    return s.getsockname()[1]


@contextlib.contextmanager
def _RedisServer():
  port = _FreePort()
  server = subprocess.Popen(
      ['redis-server', '--port', str(port), '--bind', '127.0.0.1',
       '--save', '', '--appendonly', 'no'],
      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
  try:
    for _ in range(100):
      ping = subprocess.run(['redis-cli', '-p', str(port), 'ping'],
                            capture_output=True, text=True, check=False)
      if ping.stdout.strip() == 'PONG':
        break
      time.sleep(0.05)
    yield base.Endpoint('127.0.0.1', port)
  finally:
    server.terminate()
    server.wait(timeout=10)


def _Cli(endpoint, *args):
  return subprocess.run(['redis-cli', '-p', str(endpoint.port), *args],
                        capture_output=True, text=True, check=True).stdout


@pytest.mark.e2e
@e2e_support.NeedsTools('redis-server', 'redis-cli', 'redis-benchmark',
                        how='scripts/setup.sh')
def test_preload_writes_every_key_redis_benchmark_reads():
  workload = base.Workload(key_minimum=1, key_maximum=500, data_size=20)
  with _RedisServer() as endpoint:
    subprocess.run(commands.RedisCliPipeCommand('redis-cli', endpoint, None),
                   input=''.join(commands.RedisBenchmarkPreloadResp(workload)),
                   capture_output=True, text=True, check=True)
    assert _Cli(endpoint, 'dbsize').strip() == '500'
    assert _Cli(endpoint, 'strlen', 'key:000000000499').strip() == '20'
    subprocess.run(commands.RedisBenchmarkCommand(
        'redis-benchmark', endpoint, None, 'get', clients=4, threads=1,
        pipeline=1, requests=5000, data_size=20, key_space=workload.key_count,
        cluster_mode=False), capture_output=True, check=True)
    stats = dict(line.split(':', 1) for line in
                 _Cli(endpoint, 'info', 'stats').splitlines() if ':' in line)
    assert int(stats['keyspace_misses']) == 0
    assert int(stats['keyspace_hits']) >= 5000
