"""The load generators' password never reaches their argv (issue 10 point 3).

linux_packages/argv_secret.py compiles a preload library that swaps
argv_secret.TOKEN for the password inside the tool. These tests compile it
for real, run real redis-benchmark and memtier's replay stand-in
(tests/memtier_replay.py: a Python process the library is preloaded into
like any program, which logs in and writes its preload for real) against a
real redis-server on loopback that only accepts the load user's password,
read every process's /proc/<pid>/cmdline while they run, and check: the tool authenticated (it
moved data), no argv ever held the password, the token was what `ps` saw,
and without the library the tool fails on authentication instead of leaking.
"""

import os
import subprocess
import threading
import time

import pytest

import e2e_support
import memtier_replay
from perfkitbenchmarker import errors
from perfkitbenchmarker import measurement
from perfkitbenchmarker import redis_shard
from perfkitbenchmarker import virtual_machine
from perfkitbenchmarker.linux_packages import argv_secret
from perfkitbenchmarker.load_generators import base
from perfkitbenchmarker.load_generators import concurrent
from perfkitbenchmarker.load_generators import memtier
from perfkitbenchmarker.load_generators import redis_benchmark
from perfkitbenchmarker.providers.local import provider as local

# Every test here starts a process (tests/tier_guard.py).
pytestmark = pytest.mark.e2e

# Characters a shell or a C string could mishandle, on purpose.
PASSWORD = "argv 'secret' $HOME;\"pw\""
LOAD_PASSWORD = redis_shard.LoadPassword(PASSWORD)


class CmdlineSampler(threading.Thread):
  """Every distinct argv of every process, read from /proc every 20 ms."""

  def __init__(self):
    super().__init__(daemon=True)
    self.argvs = set()
    self.stop = threading.Event()

  def run(self):
    deadline = time.monotonic() + 120
    while not self.stop.is_set() and time.monotonic() < deadline:
      for pid in os.listdir('/proc'):
        if not pid.isdigit():
          continue
        try:
          with open(f'/proc/{pid}/cmdline', 'rb') as f:
            self.argvs.add(f.read().replace(b'\0', b' ').decode(
                errors='replace'))
        except OSError:
          pass
      self.stop.wait(0.02)


@pytest.fixture
def server():
  # The config on stdin: the passwords stay out of the server's own argv.
  with e2e_support.PasswordServer(PASSWORD) as (_, port):
    yield base.Endpoint('127.0.0.1', port)


def _Vm(scratch: str):
  vm = local.LocalVirtualMachine(
      virtual_machine.VmSpec(cloud='Local', machine_type='local', num_cpus=1),
      'clients-0', 'clients', run_uri='targv')
  vm.scratch_dir = scratch
  os.makedirs(scratch, mode=0o700)
  return vm


@pytest.fixture
def vm(tmp_path):
  e2e_support.RequireTool('cc', 'apt-get install gcc')
  # A space and a colon: LD_PRELOAD would split a plain path at either.
  return _Vm(str(tmp_path / 'pkb-scratch dir:x'))


def _Sampled(action):
  sampler = CmdlineSampler()
  sampler.start()
  try:
    return action(), sampler.argvs
  finally:
    sampler.stop.set()
    sampler.join(10)


def _AssertHidden(argvs, program):
  runs = [a for a in argvs if program in a and argv_secret.TOKEN in a]
  assert runs, f'never saw {program} running'
  leaks = [a for a in argvs if LOAD_PASSWORD in a or PASSWORD in a]
  assert not leaks, leaks[:2]


def test_redis_benchmark_authenticates_with_only_the_token_in_argv(
    server, vm):
  e2e_support.RequireTool('redis-benchmark', 'apt-get install redis-tools')
  generator = redis_benchmark.RedisBenchmarkGenerator(vm)
  workload = base.Workload(key_maximum=2000, data_size=16)
  m, argvs = _Sampled(lambda: generator.Probe(
      [server], PASSWORD, workload, measurement.Load(1, 4), duration_s=1))
  assert m.throughput > 0
  _AssertHidden(argvs, 'redis-benchmark')
  # The library and the environment carry it, nothing kept in the scratch.
  assert os.path.exists(argv_secret.LibraryPath(vm))
  for name in os.listdir(vm.scratch_dir):
    path = os.path.join(vm.scratch_dir, name)
    if os.path.isdir(path):  # The shipped scripts: the package's text.
      continue
    with open(path, 'rb') as f:
      assert LOAD_PASSWORD.encode() not in f.read(), name


def test_memtier_authenticates_with_only_the_token_in_argv(server, vm):
  path = memtier_replay.Path()
  generator = memtier.MemtierGenerator(vm, path)
  workload = base.Workload(key_maximum=2000, data_size=16)
  keys, argvs = _Sampled(lambda: generator.Preload(
      [server], PASSWORD, workload))
  assert keys == 2000
  _AssertHidden(argvs, 'memtier_benchmark')
  # The stand-in wrote them for real, logged in with the handed password.
  dbsize = subprocess.run(
      ['redis-cli', '-p', str(server.port), '--user', redis_shard.LOAD_USER,
       'DBSIZE'], capture_output=True, text=True, check=True,
      env=dict(os.environ, REDISCLI_AUTH=LOAD_PASSWORD)).stdout
  assert dbsize.strip() == '2000'
  m, argvs = _Sampled(lambda: generator.Probe(
      [server], PASSWORD, workload, measurement.Load(1, 2), duration_s=1))
  assert m.throughput > 0
  _AssertHidden(argvs, 'memtier_benchmark')
  # Without the library it sends the token itself, and the server refuses.
  bare = subprocess.run(
      [path, '-s', server.host, '-p', str(server.port), '-a',
       f'{redis_shard.LOAD_USER}:{argv_secret.TOKEN}', '--test-time', '1'],
      capture_output=True, text=True, timeout=30, check=False)
  assert bare.returncode == 1
  assert 'authentication failed' in bare.stderr


def test_without_the_library_the_tool_fails_closed(server, tmp_path):
  e2e_support.RequireTool('redis-benchmark', 'apt-get install redis-tools')
  vm = _Vm(str(tmp_path / 'pkb-nolib'))
  argv = ['redis-benchmark', '-h', server.host, '-p', str(server.port),
          '--user', redis_shard.LOAD_USER, '-a', argv_secret.TOKEN, '-t', 'set',
          '-n', '100', '-q']
  # A library that cannot load (not an ELF file): the loader skips it, the
  # tool sends the token itself as the password, and the server refuses it.
  vm.Install = lambda name: None
  with open(argv_secret.LibraryPath(vm), 'w') as f:
    f.write('not a shared object\n')
  # CheckTool refuses such a library before any probe (ld.so says so:
  # install_errors_name_vm_test); past that check the tool still fails
  # closed.
  vm.__dict__['_argv_secret_tools'] = {'redis-benchmark'}
  failure, argvs = _Sampled(lambda: pytest.raises(
      errors.ProcessError, concurrent.RunSideBySide, vm, 'nolib', [argv], 30,
      secret=LOAD_PASSWORD))
  message = str(failure.value)
  assert 'WRONGPASS' in message or 'AUTH' in message, message
  assert not [a for a in argvs if LOAD_PASSWORD in a]


def test_every_token_in_an_argument_is_replaced(vm, tmp_path):
  vm.Install('argv_secret')
  commands, setup = argv_secret.Wrap(
      vm, [['printf', '%s|', f'u:{argv_secret.TOKEN}',
            f'{argv_secret.TOKEN}{argv_secret.TOKEN}', 'plain']], 'pw')
  script = tmp_path / 'echo.sh'
  script.write_text('\n'.join(setup + commands) + '\n')
  out = subprocess.run(['bash', str(script)], capture_output=True, text=True,
                       check=True).stdout
  assert out == 'u:pw|pwpw|plain|'


def test_the_library_built_under_umask_000_is_the_runs_own(vm):  # pylint: disable=redefined-outer-name
  """With the caller's umask 000 the run refused the library it had just
  built as writable by others (issue 24 item 17)."""
  old = os.umask(0)
  try:
    argv_secret.Install(vm)
  finally:
    os.umask(old)
  assert argv_secret.IsInstalled(vm)
  assert os.stat(argv_secret.LibraryPath(vm)).st_mode & 0o022 == 0
