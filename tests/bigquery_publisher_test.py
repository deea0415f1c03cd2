"""BigQuery publishing through the real google-cloud-bigquery client.

The client talks to tests/fake_bigquery.py on 127.0.0.1 with anonymous
credentials; nothing inside the publisher is mocked. Results files are
written by the harness's own SampleCollector and JSONPublisher, as a run
writes them, or are real recorded runs (tests/data/history).
"""

import dataclasses
import datetime
import hashlib
import io
import json
import os
import shlex
import shutil
import socket
import subprocess
import sys
import time
import types

from google.auth import credentials as auth_credentials
import pytest

from perfkitbenchmarker import errors
from perfkitbenchmarker import sample
from perfkitbenchmarker.publishers import bigquery_options
from perfkitbenchmarker.publishers import bigquery_schema
from perfkitbenchmarker.publishers import json_publisher
from perfkitbenchmarker.publishers import publisher

import lazy_modules
import e2e_support as e2e  # pylint: disable=g-bad-import-order
import fake_bigquery  # pylint: disable=g-bad-import-order
import memtier_replay  # pylint: disable=g-bad-import-order

# Imported when a test first uses them (lazy_modules).
bigquery = lazy_modules.Module('google.cloud.bigquery')
bigquery_publisher = lazy_modules.Module(
    'perfkitbenchmarker.publishers.bigquery_publisher')

PROJECT = 'pkb-test-project'
TABLE = f'{PROJECT}.pkb_results.samples'
# 2026-11-19 23:59:00 UTC: a run that crosses midnight spans two partitions.
START = 1795132740.0
HISTORY = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'data',
                       'history', 'runs')


@pytest.fixture
def fake():
  with fake_bigquery.FakeBigQuery() as server:
    server.AddDataset(PROJECT, 'pkb_results', location='us-central1')
    yield server


def _Client(endpoint, project=PROJECT):
  return bigquery.Client(project=project,
                         credentials=auth_credentials.AnonymousCredentials(),
                         client_options={'api_endpoint': endpoint})


def _Options(endpoint, table=TABLE, timeout_s=20.0):
  return bigquery_options.BigQueryOptions(
      table=bigquery_options.ParseTableId(table), job_project=PROJECT,
      api_endpoint=endpoint, timeout_s=timeout_s)


def _WriteRun(path, run_uri, count, first=0, collapse_labels=True):
  """Appends `count` samples of run `run_uri` as pkb's publishers do."""
  collector = publisher.SampleCollector(
      [json_publisher.JSONPublisher(str(path), collapse_labels)],
      publisher.RunInfo(run_uri=run_uri, owner='jane'))
  samples = []
  for i in range(first, first + count):
    metric, unit = (('throughput', 'ops/sec') if i % 2 == 0 else
                    ('average_latency', 'ms'))
    samples.append(sample.Sample(
        metric, 50000.0 + 97 * i if i % 2 == 0 else 0.3 + i / 1000, unit,
        {'probe_index': i // 2, 'client_saturated': i % 3 == 0,
         'servers_machine_type': 't2d-standard-16',
         'test_rps': 'SET=43501.90,GET=43336.95', 'memtier_ratio': '1:1'},
        timestamp=START + 10 * i + 0.123456))
  collector.Add(samples, 'redis_memtier')
  return path


def _FileRows(path):
  with open(path) as f:
    return [json.loads(line) for line in f if line.strip()]


def _Digest(directory):
  # The run directory's files (its raw/ evidence tree is not published).
  return {name: hashlib.sha256((directory / name).read_bytes()).hexdigest()
          for name in sorted(os.listdir(directory))
          if (directory / name).is_file()}


@pytest.mark.e2e
def test_creates_partitioned_clustered_table_and_loads_the_run(fake,
                                                                tmp_path):
  path = _WriteRun(tmp_path / 'results.json', 'abc123', 12)
  result = bigquery_publisher.PublishFiles(_Options(fake.endpoint), [path],
                                           client=_Client(fake.endpoint))
  assert (result.loaded, result.already) == (12, 0)
  table = fake.Table(TABLE)
  fields = [(f['name'], f['type'], f['mode'])
            for f in table['schema']['fields']]
  assert fields == [
      ('metric', 'STRING', 'REQUIRED'), ('value', 'FLOAT', 'REQUIRED'),
      ('unit', 'STRING', 'NULLABLE'), ('timestamp', 'FLOAT', 'REQUIRED'),
      ('sample_time', 'TIMESTAMP', 'NULLABLE'),
      ('test', 'STRING', 'NULLABLE'), ('product_name', 'STRING', 'NULLABLE'),
      ('official', 'BOOLEAN', 'NULLABLE'), ('owner', 'STRING', 'NULLABLE'),
      ('run_uri', 'STRING', 'REQUIRED'), ('sample_uri', 'STRING', 'REQUIRED'),
      ('labels', 'STRING', 'NULLABLE'), ('metadata', 'RECORD', 'REPEATED')]
  metadata = table['schema']['fields'][-1]
  assert [(f['name'], f['type']) for f in metadata['fields']] == [
      ('key', 'STRING'), ('value', 'STRING')]
  assert table['timePartitioning'] == {'type': 'DAY', 'field': 'sample_time'}
  assert table['clustering'] == {'fields': ['test', 'metric', 'run_uri']}
  # Rows went in with one load job, never streaming inserts.
  assert len(fake.LoadJobs()) == 1
  assert not [r for r in fake.requests if r.path.endswith('/insertAll')]
  stored = {r['sample_uri']: r for r in fake.Rows(TABLE)}
  for row in _FileRows(path):
    got = stored[row['sample_uri']]
    for key in ('metric', 'value', 'unit', 'timestamp', 'test', 'owner',
                'run_uri', 'official', 'product_name', 'labels'):
      assert got[key] == row[key], key
    assert got['sample_time'] == round(row['timestamp'] * 1e6)
    pairs = {p['key']: p['value'] for p in got['metadata']}
    assert pairs == sample.ParseLabels(row['labels'])
  assert pairs['test_rps'] == 'SET=43501.90,GET=43336.95'
  assert pairs['client_saturated'] in ('True', 'False')


@pytest.mark.e2e
def test_the_table_takes_upstream_pkbs_own_rows(fake, tmp_path):
  """A table shared with upstream PKB's runs: upstream's BigQuery publisher
  loads its JSON rows (collapsed labels, PKB's fields only: no sample_time,
  no metadata pairs) into it with a plain load job. The table required
  sample_time, so such a load failed ('Missing required field')."""
  path = _WriteRun(tmp_path / 'results.json', 'ours1', 2)
  client = _Client(fake.endpoint)
  bigquery_publisher.PublishFiles(_Options(fake.endpoint), [path],
                                  client=client)
  # Upstream's row: its SampleCollector's fields, labels collapsed.
  upstream = {'metric': 'Ops Throughput', 'value': 61234.5, 'unit': 'ops/s',
              'timestamp': START + 3600.25, 'test': 'redis_memtier',
              'product_name': 'PerfKitBenchmarker', 'official': False,
              'owner': 'jane', 'run_uri': 'e1a2b3c4-0f0e-4d4c-8b8a-123456789abc',
              'sample_uri': '9d8c7b6a-5f4e-4d3c-2b1a-0123456789ab',
              'labels': '|memtier_ratio:1:9|,'
                        '|perfkitbenchmarker_version:v1.12.0-6912-g946ea3176|'}
  data = (json.dumps(upstream) + '\n').encode()
  job = client.load_table_from_file(
      io.BytesIO(data), TABLE, size=len(data),
      job_config=bigquery.LoadJobConfig(
          source_format=bigquery.SourceFormat.NEWLINE_DELIMITED_JSON,
          write_disposition=bigquery.WriteDisposition.WRITE_APPEND))
  job.result(timeout=20)
  stored = {r['sample_uri']: r for r in fake.Rows(TABLE)}
  theirs = stored[upstream['sample_uri']]
  assert theirs['sample_time'] is None and theirs['metadata'] == []
  # Read back beside ours, and told apart: only ours say `harness`.
  rows = {r['sample_uri']: r
          for r in bigquery_publisher.ReadRows(TABLE, client)}
  assert rows[upstream['sample_uri']]['timestamp'] == upstream['timestamp']
  harness = {uri: sample.ParseLabels(r['labels']).get('harness')
             for uri, r in rows.items()}
  assert harness.pop(upstream['sample_uri']) is None
  assert set(harness.values()) == {'redis_price_performance'}


@pytest.mark.e2e
def test_republishing_the_same_run_adds_no_rows(fake, tmp_path):
  path = _WriteRun(tmp_path / 'results.json', 'abc123', 8)
  options, client = _Options(fake.endpoint), _Client(fake.endpoint)
  first = bigquery_publisher.PublishFiles(options, [path], client=client)
  second = bigquery_publisher.PublishFiles(options, [path], client=client)
  assert (first.loaded, second.loaded, second.already) == (8, 0, 8)
  assert len(fake.Rows(TABLE)) == 8
  assert len(fake.LoadJobs()) == 1
  # The look-up is bounded to the run and, through the partitioning column,
  # to the samples' own days.
  query = fake.queries[-1]
  assert 'sample_time BETWEEN' in query['sql']
  written = {json.loads(l)['run_uri'] for l in open(path)}
  assert [v['value'] for v in query['parameters']['run_uris']['arrayValues']
         ] == sorted(written)
  assert {publisher.ShortRunUri(u) for u in written} == {'abc123'}
  assert int(query['parameters']['first']['value']) <= START
  assert int(query['parameters']['last']['value']) >= START + 70


@pytest.mark.e2e
def test_a_resumed_run_publishes_only_its_new_samples(fake, tmp_path):
  path = _WriteRun(tmp_path / 'results.json', 'abc123', 6)
  options, client = _Options(fake.endpoint), _Client(fake.endpoint)
  bigquery_publisher.PublishFiles(options, [path], client=client)
  _WriteRun(path, 'abc123', 5, first=6)  # --run_stage=run --run_uri=abc123
  result = bigquery_publisher.PublishFiles(options, [path], client=client)
  assert (result.loaded, result.already) == (5, 6)
  uris = [r['sample_uri'] for r in fake.Rows(TABLE)]
  assert len(uris) == len(set(uris)) == 11
  assert set(uris) == {r['sample_uri'] for r in _FileRows(path)}


@pytest.mark.e2e
def test_hook_publishes_only_its_own_run_from_a_shared_json_path(fake,
                                                                 tmp_path):
  path = _WriteRun(tmp_path / 'shared.json', 'run1', 4)
  _WriteRun(path, 'run2', 3, first=4)
  out, err = _Streams()
  assert bigquery_publisher.PublishRun(_Options(fake.endpoint), str(path),
                                       'run2', out=out, err=err,
                                       client=_Client(fake.endpoint))
  assert err.text == ''
  assert out.text == (f'BigQuery: 3 new samples of run run2 loaded into '
                      f'{TABLE} (0 already there; job '
                      f'{fake.LoadJobs()[0]["jobReference"]["jobId"]}).\n')
  assert {publisher.ShortRunUri(r['run_uri'])
          for r in fake.Rows(TABLE)} == {'run2'}


@pytest.mark.e2e
def test_a_lost_load_response_is_a_conflict_not_a_duplicate(fake, tmp_path):
  path = _WriteRun(tmp_path / 'results.json', 'abc123', 6)
  fake.DropLoadResponses(1)  # Job created, the client sees a 503, retries.
  result = bigquery_publisher.PublishFiles(_Options(fake.endpoint), [path],
                                           client=_Client(fake.endpoint))
  uploads = [r for r in fake.requests if r.path.startswith('/upload/')]
  assert len(uploads) == 2  # The retry hit the same job id: a 409.
  assert result.loaded == 6 and not result.job_id.endswith('_retry1')
  assert len(fake.Rows(TABLE)) == 6 and len(fake.LoadJobs()) == 1


@pytest.mark.e2e
def test_a_failed_load_is_reported_and_the_next_publish_loads_once(fake,
                                                                   tmp_path):
  path = _WriteRun(tmp_path / 'results.json', 'abc123', 6)
  options, client = _Options(fake.endpoint), _Client(fake.endpoint)
  fake.FailLoadJobs(1)
  with pytest.raises(bigquery_publisher.PublishError) as failure:
    bigquery_publisher.PublishFiles(options, [path], client=client)
  assert 'failed' in str(failure.value) and '\n' not in str(failure.value)
  assert fake.Rows(TABLE) == []
  # The same rows give the same job id, which failed: the next id is used.
  result = bigquery_publisher.PublishFiles(options, [path], client=client)
  assert result.loaded == 6 and result.job_id.endswith('_retry1')
  assert len(fake.Rows(TABLE)) == 6


@pytest.mark.e2e
def test_large_uploads_are_resumable(fake, tmp_path):
  path = _WriteRun(tmp_path / 'results.json', 'abc123', 7)
  result = bigquery_publisher.PublishFiles(
      _Options(fake.endpoint), [path], client=_Client(fake.endpoint),
      multipart_max_bytes=1)
  assert result.loaded == 7 and len(fake.Rows(TABLE)) == 7
  assert [r.method for r in fake.requests if r.path.startswith('/upload/')
         ] == ['POST', 'PUT']


def test_publishes_recorded_runs_in_both_label_forms(fake):
  if not os.path.isdir(HISTORY):
    pytest.skip('tests/data/history is not in this tree')
  options, client = _Options(fake.endpoint), _Client(fake.endpoint)
  result = bigquery_publisher.PublishFiles(options, [HISTORY], client=client)
  files = bigquery_schema.FindResultsFiles([HISTORY])
  rows = [r for f in files for r in _FileRows(f)]
  assert result.loaded == len(rows) > 100
  stored = {r['sample_uri']: r for r in fake.Rows(TABLE)}
  nocollapse = [r for r in rows if 'metadata' in r]
  assert nocollapse  # The --nocollapse_labels run.
  for row in nocollapse:
    got = stored[row['sample_uri']]
    pairs = {p['key']: p['value'] for p in got['metadata']}
    assert pairs == {k: str(v) for k, v in row['metadata'].items()}
    assert stored[row['sample_uri']]['labels'] == sample.FormatLabels(
        row['metadata'])
  again = bigquery_publisher.PublishFiles(options, [HISTORY], client=client)
  assert (again.loaded, again.already) == (0, len(rows))


def test_history_loader_reads_the_same_frame_from_bigquery(fake):
  loader = pytest.importorskip('perfkitbenchmarker.results_history.loader')
  if not os.path.isdir(HISTORY):
    pytest.skip('tests/data/history is not in this tree')
  client = _Client(fake.endpoint)
  bigquery_publisher.PublishFiles(_Options(fake.endpoint), [HISTORY],
                                  client=client)
  from_files = loader.Load([HISTORY])
  from_table = loader.Load(bigquery_table=TABLE, bq_client=client)
  columns = [c for c in from_files.columns
             if c not in (loader.SOURCE_COLUMN, loader.COMMAND_LINE_COLUMN)]
  assert len(columns) > 50

  def Ordered(frame):
    return frame[columns].sort_values(['timestamp', 'sample_uri']
                                      ).reset_index(drop=True)
  pd = pytest.importorskip('pandas')
  pd.testing.assert_frame_equal(Ordered(from_files), Ordered(from_table),
                                check_dtype=False)


@pytest.mark.e2e
def test_read_rows_returns_what_was_published(fake, tmp_path):
  # More rows than one page of the fake, so paging is read through.
  path = _WriteRun(tmp_path / 'results.json', 'abc123', 120)
  bigquery_publisher.PublishFiles(_Options(fake.endpoint), [path],
                                  client=_Client(fake.endpoint))
  got = bigquery_publisher.ReadRows(TABLE.replace('.', ':', 1),
                                    _Client(fake.endpoint))
  expected = sorted(_FileRows(path), key=lambda r: r['timestamp'])
  assert got == expected
  assert isinstance(got[0]['timestamp'], float)
  # dataset.table is read in the client's project.
  assert bigquery_publisher.ReadRows('pkb_results.samples',
                                     _Client(fake.endpoint)) == expected


@pytest.mark.e2e
def test_existing_pkb_table_gets_pkb_columns_only(fake, tmp_path):
  pkb_schema = [{'name': n, 'type': t, 'mode': 'NULLABLE'} for n, t in (
      ('test', 'STRING'), ('official', 'BOOLEAN'), ('product_name', 'STRING'),
      ('owner', 'STRING'), ('labels', 'STRING'), ('metric', 'STRING'),
      ('value', 'FLOAT'), ('unit', 'STRING'), ('timestamp', 'FLOAT'),
      ('sample_uri', 'STRING'), ('run_uri', 'STRING'))]
  fake.AddTable(PROJECT, 'pkb_results', 'samples', pkb_schema)
  path = _WriteRun(tmp_path / 'results.json', 'abc123', 4)
  options, client = _Options(fake.endpoint), _Client(fake.endpoint)
  assert bigquery_publisher.PublishFiles(options, [path],
                                         client=client).loaded == 4
  assert 'BETWEEN' not in fake.queries[-1]['sql']
  assert bigquery_publisher.PublishFiles(options, [path],
                                         client=client).loaded == 0
  assert bigquery_publisher.ReadRows(TABLE, client) == _FileRows(path)


@pytest.mark.e2e
def test_table_without_pkb_columns_and_missing_dataset_are_one_line(
    fake, tmp_path):
  path = _WriteRun(tmp_path / 'results.json', 'abc123', 2)
  fake.AddTable(PROJECT, 'pkb_results', 'other',
                [{'name': 'x', 'type': 'STRING', 'mode': 'NULLABLE'}])
  client = _Client(fake.endpoint)
  for table, needle in (
      (f'{PROJECT}.pkb_results.other', 'has no column(s) metric, value'),
      (f'{PROJECT}.nope.samples', f'dataset {PROJECT}.nope does not exist')):
    with pytest.raises(bigquery_publisher.PublishError) as failure:
      bigquery_publisher.PublishFiles(_Options(fake.endpoint, table), [path],
                                      client=client)
    assert needle in str(failure.value) and '\n' not in str(failure.value)
  assert fake.LoadJobs() == []


class _Stream:

  def __init__(self):
    self.text = ''

  def write(self, text):
    self.text += text


def _Streams():
  return _Stream(), _Stream()


def _FreePort():
  with socket.socket() as s:
    s.bind(('127.0.0.1', 0))
    return s.getsockname()[1]


def test_an_unreachable_endpoint_is_one_sentence_not_two_stops(tmp_path):
  """'./pkb.py ... --bigquery_table=project.ds.t
  --bq_api_endpoint=http://127.0.0.1:9' said '... check --bq_api_endpoint
  and the network.. The local results are intact ...'."""
  path = tmp_path / bigquery_schema.RESULTS_FILE
  path.write_text(json.dumps({  # A pkb row, written without git describe.
      'metric': 'throughput', 'value': 1.0, 'unit': 'ops/sec',
      'timestamp': START, 'test': 'redis_memtier', 'official': False,
      'owner': 'jane', 'run_uri': 'abc123-x', 'sample_uri': 's1',
      'labels': '|harness:redis_price_performance|'}) + '\n')
  out, err = _Streams()
  assert not bigquery_publisher.PublishRun(
      _Options(f'http://127.0.0.1:{_FreePort()}'), str(path), 'abc123',
      out=out, err=err)
  assert 'cannot reach the BigQuery endpoint' in err.text
  assert 'the network. The local results are intact' in err.text
  assert '..' not in err.text


# Not the client's own retries, which last ~300 s (operator_paths_test): the
# hang guard is 80x the 1.5 s timeout given.
@pytest.mark.timeout(120)
@pytest.mark.e2e
@pytest.mark.parametrize('kind', ['erroring', 'unreachable'])
def test_publish_failure_is_one_line_and_keeps_local_files(fake, tmp_path,
                                                           kind):
  run_dir = tmp_path / 'runs' / 'abc123'
  run_dir.mkdir(parents=True)
  path = _WriteRun(run_dir / bigquery_schema.RESULTS_FILE, 'abc123', 6)
  (run_dir / 'results.csv').write_text('timestamp,test\n')
  before = _Digest(run_dir)
  if kind == 'erroring':
    fake.FailRequests(403, 'accessDenied')
    endpoint = fake.endpoint
  else:
    endpoint = f'http://127.0.0.1:{_FreePort()}'  # Nothing listens there.
  options = _Options(endpoint, timeout_s=1.5)
  out, err = _Streams()
  assert not bigquery_publisher.PublishRun(options, str(path), 'abc123',
                                           out=out, err=err,
                                           client=_Client(endpoint))
  assert out.text == ''
  assert err.text.count('\n') == 1 and 'Traceback' not in err.text
  assert err.text.startswith(f'pkb: publishing run abc123 to BigQuery table '
                             f'{TABLE} failed: ')
  assert ('403' in err.text if kind == 'erroring' else
          'gave up retrying' in err.text)
  assert f'scripts/publish_bigquery.py {path} --bigquery_table={TABLE}' in (
      err.text)
  assert _Digest(run_dir) == before
  assert fake.LoadJobs() == []


@pytest.mark.parametrize('table,project,expected', [
    ('my-project.ds.t1', None, ('my-project', 'ds', 't1')),
    ('my-project:ds.t1', None, ('my-project', 'ds', 't1')),
    ('ds.t1', 'my-project', ('my-project', 'ds', 't1')),
    ('example.com:my-project.ds.t-1', None,
     ('example.com:my-project', 'ds', 't-1')),
    ('other-project.ds.t1', 'my-project', ('other-project', 'ds', 't1')),
])
def test_table_ids_accepted(table, project, expected):
  options = bigquery_options.BigQueryOptions.FromFlags(_Flags(
      bigquery_table=table, bq_project=project))
  assert dataclasses.astuple(options.table) == expected
  assert options.job_project == (project or expected[0])


@pytest.mark.parametrize('flag_values,needle', [
    ({'bigquery_table': 'justatable'}, 'is not a table id'),
    ({'bigquery_table': 'ds.t1'}, 'names no project'),
    ({'bigquery_table': 'My_Project.ds.t1'}, '"My_Project" is not a project'),
    ({'bigquery_table': 'a.b.c.d'}, '"a.b" is not a project id'),
    ({'bigquery_table': 'my-project.bad-ds.t1'}, 'dataset "bad-ds"'),
    ({'bigquery_table': 'my-project.ds.t$1'}, 'table "t$1"'),
    ({'bigquery_table': 'my-project.ds.'}, 'table ""'),
    ({'bigquery_table': 'ds.t1', 'bq_project': 'x'}, '--bq_project="x"'),
    ({'bq_api_endpoint': 'http://bigquery.example.com'}, 'plain http'),
    ({'bq_api_endpoint': 'ftp://127.0.0.1'}, 'must be http(s)'),
    # urlsplit raises on these ('Invalid IPv6 URL'; 'Port out of range'
    # when the publish at the run's end connects).
    ({'bq_api_endpoint': 'https://x[y'}, 'must be http(s)'),
    ({'bq_api_endpoint': 'https://bq.example.com:99999'}, 'must be http(s)'),
    ({'service_account': 'a@b.iam.gserviceaccount.com'},
     'needs --service_account_private_key'),
    ({'service_account_private_key': '/nonexistent/key.json'}, 'cannot read'),
])
def test_bad_options_are_one_line_usage_errors(flag_values, needle):
  values = dict(bigquery_table='my-project.ds.t1')
  values.update(flag_values)
  with pytest.raises(errors.UsageError) as failure:
    bigquery_options.BigQueryOptions.FromFlags(_Flags(**values))
  assert needle in str(failure.value)
  assert '\n' not in str(failure.value)


def test_key_files_must_be_json_service_account_keys(tmp_path):
  p12 = tmp_path / 'key.p12'
  p12.write_bytes(b'\x30\x82\x09\x00binary')
  with pytest.raises(errors.UsageError, match='not a JSON service-account'):
    bigquery_options.BigQueryOptions.FromFlags(_Flags(
        bigquery_table='my-project.ds.t1',
        service_account_private_key=str(p12)))
  key = tmp_path / 'key.json'
  key.write_text(json.dumps({'type': 'service_account',
                             'client_email': 'pub@p.iam.gserviceaccount.com'}))
  with pytest.raises(errors.UsageError, match='is not the account of the key'):
    bigquery_options.BigQueryOptions.FromFlags(_Flags(
        bigquery_table='my-project.ds.t1', service_account='x@y.com',
        service_account_private_key=str(key)))
  options = bigquery_options.BigQueryOptions.FromFlags(_Flags(
      bigquery_table='my-project.ds.t1',
      service_account='pub@p.iam.gserviceaccount.com',
      service_account_private_key=str(key)))
  assert options.key_file == str(key)


def test_a_key_file_is_read_bounded_a_regular_file_only(tmp_path):
  # Deep JSON ended in 'internal error RecursionError', a FIFO waited for
  # a writer for ever, /dev/zero in 'internal error MemoryError'.
  fifo = tmp_path / 'fifo'
  os.mkfifo(fifo)
  deep = tmp_path / 'deep.json'
  deep.write_text('[' * 200000)
  for path, needle in ((deep, 'not a JSON service-account key'),
                       (fifo, 'not a regular file'),
                       ('/dev/zero', 'not a regular file')):
    with pytest.raises(errors.UsageError, match=needle):
      bigquery_options.BigQueryOptions.FromFlags(_Flags(
          bigquery_table='my-project.ds.t1',
          service_account_private_key=str(path)))


def test_no_table_means_no_publishing():
  assert bigquery_options.BigQueryOptions.FromFlags(_Flags()) is None


def _Flags(**values):
  defaults = dict(bigquery_table=None, bq_project=None, service_account=None,
                  service_account_private_key=None, bq_api_endpoint=None,
                  bq_timeout_seconds=300)
  defaults.update(values)
  return types.SimpleNamespace(**defaults)


@pytest.mark.e2e
def test_bad_results_files_are_refused_with_file_and_line(tmp_path):
  bad = tmp_path / 'bad.json'
  good_line = json.dumps(_FileRows(_WriteRun(tmp_path / 'ok.json', 'r1',
                                             1))[0])
  for content, needle in (
      (good_line + '\n{"metric": "x"\n', 'bad.json:2: not JSON'),
      ('{"metric": "x", "value": 1, "timestamp": 2}\n',
       'bad.json:1: not a PKB sample (no run_uri)'),
      ('[1, 2]\n', 'bad.json:1: not a JSON object'),
      ('{"metric": "x", "value": 1, "timestamp": 2, "run_uri": "r", '
       '"labels": "no pipes"}\n', 'bad.json:1: not a PKB sample (labels')):
    bad.write_text(content)
    with pytest.raises(bigquery_schema.ResultsFileError) as failure:
      bigquery_schema.ReadResultsFiles([str(bad)])
    assert needle in str(failure.value)
  with pytest.raises(bigquery_schema.ResultsFileError, match='no such file'):
    bigquery_schema.ReadResultsFiles([str(tmp_path / 'missing')])


def _ScriptStart(args):
  script = os.path.join(e2e.REPO, 'scripts', 'publish_bigquery.py')
  return subprocess.Popen([sys.executable, script] + args,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, cwd=e2e.REPO)


def _ScriptDone(proc, timeout=60):
  """The CompletedProcess of a _ScriptStart."""
  try:
    out, err = proc.communicate(timeout=timeout)
  finally:
    if proc.poll() is None:
      proc.kill()
      proc.communicate()
  return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def _Script(args, timeout=60):
  return _ScriptDone(_ScriptStart(args), timeout)


@pytest.mark.e2e
def test_script_help_is_its_usage():
  """--help said 'Unknown command line flag 'help'' (exit 2)."""
  done = _Script(['--help'])
  assert done.returncode == 0, done.stderr
  assert 'publish_bigquery.py RESULTS... --bigquery_table=P.D.T' in done.stdout
  flags_shown = done.stdout.split('Exit codes', 1)[1]
  # It listed five of the seven flags it takes: not --service_account nor
  # --bq_timeout_seconds, which docs/bigquery.md's table has.
  for flag in ('--bigquery_table', '--bq_project', '--run_uri',
               '--service_account_private_key', '--service_account:',
               '--bq_api_endpoint', '--bq_timeout_seconds'):
    assert flag in flags_shown, flag


@pytest.mark.e2e
def test_script_publishes_directories_and_is_safe_to_repeat(fake, tmp_path):
  for run_uri in ('run1', 'run2'):
    (tmp_path / run_uri).mkdir()
    _WriteRun(tmp_path / run_uri / bigquery_schema.RESULTS_FILE, run_uri, 3)
  args = [str(tmp_path), f'--bigquery_table={TABLE}',
          f'--bq_api_endpoint={fake.endpoint}']
  # Refused before any request: run beside the publishes.
  bad = _ScriptStart([str(tmp_path), '--bigquery_table=nope'])
  missing = _ScriptStart([str(tmp_path / 'none'), f'--bigquery_table={TABLE}'])
  first = _Script(args)
  assert first.returncode == 0, first.stderr
  assert first.stdout.startswith(f'6 new samples loaded into {TABLE}')
  second = _Script(args)
  assert second.returncode == 0, second.stderr
  assert second.stdout == f'{TABLE} already holds all 6 samples; ' + (
      'nothing loaded.\n')
  only = _Script(args + ['--run_uri=run1'])
  assert only.stdout.startswith(f'{TABLE} already holds all 3 samples')
  assert len(fake.Rows(TABLE)) == 6
  bad = _ScriptDone(bad)
  assert bad.returncode == 2 and bad.stderr.count('\n') == 1
  assert 'is not a table id' in bad.stderr
  missing = _ScriptDone(missing)
  assert missing.returncode == 2 and 'no such file' in missing.stderr
  fake.FailRequests(500, 'backendError', match='/datasets/')
  failed = _Script(args + ['--bq_timeout_seconds=1'])
  assert failed.returncode == 1 and failed.stderr.count('\n') == 1
  assert 'Traceback' not in failed.stderr


@pytest.mark.e2e
def test_pkb_refuses_a_bad_table_before_anything_starts(tmp_path):
  proc, run_uri = e2e.Run(['--bigquery_table=nodots'], str(tmp_path))
  assert proc.returncode == 2
  assert proc.stderr.strip() == (
      'pkb: --bigquery_table="nodots" is not a table id; use project.dataset.'
      'table, project:dataset.table, or dataset.table with --bq_project.')
  assert not os.path.exists(tmp_path / run_uri)


def test_sample_time_is_the_sample_timestamp_in_utc():
  row = bigquery_schema.ToTableRow({
      'metric': 'm', 'value': 1.5, 'timestamp': START + 0.5,
      'run_uri': 'r', 'labels': '', 'official': 'True'})
  assert row['sample_time'] == datetime.datetime.fromtimestamp(
      START + 0.5, datetime.timezone.utc).strftime('%Y-%m-%dT%H:%M:%S.%fZ')
  assert row['sample_time'] == '2026-11-19T23:59:00.500000Z'
  assert row['value'] == 1.5 and row['official'] is True
  # A row without a sample_uri gets one derived from its content: stable.
  assert row['sample_uri'] == bigquery_schema.ToTableRow(
      {'metric': 'm', 'value': 1.5, 'timestamp': START + 0.5,
       'run_uri': 'r', 'labels': '', 'official': 'True'})['sample_uri']


def _OneProbe():
  """One 1 s probe a run stage, reported as measured (no confirming
  repeats), under a cap no loaded machine misses, by memtier's replay
  stand-in (tests/memtier_replay.py: its timed runs take their time, not a
  core): each run stage still writes its 6 samples, all the test needs. A
  search of 8 redis-benchmark probes took 10-13 s a stage; one took 3-5 s on
  a loaded machine (its 40,000 requests)."""
  return ['--load_generator=memtier',
          f'--memtier_path={memtier_replay.Path()}',
          '--memtier_run_duration=1', '--memtier_key_maximum=20000',
          '--memtier_latency_cap=100', '--memtier_max_probes=1',
          '--memtier_confirm_repeats=0']


@pytest.mark.e2e
def test_a_staged_run_publishes_at_the_end_of_each_invocation(fake, tmp_path):
  bq = [f'--bigquery_table={TABLE}', f'--bq_api_endpoint={fake.endpoint}']
  one_probe = _OneProbe()
  proc, run_uri = e2e.Run(
      one_probe + bq + ['--run_stage=provision,prepare,run'], str(tmp_path))
  assert proc.returncode == 0, proc.stderr
  written = e2e.Samples(str(tmp_path), run_uri)
  assert len(written) >= 6
  assert proc.stdout.splitlines()[-1].startswith(
      f'BigQuery: {len(written)} new samples of run {run_uri} loaded into '
      f'{TABLE} (0 already there; job pkb_load_{run_uri}_')
  # Resumed: the run stage again appends samples; only those are loaded.
  proc, _ = e2e.Run(one_probe + bq + ['--run_stage=run'], str(tmp_path),
                    run_uri=run_uri)
  assert proc.returncode == 0, proc.stderr
  resumed = e2e.Samples(str(tmp_path), run_uri)
  added = len(resumed) - len(written)
  assert added > 0
  assert proc.stdout.splitlines()[-1].startswith(
      f'BigQuery: {added} new samples of run {run_uri} loaded into {TABLE} '
      f'({len(written)} already there; job ')
  assert bigquery_publisher.ReadRows(TABLE, _Client(fake.endpoint)) == sorted(
      resumed, key=lambda r: (r['timestamp'], r['sample_uri']))
  # A broken endpoint at the last stage: one line, the run's exit code, and
  # the local files untouched.
  fake.FailRequests(403, 'accessDenied')
  before = _Digest(tmp_path / run_uri)
  # This invocation's own files: its log, record and run lock.
  for own in ('pkb.log', 'run_record.json', 'run.lock'):
    before.pop(own, None)
  proc, _ = e2e.Run(bq + ['--run_stage=cleanup,teardown'], str(tmp_path),
                    run_uri=run_uri)
  assert proc.returncode == 0, proc.stderr
  assert proc.stderr.splitlines() == [
      f'pkb: publishing run {run_uri} to BigQuery table {TABLE} failed: 403 '
      'Injected failure. The local results are intact and the exit code is '
      'the run\'s own; publish later with: scripts/publish_bigquery.py '
      f'{tmp_path / run_uri / bigquery_schema.RESULTS_FILE} '
      f'--bigquery_table={TABLE} --run_uri={run_uri} '
      f'--bq_api_endpoint={fake.endpoint}']
  after = _Digest(tmp_path / run_uri)
  assert {k: after[k] for k in before} == before
  assert len(fake.Rows(TABLE)) == len(resumed)


def test_missing_credentials_are_one_line(monkeypatch):
  # An explicit, missing key file: google-auth fails at once, offline.
  monkeypatch.setenv('GOOGLE_APPLICATION_CREDENTIALS', '/nonexistent/key.json')
  options = bigquery_options.BigQueryOptions(
      table=bigquery_options.ParseTableId(TABLE), job_project=PROJECT)
  with pytest.raises(bigquery_publisher.PublishError,
                     match='^no Google credentials for BigQuery; run'):
    bigquery_publisher.MakeClient(options)


def _PublishWatched(fake, tmp_path, timeout_s, limit_s):
  """publish_bigquery.py against the fake: (exit code, stderr, the child's
  peak RSS in MB); the child is killed (exit -9) if it runs limit_s."""
  import psutil  # pylint: disable=g-import-not-at-top
  path = _WriteRun(tmp_path / 'results.json', 'slow1', 4)
  script = os.path.join(e2e.REPO, 'scripts', 'publish_bigquery.py')
  start = time.monotonic()
  proc = subprocess.Popen(
      [sys.executable, script, str(path), f'--bigquery_table={TABLE}',
       f'--bq_api_endpoint={fake.endpoint}',
       f'--bq_timeout_seconds={timeout_s}'],
      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
  peak = 0
  try:
    watched = psutil.Process(proc.pid)
    while proc.poll() is None and time.monotonic() - start < limit_s:
      try:
        peak = max(peak, watched.memory_info().rss)
      except psutil.Error:
        pass
      time.sleep(0.05)
  finally:
    if proc.poll() is None:
      proc.kill()
    _, err = proc.communicate()
  return proc.returncode, err, peak / 2**20


@pytest.mark.e2e
def test_a_trickling_endpoint_ends_within_bq_timeout_seconds(fake, tmp_path):
  """Issue 24 item 11: --bq_timeout_seconds=20 against an endpoint that
  answered a byte a second still ran past 200 s (requests' timeout bounds
  each socket read, not the answer)."""
  fake.SlowResponses('datasets', bytes_per_s=1)
  # Ended by itself (exit 1, not the watcher's kill): start-up on a loaded
  # machine, then its 4 s (a byte a second keeps each socket read, bounded
  # by the same 4 s, going: only the whole answer's deadline ends it).
  code, err, _ = _PublishWatched(fake, tmp_path, 4, limit_s=36)
  assert code == 1, err
  assert 'no complete answer' in err and 'within' in err, err
  assert err.count('\n') == 1 and 'Traceback' not in err


@pytest.mark.e2e
def test_an_endless_body_is_refused_at_the_size_limit(fake, tmp_path):
  """The same publisher grew about 230 MB/s reading an endless chunked
  body (6.5 GB at 33 s). The fake stops at 256 MB so that a client without
  a limit ends too."""
  fake.EndlessResponses('datasets')
  code, err, peak_mb = _PublishWatched(fake, tmp_path, 60, limit_s=100)
  assert code == 1, err
  assert 'longer than 67,108,864 bytes' in err, err
  assert err.count('\n') == 1 and 'Traceback' not in err
  assert peak_mb < 200 + 64, peak_mb  # Python and the clients, + the limit.


@pytest.mark.e2e  # PublishRun reads the harness version with git.
def test_a_sample_compare_would_refuse_is_not_published(fake, tmp_path):
  """Issue 24 item 13: samples holding "value": Infinity (a --machine_price
  of 1 and 400 zeros) were loaded (rc 0), and compare then refused the
  whole table. Refused before anything is loaded, naming the line."""
  path = _WriteRun(tmp_path / 'results.json', 'inf1', 2)
  lines = path.read_text().splitlines()
  row = json.loads(lines[1])
  row['value'] = float('inf')
  lines[1] = json.dumps(row)  # json writes it as Infinity, as pkb did.
  path.write_text('\n'.join(lines) + '\n')
  with pytest.raises(bigquery_schema.ResultsFileError,
                     match=r"results.json:2: value 'inf' is not a finite "
                     'number'):
    bigquery_publisher.PublishFiles(_Options(fake.endpoint), [path],
                                    client=_Client(fake.endpoint))
  assert not fake.LoadJobs()


def test_a_fifo_named_like_a_results_file_is_not_waited_on(tmp_path):
  # (At 90140b1 this blocks for ever: run it there in a subprocess.)
  os.mkfifo(tmp_path / bigquery_schema.RESULTS_FILE)
  with pytest.raises(bigquery_schema.ResultsFileError,
                     match='not a regular file'):
    bigquery_schema.ReadResultsFiles([str(tmp_path)])


def test_a_results_file_in_a_tree_is_read_only_as_the_trees_own(
    fake, tmp_path):
  """`publish_bigquery.py tree` where tree/runs/b/perfkitbenchmarker_
  results.json is a symlink to a file outside it loaded that file's samples
  too (42 new samples, 2 runs, exit 0), where compare skips it: a tree
  downloaded from CI could make a publish read any file of the reader's.
  Refused in one line, nothing loaded; given by name, it is read."""
  tree = tmp_path / 'tree'
  for run in ('a', 'b'):
    (tree / 'runs' / run).mkdir(parents=True)
  shutil.copy(os.path.join(HISTORY, '902af480',
                           bigquery_schema.RESULTS_FILE),
              tree / 'runs' / 'a' / bigquery_schema.RESULTS_FILE)
  outside = tmp_path / 'outside.json'
  shutil.copy(os.path.join(HISTORY, '8f0c3fbd',
                           bigquery_schema.RESULTS_FILE), outside)
  link = tree / 'runs' / 'b' / bigquery_schema.RESULTS_FILE
  os.symlink(outside, link)
  options, client = _Options(fake.endpoint), _Client(fake.endpoint)
  with pytest.raises(bigquery_schema.ResultsFileError) as refused:
    bigquery_publisher.PublishFiles(options, [str(tree)], client=client)
  assert str(refused.value) == (
      f'{link}: a symbolic link (never followed in a directory read as '
      'input); give it by name to read it')
  assert not fake.LoadJobs()
  result = bigquery_publisher.PublishFiles(options, [str(link)],
                                           client=client)
  assert result.loaded == len(_FileRows(outside))


def test_the_publish_later_command_is_the_publish_that_failed(tmp_path):
  """The failed publish of a run given --bq_api_endpoint and a key file
  said to publish later with `scripts/publish_bigquery.py FILE
  --bigquery_table=T`: that command went to bigquery.googleapis.com as the
  default credentials, and took every run's samples of a shared
  --json_path. It now names the run, the endpoint and the key."""
  results = tmp_path / bigquery_schema.RESULTS_FILE
  shutil.copy(os.path.join(HISTORY, '902af480', bigquery_schema.RESULTS_FILE),
              results)
  key = tmp_path / 'key.json'
  key.write_text(json.dumps({'type': 'service_account',
                             'client_email': 'pkb@p.iam.gserviceaccount.com'}))
  endpoint = f'http://127.0.0.1:{_FreePort()}'  # Nothing listens there.
  options = bigquery_options.BigQueryOptions(
      table=bigquery_options.ParseTableId(TABLE), job_project='other-project',
      key_file=str(key), api_endpoint=endpoint, timeout_s=1.5)
  out, err = _Streams()
  assert not bigquery_publisher.PublishRun(options, str(results), '902af480',
                                           out=out, err=err)
  command = shlex.split(err.text.split('publish later with: ', 1)[1])
  assert command == [
      'scripts/publish_bigquery.py', str(results), f'--bigquery_table={TABLE}',
      '--run_uri=902af480', '--bq_project=other-project',
      f'--bq_api_endpoint={endpoint}',
      f'--service_account_private_key={key}']
