"""The one loader, cells and nights, on real PKB result files (tests/data/history)."""

import json
import os
import shutil

import pandas as pd
import pytest

from perfkitbenchmarker import sample
from perfkitbenchmarker.load_generators import memtier_results
from perfkitbenchmarker.results_history import answers
from perfkitbenchmarker.results_history import cells
from perfkitbenchmarker.results_history import leaderboard
from perfkitbenchmarker.results_history import loader
from perfkitbenchmarker.results_history import nights

HISTORY = os.path.join(os.path.dirname(__file__), 'data', 'history')
RUNS = os.path.join(HISTORY, 'runs')
METADATA_FORM_RUN = '8f0c3fbd'  # --nocollapse_labels


def _Lines(run_uri):
  path = os.path.join(RUNS, run_uri, loader.RESULTS_FILE)
  with open(path) as f:
    return [json.loads(line) for line in f if line.strip()]


@pytest.fixture(scope='module')
def frame():
  return loader.Load([HISTORY])


def test_directory_is_searched_recursively_for_every_run(frame):
  expected = {uri: len(_Lines(uri)) for uri in os.listdir(RUNS)}
  assert frame.groupby('run_uri').size().to_dict() == expected


def test_columns_are_typed(frame):
  assert str(frame['timestamp'].dtype) == 'datetime64[ns, UTC]'
  assert frame['client_saturated'].dtype == 'boolean'
  assert frame['redis_server_cluster_mode'].dtype == 'boolean'
  assert pd.api.types.is_integer_dtype(frame['redis_total_num_processes'])
  assert pd.api.types.is_float_dtype(frame['throughput_ci95_ops'])
  assert pd.api.types.is_float_dtype(frame['value'])
  # Text that merely contains digits stays text.
  assert frame['servers_price_date'].dropna().iloc[0] == '2026-07-30' or (
      frame['servers_price_date'].dropna().iloc[0] == '2026-01-19')
  assert not pd.api.types.is_numeric_dtype(frame['process_seconds'])
  assert not pd.api.types.is_numeric_dtype(frame['memtier_ratio'])


def test_timestamps_are_the_files_epoch_seconds(frame):
  first = _Lines('40b2bc68')[0]
  row = frame[frame['sample_uri'] == first['sample_uri']].iloc[0]
  assert row['timestamp'].timestamp() == pytest.approx(first['timestamp'])
  assert row['value'] == pytest.approx(first['value'])


def test_collapsed_labels_and_metadata_object_load_alike(frame):
  mine = frame[frame['run_uri'] == METADATA_FORM_RUN]
  raw = _Lines(METADATA_FORM_RUN)
  assert 'metadata' in raw[0] and 'labels' not in raw[0]
  capped = mine[mine['metric'] == 'latency_capped_throughput'].iloc[0]
  meta = [r for r in raw
          if r['metric'] == 'latency_capped_throughput'][0]['metadata']
  assert capped['throughput_ci95_ops'] == pytest.approx(
      meta['throughput_ci95_ops'])
  assert bool(capped['client_saturated']) is meta['client_saturated']
  assert capped['local_priced_as'] == 'GCP:t2d-standard-2'
  # Alone, the metadata form types the same way.
  alone = loader.Load([os.path.join(RUNS, METADATA_FORM_RUN,
                                    loader.RESULTS_FILE)])
  assert alone['client_saturated'].dtype == 'boolean'
  assert pd.api.types.is_integer_dtype(alone['redis_total_num_processes'])


def test_labels_with_commas_and_colons_in_values():
  labels = '|local_priced_as:GCP:n2d-standard-2|,|test_rps:SET=1.5,GET=2|,|x:|'
  assert sample.ParseLabels(labels) == {
      'local_priced_as': 'GCP:n2d-standard-2', 'test_rps': 'SET=1.5,GET=2',
      'x': ''}


def test_command_line_comes_from_the_run_record(frame):
  by_run = frame.drop_duplicates('run_uri').set_index('run_uri')
  assert by_run.loc['40b2bc68', 'command_line'] == (
      './pkb.py --redis_server_cluster_mode --redis_total_num_processes=3')
  assert by_run.loc['04066aa3', 'command_line'] == './pkb.py'


def test_run_record_of_unknown_version_is_not_trusted(tmp_path):
  run = tmp_path / 'r'
  shutil.copytree(os.path.join(RUNS, '40b2bc68'), run)
  record = json.loads((run / 'run_record.json').read_text())
  record['format_version'] = 99
  (run / 'run_record.json').write_text(json.dumps(record))
  loaded = loader.Load([str(tmp_path)])
  assert loaded['command_line'].isna().all()


def test_same_samples_from_two_sources_are_not_doubled(frame):
  one_file = os.path.join(RUNS, '40b2bc68', loader.RESULTS_FILE)
  both = loader.Load([HISTORY, one_file])
  assert len(both) == len(frame)


def _Copy(tmp_path, run_uri, edit=lambda lines: lines, name='copy'):
  """`run_uri`'s recorded run directory copied under tmp_path/name, its
  lines passed through `edit`; the copy's results file."""
  run = tmp_path / name / run_uri
  shutil.copytree(os.path.join(RUNS, run_uri), run)
  path = run / loader.RESULTS_FILE
  path.write_text(''.join(json.dumps(line) + '\n'
                          for line in edit(_Lines(run_uri))))
  return str(path)


def _NewSampleIds(lines):
  """The lines as a re-publication writes them: new sample ids."""
  for number, line in enumerate(lines):
    line['sample_uri'] = f'republished-{number}'
  return lines


def _Answers(frame):
  return answers.RunAnswers(leaderboard.Prepare(frame)).set_index(
      'run_uri')['capped_ops'].to_dict()


def test_a_run_read_twice_with_new_sample_ids_counts_once(frame, tmp_path):
  """A copy of run 04066aa3 whose samples have other ids (re-published)
  doubled the run's 23 rows (186 rows, not 163): every view then saw each
  probe, repeat and hold twice. Now the run is read once, from the first
  source, in one line naming the run and both sources."""
  copy = _Copy(tmp_path, '04066aa3', _NewSampleIds)
  original = os.path.join(RUNS, '04066aa3', loader.RESULTS_FILE)
  said = []
  both = loader.Load([HISTORY, copy], note=said.append)
  assert len(both) == len(frame)
  assert set(both.loc[both['run_uri'] == '04066aa3', 'source']) == {original}
  assert said == [f'run 04066aa3 read 2 times, the same samples each time '
                  f'({original}, {copy}); counted once, from {original}']
  assert _Answers(both) == _Answers(frame)


def test_copies_typed_in_different_chunks_are_still_the_same(tmp_path):
  """A column typed text in one chunk and numbers in another is text with
  two spellings of one number ('1.0' as read, '1' from the numbers): a
  run's copies in such chunks were refused as different samples. Here a
  run whose latency_cap_ms is empty lies between the run and its copy,
  each in its own 23-row chunk."""
  def NoCap(lines):
    for line in lines:
      line['run_uri'] = 'odd' + line['run_uri'][8:]
      line['labels'] = line['labels'].replace('|latency_cap_ms:1.0|',
                                              '|latency_cap_ms:|')
    return lines
  odd = _Copy(tmp_path, '5822e54c', NoCap, name='odd')
  copy = _Copy(tmp_path, '04066aa3')
  said = []
  loaded = loader.Load([os.path.join(RUNS, '04066aa3'), odd, copy],
                       chunk_rows=23, note=said.append)
  assert len(loaded) == 23 + 29 and len(said) == 1


def test_copies_whose_versions_are_spelt_apart_are_refused(tmp_path):
  """Copies were compared with each text that reads as a number as that
  number: a copy of a run whose samples say redis_server_version '007'
  and one saying '7' were 'the same samples', counted once from whichever
  came first. A version is compared as its text (typed_frame.TEXT_KEYS)."""
  def Version(text):
    def Edit(lines):
      for line in lines:
        line['labels'] = line['labels'].replace(
            '|redis_server_version:7.0.15|', f'|redis_server_version:{text}|')
      return lines
    return Edit
  copies = [_Copy(tmp_path, '04066aa3', Version(text), name=text)
            for text in ('007', '7')]
  with pytest.raises(loader.LoadError, match=(
      'redis_server_version 007 in the first, 7 in the second')):
    loader.Load(copies)


def test_a_run_in_files_and_in_its_bigquery_table_counts_once(frame):
  """The table's rows (a metadata object, TIMESTAMPs in microseconds) and
  the files' (labels, float seconds) are the same samples: read once."""
  table_rows = []
  for line in _Lines('40b2bc68'):
    row = dict(line)
    row['metadata'] = sample.ParseLabels(row.pop('labels'))
    row['timestamp'] = pd.Timestamp(row['timestamp'], unit='s',
                                    tz='UTC').floor('us')
    table_rows.append(row)
  said = []
  both = loader.Load([HISTORY], bigquery_table='p.d.t', bq_client=object(),
                     read_rows=lambda table, client: table_rows,
                     note=said.append)
  assert len(both) == len(frame)
  (line,) = said
  assert line.startswith('run 40b2bc68 read 2 times, the same samples')
  assert 'bigquery:p.d.t' in line


def test_a_copy_taken_while_the_run_wrote_reads_the_fuller_copy(frame,
                                                                 tmp_path):
  first_five = _Copy(tmp_path, '5822e54c', lambda lines: lines[:5])
  original = os.path.join(RUNS, '5822e54c', loader.RESULTS_FILE)
  said = []
  both = loader.Load([first_five, HISTORY], note=said.append)
  assert len(both) == len(frame)
  assert set(both.loc[both['run_uri'] == '5822e54c', 'source']) == {original}
  assert said == [f'run 5822e54c read from 2 sources, {original} with 29 '
                  f'samples, {first_five} has 5 of them and no other; '
                  f'counted once, from {original}']


def _Faster(lines):
  """The copy a hand edit makes: the answer 1.5 times the run's."""
  for line in lines:
    if line['metric'] == 'latency_capped_throughput':
      line['value'] = round(line['value'] * 1.5, 3)
  return lines


def _NotClientBound(lines):
  """An edit that would rank the run: its answer not client-bound."""
  for line in lines:
    if line['metric'] == 'latency_capped_throughput':
      line['labels'] = line['labels'].replace('|client_saturated:True|',
                                              '|client_saturated:False|')
  return lines


@pytest.mark.parametrize('edit, column, run_has, copy_has', [
    (_Faster, 'value', '87509.5733333', '131264.36'),
    (lambda lines: _NewSampleIds(_Faster(lines)), 'value', '87509.5733333',
     '131264.36'),
    (_NotClientBound, 'client_saturated', 'True', 'False'),
], ids=['same_sample_ids', 'new_sample_ids', 'metadata'])
def test_two_copies_of_a_run_that_differ_are_refused(
    frame, tmp_path, edit, column, run_has, copy_has):
  """An edited copy of 04066aa3 beside the run: the cell's figure was the
  copy's or the run's by the order the sources were given (86,097 with the
  history first, 107,974 with the copy first), without a word. Now neither
  order is read: one line naming both sources and how the answer differs."""
  copy = _Copy(tmp_path, '04066aa3', edit)
  original = os.path.join(RUNS, '04066aa3', loader.RESULTS_FILE)
  for sources, first, second in (([HISTORY, copy], original, copy),
                                 ([copy, HISTORY], copy, original)):
    with pytest.raises(loader.LoadError) as e:
      loader.Load(sources)
    has = {original: run_has, copy: copy_has}
    assert str(e.value) == (
        f'run 04066aa3 has different samples in {first} and in {second} '
        '(latency_capped_throughput at 2026-11-23 10:01:42 UTC: '
        f'{column} {has[first]} in the first, {has[second]} in the second); '
        'they cannot both be that run\'s: give only one of them')


def test_a_whole_history_read_twice_names_five_runs_then_the_rest(
    frame, tmp_path):
  copy = tmp_path / 'copy'
  for run_uri in os.listdir(RUNS):
    _Copy(tmp_path, run_uri, _NewSampleIds)
  said = []
  both = loader.Load([HISTORY, str(copy)], note=said.append)
  assert len(both) == len(frame)
  assert len(said) == 6 and all(
      ' read 2 times, the same samples each time ' in l for l in said[:5])
  assert said[5] == ('2 more runs read more than once, each the same '
                     'samples or part of them; each counted once')


def test_a_run_resumed_in_one_file_keeps_every_invocations_samples(
    frame, tmp_path):
  """Two invocations under one run_uri (--run_stage) in the run's one
  results file: one source, nothing dropped, nothing said."""
  lines = _Lines('82ea2788')
  again = [dict(line, run_uri='82ea2788-second', sample_uri=f'again-{n}',
                timestamp=line['timestamp'] + 600)
           for n, line in enumerate(lines)]
  path = tmp_path / loader.RESULTS_FILE
  path.write_text(''.join(json.dumps(l) + '\n' for l in lines + again))
  said = []
  resumed = loader.Load([str(path)], note=said.append)
  assert len(resumed) == 2 * len(lines) and said == []


def _TableRows(lines):
  """Lines as a table gives them back: a metadata object, TIMESTAMPs."""
  rows = []
  for line in lines:
    row = dict(line)
    row['metadata'] = sample.ParseLabels(row.pop('labels'))
    row['timestamp'] = pd.Timestamp(row['timestamp'], unit='s',
                                    tz='UTC').floor('us')
    rows.append(row)
  return rows


def test_a_table_holding_a_run_twice_beside_its_files_counts_once(frame):
  """The run published, then its files imported again with new sample ids,
  and the run's directory given too: the table's two copies were both
  read (the files' copy was dropped as the same samples: one copy each),
  so every sample counted twice. Each copy in its own chunks, split
  unevenly."""
  lines = _Lines('40b2bc68')
  table_rows = _TableRows(lines) + _TableRows(_NewSampleIds(_Lines('40b2bc68')))
  said = []
  both = loader.Load([HISTORY], bigquery_table='p.d.t', bq_client=object(),
                     read_rows=lambda table, client: table_rows,
                     note=said.append, chunk_rows=7)
  assert len(both) == len(frame)
  original = os.path.join(RUNS, '40b2bc68', loader.RESULTS_FILE)
  assert said == [
      'run 40b2bc68 read 2 times from bigquery:p.d.t, the same samples each '
      'time (copies under new sample ids: published or imported again); '
      'counted once',
      f'run 40b2bc68 read 2 times, the same samples each time ({original}, '
      f'bigquery:p.d.t); counted once, from {original}']


def test_a_file_holding_a_run_twice_counts_each_sample_once(frame,
                                                            tmp_path):
  """A results file a run's copy was appended to (its samples under new
  ids, some a third time): one source, each sample counted once."""
  lines = _Lines('5822e54c')
  path = tmp_path / loader.RESULTS_FILE
  path.write_text(''.join(
      json.dumps(line) + '\n' for line in
      lines + _NewSampleIds(_Lines('5822e54c')) +
      [dict(line, sample_uri=f'third-{n}')
       for n, line in enumerate(lines[:3])]))
  said = []
  loaded = loader.Load([str(path)], note=said.append)
  assert len(loaded) == len(lines) == 29
  assert said == [f'run 5822e54c: 29 of its 29 samples read up to 3 times '
                  f'from {path} (copies under new sample ids: published or '
                  'imported again); each counted once']
  assert _Answers(loaded) == {
      k: v for k, v in _Answers(frame).items() if k == '5822e54c'}


@pytest.mark.parametrize('content, message', [
    ('not json at all\n', ':1: not JSON'),
    ('{"metric": "throughput"}\n', 'not a PKB sample'),
    ('[1, 2]\n', 'not a JSON object'),
])
def test_bad_files_are_one_line_errors(tmp_path, content, message):
  path = tmp_path / 'bad.json'
  path.write_text(content)
  with pytest.raises(loader.LoadError) as e:
    loader.Load([str(path)])
  assert message in str(e.value) and str(path) in str(e.value)
  assert '\n' not in str(e.value)


def test_missing_path_and_empty_directory_are_errors(tmp_path):
  with pytest.raises(loader.LoadError, match='no such file or directory'):
    loader.Load([str(tmp_path / 'nope')])
  with pytest.raises(loader.LoadError, match='no perfkitbenchmarker_results'):
    loader.Load([str(tmp_path)])


def test_bigquery_rows_go_through_the_same_typing(frame):
  """Rows as a table returns them: metadata object, timestamps as datetimes."""
  raw = _Lines('40b2bc68')
  table_rows = []
  for line in raw:
    row = dict(line)
    row['metadata'] = sample.ParseLabels(row.pop('labels'))
    row['timestamp'] = pd.Timestamp(row['timestamp'], unit='s', tz='UTC')
    table_rows.append(row)
  asked = []

  def ReadRows(table, client):
    asked.append((table, client))
    return table_rows

  client = object()
  from_table = loader.Load([], bigquery_table='p.d.t', bq_client=client,
                           read_rows=ReadRows)
  assert asked == [('p.d.t', client)]
  from_file = frame[frame['run_uri'] == '40b2bc68'].reset_index(drop=True)
  assert list(from_table['sample_uri']) == list(from_file['sample_uri'])
  # BigQuery keeps microseconds; the files keep float seconds.
  assert ((from_table['timestamp'] - from_file['timestamp']).abs()
          < pd.Timedelta(microseconds=2)).all()
  assert from_table['client_saturated'].dtype == 'boolean'
  pd.testing.assert_series_equal(from_table['p99_latency_ms'],
                                 from_file['p99_latency_ms'])


def test_versions_stay_the_text_recorded_in_every_form(tmp_path):
  """Versions in collapsed labels, in a metadata object and in a table's
  rows, each column of them all digits: read as numbers, '0123456' was
  123456, '007' 7 and '1e45678' not recorded (too large for a float)."""
  versions = {'04066aa3': ('0123456', '007'), METADATA_FORM_RUN: (
      '0098765', '7.0'), '40b2bc68': ('1e45678', '7.10')}

  def Versioned(run_uri):
    lines = _Lines(run_uri)
    harness, server = versions[run_uri]
    for line in lines:
      metadata = line.get('metadata')
      if metadata is None:
        metadata = sample.ParseLabels(line['labels'])
      metadata.update(harness_version=harness, redis_server_version=server)
      if 'metadata' in line:
        line['metadata'] = metadata
      else:
        line['labels'] = sample.FormatLabels(metadata)
    return lines

  paths = []
  for run_uri in ('04066aa3', METADATA_FORM_RUN):
    paths.append(str(tmp_path / f'{run_uri}.json'))
    with open(paths[-1], 'w') as f:
      f.writelines(json.dumps(line) + '\n' for line in Versioned(run_uri))
  table_rows = _TableRows(Versioned('40b2bc68'))
  frame = loader.Load(paths, bigquery_table='p.d.t', bq_client=object(),
                      read_rows=lambda table, client: table_rows)
  read = {run_uri: (tuple(rows['harness_version'].unique()),
                    tuple(rows['redis_server_version'].unique()))
          for run_uri, rows in frame.groupby('run_uri')}
  assert read == {run_uri: ((harness,), (server,))
                  for run_uri, (harness, server) in versions.items()}


def test_bigquery_rows_are_typed_as_they_come(monkeypatch):
  """The table's rows went into a list of dicts, every metadata key of every
  row, before the first was typed: 100,000 samples peaked at 1.1 GB where
  the same samples from a file take 180 MB. Each row is now added while
  the reader is at it, and a page failing half way is one line."""
  lines = _Lines('40b2bc68')
  yielded = []

  def ReadRows(table, client):
    for line in lines:
      row = dict(line)
      row['metadata'] = sample.ParseLabels(row.pop('labels'))
      yielded.append(row)
      yield row
    raise RuntimeError('503 backend error\nmore detail')

  added = []
  add = loader.typed_frame.FrameBuilder.Add
  monkeypatch.setattr(loader.typed_frame.FrameBuilder, 'Add',
                      lambda self, row: (added.append(len(yielded)),
                                         add(self, row)))
  with pytest.raises(loader.LoadError, match=(
      r'^reading BigQuery table p.d.t failed: 503 backend error$')):
    loader.Load([], bigquery_table='p.d.t', bq_client=object(),
                read_rows=ReadRows)
  assert added == list(range(1, len(lines) + 1))


def test_bigquery_failure_is_a_load_error():
  def ReadRows(table, client):
    raise RuntimeError('403 Access Denied: Table p:d.t\nmore detail')

  with pytest.raises(loader.LoadError, match='403 Access Denied') as e:
    loader.Load([], bigquery_table='p.d.t', bq_client=object(),
                read_rows=ReadRows)
  assert '\n' not in str(e.value)


def test_bigquery_failure_shows_its_first_line_whole_and_escaped():
  """str.splitlines cut the error's first line at a \\u2028 or \\x1e, and
  what was left reached the line raw."""
  def ReadRows(table, client):
    raise RuntimeError('403 Access\u2028Denied: \x1b[2JTable p:d.t\nmore')

  with pytest.raises(loader.LoadError) as e:
    loader.Load([], bigquery_table='p.d.t', bq_client=object(),
                read_rows=ReadRows)
  assert str(e.value) == ('reading BigQuery table p.d.t failed: 403 '
                          'Access\\u2028Denied: \\x1b[2JTable p:d.t')


def test_cells_name_local_runs_by_their_price_and_topology(frame):
  with_cells = cells.AddCellColumns(frame)
  per_run = with_cells.drop_duplicates('run_uri').set_index('run_uri')
  assert per_run.loc['40b2bc68', 'machine_type'] == 'local as GCP:n2d-standard-2'
  assert per_run.loc['40b2bc68', 'topology'] == 'cluster, 3 shards/VM'
  assert per_run.loc['f83499c1', 'machine_type'] == 'local as AWS:c6gn.xlarge'
  assert per_run.loc['f83499c1', 'topology'] == 'standalone, 2 shards/VM'
  assert per_run.loc['04066aa3', 'engine'] == 'redis'
  assert per_run.loc['04066aa3', 'workload'] == (
      '1:1 R:R 100B keys 100000 cap 1ms via redis-benchmark')
  # Cost samples carry no cap, yet land in the run's own cell.
  assert with_cells.groupby('run_uri')['cell'].nunique().max() == 1
  # Repeats of one configuration share a cell.
  assert per_run.loc['04066aa3', 'cell'] == per_run.loc['5822e54c', 'cell']
  assert with_cells['cell'].nunique() == 5


def test_a_stand_in_engine_is_its_own_cell(frame):
  # redis_enterprise on Local (Redis OSS standing in) is neither Redis
  # Enterprise's cell nor redis_memtier's Redis cell with the same settings.
  run = frame[frame['run_uri'] == '04066aa3']
  stand_in = run.assign(run_uri='standin1', stands_in_for='redis_enterprise')
  real = run.assign(run_uri='enterpr1', engine='redis_enterprise')
  with_cells = cells.AddCellColumns(pd.concat([run, stand_in, real]))
  per_run = with_cells.drop_duplicates('run_uri').set_index('run_uri')
  assert per_run.loc['standin1', 'engine'] == (
      'redis standing in for redis_enterprise')
  assert per_run.loc['enterpr1', 'engine'] == 'redis_enterprise'
  assert per_run['cell'].nunique() == 3


def test_another_server_setup_or_replicas_are_cells_of_their_own(frame):
  # README's common runs: --redis_server_io_threads=2 and
  # --redis_replicas_per_primary=1 were labelled as the default server's
  # cell ('redis', 'standalone, 1 shard/VM') and averaged into its figure.
  run = frame[frame['run_uri'] == '04066aa3']
  default = run.assign(engine_settings='default',
                       redis_replicas_per_primary=0)
  threads = run.assign(run_uri='iothrea1', engine_settings='io_threads=2')
  replicas = run.assign(run_uri='replica1', redis_replicas_per_primary=1)
  with_cells = cells.AddCellColumns(pd.concat([default, threads, replicas]))
  per_run = with_cells.drop_duplicates('run_uri').set_index('run_uri')
  assert per_run.loc['04066aa3', ['engine', 'topology']].tolist() == [
      'redis', 'standalone, 1 shard/VM']
  assert per_run.loc['iothrea1', 'engine'] == 'redis (io_threads=2)'
  assert per_run.loc['replica1', 'topology'] == (
      'standalone, 1 shard/VM (1 replica each)')
  assert per_run['cell'].nunique() == 3


def test_a_load_generator_other_than_memtier_is_its_own_cell(frame):
  # A run that fell back to redis-benchmark (memtier missing on a night)
  # measured with another tool: its figure is never averaged into the
  # memtier runs' of the same settings. Runs from before the generator was
  # recorded ran memtier.
  run = frame[frame['run_uri'] == '04066aa3']
  memtier = run.assign(run_uri='memtier1',
                       load_generator=cells.DEFAULT_GENERATOR)
  unrecorded = run.assign(run_uri='oldrun01', load_generator=None)
  with_cells = cells.AddCellColumns(pd.concat([run, memtier, unrecorded]))
  per_run = with_cells.drop_duplicates('run_uri').set_index('run_uri')
  assert per_run.loc['04066aa3', 'workload'].endswith(
      'cap 1ms via redis-benchmark')
  assert per_run.loc['memtier1', 'workload'].endswith('cap 1ms')
  assert per_run.loc['memtier1', 'cell'] == per_run.loc['oldrun01', 'cell']
  assert per_run['cell'].nunique() == 2
  # The study's own generator, as its samples name it.
  assert cells.DEFAULT_GENERATOR == memtier_results.LOAD_GENERATOR


def _Shifted(frame, run_uri, start):
  rows = frame[frame['run_uri'] == run_uri].copy()
  rows['timestamp'] = start + (rows['timestamp'] - rows['timestamp'].min())
  return rows


def test_nights_are_utc_dates_and_matrix_runs_share_one(frame):
  t0 = pd.Timestamp('2026-03-01 23:50', tz='UTC')
  # Two runs back to back across midnight (one matrix), then one next night.
  first = _Shifted(frame, '04066aa3', t0)
  second = _Shifted(frame, '40b2bc68',
                    first['timestamp'].max() + pd.Timedelta(minutes=20))
  third = _Shifted(frame, '82ea2788', t0 + pd.Timedelta(hours=24))
  assert second['timestamp'].min().date().isoformat() == '2026-03-02'
  got = nights.AssignNights(pd.concat([first, second, third]))
  by_run = got.drop_duplicates('run_uri').set_index('run_uri')['night']
  assert by_run.to_dict() == {'04066aa3': '2026-03-01',
                              '40b2bc68': '2026-03-01',
                              '82ea2788': '2026-03-02'}
  # Without matrix chaining the second run falls on its own UTC date.
  split = nights.AssignNights(pd.concat([first, second, third]),
                              matrix_gap_minutes=0)
  assert split.drop_duplicates('run_uri').set_index('run_uri')[
      'night'].to_dict()['40b2bc68'] == '2026-03-02'


def test_hourly_runs_are_a_night_per_day_not_one_night(frame):
  """Runs an hour apart (each starts within matrix_gap_minutes of the one
  before's end) chained into one night for as long as they went on: three
  days of hourly runs were the one night 2026-03-01. A night now holds no
  run starting a night's width after its first run; the matrix that
  crosses midnight still shares one (the test above)."""
  t0 = pd.Timestamp('2026-03-01 00:30', tz='UTC')
  runs = []
  for hour in range(72):
    run = _Shifted(frame, '04066aa3', t0 + pd.Timedelta(hours=hour))
    runs.append(run.assign(run_uri=f'h{hour:02d}'))
  got = nights.AssignNights(pd.concat(runs))
  assert nights.Nights(got) == ['2026-03-01', '2026-03-02', '2026-03-03']
  by_run = got.drop_duplicates('run_uri').set_index('run_uri')['night']
  assert by_run['h23'] == '2026-03-01' and by_run['h24'] == '2026-03-02'
  # Started at noon: a night is the 24 hours from its first run.
  from_noon = nights.AssignNights(pd.concat(runs[12:60]))
  by_run = from_noon.drop_duplicates('run_uri').set_index('run_uri')['night']
  assert nights.Nights(from_noon) == ['2026-03-01', '2026-03-02']
  assert by_run['h35'] == '2026-03-01' and by_run['h36'] == '2026-03-02'


def test_night_window_is_configurable(frame):
  t0 = pd.Timestamp('2026-03-01 01:00', tz='UTC')
  a = _Shifted(frame, '04066aa3', t0)
  b = _Shifted(frame, '40b2bc68', t0 + pd.Timedelta(hours=13))
  got = nights.AssignNights(pd.concat([a, b]), night_hours=12,
                            matrix_gap_minutes=0)
  assert nights.Nights(got) == ['2026-03-01 00:00', '2026-03-01 12:00']


def test_prepare_puts_real_runs_on_one_night(frame):
  prepared = leaderboard.Prepare(frame)
  assert nights.Nights(prepared) == ['2026-11-23']
