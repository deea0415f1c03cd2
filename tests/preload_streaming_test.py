"""The preload is streamed to redis-cli --pipe, never built whole in memory.

Issue 10 point 9: 50M keys hit MemoryError under 3 GB when the RESP text was
one string. A real preload of 2M keys on loopback must keep pkb's peak RSS
growth well under the size of that text (~200 MB here).
"""

import os
import subprocess
import sys
import textwrap

import pytest

import e2e_support

from perfkitbenchmarker import vm_util
from perfkitbenchmarker.load_generators import base
from perfkitbenchmarker.load_generators import commands

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KEYS = 2_000_000
MAX_GROWTH_MB = 100


def _RequireRedisTools():
  e2e_support.RequireTool('redis-server', 'apt-get install redis-server')
  e2e_support.RequireTool('redis-cli', 'apt-get install redis-tools')


def test_resp_stream_chunks_are_bounded_and_complete():
  stream = commands.RespStream('key:', 0, 9999, 50, width=12,
                               chunk_bytes=4096)
  chunks = list(stream)
  one = len(next(commands.RespSetCommands('key:', 0, 0, 50, width=12)))
  assert len(chunks) > 100
  assert all(len(c) < 4096 + one for c in chunks)
  # Every command whole in one chunk, in order, all keys exactly once.
  assert all(c.startswith('*3\r\n') and c.endswith('\r\n') for c in chunks)
  assert ''.join(chunks) == ''.join(
      commands.RespSetCommands('key:', 0, 9999, 50, width=12))
  # Re-iterable: an SSH retry sends the same text again.
  assert list(stream) == chunks
  with pytest.raises(ValueError):
    commands.RespStream('k', 0, 1, 1, chunk_bytes=0)


def test_preload_resp_is_a_stream_not_a_string():
  resp = commands.RedisBenchmarkPreloadResp(
      base.Workload(key_minimum=1, key_maximum=3, data_size=5))
  assert not isinstance(resp, str)
  assert ''.join(resp).count('*3\r\n') == 3


@pytest.mark.e2e
def test_run_local_streams_chunks_to_stdin_and_reads_all_output():
  chunks = (f'{i:06d}\n' * 1000 for i in range(300))  # ~2 MB, > pipe buffer
  out, err, rc = vm_util.RunLocal('wc -l; echo done >&2', stdin=chunks,
                                  timeout=60)
  assert (out.strip(), err.strip(), rc) == ('300000', 'done', 0)


@pytest.mark.e2e
def test_run_local_streaming_times_out_and_kills_the_command():
  def Endless():
    for _ in range(10**9):
      yield 'x' * 4096
  _, _, rc = vm_util.RunLocal('sleep 30', stdin=Endless(), timeout=1)
  assert rc == -9


_SCRIPT = textwrap.dedent('''
    import resource
    import sys
    sys.path.insert(0, {repo!r})
    from perfkitbenchmarker import vm_util
    from perfkitbenchmarker.load_generators import base
    from perfkitbenchmarker.load_generators import redis_benchmark


    class Vm:
      """Runs commands on this machine the way the Local VM does."""
      name = 'local'
      scratch_dir = {scratch!r}  # Where a probe records its process group.

      def RemoteCommand(self, command, timeout=None, ignore_failure=False,
                        env=None, what=None, stdin=None):
        out, err, rc = vm_util.RunLocal(command, timeout=timeout, env=env,
                                        stdin=stdin)
        vm_util.CheckedOutput(out, err, rc, command, what)
        return out, err


    generator = redis_benchmark.RedisBenchmarkGenerator(Vm())
    workload = base.Workload(key_minimum=1, key_maximum={keys}, data_size=32)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    loaded = generator.Preload([base.Endpoint('127.0.0.1', {port})],
                               {password!r}, workload)
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(loaded, (after - before) / 1024.0)
''')


@pytest.mark.e2e
@pytest.mark.usefixtures('shipped_scripts')  # The probe's group mark.
def test_preload_of_2m_keys_keeps_peak_rss_growth_small(tmp_path):
  _RequireRedisTools()
  import load_generator_commands_test as redis_fixture  # pylint: disable=g-import-not-at-top
  password = 'streaming-test-pw'
  port = redis_fixture._FreePort()  # pylint: disable=protected-access
  server = subprocess.Popen(
      ['redis-server', '--port', str(port), '--bind', '127.0.0.1',
       '--save', '', '--appendonly', 'no', '--requirepass', password,
       '--dir', str(tmp_path)],
      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
  env = dict(os.environ, REDISCLI_AUTH=password)
  try:
    for _ in range(100):
      ping = subprocess.run(['redis-cli', '-p', str(port), 'ping'],
                            capture_output=True, text=True, check=False,
                            env=env)
      if ping.stdout.strip() == 'PONG':
        break
      server.poll()
      assert server.returncode is None, 'redis-server exited'
      subprocess.run(['sleep', '0.05'], check=True)
    script = _SCRIPT.format(repo=REPO, keys=KEYS, port=port,
                            password=password, scratch=str(tmp_path))
    result = subprocess.run([sys.executable, '-c', script],
                            capture_output=True, text=True, timeout=300,
                            check=False)
    assert result.returncode == 0, result.stderr[-2000:]
    loaded, growth_mb = result.stdout.split()
    assert int(loaded) == KEYS
    dbsize = subprocess.run(['redis-cli', '-p', str(port), 'dbsize'],
                            capture_output=True, text=True, check=True,
                            env=env).stdout.strip()
    assert dbsize == str(KEYS)
    assert float(growth_mb) < MAX_GROWTH_MB, (
        f'peak RSS grew {float(growth_mb):.0f} MB during the preload')
  finally:
    server.terminate()
    server.wait(timeout=10)
