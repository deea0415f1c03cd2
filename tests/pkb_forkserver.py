"""./pkb.py runs for the tests, each in a process forked from one that has
already imported pkb.

Why: process accounting over a whole suite (acct(5)) counted 607 python
processes started by the pytest workers, 0.6 CPU-s each, 0.4 of it the
package's import. A suite now makes about 335 runs this way from about 50
servers: 917 -> 827 CPU-s, 576 -> 527 s of wall time, side by side on a
quiet 2-core machine.

`Run` is subprocess.run for a blocking run; `Popen` is subprocess.Popen for
a run the test reads or signals while it runs, and gives a Popen: its pid
is the run's own process (a signal sent to it reaches pkb's handlers as it
would a fresh interpreter's), and poll, wait, communicate, send_signal and
the pipes are Popen's own, the exit status coming from the server instead
of waitpid. The server holds an ended run unreaped (a zombie, as a Popen's
child is) until the test has read its status, so a late signal never
reaches another process under a reused pid.

What a run keeps of `python pkb.py ARGS`: a process of its own (its own
pid, exit status, and fds 0-2, the caller's stdin and two pipes, or what
the Popen was given), the cwd, umask and environment given, a session of
its own with start_new_session, pkb.py's own top-level code (its signal
handlers, the venv check, Main), and Python's exit (SystemExit's code, an
uncaught exception's traceback and status 1, non-daemon threads joined,
atexit handlers, KeyboardInterrupt's death by SIGINT). What differs: the
modules were imported before the call, in the server's environment, so a
server is kept per environment (every variable but those read only at call
time, `_READ_AT_CALL`): a variable pkb reads on import (PKB_BENCHMARK_DIRS,
PKB_LOCAL_SCRATCH, PYTHON*, the locale) gets a server that imported under
it. /proc/<pid>/cmdline is the server's, and the run's parent is the server,
not the test. A test about the interpreter's own start (its imports, a
signal during them) or that reads the run's command line starts pkb.py with
subprocess.

PKB_TEST_FORKSERVER=0 runs each run as a plain subprocess instead.
"""

import atexit
import collections
import importlib
import json
import os
import runpy
import signal
import socket
import subprocess
import sys
import threading
import traceback
from typing import Optional

import tier_guard

# Variables pkb reads when it uses them, never on import; a change in
# them needs no server of its own (PKB_KEY_DIR is set per test).
_READ_AT_CALL = frozenset({'PKB_KEY_DIR', 'PYTEST_CURRENT_TEST'})
_MAX_SERVERS = 3  # Idle, per pytest worker.
_MESSAGE = 1 << 20
_REAP = b'reap'
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PKB = os.path.join(REPO, 'pkb.py')
# The entry scripts run this way -> what their server imports first.
PRELOADS = {
    PKB: 'perfkitbenchmarker.pkb',
    os.path.join(REPO, 'scripts', 'compare.py'):
        'perfkitbenchmarker.results_history.compare_cli',
    os.path.join(REPO, 'scripts', 'recompute.py'): 'perfkitbenchmarker.recompute',
}
# The Popen arguments a forked run honours as a started one does (the rest,
# preexec_fn, pass_fds, user, ..., would need the exec: such a run starts).
_FORKABLE = frozenset({'stdin', 'stdout', 'stderr', 'text',
                       'universal_newlines', 'encoding', 'errors', 'bufsize',
                       'cwd', 'env', 'start_new_session'})


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
    if request['new_session']:
      os.setsid()
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


def _ReturnCode(ended: os.waitid_result) -> int:
  """Popen's returncode for waitid's answer: the exit status, or minus the
  signal that ended the run."""
  if ended.si_code == os.CLD_EXITED:
    return ended.si_status
  return -ended.si_status


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
    try:
      channel.send(json.dumps({'pid': pid}).encode())
      ended = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)
      channel.send(json.dumps({'returncode': _ReturnCode(ended)}).encode())
      reaped = channel.recv(_MESSAGE) == _REAP
    except OSError:  # The worker is gone.
      reaped = False
    os.waitpid(pid, 0)
    if not reaped:
      return


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

  def Start(self, argv, env, cwd, fds, new_session) -> int:
    """Forks the run with `fds` as its 0, 1 and 2; its pid."""
    socket.send_fds(self.channel, [json.dumps(dict(
        argv=list(argv), env=env, cwd=cwd, umask=_Umask(),
        new_session=bool(new_session))).encode()], fds)
    return self._Reply()['pid']

  def Ended(self, block: bool) -> Optional[int]:
    """The run's returncode once it has ended, else None (`block`: waits
    for its end)."""
    try:
      return self._Reply(0 if block else socket.MSG_DONTWAIT)['returncode']
    except BlockingIOError:
      return None

  def Reap(self) -> None:
    """Lets the server reap the ended run and take the next."""
    self.channel.send(_REAP)

  def _Reply(self, flags=0) -> dict:
    reply = self.channel.recv(_MESSAGE, flags)
    if not reply:
      raise ChildProcessError(f'the fork server {self.proc.pid} ended')
    return json.loads(reply)


def _Umask() -> int:
  mask = os.umask(0o022)
  os.umask(mask)
  return mask


def _WaitStatus(returncode: int) -> int:
  """The waitpid status that Popen turns into `returncode`."""
  return returncode << 8 if returncode >= 0 else -returncode


class _Forked(subprocess.Popen):
  """A Popen whose process a server forks: Popen starts a process and
  waits for it through _execute_child, _try_wait and _internal_poll; these
  ask the server instead (the process is its child, not this one's).
  Everything else (the pipes, communicate, wait's timeout, send_signal's
  check that the run has not ended) is Popen's own."""

  def __init__(self, server: _Server, key: tuple, argv, **kwargs):
    self._server, self._key = server, key
    super().__init__(argv, **kwargs)

  def _execute_child(self, args, executable, preexec_fn, close_fds,
                     pass_fds, cwd, env, startupinfo, creationflags, shell,
                     p2cread, p2cwrite, c2pread, c2pwrite, errread, errwrite,
                     restore_signals, gid, gids, uid, umask,
                     start_new_session, *unused):
    # -1: not redirected, the run has this process's own fd.
    fds = [fd if fd != -1 else target
           for target, fd in enumerate((p2cread, c2pwrite, errwrite))]
    try:
      self.pid = self._server.Start(
          args, dict(os.environ if env is None else env),
          os.path.abspath(os.fspath(cwd) if cwd is not None else '.'),
          fds, start_new_session)
      self._child_created = True
    except BaseException:
      self._server.Close()  # Its channel may hold a reply no one reads.
      raise
    finally:
      self._close_pipe_fds(p2cread, p2cwrite, c2pread, c2pwrite, errread,
                           errwrite)

  def _try_wait(self, wait_flags):
    returncode = self._server.Ended(block=not wait_flags & os.WNOHANG)
    if returncode is None:
      return 0, 0
    self._server.Reap()
    _Give(self._key, self._server)
    self._server = None  # The next run's now.
    return self.pid, _WaitStatus(returncode)

  def _internal_poll(self, _deadstate=None, **unused):
    if self.returncode is None and self._waitpid_lock.acquire(False):
      try:
        if self.returncode is None:
          pid, status = self._try_wait(os.WNOHANG)
          if pid == self.pid:
            self._handle_exitstatus(status)
      except ChildProcessError:
        if _deadstate is None:
          raise
        self.returncode = _deadstate
      finally:
        self._waitpid_lock.release()
    return self.returncode


# Idle servers, least recently used first: (environment key, server). A
# server serves one run at a time; runs side by side take one each.
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


def Popen(argv, **kwargs) -> subprocess.Popen:
  """subprocess.Popen(argv, **kwargs), forked from a server when argv is
  [sys.executable, one of PRELOADS, ...] and kwargs are all _FORKABLE;
  anything else is started."""
  script = argv[1] if len(argv) > 1 else None
  if (not Enabled() or argv[0] != sys.executable or script not in PRELOADS
      or not kwargs.keys() <= _FORKABLE):
    return subprocess.Popen(argv, **kwargs)
  tier_guard.GUARD.Started(f'ran {" ".join(argv[1:4])[:120]}')
  env = dict(os.environ if kwargs.get('env') is None else kwargs['env'])
  key = _Key(script, env)
  return _Forked(_Take(key, script, env), key, argv, **kwargs)


def Run(argv, env=None, cwd=None, timeout=None, check=False):
  """subprocess.run(argv, capture_output=True, text=True, ...) through
  Popen: a CompletedProcess, or subprocess.TimeoutExpired (the run killed
  and read to its end, as subprocess.run does)."""
  with Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
             env=env, cwd=cwd) as proc:
    try:
      out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
      proc.kill()
      out, err = proc.communicate()
      raise subprocess.TimeoutExpired(argv, timeout, out, err) from None
    except BaseException:
      proc.kill()
      raise
  done = subprocess.CompletedProcess(argv, proc.returncode, out, err)
  if check:
    done.check_returncode()
  return done


@atexit.register
def _CloseAll():
  while _idle:
    _idle.pop()[1].Close()


if __name__ == '__main__':
  _Serve(int(sys.argv[1]), sys.argv[2], sys.argv[3])
