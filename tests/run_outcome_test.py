"""A run's outcome in its record, across the invocations of one run.

A run stopped (or failed) in one invocation and cleaned up and torn down in
a later one kept that later invocation's word: the upstream PKB plugin runs
the harness's `--run_stage=run`, and after a Ctrl-C upstream calls the
plugin's Cleanup, which runs `--run_stage=cleanup,teardown`; that record
then said `succeeded` with no `run` among its finished stages. A later
`./pkb.py --run_stage=teardown` made it `torn_down`, losing the outcome too.

In-process runs of pkb's stage driver (pkb._RunOne) with a stub benchmark
on the Local cloud, one call per invocation of the run, as
stage_lines_test has them; the teardown from the record is pkb's own.
"""

import io
import types

from absl import flags
import pytest

from perfkitbenchmarker import benchmark_spec as spec_lib
from perfkitbenchmarker import errors
from perfkitbenchmarker import flags as pkb_flags_lib
from perfkitbenchmarker import pkb
from perfkitbenchmarker import reporting
from perfkitbenchmarker import run_log
from perfkitbenchmarker import run_plan
from perfkitbenchmarker import run_record
from perfkitbenchmarker import run_scope
from perfkitbenchmarker import run_signals
from perfkitbenchmarker.publishers import publisher

CONFIG = {'vm_groups': {'servers': {
    'vm_spec': {'Local': {'machine_type': 'local'}}, 'vm_count': 1}}}


def _Interrupted(spec):
  raise errors.RunInterrupted('interrupted by SIGINT')


def _Failed(spec):
  raise errors.ProcessError('memtier_benchmark exited 1')


def _Unconfirmed(spec):
  raise errors.NoLoadUnderCapError('Every probe was over the 1 ms cap')


def _Module(run, cleanup=lambda spec: None, name='outcome_stub'):
  module = types.ModuleType(f'{name}_benchmark')
  module.BENCHMARK_NAME = name
  module.Prepare = lambda spec: None
  module.Run = run
  module.Cleanup = cleanup
  return module


def _Invoke(tmp_path, run_uri, stages, run=lambda spec: [],
            cleanup=lambda spec: None, then=()):
  """One invocation of the run with `stages` (RunRecord.Create reads the
  record an earlier one left), its benchmark's Run `run`, then one more
  benchmark for each Run in `then` (--benchmarks=a,b); its exit code (the
  worst, as pkb's) and the record read back."""
  modules = [_Module(run, cleanup)] + [
      _Module(more, name=f'outcome_stub{i}') for i, more in enumerate(then)]
  run_dir = str(tmp_path / run_uri)
  record = run_record.RunRecord.Create(
      run_dir, run_uri, cloud='Local',
      benchmarks=[m.BENCHMARK_NAME for m in modules])
  collector = publisher.SampleCollector(
      [], publisher.RunInfo(run_uri=run_uri, owner='tester'))
  run_log.SetUp(run_dir)
  code = pkb.EXIT_OK
  try:
    for module in modules:
      code = max(code, pkb._RunOne(  # pylint: disable=protected-access
          module, CONFIG, run_uri, record, run_plan.Catalog(flags.FLAGS),
          collector,
          reporting.ConsoleReporter(io.StringIO()), spec_lib.Deadline(None),
          list(stages), run_signals.Interrupts(run_uri, run_dir)))
  finally:
    run_log.TearDown()
  return code, run_record.RunRecord.Load(run_dir, run_uri)


def _TeardownOnly(tmp_path, run_uri):
  """./pkb.py --run_stage=teardown --run_uri=<run_uri>, in this process."""
  try:
    code = pkb._TeardownOnly(str(tmp_path / run_uri))  # pylint: disable=protected-access
  finally:
    run_scope.ReleaseAll()
    run_log.TearDown()
  return code, run_record.RunRecord.Load(str(tmp_path / run_uri), run_uri)


def _Stopped(tmp_path, run_uri, run, status):
  """A run provisioned and prepared, then stopped in its run stage (the
  plugin's invocations: provision,prepare, then run)."""
  code, record = _Invoke(tmp_path, run_uri, ['provision', 'prepare'])
  assert code == pkb.EXIT_OK and record.status == 'succeeded'
  _, record = _Invoke(tmp_path, run_uri, ['run'], run=run)
  assert record.status == status
  assert 'run' not in record.stages_done
  assert list(record.LiveResources())  # Left for the teardown to come.


@pytest.mark.parametrize('run, status', [
    (_Interrupted, 'interrupted'), (_Failed, 'failed'),
    (_Unconfirmed, 'failed')])
def test_a_later_cleanup_and_teardown_keep_the_runs_outcome(
    pkb_flags, tmp_path, capsys, run, status):
  """The plugin's Cleanup after a Ctrl-C (or after a search that failed or
  found no answer): its cleanup and teardown are done, and the record says
  so; the run is still what it was."""
  pkb_flags.cloud = 'Local'
  _Stopped(tmp_path, 'out1', run, status)
  code, record = _Invoke(tmp_path, 'out1', ['cleanup', 'teardown'])
  assert code == pkb.EXIT_OK, capsys.readouterr().err
  assert record.status == status
  assert record.stages_done[-2:] == ['cleanup', 'teardown']
  assert 'run' not in record.stages_done
  assert not list(record.LiveResources())


def test_a_later_teardown_from_the_record_keeps_the_runs_outcome(
    pkb_flags, tmp_path, capsys):
  """./pkb.py interrupted, then ./pkb.py --run_stage=teardown --run_uri=X:
  the record said torn_down, the interrupt gone from it."""
  pkb_flags.cloud = 'Local'
  _Stopped(tmp_path, 'out2', _Interrupted, 'interrupted')
  code, record = _TeardownOnly(tmp_path, 'out2')
  assert code == pkb.EXIT_OK, capsys.readouterr().err
  assert record.status == 'interrupted'
  assert record.stages_done[-1] == 'teardown'
  assert not list(record.LiveResources())


@pytest.mark.parametrize('closing', [['cleanup', 'teardown'], ['teardown']])
def test_a_run_whose_pkb_was_killed_is_recorded_interrupted(
    pkb_flags, tmp_path, capsys, closing):
  """A pkb killed in its run stage (SIGKILL: the plugin's last resort)
  leaves its record `running`; the invocation that tears the run down
  knows no other pkb holds the run (its lock), so it ended unfinished."""
  pkb_flags.cloud = 'Local'
  code, record = _Invoke(tmp_path, 'out3', ['provision', 'prepare'])
  assert code == pkb.EXIT_OK
  record.SetStatus('running')  # As a pkb killed in its next stage leaves it.
  if closing == ['teardown']:
    code, record = _TeardownOnly(tmp_path, 'out3')
  else:
    code, record = _Invoke(tmp_path, 'out3', closing)
  assert code == pkb.EXIT_OK, capsys.readouterr().err
  assert record.status == 'interrupted'
  assert record.stages_done[-1] == 'teardown'


def test_a_teardown_that_fails_after_a_run_that_succeeded_says_failed(
    pkb_flags, tmp_path, capsys, monkeypatch):
  """As the same teardown within the run's own invocation says: a run whose
  resources are left did not end well. Before, --run_stage=teardown left
  the record's status as it was."""
  pkb_flags.cloud = 'Local'
  code, record = _Invoke(tmp_path, 'out4', ['provision', 'prepare', 'run'])
  assert code == pkb.EXIT_OK and record.status == 'succeeded'
  monkeypatch.setattr(pkb.resource, 'TeardownFromRecord',
                      lambda record: ['local_vm servers-0: refused'])
  code, record = _TeardownOnly(tmp_path, 'out4')
  assert code == pkb.EXIT_FAILED
  assert 'Teardown left 1 resource(s)' in capsys.readouterr().err
  assert record.status == 'failed'
  assert 'teardown' not in record.stages_done
  monkeypatch.undo()  # the real teardown: its workspace stayed in /tmp
  code, record = _TeardownOnly(tmp_path, 'out4')
  assert code == pkb.EXIT_OK and not list(record.LiveResources())


def test_an_interrupted_run_resumed_to_its_end_succeeds(pkb_flags, tmp_path,
                                                        capsys):
  """The rule is for invocations that only clean up and tear down: one
  that runs the run stage again makes the run's outcome anew."""
  pkb_flags.cloud = 'Local'
  _Stopped(tmp_path, 'out5', _Interrupted, 'interrupted')
  code, record = _Invoke(tmp_path, 'out5', ['run', 'cleanup', 'teardown'])
  assert code == pkb.EXIT_OK, capsys.readouterr().err
  assert record.status == 'succeeded'
  assert {'run', 'cleanup', 'teardown'} <= set(record.stages_done)


def test_cleanup_and_teardown_of_a_run_with_no_earlier_invocation(
    pkb_flags, tmp_path, capsys):
  """A record made by the closing invocation itself (`running` as made,
  not as a killed pkb left it): nothing went wrong."""
  pkb_flags.cloud = 'Local'
  code, record = _Invoke(tmp_path, 'out6', ['cleanup', 'teardown'])
  assert code == pkb.EXIT_OK, capsys.readouterr().err
  assert record.status == 'succeeded'


@pytest.mark.parametrize('first, exit_code', [
    (_Failed, pkb.EXIT_FAILED), (_Unconfirmed, pkb.EXIT_UNCONFIRMED)])
def test_a_benchmark_that_went_wrong_is_not_undone_by_the_next(
    pkb_flags, tmp_path, capsys, first, exit_code):
  """--benchmarks=a,b: a failed and b succeeded, and the record said
  `succeeded` (each benchmark's end set the run's outcome; the last one
  stayed) while pkb exited 1. What went wrong first stays."""
  pkb_flags.cloud = 'Local'
  pkb_flags.timing_measurements = ['none']  # no sample: no version lookup
  code, record = _Invoke(tmp_path, 'out7', list(pkb_flags_lib.RUN_STAGES), run=first,
                         then=[lambda spec: []])
  assert code == exit_code, capsys.readouterr().err
  assert record.status == 'failed'
