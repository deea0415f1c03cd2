"""argv_secret's limits: no environment holds the password, wrappers refused.

Real redis-benchmark processes on the probe path against a real
redis-server (the server and VM fixtures of argv_secret_test.py) while the /proc/<pid>/cmdline and
/proc/<pid>/environ of every process it starts are read every 10 ms: the password must be in none
of them (the probe script, `timeout`, `taskset`, `env` and the tool).
A wrapper given as the tool (a shell script, a #! line through `env`, a
Python launcher) is refused in one line before any probe; one that hides at
that check is killed by the library's filter before it starts anything; and
a library that is not the run's own is never loaded.
"""

import logging
import os
import subprocess
import sys
import threading
import time

import pytest

import e2e_support as e2e
from argv_secret_test import LOAD_PASSWORD, PASSWORD, server, vm  # pylint: disable=unused-import
from perfkitbenchmarker import errors
from perfkitbenchmarker import redis_shard
from perfkitbenchmarker.linux_packages import argv_secret
from perfkitbenchmarker.linux_packages import redis_server
from perfkitbenchmarker.load_generators import base
from perfkitbenchmarker.load_generators import concurrent
from perfkitbenchmarker.load_generators import redis_benchmark

# Every test here starts a process (tests/tier_guard.py).
pytestmark = pytest.mark.e2e


def _Descendants():
  """The PIDs (text) descending from this test process, now."""
  found, todo = [], [str(os.getpid())]
  while todo:
    pid = todo.pop()
    try:
      tasks = os.listdir(f'/proc/{pid}/task')
    except OSError:
      continue
    for task in tasks:
      try:
        with open(f'/proc/{pid}/task/{task}/children') as f:
          children = f.read().split()
      except OSError:
        continue
      found += children
      todo += children
  return found


class ProcSampler(threading.Thread):
  """The argv and environment of every process this test starts (other
  tests on the machine may use the same password), every 10 ms."""

  def __init__(self):
    super().__init__(daemon=True)
    self.seen = {}  # (pid, 'cmdline' or 'environ') -> bytes
    self.stop = threading.Event()

  def run(self):
    deadline = time.monotonic() + 60
    while not self.stop.is_set() and time.monotonic() < deadline:
      for pid in _Descendants():
        for what in ('cmdline', 'environ'):
          try:
            with open(f'/proc/{pid}/{what}', 'rb') as f:
              text = f.read()
          except OSError:
            continue
          self.seen.setdefault((pid, what), set()).add(text)
      self.stop.wait(0.005)


def _Sampled(action):
  sampler = ProcSampler()
  sampler.start()
  try:
    return action(), sampler
  finally:
    sampler.stop.set()
    sampler.join(10)


@e2e.NeedsTools('redis-benchmark', how='apt-get install redis-tools')
def test_no_argv_or_environment_holds_the_password(server, vm):
  # The probe path of every load generator (concurrent.RunSideBySide: the
  # 0600 script, `timeout`, `taskset`, `env`, the tool), with a short
  # request count rather than a timed probe.
  argv = ['redis-benchmark', '-h', server.host, '-p', str(server.port),
          '--user', redis_shard.LOAD_USER, '-a', argv_secret.TOKEN, '-t', 'set',
          '-n', '5000', '-c', '4', '-q']
  outputs, sampler = _Sampled(lambda: concurrent.RunSideBySide(
      vm, 'probe', [argv, argv], 60, secret=LOAD_PASSWORD))
  assert all('SET:' in o.stdout for o in outputs), outputs
  tool = [pid for (pid, what), texts in sampler.seen.items()
          if what == 'cmdline' and any(b'redis-benchmark' in t and
                                       argv_secret.TOKEN.encode() in t
                                       for t in texts)]
  assert tool, 'never saw redis-benchmark running'
  # Its environment was read too (the library's variables, no password).
  assert any((pid, 'environ') in sampler.seen for pid in tool)
  leaks = [(pid, what) for (pid, what), texts in sampler.seen.items()
           for t in texts
           if LOAD_PASSWORD.encode() in t or PASSWORD.encode() in t]
  assert not leaks, [(l, sampler.seen.get((l[0], 'cmdline'))) for l in leaks[:3]]


@pytest.mark.parametrize('shebang', ['#!/bin/bash', '#!/usr/bin/env bash',
                                     '#!/bin/sh -e'])
def test_a_wrapper_script_is_refused_before_any_probe(vm, tmp_path, shebang):
  marker = tmp_path / 'probe-ran'
  wrapper = tmp_path / 'memtier_benchmark'
  wrapper.write_text(f'{shebang}\n[ "$1" = --version ] || touch {marker}\n'
                     'exec printf %s "$@"\n')
  wrapper.chmod(0o755)
  with pytest.raises(errors.UsageError) as failure:
    concurrent.RunSideBySide(vm, 'wrapped', [[str(wrapper), argv_secret.TOKEN]],
                             10, secret=LOAD_PASSWORD)
  message = str(failure.value)
  assert '\n' not in message and 'is a wrapper' in message, message
  assert not marker.exists()


def test_the_run_refuses_a_wrapper_memtier_path(tmp_path):
  """As a user meets it: ./pkb.py with --memtier_path naming a shell
  script around memtier fails in one line before the run starts."""
  import memtier_replay  # pylint: disable=g-import-not-at-top
  wrapper = tmp_path / 'memtier-wrapper.sh'
  wrapper.write_text(f'#!/bin/bash\nexec {memtier_replay.Path()} "$@"\n')
  wrapper.chmod(0o755)
  results = str(tmp_path / 'results')
  proc, run_uri = e2e.Run([f'--memtier_path={wrapper}',
                           '--load_generator=memtier'] + e2e.FAST,
                          results)
  assert proc.returncode != 0
  lines = proc.stderr.splitlines()
  assert len(lines) == 1 and 'is a wrapper' in lines[0], proc.stderr
  # Refused before the run exists (memtier.CheckLocalPath, as a dry run
  # refuses it): no record, no shard.
  assert not os.path.exists(os.path.join(results, run_uri))


def test_an_interpreter_script_gets_it_but_starts_nothing(vm, tmp_path):
  """A script whose #! names a language interpreter directly (the tests'
  memtier stand-in is one) gets the password inside that interpreter; had
  it started any program at all, even one without the password in its
  arguments, the library's filter would have killed it."""
  script = tmp_path / 'tool.py'
  script.write_text(
      f'#!{sys.executable}\nimport os, sys\n'
      'if sys.argv[1:] == ["--version"]:\n'
      '  sys.exit(print("tool 1.0"))\n'
      'sys.stdout.write(sys.argv[1])\n'
      'sys.stdout.flush()\n'
      'if len(sys.argv) > 2:\n'
      '  os.execv("/bin/true", ["true"])\n')
  script.chmod(0o755)
  (outputs, ), sampler = _Sampled(lambda: concurrent.RunSideBySide(
      vm, 'interpreted', [[str(script), f'u:{argv_secret.TOKEN}']], 30,
      secret=LOAD_PASSWORD))
  assert outputs.stdout == f'u:{LOAD_PASSWORD}', outputs
  assert not [k for k, texts in sampler.seen.items() for t in texts
              if LOAD_PASSWORD.encode() in t]
  with pytest.raises(errors.ProcessError):
    concurrent.RunSideBySide(
        vm, 'interpreted2', [[str(script), argv_secret.TOKEN, 'exec']], 30,
        secret=LOAD_PASSWORD)


def _EnvWrapper(path, tool, hide_at_version=False):
  """The audited wrapper (issue 24 point 4): a Python #! script passing its
  arguments through the environment to `sh -c`, which puts them (with the
  password) in the real tool's argv. With hide_at_version it answers
  --version itself, so only a real run starts the shell."""
  hide = ('if sys.argv[1:] == ["--version"]:\n'
          '  sys.exit(print("memtier_benchmark 2.4.4"))\n'
          if hide_at_version else '')
  path.write_text(
      f'#!{sys.executable}\nimport os, shlex, sys\n{hide}'
      'os.environ["PKB_ARGS"] = " ".join(sys.argv[1:])\n'
      f'os.execv("/bin/sh", ["sh", "-c", "exec {tool} $PKB_ARGS"])\n')
  path.chmod(0o755)
  return str(path)


def _RedisBenchmarkArgv(program, server):  # pylint: disable=redefined-outer-name
  return [program, '-h', server.host, '-p', str(server.port), '--user',
          redis_shard.LOAD_USER, '-a', argv_secret.TOKEN, '-t', 'set', '-n',
          '20000', '-c', '4', '-q']


def _SampledFailure(error, wrapper, server, vm):  # pylint: disable=redefined-outer-name
  """(the `error` a probe of `wrapper` raised, the sampler that watched)."""
  sampler = ProcSampler()
  sampler.start()
  try:
    with pytest.raises(error) as raised:
      concurrent.RunSideBySide(
          vm, 'wrapped', [_RedisBenchmarkArgv(wrapper, server)], 60,
          secret=LOAD_PASSWORD)
  finally:
    sampler.stop.set()
    sampler.join(10)
  return raised.value, sampler


def _Leaks(sampler):
  return [(pid, what) for (pid, what), texts in sampler.seen.items()
          for t in texts
          if LOAD_PASSWORD.encode() in t or PASSWORD.encode() in t]


@e2e.NeedsTools('redis-benchmark', how='apt-get install redis-tools')
def test_a_python_wrapper_passing_arguments_through_the_environment_is_refused(
    server, vm, tmp_path):
  """On 90140b1 the wrapper got the password, exported it and exec'd
  `sh -c`, which started redis-benchmark with `-a pkb-load:<password>` in
  its argv (the guard checked arguments only). Now the check's run with a
  throwaway password finds it starting a shell: one line, no probe, and no
  process ever shows the password."""
  wrapper = _EnvWrapper(tmp_path / 'memtier_benchmark', 'redis-benchmark')
  refused, sampler = _SampledFailure(errors.UsageError, wrapper, server, vm)
  message = str(refused)
  assert '\n' not in message and 'is a wrapper' in message, message
  assert not _Leaks(sampler), _Leaks(sampler)[:3]


@e2e.NeedsTools('redis-benchmark', how='apt-get install redis-tools')
def test_a_wrapper_that_hides_at_the_check_still_passes_nothing_on(
    server, vm, tmp_path):
  """The filter, not only the check: a wrapper that answers --version itself
  gets the password in a probe, and is killed as it starts its shell."""
  wrapper = _EnvWrapper(tmp_path / 'memtier_benchmark', 'redis-benchmark',
                        hide_at_version=True)
  failed, sampler = _SampledFailure(errors.ProcessError, wrapper, server, vm)
  del failed
  assert not any(b'redis-benchmark' in t for (_, what), texts in
                 sampler.seen.items() if what == 'cmdline' for t in texts)
  assert not _Leaks(sampler), _Leaks(sampler)[:3]


def test_the_run_refuses_a_python_wrapper_memtier_path(tmp_path):
  """As a user meets it: ./pkb.py --memtier_path=<the audited Python
  wrapper around memtier> fails in one line before the run starts."""
  import memtier_replay  # pylint: disable=g-import-not-at-top
  wrapper = _EnvWrapper(tmp_path / 'memtier-wrapper.py',
                        memtier_replay.Path())
  results = str(tmp_path / 'results')
  proc, run_uri = e2e.Run([f'--memtier_path={wrapper}',
                           '--load_generator=memtier'] + e2e.FAST,
                          results)
  assert proc.returncode != 0
  lines = proc.stderr.splitlines()
  assert len(lines) == 1 and 'is a wrapper' in lines[0], proc.stderr
  # Refused before the run exists, as a dry run refuses it.
  assert not os.path.exists(os.path.join(results, run_uri))


def test_the_filter_stops_every_way_to_start_a_program(vm):
  """Handed the password, bash cannot exec (or run) a program, nor can
  Python through execv, execlp, posix_spawnp or a raw execve system call:
  the process is killed first, and nothing but it saw the password."""
  vm.Install('argv_secret')
  library = argv_secret.LibraryPath(vm)
  python = sys.executable
  attempts = {
      'bash': ['bash', '-c', 'printf %s "$1"; exec printf %s "$1"', '-'],
      'bash child': ['bash', '-c', '/usr/bin/printf %s "$1"; echo "|went on"',
                     '-'],
      'execv': [python, '-c', 'import os, sys; os.execv('
                '"/usr/bin/printf", ["printf", sys.argv[1]])'],
      'execlp': [python, '-c', 'import os, sys; os.execlp('
                 '"printf", "printf", sys.argv[1])'],
      # The spawned child dies, not the caller: it prints the child's status.
      'posix_spawnp': [python, '-c', 'import os, sys; print(os.waitstatus_'
                       'to_exitcode(os.waitpid(os.posix_spawnp("printf", '
                       '["printf", sys.argv[1]], {}), 0)[1]))'],
      'syscall': [python, '-c', 'import ctypes, sys; libc = ctypes.CDLL(None);'
                  'a = (ctypes.c_char_p * 3)(b"printf", sys.argv[1].encode(),'
                  ' None); libc.syscall(59 if __import__("platform").machine()'
                  ' == "x86_64" else 221, b"/usr/bin/printf", a, None)'],
  }
  for name, argv in attempts.items():
    proc = subprocess.run(
        ['bash', '-c', 'lib=$1; shift; env LD_PRELOAD=/proc/self/fd/9 '
         f'{argv_secret.FD_ENV}=8 "$@" {argv_secret.TOKEN} 9<"$lib" '
         '8< <(printf pw)', '-', library, *argv],
        capture_output=True, text=True, timeout=30)
    if name == 'posix_spawnp':
      assert proc.stdout == '-31\n', (name, proc)
    elif name == 'bash child':
      # The forked child dies; the shell itself goes on without it.
      assert proc.stdout == '|went on\n', (name, proc)
      assert 'Bad system call' in proc.stderr, (name, proc.stderr)
    else:
      assert proc.returncode == argv_secret.KILLED_STATUS, (name, proc)
      assert proc.stdout in ('', 'pw'), (name, proc.stdout)


def test_a_library_others_can_write_is_never_loaded(vm):
  vm.Install('argv_secret')
  os.chmod(argv_secret.LibraryPath(vm), 0o666)
  with pytest.raises(errors.UsageError, match='not the run\'s own'):
    argv_secret.Wrap(vm, [['printf', argv_secret.TOKEN]], 'pw')


@e2e.NeedsTools('redis-server', 'redis-cli', how='./scripts/setup.sh')
def test_the_preload_logs_in_from_its_stream(vm):
  """redis-cli --pipe (the redis-benchmark path's preload) reads an AUTH
  from its stdin: its environment never holds the run's password."""
  port = e2e.FreePort()
  server_proc = subprocess.Popen(
      ['redis-server', '-'], stdin=subprocess.PIPE,
      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, text=True)
  server_proc.stdin.write(f'port {port}\nbind 127.0.0.1\nsave ""\n'
                          f'requirepass {redis_server.ConfigQuote(PASSWORD)}\n')
  server_proc.stdin.close()
  cli = ['redis-cli', '-p', str(port), '--no-auth-warning']
  auth = dict(os.environ, REDISCLI_AUTH=PASSWORD)
  try:
    deadline = time.monotonic() + 10
    while subprocess.run(cli + ['PING'], capture_output=True, text=True,
                         env=auth).stdout.strip() != 'PONG':
      assert time.monotonic() < deadline
      time.sleep(0.05)
    generator = redis_benchmark.RedisBenchmarkGenerator(vm)
    workload = base.Workload(key_maximum=20000, data_size=16)
    keys, sampler = _Sampled(lambda: generator.Preload(
        [base.Endpoint('127.0.0.1', port)], PASSWORD, workload))
    assert keys == 20000
    assert subprocess.run(cli + ['DBSIZE'], capture_output=True, text=True,
                          env=auth).stdout.strip() == '20000'
    pipes = [pid for (pid, what), texts in sampler.seen.items()
             if what == 'cmdline' and any(b'--pipe' in t for t in texts)]
    assert pipes, 'never saw redis-cli --pipe running'
    leaks = [pid for pid in pipes for t in sampler.seen.get((pid, 'environ'),
                                                            ())
             if PASSWORD.encode() in t]
    assert not leaks
  finally:
    server_proc.terminate()
    server_proc.wait(timeout=10)
