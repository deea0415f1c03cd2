"""A run's measured stage times against the estimate kept in its record.

cost_estimate.CompareWithRun is checked with numbers; scripts/
check_estimate.py with one real Local run (--timing_measurements=runtimes)
and copies of its run directory with a part taken away.
"""

import json
import os
import shutil
import sys

import pytest


import pkb_forkserver
from perfkitbenchmarker import cost_estimate as ce
from perfkitbenchmarker import run_record

import e2e_support as e2e
import script_modules

SCRIPT = os.path.join(e2e.REPO, 'scripts', 'check_estimate.py')
check_estimate = script_modules.Load(SCRIPT, 'check_estimate')


def test_phases_are_set_against_the_stages_that_measure_them():
  estimate = {'provision': 2.0, 'install': 1.0, 'preload': 0.5,
              'search': 2.0, 'teardown': 2.0}
  stages = {'Resource Provisioning': 150, 'Benchmark Prepare': 60,
            'Benchmark Run': 120, 'Benchmark Cleanup': 6,
            'Resource Teardown': 84}
  checks = {c.phases: c for c in ce.CompareWithRun(estimate, stages)}
  assert checks[('provision',)].measured_min == pytest.approx(2.5)
  assert checks[('provision',)].ratio == pytest.approx(1.25)
  assert checks[('install', 'preload')].estimated_min == pytest.approx(1.5)
  assert checks[('install', 'preload')].ratio == pytest.approx(2 / 3)
  assert checks[('search',)].ratio == pytest.approx(1.0)
  assert checks[('teardown',)].measured_min == pytest.approx(1.5)
  # A stage that did not run to its end measures nothing.
  del stages['Resource Teardown']
  teardown = ce.CompareWithRun(estimate, stages)[-1]
  assert teardown.measured_min is None and teardown.ratio is None


def test_the_estimate_a_run_keeps_is_the_one_dry_run_prints():
  groups = (ce.VmGroup('servers', 1, 'a', 1.0),)
  estimate = ce.EstimateRun('GCP', groups, 2.5, 1_000_000, 100)
  record = estimate.Record()
  assert record['cloud'] == 'GCP'
  assert record['minutes'] == pytest.approx(
      {p.name: p.minutes for p in estimate.phases}, abs=1e-3)
  assert record['usd'] == pytest.approx(estimate.usd, abs=1e-4)


def _RunDir(tmp_path, estimate):
  """A run directory with `estimate` in its record and a 'Benchmark Run
  Runtime' sample of 60 s."""
  run_dir = str(tmp_path / 'run')
  run_record.RunRecord.Create(run_dir, 'h5a', estimate=estimate)
  sample = {'test': 'redis_memtier', 'metric': 'Benchmark Run Runtime',
            'value': 60.0, 'unit': 'seconds', 'labels': '',
            'timestamp': 1.0, 'run_uri': 'h5a', 'sample_uri': 's',
            'product_name': 'PerfKitBenchmarker', 'official': False}
  with open(os.path.join(run_dir, 'perfkitbenchmarker_results.json'),
            'w', encoding='utf-8') as f:
    f.write(json.dumps(sample) + '\n')
  return run_dir


@pytest.mark.parametrize('estimate', [
    [1], {'cloud': 'Local', 'minutes': [1]},
    {'cloud': 'Local', 'minutes': {'search': 'x'}},
    {'cloud': 'Local', 'minutes': {'search': -1}},
    {'cloud': 'Local', 'minutes': {'search': float('inf')}},
    {'cloud': 'Local', 'minutes': {'search': 1e300}},
    {'cloud': 'Local', 'minutes': {'install': 1e308, 'preload': 1e308}}])
def test_a_record_whose_estimate_is_not_minutes_is_one_line(
    tmp_path, capsys, estimate):
  # A record is input: a downloaded run's estimate may hold anything. A
  # list printed 'AttributeError: 'list' object has no attribute 'get''
  # under a traceback; -1 and inf were printed as estimated minutes, 1e300
  # as a 300-digit number and two of 1e308 as 'inf min' (exit 0). Bad
  # input is exit 2, as in pkb and the other scripts (it was 1).
  run_dir = _RunDir(tmp_path, {'redis_memtier': estimate})
  assert check_estimate.main([run_dir]) == 2
  err = capsys.readouterr().err
  assert err == (f'check_estimate: The cost estimate of redis_memtier in '
                 f'{run_dir}/run_record.json is not minutes per phase (each '
                 'a number from 0 to 1e+12); nothing to check.\n')


def test_a_record_s_estimate_is_set_against_its_run(tmp_path):
  run_dir = _RunDir(tmp_path, {'redis_memtier': {
      'cloud': 'Local', 'minutes': {'search': 2.0}}})
  lines = check_estimate.Check(run_dir)
  assert lines[0] == 'redis_memtier on Local:'
  assert lines[4].split()[:6] == ['search', '2.00', 'min', '1.00', 'min',
                                  '0.50']


def test_a_results_file_that_is_a_symlink_is_not_followed(tmp_path, capsys):
  # A downloaded run directory's results file pointing elsewhere was read
  # through the link (the table printed, exit 0), where its record is
  # refused as a symbolic link.
  run_dir = _RunDir(tmp_path, {'redis_memtier': {
      'cloud': 'Local', 'minutes': {'search': 2.0}}})
  results = os.path.join(run_dir, 'perfkitbenchmarker_results.json')
  elsewhere = str(tmp_path / 'elsewhere.json')
  os.rename(results, elsewhere)
  os.symlink(elsewhere, results)
  assert check_estimate.main([run_dir]) == 2
  captured = capsys.readouterr()
  assert captured.out == ''
  assert captured.err == (f'check_estimate: {results}: a symbolic link '
                          '(never followed in a directory read as input)\n')


@pytest.mark.parametrize('name', ['', 'missing', 'afile'])
def test_what_is_no_run_directory_is_one_line(tmp_path, capsys, name):
  # RunRecord.Load's advice is pkb's: "No run record at run_record.json; check
  # --run_uri (runs are listed under )." for '', a flag this script has not.
  (tmp_path / 'afile').write_text('x')
  run_dir = str(tmp_path / name) if name else ''
  assert check_estimate.main([run_dir]) == 2
  assert capsys.readouterr().err == (
      f'check_estimate: {run_dir!r} is no run directory; give '
      'results/runs/<run_uri>.\n')


def _Script(run_dir):
  return pkb_forkserver.Run([sys.executable, SCRIPT, run_dir],
                            timeout=60)


@pytest.mark.e2e
def test_a_real_run_checked_and_what_is_refused(tmp_path):
  results = tmp_path / 'results'
  proc, run_uri = e2e.Run(
      e2e.FAST + ['--memtier_max_probes=2', '--timing_measurements=runtimes'],
      str(results))
  assert proc.returncode == 0, proc.stderr
  run_dir = str(results / run_uri)
  out = _Script(run_dir)
  assert out.returncode == 0, out.stderr
  lines = out.stdout.splitlines()
  assert lines[0] == 'redis_memtier on Local:'
  rows = [line.split() for line in lines[2:]]
  assert [row[0] for row in rows] == ['provision', 'install', 'search',
                                      'teardown']
  for row in rows:
    assert 'min' in row and '-' not in row  # every phase measured

  # Without the stage samples (a run of the default
  # --timing_measurements, its End to End Runtime kept: that alone printed
  # a table of '-', exit 0): one line saying how to get them.
  no_stages = tmp_path / 'no_stages'
  shutil.copytree(run_dir, no_stages)
  path = no_stages / 'perfkitbenchmarker_results.json'
  kept = [line for line in path.read_text().splitlines()
          if json.loads(line)['metric'] == 'End to End Runtime' or
          not json.loads(line)['metric'].endswith(' Runtime')]
  assert any('End to End Runtime' in line for line in kept)
  path.write_text('\n'.join(kept) + '\n')
  out = _Script(str(no_stages))
  assert out.returncode == 2
  assert out.stderr.strip().endswith('--timing_measurements=runtimes.')
  assert len(out.stderr.strip().splitlines()) == 1

  # A record without an estimate (an older run): one line, nothing else.
  no_estimate = tmp_path / 'no_estimate'
  shutil.copytree(run_dir, no_estimate)
  record_path = no_estimate / 'run_record.json'
  record = json.loads(record_path.read_text())
  del record['info']['estimate']
  record_path.write_text(json.dumps(record))
  out = _Script(str(no_estimate))
  assert out.returncode == 2 and 'no cost estimate' in out.stderr
  assert 'Traceback' not in out.stderr

  assert _Script(str(tmp_path / 'missing')).returncode == 2


def test_text_from_the_record_is_shown_as_text(tmp_path, capsys):
  # A downloaded run's record is input: its benchmark name and cloud went
  # to the terminal as written, so a window title (ESC ] 0 ; ... BEL) or a
  # clear screen (ESC [ 2 J) in them acted instead of being read, on the
  # table's first line and in the error line.
  cloud = 'Lo\x1b]0;PWNED\x07cal\x1b[2J'
  run_dir = _RunDir(tmp_path, {'redis_memtier': {
      'cloud': cloud, 'minutes': {'search': 2.0}}})
  assert check_estimate.main([run_dir]) == 0
  out = capsys.readouterr().out
  assert '\x1b' not in out and '\x07' not in out
  assert out.splitlines()[0] == (
      'redis_memtier on Lo\\x1b]0;PWNED\\x07cal\\x1b[2J:')

  other = tmp_path / 'other'
  name = 'redis\x1b[2J_memtier\nFORGED LINE'
  run_dir = _RunDir(other, {name: {'cloud': 'Local',
                                   'minutes': {'search': 2.0}}})
  assert check_estimate.main([run_dir]) == 2
  err = capsys.readouterr().err
  assert err == (f'check_estimate: redis\\x1b[2J_memtier\\nFORGED LINE in '
                 f'{run_dir} has no stage samples; run it with '
                 '--timing_measurements=runtimes.\n')


@pytest.mark.parametrize('seconds', [-300.0, 1e300])
def test_a_stage_time_no_run_can_take_is_one_line(tmp_path, capsys,
                                                   seconds):
  # A results file is input: a stage sample of -300 s printed a measured
  # -5.00 min and a ratio of -2.50, and one of 1e300 s a 300-digit number
  # of minutes, both as if measured (exit 0).
  run_dir = _RunDir(tmp_path, {'redis_memtier': {
      'cloud': 'Local', 'minutes': {'search': 2.0}}})
  path = os.path.join(run_dir, 'perfkitbenchmarker_results.json')
  with open(path, encoding='utf-8') as f:
    sample = json.loads(f.read())
  sample['value'] = seconds
  with open(path, 'w', encoding='utf-8') as f:
    f.write(json.dumps(sample) + '\n')
  assert check_estimate.main([run_dir]) == 2
  captured = capsys.readouterr()
  assert captured.out == ''
  assert captured.err == (
      f'check_estimate: {path}: Benchmark Run Runtime of redis_memtier is '
      f'{seconds:g} s, which no stage of a run takes (from 0 to a week, the '
      'longest --timeout_minutes); nothing to check.\n')
