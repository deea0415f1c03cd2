"""redis_ycsb options: flags read once, bad values refused in one line."""

import pytest

from perfkitbenchmarker import errors
from perfkitbenchmarker.study import ycsb_options


def _Options(fv, **values):
  for name, value in values.items():
    fv[name].value = value
  return ycsb_options.YcsbStudyOptions.FromFlags(fv)


def test_field_count_follows_the_study(pkb_flags):
  assert _Options(pkb_flags, ycsb_command_group='string').field_count == 1
  assert _Options(pkb_flags, ycsb_command_group='zset').field_count == 10
  opts = _Options(pkb_flags, ycsb_command_group='hash', ycsb_field_count=3,
                  ycsb_properties=['requestdistribution=uniform'])
  assert opts.field_count == 3
  assert opts.properties == (('requestdistribution', 'uniform'),)
  assert opts.size_properties['redis.command_group'] == 'hash'


@pytest.mark.parametrize('values, message', [
    ({'ycsb_command_group': 'string', 'ycsb_field_count': 10},
     'must be 1'),
    ({'ycsb_min_threads': 4, 'ycsb_max_threads': 2}, 'above'),
    ({'ycsb_properties': ['redis.password=x']}, 'set by the harness'),
    ({'ycsb_properties': ['insertstart=5']}, 'set by the harness'),
    ({'ycsb_properties': ['nonsense']}, 'key=value'),
    ({'ycsb_workloads': ['workloadq']}, 'no workload'),
    # A path is read before the run, not after its VMs are up (a missing
    # one was an internal error at the load; /dev/zero would never end).
    ({'ycsb_workloads': ['/nonexistent/workload']},
     'cannot read /nonexistent/workload: No such file'),
    ({'ycsb_workloads': ['/dev/zero']}, 'not a regular file'),
    # A config's "\0": was a ValueError traceback (embedded null byte).
    ({'ycsb_workloads': ['/tmp/a\0b']}, 'the path holds a NUL byte'),
    # Was an internal ValueError at install, after the VMs were up.
    ({'ycsb_build_dir': '/tmp/a\0b'}, 'holds a NUL byte'),
])
def test_bad_values_refused(pkb_flags, values, message):
  with pytest.raises(errors.UsageError, match=message):
    _Options(pkb_flags, **values)


def test_jvm_options(pkb_flags):
  opts = _Options(pkb_flags, ycsb_jvm_options=['-XX:TieredStopAtLevel=1'])
  assert opts.jvm_options == ('-XX:TieredStopAtLevel=1',)
  for bad in (['-cp'], ['Xmx4g']):
    with pytest.raises(errors.UsageError, match='JVM option'):
      _Options(pkb_flags, ycsb_jvm_options=bad)
