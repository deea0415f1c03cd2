"""YCSB output parsing, samples and command building (recorded real output)."""

import os

import pytest

from perfkitbenchmarker import errors
from perfkitbenchmarker import measurement
from perfkitbenchmarker.linux_packages import ycsb
from perfkitbenchmarker.load_generators import ycsb_results

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'data', 'ycsb')


def _Read(name):
  with open(os.path.join(DATA, name)) as f:
    return f.read()


def _Parse(name, stderr_name=None):
  stderr = _Read(stderr_name) if stderr_name else ''
  return ycsb_results.YcsbResult.Parse(_Read(name), stderr)


def _Op(result, name):
  return {op.name: op for op in result.operations}[name]


def test_load_insert_section():
  result = _Parse('load_string.stdout')
  assert result.runtime_ms == 501
  assert result.throughput == pytest.approx(3992.015968063872)
  assert [op.name for op in result.operations] == ['INSERT']
  insert = _Op(result, 'INSERT')
  assert insert.operations == 2000
  assert insert.return_codes == {'OK': 2000}
  assert insert.p95_us is not None and insert.p99_us >= insert.p95_us
  assert result.Errors(2000) == []


def test_workload_a_read_and_update_weighted_latency():
  result = _Parse('runa_hash.stdout')
  read, update = _Op(result, 'READ'), _Op(result, 'UPDATE')
  assert read.operations + update.operations == 4000
  assert result.Errors(4000) == []
  expected = ((read.operations * read.average_us +
               update.operations * update.average_us) / 4000)
  assert result.AverageLatencyUs() == pytest.approx(expected)
  m = result.ToMeasurement(measurement.Load(2, 1), {'x': 1})
  assert m.average_latency_ms == pytest.approx(expected / 1000)
  assert m.throughput == result.throughput
  assert m.ops == 4000
  assert m.p99_latency_ms == max(read.p99_us, update.p99_us) / 1000
  assert m.metadata['load_generator'] == 'ycsb' and m.metadata['x'] == 1


def test_workload_c_read_only():
  for name in ('runc_set.stdout', 'runc_zset.stdout'):
    result = _Parse(name)
    assert [op.name for op in result.succeeded] == ['READ']
    assert _Op(result, 'READ').return_codes == {'OK': 4000}
    assert result.Errors(4000) == []


def test_gc_and_cleanup_are_not_operations():
  result = _Parse('runa_list.stdout')
  names = {op.name for op in result.operations}
  assert 'CLEANUP' not in names
  assert not any(n.startswith('TOTAL_GC') for n in names)


def test_wrong_type_errors_fail():
  result = _Parse('runa_wrongtype.stdout')
  read = _Op(result, 'READ')
  assert read.return_codes['ERROR'] > 0
  reasons = result.Errors(500)
  assert any('READ returned ERROR' in r for r in reasons)
  assert any('READ-FAILED' in r for r in reasons)
  assert any('of 500 operations succeeded' in r for r in reasons)


def test_bad_password_every_read_failed():
  result = _Parse('runc_badauth.stdout')
  read = _Op(result, 'READ')
  assert read.operations == 0 and read.average_us is None
  assert result.Errors(500)
  with pytest.raises(ValueError, match='no successful operations'):
    result.AverageLatencyUs()


def test_binding_refusal_on_stderr_fails():
  result = _Parse('load_badfieldcount.stdout', 'load_badfieldcount.stderr')
  assert result.throughput == 0.0
  reasons = result.Errors(5)
  assert any('DBException' in r for r in reasons)
  assert any('0 of 5' in r for r in reasons)


def test_no_overall_section_is_refused():
  with pytest.raises(ValueError, match='OVERALL'):
    ycsb_results.YcsbResult.Parse('Exception in thread "main"\n')


def test_samples_per_operation():
  result = _Parse('runa_hash.stdout')
  samples = result.Samples({'ycsb_workload': 'workloada'})
  by = {}
  for s in samples:
    by.setdefault(s.metric, []).append(s)
  assert by['ycsb_throughput'][0].unit == 'ops/sec'
  assert by['ycsb_throughput'][0].value == pytest.approx(result.throughput)
  for metric in ('ycsb_average_latency', 'ycsb_p95_latency',
                 'ycsb_p99_latency'):
    assert {s.metadata['operation'] for s in by[metric]} == {'READ', 'UPDATE'}
    assert all(s.unit == 'us' for s in by[metric])
  codes = {(s.metadata['operation'], s.metadata['return_code']): s.value
           for s in by['ycsb_return_count']}
  assert codes[('READ', 'OK')] == _Op(result, 'READ').operations
  assert all(s.metadata['ycsb_workload'] == 'workloada' for s in samples)


def test_command_never_holds_the_password():
  install = ycsb.Installation('java', '/b/pkb.jar', '/m/core.jar:/m/j.jar',
                              '/b')
  argv = ycsb.YcsbCommand(install, 'run', '/s/workloada', '/s/conn',
                          {'recordcount': 10, 'redis.command_group': 'set'},
                          4)
  assert argv[:4] == ['java', '-cp', '/b/pkb.jar:/m/core.jar:/m/j.jar',
                      'site.ycsb.Client']
  assert '-t' in argv and argv[-2:] == ['-threads', '4']
  assert ['-P', '/s/conn'] == argv[argv.index('/s/conn') - 1:
                                   argv.index('/s/conn') + 1]
  assert not any('password' in a for a in argv)
  with pytest.raises(ValueError):
    ycsb.YcsbCommand(install, 'run', '/w', '/c', {'redis.password': 'x'}, 1)
  load = ycsb.YcsbCommand(install, 'load', '/w', '/c', {}, 1,
                          ['-XX:+UseSerialGC'])
  assert '-load' in load and '-t' not in load
  assert load[:3] == ['java', '-XX:+UseSerialGC', '-cp']


def test_connection_properties():
  text = ycsb.ConnectionProperties([('10.0.0.2', 7001), ('10.0.0.2', 7002)],
                                   'pkb-load', 's3cret', False, 30000)
  assert 'redis.hosts=10.0.0.2:7001,10.0.0.2:7002\n' in text
  assert 'redis.password=s3cret\n' in text and 'redis.cluster=false' in text


def test_workload_files_are_ours_and_core_properties():
  for name in ('workloada', 'workloadc'):
    path = ycsb.WorkloadFile(name)
    text = open(path).read()
    assert 'workload=site.ycsb.workloads.CoreWorkload' in text
    assert 'requestdistribution=zipfian' in text
  with pytest.raises(errors.UsageError, match='workloada'):
    ycsb.WorkloadFile('workloadz')


def test_remote_install_sources_and_build_command():
  files = dict(ycsb.BindingSources())
  assert 'pom.xml' in files and 'workloads/workloada' in files
  assert any(p.endswith('RedisDataTypesClient.java') for p in files)
  command = ycsb.RemoteBuildCommand('/tmp/pkb/ycsb')
  assert 'mvn -q -B -f /tmp/pkb/ycsb/src/pom.xml' in command
  assert 'dependency:build-classpath' in command
