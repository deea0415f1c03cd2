"""The command-line driver: flags, stages, signals, deadline, publishing.

Stages run in PKB's order (provision, prepare, run, cleanup, teardown). When a
stage fails or the run is interrupted (SIGINT, SIGTERM, --timeout_minutes),
the requested cleanup and teardown still run, every sample already published
stays in the results files, and the user sees one line saying what happened.
One benchmark's stages, its cleanup/teardown and its exit code are
stage_runner.py's; this module makes everything they run with.
"""

import contextlib
import functools
import getpass
import os
import re
import sys
import time
from typing import Callable, List, Optional

from absl import flags

from perfkitbenchmarker import benchmark_spec as spec_lib
from perfkitbenchmarker import configs
from perfkitbenchmarker import data
from perfkitbenchmarker import errors
from perfkitbenchmarker import evidence
from perfkitbenchmarker import flags as pkb_flags
from perfkitbenchmarker import input_checks
from perfkitbenchmarker import linux_benchmarks
from perfkitbenchmarker import matrix_runner
from perfkitbenchmarker import paths
from perfkitbenchmarker import prepare_checks
from perfkitbenchmarker import providers
from perfkitbenchmarker import reporting
from perfkitbenchmarker import resource
from perfkitbenchmarker import run_log
from perfkitbenchmarker import run_plan
from perfkitbenchmarker import run_record as run_record_lib
from perfkitbenchmarker import run_scope
from perfkitbenchmarker import run_signals
from perfkitbenchmarker import ssh_vm
from perfkitbenchmarker import stage_runner
from perfkitbenchmarker import terminal_text
from perfkitbenchmarker import timing_util
from perfkitbenchmarker import trusted_programs
from perfkitbenchmarker import verdict as verdict_lib
from perfkitbenchmarker import vm_util
from perfkitbenchmarker.providers.aws import flags as _aws_flags  # pylint: disable=unused-import
from perfkitbenchmarker.providers.gcp import flags as _gcp_flags  # pylint: disable=unused-import
from perfkitbenchmarker.publishers import bigquery_options  # (flags)
from perfkitbenchmarker.publishers import csv_publisher
from perfkitbenchmarker.publishers import json_publisher
from perfkitbenchmarker.publishers import publisher

FLAGS = pkb_flags.FLAGS
EXIT_OK, EXIT_FAILED = stage_runner.EXIT_OK, stage_runner.EXIT_FAILED
EXIT_USAGE = stage_runner.EXIT_USAGE
EXIT_INTERRUPTED = stage_runner.EXIT_INTERRUPTED
# The run finished but its answer is not a confirmed server figure.
EXIT_UNCONFIRMED = verdict_lib.EXIT_UNCONFIRMED


# The stages that may follow each one in a --run_stage list, as upstream
# PKB's parser has them (stages.py): in order, none skipped, but teardown may
# follow provision and cleanup prepare.
_NEXT_STAGES = {'provision': ('prepare', 'teardown'),
                'prepare': ('run', 'cleanup'), 'run': ('cleanup',),
                'cleanup': ('teardown',), 'teardown': ()}


def _Stages() -> List[str]:
  stages = pkb_flags.RunStages(FLAGS.run_stage)
  if 'all' in stages:
    raise errors.UsageError(
        f'--run_stage={",".join(stages)}: all stands for every stage; give '
        'it alone, or a list of stages.')
  bad = [s or "''" for s in stages if s not in pkb_flags.RUN_STAGES]
  if bad or not stages:
    raise errors.UsageError(
        f'--run_stage has unknown stage(s) {", ".join(bad) or "(none)"}; use '
        f'{", ".join(pkb_flags.RUN_STAGES)} or all.')
  for previous, stage in zip(stages, stages[1:]):
    # Refused before anything is made: `provision,run` would leave VMs up
    # after its run found no shards.
    nexts = _NEXT_STAGES[previous]
    if stage not in nexts:
      order = (f'after {previous} comes {" or ".join(nexts)}' if nexts else
               f'{previous} is the last stage')
      raise errors.UsageError(
          f'--run_stage={",".join(stages)}: stages go in order without '
          f'skipping one (as upstream PKB): {order}, not {stage}.')
  return stages


def _TimingMeasurements():
  return timing_util.Parse(FLAGS.timing_measurements)


def _RunUri(stages: List[str]) -> str:
  if FLAGS.run_uri:
    if not re.fullmatch(run_scope.RUN_URI_PATTERN, FLAGS.run_uri):
      raise errors.UsageError(
          f'--run_uri="{FLAGS.run_uri}" must be 1-12 lowercase letters or '
          'digits.')
    return FLAGS.run_uri
  if 'provision' not in stages:
    raise errors.UsageError(
        f'--run_stage={",".join(stages)} continues an earlier run; give its '
        '--run_uri.')
  return run_record_lib.NewRunUri()


def _Cloud() -> str:
  return providers.CloudOf(FLAGS)


def _ResultsDir() -> str:
  # A checkout's results/runs; installed, PKB's /tmp/perfkitbenchmarker/runs
  # (paths.py): never the directory the command was started in.
  return FLAGS.results_dir or paths.RunsDir()


def _LoadConfig(module, names: List[str]) -> dict:
  text = None
  if FLAGS.benchmark_config_file:
    text = configs.ReadConfigFile(FLAGS.benchmark_config_file)
  configs.CheckOverridesNameBenchmarks(FLAGS.config_override, names)
  return module.GetConfig({'file': text, 'overrides': FLAGS.config_override})


def _LockRun(run_uri: str, run_dir: str, outcome: str) -> None:
  """One pkb per run_uri on this machine, whatever --results_dir says. The
  lock names the run's directory: another run that finds this one at work
  on a static machine names its teardown command from it."""
  lock = run_scope.RunLock(run_uri, run_dir=run_dir)
  try:
    lock.Acquire()
  except OSError as e:  # Writing its owner line, on a full disk.
    raise errors.ResultsFileError(
        f'{run_record_lib.WriteFailure("the run lock", lock.path, e)}; '
        f'{outcome}.') from None


def _TeardownOnly(run_dir: str) -> int:
  # A run that does not exist is refused before anything is made for it.
  record = run_record_lib.RunRecord.Load(run_dir, os.path.basename(run_dir))
  if FLAGS.dry_run:  # A dry run deletes nothing either.
    live = len(list(record.LiveResources()))
    print(f'Dry run of the teardown of run {record.run_uri}: {live:,} live '
          'resource(s) in its record would be deleted; nothing was deleted.')
    return EXIT_OK
  # Signals are noted from here: one while the provider modules load (~2 s
  # for a cloud's) ended pkb without a word (SIGTERM, SIGHUP); now the
  # teardown does not start and the line says how to run it again.
  # As a run's own teardown after that: a first SIGINT, SIGTERM or SIGHUP
  # (the terminal closing) is noted and teardown runs to its end; a second
  # one cuts it short with the command that finishes it (run_signals).
  interrupts = run_signals.Interrupts(record.run_uri, run_dir)
  interrupts.Install(None)
  try:
    # Not while another pkb runs this run (a killed one's lock is gone).
    _LockRun(record.run_uri, run_dir, 'nothing was deleted')
    run_log.SetUp(run_dir)
    # The providers the record names, no other (a Local run's teardown
    # never imports the cloud clients).
    providers.LoadKindsOf(e.get('kind') for e in record.Resources())
    linux_benchmarks.BENCHMARKS  # pylint: disable=pointless-statement
    from perfkitbenchmarker import engines  # pylint: disable=g-import-not-at-top
    engines.ShardKinds()  # Loads every engine, so every shard kind is known.
    try:
      interrupts.Arm()
    except errors.RunInterrupted as e:
      print(f'pkb: {e} while the teardown of run {record.run_uri} was '
            'starting: nothing was deleted; delete its resources with the '
            'same command, '
            f'{run_signals.TeardownCommand(record.run_uri, run_dir)}',
            file=sys.stderr)
      return EXIT_INTERRUPTED
    interrupts.Protect()
    failures = resource.TeardownFromRecord(record)
  finally:
    interrupts.Restore()
  code = _TornDown(record, failures,
                   interrupted=interrupts.Pending() is not None)
  if interrupts.Pending() is None:
    return code
  print(f'pkb: {interrupts.Pending()}; teardown ran to its end first.',
        file=sys.stderr)
  return EXIT_INTERRUPTED


def _TornDown(record, failures: List[str], interrupted: bool) -> int:
  """The end of a teardown from the record: its line and exit code. The
  record says the teardown is done; the run's outcome stays the one it
  had, unless this teardown went wrong (RunRecord.SetStatus)."""
  record.SetStatus('interrupted' if interrupted else
                   'failed' if failures else 'succeeded', closing_only=True)
  if failures:
    print(f'Teardown left {len(failures):,} resource(s): '
          f'{resource.FailureSummary(failures)}', file=sys.stderr)
    return EXIT_FAILED
  record.MarkStageDone('teardown')
  print(f'Run {record.run_uri}: every recorded resource is deleted.')
  problem = record.WriteProblem()
  if problem:
    print(f'pkb: {problem}', file=sys.stderr)
    return EXIT_FAILED
  return EXIT_OK


def _CheckStagesNotRepeated(run_dir: str, run_uri: str,
                            stages: List[str]) -> None:
  """Refuses a stage whose work from an earlier invocation is still live
  (a second set of VMs, second shards with a new password, a second run's
  samples under one run_uri), in one line, before anything starts."""
  if not os.path.exists(os.path.join(run_dir, run_record_lib.RECORD_FILE)):
    return
  record = run_record_lib.RunRecord.Load(run_dir, run_uri)
  live = list(record.LiveResources())
  ran = 'run' in record.stages_done
  # (A record torn down before the teardown went into stages_done says
  # so in its status.)
  torn_down = ('teardown' in record.stages_done or
               record.status == 'torn_down')
  asked = f'--run_stage={",".join(stages)}: run {run_uri}'
  if 'provision' not in stages and torn_down and not live:
    # Its VMs are gone and a run_uri is never provisioned twice: the one
    # way on is a new run (advising --run_stage=provision here would only
    # be refused next).
    raise errors.UsageError(
        f'{asked} was torn down, nothing of it is left to {stages[0]}; '
        'start a new run (leave --run_uri out, or pick another) with '
        '--run_stage=all or provision,prepare,run.')
  provisioned_on = record.info.get('cloud')
  if 'provision' not in stages and provisioned_on not in (None, _Cloud()):
    # This invocation's provider could neither rebuild the run's VMs nor
    # delete its resources (kinds of another provider).
    raise errors.UsageError(
        f'{asked} was provisioned on {provisioned_on} (its record), not '
        f'{_Cloud()}; give the flags it was provisioned with, or delete it '
        'from its record alone with '
        f'{run_signals.TeardownCommand(run_uri, run_dir)}.')
  if 'provision' in stages and ran and not live:  # Two runs under one uri.
    raise errors.UsageError(
        f'{asked} already ran (its record and samples are in {run_dir}); '
        'leave --run_uri out for a new run, or pick another.')
  if 'provision' in stages and torn_down and not live:
    # Torn down by --run_stage=teardown before it ran: still one run.
    raise errors.UsageError(
        f'{asked} was torn down (its record is in {run_dir}); leave '
        '--run_uri out for a new run, or pick another.')
  if 'provision' in stages and live:
    raise errors.UsageError(
        f'{asked} is already provisioned ({len(live)} live resource(s) in '
        'its record); go on with its later stages, or delete it first with '
        f'{run_signals.TeardownCommand(run_uri, run_dir)}.')
  from perfkitbenchmarker import engines  # pylint: disable=g-import-not-at-top
  shards = [e for e in live if e['kind'] in engines.ShardKinds()]
  if 'prepare' in stages and shards:
    raise errors.UsageError(
        f'{asked} is already prepared ({len(shards)} shard(s) running); go '
        'on with --run_stage=run, or stop them first with '
        '--run_stage=cleanup to prepare it again.')


def RunBenchmarks(argv: List[str]) -> int:
  """Runs the benchmarks named by --benchmarks; returns the exit code."""
  stages = _Stages()
  _TimingMeasurements()
  input_checks.CheckRunFlags(FLAGS, _ResultsDir())
  data.SetSearchPaths(FLAGS.data_search_paths,
                      FLAGS['data_search_paths'].present)
  cells = matrix_runner.Cells(FLAGS, stages)
  if cells is not None:  # A matrix config: each cell is a child pkb.py.
    return matrix_runner.RunMatrix(cells, FLAGS, stages, _ResultsDir(),
                                   run_record_lib.NewRunUri)
  run_uri = _RunUri(stages)
  names = FLAGS.benchmarks
  modules = [linux_benchmarks.Get(n) for n in names]
  run_dir = os.path.join(_ResultsDir(), run_uri)
  if stages == ['teardown']:
    input_checks.CheckCloudFlags(FLAGS, _Cloud(), _ResultsDir())
    return _TeardownOnly(run_dir)
  input_checks.CheckResultsPaths(FLAGS, run_dir, run_uri)
  bq_options = bigquery_options.BigQueryOptions.FromFlags(FLAGS)

  loaded = [(m, _LoadConfig(m, names)) for m in modules]
  # After the configs: their flags: sections may name the cloud.
  input_checks.CheckCloudFlags(FLAGS, _Cloud(), _ResultsDir())
  _TimingMeasurements()  # Again: a config's flags: section may set it.
  # After the configs: their flags: sections may set the basis or prices.
  catalog = run_plan.Catalog(FLAGS)
  plans = []
  for module, config in loaded:
    plans.append(run_plan.PlanBenchmark(module, config, run_uri, FLAGS,
                                        catalog))
    if plans[-1].lines:
      print('\n'.join(plans[-1].lines))
  # Per benchmark, kept in the run record (check_estimate; a later stage's
  # prices held to the provisioning one's, CheckRecordedVms).
  kept = {'estimate': {p.spec.name: p.estimate.Record() for p in plans},
          'priced_as': {p.spec.name: p.spec.PricedAs() for p in plans}}
  run_plan.CheckBudget(sum(p.estimate.usd for p in plans), FLAGS, 'This run',
                       stages)
  if FLAGS.dry_run:
    return EXIT_OK
  # Every missing flag and credential at once, before the run has a
  # directory and before any network call.
  prepare_checks.CheckRealRunNeeds([p.spec for p in plans], FLAGS)
  if not FLAGS.use_instance_credentials:
    _KeepCredentialLookupsLocal()
  provider = providers.GetProvider(_Cloud())
  getattr(provider, 'CheckPrerequisites', lambda flag_values: None)(FLAGS)
  # Another user's scratch: refused. Without a check of its own, a
  # provider's machines are reached over SSH.
  getattr(provider, 'CheckRunDirs', ssh_vm.CheckRunDirs)()

  # Signals are handled from before the record exists: one that comes
  # before the stages start is noted, and the first stage's Arm() ends the
  # run as interrupted (a record is never left `running`).
  interrupts = run_signals.Interrupts(run_uri, run_dir)
  timeout_s = FLAGS.timeout_minutes * 60 if FLAGS.timeout_minutes else None
  deadline = spec_lib.Deadline(timeout_s)
  interrupts.Install(timeout_s)
  try:
    return _RunWithRecord(argv, run_uri, names, run_dir, kept, loaded,
                          catalog, bq_options, deadline, stages, interrupts)
  finally:
    interrupts.Restore()


def _RunWithRecord(argv, run_uri, names, run_dir, kept, loaded, catalog,
                   bq_options, deadline, stages, interrupts) -> int:
  """The run from its lock and record on: publishers, stages, the end."""
  # One pkb per run_uri: refused before anything of the run is touched.
  _LockRun(run_uri, run_dir, 'nothing was started')
  json_path, csv_path = input_checks.ResultsPaths(FLAGS, run_dir)
  # The directories a refusal below would leave behind, deepest first.
  new_dirs = [d for path in (run_dir, os.path.dirname(json_path),
                             os.path.dirname(csv_path))
              for d in input_checks.MissingDirs(path)]
  run_info = publisher.RunInfo(run_uri=run_uri,
                               owner=FLAGS.owner or getpass.getuser(),
                               official=FLAGS.official)
  try:
    # Made (or reused) only as the run's own before anything is put in it.
    run_scope.MakeOwnDir(run_dir)
    _CheckStagesNotRepeated(run_dir, run_uri, stages)
    # Before the record: a results file refused leaves no run 'running'.
    # On a full disk the run's raw output makes room for its samples.
    collector = publisher.SampleCollector(
        [json_publisher.JSONPublisher(json_path, FLAGS.collapse_labels),
         csv_publisher.CSVPublisher(csv_path)], run_info,
        functools.partial(evidence.WithRoom, run_dir))
    # Its log too: one the disk refuses (no inode left) left the run's new
    # directory behind, empty, for a run that never started.
    run_log.SetUp(run_dir)
  except errors.Error:
    for directory in sorted(set(new_dirs), key=len, reverse=True):
      with contextlib.suppress(OSError):  # Refused: no trace of the run.
        os.rmdir(directory)  # Only an empty one; anything else stays.
    raise
  record = run_record_lib.RunRecord.Create(
      run_dir, run_uri, cloud=_Cloud(), benchmarks=names,
      **kept, argv=[
          vm_util.Mask(a) for a in argv])
  reporter = reporting.ConsoleReporter(sys.stdout)
  reporter.Line(f'Run {run_uri}: {", ".join(names)} on {_Cloud()}; '
                f'results in {paths.Shown(run_dir)}')

  exit_code = EXIT_OK
  try:
    for module, config in loaded:
      code = _RunOne(module, config, run_uri, record, catalog, collector,
                     reporter, deadline, stages, interrupts)
      exit_code = max(exit_code, code)
  finally:
    interrupts.Restore()
    collector.Close()
  reporter.Line(f'Samples: {paths.Shown(json_path)} and '
                f'{paths.Shown(csv_path)} ({len(collector.samples)} '
                'samples).')
  if bq_options:  # A failure is one line; the exit code stays the run's.
    from perfkitbenchmarker.publishers import bigquery_publisher  # pylint: disable=g-import-not-at-top
    bigquery_publisher.PublishRun(bq_options, json_path, run_uri)
  # Files the run keeps beside its samples (its log, its probes' raw
  # output) that a full disk stopped: one line, and not a clean exit.
  write_failures = [f for f in (run_log.Failure(), evidence.Failure(run_dir))
                    if f]
  if write_failures and exit_code == EXIT_OK:  # Else the run's line says why.
    print(f'pkb: {"; and ".join(write_failures)}', file=sys.stderr)
    exit_code = EXIT_FAILED
  if exit_code == EXIT_UNCONFIRMED and FLAGS.accept_unconfirmed:
    # No load under the cap (the run's line said so, and that it exits 0):
    # accepted like any unconfirmed answer; the other benchmarks' answers
    # are still judged.
    exit_code = EXIT_OK
  if exit_code == EXIT_OK:
    exit_code = _UnconfirmedExit(collector.samples)
  return exit_code


def _KeepCredentialLookupsLocal() -> None:
  """No credential lookup leaves this machine unless asked.

  google-auth and botocore both fall back to the cloud's metadata server
  (169.254.169.254) when they find no credentials on the machine; outside a
  cloud VM that is a connection to an address nobody asked for. Only
  --use_instance_credentials (on a GCP or EC2 VM) lets them go there.
  """
  os.environ['NO_GCE_CHECK'] = 'True'  # google-auth: skip the GCE metadata
  os.environ['AWS_EC2_METADATA_DISABLED'] = 'true'  # botocore: skip IMDS


def _UnconfirmedExit(samples) -> int:
  """EXIT_UNCONFIRMED when the run's answer is not confirmed (one line)."""
  verdict, what = verdict_lib.OfRun(samples)
  if verdict is None or verdict.confirmed:
    return EXIT_OK
  accepted = FLAGS.accept_unconfirmed
  print(f'pkb: no confirmed result: {what} is {verdict.Words()}; exit ' +
        ('0 as --accept_unconfirmed asks.' if accepted else
         f'{EXIT_UNCONFIRMED} (--accept_unconfirmed exits 0).'),
        file=sys.stderr)
  return EXIT_OK if accepted else EXIT_UNCONFIRMED


def _RunOne(module, config, run_uri, record, catalog, collector, reporter,
            deadline, stages, interrupts, ssh_waiter=None,
            clock: Callable[[], float] = time.time) -> int:
  """stage_runner.RunOne with this command's cloud, flags and timing
  measurements (the stage driver's tests call it as RunBenchmarks does)."""
  return stage_runner.RunOne(
      module, config, run_uri, record, catalog, collector, reporter,
      deadline, stages, interrupts, cloud=_Cloud(), flag_values=FLAGS,
      measurements=_TimingMeasurements(), ssh_waiter=ssh_waiter, clock=clock)


def Main(argv: Optional[List[str]] = None) -> int:
  argv = list(sys.argv if argv is None else argv)
  # Nothing the run writes (results, logs, what it builds and checks
  # later) may be writable by others, whatever the caller's umask (000
  # made the library it had just built "not the run's own").
  os.umask(os.umask(0) | 0o022)
  run_signals.GuardOutput()  # A closed terminal must not stop cleanup.
  if linux_benchmarks.LOAD_ERROR is not None:  # Before flags: theirs too.
    # One line, as every error's: a module's own exception text may hold
    # line breaks and terminal escapes.
    print(f'pkb: {_Shown(linux_benchmarks.LOAD_ERROR)}', file=sys.stderr)
    return EXIT_FAILED
  help_text = pkb_flags.HelpText(argv)
  if help_text:
    print(help_text)
    return EXIT_OK
  problem = _NotUtf8(argv) or pkb_flags.FlagFileProblem(argv)
  if problem:
    print(f'pkb: {_Shown(errors.UsageError(problem))}.', file=sys.stderr)
    return EXIT_USAGE
  try:
    positional = FLAGS(pkb_flags.TypedArgv(argv))[1:]
  except flags.Error as e:
    print(f'pkb: {pkb_flags.FlagErrorLine(e)}; see ./pkb.py --helpfull.',
          file=sys.stderr)
    return EXIT_USAGE
  if positional:
    # As upstream's: `./pkb.py memtier_latency_cap=0.5` (dashes forgotten)
    # or `--dry_run yes` must not run the default study instead.
    print(f'pkb: unexpected argument {_Shown(ValueError(positional[0]))!r}'
          f'{f" (and {len(positional) - 1} more)" if positional[1:] else ""}'
          ': pkb takes flags only (--name=value); see ./pkb.py --helpfull.',
          file=sys.stderr)
    return EXIT_USAGE
  run_log.Capture()  # Lines printed before pkb.log exists go into it too.
  # bash runs the file $BASH_ENV names first in every bash pkb starts: the
  # caller's shell code (a CI's, or a file others can write), as root, in
  # each probe's script, which holds the load password. Not passed on.
  os.environ.pop('BASH_ENV', None)
  left_out = trusted_programs.KeepSafePath()
  if left_out:
    print(terminal_text.Printable(
        f'WARNING: directories other users can add programs or libraries to '
        f'are left out of the run\'s search paths: {"; ".join(left_out)}.'),
        file=sys.stderr)
  try:
    return _Reported(argv)
  finally:
    run_scope.ReleaseAll()  # Not held a moment past the run.
    run_log.TearDown()


def _NotUtf8(argv: List[str]) -> str:
  """Why an argument is not UTF-8 text, or '' (terminal_text.NotUtf8):
  --owner=$'\\xff' ran its VMs, preload and first probe, then stopped at
  its first sample, with no sample kept."""
  for arg in argv[1:]:
    problem = terminal_text.NotUtf8(arg)
    if problem:
      return f'the argument {arg} is {problem}; give it in UTF-8'
  return ''


def _Shown(error: BaseException) -> str:
  """An error as its one printed line: secrets masked, what it quotes from
  input (a machine type, a path, a record) unable to act on the terminal,
  and a long quoted value shortened (terminal_text)."""
  return terminal_text.Abbreviated(
      terminal_text.Printable(vm_util.Mask(str(error))))


def _Reported(argv: List[str]) -> int:
  """RunBenchmarks, with every failure as the one line a user sees."""
  try:
    return RunBenchmarks(argv)
  except errors.RunInterrupted as e:
    print(f'pkb: {e}', file=sys.stderr)
    return EXIT_INTERRUPTED
  except KeyboardInterrupt:
    print('pkb: interrupted', file=sys.stderr)
    return EXIT_INTERRUPTED
  except errors.Error as e:
    print(f'pkb: {_Shown(e)}', file=sys.stderr)
    return EXIT_USAGE if isinstance(e, errors.UsageError) else EXIT_FAILED
  except Exception as e:  # pylint: disable=broad-except
    where = run_log.Bug('Unexpected error')
    print(f'pkb: internal error {type(e).__name__}: {_Shown(e)}{where}',
          file=sys.stderr)
    return EXIT_FAILED


if __name__ == '__main__':
  sys.exit(Main())
