"""Operator paths: what a user sees when a run is driven by hand.

Issue 18 point 7: a second `prepare` of a staged run is refused in one line
(it used to start second shards, and the next `run` failed on WRONGPASS); a
teardown report of a huge record (the audit's had 50,003 entries, 5,003
here) is one bounded line, with the record's terminal escapes escaped; an
unreachable BigQuery endpoint fails in seconds with one line instead of
retrying for about five minutes.
(SIGHUP to a matrix: matrix_test; SIGTERM as a run starts:
probe_signals_test; setup.sh and apt's lock: setup_apt_lock_test.)
"""

import copy
import json
import os
import socket
import subprocess
import sys

from absl import flags
import pytest

import e2e_support as e2e
import lazy_modules
from perfkitbenchmarker import benchmark_spec
from perfkitbenchmarker import configs
from perfkitbenchmarker import errors
from perfkitbenchmarker import flags as pkb_flags_lib
from perfkitbenchmarker import pkb
from perfkitbenchmarker import pricing
from perfkitbenchmarker import resource
from perfkitbenchmarker import run_record
from perfkitbenchmarker import vm_util
from perfkitbenchmarker.publishers import bigquery_options
from perfkitbenchmarker.linux_benchmarks import redis_memtier_benchmark as bench

# Imported when a test first uses it (lazy_modules).
bigquery_publisher = lazy_modules.Module(
    'perfkitbenchmarker.publishers.bigquery_publisher')
ESC = '\x1b'


@pytest.mark.e2e
def test_a_second_prepare_is_refused_in_one_line(tmp_path):
  results = str(tmp_path)
  run_uri = e2e.NewRunUri()
  staged = ['--memtier_key_maximum=1000']
  try:
    first, _ = e2e.Run(staged + ['--run_stage=provision,prepare'], results,
                       run_uri=run_uri)
    assert first.returncode == 0, first.stderr
    again, _ = e2e.Run(staged + ['--run_stage=prepare'], results,
                       run_uri=run_uri)
    assert again.returncode == 2
    lines = again.stderr.strip().splitlines()
    assert len(lines) == 1 and 'already prepared' in lines[0], again.stderr
    assert '--run_stage=run' in lines[0]
    shards = [r for r in e2e.Record(results, run_uri)['resources']
              if r['kind'] == 'redis_process' and r['status'] != 'deleted']
    assert len(shards) == 1  # No second shard.
  finally:
    done, _ = e2e.Run(['--run_stage=cleanup,teardown'], results,
                      run_uri=run_uri)
  assert done.returncode == 0, done.stderr
  assert e2e.LeftoverProcesses(results, run_uri) == []


@pytest.mark.e2e
def test_a_new_run_under_the_run_uri_of_a_finished_one_is_refused(tmp_path):
  """`./pkb.py --run_uri=X` where run X already ran: it used to provision
  again in X's directory, appending the new run's samples to X's and its
  resources to X's record (two runs under one run_uri). One line instead,
  and X's files untouched."""
  run_uri = e2e.NewRunUri()
  run_dir = tmp_path / run_uri
  run_dir.mkdir(mode=0o700)
  record = json.dumps(
      {'format_version': 1, 'run_uri': run_uri, 'created': 0, 'info': {},
       'stages_done': ['provision', 'prepare', 'run', 'cleanup', 'teardown'],
       'status': 'succeeded', 'resources': []})
  (run_dir / 'run_record.json').write_text(record)
  (run_dir / 'perfkitbenchmarker_results.json').write_text('{}\n')
  proc, _ = e2e.Run([], str(tmp_path), run_uri=run_uri)
  assert proc.returncode == 2, proc.stderr
  lines = proc.stderr.strip().splitlines()
  assert len(lines) == 1 and 'already ran' in lines[0], proc.stderr
  assert (run_dir / 'run_record.json').read_text() == record
  assert (run_dir / 'perfkitbenchmarker_results.json').read_text() == '{}\n'
  assert sorted(os.listdir(run_dir)) == ['perfkitbenchmarker_results.json',
                                         'run_record.json']  # No lock, log.
  assert e2e.Workspaces(run_uri) == []


@pytest.mark.e2e
def test_a_budget_never_keeps_a_run_from_being_cleaned_up(tmp_path):
  """--run_stage=cleanup,teardown with --max_cost_usd below the run's
  estimate was refused ("nothing was created"), the run's VMs left up; a
  one-cell matrix (--run_processes=1) the same."""
  results = str(tmp_path)
  for matrix in ([], ['--run_processes=1']):
    run_uri = e2e.NewRunUri()
    first, _ = e2e.Run(['--run_stage=provision'], results, run_uri=run_uri)
    assert first.returncode == 0, first.stderr
    done, _ = e2e.Run(['--run_stage=cleanup,teardown',
                       '--max_cost_usd=0.0001'] + matrix, results,
                      run_uri=run_uri)
    assert done.returncode == 0, done.stderr + done.stdout
    record = e2e.Record(results, run_uri)
    assert all(r['status'] == 'deleted' for r in record['resources'])
    assert e2e.Workspaces(run_uri) == []


@pytest.mark.e2e
def test_a_later_stage_priced_as_another_machine_is_refused(tmp_path):
  """provision, then --run_stage=run with another --local_priced_as: the
  run's samples were priced as the later flag's machine type ($0.6759/hr
  for n2d-standard-16, where n2d-standard-2 was provisioned)."""
  results, run_uri = str(tmp_path), e2e.NewRunUri()
  try:
    first, _ = e2e.Run(['--run_stage=provision'], results, run_uri=run_uri)
    assert first.returncode == 0, first.stderr
    later, _ = e2e.Run(['--run_stage=run',
                        '--local_priced_as=GCP:n2d-standard-16'], results,
                       run_uri=run_uri)
    assert later.returncode == 2, later.stderr
    assert later.stderr.strip().splitlines() == [
        f'pkb: Run {run_uri} was priced as clients GCP:us-central1:'
        'n2d-standard-2, servers GCP:us-central1:n2d-standard-2 when it was '
        'provisioned (its record), not clients GCP:us-central1:'
        'n2d-standard-16, servers GCP:us-central1:n2d-standard-16; give the '
        '--local_priced_as (or vm_spec priced_as) it was provisioned with.']
  finally:  # Whatever failed above, the run's workspaces and cgroups go.
    done, _ = e2e.Run(['--run_stage=cleanup,teardown'], results,
                      run_uri=run_uri)
  assert done.returncode == 0, done.stderr
  assert e2e.Workspaces(run_uri) == []


@pytest.mark.parametrize('priced_as', [['x'], {'redis_memtier': 'x'}, 'x'])
def test_a_record_of_another_shape_is_not_read_for_its_prices(
    tmp_path, pkb_flags, priced_as):
  # A downloaded record: no price to hold the stage to, never a traceback.
  record = run_record.RunRecord.Create(str(tmp_path / 'shp1'), 'shp1',
                                       priced_as=priced_as)
  spec = benchmark_spec.BenchmarkSpec(
      bench, bench.GetConfig({}), 'shp1', 'Local', record, pkb_flags,
      pricing.PriceCatalog.Load(), lambda s: None)
  spec.CheckRecordedVms()


@pytest.mark.parametrize('said', ['stage', 'status'])
def test_provision_under_a_run_uri_torn_down_before_it_ran_is_refused(
    tmp_path, said):
  """provision, then --run_stage=teardown (status torn_down, no 'teardown'
  stage done), then provision again was accepted: a second run under the
  run_uri README says is refused once it "has run or been torn down".
  --run_stage=teardown now adds its stage to the record's stages_done; a
  record of before says torn_down in its status."""
  run_dir = tmp_path / 'tdn1'
  record = run_record.RunRecord.Create(str(run_dir), 'tdn1', cloud='Local',
                                       benchmarks=['redis_memtier'])
  record.MarkStageDone('provision')
  if said == 'stage':  # As ./pkb.py --run_stage=teardown leaves it.
    record.MarkStageDone('teardown')
  else:
    record.SetStatus('torn_down')
  for stages in (['provision'], list(pkb_flags_lib.RUN_STAGES)):
    with pytest.raises(errors.UsageError, match='was torn down'):
      pkb._CheckStagesNotRepeated(  # pylint: disable=protected-access
          str(run_dir), 'tdn1', stages)


def test_a_later_stage_on_another_cloud_than_the_run_is_refused(
    tmp_path, pkb_flags):
  """A GCP run killed mid-provision, then README's '--run_stage=cleanup,
  teardown --run_uri=X' without --cloud=GCP: it ran as Local, left all 8
  of the run's GCP resources ('unknown kind "gcp_vm"; delete it by hand')
  and exited 1."""
  run_dir = tmp_path / 'gcp1'
  record = run_record.RunRecord.Create(str(run_dir), 'gcp1', cloud='GCP',
                                       benchmarks=['redis_memtier'])
  record.AddResource('gcp_vm', 'pkb-gcp1-servers-0', group='servers')
  for stages in (['cleanup', 'teardown'], ['run'], ['prepare', 'run']):
    with pytest.raises(errors.UsageError, match=(
        'run gcp1 was provisioned on GCP [(]its record[)], not Local; give '
        'the flags it was provisioned with, or delete it from its record '
        'alone with ./pkb.py --run_stage=teardown --run_uri=gcp1')):
      pkb._CheckStagesNotRepeated(  # pylint: disable=protected-access
          str(run_dir), 'gcp1', stages)
  pkb_flags.cloud = 'GCP'
  pkb._CheckStagesNotRepeated(  # pylint: disable=protected-access
      str(run_dir), 'gcp1', ['cleanup', 'teardown'])


@pytest.mark.e2e
def test_a_huge_hostile_record_gets_one_bounded_escaped_line(tmp_path):
  run_uri = e2e.NewRunUri()
  run_dir = tmp_path / run_uri
  run_dir.mkdir()
  entries = [{'kind': f'{ESC}[31mevil{ESC}]0;title\a', 'name': f'n{i}\r',
              'status': 'created', 'data': {}, 'recorded': 0}
             for i in range(5003)]
  (run_dir / 'run_record.json').write_text(json.dumps(
      {'format_version': 1, 'run_uri': run_uri, 'created': 0, 'info': {},
       'stages_done': [], 'status': 'running', 'resources': entries}))
  proc, _ = e2e.Run(['--run_stage=teardown'], str(tmp_path), run_uri=run_uri)
  assert proc.returncode == 1
  assert ESC not in proc.stderr + proc.stdout and '\r' not in proc.stderr
  lines = proc.stderr.strip().splitlines()
  assert len(lines) == 1, len(lines)
  assert len(lines[0]) < 4000, len(lines[0])
  assert lines[0].startswith('Teardown left 5,003 resource(s): ')
  assert '\\x1b[31mevil' in lines[0] and 'and 4,998 more' in lines[0]
  with open(run_dir / 'pkb.log') as f:  # Every failure, escaped, in the log.
    log = f.read()
  assert log.count('Teardown: ') == 5003 and ESC not in log


def test_failure_lines_are_printable_and_bounded():
  assert vm_util.Printable(f'a{ESC}[2Jb\nc\td') == 'a\\x1b[2Jb\\nc\\td'
  summary = resource.FailureSummary([f'f{i}' for i in range(8)], shown=3)
  assert summary == 'f0; f1; f2; and 5 more (every one is in pkb.log)'


# Not the client's own retries (~300 s, the default timeout given): the hang
# guard is far under them.
@pytest.mark.timeout(120)
def test_an_unreachable_endpoint_fails_in_seconds(tmp_path):
  with socket.socket() as s:  # A port nothing listens on.
    s.bind(('127.0.0.1', 0))
    port = s.getsockname()[1]
  results = tmp_path / 'perfkitbenchmarker_results.json'
  results.write_text(json.dumps({
      'metric': 'throughput', 'value': 1.0, 'unit': 'ops/sec',
      'timestamp': 1.7e9, 'test': 'redis_memtier', 'product_name': 'PKB',
      'official': False, 'owner': 'me', 'run_uri': 'abc123-x',
      'sample_uri': 'u1', 'labels': ''}) + '\n')
  options = bigquery_options.BigQueryOptions(
      table=bigquery_options.ParseTableId('proj-1.d.t', None),
      job_project='proj-1', api_endpoint=f'http://127.0.0.1:{port}',
      timeout_s=300)  # The default: the client alone retries ~5 minutes.

  class Sink:
    text = ''

    def write(self, text):
      Sink.text += text

  assert not bigquery_publisher.PublishRun(options, str(results), 'abc123',
                                           out=Sink(), err=Sink())
  assert f'cannot reach the BigQuery endpoint 127.0.0.1:{port}' in Sink.text
  assert Sink.text.count('\n') == 1


@pytest.mark.parametrize('seconds', [float('inf'), float('nan'), 1e9])
def test_an_unbounded_bigquery_timeout_is_refused_by_every_entry(seconds):
  # pkb.py and publish_bigquery.py both read --bq_timeout_seconds from the
  # one definition in bigquery_options, whose parser holds its bounds (an
  # infinite timeout waited forever on an endpoint that accepts and never
  # answers); config files and matrix axes go through the same parser.
  for entry in ('perfkitbenchmarker/pkb.py', 'scripts/publish_bigquery.py'):
    with open(os.path.join(e2e.REPO, entry)) as f:
      assert ('from perfkitbenchmarker.publishers import bigquery_options'
              in f.read()), entry
  scratch = copy.deepcopy(flags.FLAGS['bq_timeout_seconds'])
  with pytest.raises(flags.Error):
    scratch.parse(str(seconds))
  with pytest.raises(errors.UsageError, match='--bq_timeout_seconds'):
    configs.ParseConfigValue(flags.FLAGS, 'bq_timeout_seconds', seconds)


@pytest.mark.e2e
def test_ctrl_c_while_pkb_starts_is_one_line(tmp_path):
  """Ctrl-C in pkb's first second (its imports) printed a 20-line
  KeyboardInterrupt traceback. The SIGINT arrives here exactly while
  perfkitbenchmarker.pkb is imported (a meta-path hook sends it)."""
  hook = (
      'import os, runpy, signal, sys\n'
      'class Hook:\n'
      '  def find_spec(self, name, path=None, target=None):\n'
      '    if name == "perfkitbenchmarker.pkb":\n'
      '      sys.meta_path.remove(self)\n'
      '      os.kill(os.getpid(), signal.SIGINT)\n'
      '    return None\n'
      'sys.meta_path.insert(0, Hook())\n'
      f'sys.argv = [{e2e.PKB!r}, "--dry_run"]\n'
      f'runpy.run_path({e2e.PKB!r}, run_name="__main__")\n')
  proc = subprocess.run([sys.executable, '-c', hook], capture_output=True,
                        text=True, timeout=60, cwd=str(tmp_path))
  assert proc.returncode == 130, proc.stderr
  assert proc.stderr == 'pkb: interrupted\n' and proc.stdout == ''
  assert os.listdir(tmp_path) == []
