"""One signal and deadline model for every probe path, YCSB's JVM included.

Issue 18 points 3 and 7. A signal or the deadline kills every local command
still running, in whatever thread it was started (run_signals +
vm_util.StopChildren), so a YCSB probe waited for by a worker thread no
longer runs to its end; every probe is in the run record before it starts,
its process group written down as it starts (probe_processes), so
`--run_stage=teardown` after a kill -9 stops a JVM that is still running; a
signal before the stages start still ends the run as interrupted.
"""

import os
import signal
import subprocess
import threading
import time

import psutil
import pytest

import e2e_support as e2e
import pkb_forkserver
from perfkitbenchmarker import errors
from perfkitbenchmarker import probe_processes
from perfkitbenchmarker import run_processes
from perfkitbenchmarker import run_signals
from perfkitbenchmarker import vm_util

YCSB = ['--benchmarks=redis_ycsb', '--ycsb_record_count=200',
        '--ycsb_load_threads=1', '--ycsb_operation_count=100000000',
        '--ycsb_latency_cap=1000', '--ycsb_max_threads=1',
        '--ycsb_jvm_options=-XX:TieredStopAtLevel=1,-XX:+UseSerialGC']
PROBING = 'YCSB workloada'


def _NeedsYcsb():
  e2e.RequireTool('java', 'scripts/setup.sh')
  if not os.path.exists(os.path.join(e2e.REPO, 'build', 'ycsb',
                                     'classpath.txt')):
    e2e.Unavailable('the YCSB build', 'scripts/build_ycsb.sh')


def _RunProcesses(run_uri):
  """Live processes working in the run's scratch directory (its JVMs)."""
  found = []
  for proc in psutil.process_iter(['cmdline', 'status']):
    try:
      if (proc.info['status'] != psutil.STATUS_ZOMBIE and
          f'pkb-{run_uri}.' in ' '.join(proc.info['cmdline'] or ())):
        found.append(proc)
    except psutil.Error:
      pass
  return found


def _JvmsAppear(run_uri, timeout=60):
  deadline = time.monotonic() + timeout
  while time.monotonic() < deadline:
    jvms = [p for p in _RunProcesses(run_uri)
            if 'java' in ' '.join(p.info['cmdline'] or ())]
    if jvms:
      return jvms
    time.sleep(0.2)
  return []


def _StartYcsb(results):
  run_uri = e2e.NewRunUri()
  proc = pkb_forkserver.Popen(e2e.Command(YCSB, run_uri, results),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, cwd=e2e.REPO)
  for line in proc.stdout:
    if PROBING in line:
      break
  assert _JvmsAppear(run_uri), 'no YCSB probe started'
  return proc, run_uri


def test_a_signal_before_the_stages_start_is_kept_for_them():
  interrupts = run_signals.Interrupts('x')
  interrupts.Install(None)
  try:
    os.kill(os.getpid(), signal.SIGTERM)  # Noted, not raised, here.
    with pytest.raises(errors.RunInterrupted, match='SIGTERM'):
      interrupts.Arm()  # The first stage starts: now it stops the run.
  finally:
    interrupts.Restore()


@pytest.mark.e2e
def test_the_deadline_stops_commands_other_threads_wait_for():
  interrupts = run_signals.Interrupts('x')
  outcome = {}
  worker = threading.Thread(target=lambda: outcome.update(
      result=vm_util.RunLocal('sleep 60; echo finished')))
  started = time.monotonic()
  interrupts.Install(0.5)
  try:
    interrupts.Arm()
    worker.start()
    with pytest.raises(errors.RunInterrupted, match='deadline'):
      while time.monotonic() - started < 30:
        time.sleep(0.05)
    worker.join(10)
  finally:
    interrupts.Restore()
  assert not worker.is_alive()
  out, _, rc = outcome['result']
  # Stopped at the 0.5 s deadline, not after the 60 s sleep.
  assert rc != 0 and 'finished' not in out


@pytest.mark.e2e
@pytest.mark.timeout(60)
def test_a_stop_while_a_command_starts_still_stops_it(monkeypatch):
  """A signal or the deadline landing between a command's start and its
  registration (StopChildren looked before it was there): the command is
  killed as it registers, instead of running on after the stop (the
  probe nobody killed, seen once in matrix_test's sighup_terminal_gone)."""
  start = subprocess.Popen

  def StartThenStop(*args, **kwargs):
    proc = start(*args, **kwargs)
    vm_util.StopChildren()  # Finds nothing of this command yet.
    return proc

  monkeypatch.setattr(vm_util.subprocess, 'Popen', StartThenStop)
  out, _, rc = vm_util.RunLocal('sleep 20; echo ran on')
  assert (out, rc) == ('', -signal.SIGKILL)


@pytest.mark.e2e
def test_sigint_stops_a_ycsb_probe_within_seconds(tmp_path):
  _NeedsYcsb()
  results = str(tmp_path)
  proc, run_uri = _StartYcsb(results)
  try:
    time.sleep(1)  # The JVM is measuring (a probe of minutes).
    proc.send_signal(signal.SIGINT)
    # The probe runs for minutes; the hang guard (cleanup and teardown
    # included) is far under that.
    _, err = proc.communicate(timeout=60)
  finally:
    if proc.poll() is None:
      proc.kill()
  assert proc.returncode == 130, err
  assert _RunProcesses(run_uri) == []
  record = e2e.Record(results, run_uri)
  assert record['status'] == 'interrupted'
  probes = [r for r in record['resources']
            if r['kind'] == probe_processes.KIND]
  assert probes and all(r['status'] == 'deleted' for r in probes)


@pytest.mark.e2e
def test_teardown_after_kill_9_stops_the_running_jvm(tmp_path):
  _NeedsYcsb()
  results = str(tmp_path)
  proc, run_uri = _StartYcsb(results)
  proc.kill()  # kill -9: no handler, no cleanup.
  proc.communicate(timeout=30)
  torn_down = False
  try:
    jvms = _JvmsAppear(run_uri, timeout=5)
    assert jvms, 'the JVM should outlive a killed pkb'
    live = [r for r in e2e.Record(results, run_uri)['resources']
            if r['kind'] == probe_processes.KIND and r['status'] != 'deleted']
    assert live  # Recorded before it started.
    teardown, _ = e2e.Run(['--run_stage=teardown'], results, run_uri=run_uri)
    torn_down = True
    assert teardown.returncode == 0, teardown.stderr
    gone, alive = psutil.wait_procs(jvms, timeout=5)
    assert not alive and gone
  finally:
    if not torn_down:  # A failure above must not leave the JVM and server.
      e2e.Run(['--run_stage=teardown'], results, run_uri=run_uri)
  assert _RunProcesses(run_uri) == []


@pytest.mark.e2e
def test_sigterm_as_the_run_starts_leaves_it_interrupted(tmp_path):
  results = str(tmp_path)
  run_uri = e2e.NewRunUri()
  record_path = os.path.join(results, run_uri, 'run_record.json')
  proc = pkb_forkserver.Popen(
      e2e.Command(['--run_stage=provision'], run_uri, results),
      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=e2e.REPO)
  try:
    deadline = time.monotonic() + 60
    while not os.path.exists(record_path) and time.monotonic() < deadline:
      time.sleep(0.001)
    proc.send_signal(signal.SIGTERM)  # As the record appears.
    _, err = proc.communicate(timeout=60)
  finally:
    if proc.poll() is None:
      proc.kill()
  assert proc.returncode == 130, err
  assert 'Traceback' not in err
  assert e2e.Record(results, run_uri)['status'] == 'interrupted'


@pytest.mark.e2e
def test_sigterm_before_the_run_takes_signals_leaves_nothing(tmp_path):
  """Until run_signals takes them, SIGTERM and SIGHUP killed pkb by their
  default action: a --memtier_path check's private directory (TMPDIR/
  pkb-check-*, argv_secret's source and cc's files) stayed behind. Here a
  cc on PATH that waits holds the check until the signal comes."""
  bin_dir, tmp = tmp_path / 'bin', tmp_path / 'tmp'
  bin_dir.mkdir()
  tmp.mkdir()
  (bin_dir / 'cc').write_text('#!/bin/sh\nexec sleep 60\n')
  (bin_dir / 'cc').chmod(0o755)
  env = dict(os.environ, TMPDIR=str(tmp),
             PATH=f'{bin_dir}{os.pathsep}{os.environ["PATH"]}')
  proc = subprocess.Popen(
      e2e.Command(['--memtier_path=/bin/true', '--dry_run'], e2e.NewRunUri(),
                  str(tmp_path / 'results')), env=env, stdout=subprocess.PIPE,
      stderr=subprocess.PIPE, text=True, cwd=e2e.REPO)
  compilers = []
  try:
    e2e.WaitFor(lambda: compilers.extend(
        p for p in psutil.Process(proc.pid).children(recursive=True)
        if p.name() == 'sleep') or compilers, 'the check\'s cc', proc)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
  finally:
    if proc.poll() is None:
      proc.kill()
  assert (proc.returncode, err) == (130, 'pkb: interrupted\n')
  assert os.listdir(tmp) == []
  assert psutil.wait_procs(compilers, timeout=5)[1] == []  # Stopped too.


def _Files(directory, mark):
  return sorted(p.name for p in directory.glob(f'.probe-{mark}.*'))


@pytest.mark.e2e
@pytest.mark.usefixtures('shipped_scripts')
def test_the_kill_script_stops_only_the_groups_its_files_name(tmp_path):
  """A probe's command writes down its process group as it starts
  (GroupScript); the kill script stops that whole group, forks included,
  and leaves alone a group only another mark's file names, a live group a
  file names with another start time (stale or forged), and a process in
  no named group; a file whose fields are no numbers is dropped."""
  os.chmod(tmp_path, 0o700)
  scratch = str(tmp_path)
  mark, other = (probe_processes.NewMark('abc123') for _ in range(2))

  def Probe(of_mark):
    return subprocess.Popen(
        ['bash', '-c', probe_processes.GroupScript(scratch, of_mark) +
         'sleep 60 & sleep 60; wait'], start_new_session=True)

  ours, theirs = Probe(mark), Probe(other)
  forged = subprocess.Popen(['sleep', '60'], start_new_session=True)
  unnamed = subprocess.Popen(['sleep', '60'])
  try:
    deadline = time.monotonic() + 10
    while not (_Files(tmp_path, mark) and _Files(tmp_path, other) and
               len(psutil.Process(ours.pid).children()) == 2):
      assert time.monotonic() < deadline
      time.sleep(0.02)
    assert (tmp_path / f'.probe-{mark}.{ours.pid}').read_text() == (
        f'{ours.pid} {e2e.StartTicks(ours.pid):.0f}\n')
    forked = psutil.Process(ours.pid).children()
    (tmp_path / f'.probe-{mark}.1').write_text(
        f'{forged.pid} {e2e.StartTicks(forged.pid) + 1:.0f}\n')
    (tmp_path / f'.probe-{mark}.2').write_text('1; touch x\n')
    proc = subprocess.run(
        ['bash', '-c', probe_processes.KillScript(scratch, mark)],
        capture_output=True, text=True, timeout=30, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    # Stopped by a signal: TERM ends a shell and a sleep (the escalation's
    # KILL is for what outlives it).
    assert ours.wait(timeout=5) in (-signal.SIGTERM, -signal.SIGKILL)
    _, alive = psutil.wait_procs(forked, timeout=5)
    assert not alive
    for untouched in (theirs, forged, unnamed):
      assert untouched.poll() is None
    assert _Files(tmp_path, mark) == [] and _Files(tmp_path, other)
    assert not (tmp_path / 'x').exists()
  finally:
    for p in (ours, theirs, forged):
      run_processes.KillStartedGroup(p.pid)  # Each leads a group of its own.
    for p in (ours, theirs, forged, unnamed):
      p.kill()
      p.wait()


@pytest.mark.e2e
@pytest.mark.usefixtures('shipped_scripts')
def test_a_command_starting_after_its_probe_was_killed_does_not_run(
    tmp_path):
  """Cleanup killed a probe's groups before its command got going (an SSH
  session still on its way at SIGINT): the command, once it starts, finds
  its probe stopped and exits 143 before running; another mark's runs."""
  os.chmod(tmp_path, 0o700)
  scratch = str(tmp_path)
  mark, other = (probe_processes.NewMark('abc123') for _ in range(2))
  kill = subprocess.run(
      ['bash', '-c', probe_processes.KillScript(scratch, mark)],
      capture_output=True, text=True, timeout=30, cwd=tmp_path)
  assert kill.returncode == 0 and kill.stderr == '', kill.stderr

  def Command(of_mark, name):
    return subprocess.run(
        ['bash', '-c', probe_processes.GroupScript(scratch, of_mark) +
         f'touch {name}'], capture_output=True, text=True, timeout=30,
        cwd=tmp_path)

  assert Command(mark, 'late').returncode == 143
  assert not (tmp_path / 'late').exists()
  assert Command(other, 'theirs').returncode == 0
  assert (tmp_path / 'theirs').exists()


@pytest.mark.parametrize('mark', ['other1-0123456789abcdef', '$(touch x)',
                                  'abc123-0123'])
def test_a_record_mark_not_of_the_run_is_refused(mark):

  class Record:
    run_uri = 'abc123'

  with pytest.raises(errors.ResourceError, match='left alone'):
    probe_processes.ProbeProcess.FromRecord(
        {'kind': probe_processes.KIND, 'name': 'p',
         'data': {'vm_name': 'clients-0', 'mark': mark}}, Record())


def test_a_kill_that_fails_says_why_in_one_masked_line():
  """The kill script's stderr reaches the error as its last lines, one
  line, secrets masked (vm_util.Tail), not its first 200 characters."""
  vm_util.RegisterSecret('probe-kill-secret')

  class Vm:
    name = 'clients-0'
    scratch_dir = '/nonexistent'

    def RemoteCommandWithReturnCode(self, command, timeout=None):
      del command, timeout
      return '', 'AUTH probe-kill-secret\nsecond line\ngroup 4242 outlived\n', 3

  probe = probe_processes.ProbeProcess(Vm(), 'p', 'abc123-0123456789abcdef')
  with pytest.raises(errors.ResourceError) as e:
    probe._Delete()  # pylint: disable=protected-access
  message = str(e.value)
  assert '\n' not in message and 'probe-kill-secret' not in message
  assert message.endswith(
      f'(AUTH {vm_util.MASK} | second line | group 4242 outlived)'), message
