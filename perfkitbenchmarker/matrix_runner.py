"""Runs the cells of a matrix config: plan, budget, child runs, summary.

Every cell is planned here first (config, prerequisites, prices, estimate),
so a bad cell or a night over `--max_cost_usd` is refused before anything is
created. Each cell is then a child `pkb.py` with its own run_uri, record,
results and teardown (a full run), `--run_processes` at a time, its output
in `<matrix dir>/cell-<i>.log` and, prefixed, on this terminal. Signals are
forwarded to the running children (SIGHUP as SIGTERM), whose own handlers
tear down; matrix_summary.json is written either way. Statuses and exit
codes (pkb.py's): README, "Nightly comparisons".
"""

import contextlib
import datetime
import json
import os
import signal
import subprocess
import sys
import threading
import time
from typing import Any, Dict, List, Optional

from absl import flags
import yaml

from perfkitbenchmarker import configs
from perfkitbenchmarker import cost_estimate
from perfkitbenchmarker import errors
from perfkitbenchmarker import flags as pkb_flags
from perfkitbenchmarker import input_checks
from perfkitbenchmarker import linux_benchmarks
from perfkitbenchmarker import matrix
from perfkitbenchmarker import paths
from perfkitbenchmarker import pricing
from perfkitbenchmarker import providers
from perfkitbenchmarker import run_plan
from perfkitbenchmarker import run_processes
from perfkitbenchmarker import run_scope
from perfkitbenchmarker import sample as sample_lib
from perfkitbenchmarker import stage_runner
from perfkitbenchmarker import text_table
from perfkitbenchmarker import verdict as verdict_lib
from perfkitbenchmarker.publishers import bigquery_schema

flags.DEFINE_integer('run_processes', None,
                     'Matrix cells to run at the same time, each a child '
                     'pkb.py with its own run_uri (PKB\'s flag; default 1).',
                     lower_bound=1, upper_bound=64)
flags.DEFINE_string('flag_matrix', None,
                    'Which flag_matrix_defs entry of the config to run.')
flags.DEFINE_string('flag_zip', None,
                    'Which flag_zip_defs entry of the config to run.')

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PKB_ENTRY = os.path.join(REPO_ROOT, 'pkb.py')
# pkb.py's exit codes: a matrix exits as one run would.
EXIT_OK, EXIT_FAILED = stage_runner.EXIT_OK, stage_runner.EXIT_FAILED
EXIT_INTERRUPTED = stage_runner.EXIT_INTERRUPTED
NO_RESULT = 'no result'
# Signals that stop a matrix; SIGHUP: the operator's terminal or SSH session
# closed.
FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
# Flags the parent owns: each child gets its own values instead.
_PARENT_ONLY = frozenset({'benchmarks', 'benchmark_config_file', 'run_uri',
                          'run_processes', 'flag_matrix', 'flag_zip',
                          'dry_run'})


def LoadUserConfig(flag_values) -> Any:
  path = flag_values.benchmark_config_file
  if not path:
    return None
  user_config = configs.LoadYaml(configs.ReadConfigFile(path),
                                 '--benchmark_config_file')
  configs.CheckUserConfig(user_config, list(linux_benchmarks.BENCHMARKS) +
                          list(flag_values.benchmarks))
  return user_config


def Cells(flag_values, stages: List[str]) -> Optional[List[matrix.Cell]]:
  """The matrix cells, or None when this is one plain run for pkb.py."""
  if stages == ['teardown']:
    return None  # Tearing down needs the run_uri only.
  user_config = LoadUserConfig(flag_values)
  if not (flag_values.run_processes or matrix.UsesMatrixFeatures(
      user_config, flag_values.benchmarks, flag_values.flag_matrix,
      flag_values.flag_zip)):
    return None
  cells = matrix.Expand(
      user_config, flag_values.benchmarks,
      benchmarks_on_command_line=bool(flag_values['benchmarks'].present),
      flag_matrix=flag_values.flag_matrix, flag_zip=flag_values.flag_zip,
      flag_defaults=flag_values.flag_values_dict(),
      # Every value the config sets, axes included, through the one check
      # a command-line value gets, before the first cell starts.
      check_flag=lambda where, name, value: configs.ParseConfigValue(
          flag_values, name, value, f'Config {where}'))
  _CheckAxesNotOnCommandLine(cells, flag_values)
  return cells


def _CheckAxesNotOnCommandLine(cells, flag_values) -> None:
  """Refuses a flag both given on the command line and chosen per cell by
  the matrix: the command line wins over a config's value (as in PKB), so
  every cell would run its value while its label and summary name the
  cell's own."""
  for cell in cells:
    for name, value in cell.axes:
      if (name in flag_values and flag_values[name].present and
          configs.ParseConfigValue(flag_values, name, value) !=
          flag_values[name].value):
        raise errors.UsageError(
            f'--{name} is given on the command line and is an axis of the '
            f'matrix; the command line wins, so cell {cell.index} '
            f'({cell.label}) would run {flag_values[name].serialize()} '
            f'instead of {name}={matrix.Show(value)}. Drop --{name} or that '
            'axis.')


@contextlib.contextmanager
def _CellFlags(flag_values):
  """Restores every flag a cell's config set while it was being planned."""
  saved = {name: (flag_values[name].value, flag_values[name].present)
           for name in flag_values}
  try:
    yield
  finally:
    for name, (value, present) in saved.items():
      flag_values[name].value, flag_values[name].present = value, present


def _PlanCell(cell: matrix.Cell, flag_values, catalog, dry_run: bool,
              results_dir: str):
  """(estimate, cloud, server machine type, plan lines) of one cell."""
  with _CellFlags(flag_values):
    try:
      module = linux_benchmarks.Get(cell.benchmark)
    except errors.UsageError as e:
      # A mistyped section name reads as an unknown benchmark: name the
      # config's sections too (what --benchmarks selects cells by).
      sections = sorted(k for k, v in (LoadUserConfig(flag_values) or
                                       {}).items()
                        if isinstance(v, dict) and
                        k not in ('benchmarks', 'flags'))
      if sections:
        raise errors.UsageError(
            f'{e} The config\'s sections, which --benchmarks also selects: '
            f'{", ".join(sections)}.') from None
      raise
    text = yaml.safe_dump(matrix.CellConfig(cell), sort_keys=False)
    config = module.GetConfig({'file': text,
                               'overrides': flag_values.config_override})
    # Inside the cell's flags: a cell may set its own price basis.
    plan = run_plan.PlanBenchmark(module, config, 'plan', flag_values,
                                  run_plan.Catalog(flag_values, catalog),
                                  f'cell {cell.index}: ')
    cloud = providers.CloudOf(flag_values)
    # The cell's cloud (its flags: may name one) and module, as its child
    # checks them (given --benchmarks=<its module>).
    flag_values.benchmarks = [cell.benchmark]
    input_checks.CheckCloudFlags(flag_values, cloud, results_dir)
    if not dry_run:
      provider = providers.GetProvider(cloud)
      if hasattr(provider, 'CheckPrerequisites'):
        provider.CheckPrerequisites(flag_values)
    specs = plan.spec.GroupSpecs()
    server = specs.get('servers') or next(iter(specs.values()))
    return plan.estimate, cloud, server.machine_type, list(plan.lines)


def _ChildArgs(flag_values) -> List[str]:
  """The parent's command-line flags, for each child."""
  args = []
  for name in sorted(flag_values):
    flag = flag_values[name]
    if not flag.present or name in _PARENT_ONLY or flag.name != name:
      continue
    if isinstance(flag, flags.MultiFlag):
      args += [f'--{name}={v}' for v in flag.value]
    else:
      args.append(flag.serialize())
  return args


def _CheckRunFlags(cells, flag_values, stages) -> None:
  if len(cells) == 1:
    return
  if flag_values.run_uri:
    raise errors.UsageError(
        f'--run_uri names one run but the config has {len(cells)} cells; '
        'leave it out (each cell gets its own) or pick one cell with '
        '--benchmarks=<section>.')
  if stages != list(pkb_flags.RUN_STAGES):
    raise errors.UsageError('--run_stage other than all needs one cell and '
                            'its --run_uri.')
  for name in ('json_path', 'csv_path'):
    if flag_values[name].value:
      raise errors.UsageError(
          f'--{name} names one file; each matrix cell writes its own under '
          '--results_dir.')


def _CheckSharedMachines(plans, processes: int) -> None:
  """Cells at once on machines the run neither makes nor is (a machines
  file's) would share them: every cell takes the file's first machines.
  They would measure each other, and each teardown put back the host
  settings its own start found: the earlier cell's tuning, for a later one,
  so a lent machine would be left tuned."""
  shared = sorted({cloud for _, cloud, _, _ in plans
                   if not providers.CapabilitiesOf(cloud).made_by_run and
                   not providers.CapabilitiesOf(cloud).is_runner_machine})
  if processes > 1 and shared:
    raise errors.UsageError(
        f'--run_processes={processes} on {", ".join(shared)} machines: '
        'every cell takes the same machines from --static_vm_file, so cells '
        'at once would measure each other and put back each other\'s host '
        'settings (a lent machine left tuned); give --run_processes=1.')


def _Dollars(usd: float) -> str:
  """Cents; a cost that rounds to none is under a cent, not $0.00 (cells of
  $0.00 each added up to a total of $0.01)."""
  return '<$0.01' if 0 < usd < 0.005 else f'${usd:.2f}'


def RunMatrix(cells: List[matrix.Cell], flag_values, stages: List[str],
              results_dir: str, new_run_uri, out=None) -> int:
  """Plans every cell, checks the budget, then runs them (see module doc)."""
  out = out or sys.stdout
  _CheckRunFlags(cells, flag_values, stages)
  processes = flag_values.run_processes or 1
  catalog = pricing.PriceCatalog.Load()
  dry_run = flag_values.dry_run
  source = flag_values.benchmark_config_file or 'the built-in configs'
  plans = []
  for cell in cells:
    try:
      plans.append(_PlanCell(cell, flag_values, catalog, dry_run,
                             results_dir))
    except errors.Error as e:
      raise type(e)(f'cell {cell.index} ({cell.label}): {e}') from None
  _CheckSharedMachines(plans, min(processes, len(cells)))
  if dry_run:
    out.write(f'Matrix: {len(cells)} cell(s) from {source}, {processes} at a '
              f'time (--run_processes).\n')
    for cell, (_, _, _, lines) in zip(cells, plans):
      out.write(f'\n== Cell {cell.index}/{len(cells)}: {cell.label} ==\n')
      out.write('\n'.join(lines) + '\n')
  rows = [(c.index, c.label, cloud, server, e.vm_count,
           '<1' if e.minutes < 1 else f'{e.minutes:.0f}',
           _Dollars(e.usd)) for c, (e, cloud, server, _) in zip(cells, plans)]
  total_usd = sum(p[0].usd for p in plans)
  wall = cost_estimate.ScheduleMinutes([p[0].minutes for p in plans],
                                       processes)
  summary = text_table.Lines(('cell', 'config', 'cloud', 'servers', 'VMs', 'est. min',
                    'est. $'), rows)
  summary.append(
      f'Total: {len(cells)} cell(s), {sum(p[0].vm_count for p in plans)} VMs, '
      f'estimated {_Dollars(total_usd)}; wall time '
      f'{cost_estimate.Minutes(wall)} with '
      f'--run_processes={processes}.')
  out.write('\nMatrix plan:\n' + '\n'.join(summary) + '\n')
  out.flush()
  run_plan.CheckBudget(total_usd, flag_values,
                       f'The matrix ({len(cells)} cells)', stages)
  if dry_run:
    return EXIT_OK
  runner = _Runner(cells, flag_values, results_dir, new_run_uri, processes,
                   out)
  return runner.Run()


class _Child:
  """One running cell: its process, output pump and outcome."""

  def __init__(self, cell, run_uri, argv, log_path, out, lock):
    self.cell, self.run_uri, self.log_path = cell, run_uri, log_path
    self.started = time.monotonic()
    self.ended: Optional[float] = None
    self.code: Optional[int] = None
    self.forwarded = 0  # How many of the runner's signals it was sent.
    env = dict(os.environ, PYTHONUNBUFFERED='1')
    self._log = open(log_path, 'w')  # pylint: disable=consider-using-with
    self.proc = subprocess.Popen(  # pylint: disable=consider-using-with
        argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        env=env, cwd=REPO_ROOT if os.path.exists(PKB_ENTRY) else None,
        start_new_session=True)
    self._pump = threading.Thread(target=self._Pump, args=(out, lock),
                                  daemon=True)
    self._pump.start()

  def _Pump(self, out, lock):
    prefix = f'[cell {self.cell.index}] '
    for line in self.proc.stdout:
      self._log.write(line)
      self._log.flush()
      with lock:
        out.write(prefix + line if line.endswith('\n') else
                  prefix + line + '\n')
        out.flush()

  def Poll(self) -> bool:
    if self.proc.poll() is None:
      return False
    self._pump.join()
    self._log.close()
    self.code, self.ended = self.proc.returncode, time.monotonic()
    return True


def MatrixRoot(results_dir: str) -> str:
  """results/matrix beside results/runs (the default --results_dir), else
  inside --results_dir (--results_dir=/tmp put them in /matrix)."""
  results_dir = os.path.abspath(results_dir)
  if os.path.basename(results_dir) == 'runs':
    return os.path.join(os.path.dirname(results_dir), 'matrix')
  return os.path.join(results_dir, 'matrix')


class _Runner:
  """Starts cells N at a time, forwards signals, writes the summary."""

  def __init__(self, cells, flag_values, results_dir, new_run_uri, processes,
               out):
    self.cells, self.fv, self.out = cells, flag_values, out
    self.results_dir, self.processes = results_dir, processes
    self.new_run_uri = new_run_uri
    # UTC ('Z'), as the cells' samples and run records are.
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime(
        '%Y%m%d-%H%M%SZ')
    self.matrix_dir = os.path.join(MatrixRoot(results_dir),
                                   f'{stamp}-{new_run_uri()[:4]}')
    self.lock = threading.Lock()
    self.running: Dict[int, _Child] = {}
    self.done: Dict[int, _Child] = {}
    self.signals: List[int] = []  # Every one received, in order.
    self._told = 0  # How many of them the output has said.

  @property
  def signal(self) -> Optional[int]:
    """The last signal received, if any."""
    return self.signals[-1] if self.signals else None

  def _Forward(self, signum, frame):  # pylint: disable=unused-argument
    # Only noted: the handler runs between any two steps of the main
    # thread, which may hold the output's lock (waiting for it hung) or
    # have started a cell not yet in `running` (it was never sent one).
    # _PassOn, in the main loop, says it and sends it on.
    self.signals.append(signum)

  def _PassOn(self) -> None:
    """Says each signal received since the last call and sends every
    running cell each one it has not been sent, once."""
    while self._told < len(self.signals):
      signum, first = self.signals[self._told], self._told == 0
      self._told += 1
      with self.lock:
        self.out.write(f'Matrix: {signal.Signals(signum).name}: '
                       f'{"stopping" if first else "still stopping"}; '
                       'waiting for the running cells to tear down; cells '
                       'not started are not run.\n')
        self.out.flush()
    for child in list(self.running.values()):
      while child.forwarded < len(self.signals):
        signum = self.signals[child.forwarded]
        child.forwarded += 1
        # A hang-up reaches the cells as SIGTERM: they run in sessions of
        # their own (no terminal of theirs went away) and stop the same way.
        run_processes.Forward(child.proc, signal.SIGTERM
                              if signum == signal.SIGHUP else signum)

  def _Start(self, cell) -> _Child:
    run_uri = (self.fv.run_uri if self.fv.run_uri and len(self.cells) == 1
               else self.new_run_uri())
    config_path = os.path.join(self.matrix_dir, f'cell-{cell.index}.yaml')
    with open(config_path, 'w') as f:
      f.write(f'# Matrix cell {cell.index}: {cell.label}\n')
      yaml.safe_dump(matrix.CellConfig(cell), f, sort_keys=False)
    # A checkout runs its pkb.py; an installed package runs the module.
    entry = ([PKB_ENTRY] if os.path.exists(PKB_ENTRY) else
             ['-m', 'perfkitbenchmarker.pkb'])
    argv = ([sys.executable] + entry + _ChildArgs(self.fv) +
            [f'--benchmarks={cell.benchmark}',
             f'--benchmark_config_file={config_path}', f'--run_uri={run_uri}'])
    with self.lock:
      self.out.write(f'Matrix: starting cell {cell.index}/{len(self.cells)} '
                     f'({cell.label}) as run {run_uri}.\n')
      self.out.flush()
    return _Child(cell, run_uri, argv, os.path.join(
        self.matrix_dir, f'cell-{cell.index}.log'), self.out, self.lock)

  def Run(self) -> int:
    run_scope.MakeOwnDir(self.matrix_dir)  # Cells' configs are read back.
    previous = {s: signal.signal(s, self._Forward) for s in FORWARDED}
    pending = list(self.cells)
    try:
      while pending or self.running:
        while (pending and len(self.running) < self.processes and
               self.signal is None):
          cell = pending.pop(0)
          self.running[cell.index] = self._Start(cell)
        self._PassOn()  # Within 0.1 s of a signal.
        if self.signal is not None:
          pending = []
        for index, child in list(self.running.items()):
          if child.Poll():
            self.done[index] = self.running.pop(index)
        time.sleep(0.1)
      self._PassOn()  # One after the last cell ended is still said.
    finally:
      for s, handler in previous.items():
        signal.signal(s, handler)
    return self._Summary()

  def _Status(self, child: Optional[_Child]) -> str:
    if child is None:
      return 'not run' if self.signal is not None else 'not started'
    if child.code in (0, verdict_lib.EXIT_UNCONFIRMED):
      found = self._Verdict(child)
      # A cell run with --accept_unconfirmed exits 0 with an answer that is
      # not confirmed: its status still says so.
      if (child.code == verdict_lib.EXIT_UNCONFIRMED or
          found not in (None, verdict_lib.CONFIRMED)):
        return f'{NO_RESULT} ({found or "not confirmed"})'
      return 'succeeded'
    if child.code in (EXIT_INTERRUPTED, -signal.SIGINT, -signal.SIGTERM,
                      -signal.SIGHUP):
      return 'interrupted'
    return f'failed (exit {child.code})'

  def _Verdict(self, child: _Child) -> Optional[str]:
    """The verdict of a cell's answer (or of its fixed loads), from its own
    results file; None when it has none or the file cannot be read."""
    path = os.path.join(self.results_dir, child.run_uri,
                        bigquery_schema.RESULTS_FILE)
    try:
      rows = bigquery_schema.ReadResultsFiles([path])
    except errors.Error:
      return None
    samples = [sample_lib.Sample(str(row['metric']), 0.0, '',
                                 bigquery_schema.RowLabels(row))
               for row in rows]
    found, _ = verdict_lib.OfRun(samples)
    return found.name if found is not None else None

  def _Summary(self) -> int:
    rows, records = [], []
    for cell in self.cells:
      child = self.done.get(cell.index)
      status = self._Status(child)
      run_dir = (os.path.join(self.results_dir, child.run_uri)
                 if child else '')
      minutes = ((child.ended - child.started) / 60) if child else 0.0
      rows.append((cell.index, cell.label, child.run_uri if child else '-',
                   status, f'{minutes:.1f}',
                   paths.Shown(run_dir) if run_dir else '-'))
      records.append({'cell': cell.index, 'label': cell.label,
                      'benchmark': cell.benchmark,
                      'axes': {k: v for k, v in cell.axes},
                      'run_uri': child.run_uri if child else None,
                      'exit_code': child.code if child else None,
                      'status': status, 'minutes': round(minutes, 3),
                      'results_dir': run_dir or None,
                      'log': child.log_path if child else None})
    failed = sum(1 for r in records if r['status'] != 'succeeded')
    no_result = sum(1 for r in records if r['status'].startswith(NO_RESULT))
    with open(os.path.join(self.matrix_dir, 'matrix_summary.json'), 'w') as f:
      json.dump({'format_version': 1, 'cells': records}, f, indent=1)
    lines = [''] + text_table.Lines(('cell', 'config', 'run_uri', 'status', 'min',
                           'results'), rows)
    lines.append(f'{len(self.cells) - failed} of {len(self.cells)} cell(s) '
                 'succeeded' + (f', {no_result} gave no confirmed result'
                                if no_result else '') +
                 f'; logs and matrix_summary.json in '
                 f'{paths.Shown(self.matrix_dir)}.')
    self.out.write('\n'.join(lines) + '\n')
    self.out.flush()
    if self.signal is not None:
      return EXIT_INTERRUPTED
    if failed > no_result:  # Some cell failed (or did not start).
      return EXIT_FAILED
    # A cell whose answer --accept_unconfirmed accepted exited 0, as asked.
    if any(r['exit_code'] == verdict_lib.EXIT_UNCONFIRMED for r in records):
      return verdict_lib.EXIT_UNCONFIRMED
    return EXIT_OK
