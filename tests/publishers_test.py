"""Exact PKB JSON-lines and CSV formats, streamed as samples arrive."""

import csv
import dataclasses
import json
import uuid

import pytest

from perfkitbenchmarker import sample
from perfkitbenchmarker import vm_util
from perfkitbenchmarker.publishers import csv_publisher
from perfkitbenchmarker.publishers import json_publisher
from perfkitbenchmarker.publishers import publisher

RUN = publisher.RunInfo(run_uri='abc12345', owner='tester',
                        perfkitbenchmarker_version='v1')


def _Samples():
  return [
      sample.Sample('throughput', 1000, 'ops/sec', {'threads': 1, 'b': 'x'},
                    timestamp=1.5),
      sample.Sample('average_latency', 0.5, 'ms', {'threads': 2, 'z': True},
                    timestamp=2.5),
  ]


def test_json_lines_collapsed_labels(tmp_path):
  path = tmp_path / 'out.json'
  collector = publisher.SampleCollector(
      [json_publisher.JSONPublisher(str(path))], RUN)
  collector.Add(_Samples()[:1], 'redis_memtier')
  # Written at once, before the next sample exists.
  first = json.loads(path.read_text().splitlines()[0])
  collector.Add(_Samples()[1:], 'redis_memtier')
  lines = path.read_text().splitlines()
  assert len(lines) == 2
  assert set(first) == {'metric', 'value', 'unit', 'timestamp', 'test',
                        'product_name', 'official', 'owner', 'run_uri',
                        'sample_uri', 'labels'}
  # `harness` tells these rows from upstream PKB's own redis_memtier rows
  # in a shared table (same test and metric names).
  assert first['labels'] == ('|b:x|,|harness:redis_price_performance|,'
                             '|harness_version:v1|,'
                             '|perfkitbenchmarker_version:v1|,|threads:1|')
  assert first['product_name'] == 'PerfKitBenchmarker'
  assert first['test'] == 'redis_memtier'
  # PKB's form: '<run_uri>-<uuid4>', one uuid for every row of the run.
  run_uri, run_uuid = first['run_uri'].split('-', 1)
  assert run_uri == 'abc12345' and str(uuid.UUID(run_uuid)) == run_uuid
  assert json.loads(lines[1])['run_uri'] == first['run_uri']
  assert publisher.ShortRunUri(first['run_uri']) == 'abc12345'
  assert first['value'] == 1000.0
  assert first['timestamp'] == 1.5
  assert first['official'] is False
  assert json.loads(lines[1])['labels'] == (
      '|harness:redis_price_performance|,|harness_version:v1|,'
      '|perfkitbenchmarker_version:v1|,|threads:2|,|z:True|')


def test_json_nocollapse_labels(tmp_path):
  path = tmp_path / 'out.json'
  collector = publisher.SampleCollector(
      [json_publisher.JSONPublisher(str(path), collapse_labels=False)], RUN)
  collector.Add(_Samples(), 't')
  row = json.loads(path.read_text().splitlines()[0])
  assert 'labels' not in row
  assert row['metadata'] == {'threads': 1, 'b': 'x',
                             'perfkitbenchmarker_version': 'v1',
                             'harness': 'redis_price_performance',
                             'harness_version': 'v1'}


def test_csv_fixed_columns_then_metadata_union(tmp_path):
  path = tmp_path / 'out.csv'
  collector = publisher.SampleCollector(
      [csv_publisher.CSVPublisher(str(path))], RUN)
  collector.Add(_Samples()[:1], 't')
  with open(path) as f:
    assert len(list(csv.DictReader(f))) == 1
  collector.Add(_Samples()[1:], 't')
  with open(path) as f:
    reader = csv.reader(f)
    header = next(reader)
    rows = list(reader)
  assert header == ['timestamp', 'test', 'metric', 'value', 'unit',
                    'product_name', 'official', 'owner', 'run_uri',
                    'sample_uri', 'b', 'harness', 'harness_version',
                    'perfkitbenchmarker_version', 'threads', 'z']
  assert rows[0][2] == 'throughput' and rows[0][10] == 'x'
  assert rows[1][15] == 'True' and rows[1][10] == ''
  assert rows[0][13] == rows[1][13] == 'v1'
  assert rows[0][11] == rows[1][11] == 'redis_price_performance'


def test_secrets_masked_in_published_metadata(tmp_path):
  vm_util.RegisterSecret('hunter2-secret')
  path = tmp_path / 'out.json'
  collector = publisher.SampleCollector(
      [json_publisher.JSONPublisher(str(path))], RUN)
  collector.Add([sample.Sample('m', 1, 'u', {'cmd': 'x -a hunter2-secret'})],
                't')
  text = path.read_text()
  assert 'hunter2-secret' not in text
  assert '-a ****' in text


def test_a_sample_is_built_as_upstreams_and_sealed_when_published():
  # Upstream's Sample holds a copy of its metadata as a dict, which its
  # modules add to before Run returns (s.metadata.update(...)).
  given = {'threads': 1}
  s = sample.Sample('throughput', 1000, 'ops/sec', given)
  s.metadata.update(client='c1')
  s.metadata['shards'] = 2
  assert given == {'threads': 1}
  assert s.metadata == {'threads': 1, 'client': 'c1', 'shards': 2}
  with pytest.raises(dataclasses.FrozenInstanceError):
    s.value = 5
  # Published (BenchmarkSpec.EmitSamples seals each): read-only, the
  # spec's metadata beneath the sample's own; the built one is untouched.
  sealed = s.Sealed(under={'cloud': 'Local', 'threads': 9})
  assert sealed.metadata == {'cloud': 'Local', 'threads': 1, 'client': 'c1',
                             'shards': 2}
  with pytest.raises(TypeError):
    sealed.metadata['threads'] = 5
  with pytest.raises(AttributeError):
    sealed.metadata.update(threads=5)
  assert (sealed.metric, sealed.value, sealed.unit, sealed.timestamp) == (
      s.metric, s.value, s.unit, s.timestamp)
  assert 'cloud' not in s.metadata
  assert sealed.WithMetadata(threads=5).metadata['threads'] == 5
  assert sealed.metadata['threads'] == 1
  # Upstream's namedtuple _replace: upstream's redis_memtier renames so.
  renamed = s._replace(metric='throughput (io_threads=2)')  # pylint: disable=protected-access
  assert (renamed.metric, renamed.value, renamed.metadata) == (
      'throughput (io_threads=2)', 1000.0, s.metadata)
  assert s.metric == 'throughput'
  with pytest.raises(ValueError, match='unexpected field names'):
    s._replace(metrik='x')  # pylint: disable=protected-access
