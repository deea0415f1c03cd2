#!/usr/bin/env python3
"""Which product files one probe over SSH passes through (issue 27).

  ./scripts/probe_path.py                      # about 30 s
  ./scripts/probe_path.py --memtier_path=PATH  # memtier instead of
                                               # redis-benchmark

Runs a short redis_memtier study in this process on Static, against a real
sshd on 127.0.0.1 (scripts/loopback_sshd.py) whose one machine is this one,
and watches the first probe with a profiler in every thread (nothing of the
product is changed). It prints, counted from the benchmark's `Run` down:

  on the stack  the product files on the call stack whenever the probe
                starts an ssh command (the chain a probe goes down)
  run           every product file whose code runs during the probe (the
                chain plus what it calls and returns from: command and shell
                builders, parsers, the run record, the log)

and last a line `stack_files=<n> run_files=<m>`. Extra arguments go to
./pkb.py. Needs sshd, redis-server and redis-benchmark, as the e2e tests.
"""

import json
import os
import sys
import tempfile
import threading
import uuid

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)
from perfkitbenchmarker import venv_reexec  # pylint: disable=g-import-not-at-top
venv_reexec.UseRepoVenv(REPO, __file__)

# pylint: disable=g-import-not-at-top,wrong-import-position
from perfkitbenchmarker import pkb
from scripts import loopback_sshd

PROBE = ('perfkitbenchmarker/load_generators/driver.py', '__call__')
RUN_LOCAL = ('perfkitbenchmarker/vm_util.py', 'RunLocal')
BENCHMARKS = 'perfkitbenchmarker/linux_benchmarks/'


def ProductFile(filename: str):
  """`filename` from the repository root if it is product code, else None."""
  path = os.path.relpath(os.path.abspath(filename), REPO)
  if path == 'pkb.py' or path.startswith(('perfkitbenchmarker/',
                                          'pkb_plugin/')):
    return path
  return None


class ProbeWatch:
  """A profiler over every thread that records the first probe's files."""

  def __init__(self):
    self._lock = threading.Lock()
    self.inside = False
    self.done = False
    self.run: set = set()
    self.stacks: list = []

  @staticmethod
  def Stack(frame) -> list:
    """Product files on the stack from the benchmark's Run down."""
    files = []
    while frame is not None:
      path = ProductFile(frame.f_code.co_filename)
      if path and (not files or files[-1] != path):
        files.append(path)
      frame = frame.f_back
    files.reverse()
    start = next((i for i, f in enumerate(files) if f.startswith(BENCHMARKS)),
                 0)
    return files[start:]

  def __call__(self, frame, event, unused_arg):
    code = (ProductFile(frame.f_code.co_filename), frame.f_code.co_name)
    if event == 'return' and code == PROBE and self.inside:
      self.inside, self.done = False, True
    if event != 'call' or self.done:
      return
    if code == PROBE and not self.inside:
      self.inside = True
      with self._lock:
        self.run.update(self.Stack(frame))
    if not self.inside or code[0] is None:
      return
    with self._lock:
      self.run.add(code[0])
      if code == RUN_LOCAL and str(
          frame.f_locals.get('command', '')).startswith('ssh '):
        self.stacks.append(self.Stack(frame))


def Measure(extra_args) -> dict:
  """Runs the study and returns the first probe's files."""
  watch = ProbeWatch()
  with tempfile.TemporaryDirectory() as tmp:
    sshd = loopback_sshd.Sshd(os.path.join(tmp, 'sshd')).Start()
    try:
      static = os.path.join(tmp, 'static.json')
      machine = {'ip_address': sshd.host, 'user_name': sshd.user,
                 'keyfile_path': sshd.user_key, 'ssh_port': sshd.port}
      with open(static, 'w') as f:
        json.dump([machine, machine], f)
      argv = ['pkb.py', f'--run_uri=p{uuid.uuid4().hex[:7]}',
              f'--results_dir={tmp}/results', '--benchmarks=redis_memtier',
              f'--static_vm_file={static}', '--memtier_run_duration=1',
              '--memtier_key_maximum=2000', '--memtier_max_probes=1',
              '--memtier_latency_cap=100', '--accept_unconfirmed',
              '--nosystem_tuning', '--timeout_minutes=4'] + list(extra_args)
      threading.setprofile(watch)
      sys.setprofile(watch)
      try:
        code = pkb.Main(argv)
      finally:
        sys.setprofile(None)
        threading.setprofile(None)
    finally:
      sshd.Stop()
  stack = sorted({f for s in watch.stacks for f in s})
  return {'exit_code': code, 'ssh_commands': len(watch.stacks),
          'stack': stack, 'run': sorted(watch.run)}


def main(argv) -> int:
  if any(a in ('--help', '-h', '-?', '--helpshort', '--helpfull')
         for a in argv[1:]):
    # Its own usage: passed on, pkb's help started an sshd and a study
    # that measured nothing, and ended 'no ssh command during a probe'.
    print('usage: ' + __doc__.strip())
    return 0
  found = Measure(argv[1:])
  if not found['ssh_commands']:
    print(f'probe_path: no ssh command during a probe (pkb exit '
          f'{found["exit_code"]})', file=sys.stderr)
    return 1
  print(f'\nOne probe, {found["ssh_commands"]} ssh command(s); files from '
        'the benchmark\'s Run down:')
  for path in found['run']:
    print(f'  {"on the stack" if path in found["stack"] else "run":12}  '
          f'{path}')
  print(f'stack_files={len(found["stack"])} run_files={len(found["run"])}')
  return 0


if __name__ == '__main__':
  sys.exit(main(sys.argv))
