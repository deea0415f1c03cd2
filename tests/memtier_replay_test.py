"""The memtier replay stand-in behaves like memtier where the product looks.

tests/memtier_replay.py stands in for memtier_benchmark (no build of it is
kept here). These runs against a real redis-server on loopback check what
the product relies on: memtier's command-line errors and exit codes, a
refused password, preloads that really write the keys memtier writes, and
timed runs whose replayed outputs parse (through the product's own parser)
to the rate of the recording they replay, the duration bug included.
"""

import json
import os
import subprocess

import pytest

import e2e_support
import memtier_replay
import memtier_replay_output
from perfkitbenchmarker.load_generators import memtier_results

# Every test here starts a process (tests/tier_guard.py).
pytestmark = pytest.mark.e2e

PASSWORD = 'replay-pw'
DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'data')


@pytest.fixture(scope='module')
def port():
  e2e_support.RequireTool('redis-server', 'apt-get install redis-server')
  number = e2e_support.FreePort()
  server = subprocess.Popen(
      ['redis-server', '-'], stdin=subprocess.PIPE, text=True,
      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
  server.stdin.write(f'port {number}\nbind 127.0.0.1\nsave ""\n'
                     f'appendonly no\nrequirepass {PASSWORD}\n')
  server.stdin.close()
  try:
    for _ in range(200):
      if _Run(number, ['--version']).returncode == 0 and _Cli(
          number, 'PING') == 'PONG':
        break
    yield number
  finally:
    server.terminate()
    server.wait(timeout=10)


def _Run(port_number, args, auth=PASSWORD):
  argv = [memtier_replay.Path(), '-s', '127.0.0.1', '-p', str(port_number)]
  if auth:
    argv += ['-a', auth]
  return subprocess.run(argv + args, capture_output=True, text=True,
                        timeout=60, check=False)


def _Cli(port_number, *command):
  return subprocess.run(
      ['redis-cli', '-p', str(port_number), *command], capture_output=True,
      text=True, check=False,
      env=dict(os.environ, REDISCLI_AUTH=PASSWORD)).stdout.strip()


def test_command_line_errors_and_version_as_memtier(port):
  version = _Run(port, ['--version'])
  assert version.returncode == 0
  assert version.stdout.startswith('memtier_benchmark 255.255.255-replay')
  for args, message in (
      (['--no-such-option'], "unrecognized option '--no-such-option'"),
      (['--ratio', '1-1', '--test-time', '1'], 'ratio must be'),
      (['--key-pattern', 'X:R', '--test-time', '1'], 'key-pattern must be'),
      (['--threads'], "option '--threads' requires an argument"),
      (['--tls', '--test-time', '1'], 'cannot replay --tls')):
    proc = _Run(port, args)
    assert (proc.returncode, proc.stdout) == (1, ''), args
    assert message in proc.stderr and len(proc.stderr.splitlines()) == 1


def test_refused_password_and_closed_port_exit_1_with_no_json(port, tmp_path):
  out = tmp_path / 'o.json'
  proc = _Run(port, ['--test-time', '1', '--json-out-file', str(out)],
              auth='wrong')
  assert proc.returncode == 1 and 'authentication failed' in proc.stderr
  proc = _Run(e2e_support.FreePort(), ['-n', '10'])
  assert proc.returncode == 1 and 'Connection refused' in proc.stderr
  assert not out.exists()


def test_preloads_write_the_keys_memtier_writes(port, tmp_path):
  _Cli(port, 'FLUSHALL')
  # S:S with -n allkeys: one short of the range, as recorded
  # (memtier_single_preload_p100: 99,999 keys for 1..100000).
  proc = _Run(port, ['--ratio', '1:0', '--key-pattern', 'S:S', '-n',
                     'allkeys', '--key-minimum', '1', '--key-maximum', '3000',
                     '-t', '1', '-c', '1', '--pipeline', '100'])
  assert proc.returncode == 0, proc.stderr
  assert 'setting requests to 2999' in proc.stdout
  assert _Cli(port, 'DBSIZE') == '2999'
  assert _Cli(port, 'EXISTS', 'memtier-3000') == '0'
  # P:P: each of the 4 clients a slice, the whole range once.
  out = tmp_path / 'p.json'
  proc = _Run(port, ['--ratio', '1:0', '--key-pattern', 'P:P', '-n',
                     'allkeys', '--key-minimum', '5001', '--key-maximum',
                     '6000', '-t', '1', '-c', '4', '-d', '7',
                     '--json-out-file', str(out)])
  assert proc.returncode == 0, proc.stderr
  assert _Cli(port, 'DBSIZE') == str(2999 + 1000)
  assert _Cli(port, 'STRLEN', 'memtier-6000') == '7'
  doc = json.loads(out.read_text())
  assert doc['ALL STATS']['Sets']['Count'] == 1000
  assert doc['configuration']['authenticate'] == PASSWORD  # As memtier.
  parsed = memtier_results.MemtierResult.FromOutputs(out.read_text(),
                                                     proc.stdout)
  assert parsed.ops == 1000 and parsed.duration_source == (
      'json_runtime_start_finish')


@pytest.mark.parametrize('threads, clients, recording', [
    (1, 32, 'single_t1c32_tt5_under1ms'),
    (2, 16, 'single_t2c16_tt5_durationbug')])
def test_timed_runs_replay_their_recording(port, tmp_path, threads, clients,
                                           recording):
  out = tmp_path / 'r.json'
  proc = _Run(port, ['--ratio', '1:1', '--test-time', '2', '-t',
                     str(threads), '-c', str(clients), '--hide-histogram',
                     '--print-percentiles', '50,99,99.9',
                     '--json-out-file', str(out)])
  assert proc.returncode == 0, proc.stderr
  replayed = memtier_results.MemtierResult.FromOutputs(
      out.read_text(), proc.stdout, 2)
  with open(os.path.join(DATA, f'memtier_{recording}.json')) as f:
    text = f.read()
  with open(os.path.join(DATA, f'memtier_{recording}.txt')) as f:
    original = memtier_results.MemtierResult.FromOutputs(text, f.read(), 5)
  # Its first two seconds and their latencies, its percentiles, its bug.
  first_two = sum(s.count for s in original.totals.time_series[:2]) / 2
  assert replayed.throughput == pytest.approx(first_two, rel=0.001)
  assert replayed.p99_latency_ms == original.p99_latency_ms
  assert replayed.average_latency_ms == pytest.approx(
      original.average_latency_ms, rel=0.05)
  assert replayed.duration_bug_detected == original.duration_bug_detected
  assert replayed.duration_bug_detected == (threads == 2)


def test_percentiles_not_recorded_are_read_as_memtier_printed_them():
  """The stand-in's p90/p95 for recordings made without them: on a real run
  that printed them, the same derivation gives memtier's own figures."""
  with open(os.path.join(memtier_replay_output.DATA,
                         'memtier_single_t1c32_tt5_p90p95.json')) as f:
    printed = json.load(f)['ALL STATS']['Totals']['Percentile Latencies']
  recorded = {k: v for k, v in printed.items()
              if k not in ('p90.00', 'p95.00')}
  # pylint: disable-next=protected-access
  asked = memtier_replay_output._AskedPercentiles(
      {'percentiles': [50.0, 90.0, 95.0, 99.0, 99.9]}, recorded)
  assert asked == {k: v for k, v in printed.items() if k.startswith('p')}
