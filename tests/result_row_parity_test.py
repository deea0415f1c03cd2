"""Our result rows carry the fields upstream PKB's rows carry (issue 10, 14).

Drives pkb's real stage driver (pkb._RunOne) on the Local cloud with a stub
benchmark, publishing through the real JSON publisher, and checks the rows:
`perfkitbenchmarker_version` in every sample's metadata, PKB's per-group VM
metadata (<group>_image, <group>_vm_platform, <group>_cloud) and the `End to
End Runtime` sample when (and only when) every stage ran.
"""

import io
import json
import re
import os
import subprocess
import time
import types

import pytest

from perfkitbenchmarker import benchmark_spec as spec_lib
from perfkitbenchmarker import configs
from perfkitbenchmarker import errors
from perfkitbenchmarker import flags as pkb_flags_lib
from perfkitbenchmarker import pkb
from perfkitbenchmarker import providers
from perfkitbenchmarker import reporting
from perfkitbenchmarker import run_log
from perfkitbenchmarker import run_record
from perfkitbenchmarker import run_scope
from perfkitbenchmarker import run_signals
from perfkitbenchmarker import sample as sample_lib
from perfkitbenchmarker.publishers import json_publisher
from perfkitbenchmarker.publishers import publisher

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PREPARE_S = 0.3
STUB_CONFIG = """
parity_stub:
  description: One Local server and client, one sample.
  vm_groups:
    servers:
      vm_spec:
        Local:
          machine_type: local
      vm_count: 1
    clients:
      vm_spec:
        Local:
          machine_type: local
      vm_count: 1
  flags: {}
"""


def _Stub(fail_in_run=False):
  module = types.ModuleType('parity_stub_benchmark')
  module.BENCHMARK_NAME = 'parity_stub'
  module.BENCHMARK_CONFIG = STUB_CONFIG

  def GetConfig(user_config):
    default = configs.LoadYaml(STUB_CONFIG, 'parity_stub')['parity_stub']
    return configs.MergeConfigs('parity_stub', default,
                                user_config.get('file'),
                                user_config.get('overrides', []))

  def Prepare(spec):
    del spec
    time.sleep(PREPARE_S)  # Part of what End to End Runtime must cover.

  def Run(spec):
    spec.metadata.update(spec.GroupMetadata())
    spec.EmitSamples([sample_lib.Sample('probe throughput', 1234.0,
                                        'ops/sec', {'probe': 1})])
    if fail_in_run:
      raise errors.Error('stub failure')
    return spec.published

  module.GetConfig = GetConfig
  module.CheckPrerequisites = lambda config: None
  module.Prepare = Prepare
  module.Run = Run
  module.Cleanup = lambda spec: None
  return module


def _Run(module, tmp_path, stages, run_uri='parity1'):
  config = module.GetConfig({'file': None, 'overrides': []})
  run_dir = str(tmp_path / run_uri)
  record = run_record.RunRecord.Create(
      run_dir, run_uri, cloud='Local', benchmarks=[module.BENCHMARK_NAME])
  json_path = os.path.join(run_dir, 'perfkitbenchmarker_results.json')
  collector = publisher.SampleCollector(
      [json_publisher.JSONPublisher(json_path, collapse_labels=False)],
      publisher.RunInfo(run_uri=run_uri, owner='tester'))
  started = time.time()
  try:
    code = pkb._RunOne(  # pylint: disable=protected-access
        module, config, run_uri, record, None, collector,
        reporting.ConsoleReporter(io.StringIO()), spec_lib.Deadline(None),
        stages, run_signals.Interrupts())
  finally:
    collector.Close()
  elapsed = time.time() - started
  with open(json_path) as f:
    rows = [json.loads(line) for line in f if line.strip()]
  return code, rows, elapsed


def _GitDescribe():
  return subprocess.run(['git', '-C', REPO, 'describe', '--always', '--dirty'],
                        capture_output=True, text=True, check=True
                        ).stdout.strip()


@pytest.mark.e2e
def test_full_run_rows_match_upstream_fields(pkb_flags, tmp_path):
  pkb_flags.cloud = 'Local'
  code, rows, elapsed = _Run(_Stub(), tmp_path,
                             list(pkb_flags_lib.RUN_STAGES))
  assert code == pkb.EXIT_OK
  assert [r['metric'] for r in rows] == ['probe throughput',
                                         'End to End Runtime']
  version = _GitDescribe()
  for row in rows:
    assert row['metadata']['perfkitbenchmarker_version'] == version
    assert row['product_name'] == 'PerfKitBenchmarker'
    # As PKB's SampleCollector: '<run_uri>-<uuid4>'.
    assert re.fullmatch(r'parity1-[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}',
                        row['run_uri']), row['run_uri']
  probe = rows[0]['metadata']
  for group in ('servers', 'clients'):
    assert probe[f'{group}_image'] == 'local'
    assert probe[f'{group}_vm_platform'] == 'local'
    assert probe[f'{group}_cloud'] == 'Local'
  assert probe['probe'] == 1  # Our own metadata is kept.
  end_to_end = rows[1]
  assert end_to_end['unit'] == 'seconds'
  # Provision through teardown: covers the stub's prepare, within the call.
  assert PREPARE_S <= end_to_end['value'] <= elapsed
  assert end_to_end['metadata']['servers_image'] == 'local'


@pytest.mark.e2e
def test_no_end_to_end_runtime_when_stages_are_missing_or_fail(
    pkb_flags, tmp_path):
  pkb_flags.cloud = 'Local'
  code, rows, _ = _Run(_Stub(), tmp_path,
                       ['provision', 'prepare', 'run', 'cleanup'], 'parity2')
  assert code == pkb.EXIT_OK
  assert [r['metric'] for r in rows] == ['probe throughput']
  # Leave nothing behind: the teardown this partial run skipped, and (as
  # pkb.Main does after it) its run lock and log, which would otherwise stay
  # with this worker (its lock file outlived it at 746d9dd).
  try:
    assert pkb._TeardownOnly(str(tmp_path / 'parity2')) == pkb.EXIT_OK  # pylint: disable=protected-access
  finally:
    run_scope.ReleaseAll()
    run_log.TearDown()
  assert not os.path.exists(os.path.join(run_scope.LockRoot(),
                                         'parity2.lock'))
  code, rows, _ = _Run(_Stub(fail_in_run=True), tmp_path,
                       list(pkb_flags_lib.RUN_STAGES), 'parity3')
  assert code == pkb.EXIT_FAILED
  assert [r['metric'] for r in rows] == ['probe throughput']


class _FakeVm:

  def __init__(self, cloud, image, spec_image=None):
    self.CLOUD = cloud  # pylint: disable=invalid-name
    self.CAN = providers.CapabilitiesOf(cloud)  # pylint: disable=invalid-name
    self.image = image
    self.spec = types.SimpleNamespace(image=spec_image)
    self.machine_type = 'm'
    self.num_cpus = 2
    self.zone = 'z-1a'
    self.os_type = 'debian12'
    self.cpu_set = None


def test_group_metadata_names_cloud_images_and_platform(pkb_flags):
  spec = spec_lib.BenchmarkSpec(_Stub(), {}, 'parity4', 'AWS', None,
                                pkb_flags, None, lambda s: None)
  ami = types.SimpleNamespace(image_id='ami-0123')
  spec.vm_groups = {'servers': [_FakeVm('AWS', ami)],
                    'clients': [_FakeVm('GCP', 'debian-12-v1')],
                    'static': [_FakeVm('Static', None, 'my-image')]}
  metadata = spec.GroupMetadata()
  assert metadata['servers_image'] == 'ami-0123'
  assert metadata['clients_image'] == 'debian-12-v1'
  assert metadata['static_image'] == 'my-image'
  assert metadata['servers_vm_platform'] == 'DEFAULT_VM'
  assert metadata['servers_cloud'] == 'AWS'
  assert metadata['clients_cloud'] == 'GCP'


class _SshVm(_FakeVm):
  """A VM reached over SSH, as far as metadata goes (ssh_vm's
  SystemMetadata: what it probed and the tuning it applied)."""

  def SystemMetadata(self):
    return {'os_release': 'Debian GNU/Linux 12 (bookworm)',
            'system_tuning': 'applied', 'vm_overcommit_memory': '1'}


def test_group_metadata_carries_each_ssh_machines_system_and_tuning(
    pkb_flags):
  """README: a static machine's OS, kernel, architecture and tuning are in
  the sample metadata. Every benchmark's samples take GroupMetadata (the
  memtier study added the system itself; YCSB's samples had none)."""
  spec = spec_lib.BenchmarkSpec(_Stub(), {}, 'parity5', 'Static', None,
                                pkb_flags, None, lambda s: None)
  spec.vm_groups = {'servers': [_SshVm('Static', None, 'img')],
                    'clients': [_FakeVm('Static', None, 'img')]}
  metadata = spec.GroupMetadata()
  assert metadata['servers_system_tuning'] == 'applied'
  assert metadata['servers_vm_overcommit_memory'] == '1'
  assert metadata['servers_os_release'] == 'Debian GNU/Linux 12 (bookworm)'
  assert not [k for k in metadata if k.startswith('clients_system')]


@pytest.mark.e2e
def test_version_falls_back_to_the_package_version(tmp_path):
  from perfkitbenchmarker import version  # pylint: disable=g-import-not-at-top
  assert version.VersionOf(REPO) == _GitDescribe()
  # Not a checkout: the installed package's version (or 'unknown').
  assert version.VersionOf(str(tmp_path)) == version._PackageVersion()  # pylint: disable=protected-access

