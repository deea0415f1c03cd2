"""--timing_measurements: PKB's End to End Runtime and per-stage timing samples.

Real ./pkb.py runs on the Local cloud with a probe budget of 2 (the timing
samples do not depend on the search), reading the results JSON; one
in-process run of pkb's stage driver (pkb._RunOne) with a stub benchmark
checks a results file that refuses the timing samples.
"""

import io
import os
import types

import pytest

from perfkitbenchmarker import benchmark_spec as spec_lib
from perfkitbenchmarker import errors
from perfkitbenchmarker import flags as pkb_flags_lib
from perfkitbenchmarker import pkb
from perfkitbenchmarker import reporting
from perfkitbenchmarker import run_record
from perfkitbenchmarker import run_signals
from perfkitbenchmarker import sample as sample_lib
from perfkitbenchmarker.publishers import publisher

import e2e_support as e2e

# Every test here starts a process (tests/tier_guard.py).
pytestmark = pytest.mark.e2e

# The timing samples do not depend on the search: FAST's cap, which no
# loaded machine reaches, so the run succeeds whatever else runs here.
QUICK = e2e.FAST + ['--memtier_max_probes=2']
STAGES = ('Resource Provisioning', 'Benchmark Prepare', 'Benchmark Run',
          'Benchmark Cleanup', 'Resource Teardown')
END_TO_END = 'End to End Runtime'


def _Run(tmp_path, *args):
  """A real run; its samples by metric (each metric appears once here)."""
  proc, run_uri = e2e.Run(QUICK + list(args), str(tmp_path))
  assert 'Traceback' not in proc.stderr
  rows = e2e.Samples(str(tmp_path), run_uri)
  timing_rows = [r for r in rows
                 if r['metric'].endswith(('Runtime', 'Timestamp'))]
  timing = {r['metric']: r for r in timing_rows}
  assert len(timing) == len(timing_rows)  # No metric twice.
  return proc, timing


def test_default_emits_only_end_to_end_runtime(tmp_path):
  proc, timing = _Run(tmp_path)
  assert proc.returncode == 0, proc.stderr
  assert list(timing) == [END_TO_END]
  assert timing[END_TO_END]['unit'] == 'seconds'
  assert timing[END_TO_END]['value'] > 0


def test_runtimes_and_timestamps_per_stage(tmp_path):
  proc, timing = _Run(tmp_path, '--timing_measurements=runtimes,timestamps')
  assert proc.returncode == 0, proc.stderr
  # PKB's order: End to End Runtime, then per stage runtime, start, stop.
  assert list(timing) == [END_TO_END] + [
      f'{stage} {what}' for stage in STAGES
      for what in ('Runtime', 'Start Timestamp', 'Stop Timestamp')]
  assert all(r['unit'] == 'seconds' for r in timing.values())
  runtimes = [timing[f'{stage} Runtime']['value'] for stage in STAGES]
  assert all(value >= 0 for value in runtimes)
  # Provision through teardown covers every stage, and nothing else runs
  # in parallel with them.
  assert sum(runtimes) <= timing[END_TO_END]['value'] + 0.1
  previous_stop = 0.0
  for stage, runtime in zip(STAGES, runtimes):
    start = timing[f'{stage} Start Timestamp']['value']
    stop = timing[f'{stage} Stop Timestamp']['value']
    assert previous_stop <= start <= stop, stage
    assert stop - start == pytest.approx(runtime, abs=1e-3)
    previous_stop = stop


def test_none_emits_no_timing_samples(tmp_path):
  proc, timing = _Run(tmp_path, '--timing_measurements=none')
  assert proc.returncode == 0, proc.stderr
  assert not timing


def test_stages_before_a_failed_run_stage_are_kept(tmp_path):
  # Every probe is over a 0.001 ms cap: the run stage fails after probing.
  proc, timing = _Run(tmp_path, '--timing_measurements=runtimes',
                      '--memtier_latency_cap=0.001',
                      '--memtier_latency_capped_search=linear',
                      '--noaccept_unconfirmed')
  assert proc.returncode == 4  # No load under the cap: an unconfirmed end.
  assert 'Every probe was over the 0.001 ms cap' in proc.stderr
  # Not the failed run stage, and no End to End Runtime; cleanup and
  # teardown still ran to their end after it.
  assert list(timing) == ['Resource Provisioning Runtime',
                          'Benchmark Prepare Runtime',
                          'Benchmark Cleanup Runtime',
                          'Resource Teardown Runtime']
  assert all(r['value'] >= 0 for r in timing.values())


@pytest.mark.parametrize('value,needle', [
    ('bogus', 'unknown value(s) bogus'),
    ('none,runtimes', 'none cannot be combined'),
])
def test_bad_values_are_refused_before_anything_starts(tmp_path, value,
                                                       needle):
  proc, run_uri = e2e.Run([f'--timing_measurements={value}'], str(tmp_path))
  assert proc.returncode == pkb.EXIT_USAGE
  assert 'Traceback' not in proc.stderr
  lines = proc.stderr.strip().splitlines()
  assert len(lines) == 1, proc.stderr
  assert lines[0].startswith('pkb: --timing_measurements')
  assert needle in lines[0]
  assert not os.path.exists(tmp_path / run_uri)  # Nothing was created.


class _RefusingPublisher:
  """A results file that takes the benchmark's rows but no timing sample."""

  def __init__(self):
    self.rows = []

  def Publish(self, row):
    if row['metric'].endswith('Runtime'):
      raise errors.ResultsFileError('results.json: cannot write it (full)')
    self.rows.append(row)

  def Close(self):
    pass


def _StubBenchmark(fail_in_run):
  module = types.ModuleType('timing_stub_benchmark')
  module.BENCHMARK_NAME = 'timing_stub'
  module.Prepare = lambda spec: None

  def Run(spec):
    spec.EmitSamples([sample_lib.Sample('throughput', 1.0, 'ops/sec')])
    if fail_in_run:
      raise errors.Error('stub run failed')
    return spec.published

  module.Run = Run
  module.Cleanup = lambda spec: None
  return module


@pytest.mark.parametrize('fail_in_run', [False, True])
def test_unwritable_timing_samples_fail_the_run(pkb_flags, tmp_path, capsys,
                                                fail_in_run):
  pkb_flags.cloud = 'Local'
  pkb_flags.timing_measurements = ['runtimes']
  module = _StubBenchmark(fail_in_run)
  config = {'vm_groups': {'servers': {
      'vm_spec': {'Local': {'machine_type': 'local'}}, 'vm_count': 1}}}
  record = run_record.RunRecord.Create(
      str(tmp_path / 'timing1'), 'timing1', cloud='Local',
      benchmarks=[module.BENCHMARK_NAME])
  sink = _RefusingPublisher()
  collector = publisher.SampleCollector(
      [sink], publisher.RunInfo(run_uri='timing1', owner='tester'))
  ticks = iter(range(1000))
  code = pkb._RunOne(  # pylint: disable=protected-access
      module, config, 'timing1', record, None, collector,
      reporting.ConsoleReporter(io.StringIO()), spec_lib.Deadline(None),
      list(pkb_flags_lib.RUN_STAGES), run_signals.Interrupts(),
      clock=lambda: float(next(ticks)))
  err = capsys.readouterr().err
  assert code == pkb.EXIT_FAILED
  assert [r['metric'] for r in sink.rows] == ['throughput']
  assert run_record.RunRecord.Load(record.run_dir).status == 'failed'
  if fail_in_run:  # The run's own failure is the one its line names.
    assert 'timing_stub stopped: stub run failed' in err
    assert 'the 1 samples measured before that are kept' in err
    assert 'pkb: timing samples not written: results.json' in err
  else:  # As End to End Runtime's write failure always did.
    assert 'timing_stub stopped: results.json: cannot write it' in err
    assert 'samples measured before that' not in err
