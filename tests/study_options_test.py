"""The study's options from flags: --memtier_adaptive_max_threads, and the
form of --redis_server_version for each engine.

A bad value is one line (errors.UsageError) from RedisStudyOptions.FromFlags,
before anything is created; a good one reaches the adaptive policy.
"""

from absl import flags
import pytest

from perfkitbenchmarker import configs
from perfkitbenchmarker import errors
from perfkitbenchmarker.study import options
from perfkitbenchmarker.study import search_runner


def _Options(flag_values):
  return options.RedisStudyOptions.FromFlags(flag_values)


def test_unset_keeps_the_threads_fixed(pkb_flags):
  opts = _Options(pkb_flags)
  assert opts.search.adaptive_max_threads is None
  assert search_runner.Policy(opts).max_threads is None


def test_unset_on_cloud_vms_grows_to_the_clients_vcpus_as_its_help_says(
    pkb_flags):
  # The help said 'default: always --memtier_min_threads threads' while a
  # GCP or AWS run grew the threads to the client VM's vCPUs (its dry run:
  # 'adaptive: 1..32 threads').
  pkb_flags.cloud = 'GCP'
  assert search_runner.Policy(_Options(pkb_flags),
                              client_vcpus=32).max_threads == 32
  help_text = ' '.join(pkb_flags['memtier_adaptive_max_threads'].help.split())
  assert "on GCP and AWS, the client VM's vCPUs" in help_text
  pkb_flags.memtier_min_threads = 2
  pkb_flags['memtier_min_threads'].present = 1
  assert search_runner.Policy(_Options(pkb_flags),
                              client_vcpus=32).max_threads is None
  assert 'unless --memtier_min_threads is given' in help_text


def test_a_config_flags_min_threads_keeps_the_threads_fixed_too(pkb_flags):
  """A benchmark config's `flags: {memtier_min_threads: 2}` sets the value
  only (configs.ApplyConfigFlags): the search took it as not given and grew
  the threads to the client VM's vCPUs, against the config."""
  pkb_flags.cloud = 'GCP'
  configs.ApplyConfigFlags({'memtier_min_threads': 2}, pkb_flags)
  policy = search_runner.Policy(_Options(pkb_flags), client_vcpus=32)
  assert (policy.threads, policy.max_threads) == (2, None)


def test_pipelines_both_ways_are_refused_from_a_config_too(pkb_flags):
  """--memtier_pipelines with a config's flags.memtier_pipeline: one list
  silently won over the other."""
  pkb_flags.memtier_pipelines = ['2', '4']
  pkb_flags['memtier_pipelines'].present = 1
  configs.ApplyConfigFlags({'memtier_pipeline': [8]}, pkb_flags)
  with pytest.raises(errors.UsageError, match='both list pipelines'):
    _Options(pkb_flags)


def test_a_value_reaches_the_policy(pkb_flags):
  pkb_flags.memtier_adaptive_max_threads = 16
  pkb_flags.memtier_min_threads = 2
  opts = _Options(pkb_flags)
  assert opts.search.adaptive_max_threads == 16
  policy = search_runner.Policy(opts)
  assert (policy.threads, policy.max_threads) == (2, 16)
  # Equal to --memtier_min_threads is allowed: the threads stay fixed.
  pkb_flags.memtier_adaptive_max_threads = 2
  assert not search_runner.Policy(_Options(pkb_flags)).threads_vary


@pytest.mark.parametrize('value', [0, -3, 5000])
def test_bad_values_are_one_line(pkb_flags, value):
  # The flag's own bounds (its definition) refuse it as it is set.
  with pytest.raises(flags.IllegalFlagValueError) as caught:
    pkb_flags.memtier_adaptive_max_threads = value
  message = str(caught.value)
  assert message.startswith(f'flag --memtier_adaptive_max_threads={value}: ')
  assert '\n' not in message


def test_below_min_threads_is_refused_for_the_adaptive_search(pkb_flags):
  pkb_flags.memtier_min_threads = 4
  pkb_flags.memtier_adaptive_max_threads = 2
  with pytest.raises(errors.UsageError,
                     match=r'^--memtier_adaptive_max_threads=2 is below '
                     r'--memtier_min_threads=4'):
    _Options(pkb_flags)
  # The linear walk does not use it.
  pkb_flags.memtier_latency_capped_search = 'linear'
  assert _Options(pkb_flags).search.adaptive_max_threads == 2


def test_the_flag_parses_as_pkb_parses_it(pkb_flags):
  pkb_flags['memtier_adaptive_max_threads'].parse('12')
  assert _Options(pkb_flags).search.adaptive_max_threads == 12
  with pytest.raises(flags.IllegalFlagValueError,
                     match='memtier_adaptive_max_threads'):
    pkb_flags['memtier_adaptive_max_threads'].parse('2.5')


@pytest.mark.parametrize('engine,version,what', [
    ('redis', '7.x', 'Redis release'), ('valkey', 'banana', 'Valkey'),
    ('keydb', 'latest', 'KeyDB'), ('dragonfly', 'v1', 'Dragonfly')])
def test_a_version_no_vm_can_install_is_refused_once_up_front(
    pkb_flags, engine, version, what):
  # On a cloud, before any VM exists (else every VM's install refuses it).
  pkb_flags.cloud = 'GCP'
  pkb_flags.redis_engine = engine
  pkb_flags.redis_server_version = version
  with pytest.raises(errors.UsageError, match=what) as raised:
    _Options(pkb_flags)
  assert '\n' not in str(raised.value)
  pkb_flags.redis_server_version = 'distro'
  assert _Options(pkb_flags).server.version == 'distro'


def test_the_hold_is_a_minute_on_clouds_and_static_vms_and_short_locally(
    pkb_flags):
  assert _Options(pkb_flags).search.hold_s == 3  # Local's default
  pkb_flags.cloud = 'GCP'
  assert _Options(pkb_flags).search.hold_s == 60
  pkb_flags.cloud = 'Local'
  pkb_flags.static_vm_file = '/dev/null'
  assert _Options(pkb_flags).search.hold_s == 60
  pkb_flags.memtier_hold_duration = 0
  assert _Options(pkb_flags).search.hold_s == 0
