"""redis_enterprise's flags: the OSS study's server flags are refused."""

import pytest

from perfkitbenchmarker import errors
from perfkitbenchmarker.enterprise import options as enterprise_options
from perfkitbenchmarker.enterprise import study_steps


@pytest.mark.parametrize('flag, value', [
    ('redis_engine', 'valkey'), ('redis_server_version', '7.2'),
    ('redis_server_options', ['maxclients 100']),
    ('redis_total_num_processes', 3), ('redis_server_cluster_mode', True),
    ('redis_replicas_per_primary', 1), ('redis_memory_fraction', 0.5),
    ('redis_min_shards', 2), ('redis_shard_reuse_load', False),
    ('redis_benchmark_fallback', True), ('keydb_server_threads', 2)])
def test_a_study_server_flag_it_does_not_read_is_refused(pkb_flags, flag,
                                                         value):
  # './pkb.py --benchmarks=redis_enterprise --dry_run --redis_engine=valkey'
  # (Local: Redis OSS stands in) planned and ran Redis, exit 0; the others
  # changed nothing either, on Local or a cloud.
  enterprise_options.EnterpriseOptions.FromFlags(pkb_flags)
  setattr(pkb_flags, flag, value)
  with pytest.raises(errors.UsageError) as refused:
    enterprise_options.EnterpriseOptions.FromFlags(pkb_flags)
  message = str(refused.value)
  assert '\n' not in message and message.startswith(
      f'--{flag} does not apply to redis_enterprise: '), message


def test_the_database_port_it_reads_is_taken_on_local_too(pkb_flags):
  # '--benchmarks=redis_enterprise --redis_start_port=13000' on Local ran
  # its stand-in shard on 7002 (7001 taken): the study's default port.
  pkb_flags.redis_start_port = 13000
  options = enterprise_options.EnterpriseOptions.FromFlags(pkb_flags)
  assert options.local and options.database_port == 13000
  study = study_steps.StudyOptions(options, 1000, 1, 2)
  assert study.server.start_port == 13000
