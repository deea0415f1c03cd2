"""compare over a BigQuery table the publisher wrote, end to end.

The run's files are published by the real publisher and read back by
compare's own client (google-cloud-bigquery) from tests/fake_bigquery.py on
127.0.0.1, as `./scripts/compare.py --bigquery_table=... --bq_api_endpoint=`
does; nothing in between is mocked.
"""

import json
import os

from google.auth import credentials as auth_credentials
import pytest

from perfkitbenchmarker import sample
from perfkitbenchmarker import terminal_text
from perfkitbenchmarker.publishers import bigquery_options
from perfkitbenchmarker.results_history import compare_cli
from perfkitbenchmarker.results_history import loader

import lazy_modules
import fake_bigquery  # pylint: disable=g-bad-import-order

# Imported when a test first uses them (lazy_modules).
bigquery = lazy_modules.Module('google.cloud.bigquery')
bigquery_publisher = lazy_modules.Module(
    'perfkitbenchmarker.publishers.bigquery_publisher')

PROJECT = 'pkb-test-project'
TABLE = f'{PROJECT}.pkb_results.samples'
SOURCE = f'bigquery:{TABLE}'
RUNS = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'data',
                    'history', 'runs')
RUN = '04066aa3'  # 23 samples: probes, repeats, the answer.


@pytest.fixture
def fake():
  with fake_bigquery.FakeBigQuery() as server:
    server.AddDataset(PROJECT, 'pkb_results', location='us-central1')
    yield server


def _Lines(run_uri=RUN):
  with open(os.path.join(RUNS, run_uri, loader.RESULTS_FILE)) as f:
    return [json.loads(line) for line in f if line.strip()]


def _Publish(fake, tmp_path, lines, name):
  """Publishes `lines` as a results file by the publisher, as
  scripts/publish_bigquery.py does; how many rows it loaded."""
  path = tmp_path / name
  path.write_text(''.join(json.dumps(line) + '\n' for line in lines))
  options = bigquery_options.BigQueryOptions(
      table=bigquery_options.ParseTableId(TABLE), job_project=PROJECT,
      api_endpoint=fake.endpoint, timeout_s=20.0)
  client = bigquery.Client(
      project=PROJECT, credentials=auth_credentials.AnonymousCredentials(),
      client_options={'api_endpoint': fake.endpoint})
  return bigquery_publisher.PublishFiles(options, [str(path)],
                                         client=client).loaded


def _NewSampleIds(lines, prefix='imported'):
  """The lines as an import of the run's files writes them: new ids."""
  return [dict(line, sample_uri=f'{prefix}-{n}')
          for n, line in enumerate(lines)]


def _Compare(fake, tmp_path, capsys):
  """compare over the table: its rows (as its views read them), stderr,
  the HTML page and the Markdown summary."""
  report, markdown = tmp_path / 'report.html', tmp_path / 'summary.md'
  argv = ['compare', f'--bigquery_table={TABLE}', f'--bq_project={PROJECT}',
          f'--bq_api_endpoint={fake.endpoint}', f'--report={report}',
          f'--markdown={markdown}']
  capsys.readouterr()
  code = compare_cli.Main(argv)
  err = capsys.readouterr().err
  assert code == compare_cli.EXIT_OK, err
  said = []
  frame = loader.Load([], bigquery_table=TABLE, bq_client=(
      compare_cli._BigQueryClient(TABLE, PROJECT, fake.endpoint)),
                      note=said.append)
  assert [f'compare: {line}' for line in said] == err.splitlines()
  return frame, said, report.read_text(), markdown.read_text()


def test_a_run_published_twice_with_new_sample_ids_counts_once(
    fake, tmp_path, capsys):
  """The run published by itself, then its files imported again with new
  sample ids: the table holds each of its 23 samples twice, and compare
  read 46 (every probe, repeat and hold twice) without a word, where the
  same copy given as a second directory is counted once. Now counted once,
  said on stderr, on the page and in the summary."""
  assert _Publish(fake, tmp_path, _Lines(), 'published.json') == 23
  assert _Publish(fake, tmp_path, _NewSampleIds(_Lines()),
                  'imported.json') == 23
  assert len(fake.Rows(TABLE)) == 46
  frame, said, page, summary = _Compare(fake, tmp_path, capsys)
  assert len(frame) == 23
  line = (f'run {RUN} read 2 times from {SOURCE}, the same samples each '
          'time (copies under new sample ids: published or imported '
          'again); counted once')
  assert said == [line]
  # Under the banner, above the leaderboard, where a reader sees it.
  assert (page.index('id="regressions"') < page.index(line) <
          page.index('id="leaderboard"')), page
  summary_line = f'- {terminal_text.MarkdownText(line)}\n'
  assert (summary.index('**Regressions') < summary.index(summary_line) <
          summary.index('### Change points')), summary


def test_part_of_a_run_published_again_counts_each_sample_once(
    fake, tmp_path, capsys):
  """A copy of the run's first 5 samples (taken while it still wrote)
  imported besides the whole run: those 5 were counted twice."""
  _Publish(fake, tmp_path, _Lines(), 'published.json')
  _Publish(fake, tmp_path, _NewSampleIds(_Lines()[:5]), 'partial.json')
  frame, said, _, _ = _Compare(fake, tmp_path, capsys)
  assert len(frame) == 23
  assert said == [f'run {RUN}: 5 of its 23 samples read 2 times from '
                  f'{SOURCE} (copies under new sample ids: published or '
                  'imported again); each counted once']


def test_a_resumed_run_in_one_table_keeps_every_invocations_samples(
    fake, tmp_path, capsys):
  """Two invocations of one run (--run_stage), each with its own
  '<run_uri>-<uuid>' and samples at its own times, published to the
  table: they are the run's samples, not copies; all read, nothing said."""
  lines = _Lines()
  again = [dict(line, run_uri=f'{RUN}-second', timestamp=line['timestamp']
                + 600) for line in _NewSampleIds(lines, 'again')]
  _Publish(fake, tmp_path, lines + again, 'resumed.json')
  frame, said, page, _ = _Compare(fake, tmp_path, capsys)
  assert len(frame) == 2 * len(lines) and said == []
  assert 'id="load-notes"' not in page


def test_versions_of_digits_come_back_from_the_table_as_recorded(
    fake, tmp_path, capsys):
  """A run whose harness and server versions are all digits ('0123456' of
  git describe --always, '007'), published and read back: the page said
  'redis-server 7; harness 123456' (the loader typed them as numbers)."""
  lines = []
  for line in _Lines():
    labels = dict(sample.ParseLabels(line['labels']),
                  harness_version='0123456', redis_server_version='007')
    lines.append(dict(line, labels=sample.FormatLabels(labels)))
  _Publish(fake, tmp_path, lines, 'published.json')
  frame, _, page, _ = _Compare(fake, tmp_path, capsys)
  assert set(frame['harness_version']) == {'0123456'}
  assert '<dd>redis-server 007; harness 0123456; load generator ' in page
