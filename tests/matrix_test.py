"""Matrix configs: PKB's expansion semantics, safe filters, dry-run costs,
the budget guard, and real local matrix runs with a failing cell."""

import io
import json
import os
import re
import signal
import subprocess
import sys
import time

import pytest
import yaml

import pkb_forkserver
from perfkitbenchmarker import errors
from perfkitbenchmarker import matrix
from perfkitbenchmarker import matrix_filter
from tests import e2e_support as e2e

NIGHTLY = os.path.join(e2e.REPO, 'configs', 'nightly_gcp_aws.yaml')
NIGHTLY_LOCAL = os.path.join(e2e.REPO, 'configs', 'nightly_local.yaml')


def _Flags(cells):
  return [dict(c.flags) for c in cells]


# Expansion: the cases of upstream PKB's benchmark_sets_test, re-stated.

MATRIX = """
netperf:
  flag_matrix: GCP
  flag_matrix_defs:
    GCP:
      zones: [us-central1-a, us-central1-b]
      machine_type: [n1-standard-1, n1-standard-4]
"""


def test_cross_product_in_sorted_flag_order():
  cells = matrix.Expand(yaml.safe_load(MATRIX), ['netperf'])
  assert _Flags(cells) == [
      {'machine_type': 'n1-standard-1', 'zones': 'us-central1-a'},
      {'machine_type': 'n1-standard-1', 'zones': 'us-central1-b'},
      {'machine_type': 'n1-standard-4', 'zones': 'us-central1-a'},
      {'machine_type': 'n1-standard-4', 'zones': 'us-central1-b'}]
  assert [c.index for c in cells] == [1, 2, 3, 4]
  assert all('flag_matrix' not in c.config and 'flag_matrix_defs' not in
             c.config for c in cells)
  assert cells[0].label == ('netperf machine_type=n1-standard-1 '
                            'zones=us-central1-a')


def test_zip_walks_lists_together_and_crosses_with_matrix():
  config = yaml.safe_load("""
netperf:
  flags: {gpu_type: k80}
  flag_zip: z
  flag_matrix: m
  flag_zip_defs:
    z: {machine_type: [n1-standard-4, n1-standard-8], gpu_count: [1, 2]}
  flag_matrix_defs:
    m: {zones: [a, b]}
""")
  assert _Flags(matrix.Expand(config, ['netperf'])) == [
      {'gpu_type': 'k80', 'machine_type': 'n1-standard-4', 'gpu_count': 1,
       'zones': 'a'},
      {'gpu_type': 'k80', 'machine_type': 'n1-standard-4', 'gpu_count': 1,
       'zones': 'b'},
      {'gpu_type': 'k80', 'machine_type': 'n1-standard-8', 'gpu_count': 2,
       'zones': 'a'},
      {'gpu_type': 'k80', 'machine_type': 'n1-standard-8', 'gpu_count': 2,
       'zones': 'b'}]


def test_zip_lists_of_different_lengths_are_refused():
  config = yaml.safe_load("""
netperf:
  flag_zip: z
  flag_zip_defs: {z: {machine_type: [a, b], gpu_count: [1, 2, 3]}}
""")
  with pytest.raises(errors.ConfigError, match='same length'):
    matrix.Expand(config, ['netperf'])


def test_flag_precedence_global_then_section_then_matrix():
  config = yaml.safe_load("""
flags: {netperf_benchmarks: TCP_RR, netperf_test_length: 30, netperf_max_iter: 3}
netperf:
  flags: {netperf_benchmarks: UDP_RR, netperf_test_length: 40}
  flag_matrix: m
  flag_matrix_defs: {m: {netperf_benchmarks: [TCP_STREAM]}}
""")
  assert _Flags(matrix.Expand(config, ['netperf'])) == [
      {'netperf_benchmarks': 'TCP_STREAM', 'netperf_test_length': 40,
       'netperf_max_iter': 3}]


def test_filter_keeps_matching_cells_and_sees_flag_defaults():
  config = yaml.safe_load(MATRIX)
  config['netperf']['flag_matrix_filters'] = {
      'GCP': "machine_type == 'n1-standard-1' and zones == 'us-central1-a'"}
  assert _Flags(matrix.Expand(config, ['netperf'])) == [
      {'machine_type': 'n1-standard-1', 'zones': 'us-central1-a'}]
  # A flag the config does not set is seen with its default value.
  config['netperf']['flag_matrix_filters'] = {'GCP': 'zones < extra and x'}
  cells = matrix.Expand(config, ['netperf'],
                        flag_defaults={'extra': 'us-central1-b', 'x': True})
  assert _Flags(cells) == [
      {'machine_type': 'n1-standard-1', 'zones': 'us-central1-a'},
      {'machine_type': 'n1-standard-4', 'zones': 'us-central1-a'}]


def test_flag_matrix_flag_overrides_and_unknown_names_are_refused():
  config = yaml.safe_load(MATRIX)
  with pytest.raises(errors.ConfigError, match='no flag_matrix_defs.nope'):
    matrix.Expand(config, ['netperf'], flag_matrix='nope')
  with pytest.raises(errors.ConfigError, match='no flag_zip_defs.z'):
    matrix.Expand(config, ['netperf'], flag_zip='z')


def test_benchmarks_list_and_named_sections():
  config = yaml.safe_load("""
flags: {shared: 1}
one: &one {name: bench, flags: {cloud: GCP}}
two: &two {name: bench, flags: {cloud: AWS}}
benchmarks:
  - bench: *one
  - bench: *two
""")
  cells = matrix.Expand(config, ['redis_memtier'])
  # A list entry aliasing a section is named by it, as --benchmarks selects
  # it (issue 26 point 6: the plan said bench[0], the selection 'one').
  assert [(c.benchmark, c.section) for c in cells] == [
      ('bench', 'one'), ('bench', 'two')]
  inline = matrix.Expand(yaml.safe_load(
      'benchmarks: [{bench: {flags: {a: 1}}}, {bench: {flags: {a: 2}}}]'),
      ['redis_memtier'])
  assert [c.section for c in inline] == ['bench[0]', 'bench[1]']
  assert _Flags(cells) == [{'shared': 1, 'cloud': 'GCP'},
                           {'shared': 1, 'cloud': 'AWS'}]
  assert all('name' not in c.config for c in cells)
  # --benchmarks on the command line picks sections instead of the list.
  cells = matrix.Expand(config, ['two'], benchmarks_on_command_line=True)
  assert [(c.benchmark, c.section, dict(c.flags)) for c in cells] == [
      ('bench', 'two', {'shared': 1, 'cloud': 'AWS'})]
  assert matrix.CellConfig(cells[0]) == {'bench': {'flags': {
      'shared': 1, 'cloud': 'AWS'}}}


@pytest.mark.parametrize('bad, needle', [
    ({'benchmarks': [{'a': {}, 'b': {}}]}, 'exactly one key'),
    ({'benchmarks': []}, 'non-empty list'),
    ({'b': {'flag_matrix': 'm', 'flag_matrix_defs': {'m': {'f': []}}}},
     'non-empty list'),
    ({'b': {'flag_matrix': 'm', 'flag_matrix_defs': {'m': {'f': 'abc'}}}},
     'non-empty list'),
    ({'b': {'flag_matrix': 'm', 'flag_matrix_defs': {'m': {'f': [1, 2]}},
            'flag_matrix_filters': {'m': 'f > 5'}}}, 'keeps none'),
    ({'flags': [1]}, 'top-level "flags"'),
    # Was an internal TypeError (unhashable type: 'list').
    ({'b': {'flag_matrix': ['m'], 'flag_matrix_defs': {'m': {'f': [1]}}}},
     r"flag_matrix names one of flag_matrix_defs; give one name, not \['m'\]"),
    ({'b': {'flag_zip': {'z': 1}, 'flag_zip_defs': {'z': {'f': [1]}}}},
     'flag_zip names one of flag_zip_defs'),
])
def test_bad_matrix_configs_name_the_problem(bad, needle):
  with pytest.raises(errors.ConfigError, match=needle):
    matrix.Expand(bad, ['b'])


def test_uses_matrix_features():
  assert not matrix.UsesMatrixFeatures(None, ['b'])
  assert not matrix.UsesMatrixFeatures({'b': {'flags': {}}}, ['b'])
  assert matrix.UsesMatrixFeatures({'b': {'flag_zip': 'z'}}, ['b'])
  assert matrix.UsesMatrixFeatures({'flags': {}}, ['b'])
  assert matrix.UsesMatrixFeatures({'b': {}}, ['b'], flag_matrix='m')


# Filters: parsed and walked, never eval()ed.

@pytest.mark.parametrize('text, expected', [
    ("a == 'x' and b > 2", True),
    ('a in ("x", "y") and not c', True),
    ('b >= -1 and b < 10 and a != "z"', True),
    ('1 < b <= 3', True),
    ('c is not None or b == 4', False),
    ('a not in ["x"]', False),
    ('True and not False', True),
])
def test_filter_expressions(text, expected):
  assert matrix_filter.Matches(text, {'a': 'x', 'b': 3, 'c': None}) is expected


@pytest.mark.parametrize('text', [
    "__import__('os').system('touch /tmp/pwned')",
    'open("/etc/passwd").read()',
    'a.__class__',
    'a[0] == "x"',
    '(lambda: 1)()',
    'b ** 99999999 > 1',
    'b + 1 > 2',
    '[x for x in a]',
    'f"{a}" == "x"',
    '(y := 1)',
    '{"k": 1} == a',
    'a if b else c',
    'b == ...',
    "eval('1')",
    'x' * 3000,
    'a ==',
])
def test_malicious_or_unsupported_filters_are_refused(text):
  with pytest.raises(matrix_filter.FilterError):
    matrix_filter.Matches(text, {'a': 'x', 'b': 3, 'c': None})


def test_malicious_filter_in_a_config_is_refused_before_any_cell():
  config = yaml.safe_load(MATRIX)
  config['netperf']['flag_matrix_filters'] = {
      'GCP': "__import__('os').system('echo hi')"}
  with pytest.raises(errors.ConfigError, match='Call, which is not allowed'):
    matrix.Expand(config, ['netperf'])


def test_filter_naming_an_unknown_flag_or_mixing_types_is_an_error():
  with pytest.raises(matrix_filter.FilterError, match='"nope"'):
    matrix_filter.Matches('nope == 1', {'a': 1})
  with pytest.raises(matrix_filter.FilterError, match='cannot compare'):
    matrix_filter.Matches('a < 1', {'a': 'x'})


# The driver, as a user runs it.

def _Pkb(args, timeout=120):
  return pkb_forkserver.Run([sys.executable, e2e.PKB] + args,
                            timeout=timeout, cwd=e2e.REPO)


@pytest.mark.e2e
def test_nightly_gcp_aws_dry_run_prints_each_cell_and_the_total():
  proc = _Pkb([f'--benchmark_config_file={NIGHTLY}', '--dry_run'])
  assert proc.returncode == 0, proc.stderr
  out = proc.stdout
  for machine_type in ('t2d-standard-16', 'n2d-standard-16', 'c6gn.',
                       'i4i.4xlarge'):
    assert f'servers: 1 x {machine_type}' in out
  assert out.count('== Cell ') == 4
  for phase in ('provision', 'install', 'preload', 'search', 'teardown'):
    assert len(re.findall(rf'^  {phase}\s+[\d.]+ min  \$[\d.]+'
                          r'(  \([\d.]+ min before or after the VMs exist\))?$',
                          out, re.M)) == 4
  rows = re.findall(r'^\d\s+\S+\s+(GCP|AWS)\s+(\S+)\s+(\d+)\s+(\d+)\s+'
                    r'\$([\d.]+)$', out, re.M)
  assert [r[0] for r in rows] == ['GCP', 'GCP', 'AWS', 'AWS']
  assert all(int(r[2]) == 3 and int(r[3]) > 10 for r in rows)
  total = float(re.search(r'^Total: 4 cell\(s\), 12 VMs, estimated '
                          r'\$([\d.]+)', out, re.M).group(1))
  assert total == pytest.approx(sum(float(r[4]) for r in rows), abs=0.02)
  assert 'wall time about' in out


@pytest.mark.e2e
def test_budget_below_the_total_is_refused_before_anything_exists(tmp_path):
  results = tmp_path / 'runs'
  proc = _Pkb([f'--benchmark_config_file={NIGHTLY}', '--max_cost_usd=2',
               f'--results_dir={results}', '--project=p',
               '--gcp_ssh_source_range=192.0.2.1/32',
               '--aws_ssh_source_cidr=192.0.2.1/32'])
  assert proc.returncode == 2
  lines = proc.stderr.strip().splitlines()
  assert len(lines) == 1 and 'above --max_cost_usd=2' in lines[0], lines
  assert not os.path.exists(tmp_path / 'runs')
  assert not os.path.exists(tmp_path / 'matrix')
  # A single run is guarded the same way.
  proc = _Pkb(['--max_cost_usd=0.0001', f'--results_dir={results}'])
  assert proc.returncode == 2
  assert 'This run is estimated at $' in proc.stderr
  assert not os.path.exists(results)


def test_nightly_local_expands_to_its_topologies(pkb_flags):
  from perfkitbenchmarker import matrix_runner  # pylint: disable=g-import-not-at-top
  pkb_flags.benchmark_config_file = NIGHTLY_LOCAL
  cells = matrix_runner.Cells(pkb_flags, ['provision'])
  assert [(c.flags['redis_total_num_processes'],
           c.flags['redis_server_cluster_mode']) for c in cells] == [
               (1, False), (2, False), (2, True)]


def test_cells_at_once_on_a_machines_file_are_refused(pkb_flags, tmp_path):
  # Every cell takes the file's first machines: two at once shared them, and
  # the first to finish put back the settings it found, leaving the second's
  # tuning as what the second then "put back" (a lent machine left tuned).
  from perfkitbenchmarker import matrix_runner  # pylint: disable=g-import-not-at-top
  key = tmp_path / 'key'
  key.write_text('k')
  key.chmod(0o600)
  machines = tmp_path / 'machines.json'
  machines.write_text(json.dumps(
      [{'ip_address': '127.0.0.1', 'user_name': 'u', 'keyfile_path': 'key'}]
      * 2))
  pkb_flags.benchmark_config_file = NIGHTLY_LOCAL
  pkb_flags.static_vm_file = str(machines)
  pkb_flags.dry_run = True
  stages = ['provision', 'prepare', 'run', 'cleanup', 'teardown']
  cells = matrix_runner.Cells(pkb_flags, stages)
  pkb_flags.run_processes = 2
  with pytest.raises(errors.UsageError, match=(
      r'^--run_processes=2 on Static machines: .* give --run_processes=1\.$')):
    matrix_runner.RunMatrix(cells, pkb_flags, stages, str(tmp_path), None,
                            out=io.StringIO())
  pkb_flags.run_processes = 1
  assert matrix_runner.RunMatrix(cells, pkb_flags, stages, str(tmp_path),
                                 None, out=io.StringIO()) == 0


def test_a_command_line_flag_that_is_an_axis_is_refused(pkb_flags):
  # The command line wins over a config's value: every cell ran 1 shard
  # while cell 2's label and summary said redis_total_num_processes=2.
  from perfkitbenchmarker import matrix_runner  # pylint: disable=g-import-not-at-top
  pkb_flags.benchmark_config_file = NIGHTLY_LOCAL
  pkb_flags['redis_total_num_processes'].parse('1')
  with pytest.raises(errors.UsageError, match=(
      r'--redis_total_num_processes is given on the command line and is an '
      r'axis of the matrix; .* cell 2 \(.*\) would run '
      r'--redis_total_num_processes=1 instead of redis_total_num_processes=2')):
    matrix_runner.Cells(pkb_flags, ['provision'])
  # A flag the matrix does not vary is the command line's to set.
  pkb_flags['redis_total_num_processes'].present = 0
  pkb_flags['memtier_run_duration'].parse('1')
  assert len(matrix_runner.Cells(pkb_flags, ['provision'])) == 3


# e2e.FAST's load-proof cap and connections: the cells' answers are not
# these tests' subject, and under load every probe was over a 1 ms cap.
TWO_CELLS = """
flags: {memtier_run_duration: 1, memtier_key_maximum: 5000,
        memtier_max_probes: 4, memtier_confirm_repeats: 0,
        memtier_latency_cap: 1000, memtier_adaptive_max_connections: 64}
benchmarks:
  - redis_memtier: {}
  - redis_memtier: {flags: {redis_server_options: 'maxmemory-policy no-such-policy'}}
"""


def _Summary(results_dir):
  matrix_root = os.path.join(os.path.dirname(results_dir), 'matrix')
  (only,) = os.listdir(matrix_root)
  with open(os.path.join(matrix_root, only, 'matrix_summary.json')) as f:
    return json.load(f)['cells']


@pytest.mark.e2e
def test_a_failing_cell_does_not_lose_the_other(tmp_path):
  config = tmp_path / 'two.yaml'
  config.write_text(TWO_CELLS)
  results = str(tmp_path / 'runs')
  proc = _Pkb([f'--benchmark_config_file={config}', f'--results_dir={results}',
               '--run_processes=2'], timeout=600)
  # One failed cell, and one whose answer is a single probe (no repeats):
  # no confirmed result, which is not success either (README, "Verdicts").
  # A failed cell makes the matrix exit 1 (never 2, which is bad input).
  assert proc.returncode == 1, proc.stdout + proc.stderr
  cells = _Summary(results)
  assert [c['status'] for c in cells] == ['no result (unconfirmed)',
                                          'failed (exit 1)']
  assert [c['exit_code'] for c in cells] == [4, 1]
  good, bad = cells
  assert good['run_uri'] != bad['run_uri']
  samples = e2e.Samples(results, good['run_uri'])
  assert 'latency_capped_throughput' in {s['metric'] for s in samples}
  assert e2e.Record(results, good['run_uri'])['status'] == 'succeeded'
  assert e2e.Record(results, bad['run_uri'])['status'] == 'failed'
  for cell in cells:  # Each cell tore its own run down.
    assert e2e.LeftoverProcesses(results, cell['run_uri']) == []
  with open(bad['log']) as f:
    assert 'no-such-policy' in f.read()
  assert re.search(r'^\[cell 2\] .*no-such-policy', proc.stdout, re.M)
  assert '0 of 2 cell(s) succeeded, 1 gave no confirmed result' in proc.stdout


@pytest.mark.e2e
@pytest.mark.parametrize('sig', [signal.SIGTERM, signal.SIGHUP],
                         ids=['sigterm', 'sighup_terminal_gone'])
def test_signals_reach_the_cells_which_tear_down(tmp_path, sig):
  config = tmp_path / 'two.yaml'
  config.write_text(TWO_CELLS.replace('memtier_run_duration: 1',
                                      'memtier_run_duration: 3'))
  results = str(tmp_path / 'runs')
  proc = pkb_forkserver.Popen(
      [sys.executable, e2e.PKB, f'--benchmark_config_file={config}',
       f'--results_dir={results}'], stdout=subprocess.PIPE,
      stderr=subprocess.STDOUT, text=True, cwd=e2e.REPO)
  seen = []
  try:
    for line in proc.stdout:
      seen.append(line)
      if '[cell 1]   probe  0' in line:
        if sig == signal.SIGHUP:  # The terminal is gone: nobody reads.
          proc.stdout.close()
        proc.send_signal(sig)
        break
    if sig == signal.SIGHUP:
      proc.wait(timeout=60)
    else:
      seen.append(proc.communicate(timeout=60)[0])
  finally:
    if proc.poll() is None:
      proc.kill()
  assert proc.returncode == 130, ''.join(seen)
  cells = _Summary(results)  # Written although the terminal went away.
  assert [c['status'] for c in cells] == ['interrupted', 'not run']
  if sig == signal.SIGTERM:
    assert 'cells not started are not run' in ''.join(seen)
  run_uri = cells[0]['run_uri']
  assert e2e.LeftoverProcesses(results, run_uri) == []
  record = e2e.Record(results, run_uri)
  assert record['status'] == 'interrupted'
  assert all(r['status'] != 'created' for r in record['resources']
             if r['kind'] == 'redis_process')
  assert e2e.Samples(results, run_uri)  # The probe already measured stays.


def test_one_cell_without_a_confirmed_answer_exits_4_with_its_verdict(
    tmp_path):
  """The nightly job runs one cell: its exit 4 must survive the matrix
  runner, and the summary names the cell's verdict from its own samples."""
  import io  # pylint: disable=g-import-not-at-top
  import types  # pylint: disable=g-import-not-at-top
  from perfkitbenchmarker import matrix as matrix_lib  # pylint: disable=g-import-not-at-top
  from perfkitbenchmarker import matrix_runner  # pylint: disable=g-import-not-at-top
  results = tmp_path / 'runs'
  (results / 'n1').mkdir(parents=True)
  row = {'metric': 'latency_capped_throughput', 'value': 1.0,
         'unit': 'ops/sec', 'timestamp': 1.0, 'run_uri': 'n1-x',
         'labels': '|verdict:client_bound|,|verdict_reason:saturated|'}
  (results / 'n1' / 'perfkitbenchmarker_results.json').write_text(
      json.dumps(row) + '\n')
  cell = matrix_lib.Cell(1, 'redis_memtier', 'redis_t2d', {})
  out = io.StringIO()
  runner = matrix_runner._Runner([cell], None, str(results), lambda: 'abcd',
                                 1, out)
  os.makedirs(runner.matrix_dir)
  runner.done = {1: types.SimpleNamespace(code=4, run_uri='n1', started=0.0,
                                          ended=6.0, log_path='cell-1.log')}
  assert runner._Summary() == 4
  (summary,) = _Summary(str(results))
  assert summary['status'] == 'no result (client_bound)'
  assert '0 of 1 cell(s) succeeded, 1 gave no confirmed result' in (
      out.getvalue())
  runner.done[1].code = 1  # A failed cell keeps the count.
  assert runner._Summary() == 1


def test_a_cell_whose_unconfirmed_answer_was_accepted_is_no_result(tmp_path):
  """A cell run with --accept_unconfirmed exits 0; its answer is still not
  confirmed. './pkb.py --benchmark_config_file=<2 cells> --accept_unconfirmed'
  printed both unconfirmed cells as 'succeeded', '2 of 2 cell(s)
  succeeded' (README: 'no result (<verdict>)' for an answer that is not
  confirmed); the matrix still exits 0, as asked."""
  import io  # pylint: disable=g-import-not-at-top
  import types  # pylint: disable=g-import-not-at-top
  from perfkitbenchmarker import matrix as matrix_lib  # pylint: disable=g-import-not-at-top
  from perfkitbenchmarker import matrix_runner  # pylint: disable=g-import-not-at-top
  results = tmp_path / 'runs'
  for run_uri, verdict_name in (('r1', 'unconfirmed'), ('r2', 'confirmed')):
    (results / run_uri).mkdir(parents=True)
    row = {'metric': 'latency_capped_throughput', 'value': 1.0,
           'unit': 'ops/sec', 'timestamp': 1.0, 'run_uri': f'{run_uri}-x',
           'labels': f'|verdict:{verdict_name}|,|verdict_reason:why|'}
    (results / run_uri / 'perfkitbenchmarker_results.json').write_text(
        json.dumps(row) + '\n')
  cells = [matrix_lib.Cell(i, 'redis_memtier', f'c{i}', {})
           for i in (1, 2, 3)]
  out = io.StringIO()
  runner = matrix_runner._Runner(cells, None, str(results), lambda: 'abcd',  # pylint: disable=protected-access
                                 1, out)
  os.makedirs(runner.matrix_dir)
  runner.done = {  # r3 wrote no results file: a benchmark without answers.
      i: types.SimpleNamespace(code=0, run_uri=f'r{i}', started=0.0,
                               ended=1.0, log_path=f'cell-{i}.log')
      for i in (1, 2, 3)}
  assert runner._Summary() == 0  # pylint: disable=protected-access
  assert [c['status'] for c in _Summary(str(results))] == [
      'no result (unconfirmed)', 'succeeded', 'succeeded']
  assert '2 of 3 cell(s) succeeded, 1 gave no confirmed result' in (
      out.getvalue())


@pytest.mark.parametrize('codes,expected', [
    ((0, 0), 0), ((4, 4), 4), ((0, 4), 4), ((4, 1), 1), ((1, 3), 1),
    ((0, None), 1)], ids=['all_confirmed', 'two_no_result', 'one_no_result',
                          'failed_and_no_result', 'two_failed',
                          'not_started'])
def test_matrix_exit_code_says_what_happened_not_how_many(tmp_path, codes,
                                                           expected):
  """0 all confirmed, 1 a cell failed, 4 none failed but some gave no
  confirmed result: two cells without a result must not exit 2 (usage)."""
  import io  # pylint: disable=g-import-not-at-top
  import types  # pylint: disable=g-import-not-at-top
  from perfkitbenchmarker import matrix as matrix_lib  # pylint: disable=g-import-not-at-top
  from perfkitbenchmarker import matrix_runner  # pylint: disable=g-import-not-at-top
  cells = [matrix_lib.Cell(i, 'redis_memtier', f'c{i}', {})
           for i in range(1, len(codes) + 1)]
  runner = matrix_runner._Runner(cells, None, str(tmp_path / 'runs'),
                                 lambda: 'abcd', 1, io.StringIO())
  os.makedirs(runner.matrix_dir)
  runner.done = {
      i: types.SimpleNamespace(code=code, run_uri=f'r{i}', started=0.0,
                               ended=1.0, log_path=f'cell-{i}.log')
      for i, code in enumerate(codes, 1) if code is not None}
  assert runner._Summary() == expected


@pytest.mark.parametrize('results_dir,root', [
    ('/tmp', '/tmp/matrix'),  # It was /matrix.
    ('/srv/bench/results/runs', '/srv/bench/results/matrix'),
    ('/srv/bench/nightly', '/srv/bench/nightly/matrix'),
])
def test_the_matrix_directory_is_in_the_results_root(results_dir, root):
  import io  # pylint: disable=g-import-not-at-top
  from perfkitbenchmarker import matrix_runner  # pylint: disable=g-import-not-at-top
  runner = matrix_runner._Runner([], None, results_dir, lambda: 'abcd', 1,  # pylint: disable=protected-access
                                 io.StringIO())
  assert os.path.dirname(runner.matrix_dir) == root


class _FakeCell:
  """A started cell's stand-in: its process ends on the first signal."""

  def __init__(self, cell, runner, signal_while_starting):
    self.cell, self.run_uri, self.log_path = cell, f'r{cell.index}', 'x.log'
    self.started, self.ended, self.code = 0.0, 1.0, None
    self.forwarded, self.sent, self.polls = 0, [], 0
    self.proc = self  # run_processes.Forward's poll() and send_signal().
    if signal_while_starting:  # Its process runs; it is not noted yet.
      runner._Forward(signal.SIGINT, None)  # pylint: disable=protected-access

  def poll(self):
    return -self.sent[0] if self.sent else None

  def send_signal(self, signum):
    self.sent.append(signum)

  def Poll(self):
    self.polls += 1
    assert self.polls < 50, 'never sent the signal'
    self.code = self.poll()
    return self.code is not None


def test_a_signal_while_a_cell_starts_reaches_it_once(tmp_path, monkeypatch):
  """The handler sent signals to the cells in `running`: one arriving while
  a cell's process had started but was not in it yet never reached that
  cell, which ran its whole study; and the handler wrote under the output
  lock, which hung when the main thread held it."""
  import io  # pylint: disable=g-import-not-at-top
  from perfkitbenchmarker import matrix as matrix_lib  # pylint: disable=g-import-not-at-top
  from perfkitbenchmarker import matrix_runner  # pylint: disable=g-import-not-at-top
  cells = [matrix_lib.Cell(i, 'redis_memtier', f'c{i}', {}) for i in (1, 2, 3)]
  out = io.StringIO()
  runner = matrix_runner._Runner(cells, None, str(tmp_path / 'runs'),  # pylint: disable=protected-access
                                 lambda: 'abcd', 2, out)
  started = []
  monkeypatch.setattr(runner, '_Start', lambda cell: started.append(
      _FakeCell(cell, runner, cell.index == 2)) or started[-1])
  assert runner.Run() == matrix_runner.EXIT_INTERRUPTED
  assert [c.cell.index for c in started] == [1, 2]  # Cell 3 is not run.
  assert [c.sent for c in started] == [[signal.SIGINT], [signal.SIGINT]]
  assert out.getvalue().count('Matrix: SIGINT: stopping;') == 1


def test_a_plan_of_cells_under_a_cent_adds_up(pkb_flags, tmp_path):
  # nightly_local's cells cost about $0.003 each: the table said '$0.00'
  # three times over a total of '$0.01'.
  from perfkitbenchmarker import matrix_runner  # pylint: disable=g-import-not-at-top
  pkb_flags.benchmark_config_file = NIGHTLY_LOCAL
  pkb_flags.dry_run = True
  stages = ['provision', 'prepare', 'run', 'cleanup', 'teardown']
  out = io.StringIO()
  assert matrix_runner.RunMatrix(matrix_runner.Cells(pkb_flags, stages),
                                 pkb_flags, stages, str(tmp_path), None,
                                 out=out) == 0
  plan = out.getvalue().split('Matrix plan:\n')[1].splitlines()
  assert [line.split()[-1] for line in plan[2:5]] == ['<$0.01'] * 3
  assert plan[5].startswith('Total: 3 cell(s), 6 VMs, estimated $0.01;')
