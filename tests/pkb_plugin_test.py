"""The upstream PKB plugin's contract, without upstream.

tests/fake_upstream_pkb/ is a fake, minimal upstream surface (only the names
the plugin imports, named as a fake); scripts/install_pkb_plugin.py installs
the plugin into a copy of it and drive_plugin.py plays upstream's stages.
The dry-run checks run the real harness; the later stages record the
harness command lines, and the run stage reads rows a real run through
upstream wrote (tests/data/pkb_plugin/harness_rows.json). The real upstream
run is recorded in pkb_plugin/README.md.
"""

import ast
import json
import os
import shutil
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FAKE = os.path.join(REPO, 'tests', 'fake_upstream_pkb')
PLUGIN = os.path.join(REPO, 'pkb_plugin', 'redis_price_performance_benchmark.py')
INSTALL = os.path.join(REPO, 'scripts', 'install_pkb_plugin.py')
ROWS = os.path.join(REPO, 'tests', 'data', 'pkb_plugin', 'harness_rows.json')
UPSTREAM_FLAGS = os.path.join(REPO, 'tests', 'data', 'upstream_pkb_flags.json')
# Keys upstream's DefaultMetadataProvider sets on every sample of a
# servers/clients benchmark (publisher.py at the recorded commit).
UPSTREAM_SET = ('perfkitbenchmarker_version', 'servers_image', 'clients_image',
                'servers_machine_type', 'clients_machine_type', 'servers_zone',
                'servers_cloud', 'servers_vm_count', 'clients_vm_count')


@pytest.fixture
def upstream(tmp_path):
  """A copy of the fake upstream tree with the plugin installed."""
  tree = tmp_path / 'upstream'
  shutil.copytree(FAKE, tree)
  done = subprocess.run([sys.executable, INSTALL, str(tree)],
                        capture_output=True, text=True, check=False)
  assert done.returncode == 0, done.stderr
  return tree


def _Drive(tree, tmp_path, scenario):
  env = dict(os.environ, FAKE_UPSTREAM_TEMP_DIR=str(tmp_path / 'run'))
  os.makedirs(env['FAKE_UPSTREAM_TEMP_DIR'], exist_ok=True)
  done = subprocess.run(
      [os.path.join(REPO, '.venv', 'bin', 'python'),
       str(tree / 'drive_plugin.py'), json.dumps(scenario)],
      cwd=str(tree), env=env, capture_output=True, text=True, timeout=120,
      check=False)
  assert done.returncode == 0, done.stderr[-2000:]
  return json.loads(done.stdout.strip().splitlines()[-1])


def _Groups(cloud='GCP', server='t2d-standard-16', client='n2-standard-32'):
  return {'servers': dict(cloud=cloud, machine_type=server,
                          zone='us-central1-a', count=1),
          'clients': dict(cloud=cloud, machine_type=client,
                          zone='us-central1-a', count=1)}


def _Vms(tmp_path, cloud='GCP', machine_type='t2d-standard-16'):
  key = tmp_path / 'upstream_key'
  key.write_text('upstream\'s generated key\n')
  key.chmod(0o600)
  return {group: [dict(cloud=cloud, ip_address=f'10.0.0.{i}',
                       internal_ip=f'192.168.0.{i}', user_name='perfkit',
                       ssh_private_key=str(key), ssh_port=22,
                       machine_type=machine_type, zone='us-central1-a')]
          for i, group in enumerate(('servers', 'clients'), 1)}


def test_install_writes_one_module_naming_the_harness(upstream):
  installed = upstream / 'perfkitbenchmarker' / 'linux_benchmarks'
  assert sorted(os.listdir(installed)) == [
      '__init__.py', 'redis_price_performance_benchmark.py']
  text = (installed / 'redis_price_performance_benchmark.py').read_text()
  assert f'HARNESS_DIR = {REPO!r}' in text
  again = subprocess.run([sys.executable, INSTALL, str(upstream)],
                         capture_output=True, text=True, check=False)
  assert again.returncode == 0  # updating an installed plugin is fine
  gone = subprocess.run([sys.executable, INSTALL, '--uninstall',
                         str(upstream)], capture_output=True, text=True,
                        check=False)
  assert gone.returncode == 0 and os.listdir(installed) == ['__init__.py']
  target = installed / 'redis_price_performance_benchmark.py'
  assert gone.stdout == f'removed {target}\n'
  # Nothing to remove: said so (it said 'removed' all the same).
  again = subprocess.run([sys.executable, INSTALL, '--uninstall',
                          str(upstream)], capture_output=True, text=True,
                         check=False)
  assert again.returncode == 0
  assert again.stdout == f'not installed, nothing removed: {target}\n'


@pytest.mark.parametrize('clash, words', [
    ('BENCHMARK_NAME = \'redis_price_performance\'\n',
     'already has a benchmark named redis_price_performance'),
    ('flags.DEFINE_string(\'redis_price_performance_flags\', None, \'\')\n',
     'already defines --redis_price_performance_flags'),
])
def test_install_refuses_what_would_clash_with_upstream(tmp_path, clash,
                                                        words):
  tree = tmp_path / 'upstream'
  shutil.copytree(FAKE, tree)
  (tree / 'perfkitbenchmarker' / 'linux_benchmarks' /
   'theirs_benchmark.py').write_text(clash)
  done = subprocess.run([sys.executable, INSTALL, str(tree)],
                        capture_output=True, text=True, check=False)
  assert done.returncode == 2 and words in done.stderr
  assert len(done.stderr.strip().splitlines()) == 1
  not_pkb = subprocess.run([sys.executable, INSTALL, str(tmp_path)],
                           capture_output=True, text=True, check=False)
  assert not_pkb.returncode == 2
  assert 'is not a PerfKitBenchmarker checkout' in not_pkb.stderr


def test_install_refuses_a_checkout_of_this_harness(tmp_path):
  """`install_pkb_plugin.py .` from the harness: it has pkb.py and
  linux_benchmarks/ too, and the plugin installed there broke its ./pkb.py
  (the plugin needs upstream's errors.Setup)."""
  tree = tmp_path / 'harness'
  shutil.copytree(FAKE, tree)
  (tree / 'pkb_plugin').mkdir()
  shutil.copy(PLUGIN, tree / 'pkb_plugin')
  done = subprocess.run([sys.executable, INSTALL, str(tree)],
                        capture_output=True, text=True, check=False)
  assert done.returncode == 2, done.stdout
  assert done.stderr.strip().splitlines() == [
      f'install_pkb_plugin: {tree} is a checkout of this harness, not of '
      'upstream PerfKitBenchmarker; give the directory you run upstream\'s '
      './pkb.py from.']
  assert os.listdir(tree / 'perfkitbenchmarker' / 'linux_benchmarks') == [
      '__init__.py']


def test_plugin_uses_only_upstream_names_and_defines_one_new_flag():
  tree = ast.parse(open(PLUGIN).read())
  imported = set()
  for node in ast.walk(tree):
    if isinstance(node, ast.ImportFrom):
      imported |= {f'{node.module}.{a.name}' for a in node.names}
    elif isinstance(node, ast.Import):
      imported |= {a.name for a in node.names}
  ours = {i for i in imported if i.startswith('perfkitbenchmarker')}
  # The fake surface is exactly what the plugin may use of upstream.
  assert ours == {'perfkitbenchmarker.configs', 'perfkitbenchmarker.errors',
                  'perfkitbenchmarker.sample', 'perfkitbenchmarker.vm_util'}
  defined = [n.args[0].value for n in ast.walk(tree)
             if isinstance(n, ast.Call) and
             getattr(n.func, 'attr', '').startswith('DEFINE')]
  assert defined == ['redis_price_performance_flags']
  with open(UPSTREAM_FLAGS) as f:
    assert defined[0] not in json.load(f)['all_upstream_names']


def test_unpriced_machine_type_is_refused_before_provisioning(upstream,
                                                              tmp_path):
  out = _Drive(upstream, tmp_path, {
      'flags': [], 'planned': _Groups(server='z3-highmem-88')})
  assert 'checked' not in out and out['harness_argv'] == []
  assert out['error'].startswith('BridgeError: redis_price_performance check')
  assert '--machine_price=z3-highmem-88=' in out['error']
  assert '--redis_price_performance_flags' in out['error']
  other = _Drive(upstream, tmp_path, {
      'flags': [], 'planned': _Groups(cloud='Azure',
                                      server='Standard_D2s_v6')})
  assert ('--redis_price_performance_flags=--local_priced_as=GCP:'
          in other['error'])


def test_bridge_flags_and_bad_settings_are_refused_in_the_check(upstream,
                                                               tmp_path):
  out = _Drive(upstream, tmp_path, {
      'flags': ['--redis_price_performance_flags=--zone=us-east1-b'],
      'planned': _Groups()})
  assert '--zone is set by the bridge' in out['error']
  out = _Drive(upstream, tmp_path, {
      'flags': ['--redis_price_performance_flags=--memtier_clients=1,2'],
      'planned': _Groups()})
  assert 'swept by --memtier_fixed_load' in out['error']


def test_stages_hand_upstreams_vms_to_the_harness_and_return_samples(
    upstream, tmp_path):
  out = _Drive(upstream, tmp_path, {
      'flags': ['--run_uri=ab12cd34', '--redis_price_performance_flags='
                '--memtier_latency_cap=0.5'],
      'planned': _Groups(), 'vms': _Vms(tmp_path), 'rows': ROWS,
      'check': False})
  assert 'error' not in out, out.get('error')
  server, = out['static_vms.json']['servers']
  assert server == {'ip_address': '10.0.0.1', 'internal_ip': '192.168.0.1',
                    'user_name': 'perfkit',
                    'keyfile_path': str(tmp_path / 'upstream_key'),
                    'ssh_port': 22, 'machine_type': 't2d-standard-16',
                    'zone': 'us-central1-a'}
  groups = out['config.json']['redis_memtier']['vm_groups']
  assert groups['servers']['vm_spec']['Static']['priced_as'] == (
      'GCP:t2d-standard-16@us-central1-a')
  prepare, run, cleanup = out['harness_argv']
  for argv in (prepare, run, cleanup):
    assert '--timing_measurements=none' in argv  # upstream times the stages
    assert '--run_uri=ab12cd340' in argv
    assert argv[-1] == '--memtier_latency_cap=0.5'
  assert [a for a in prepare + run + cleanup if a.startswith('--run_stage')] \
      == ['--run_stage=provision,prepare', '--run_stage=run',
          '--run_stage=cleanup,teardown']
  # The harness accepts what the bridge wrote: its dry run over the
  # prepare stage's own files and flags (no SSH, nothing started).
  plan = subprocess.run(
      [os.path.join(REPO, '.venv', 'bin', 'python'),
       os.path.join(REPO, 'pkb.py'), '--dry_run'] +
      [a for a in prepare if not a.startswith('--run_stage=')],
      capture_output=True, text=True, timeout=120, cwd=REPO, check=False)
  assert plan.returncode == 0, plan.stderr[-2000:]
  assert ('servers: 1 x t2d-standard-16 in us-central1-a, $0.6759/hr'
          in plan.stdout), plan.stdout
  samples = {s[0]: s for s in out['samples']}
  assert samples['latency_capped_throughput'][1] == pytest.approx(4424.3,
                                                                  abs=0.1)
  assert samples['price_performance'][2] == 'ops/s per $/hr'
  for metric, _, _, metadata, _ in out['samples']:
    clash = set(metadata) & set(UPSTREAM_SET)
    assert not clash, (metric, clash)
    assert metadata['harness_perfkitbenchmarker_version']
    assert metadata['harness_run_uri'].startswith('959a55ec1-')


def test_static_machines_without_a_type_are_refused_before_the_study(
    upstream, tmp_path):
  vms = _Vms(tmp_path, cloud='Static', machine_type=None)
  out = _Drive(upstream, tmp_path, {
      'flags': ['--static_vm_file=/dev/null'], 'planned': _Groups(),
      'vms': vms, 'rows': ROWS, 'check': False})
  assert out['harness_argv'] == []
  assert 'the servers VMs are Static (no machine type)' in out['error']
  priced = _Drive(upstream, tmp_path, {
      'flags': ['--static_vm_file=/dev/null', '--run_uri=x1',
                '--redis_price_performance_flags='
                '--local_priced_as=GCP:n2d-standard-2'],
      'planned': _Groups(), 'vms': vms, 'rows': ROWS, 'check': False})
  assert 'error' not in priced, priced.get('error')
  assert 'priced_as' not in (
      priced['config.json']['redis_memtier']['vm_groups']['servers']
      ['vm_spec']['Static'])
