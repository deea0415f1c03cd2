#!/usr/bin/env python3
"""Counts where a run's passwords show in process arguments and environments.

  ./scripts/secrets_exposure.py [pkb flags...]
  ./scripts/secrets_exposure.py --memtier_run_duration=2 --memtier_max_probes=6

Runs `./pkb.py` (Local, its own scratch root and results directory under a
temporary directory, removed after) with the given flags and, once the
first shard's config file exists, reads every process's /proc/<pid>/cmdline
and /proc/<pid>/environ every 10 ms until the run ends. Prints one line:
the number of sweeps and reads, and how many reads held the run's password
or the load user's, by program and by cmdline/environ. docs/secrets.md
gives the figures before and after issue 18. Run it as the user the run
runs as (root reads every process; another user only its own).
`--help` (or `-h`) prints this and exits 0 without running anything; every
other flag goes to pkb.py (`./pkb.py --help` lists them).
"""

import collections
import glob
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

_HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(_HERE)
sys.path.insert(0, REPO)

# pylint: disable=g-import-not-at-top,wrong-import-position
from perfkitbenchmarker import venv_reexec
venv_reexec.UseRepoVenv(os.path.dirname(_HERE), __file__)

from perfkitbenchmarker import redis_shard
from perfkitbenchmarker import run_signals

SWEEP_S = 0.01
MAX_RUN_S = 1800  # The sampler stops (and the run is killed) after this.
ERR_TAIL_CHARS = 64 * 1024  # Of pkb's stderr, kept for the lines printed.


def _Password(scratch: str) -> str:
  for conf in glob.glob(f'{scratch}/pkb-*/servers-*/*.conf'):
    with open(conf) as f:
      for line in f:
        if line.startswith('requirepass '):
          return line.split(None, 1)[1].strip().strip('"')
  return ''


def _Program(pid: str) -> str:
  try:
    with open(f'/proc/{pid}/cmdline', 'rb') as f:
      argv0 = f.read().split(b'\0', 1)[0]
  except OSError:
    return '?'
  return argv0.rsplit(b'/', 1)[-1].decode(errors='replace') or '?'


def main(argv) -> int:
  if any(a in ('--help', '-h', '-?', '--helpshort', '--helpfull')
         for a in argv):
    run_signals.GuardOutput()  # `--help | head -1`: no traceback.
    print('usage: ' + __doc__.strip())
    return 0
  # SIGTERM (timeout(1), a CI job's end) as Ctrl-C: _Count's finally then
  # stops pkb and removes its directory, which the script's death left
  # behind (pkb's results and scratch; pkb itself ran on when the script
  # alone was killed).
  previous = signal.signal(signal.SIGTERM, signal.default_int_handler)
  try:
    return _Count(argv)
  except KeyboardInterrupt:
    print('secrets_exposure: interrupted; pkb was stopped and its '
          'directory removed', file=sys.stderr)
    return 130
  finally:
    signal.signal(signal.SIGTERM, previous)


def _KeepTail(stream, tail: list) -> None:
  """Reads `stream` to its end, keeping its last ERR_TAIL_CHARS in `tail`
  (what is printed of it is its last line or 300 characters)."""
  kept = ''
  for chunk in iter(lambda: stream.read(ERR_TAIL_CHARS), ''):
    kept = (kept + chunk)[-ERR_TAIL_CHARS:]
  tail.append(kept)


def _Count(argv) -> int:
  """Runs pkb with `argv` and counts where its passwords show."""
  top = tempfile.mkdtemp(prefix='pkb-secrets-')
  scratch = os.path.join(top, 'scratch')
  os.mkdir(scratch)
  run = subprocess.Popen(
      [sys.executable, os.path.join(REPO, 'pkb.py'),
       f'--results_dir={os.path.join(top, "results")}', *argv],
      env=dict(os.environ, PKB_LOCAL_SCRATCH=scratch),
      stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
  # Read while it runs: a run writing more than a pipe holds (64 KiB) to
  # stderr blocked on it, and so ran on until MAX_RUN_S killed it.
  tail = []
  reader = threading.Thread(target=_KeepTail, args=(run.stderr, tail),
                            daemon=True)
  reader.start()
  secrets, sweeps, reads = [], 0, 0
  hits = collections.Counter()
  deadline = time.monotonic() + MAX_RUN_S
  try:
    while run.poll() is None and time.monotonic() < deadline:
      if not secrets:
        password = _Password(scratch)
        if password:
          secrets = [password.encode(),
                     redis_shard.LoadPassword(password).encode()]
      if secrets:
        sweeps += 1
        for pid in os.listdir('/proc'):
          if not pid.isdigit():
            continue
          for what in ('cmdline', 'environ'):
            try:
              with open(f'/proc/{pid}/{what}', 'rb') as f:
                text = f.read()
            except OSError:
              continue
            reads += 1
            if any(s in text for s in secrets):
              hits[(_Program(pid), what)] += 1
      time.sleep(SWEEP_S)
  finally:
    if run.poll() is None:
      run.terminate()
    run.wait()
    reader.join()
    err = ''.join(tail)
    shutil.rmtree(top, ignore_errors=True)
  if not secrets:
    print(f'never saw a shard config; pkb exited {run.returncode}: '
          f'{err.strip()[-300:]}', file=sys.stderr)
    return 1
  found = ', '.join(f'{program} {what} {count:,}'
                    for (program, what), count in hits.most_common())
  print(f'pkb exit {run.returncode}; {sweeps:,} sweeps, {reads:,} reads; '
        f'{sum(hits.values()):,} held a password'
        f'{": " + found if found else ""}')
  if run.returncode and err.strip():  # Why the run stopped, as pkb said.
    print(err.strip().splitlines()[-1][:300], file=sys.stderr)
  return 0


if __name__ == '__main__':
  sys.exit(main(sys.argv[1:]))
