"""./pkb.py runs for the tests, each in a process forked from one that has
already imported pkb.

Why: process accounting over a whole suite (acct(5)) counted 607 python
processes started by the pytest workers, 0.6 CPU-s each, 0.4 of it the
package's import. A suite now makes about 335 runs this way from about 50
servers: 917 -> 827 CPU-s, 576 -> 527 s of wall time, side by side on a
quiet 2-core machine.

What a run keeps of `python pkb.py ARGS`: a process of its own (its own
pid, exit status, and fds 0-2, the caller's stdin and two pipes), the cwd,
umask and environment given, pkb.py's own top-level code (its signal
handlers, the venv check, Main), and Python's exit (SystemExit's code, an
uncaught exception's traceback and status 1, non-daemon threads joined,
atexit handlers, KeyboardInterrupt's death by SIGINT). What differs: the
modules were imported before the call, in the server's environment, so a
server is kept per environment (every variable but those read only at call
time, `_READ_AT_CALL`): a variable pkb reads on import (PKB_BENCHMARK_DIRS,
PKB_LOCAL_SCRATCH, PYTHON*, the locale) gets a server that imported under
it. /proc/<pid>/cmdline is the server's. Tests that signal a run, or read
it while it runs, start pkb.py itself (e2e_support.Background and the like).

PKB_TEST_FORKSERVER=0 runs each run as a plain subprocess instead.
"""

import atexit
import collections
import importlib
import json
import os
import runpy
import selectors
import signal
import socket
import subprocess
import sys
import threading
import time
import traceback

import tier_guard

# Variables pkb reads when it uses them, never on import; a change in
# them needs no server of its own (PKB_KEY_DIR is set per test).
_READ_AT_CALL = frozenset({'PKB_KEY_DIR', 'PYTEST_CURRENT_TEST'})
_MAX_SERVERS = 3  # Idle, per pytest worker.
_MESSAGE = 1 << 20
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PKB = os.path.join(REPO, 'pkb.py')
# The entry scripts run this way -> what their server imports first.
PRELOADS = {
    PKB: 'perfkitbenchmarker.pkb',
    os.path.join(REPO, 'scripts', 'compare.py'):
        'perfkitbenchmarker.results_history.compare_cli',
    os.path.join(REPO, 'scripts', 'recompute.py'): 'perfkitbenchmarker.recompute',
}


def Enabled() -> bool:
  return os.environ.get('PKB_TEST_FORKSERVER', '1') != '0'


# The server ------------------------------------------------------------------


def _ExitCode(code) -> int:
  """The status Python exits with for SystemExit(code)."""
  if code is None:
    return 0
  if isinstance(code, int):
    return code & 0xff
  sys.stderr.write(f'{code}\n')
  return 1


def _PrintUncaught(script: str) -> None:
  """The traceback Python prints, from the script's frame on (not runpy's
  or this module's)."""
  kind, error, frames = sys.exc_info()
  while frames is not None and frames.tb_frame.f_code.co_filename != script:
    frames = frames.tb_next
  sys.excepthook(kind, error.with_traceback(frames), frames)


def _RunAsMain(request, fds) -> None:
  """In the forked child: become `python argv[1:]` and never return."""
  interrupted = False
  try:
    for target, fd in enumerate(fds):
      os.dup2(fd, target)
    for fd in fds:
      if fd > 2:
        os.close(fd)
    os.chdir(request['cwd'])
    os.umask(request['umask'])
    os.environ.clear()
    os.environ.update(request['env'])
    script = request['argv'][1]
    sys.argv = list(request['argv'][1:])
    sys.path[0] = os.path.dirname(os.path.abspath(script))
    try:
      runpy.run_path(script, run_name='__main__')
      code = 0
    except SystemExit as e:
      code = _ExitCode(e.code)
    except KeyboardInterrupt:
      _PrintUncaught(script)
      interrupted, code = True, 1
    except BaseException:  # pylint: disable=broad-except
      _PrintUncaught(script)
      code = 1
    # Python's own exit: threads, then atexit, then the streams.
    threading._shutdown()  # pylint: disable=protected-access
    atexit._run_exitfuncs()  # pylint: disable=protected-access
    for stream in (sys.stdout, sys.stderr):
      try:
        stream.flush()
      except Exception:  # pylint: disable=broad-except
        code = code or 120
    if interrupted:
      signal.signal(signal.SIGINT, signal.SIG_DFL)
      os.kill(os.getpid(), signal.SIGINT)
  except BaseException:  # pylint: disable=broad-except
    traceback.print_exc()
    code = 1
  os._exit(code)  # pylint: disable=protected-access


def _Serve(fd: int, script: str, module: str) -> None:
  channel = socket.socket(fileno=fd)
  # As `python SCRIPT` has it: the script's directory first; the entry
  # scripts put the checkout before it, so its own package is imported.
  sys.path[0] = os.path.dirname(script)
  sys.path.insert(0, REPO)
  importlib.import_module(module)
  del sys.path[0]
  while True:
    message, fds, _, _ = socket.recv_fds(channel, _MESSAGE, 3)
    if not message:
      return  # The worker is gone.
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
      channel.close()
      _RunAsMain(json.loads(message), fds)
    for passed in fds:
      os.close(passed)
    channel.send(json.dumps({'pid': pid}).encode())
    _, status = os.waitpid(pid, 0)
    channel.send(json.dumps(
        {'returncode': os.waitstatus_to_exitcode(status)}).encode())


# The client, in the pytest worker -----------------------------------------------


class _Server:
  """A server process started with `env`, and the channel to it."""

  def __init__(self, script, env):
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    self.proc = subprocess.Popen(
        [sys.executable, os.path.abspath(__file__), str(theirs.fileno()),
         script, PRELOADS[script]],
        pass_fds=[theirs.fileno()], env=env, stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL)
    theirs.close()
    self.channel = ours

  def Close(self):
    self.channel.close()  # The server ends on the end of its channel.
    try:
      self.proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
      self.proc.kill()
      self.proc.wait()

  def Run(self, argv, env, cwd, timeout):
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    try:
      socket.send_fds(self.channel, [json.dumps(dict(
          argv=list(argv), env=env, cwd=cwd, umask=_Umask())).encode()],
                      [0, out_w, err_w])
    finally:
      os.close(out_w)
      os.close(err_w)
    pid = json.loads(self.channel.recv(_MESSAGE))['pid']
    out, err, timed_out = _ReadBoth(out_r, err_r, pid, timeout)
    returncode = json.loads(self.channel.recv(_MESSAGE))['returncode']
    out, err = _Text(out), _Text(err)
    if timed_out:
      raise subprocess.TimeoutExpired(argv, timeout, out, err)
    return subprocess.CompletedProcess(argv, returncode, out, err)


def _Umask() -> int:
  mask = os.umask(0o022)
  os.umask(mask)
  return mask


def _Text(data: bytes) -> str:
  """As subprocess.run(text=True) decodes."""
  return data.decode().replace('\r\n', '\n').replace('\r', '\n')


def _ReadBoth(out_fd, err_fd, pid, timeout):
  """Both pipes to their end; the run is killed past `timeout` (its
  output is still read to the end, as subprocess.run does)."""
  chunks = {out_fd: [], err_fd: []}
  deadline = None if timeout is None else time.monotonic() + timeout
  timed_out = False
  with selectors.DefaultSelector() as selector:
    for fd in chunks:
      selector.register(fd, selectors.EVENT_READ)
    while selector.get_map():
      left = (None if timed_out or deadline is None else
              deadline - time.monotonic())
      if left is not None and left <= 0:
        timed_out = True
        os.kill(pid, signal.SIGKILL)  # Not reaped yet: still this run.
        continue
      for key, _ in selector.select(left):
        data = os.read(key.fd, 65536)
        if data:
          chunks[key.fd].append(data)
        else:
          selector.unregister(key.fd)
          os.close(key.fd)
  return b''.join(chunks[out_fd]), b''.join(chunks[err_fd]), timed_out


# Idle servers, least recently used first: (environment key, server). A
# server serves one run at a time; runs side by side (threads) take one each.
_idle: 'collections.deque' = collections.deque()
_lock = threading.Lock()


def _Key(script, env) -> tuple:
  return (script,) + tuple(sorted((k, v) for k, v in env.items()
                                  if k not in _READ_AT_CALL))


def _Take(key, script, env) -> _Server:
  with _lock:
    for entry in list(_idle):
      if entry[0] == key:
        _idle.remove(entry)
        if entry[1].proc.poll() is None:
          return entry[1]
  return _Server(script, env)


def _Give(key, server: _Server) -> None:
  with _lock:
    _idle.append((key, server))
    old = [_idle.popleft() for _ in range(len(_idle) - _MAX_SERVERS)]
  for _, server in old:
    server.Close()


def Run(argv, env=None, cwd=None, timeout=None, check=False):
  """subprocess.run(argv, capture_output=True, text=True, ...): a
  CompletedProcess, or subprocess.TimeoutExpired. Forked from a server
  when argv is [sys.executable, one of PRELOADS, ...]; anything else is
  started."""
  env = dict(os.environ if env is None else env)
  cwd = os.path.abspath(cwd or os.getcwd())
  script = argv[1] if len(argv) > 1 else None
  if not Enabled() or argv[0] != sys.executable or script not in PRELOADS:
    return subprocess.run(argv, capture_output=True, text=True,
                          timeout=timeout, env=env, cwd=cwd, check=check)
  tier_guard.GUARD.Started(f'ran {" ".join(argv[1:4])[:120]}')
  key = _Key(script, env)
  server = _Take(key, script, env)
  try:
    done = server.Run(argv, env, cwd, timeout)
  except BaseException:
    server.Close()  # Its channel may hold a reply no one reads.
    raise
  _Give(key, server)
  if check:
    done.check_returncode()
  return done


@atexit.register
def _CloseAll():
  while _idle:
    _idle.pop()[1].Close()


if __name__ == '__main__':
  _Serve(int(sys.argv[1]), sys.argv[2], sys.argv[3])
