"""What a user sees when a stage stops or cleanup fails: one line each, said
when it happens (issue 24 items 9 and 17).

In-process runs of pkb's stage driver (pkb._RunOne) with a stub benchmark on
the Local cloud, with the run's console log set up as ./pkb.py has it.
"""

import io
import os
import signal
import sys
import types

import pytest

import pkb_forkserver
from perfkitbenchmarker import background_tasks
from perfkitbenchmarker import benchmark_spec as spec_lib
from perfkitbenchmarker import errors
from perfkitbenchmarker import flags as pkb_flags_lib
from perfkitbenchmarker import pkb
from perfkitbenchmarker import reporting
from perfkitbenchmarker import resource
from perfkitbenchmarker import run_log
from perfkitbenchmarker import run_record
from perfkitbenchmarker import run_scope
from perfkitbenchmarker import run_signals
from perfkitbenchmarker import ssh_vm
from perfkitbenchmarker.publishers import publisher

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CONFIG = {'vm_groups': {'servers': {
    'vm_spec': {'Local': {'machine_type': 'local'}}, 'vm_count': 1}}}


def _Run(tmp_path, run_uri, run, cleanup, stages=pkb_flags_lib.RUN_STAGES):
  module = types.ModuleType('lines_stub_benchmark')
  module.BENCHMARK_NAME = 'lines_stub'
  module.Prepare = lambda spec: None
  module.Run = run
  module.Cleanup = cleanup
  run_dir = str(tmp_path / run_uri)
  record = run_record.RunRecord.Create(run_dir, run_uri, cloud='Local',
                                       benchmarks=[module.BENCHMARK_NAME])
  collector = publisher.SampleCollector(
      [], publisher.RunInfo(run_uri=run_uri, owner='tester'))
  run_log.SetUp(run_dir)
  try:
    return pkb._RunOne(  # pylint: disable=protected-access
        module, CONFIG, run_uri, record, None, collector,
        reporting.ConsoleReporter(io.StringIO()), spec_lib.Deadline(None),
        list(stages), run_signals.Interrupts(run_uri))
  finally:
    run_log.TearDown()


def test_a_cleanup_failure_is_one_line_and_its_traceback_in_pkb_log(
    pkb_flags, tmp_path, capsys):
  pkb_flags.cloud = 'Local'

  def Cleanup(spec):
    raise errors.ProcessError(
        'Stopping shards failed: redis_process servers-0:7002: Cannot reach '
        'servers-0 over SSH')

  code = _Run(tmp_path, 'lines1', lambda spec: [], Cleanup)
  err = capsys.readouterr().err
  assert code == pkb.EXIT_FAILED
  assert 'Traceback' not in err and 'ERROR' not in err, err
  line, = [l for l in err.splitlines() if 'Stopping shards failed' in l]
  assert line.startswith('pkb: cleanup failed: Stopping shards failed: ')
  with open(tmp_path / 'lines1' / 'pkb.log') as f:
    assert 'Traceback' in f.read()  # Kept for whoever debugs it.


def test_cleanup_and_teardown_of_a_run_whose_vms_never_came_up(
    pkb_flags, tmp_path, capsys):
  # A GCP run killed while its instances started (recorded 'creating'),
  # then --run_stage=cleanup,teardown: teardown deleted all 8 resources,
  # yet the run 'stopped: Run h3ag5 has no provisioned clients, servers
  # VMs; start with --run_stage=provision (or all).', exit 2.
  pkb_flags.cloud = 'Local'
  run_uri = 'lines9'
  module = types.ModuleType('lines_stub_benchmark')
  module.BENCHMARK_NAME = 'lines_stub'
  module.Cleanup = lambda spec: None
  run_dir = str(tmp_path / run_uri)
  record = run_record.RunRecord.Create(run_dir, run_uri, cloud='Local',
                                       benchmarks=[module.BENCHMARK_NAME])
  record.MarkStageDone('provision')
  collector = publisher.SampleCollector(
      [], publisher.RunInfo(run_uri=run_uri, owner='tester'))
  run_log.SetUp(run_dir)
  try:
    code = pkb._RunOne(  # pylint: disable=protected-access
        module, CONFIG, run_uri, record, None, collector,
        reporting.ConsoleReporter(io.StringIO()), spec_lib.Deadline(None),
        ['cleanup', 'teardown'], run_signals.Interrupts(run_uri))
  finally:
    run_log.TearDown()
  err = capsys.readouterr().err
  assert code == pkb.EXIT_OK, err
  assert 'provision' not in err, err
  assert record.stages_done[-2:] == ['cleanup', 'teardown']


def test_a_bug_in_cleanup_is_one_line_too(pkb_flags, tmp_path, capsys):
  pkb_flags.cloud = 'Local'

  def Cleanup(spec):
    return {}['shards']

  code = _Run(tmp_path, 'lines2', lambda spec: [], Cleanup)
  err = capsys.readouterr().err
  assert code == pkb.EXIT_FAILED
  assert 'Traceback' not in err, err
  assert "pkb: cleanup failed: internal error KeyError: 'shards'" in err


def test_a_bug_in_run_is_one_line_its_traceback_in_pkb_log(pkb_flags,
                                                          tmp_path, capsys):
  pkb_flags.cloud = 'Local'

  def Run(spec):
    return {}['probes']

  code = _Run(tmp_path, 'lines4', Run, lambda spec: None)
  err = capsys.readouterr().err
  assert code == pkb.EXIT_FAILED
  assert 'Traceback' not in err and 'ERROR' not in err, err
  line, = [l for l in err.splitlines() if 'internal error' in l]
  assert line.startswith("pkb: lines_stub stopped: internal error KeyError: "
                         "'probes' (traceback in "), line
  with open(tmp_path / 'lines4' / 'pkb.log') as f:
    assert 'Traceback' in f.read()  # Kept for whoever debugs it.


def test_machines_all_refusing_their_key_are_bad_input_in_one_line(
    pkb_flags, tmp_path, capsys):
  # Each refusal alone is exit 2 (ssh_vm.KeyRefused, a UsageError); two of
  # them at once, combined by background_tasks, exited 1 as a failed run.
  pkb_flags.cloud = 'Local'

  def Refused(name):
    raise ssh_vm.KeyRefused(
        f'{name}: 10.0.0.5 port 22 refused user u with the key /k '
        '(Permission denied (publickey), for 30 s); give keyfile_path ...')

  code = _Run(tmp_path, 'lines6', lambda spec: background_tasks.RunThreaded(
      Refused, ['servers-0', 'clients-0']), lambda spec: None)
  err = capsys.readouterr().err
  assert code == pkb.EXIT_USAGE, err
  assert 'Traceback' not in err, err
  line, = [l for l in err.splitlines() if 'refused user' in l]
  assert line.startswith('pkb: lines_stub stopped: 2 failed: servers-0: '
                         '10.0.0.5 port 22 refused user u'), line
  assert '; clients-0: 10.0.0.5 port 22 refused user u' in line, line


def test_the_deadline_is_said_before_cleanup_runs(pkb_flags, tmp_path,
                                                  capsys):
  pkb_flags.cloud = 'Local'

  def Run(spec):
    raise errors.RunInterrupted('deadline (--timeout_minutes) reached')

  def Cleanup(spec):
    print('cleanup ran', file=sys.stderr)

  code = _Run(tmp_path, 'lines3', Run, Cleanup)
  err = capsys.readouterr().err
  assert code == pkb.EXIT_INTERRUPTED
  said = err.index('pkb: deadline (--timeout_minutes) reached; stopping '
                   'lines_stub: cleanup and teardown run now.')
  assert said < err.index('cleanup ran')
  # The run's end still names what stopped it.
  assert 'pkb: lines_stub stopped: deadline (--timeout_minutes) reached' in err


STAGED = ('provision', 'prepare', 'run')


def _LeftAndTornDown(run_dir):
  """The run's live record entries; then deletes them (its scratch
  directories), as --run_stage=teardown would."""
  record = run_record.RunRecord.Load(str(run_dir))
  live = list(record.LiveResources())
  assert not resource.TeardownFromRecord(record)
  return live


def _AssertLeftLine(err, results_dir, run_uri, live):
  """The line naming what a staged run left and the command deleting it
  (with --results_dir: the run's directory is not under the default)."""
  assert (f'pkb: {len(live)} resource(s) of run {run_uri} are left '
          '(teardown is not among its stages); delete them with ./pkb.py '
          f'--run_stage=teardown --run_uri={run_uri} '
          f'--results_dir={results_dir}\n') in err, err


def test_a_staged_run_stopped_says_cleanup_runs_and_what_is_left(
    pkb_flags, tmp_path, capsys):
  # --run_stage=provision,prepare,run, then Ctrl-C: it said 'cleanup and
  # teardown run now', ran no teardown (not among its stages) and never said
  # that its VMs were left, nor how to delete them.
  pkb_flags.cloud = 'Local'

  def Run(spec):
    raise errors.RunInterrupted('interrupted by SIGINT')

  code = _Run(tmp_path, 'lines5', Run, lambda spec: None, STAGED)
  err = capsys.readouterr().err
  assert code == pkb.EXIT_INTERRUPTED
  assert ('pkb: interrupted by SIGINT; stopping lines_stub: cleanup runs now '
          '(teardown is not among its stages).') in err, err
  assert 'teardown run now' not in err
  live = _LeftAndTornDown(tmp_path / 'lines5')
  assert live, err  # Its VMs stay, as the stages asked.
  _AssertLeftLine(err, tmp_path, 'lines5', live)


def test_a_staged_run_that_fails_says_what_is_left(pkb_flags, tmp_path,
                                                  capsys):
  pkb_flags.cloud = 'Local'

  def Run(spec):
    raise errors.ProcessError('memtier_benchmark exited 1')

  code = _Run(tmp_path, 'lines6', Run, lambda spec: None, STAGED)
  err = capsys.readouterr().err
  assert code == pkb.EXIT_FAILED
  assert 'pkb: lines_stub stopped: memtier_benchmark exited 1' in err
  live = _LeftAndTornDown(tmp_path / 'lines6')
  assert live
  _AssertLeftLine(err, tmp_path, 'lines6', live)


def test_signals_during_a_staged_runs_cleanup_name_no_teardown(caplog):
  # A first signal during the cleanup of a run without teardown logged
  # 'finishing cleanup and teardown first', a second one 'cleanup and
  # teardown were cut short'.
  interrupts = run_signals.Interrupts('lines7')
  interrupts.Arm()
  interrupts.Protect(teardown=False)
  try:
    interrupts._Handle(signal.SIGINT, None)  # pylint: disable=protected-access
    assert 'SIGINT: finishing cleanup first (a second signal stops it).' in (
        caplog.text)
    with pytest.raises(errors.RunInterrupted) as raised:
      interrupts._Handle(signal.SIGTERM, None)  # pylint: disable=protected-access
  finally:
    interrupts.Restore()
  assert str(raised.value) == (
      'interrupted by SIGINT, then SIGTERM during cleanup: cleanup was cut '
      'short; delete what is left with ./pkb.py --run_stage=teardown '
      '--run_uri=lines7')


def test_run_stage_lists_go_in_order_as_upstream_pkb_has_them(pkb_flags):
  # provision,run was taken (and reordered lists such as run,provision):
  # its VMs were made, its run found no shards and the VMs stayed up.
  for stages in (['provision', 'prepare', 'run', 'cleanup', 'teardown'],
                 ['provision', 'teardown'], ['prepare', 'cleanup'],
                 ['provision', 'prepare', 'cleanup', 'teardown'], ['run'],
                 ['run', 'cleanup', 'teardown']):
    pkb_flags.run_stage = stages
    assert pkb._Stages() == stages  # pylint: disable=protected-access
  for stages, line in (
      (['provision', 'run'], 'after provision comes prepare or teardown, not '
       'run.'),
      (['run', 'provision'], 'after run comes cleanup, not provision.'),
      (['run', 'run'], 'after run comes cleanup, not run.'),
      (['teardown', 'cleanup'], 'teardown is the last stage, not cleanup.'),
      (['all', 'teardown'], 'all stands for every stage; give it alone, or a '
       'list of stages.'),
      (['provision', '', 'run'], "unknown stage(s) ''; use")):
    pkb_flags.run_stage = stages
    with pytest.raises(errors.UsageError) as raised:
      pkb._Stages()  # pylint: disable=protected-access
    assert line in str(raised.value), raised.value


def test_a_dry_run_of_a_teardown_deletes_nothing(pkb_flags, tmp_path, capsys,
                                                 monkeypatch):
  # ./pkb.py --run_stage=teardown --run_uri=X --dry_run deleted every
  # resource of run X ("Run X: every recorded resource is deleted.").
  record = run_record.RunRecord.Create(str(tmp_path / 'dry1'), 'dry1',
                                       cloud='Local')
  record.AddResource('local_vm', 'servers-0')
  deleted = []
  monkeypatch.setattr(pkb.resource, 'TeardownFromRecord',
                      lambda record: deleted.append(record) or [])
  pkb_flags.dry_run = True
  try:
    code = pkb._TeardownOnly(str(tmp_path / 'dry1'))  # pylint: disable=protected-access
  finally:
    run_log.TearDown()
  assert code == pkb.EXIT_OK and deleted == []
  assert capsys.readouterr().out == (
      'Dry run of the teardown of run dry1: 1 live resource(s) in its record '
      'would be deleted; nothing was deleted.\n')
  reloaded = run_record.RunRecord.Load(str(tmp_path / 'dry1'))
  assert reloaded.status == 'running'
  assert [e['status'] for e in reloaded.Resources()] == ['creating']


@pytest.mark.e2e
def test_a_torn_down_run_is_not_sent_back_to_provision(tmp_path):
  """--run_stage=run after teardown advised --run_stage=provision, which
  was then refused (a run_uri is never provisioned twice)."""
  run_uri = 'tdown1'
  record = run_record.RunRecord.Create(str(tmp_path / run_uri), run_uri,
                                       cloud='Local',
                                       benchmarks=['redis_memtier'])
  for stage in ('provision', 'prepare', 'run', 'cleanup'):
    record.MarkStageDone(stage)
  record.MarkStageDone('teardown')  # As ./pkb.py --run_stage=teardown does.
  lines = {}
  for stages in ('run', 'prepare,run', 'cleanup', 'provision'):
    done = pkb_forkserver.Run(
        [sys.executable, os.path.join(REPO, 'pkb.py'), f'--run_uri={run_uri}',
         f'--run_stage={stages}', f'--results_dir={tmp_path}'],
        timeout=120, cwd=REPO, check=False)
    assert done.returncode == 2, done.stderr
    line, = done.stderr.strip().splitlines()
    lines[stages] = line
  for stages in ('run', 'prepare,run', 'cleanup'):
    assert lines[stages] == (
        f'pkb: --run_stage={stages}: run {run_uri} was torn down, nothing of '
        f'it is left to {stages.split(",")[0]}; start a new run (leave '
        '--run_uri out, or pick another) with --run_stage=all or '
        'provision,prepare,run.')
  # The advice holds: what it rules out is refused, with the same way on.
  assert 'leave --run_uri out for a new run' in lines['provision']


def _DriverBug(monkeypatch, capsys, run_dir, key):
  """pkb's outermost handler around a driver that sets the console up (and
  pkb.log in run_dir, if given) and then hits a bug: KeyError(key).
  Returns (exit code, stderr)."""

  def RunBenchmarks(argv):
    del argv
    run_log.SetUp(run_dir)  # What the driver does once it knows its dir.
    return {}[key]

  monkeypatch.setattr(pkb, 'RunBenchmarks', RunBenchmarks)
  try:
    code = pkb._Reported(['pkb'])  # pylint: disable=protected-access
  finally:
    run_log.TearDown()
  return code, capsys.readouterr().err


def test_a_bug_outside_a_stage_is_one_line_its_traceback_in_pkb_log(
    tmp_path, capsys, monkeypatch):
  run_dir = str(tmp_path / 'lines6')
  code, err = _DriverBug(monkeypatch, capsys, run_dir, 'driver')
  assert code == pkb.EXIT_FAILED
  assert 'Traceback' not in err and 'ERROR' not in err, err
  log = os.path.join(run_dir, 'pkb.log')
  assert err == (f"pkb: internal error KeyError: 'driver' (traceback in "
                 f'{log})\n'), err
  with open(log) as f:
    assert 'Traceback' in f.read()


def test_a_bug_before_pkb_log_exists_keeps_its_traceback_on_the_console(
    capsys, monkeypatch):
  code, err = _DriverBug(monkeypatch, capsys, None, 'flags')
  assert code == pkb.EXIT_FAILED
  # Nowhere else to keep it: the traceback, then the one line.
  assert 'Traceback' in err and "KeyError: 'flags'" in err, err
  assert err.endswith("pkb: internal error KeyError: 'flags'\n"), err


@pytest.mark.parametrize('accepted,ending', [
    (True, '; exit 0 as --accept_unconfirmed asks.'),
    (False, '; exit 4 (--accept_unconfirmed exits 0).')])
def test_no_load_under_the_cap_is_one_line_with_the_exit_it_makes(
    pkb_flags, tmp_path, capsys, accepted, ending):
  # With --accept_unconfirmed the line said 'exit 4 (--accept_unconfirmed
  # exits 0).' and pkb added 'pkb: exit 0 as --accept_unconfirmed asks.'.
  pkb_flags.cloud = 'Local'
  pkb_flags.accept_unconfirmed = accepted

  def Run(spec):
    raise errors.NoLoadUnderCapError(
        'Every probe was over the 1 ms cap (lowest average 2.072 ms at '
        '1x32) when the probe budget of 1 ran out.')

  code = _Run(tmp_path, 'lines7', Run, lambda spec: None)
  assert code == pkb.EXIT_UNCONFIRMED  # pkb.Main makes it 0 when accepted.
  line, = [l for l in capsys.readouterr().err.splitlines()
           if l.startswith('pkb:')]
  assert line.startswith('pkb: no confirmed result: lines_stub found no load '
                         'under the cap (UNCONFIRMED): Every probe was over ')
  assert line.endswith(ending)


class _Killed(Exception):
  """What SIGTERM's default action (the process ends, silently) stands for
  in this process."""


def test_a_signal_while_teardown_loads_says_how_to_resume(
    pkb_flags, tmp_path, capsys, monkeypatch):
  # SIGTERM in the ~2 s --run_stage=teardown spends loading the provider
  # modules killed pkb without a word, nothing deleted, exit -15.
  record = run_record.RunRecord.Create(str(tmp_path / 'td1'), 'td1',
                                       cloud='Local')
  record.AddResource('local_vm', 'servers-0')

  def Loading(kinds):
    list(kinds)
    os.kill(os.getpid(), signal.SIGTERM)

  def Killed(signum, frame):
    raise _Killed()

  monkeypatch.setattr(pkb.providers, 'LoadKindsOf', Loading)
  previous = signal.signal(signal.SIGTERM, Killed)
  try:
    code = pkb._TeardownOnly(str(tmp_path / 'td1'))  # pylint: disable=protected-access
  except _Killed:
    code = 'killed without a word'
  finally:
    signal.signal(signal.SIGTERM, previous)
    run_scope.ReleaseAll()
    run_log.TearDown()
  err = capsys.readouterr().err
  assert code == pkb.EXIT_INTERRUPTED
  assert err == (
      'pkb: interrupted by SIGTERM while the teardown of run td1 was '
      'starting: nothing was deleted; delete its resources with the same '
      'command, ./pkb.py --run_stage=teardown --run_uri=td1 '
      f'--results_dir={tmp_path}\n')
  reloaded = run_record.RunRecord.Load(str(tmp_path / 'td1'))
  assert [e['status'] for e in reloaded.Resources()] == ['creating']
