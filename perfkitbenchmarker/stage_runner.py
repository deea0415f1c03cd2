"""The stage runner for one benchmark: its stages, its end, its exit code.

The seam: pkb.py owns everything about the command (flags, the plan and
budget checks, run_uri, the lock, the run record, the publishers, signals
and the deadline) and calls `RunOne` once per benchmark with all of it made.
This module only runs that benchmark's stages in PKB's order (provision or
restore, prepare, run), then its cleanup and teardown whatever happened
before (`_Finish`), emits its --timing_measurements samples, prints the one
line a user sees for a failure, sets the record's status and returns the
benchmark's exit code. It reads no flags: the driver passes the cloud, the
parsed flags the spec is built from and the parsed timing measurements.
"""

import logging
import sys
import time
from typing import Callable, List, Optional, Set

from perfkitbenchmarker import benchmark_contract
from perfkitbenchmarker import benchmark_spec as spec_lib
from perfkitbenchmarker import errors
from perfkitbenchmarker import flags as pkb_flags
from perfkitbenchmarker import resource
from perfkitbenchmarker import run_log
from perfkitbenchmarker import run_record as run_record_lib
from perfkitbenchmarker import run_signals
from perfkitbenchmarker import sample as sample_lib
from perfkitbenchmarker import timing_util
from perfkitbenchmarker import verdict
from perfkitbenchmarker import vm_util

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130
# A search that measured but found no load under the cap: an unconfirmed
# answer the user can act on, not an error (README: "Verdicts").
EXIT_UNCONFIRMED = verdict.EXIT_UNCONFIRMED


def TestName(module, cloud: str) -> str:
  """The `test` a benchmark's rows are published under: its name, unless
  the module says otherwise for this cloud (redis_enterprise on Local, where
  Redis OSS stands in, is never published as redis_enterprise)."""
  return benchmark_contract.Call(module, 'PublishedTestName', cloud)


def RunOne(module, config, run_uri, record, catalog, collector, reporter,
           deadline, stages, interrupts, *, cloud: str, flag_values,
           measurements: Set[str], ssh_waiter=None,
           clock: Callable[[], float] = time.time) -> int:
  """Runs one benchmark's stages; returns its exit code.

  `cloud` is the provider's name, `flag_values` the parsed flags the spec
  reads its settings from, `measurements` the parsed --timing_measurements.
  `clock` (seconds since the epoch) times the run and each stage for the
  --timing_measurements samples, emitted after teardown.
  """
  spec = spec_lib.BenchmarkSpec(
      module, config, run_uri, cloud, record, flag_values, catalog,
      lambda samples: collector.Add(samples, TestName(module, cloud)),
      reporter=reporter, deadline=deadline, ssh_waiter=ssh_waiter)
  uses_vms = bool({'prepare', 'run'} & set(stages))
  if 'provision' not in stages and uses_vms:
    # Before any stage: a refusal here stops nothing the run has running.
    spec.CheckRecordedVms()
  failure: Optional[BaseException] = None
  times = timing_util.StageTimes(clock)
  started = clock()
  try:
    interrupts.Arm()
    if 'provision' in stages:
      with times.Measure('provision'):
        spec.ConstructVirtualMachines()
        spec.Provision()
        record.MarkStageDone('provision')
    else:
      # Cleanup and teardown go by the record: VMs that never came up (a
      # run killed while they started) leave them nothing to do there.
      spec.RestoreVirtualMachines(every_group=uses_vms)
    if 'prepare' in stages:
      with times.Measure('prepare'):
        module.Prepare(spec)
        record.MarkStageDone('prepare')
    if 'run' in stages:
      with times.Measure('run'):
        samples = list(module.Run(spec))
        # PKB's contract: Run returns its samples. The harness's own modules
        # also publish each through spec.EmitSamples as they measure (none
        # is lost if a later probe fails) and return what they published; a
        # module that published nothing has its returned samples published.
        if not spec.published:
          spec.EmitSamples(samples)
        elif len(samples) != len(spec.published):
          raise errors.Error(
              f'internal error: {module.BENCHMARK_NAME}.Run returned '
              f'{len(samples)} samples but published {len(spec.published)}; '
              'publish every sample with spec.EmitSamples.')
        record.MarkStageDone('run')
  except (errors.Error, errors.RunInterrupted, KeyboardInterrupt) as e:
    failure = e
    if not isinstance(e, errors.Error):
      # Said when it happens: cleanup and teardown may take a while yet.
      reason = ('interrupted by SIGINT' if isinstance(e, KeyboardInterrupt)
                else str(e))
      print(f'pkb: {reason}; stopping {module.BENCHMARK_NAME}: '
            f'{_WhatRunsNow(stages)}.', file=sys.stderr)
  except Exception as e:  # pylint: disable=broad-except
    failure = errors.Error(f'internal error {type(e).__name__}: {e}'
                           f'{run_log.Bug("Unexpected error")}')
  finally:
    # Cleanup and teardown run to the end whatever fires now; a second
    # signal may cut them short, and then says how to finish (run_signals).
    interrupts.Protect(teardown='teardown' in stages)
    try:
      cleanup_errors = _Finish(module, spec, stages, failure, times)
    except errors.RunInterrupted as e:
      cleanup_errors = [str(e)]
  failure = failure or interrupts.Pending()
  measured = len(spec.published)
  timing = []
  if (failure is None and not cleanup_errors and
      list(stages) == list(pkb_flags.RUN_STAGES) and
      measurements & {pkb_flags.TIMING_END_TO_END_RUNTIME,
                      pkb_flags.TIMING_RUNTIMES}):
    # PKB's End to End Runtime: provision through teardown, when all ran.
    timing.append(sample_lib.Sample(
        spec_lib.END_TO_END_RUNTIME, clock() - started, 'seconds', {}))
  # Each stage that ran to its end, also in a run that failed later.
  timing.extend(times.Samples(pkb_flags.TIMING_RUNTIMES in measurements,
                              pkb_flags.TIMING_TIMESTAMPS in measurements))
  if timing and not isinstance(failure, errors.ResultsFileError):
    try:
      spec.EmitSamples(timing)
    except errors.Error as e:  # A results file that cannot be written.
      if failure is None:
        failure = e
      else:  # The run's own failure stays the one its line names.
        cleanup_errors.append(f'timing samples not written: {e}')
  no_load = isinstance(failure, errors.NoLoadUnderCapError)
  if no_load:
    # pkb exits 0 for it with --accept_unconfirmed: the one line says so.
    accepted = getattr(flag_values, 'accept_unconfirmed', False)
    exit_words = ('0 as --accept_unconfirmed asks' if accepted else
                  f'{EXIT_UNCONFIRMED} (--accept_unconfirmed exits 0)')
    print(f'pkb: no confirmed result: {module.BENCHMARK_NAME} found no load '
          f'under the cap (UNCONFIRMED): '
          f'{vm_util.Mask(str(failure)).rstrip(".")}; exit {exit_words}.',
          file=sys.stderr)
  elif failure is not None:
    message = str(failure) or type(failure).__name__
    if isinstance(failure, KeyboardInterrupt):
      message = 'interrupted by SIGINT'
    print(f'pkb: {module.BENCHMARK_NAME} stopped: {vm_util.Mask(message)}',
          file=sys.stderr)
    if measured and not isinstance(failure, errors.ResultsFileError):
      print(f'pkb: the {measured} samples measured before that are '
            'kept in the results files.', file=sys.stderr)
  for line in cleanup_errors:
    print(f'pkb: {line}', file=sys.stderr)
  if failure is not None and not no_load and 'teardown' not in stages:
    # PKB's stages: a run without teardown keeps its resources, also when
    # it stops; the one line says how many, and how to delete them.
    left = len(list(record.LiveResources()))
    if left:
      print(f'pkb: {left:,} resource(s) of run {run_uri} are left '
            '(teardown is not among its stages); delete them with '
            f'{run_signals.TeardownCommand(run_uri, record.run_dir)}',
            file=sys.stderr)
  interrupted = isinstance(failure, (errors.RunInterrupted, KeyboardInterrupt))
  record.SetStatus('interrupted' if interrupted else
                   'failed' if failure or cleanup_errors else 'succeeded',
                   closing_only=set(stages) <= set(
                       run_record_lib.CLOSING_STAGES))
  # A record that could not be saved: cleanup went by the one in memory.
  record_problem = record.WriteProblem()
  if record_problem:
    print(f'pkb: {record_problem}', file=sys.stderr)
  if interrupted:
    return EXIT_INTERRUPTED
  if cleanup_errors or record_problem:
    return EXIT_FAILED
  if isinstance(failure, errors.UsageError):
    # Bad input found only once a machine was reached (a program there
    # another user can write, a setting the machine refuses): a refusal,
    # as before the run, not a failure of the run.
    return EXIT_USAGE
  if failure and not no_load:
    return EXIT_FAILED
  return EXIT_UNCONFIRMED if no_load else EXIT_OK


def _WhatRunsNow(stages) -> str:
  """What a stopped benchmark still does (_Finish): cleanup always, teardown
  only when it is among the stages asked for."""
  if 'teardown' in stages:
    return 'cleanup and teardown run now'
  return 'cleanup runs now (teardown is not among its stages)'


def _Finish(module, spec, stages, failure,
            times: timing_util.StageTimes) -> List[str]:
  """Runs cleanup and teardown (as requested) whatever happened before.

  `times` gets each of the two that ran to its end (a teardown that left
  resources did not).
  """
  problems = []
  # A later stage refused before it changed anything (errors.RestoreRefusal)
  # leaves the run as prepare left it: its cleanup stopped the shards that
  # the refusal told the user to run again with other flags.
  stopped = failure is not None and not isinstance(failure,
                                                   errors.RestoreRefusal)
  if 'cleanup' in stages or stopped:
    try:
      with times.Measure('cleanup'):
        module.Cleanup(spec)
        spec.record.MarkStageDone('cleanup')
    except Exception as e:  # pylint: disable=broad-except
      # One line on the console (below); the traceback in pkb.log (a
      # bug's where run_log.Bug can put it).
      what = where = ''
      if isinstance(e, errors.Error):
        logging.info('Cleanup failed', exc_info=True)
      else:
        where = run_log.Bug('Cleanup failed')
        what = f'internal error {type(e).__name__}: '
      problems.append(f'cleanup failed: {what}{vm_util.Mask(str(e))}{where}')
  if 'teardown' in stages:
    teardown_started = times.Now()
    failures = spec.Teardown()
    if failures:
      retry = run_signals.TeardownCommand(spec.run_uri, spec.record.run_dir)
      problems.append(f'teardown left {len(failures):,} resource(s) (retry '
                      f'with {retry}): ' + resource.FailureSummary(failures))
    else:
      spec.record.MarkStageDone('teardown')
      times.Add('teardown', teardown_started)
  return problems
