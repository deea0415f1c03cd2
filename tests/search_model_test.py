"""Smoke test of the search bench on the server model (no Redis, seconds).

Runs every model scenario of scripts/bench_search.py a few times with the
stored quiet sweep's fit, checks the model's shape (Little's law, the
client limit), the fit's error, upstream PKB's search as a policy with
upstream's settings (scripts/pkb_model.py), that ours stays within the
issue's targets on the model, and that docs/search.md's model tables are
what scripts/search_doc_tables.py renders from docs/data/.
"""

import ast
import dataclasses
import json
import os
import random
import subprocess
import sys

import pytest

_SCRIPTS = os.path.join(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))), 'scripts')
sys.path.insert(0, _SCRIPTS)

# pylint: disable=g-import-not-at-top,wrong-import-position
import lazy_modules
import local_bench
import pkb_model
import search_doc_tables
from perfkitbenchmarker import cost_estimate
from perfkitbenchmarker import errors
from perfkitbenchmarker import measurement
from perfkitbenchmarker.search import driver as search_driver

# Imported when a test first uses them (lazy_modules): scipy's fit.
bench_search = lazy_modules.Module('bench_search')
search_model = lazy_modules.Module('search_model')
search_scenarios = lazy_modules.Module('search_scenarios')


@pytest.fixture(scope='module')
def fit():
  points, _ = search_model.LoadSweep(bench_search.FIXTURE)
  return search_model.Fit(points)


def test_fit_to_the_stored_sweep_is_within_five_percent(fit):
  assert fit.throughput_rms_pct < 5
  assert fit.latency_rms_pct < 5
  assert 'fit error' in fit.Lines()[-1]


def test_model_obeys_littles_law_and_the_client_limit():
  model = search_model.ServerModel('m', peak_ops=1e6, base_latency_ms=0.2,
                                   client_ops_per_thread=3e5,
                                   client_max_threads=2)
  light = measurement.Load(1, 2, 1)
  ops, latency, _ = model.Expected(light)
  assert latency == pytest.approx(2 / ops * 1000)
  assert latency == pytest.approx(0.2, rel=0.1)
  heavy = measurement.Load(8, 400, 1)  # client limit: 2 threads x 300k
  ops, _, busy = model.Expected(heavy)
  assert ops < 6e5 and busy > search_model.SATURATED_FRACTION
  probe = model.Measure(heavy, 5, random.Random(1))
  assert probe.client_saturated and len(probe.per_second) == 5


def test_pkb_policy_binary_searches_pipeline_then_clients():
  model = search_model.ServerModel('m', peak_ops=1e6, base_latency_ms=0.2,
                                   run_noise=0, second_noise=0)
  result = search_driver.FindLatencyCappedMaximum(
      model.Measurer(60, random.Random(1)), 1.0,
      pkb_model.PkbMemtierPolicy(max_threads=4, max_clients=30))
  loads = [p.load for p in result.probes]
  assert loads[0] == measurement.Load(1, 1, 2500)
  assert loads[1] == measurement.Load(1, 1, 1250)  # 2500 was over the cap
  clients_phase = [l for l in loads if l.pipeline == 1]
  assert clients_phase[0] == measurement.Load(2, 30, 1)
  assert 10 <= len(result.probes) <= 25
  assert result.best is not None


def test_every_model_scenario_meets_the_targets(fit):
  for scenario in search_scenarios.Scenarios(fit.model):
    truths, _, rows = bench_search.RunScenario(scenario, 6, seed=3)
    truth = truths['average']
    ours, step = rows['adaptive'], rows['stepup']
    assert truth > 0, scenario.name
    assert ours['found_pct'] >= 96, (scenario.name, ours)
    assert ours['probe_s'] <= 0.2 * step['probe_s'], (scenario.name, ours)
    cv_limit = scenario.model.ProbeCv(scenario.ours_seconds) * 100 * 1.5
    assert ours['cv_pct'] <= cv_limit, (scenario.name, ours)
    line = bench_search.SummaryLine(rows, f'scenario={scenario.name} ')
    assert line.startswith(f'scenario={scenario.name} found_pct=')


def test_pkb_runs_are_request_counts_on_physical_cores_and_p95():
  model = search_model.ServerModel('m', peak_ops=1e6, base_latency_ms=0.2,
                                   processes=2, run_noise=0, second_noise=0)
  measure = pkb_model.RequestMeasurer(model, 10_000, random.Random(1))
  load = measurement.Load(4, 25, 1)  # 2 processes x 100 connections
  ops, _, _ = model.Expected(load)
  probe = measure(load)
  # 10,000 requests from each of 200 connections, at the model's rate.
  assert probe.duration_s == round(2_000_000 / ops)
  by_name = {s.name: s for s in search_scenarios.Scenarios()}
  for name in ('c6gn_get_p1', 'c6gn_dragonfly'):  # Graviton2: 64 cores.
    assert by_name[name].pkb_max_threads == 64
  assert by_name['t2d_cluster'].pkb_max_threads == 16  # 32 vCPUs, SMT 2
  assert by_name['i4i_flash'].pkb_max_clients == pkb_model.MAX_CLIENTS // 10
  # The rule decides: p95 is above the average, so the p95 policy stops
  # lower than the same search holding the average to the cap.
  found = {}
  for rule in pkb_model.RULES:
    result = search_driver.FindLatencyCappedMaximum(
        model.Measurer(2, random.Random(1)), 1.0,
        pkb_model.PkbMemtierPolicy(max_threads=8, max_clients=30, rule=rule))
    found[rule] = result.best.throughput
  assert found[pkb_model.P95] < found[pkb_model.AVERAGE]
  assert model.ExpectedLatency(load, 'p95') > model.ExpectedLatency(load)


def test_pkb_path_prices_its_own_runs_and_builds():
  rates = dataclasses.replace(cost_estimate.RATES['GCP'], network_min=1,
                              vms_ready_min=1, install_min=1,
                              vms_delete_min=1, network_delete_min=1)
  groups = [cost_estimate.VmGroup('servers', 1, 'x', 1.0)]
  path = pkb_model.PkbPath(install_min=5, run_overhead_s=6)
  pkb = pkb_model.PkbEstimate('GCP', groups, probes=10, probe_seconds=60,
                              path=path, rates=rates)
  ours = cost_estimate.EstimateRun('GCP', groups, 2, rates=rates)
  mine = {p.name: p.minutes for p in ours.phases}
  theirs = {p.name: p.minutes for p in pkb.phases}
  assert theirs['provision'] == mine['provision'] == 2
  assert theirs['install'] == 5 and mine['install'] == 1
  assert theirs['search'] == pytest.approx((60 + 10 * 6) / 60)


def test_scripts_with_a_shebang_run_as_their_usage_says():
  """`./scripts/search_doc_tables.py` (its usage, the README's) was not
  executable: 'Permission denied'."""
  for name in sorted(os.listdir(_SCRIPTS)):
    path = os.path.join(_SCRIPTS, name)
    if not os.path.isfile(path):
      continue
    with open(path, 'rb') as f:
      if f.read(2) == b'#!':
        assert os.access(path, os.X_OK), f'scripts/{name} is not executable'


def _ReexecsBeforeItsImports(path) -> bool:
  """Whether the script's module-level code calls
  venv_reexec.UseRepoVenv before it imports any other project module."""
  with open(path, encoding='utf-8') as f:
    body = ast.parse(f.read()).body
  for node in body:
    if (isinstance(node, ast.Expr) and isinstance(node.value, ast.Call) and
        ast.unparse(node.value.func) == 'venv_reexec.UseRepoVenv'):
      return True
    if isinstance(node, ast.ImportFrom) and (
        (node.module or '').split('.')[0] in ('perfkitbenchmarker',
                                              'scripts') and
        [a.name for a in node.names] != ['venv_reexec']):
      return False
  return True  # No project module: any python3 runs it.


def test_scripts_with_a_shebang_rerun_in_the_venv_before_its_imports():
  """`./scripts/secrets_exposure.py` (docs/secrets.md), `sudo
  ./scripts/bench_install.py` (docs/search.md), bench_steady_noise.py and
  bench_shipped_scripts.py, started by the system python3, stopped on
  ModuleNotFoundError (tenacity, hdrh, absl): they never re-ran in the
  checkout's .venv, as venv_reexec says every script does."""
  late = []
  for name in sorted(os.listdir(_SCRIPTS)):
    path = os.path.join(_SCRIPTS, name)
    if not name.endswith('.py') or not os.access(path, os.X_OK):
      continue
    if not _ReexecsBeforeItsImports(path):
      late.append(name)
  assert not late


@pytest.mark.e2e
@pytest.mark.parametrize('script, args, code, words', [
    ('check_estimate.py', ['/no/such/run'], 2, 'check_estimate: '),
    ('try_engine_installs.py', ['--help'], 0, 'usage: '),
])
def test_scripts_started_by_another_python_run_in_the_venv(script, args,
                                                            code, words):
  """`./scripts/X.py` or `sudo ./scripts/X.py` starts the first python3 on
  the PATH: these two stopped on ModuleNotFoundError (pandas, absl) instead
  of re-running in the checkout's .venv as the other scripts do. The base
  interpreter with -S (no site-packages) stands for such a python3."""
  base = os.path.join(sys.base_prefix, 'bin', 'python3')
  done = subprocess.run([base, '-S', os.path.join(_SCRIPTS, script), *args],
                        capture_output=True, text=True, timeout=120,
                        check=False)
  assert 'Traceback' not in done.stderr, done.stderr[-1500:]
  assert done.returncode == code, done.stderr
  assert words in done.stdout + done.stderr


@pytest.mark.e2e
def test_bench_changepoints_refuses_too_few_nights():
  """'./scripts/bench_changepoints.py --nights=1' ended in 'ValueError: low
  >= high' (numpy's draw of the step's night) under a traceback;
  --histories=0 and --max_pvalue=2 printed nan or 100 % figures, exit 0."""
  done = subprocess.run(
      [sys.executable, os.path.join(_SCRIPTS, 'bench_changepoints.py'),
       '--nights=1', '--histories=1'], capture_output=True, text=True,
      timeout=120, check=False)
  assert done.returncode == 1 and 'Traceback' not in done.stderr
  assert done.stderr.startswith(
      'FATAL Flags parsing error: flag --nights=1: 1 is not integer >= 5')


@pytest.mark.e2e
@pytest.mark.parametrize('script,flag', [
    ('bench_changepoints.py', '--nights: Nights per history.'),
    ('bench_compare_memory.py', '--rows: Samples in the large history.')])
def test_absl_benches_help_is_their_usage_and_exit_0(script, flag):
  # absl's --help exits 1, which reads as a failure in a script or CI step.
  done = subprocess.run([sys.executable, os.path.join(_SCRIPTS, script),
                         '--help'], capture_output=True, text=True,
                        timeout=120, check=False)
  assert done.returncode == 0, done.stderr[-2000:]
  assert done.stdout.startswith('Measures ') and flag in done.stdout


def test_bench_search_help_and_bad_flags_are_not_tracebacks(capsys):
  """--help and an unknown flag were absl tracebacks."""
  assert bench_search.Main(['bench_search', '--help']) == 0
  shown = ' '.join(capsys.readouterr().out.split())
  assert '--nolocal' in shown
  # It named tests/data/search_model_local_sweep.json, which is no file.
  assert f'fixture {os.path.relpath(bench_search.FIXTURE, os.path.dirname(_SCRIPTS))}' in shown
  assert bench_search.Main(['bench_search', '--no_such_flag']) == 2
  err = capsys.readouterr().err
  assert err.count('\n') == 1 and err.startswith('bench_search: ')


@pytest.mark.parametrize('where', ['missing/raw.json', '.'])
def test_bench_search_refuses_an_output_it_cannot_write_before_it_runs(
    tmp_path, capsys, where):
  """'--raw_out=/nonexistent/x.json' ran every model scenario (or the
  local searches' minutes), then ended in a FileNotFoundError traceback
  with none of its tables printed."""
  path = str(tmp_path / where)
  try:
    assert bench_search.Main(['bench_search', '--nolocal',
                              f'--raw_out={path}']) == 2
  finally:
    for name in ('local', 'raw_out'):
      bench_search.FLAGS[name].unparse()
  captured = capsys.readouterr()
  assert captured.out == ''
  assert captured.err.startswith(f'bench_search: --raw_out={path}: ')
  assert captured.err.endswith('; nothing was run.\n')
  assert captured.err.count('\n') == 1


def test_a_bench_refused_before_its_study_leaves_no_run_record(
    tmp_path, monkeypatch):
  """'./scripts/bench_search_floor.py --load_generator=memtier
  --memtier_path=/nonexistent' was refused in one line, but left
  results/runs/<uri>/run_record.json behind, its status 'running'."""
  def Refuse(unused_config):
    raise errors.UsageError('--memtier_path=/nonexistent is no executable')
  monkeypatch.setattr(local_bench, 'REPO', str(tmp_path))
  monkeypatch.setattr(local_bench.bench, 'GetConfig', lambda unused: {})
  monkeypatch.setattr(local_bench.bench, 'CheckPrerequisites', Refuse)
  with pytest.raises(errors.UsageError):
    with local_bench.LocalStudy('bench_search_floor', ['bench_search_floor'],
                                bench_search.FLAGS):
      pass
  assert os.listdir(tmp_path) == []


def _Raws():
  raws = []
  for path in (search_doc_tables.RAW, search_doc_tables.LOCAL_RAW,
               search_doc_tables.INSTALL_RAW):
    with open(path) as f:
      raws.append(json.load(f))
  return raws


def test_doc_tables_are_rendered_from_the_raw_output():
  # docs/search.md's generated tables equal what the raw output renders.
  assert search_doc_tables.Main(['search_doc_tables']) == 0
  raw, local, install = _Raws()
  tables = search_doc_tables.Render(raw, local, install)
  assert set(raw['scenarios'][0]['rows']) == set(search_doc_tables.POLICIES)
  with pytest.raises(KeyError):  # A table the doc has no place for.
    search_doc_tables.Rewrite('no sections here', tables)


@pytest.mark.parametrize('kind', ['missing', 'directory', 'fifo'])
@pytest.mark.parametrize('flag', ['--doc', '--raw'])
def test_an_input_that_is_no_regular_file_is_one_line(tmp_path, capsys,
                                                     kind, flag):
  # '--doc=/nonexistent' and '--doc=DIR' ended in a FileNotFoundError or
  # IsADirectoryError traceback; a FIFO given to either waited for a
  # writer for ever.
  path = str(tmp_path / kind)
  if kind == 'directory':
    os.mkdir(path)
  elif kind == 'fifo':
    os.mkfifo(path)
  assert search_doc_tables.Main(['search_doc_tables', f'{flag}={path}']) == 2
  err = capsys.readouterr().err
  assert err.startswith(f'search_doc_tables: cannot read {path}: ')
  assert err.count('\n') == 1


@pytest.mark.parametrize('flag, text', [('--raw', '[]'),
                                        ('--local_raw', '{"settings": 3}'),
                                        ('--install_raw', '{}')])
def test_a_raw_file_of_another_shape_is_one_line_naming_it(tmp_path, capsys,
                                                           flag, text):
  # '--raw=list.json' (JSON of another shape) ended in a TypeError
  # traceback; '{}' printed 'search_doc_tables: settings'.
  path = tmp_path / 'other.json'
  path.write_text(text)
  assert search_doc_tables.Main(['search_doc_tables', f'{flag}={path}']) == 2
  err = capsys.readouterr().err
  assert err.startswith(f'search_doc_tables: {path} is not shaped as its '
                        'bench writes its raw output (')
  assert err.count('\n') == 1


def test_local_and_install_tables_come_from_their_raw_output(tmp_path):
  """The local Redis and install-time tables were typed in; now they are
  rendered from docs/data/, and a figure changed in the raw output makes
  the doc stale."""
  raw, local, install = _Raws()
  tables = search_doc_tables.Render(raw, local, install)
  with open(search_doc_tables.DOC) as f:
    doc = f.read()
  for name in ('local_settings', 'local_results', 'local_summary',
               'install_steps', 'install_summary'):
    assert f'<!-- generated: {name} -->' in doc
    assert '\n'.join(tables[name]) in doc
  # One table row per measured install step, each with its seconds.
  assert len(tables['install_steps']) == 2 + len(install['steps'])
  for step, line in zip(install['steps'], tables['install_steps'][2:]):
    assert line.endswith(f'| {step["seconds"]:.1f} |')
  assert set(local['rows']) >= {'sweep', 'stepup', 'adaptive'}
  ours = local['rows']['adaptive']
  assert f'| adaptive | {ours["probes"]:.1f} |' in '\n'.join(
      tables['local_results'])
  # A changed figure in either raw file: the check fails, --write fixes it.
  install['steps'][0]['seconds'] += 1
  local['rows']['adaptive']['probes'] += 1
  for key, value in (('install_raw', install), ('local_raw', local)):
    changed = tmp_path / f'{key}.json'
    changed.write_text(json.dumps(value))
    doc_copy = tmp_path / 'search.md'
    doc_copy.write_text(doc)
    argv = ['search_doc_tables', f'--{key}={changed}', f'--doc={doc_copy}']
    assert search_doc_tables.Main(argv) == 1
    assert search_doc_tables.Main(argv + ['--write']) == 0
    assert search_doc_tables.Main(argv) == 0
  assert search_doc_tables.Main(
      ['search_doc_tables', f'--local_raw={tmp_path}/missing.json']) == 2


def test_local_raw_keeps_every_repetition():
  """bench_search --local_raw_out: the per-repetition answers, the truth
  and the run's conditions, JSON-ready."""
  load = measurement.Load(2, 4, 1)

  class Result:  # The two fields LocalRaw reads of a search's result.
    def __init__(self, capped, probes):
      self.capped_throughput, self.probes = capped, probes

  results = {'sweep': [Result(90.0, [1, 2])], 'adaptive':
             [Result(80.0, [1]), Result(None, [1])], 'stepup': []}
  meta = {'discarded': {'sweep': 1}, 'failed': {}, 'foreign': [3.0, 50.0],
          'prepare_s': 0.5, 'keys': 100, 'load_generator': 'redis-benchmark'}
  argv = ['bench_search', '--repetitions=2', '--local_raw_out=x.json']
  path = os.path.join(os.path.dirname(_SCRIPTS), 'docs', 'data', 'x.json')
  raw = bench_search.LocalRaw(argv, path, {'cap_ms': 1.0}, results,
                              {'r': 1}, (85.0, load), meta, ['fit'])
  assert raw['capped_per_repetition'] == {'sweep': [90.0],
                                          'adaptive': [80.0, 0.0]}
  assert raw['truth'] == {'throughput': 85.0, 'connections': 8}
  st = raw['settings']
  assert st['command'] == './scripts/bench_search.py --repetitions=2'
  assert st['raw_out'] == 'docs/data/x.json'
  assert (st['cap_ms'], st['repetitions_run'], st['load_generator']) == (
      1.0, 2, 'redis-benchmark')
  json.dumps(raw)
