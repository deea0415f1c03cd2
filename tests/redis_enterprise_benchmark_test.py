"""The T2D study's redis_enterprise command lines, verbatim.

Both lines dry-run on GCP (also in the single-dash -cloud=GCP form) with the
plan (VMs, image, databases, steps) and cost; a real cloud run without the
user's tarball and licence is refused before anything is created; on
--cloud=Local (project and zone dropped) both run to completion against
Redis OSS with real samples that say engine=redis, stands_in_for
redis_enterprise, published under the test name redis_enterprise_local_oss.
"""

import shlex

import pytest

from tests import e2e_support

# Every test here starts a process (tests/tier_guard.py).
pytestmark = pytest.mark.e2e

# From the issue, verbatim (the cluster line is the single-VM line plus its
# own flags, as the study lists them).
LINE_1 = shlex.split(
    '--cloud=GCP --benchmarks=redis_enterprise '
    '--config_override=redis_enterprise.vm_groups.clients.vm_spec.GCP.'
    'machine_type=n2-standard-32 '
    '--config_override=redis_enterprise.vm_groups.clients.vm_count=2 '
    '--config_override=redis_enterprise.vm_groups.servers.vm_spec.GCP.'
    'machine_type=t2d-standard-16 '
    '--config_override=redis_enterprise.vm_groups.servers.vm_count=1 '
    '--enterprise_redis_data_size_bytes=100 '
    '--enterprise_redis_load_records=1000000 '
    '--enterprise_redis_min_threads=4 '
    '--enterprise_redis_optimize_throughput=True '
    '--enterprise_redis_pin_workers=True --os_type=centos7 --project=P '
    '--zone=us-central1-a --timeout_minutes=360')
LINE_2 = shlex.split(
    '--cloud=GCP --benchmarks=redis_enterprise '
    '--config_override=redis_enterprise.vm_groups.clients.vm_spec.GCP.'
    'machine_type=n2-standard-32 '
    '--config_override=redis_enterprise.vm_groups.clients.vm_count=6 '
    '--config_override=redis_enterprise.vm_groups.servers.vm_spec.GCP.'
    'machine_type=t2d-standard-16 '
    '--config_override=redis_enterprise.vm_groups.servers.vm_count=3 '
    '--enterprise_redis_data_size_bytes=100 '
    '--enterprise_redis_load_records=50000000 '
    '--enterprise_redis_min_threads=4 '
    '--enterprise_redis_optimize_throughput=True '
    '--enterprise_redis_pin_workers=True --os_type=centos7 --project=P '
    '--zone=us-central1-a --timeout_minutes=360 '
    '--enterprise_redis_db_count=6 --enterprise_redis_db_replication=True '
    '--enterprise_redis_loadgen_clients=1 --enterprise_redis_min_threads=5 '
    '--enterprise_redis_shard_count=1 --enterprise_redis_thread_increment=1')
# Short Local runs: only flags this benchmark defines.
LOCAL_FAST = ['--enterprise_redis_probe_seconds=1',
              '--enterprise_redis_local_max_records=20000']


def _Local(line):
  out = [a for a in line
         if not a.startswith(('--project=', '--zone='))]
  return ['--cloud=Local' if a == '--cloud=GCP' else a for a in out]


def _SingleDash(line):
  return ['-cloud=GCP' if a == '--cloud=GCP' else a for a in line]


@pytest.mark.parametrize('line,servers,clients,steps', [
    (LINE_1, '1 x t2d-standard-16', '2 x n2-standard-32',
     'threads 4, 5, ..., 40 (37 steps)'),
    (LINE_2, '3 x t2d-standard-16', '6 x n2-standard-32',
     'threads 5, 6, ..., 40 (36 steps)'),
    (_SingleDash(LINE_1), '1 x t2d-standard-16', '2 x n2-standard-32',
     'threads 4, 5'),
])
def test_study_lines_dry_run_with_plan_and_cost(tmp_path, line, servers,
                                                clients, steps):
  proc, _ = e2e_support.Run(line + ['--dry_run'], str(tmp_path))
  assert proc.returncode == 0, proc.stderr
  out = proc.stdout
  assert 'Dry run of redis_enterprise on GCP' in out
  assert f'servers: {servers} in us-central1-a' in out
  assert f'clients: {clients} in us-central1-a' in out
  assert ('--os_type=centos7 requested; the VMs boot rocky9 instead' in out)
  assert 'requested_os_type=centos7 and os_type_used=rocky9' in out
  assert 'POST /v1/bootstrap/create_cluster' in out
  assert 'Databases (REST API /v1/bdbs):' in out
  assert steps in out
  assert '--pipeline 9' in out and 'optimize throughput: hill climb' in out
  assert 'Cost: about' in out and '$' in out
  assert not (tmp_path / 'runs').exists() or not list(tmp_path.iterdir())


def test_cluster_line_plans_six_replicated_databases(tmp_path):
  proc, _ = e2e_support.Run(LINE_2 + ['--dry_run'], str(tmp_path))
  assert proc.returncode == 0, proc.stderr
  assert '6 x 1 shard(s), replication on' in proc.stdout
  assert '-c 1 -d 100 --key-minimum 1 --key-maximum 50000000' in proc.stdout
  assert 'shards fixed at 1, proxy threads in [1, 32]' in proc.stdout


def test_real_cloud_run_without_installer_is_refused_before_anything(
    tmp_path):
  proc, run_uri = e2e_support.Run(LINE_1 + ['--gcp_ssh_source_range=1.2.3.4/32'],
                                  str(tmp_path))
  assert proc.returncode == 2, proc.stderr
  assert '--enterprise_redis_tarball' in proc.stderr
  assert '--enterprise_redis_license_path' in proc.stderr
  assert len(proc.stderr.strip().splitlines()) == 1
  assert not (tmp_path / run_uri).exists()


def test_local_dry_run_says_what_is_scaled_and_the_os(tmp_path):
  proc, _ = e2e_support.Run(_Local(LINE_2) + ['--dry_run'], str(tmp_path))
  assert proc.returncode == 0, proc.stderr
  out = proc.stdout
  assert 'Dry run of redis_enterprise on Local' in out
  assert '--os_type=centos7 recorded as requested' in out
  assert 'Redis OSS (engine redis' in out
  assert 'databases: 6 asked' in out and 'Cost: about' in out


def test_redis_memtier_still_refuses_centos7(tmp_path):
  proc, _ = e2e_support.Run(['--cloud=GCP', '--project=P', '--os_type=centos7',
                             '--dry_run'], str(tmp_path))
  assert proc.returncode == 2 and 'centos7' in proc.stderr


@pytest.mark.parametrize('line,scaled', [
    (LINE_1, 'VMs: 1 server(s) + 2 client(s) asked'),
    (LINE_2, 'databases: 6 asked'),
])
def test_local_variants_run_to_completion_on_redis_oss(tmp_path, line,
                                                       scaled):
  proc, run_uri = e2e_support.Run(_Local(line) + LOCAL_FAST, str(tmp_path))
  assert proc.returncode == 0, proc.stdout + proc.stderr
  assert 'Scaled to this machine' in proc.stdout and scaled in proc.stdout
  assert 'stands in for Redis Enterprise' in proc.stdout
  samples = e2e_support.Samples(str(tmp_path), run_uri)
  metrics = {s['metric'] for s in samples}
  assert {'throughput', 'average_latency', 'latency_capped_throughput',
          'price_performance',
          'optimized_latency_capped_throughput'} <= metrics
  # Published apart from real Redis Enterprise rows (issue 19 point 4).
  assert {s['test'] for s in samples} == {'redis_enterprise_local_oss'}
  for s in samples:
    labels = e2e_support.Labels(s)
    assert labels['engine'] == 'redis'
    assert labels['stands_in_for'] == 'redis_enterprise'
    assert labels['requested_os_type'] == 'centos7'
    assert labels['os_type_used'] == 'this machine'
    assert labels['servers_os_type'] == 'this machine'
    assert labels['local_scaled'] == 'True'
    assert labels['redis_pipeline'] == '9'
  capped = [s for s in samples if s['metric'] == 'latency_capped_throughput']
  assert capped and all(s['value'] > 0 for s in capped)
  # Every step sampled for interference (issue 10, point 5).
  steps = [e2e_support.Labels(s) for s in samples
           if s['metric'] == 'throughput']
  assert steps and all({'foreign_cpu_pct', 'interference'} <= set(l)
                       for l in steps)
  assert all('interference_probes' in e2e_support.Labels(s) for s in capped)
  assert e2e_support.LeftoverProcesses(str(tmp_path), run_uri) == []
