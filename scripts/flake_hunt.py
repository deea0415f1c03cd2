#!/usr/bin/env python3
"""Runs the test suite several times and says which tests failed in which run.

  ./scripts/flake_hunt.py --runs 5 --hog          # busy loop on every core
  ./scripts/flake_hunt.py --runs 3                # quiet
  ./scripts/flake_hunt.py --runs 3 -- --e2e -k ssh   # arguments for test.sh

Each run is a fresh clone of this checkout's HEAD in a scratch directory (so
files left by an earlier run or uncommitted changes cannot help or hurt it)
running the README's test command, ./scripts/test.sh, with a JUnit report;
the clone uses this checkout's .venv and build/ (made by scripts/setup.sh)
instead of installing them again, unless --setup asks for the whole .ci/run.
With --hog, one busy process pinned to each core runs for the whole run, as
a shared CI machine may be busy. At the end a table gives, per test that
failed at least once, failures over runs and its first error line, and each
run's summary line and wall time. Exit 1 if any test failed. With
--keep_reports DIR, each run's JUnit report is kept as DIR/run<N>.xml and
its output as DIR/run<N>.log (a passing report refreshes
tests/durations.json: scripts/suite_durations.py). A run's failed tests are
printed as soon as it ends, not only in the table. A run still going after
an hour (RUN_TIMEOUT_S) is stopped, with every process of its group, and
counted as failed.

README: "Quick start (fresh Debian machine)" says when to run it (before
calling a test fixed, and after a change to how tests wait).
"""

import argparse
import collections
import multiprocessing
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ElementTree

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# A run's bound: the suite takes about 10 minutes quiet; a hog doubles that.
RUN_TIMEOUT_S = 3600


def _Spin(core: int) -> None:
  os.sched_setaffinity(0, {core})
  while True:
    pass


class Hog:
  """One busy process per core while the block runs (killed after it)."""

  def __init__(self, enabled: bool):
    self.enabled, self.procs = enabled, []

  def __enter__(self):
    if self.enabled:
      for core in sorted(os.sched_getaffinity(0)):
        proc = multiprocessing.Process(target=_Spin, args=(core,),
                                       daemon=True)
        proc.start()
        self.procs.append(proc)
    return self

  def __exit__(self, *unused):
    for proc in self.procs:
      proc.kill()
      proc.join(5)


def _Clone(scratch: str, setup: bool) -> str:
  clone = os.path.join(scratch, 'clone')
  subprocess.run(['git', 'clone', '-q', REPO, clone], check=True)
  if not setup:
    for name in ('.venv', 'build'):
      if os.path.isdir(os.path.join(REPO, name)):
        os.symlink(os.path.join(REPO, name), os.path.join(clone, name))
  return clone


def _Failures(junit: str):
  """(test id, first line of its failure) for each failed or errored test."""
  if not os.path.isfile(junit):
    return [('(no JUnit report: the run did not finish)', '')]
  found = []
  for case in ElementTree.parse(junit).iter('testcase'):
    for tag in ('failure', 'error'):
      problem = case.find(tag)
      if problem is not None:
        name = f'{case.get("classname", "")}::{case.get("name", "")}'
        text = (problem.get('message') or problem.text or '').strip()
        found.append((name, text.splitlines()[0][:160] if text else ''))
        break
  return found


def _Bounded(command, cwd: str, env: dict, timeout_s: float):
  """(exit code, output) of `command`; (None, its output so far) when it
  passes `timeout_s`: then its whole process group (pytest, its workers,
  what the tests started in it) is killed, where subprocess.run's timeout
  killed pytest alone and ended this script in a TimeoutExpired
  traceback."""
  proc = subprocess.Popen(command, cwd=cwd, env=env, text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          start_new_session=True)
  try:
    output, _ = proc.communicate(timeout=timeout_s)
    return proc.returncode, output
  except subprocess.TimeoutExpired as e:
    so_far = e.output
  try:
    os.killpg(proc.pid, signal.SIGKILL)
  except ProcessLookupError:
    pass  # All of them ended as the bound passed.
  try:  # All its output (communicate keeps what it read before).
    output, _ = proc.communicate(timeout=30)
  except subprocess.TimeoutExpired:  # A process outside holds the pipe.
    proc.kill()
    proc.wait()
    output = so_far
  if isinstance(output, bytes):  # TimeoutExpired holds the bytes read.
    output = output.decode('utf-8', 'replace')
  return None, output or ''


def _OneRun(index: int, args) -> dict:
  scratch = tempfile.mkdtemp(prefix='pkb-flake-')
  try:
    clone = _Clone(scratch, args.setup)
    junit = os.path.join(scratch, 'junit.xml')
    command = (['bash', '.ci/run'] if args.setup else
               ['./scripts/test.sh'] + args.test_args +
               [f'--junitxml={junit}'])
    env = dict(os.environ)
    if args.setup:  # .ci/run calls test.sh with no arguments.
      env['PYTEST_ADDOPTS'] = f'--junitxml={junit}'
    started = time.monotonic()
    with Hog(args.hog):
      code, output = _Bounded(command, clone, env, RUN_TIMEOUT_S)
    wall = time.monotonic() - started
    lines = [l for l in output.splitlines() if ' in ' in l and
             ('passed' in l or 'failed' in l)]
    timed_out = code is None
    summary = (f'stopped past its bound of {RUN_TIMEOUT_S} s' if timed_out
               else lines[-1].strip('= ') if lines else f'exit {code}')
    print(f'run {index}: {summary} ({wall:.0f} s wall'
          f'{"" if timed_out else f", exit {code}"})', flush=True)
    failures = _Failures(junit) if code else []
    last = (output.strip().splitlines() or [''])[-1]
    if timed_out:  # Its JUnit report, if any, is not the whole run's.
      failures = [(f'(the run passed its bound of {RUN_TIMEOUT_S} s)',
                   last[:160])]
    elif code and not failures:  # E.g. pytest's usage error.
      failures = [(f'(the run exited {code} with no failed test)',
                   last[:160])]
    for name, text in failures:  # Now, not only in the end's table.
      print(f'  failed: {name}\n          {text}', flush=True)
    if args.keep_reports:
      if os.path.isfile(junit):
        shutil.copy(junit, os.path.join(args.keep_reports, f'run{index}.xml'))
      with open(os.path.join(args.keep_reports, f'run{index}.log'), 'w',
                encoding='utf-8') as log:
        log.write(output)
    return {'summary': summary, 'wall': wall, 'code': code,
            'failures': failures}
  finally:
    shutil.rmtree(scratch, ignore_errors=True)


def main() -> int:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument('--runs', type=int, default=3)
  parser.add_argument('--hog', action='store_true',
                      help='a busy loop on every core during each run')
  parser.add_argument('--setup', action='store_true',
                      help='run the whole .ci/run (setup.sh too) per clone')
  parser.add_argument('--keep_reports', metavar='DIR',
                      help="keep each run's JUnit report as DIR/run<N>.xml")
  parser.add_argument('test_args', nargs='*',
                      help='arguments for scripts/test.sh (after --)')
  args = parser.parse_args()
  if args.runs < 1:
    parser.error('--runs must be at least 1')
  if args.keep_reports and not os.path.isdir(args.keep_reports):
    parser.error(f'--keep_reports: {args.keep_reports} is not a directory')
  if not args.setup and not os.path.isfile(
      os.path.join(REPO, '.venv', 'bin', 'python')):
    parser.error('no .venv: run ./scripts/setup.sh first, or pass --setup')
  runs = [_OneRun(i + 1, args) for i in range(args.runs)]
  counts = collections.Counter()
  first = {}
  for run in runs:
    for name, text in run['failures']:
      counts[name] += 1
      first.setdefault(name, text)
  print()
  if not counts:
    print(f'No test failed in {len(runs)} run(s).')
    return 0
  print(f'Tests that failed at least once in {len(runs)} run(s):')
  for name, count in counts.most_common():
    print(f'  {count}/{len(runs)}  {name}\n         {first[name]}')
  return 1


if __name__ == '__main__':
  sys.exit(main())
