"""Benchmark modules written for upstream PKB's API run here unchanged.

The three modules in tests/benchmarks/ use upstream's names alone
(configs.LoadConfig with its `*default_*_core` anchors, RemoteCommand's
(stdout, stderr), Install's AptInstall/YumInstall, PushDataFile,
RenderTemplate, RobustRemoteCommand, GetInternalIPs, AllowPort,
background_tasks, vm_util, regex_util): each is loaded the way pkb.py loads
any benchmark (PKB_BENCHMARK_DIRS), dry-run and run to samples, on Local
and on two Static machines reached over a real loopback sshd.
"""

import json
import os

import pytest

from tests import e2e_support as e2e
from tests.sshd_fixture import sshd  # pylint: disable=unused-import  (fixture)

MODULES_DIR = os.path.join(e2e.REPO, 'tests', 'benchmarks')
DATA_DIR = os.path.join(MODULES_DIR, 'data')


def _Env():
  return dict(os.environ, PKB_BENCHMARK_DIRS=MODULES_DIR)


@pytest.fixture(scope='module', params=['Local', 'Static'])
def where(request, tmp_path_factory):
  """The flags that put a run on Local or on the loopback sshd (two
  listings of one machine: the client-server module needs two VMs)."""
  if request.param == 'Local':
    return []
  server = request.getfixturevalue('sshd')
  machine = {'ip_address': server.host, 'user_name': server.user,
             'keyfile_path': server.user_key, 'ssh_port': server.port}
  path = tmp_path_factory.mktemp('static') / 'machines.json'
  path.write_text(json.dumps([machine, machine]))
  # Never retune the test machine.
  return [f'--static_vm_file={path}', '--nosystem_tuning']


def _Run(tmp_path, name, where, *extra):
  """Dry-runs, then runs, benchmark `name`; its samples, by metric."""
  args = [f'--benchmarks={name}', f'--data_search_paths={DATA_DIR}',
          *where, *extra]
  results = str(tmp_path)
  proc, _ = e2e.Run(args + ['--dry_run'], results, env=_Env())
  assert proc.returncode == 0, proc.stderr
  assert f'Dry run of {name} on ' in proc.stdout
  proc, run_uri = e2e.Run(args, results, env=_Env())
  assert proc.returncode == 0, proc.stdout + proc.stderr
  record = e2e.Record(results, run_uri)
  assert record['status'] == 'succeeded', record['status']
  samples = {s['metric']: s for s in e2e.Samples(results, run_uri)}
  assert all(s['test'] == name for s in samples.values())
  return samples


@pytest.mark.e2e
def test_example_vm_shape_reads_back_what_prepare_wrote(tmp_path, where):
  samples = _Run(tmp_path, 'upstream_example_vm', where)
  read = samples['read_back_bytes']
  assert read['value'] == len('Hello World\n')
  labels = e2e.Labels(read)
  assert labels['text'] == 'Hello World'
  assert labels['vm_count'] == '1'  # vm_count: null is --num_vms (1).


@pytest.mark.e2e
def test_num_vms_sizes_a_group_whose_vm_count_is_null(tmp_path, where):
  samples = _Run(tmp_path, 'upstream_example_vm', where, '--num_vms=2')
  assert e2e.Labels(samples['read_back_bytes'])['vm_count'] == '2'


@pytest.mark.e2e
def test_install_and_data_file_module_measures_the_rendered_file(
    tmp_path, where):
  samples = _Run(tmp_path, 'upstream_install_data', where)
  assert samples['rendered_lines']['value'] == 50  # The template's loop.
  # 'pkb <i> on default-0\n' for i in 0..49: 10 lines of 19 bytes, 40 of 20.
  assert samples['rendered_bytes']['value'] == 10 * 19 + 40 * 20
  labels = e2e.Labels(samples['curl_read_seconds'])
  assert labels['script_intact'] == 'True'  # Pushed byte for byte.
  assert labels['curl_version'][0].isdigit()
  assert 0 < samples['curl_read_seconds']['value'] < 30


@pytest.mark.e2e
def test_client_vm_measures_round_trips_to_the_server_vm(tmp_path, where):
  samples = _Run(tmp_path, 'upstream_client_server', where)
  mean, p50, p99, top = (samples[f'round_trip_{s}']['value']
                         for s in ('mean', 'p50', 'p99', 'max'))
  assert 0 < p50 <= p99 <= top and mean <= top
  labels = e2e.Labels(samples['round_trip_p50'])
  assert labels['round_trips'] == '500'
  assert (labels['server'], labels['client']) == ('server-0', 'client-0')
  assert labels['server_address'] == '127.0.0.1'  # GetInternalIPs()[0]
