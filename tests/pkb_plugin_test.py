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
import functools
import json
import os
import re
import shutil
import signal
import subprocess
import sys

from absl import flags
import pytest

import pkb_forkserver
import script_modules

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


def _DriveLogged(tree, tmp_path, scenario):
  """What the fake upstream's stages did, and its log (stderr)."""
  env = dict(os.environ, FAKE_UPSTREAM_TEMP_DIR=str(tmp_path / 'run'))
  os.makedirs(env['FAKE_UPSTREAM_TEMP_DIR'], exist_ok=True)
  done = subprocess.run(
      [os.path.join(REPO, '.venv', 'bin', 'python'),
       str(tree / 'drive_plugin.py'), json.dumps(scenario)],
      cwd=str(tree), env=env, capture_output=True, text=True, timeout=120,
      check=False)
  assert done.returncode == 0, done.stderr[-2000:]
  return json.loads(done.stdout.strip().splitlines()[-1]), done.stderr


def _Drive(tree, tmp_path, scenario):
  return _DriveLogged(tree, tmp_path, scenario)[0]


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


@pytest.mark.e2e
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


@pytest.mark.e2e
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


@pytest.mark.e2e
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


def _Installer():
  """scripts/install_pkb_plugin.py as a module, run in this process."""
  return script_modules.Load(INSTALL, 'install_pkb_plugin')


def test_install_writes_no_file_through_a_symlink(tmp_path, capsys):
  """A '<module>.tmp' left in linux_benchmarks/ as a symlink: the install
  wrote the plugin through it (over the file it named), then moved the
  symlink into the module's place."""
  tree = tmp_path / 'upstream'
  shutil.copytree(FAKE, tree)
  benchmarks = tree / 'perfkitbenchmarker' / 'linux_benchmarks'
  victim = tmp_path / 'victim'
  victim.write_text('not the installer\'s\n')
  (benchmarks / 'redis_price_performance_benchmark.py.tmp').symlink_to(victim)
  assert _Installer().main([str(tree)]) == 0, capsys.readouterr().err
  assert victim.read_text() == 'not the installer\'s\n'
  module = benchmarks / 'redis_price_performance_benchmark.py'
  assert not module.is_symlink()
  assert f'HARNESS_DIR = {REPO!r}' in module.read_text()
  assert sorted(os.listdir(benchmarks)) == [
      '__init__.py', 'redis_price_performance_benchmark.py',
      'redis_price_performance_benchmark.py.tmp']


@pytest.mark.parametrize('kind', ['fifo', 'symlink_to_dev_zero'])
def test_install_reads_upstreams_modules_bounded(tmp_path, capsys, kind):
  """A .py in the checkout that is a FIFO made the install wait forever; a
  symlink to /dev/zero read until memory ran out (a MemoryError
  traceback). Each is refused in one line, exit 2, nothing installed."""
  tree = tmp_path / 'upstream'
  shutil.copytree(FAKE, tree)
  odd = tree / 'perfkitbenchmarker' / 'odd.py'
  if kind == 'fifo':
    os.mkfifo(odd)
  else:
    odd.symlink_to('/dev/zero')
  assert _Installer().main([str(tree)]) == 2
  err = capsys.readouterr().err
  assert err.startswith(f'install_pkb_plugin: {odd} is ')
  assert len(err.strip().splitlines()) == 1
  assert os.listdir(tree / 'perfkitbenchmarker' / 'linux_benchmarks') == [
      '__init__.py']


@pytest.mark.parametrize('clash', [
    'BENCHMARK_NAME = \'redis_price_performance\'\n',
    'flags.DEFINE_string(\'redis_price_performance_flags\', None, \'\')\n',
])
def test_uninstall_removes_the_plugin_from_an_upstream_that_clashes_now(
    tmp_path, capsys, clash):
  """Upstream updated after the install to a benchmark or flag of the
  plugin's names: --uninstall said 'upstream already has ...; not
  installing.' (exit 2) and left the plugin, the one clash in the way."""
  tree = tmp_path / 'upstream'
  shutil.copytree(FAKE, tree)
  installer = _Installer()
  assert installer.main([str(tree)]) == 0, capsys.readouterr().err
  benchmarks = tree / 'perfkitbenchmarker' / 'linux_benchmarks'
  (benchmarks / 'theirs_benchmark.py').write_text(clash)
  capsys.readouterr()
  assert installer.main(['--uninstall', str(tree)]) == 0, (
      capsys.readouterr().err)
  target = benchmarks / 'redis_price_performance_benchmark.py'
  assert capsys.readouterr().out == f'removed {target}\n'
  assert sorted(os.listdir(benchmarks)) == ['__init__.py',
                                            'theirs_benchmark.py']


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


@pytest.mark.e2e
def test_unpriced_machine_type_is_refused_before_provisioning(upstream,
                                                              tmp_path):
  out = _Drive(upstream, tmp_path, {
      'flags': [], 'planned': _Groups(server='z3-highmem-88')})
  assert 'checked' not in out and out['harness_argv'] == []
  assert out['error'].startswith('Refused: redis_price_performance check')
  assert '--machine_price=z3-highmem-88=' in out['error']
  assert '--redis_price_performance_flags' in out['error']
  other = _Drive(upstream, tmp_path, {
      'flags': [], 'planned': _Groups(cloud='Azure',
                                      server='Standard_D2s_v6')})
  assert ('--redis_price_performance_flags=--local_priced_as=GCP:'
          in other['error'])


@pytest.mark.e2e
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


@pytest.mark.e2e
def test_the_harness_logs_in_where_upstream_does(upstream, tmp_path):
  """Under upstream's --connect_via_internal_ip (a PKB runner inside the
  VMs' network) upstream logs in at the internal address; the static VM
  file gave the harness the external one, which may be closed to SSH, or
  null where the VMs have none."""
  vms = _Vms(tmp_path)
  for group in vms.values():
    group[0]['ip_address'] = None  # no external address
  out = _Drive(upstream, tmp_path, {
      'flags': ['--run_uri=ab12cd34', '--connect_via_internal_ip',
                '--run_stage=provision,prepare'],
      'planned': _Groups(), 'vms': vms, 'check': False})
  assert 'error' not in out, out.get('error')
  server, = out['static_vms.json']['servers']
  assert server['ip_address'] == server['internal_ip'] == '192.168.0.1'


@pytest.mark.e2e
def test_each_spec_keeps_its_own_harness_files(upstream, tmp_path):
  """Two specs of one upstream invocation (two machine types), staged:
  both prepared, then the first one's run stage. Upstream keeps both specs
  in one temporary directory; the first one's run stage read the config
  the second one wrote, and the harness prices a later stage by its
  config: the first machine's rows priced as the second's."""
  argvs = []
  for sequence, machine_type in enumerate(('t2d-standard-16',
                                           'n2d-standard-16')):
    out = _Drive(upstream, tmp_path, {
        'flags': ['--run_uri=ab12cd34', '--run_stage=provision,prepare'],
        'sequence': sequence, 'planned': _Groups(),
        'vms': _Vms(tmp_path, machine_type=machine_type), 'check': False})
    assert 'error' not in out, out.get('error')
    argvs.append(out['harness_argv'][0])
  first_config = next(a.split('=', 1)[1] for a in argvs[0]
                      if a.startswith('--benchmark_config_file='))
  with open(first_config) as f:
    servers = json.load(f)['redis_memtier']['vm_groups']['servers']
  assert servers['vm_spec']['Static']['priced_as'] == (
      'GCP:t2d-standard-16@us-central1-a')


@pytest.mark.e2e
def test_stages_hand_upstreams_vms_to_the_harness_and_return_samples(
    upstream, tmp_path):
  # The recorded rows predate the harness_version key the publisher now
  # adds beside perfkitbenchmarker_version (publisher.ToRow); add it as the
  # harness does today.
  rows = tmp_path / 'rows.json'
  with open(ROWS) as f, open(rows, 'w') as to:
    for line in f:
      row = json.loads(line)
      row['metadata']['harness_version'] = (
          row['metadata']['perfkitbenchmarker_version'])
      to.write(json.dumps(row) + '\n')
  out = _Drive(upstream, tmp_path, {
      'flags': ['--run_uri=ab12cd34', '--redis_price_performance_flags='
                '--memtier_latency_cap=0.5'],
      'planned': _Groups(), 'vms': _Vms(tmp_path), 'rows': str(rows),
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
  plan = pkb_forkserver.Run(
      [os.path.join(REPO, '.venv', 'bin', 'python'),
       os.path.join(REPO, 'pkb.py'), '--dry_run'] +
      [a for a in prepare if not a.startswith('--run_stage=')],
      timeout=120, cwd=REPO)
  assert plan.returncode == 0, plan.stderr[-2000:]
  servers = next(line for line in plan.stdout.splitlines()
                 if line.strip().startswith('servers: '))
  assert 'servers: 1 x t2d-standard-16 in us-central1-a' in servers, servers
  assert '$0.6759/hr' in servers, servers
  samples = {s[0]: s for s in out['samples']}
  assert samples['latency_capped_throughput'][1] == pytest.approx(4424.3,
                                                                  abs=0.1)
  assert samples['price_performance'][2] == 'ops/s per $/hr'
  for metric, _, _, metadata, _ in out['samples']:
    clash = set(metadata) & set(UPSTREAM_SET)
    assert not clash, (metric, clash)
    # The harness's version once, under harness_version.
    assert metadata['harness_version']
    assert 'harness_perfkitbenchmarker_version' not in metadata
    assert metadata['harness_run_uri'].startswith('959a55ec1-')


@pytest.mark.e2e
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


@pytest.mark.e2e
@pytest.mark.parametrize('arg, refused', [
    ('--flagfile={flagfile}', '--flagfile would read or hide flags'),
    ('-flagfile={flagfile}', '--flagfile would read or hide flags'),
    ('--undefok=cloud', '--undefok would read or hide flags'),
    ('--json_path=/tmp/elsewhere.json', '--json_path would move or publish'),
    ('--csv_path=/tmp/elsewhere.csv', '--csv_path would move or publish'),
    ('--bigquery_table=p.d.t', '--bigquery_table would move or publish'),
    ('--official', '--official would move or publish'),
    ('--noofficial', '--official would move or publish'),
    ('--help', '--help does not run one study'),
    ('-h', '--h does not run one study'),
    ('--helpfull', '--helpfull does not run one study'),
    ('--dry_run', '--dry_run does not run one study'),
    ('--flag_matrix=sweep', '--flag_matrix does not run one study'),
    ('--', '"--" is not a flag'),
    # The config's `flags:` section sets flags as if given.
    ('--config_override=redis_memtier.flags.bigquery_table=p.d.t',
     '--config_override=redis_memtier.flags.bigquery_table: --bigquery_table '
     'would move or publish'),
    ('--config_override=redis_memtier.flags.zone=us-east1-b',
     '--zone is set by the bridge'),
    # Sized from upstream's clients group, as --machine_type from its
    # servers: the harness's dry run refused it for its stand-in machines
    # file ('existing machines (--static_vm_file) are the ones the file
    # lists'), a file the upstream user never gave.
    ('--client_machine_type=n2-standard-8',
     '--client_machine_type is set by the bridge from what upstream '
     'provisioned'),
    ('--config_override=redis_memtier.vm_groups.servers.vm_count=3',
     'the VM groups are set by the bridge'),
    # Issue 35 item 5: the mapping form set them past the check.
    ('"--config_override=redis_memtier.flags={{official: true, '
     'bigquery_table: p.d.t}}"',
     '--config_override=redis_memtier.flags=<mapping> sets flags the bridge '
     'cannot check one by one'),
    ('"-config_override= redis_memtier.flags ={{json_path: /tmp/x.json}}"',
     '--config_override=redis_memtier.flags=<mapping>'),
])
def test_flags_that_escape_the_bridge_are_refused_in_one_line(
    upstream, tmp_path, arg, refused):
  """Issue 24 item 15: --flagfile got past the reserved-flag check (its file
  can hold --results_dir, --run_stage, ...: Prepare ran the whole study into
  another results dir); --json_path, --help and --dry_run passed it, then
  Run failed with a raw FileNotFoundError."""
  flagfile = tmp_path / 'more.flags'
  flagfile.write_text('--memtier_latency_cap=0.5\n')  # the harness takes it
  out = _Drive(upstream, tmp_path, {
      'flags': ['--redis_price_performance_flags=--memtier_latency_cap=0.5 ' +
                arg.format(flagfile=flagfile)],
      'planned': _Groups(), 'vms': _Vms(tmp_path), 'rows': ROWS})
  assert 'checked' not in out and out['harness_argv'] == []
  assert out['error'].startswith(
      'Refused: --redis_price_performance_flags: ')
  assert refused in out['error'] and '\n' not in out['error']


@pytest.mark.e2e
@pytest.mark.parametrize('upstream_flags, line', [
    # The bridge's own refusal of an upstream flag.
    (['--memtier_protocol=redis'],
     'redis_price_performance: upstream\'s --memtier_protocol mean nothing '
     'to this benchmark'),
    # The harness's, from its dry run.
    (['--redis_price_performance_flags=--memtier_clients=1,2'],
     'redis_price_performance check: '),
])
def test_a_refusal_reaches_upstream_as_one_line(upstream, tmp_path,
                                                upstream_flags, line):
  """Issue 35 item 7: upstream logs a failed prerequisite check with its
  traceback and the error then ends its main with a second one."""
  env = dict(os.environ, FAKE_UPSTREAM_TEMP_DIR=str(tmp_path / 'run'))
  os.makedirs(env['FAKE_UPSTREAM_TEMP_DIR'], exist_ok=True)
  done = subprocess.run(
      [os.path.join(REPO, '.venv', 'bin', 'python'),
       str(upstream / 'drive_plugin.py'), json.dumps({
           'flags': upstream_flags, 'planned': _Groups(), 'uncaught': True})],
      cwd=str(upstream), env=env, capture_output=True, text=True, timeout=120,
      check=False)
  assert done.returncode == 1, done.stderr[-2000:]
  said, = done.stderr.splitlines()
  assert said.startswith('ERROR Prerequisite check failed for '
                         'redis_price_performance: ' + line), said


@pytest.mark.e2e
def test_a_run_stage_without_results_is_one_line(upstream, tmp_path):
  """Whatever kept the harness from writing its results file (an argument
  the check did not know), Run says so in one line: no FileNotFoundError."""
  empty = tmp_path / 'empty.json'
  empty.write_text('')
  out = _Drive(upstream, tmp_path, {
      'flags': ['--run_uri=ab12cd34'], 'planned': _Groups(),
      'vms': _Vms(tmp_path), 'rows': str(empty), 'check': False,
      'no_results': True})
  assert out['error'].startswith(
      'HarnessRunError: redis_price_performance run: the harness wrote no '
      'results at '), out['error']
  assert out['status'] == 'FAILED'


@pytest.mark.e2e
@pytest.mark.parametrize('cloud, extra, line', [
    # A static machine has no machine type: refused at Prepare.
    ('Static', {}, 'redis_price_performance: the servers VMs are Static '
     '(no machine type), which the harness cannot price'),
    # A harness stage that failed.
    ('GCP', {'no_results': True}, 'redis_price_performance run: the harness '
     'wrote no results at '),
])
def test_a_stage_error_reaches_upstreams_log_as_one_line(
    upstream, tmp_path, cloud, extra, line):
  """Upstream logs a failed stage's error with its traceback twice (its
  RunBenchmark, then RunBenchmarkTask): the plugin's errors are one line,
  logged once, and upstream's own line after them stays."""
  empty = tmp_path / 'empty.json'
  empty.write_text('')
  vms = _Vms(tmp_path)
  for vm in vms['servers'] + vms['clients']:
    vm.update(cloud=cloud, machine_type=None if cloud == 'Static' else
              vm['machine_type'])
  out, log = _DriveLogged(upstream, tmp_path, {
      'flags': ['--run_uri=ab12cd34'], 'planned': _Groups(), 'vms': vms,
      'rows': str(empty), 'check': False, **extra})
  assert out['status'] == 'FAILED' and line in out['error']
  said = [l for l in log.splitlines() if l.startswith('ERROR ')]
  assert len(said) == 2, log[-3000:]
  assert said[0].startswith(
      'ERROR Error during benchmark redis_price_performance: ' + line), said
  assert said[1] == ('ERROR Benchmark 1/1 redis_price_performance failed. '
                     'Execution will continue.')
  assert 'Traceback' not in log, log[-3000:]


@pytest.mark.e2e
def test_harness_lines_reach_upstreams_log_as_they_are_written(
    upstream, tmp_path):
  """The harness's progress lines are logged while it runs: the stand-in
  harness prints its second line only once its first is in upstream's log
  (it gave up after 30 s when the bridge buffered a stage's output)."""
  harness = tmp_path / 'harness'
  harness.mkdir()
  (harness / 'pkb.py').write_text(
      '#!/usr/bin/env python3\n'
      'import os, sys, time\n'
      'go = os.path.join(os.path.dirname(os.path.abspath(__file__)), "go")\n'
      'print("probe 0")\n'  # no flush: the bridge must ask for unbuffered
      'for _ in range(300):\n'
      '  if os.path.exists(go):\n'
      '    break\n'
      '  time.sleep(0.1)\n'
      'else:\n'
      '  print("pkb: the first line never reached the log", file=sys.stderr)\n'
      '  sys.exit(1)\n'
      'print("probe 1")\n'
      'print("pkb: done", file=sys.stderr)\n')
  (harness / 'pkb.py').chmod(0o755)
  out = _Drive(upstream, tmp_path, {'flags': [], 'stream': str(harness)})
  assert 'error' not in out, out
  assert out['returned'] == [0, 'done']
  lines = [line for _, line in out['lines']]
  assert lines.index('harness: probe 0') < lines.index('harness: probe 1')


def _Argvs(out):
  prepare, run, cleanup = out['harness_argv']
  return prepare, run, cleanup


@pytest.mark.e2e
def test_upstreams_memtier_and_redis_flags_are_mapped(upstream, tmp_path):
  out = _Drive(upstream, tmp_path, {
      'flags': ['--run_uri=ab12cd34', '--memtier_ratio=1:4',
                '--memtier_data_size=1024', '--redis_server_io_threads=2',
                '--memtier_distinct_client_seed',
                '--redis_price_performance_flags=--memtier_latency_cap=0.8'],
      'planned': _Groups(), 'vms': _Vms(tmp_path), 'rows': ROWS})
  assert out.get('checked'), out.get('error')  # the harness's dry run took them
  for argv in _Argvs(out):
    assert argv[-5:] == ['--memtier_data_size=1024',
                         '--memtier_distinct_client_seed',
                         '--memtier_ratio=1:4', '--redis_server_io_threads=2',
                         '--memtier_latency_cap=0.8']
  # Left at upstream's defaults (its 1:9, 32 B, 50 clients): not passed.
  plain = _Drive(upstream, tmp_path, {
      'flags': ['--run_uri=ab12cd34'], 'planned': _Groups(),
      'vms': _Vms(tmp_path), 'rows': ROWS, 'check': False})
  assert not [a for a in sum(plain['harness_argv'], [])
              if a.startswith(('--memtier', '--redis'))]
  # A mapped value the harness refuses is refused in the check, in one line.
  several = _Drive(upstream, tmp_path, {
      'flags': ['--memtier_clients=1,2'], 'planned': _Groups()})
  assert 'swept by --memtier_fixed_load' in several['error']
  assert 'checked' not in several


@pytest.mark.e2e
@pytest.mark.parametrize('upstream_flags, words', [
    (['--memtier_protocol=redis', '--redis_aof'],
     'upstream\'s --memtier_protocol, --redis_aof mean nothing to this '
     'benchmark'),
    (['--memtier_run_count=3'], 'upstream\'s --memtier_run_count mean'),
    (['--nolatency_capped_throughput'],
     'upstream\'s --latency_capped_throughput mean'),
    (['--memtier_ratio=1:4', '--redis_price_performance_flags='
      '--memtier_ratio=1:1'],
     '--memtier_ratio given both as upstream\'s flag and in '
     '--redis_price_performance_flags'),
    (['--memtier_ratio=1:4', '--redis_price_performance_flags='
      '--config_override=redis_memtier.flags.memtier_ratio=1:1'],
     '--memtier_ratio given both'),
    # Upstream's 0 is one process per vCPU; the harness has no such value.
    (['--redis_total_num_processes=0'],
     'upstream\'s --redis_total_num_processes=0: upstream starts one process '
     'per vCPU'),
    # Upstream's cap is on p95; a statistic or cap of the harness's beside
    # it would say otherwise.
    (['--memtier_latency_cap=2', '--redis_price_performance_flags='
      '--latency_cap_statistic=p99'],
     'upstream\'s --memtier_latency_cap caps p95 latency (its latency-capped '
     'mode\'s statistic), and --redis_price_performance_flags gives '
     '--latency_cap_statistic too'),
    (['--latency_capped_throughput', '--redis_price_performance_flags='
      '--config_override=redis_memtier.flags.memtier_latency_cap=3'],
     'gives --memtier_latency_cap too'),
])
def test_upstream_flags_the_study_has_not_are_refused_in_one_line(
    upstream, tmp_path, upstream_flags, words):
  """Upstream's --memtier_protocol and the like were accepted and silently
  ignored."""
  out = _Drive(upstream, tmp_path, {
      'flags': upstream_flags, 'planned': _Groups(), 'vms': _Vms(tmp_path),
      'rows': ROWS})
  assert 'checked' not in out and out['harness_argv'] == []
  assert out['error'].startswith('Refused: redis_price_performance: ')
  assert words in out['error'] and '\n' not in out['error']


@pytest.mark.e2e
@pytest.mark.parametrize('upstream_flags, cap', [
    (['--memtier_latency_cap=2'], '--memtier_latency_cap=2.0'),
    # Upstream's capped mode with its default cap.
    (['--latency_capped_throughput'], '--memtier_latency_cap=1.0'),
    (['--latency_capped_throughput', '--memtier_latency_cap=0.5'],
     '--memtier_latency_cap=0.5'),
])
def test_upstreams_cap_reaches_the_harness_on_p95(upstream, tmp_path,
                                                  upstream_flags, cap):
  """Upstream's --memtier_latency_cap caps p95 (memtier.py compares
  latency_dic['95']); passed on alone it capped the harness's average."""
  out = _Drive(upstream, tmp_path, {
      'flags': ['--run_uri=ab12cd34'] + upstream_flags,
      'planned': _Groups(), 'vms': _Vms(tmp_path), 'rows': ROWS})
  assert out.get('checked'), out.get('error')  # the harness's dry run took it
  for argv in _Argvs(out):
    assert argv[-2:] == [cap, '--latency_cap_statistic=p95']


@pytest.mark.e2e
def test_the_check_plans_the_vms_load_generator_not_this_machines(
    upstream, tmp_path):
  """The check's dry run runs here, for upstream's VMs: on a PKB runner
  without memtier it refused upstream's p95 cap as a redis-benchmark run
  (the harness installs memtier on the VMs); a --memtier_path names a path
  on the VMs. A generator the study names is still the one checked."""
  out = _Drive(upstream, tmp_path, {
      'flags': ['--memtier_latency_cap=2', '--redis_price_performance_flags='
                '--memtier_path=/opt/on-the-vms/memtier_benchmark'],
      'planned': _Groups()})
  assert out.get('checked'), out.get('error')
  named = _Drive(upstream, tmp_path, {
      'flags': ['--memtier_latency_cap=2', '--redis_price_performance_flags='
                '--load_generator=redis_benchmark'], 'planned': _Groups()})
  assert named['error'].startswith(
      'Refused: redis_price_performance check: --latency_cap_statistic=p95 '
      'needs memtier_benchmark, but the load generator here is '
      'redis-benchmark'), named['error']
  # Nor a Redis release this machine has no build of (the harness installs
  # it on the VMs): the Local plan refused it, '--redis_server_version=7.2.4:
  # Local uses the installed redis-server builds, here distro (...)'.
  release = _Drive(upstream, tmp_path, {
      'flags': ['--redis_price_performance_flags='
                '--redis_server_version=7.2.4'], 'planned': _Groups()})
  assert release.get('checked'), release.get('error')


# A real run through upstream with --official (pkb_plugin/README.md): its
# answer client-bound, the harness's exit 4 and closing line.
UNCONFIRMED = os.path.join(REPO, 'tests', 'data', 'pkb_plugin',
                           'harness_rows_unconfirmed.json')
UNCONFIRMED_LAST = (
    'no confirmed result: the answer is CLIENT-BOUND: load generator '
    'saturated in 7 of the answer\'s 7 probe(s); exit 4 '
    '(--accept_unconfirmed exits 0).')


def _Unconfirmed(upstream, tmp_path, upstream_flags, **more):
  scenario = {'flags': ['--run_uri=ab12cd34'] + upstream_flags,
              'planned': _Groups(), 'vms': _Vms(tmp_path), 'rows': UNCONFIRMED,
              'check': False, 'run_exit': 4, 'run_last': UNCONFIRMED_LAST}
  scenario.update(more)
  return _Drive(upstream, tmp_path, scenario)


def _Recorded(path):
  with open(path) as f:
    return [json.loads(line) for line in f if line.strip()]


def _Key(row):
  return (row['metric'], row['value'], row['timestamp'])


@pytest.mark.e2e
def test_official_upstream_run_never_publishes_an_unconfirmed_answer(
    upstream, tmp_path):
  """Upstream's publisher sets its --official on every sample of a run: the
  client-bound answer's rows were published official=True while the
  harness's own file said False, and exit 4 became SUCCEEDED."""
  out = _Unconfirmed(upstream, tmp_path, ['--official'])
  assert out['status'] == 'FAILED'
  assert out['published'] == []
  assert out['error'].startswith(
      'HarnessRunError: redis_price_performance run: no confirmed result: the '
      'answer is CLIENT-BOUND')
  assert ('(--redis_price_performance_flags=--accept_unconfirmed accepts '
          'it)' in out['error'])
  assert 'none published' in out['error']
  prepare, run, cleanup = out['harness_argv']
  # The harness decides each row's official with its verdicts...
  assert run[-1] == '--official'
  # ... and its shards stop although Run failed (cloud VMs too).
  assert '--run_stage=cleanup,teardown' in cleanup
  assert '--run_stage=provision,prepare' in prepare


@pytest.mark.e2e
def test_unconfirmed_answer_is_published_unofficial_and_fails(upstream,
                                                              tmp_path):
  out = _Unconfirmed(upstream, tmp_path, [])
  assert out['status'] == 'FAILED'
  assert out['error'].startswith(
      'HarnessRunError: redis_price_performance run: no confirmed result: the '
      'answer is CLIENT-BOUND')
  rows = _Recorded(UNCONFIRMED)
  published = out['published']
  assert sorted(map(_Key, published)) == sorted(map(_Key, rows))
  assert not [r for r in published if r['official'] is not False]
  assert '--official' not in out['harness_argv'][1]
  # Cleanup raised after the harness's cleanup ran, once; upstream called
  # it again after the failure, which did nothing more.
  assert out['cleanup_calls'] == 2 and len(out['harness_argv']) == 3
  for row in published:
    labels = row['labels']
    assert row['test'] == 'redis_price_performance'
    assert '|perfkitbenchmarker_version:v1.12.0-fake|' in labels
    assert '|harness:redis_price_performance|' in labels
  capped = next(r for r in published
                if r['metric'] == 'latency_capped_throughput')
  assert '|verdict:client_bound|' in capped['labels']


@pytest.mark.e2e
def test_unconfirmed_answer_fails_in_run_without_a_cleanup_stage(upstream,
                                                                 tmp_path):
  out = _Unconfirmed(upstream, tmp_path,
                     ['--run_stage=provision,prepare,run'])
  assert out['status'] == 'FAILED' and out['published'] == []
  assert 'none published' in out['error']
  assert len(out['harness_argv']) == 2 and out['cleanup_calls'] == 0


@pytest.mark.e2e
def test_accepted_unconfirmed_answer_succeeds(upstream, tmp_path):
  out = _Unconfirmed(upstream, tmp_path, [
      '--redis_price_performance_flags=--accept_unconfirmed'], run_exit=0,
                     run_last='')
  assert out['status'] == 'SUCCEEDED', out.get('error')
  assert len(out['published']) == len(_Recorded(UNCONFIRMED))
  assert out['harness_argv'][1][-1] == '--accept_unconfirmed'


def _QuietProbes(tmp_path):
  """The recorded rows as a quiet machine would have written them: probes
  not client-saturated nor disturbed, each row's official decided by the
  harness's own rule (verdict.IsOfficial) under --official."""
  from perfkitbenchmarker import verdict  # pylint: disable=g-import-not-at-top
  path = tmp_path / 'quiet_rows.json'
  with open(path, 'w') as f:
    for row in _Recorded(UNCONFIRMED):
      if 'verdict' not in row['metadata']:
        row['metadata'].update(client_saturated=False, interference=False)
      row['official'] = verdict.IsOfficial(row['metadata'])
      f.write(json.dumps(row) + '\n')
  return str(path)


@pytest.mark.e2e
@pytest.mark.parametrize('quiet', [False, True])
def test_official_upstream_run_gets_only_rows_the_harness_made_official(
    upstream, tmp_path, quiet):
  rows = _QuietProbes(tmp_path) if quiet else UNCONFIRMED
  out = _Unconfirmed(upstream, tmp_path, [
      '--official', '--redis_price_performance_flags=--accept_unconfirmed'],
                     rows=rows, run_exit=0, run_last='')
  assert out['status'] == 'SUCCEEDED', out.get('error')
  recorded = _Recorded(rows)
  official = [r for r in recorded if r['official'] is True]
  assert 0 < len(recorded) - len(official)  # some withheld
  assert bool(official) == quiet  # the quiet probes are official
  assert sorted(map(_Key, out['published'])) == sorted(map(_Key, official))
  assert all(r['official'] is True for r in out['published'])
  assert not [r for r in out['published'] if '|verdict:' in r['labels']]


def _PluginConstant(name):
  tree = ast.parse(open(PLUGIN).read())
  return next(ast.literal_eval(n.value) for n in tree.body
              if isinstance(n, ast.Assign) and
              getattr(n.targets[0], 'id', None) == name)


def test_mapped_flags_are_upstream_names_the_harness_shares_and_documented():
  mapped = _PluginConstant('MAPPED')
  with open(UPSTREAM_FLAGS) as f:
    shared = json.load(f)['shared']
  assert set(mapped) <= set(shared)  # the same name in both programs
  with open(os.path.join(REPO, 'docs', 'upstream_flags.md')) as f:
    doc = f.read().split('## Through upstream PKB', 1)[1]
  passed = set()
  for line in doc.splitlines():
    cells = line.split('|')
    if len(cells) == 6 and cells[4].strip().startswith('passed on'):
      passed |= set(re.findall(r'`--(\w+)`', cells[1]))
  assert passed == set(mapped)


def _Plugin(monkeypatch):
  """The plugin module, loaded in this process over the harness's modules
  of upstream's names; its one flag defined on a FlagValues of its own."""
  monkeypatch.setattr(flags, 'DEFINE_string', functools.partial(
      flags.DEFINE_string, flag_values=flags.FlagValues()))
  return script_modules.Load(PLUGIN, 'plugin_in_process')


@pytest.mark.parametrize('argv, words', [
    (['--redis_server_cluster_mode', '--memtier_cluster_mode'], None),
    (['--nomemtier_cluster_mode'], None),
    (['--memtier_cluster_mode'], 'upstream\'s --memtier_cluster_mode: the '
     'harness runs memtier in cluster mode exactly when the shards are a '
     'cluster'),
    (['--redis_server_cluster_mode', '--nomemtier_cluster_mode'],
     'give both upstream flags or neither'),
])
def test_upstreams_memtier_cluster_mode_goes_with_its_cluster_flag(
    monkeypatch, argv, words):
  """Upstream's redis_memtier refuses --redis_server_cluster_mode without
  --memtier_cluster_mode, and the plugin refused the second as a flag
  meaning nothing here: upstream's cluster run could not be given."""
  plugin = _Plugin(monkeypatch)
  upstream = flags.FlagValues()
  for name in ('memtier_cluster_mode', 'redis_server_cluster_mode'):
    flags.DEFINE_boolean(name, False, 'upstream\'s', flag_values=upstream)
  upstream(['pkb'] + argv)
  if words is None:
    passed = plugin.UpstreamFlags(upstream, [])
    assert passed == ['--redis_server_cluster_mode'] * (len(argv) == 2)
  else:
    with pytest.raises(plugin.BridgeError, match=words):
      plugin.UpstreamFlags(upstream, [])


def test_a_harness_row_naming_a_key_twice_is_refused_in_one_line(
    monkeypatch, tmp_path):
  """Before: the rows were read with json.loads, which keeps the last of a
  key given twice, so a "value" added at a row's end was published as the
  measured one. Now that row stops the run stage in one line naming the
  results file; the rows of a real run still read."""
  plugin = _Plugin(monkeypatch)
  with open(ROWS) as f:
    rows = f.read().splitlines()
  path = tmp_path / 'perfkitbenchmarker_results.json'
  path.write_text('\n'.join(rows) + '\n')
  with open(path) as f:
    samples, _ = plugin.SamplesFromRows(f, str(path))
  assert len(samples) == len(rows)
  first = json.loads(rows[0])
  assert first['value'] != 1e12
  path.write_text('\n'.join(
      [rows[0][:-1] + ', "value": 1e12}'] + rows[1:]) + '\n')
  with open(path) as f, pytest.raises(plugin.HarnessRunError) as e:
    plugin.SamplesFromRows(f, str(path))
  assert str(e.value) == (
      f'redis_price_performance run: {path}: a row of this run gives the key '
      '"value" twice in one object, which the harness never writes; refused '
      'rather than publishing either value (the file was edited or '
      'damaged).')


@pytest.mark.parametrize('bad, said', [
    ('{"metric": "throughput", "value": 5', 'is not JSON'),
    ('["throughput", 5, "ops/s"]', 'is not a JSON object'),
    ('{"value": 5, "unit": "ops/s"}', 'has no "metric"'),
    ('{"metric": "throughput", "value": "5", "unit": "ops/s"}',
     '"value" is not a number'),
    ('{"metric": "throughput", "value": 5, "unit": "ops/s", "metadata": 3}',
     '"metadata" is not an object'),
])
def test_a_harness_row_not_as_the_harness_writes_is_refused_in_one_line(
    monkeypatch, tmp_path, bad, said):
  """A row that is not JSON, or lacks what a sample needs, failed the run
  stage as a JSONDecodeError or KeyError (or went to upstream as a string
  value); now it is one line naming the results file and the row."""
  plugin = _Plugin(monkeypatch)
  with open(ROWS) as f:
    rows = f.read().splitlines()
  path = tmp_path / 'perfkitbenchmarker_results.json'
  path.write_text('\n'.join(rows[:1] + [bad] + rows[1:]) + '\n')
  with open(path) as f, pytest.raises(plugin.HarnessRunError) as e:
    plugin.SamplesFromRows(f, str(path))
  assert str(e.value).startswith(
      f'redis_price_performance run: {path}: row 2 {said}'), str(e.value)
  assert '\n' not in str(e.value)


# The harness's closing lines when a search failed after measuring (a real
# run through upstream, pkb_plugin/README.md).
FAILED_LAST = (
    'redis_memtier stopped: Some probes were under the 1 ms cap but no load '
    'held under it when repeated. the 34 samples measured before that are '
    'kept in the results files.')


@pytest.mark.e2e
@pytest.mark.parametrize('official', [False, True])
def test_a_failed_search_keeps_its_rows_unofficial_and_fails(
    upstream, tmp_path, official):
  """The harness's exit 1 after measuring: its rows were left in its own
  file only, upstream saw none."""
  out = _Unconfirmed(upstream, tmp_path, ['--official'] if official else [],
                     run_exit=1, run_last=FAILED_LAST)
  assert out['status'] == 'FAILED'
  assert out['error'].startswith(
      'HarnessRunError: redis_price_performance run: redis_memtier stopped: ')
  if official:
    assert out['published'] == [] and 'none published' in out['error']
  else:
    assert len(out['published']) == len(_Recorded(UNCONFIRMED))
    assert not [r for r in out['published'] if r['official'] is not False]


@pytest.mark.e2e
def test_a_search_that_failed_before_measuring_says_why(upstream, tmp_path):
  empty = tmp_path / 'empty.json'
  empty.write_text('')
  out = _Unconfirmed(upstream, tmp_path, [], rows=str(empty), run_exit=1,
                     run_last='redis_memtier stopped: SSH to clients-0 failed.')
  assert out['error'] == ('HarnessRunError: redis_price_performance run: '
                          'redis_memtier stopped: SSH to clients-0 failed.')
  assert out['status'] == 'FAILED' and out['published'] == []


@pytest.mark.e2e
def test_the_static_check_names_no_cloud_machine_type(upstream, tmp_path):
  """Under upstream's --static_vm_file the check's plan said 'servers: 1 x
  t2d-standard-16 in us-central1-a priced as GCP n2d-standard-2' and a cost
  estimate: cloud machines that are never created, at a price only the
  settings check uses. It says the machines are static."""
  _, log = _DriveLogged(upstream, tmp_path, {
      'flags': ['--static_vm_file=/dev/null'], 'planned': _Groups(),
      'log_level': 'INFO'})
  shown = [line for line in log.splitlines()
           if not line.startswith('INFO redis_price_performance: /')]
  # (The command line itself names the stand-in price.)
  assert shown, log[-3000:]
  for line in shown:
    assert not re.search(r'\b(t2d|n2d|n2)-standard', line), line
    assert '$' not in line, line
  assert any('static machines' in line and 'existing machines' in line
             for line in shown), log[-3000:]


# A stand-in harness for the plugin's real _RunHarness ("stream"): the
# closing lines and exit code it is given (STANDIN_LAST, STANDIN_EXIT), or,
# with STANDIN_WAIT, it says when it runs (its pid and session in
# ready.json, once its first line reached upstream's log), records each
# signal it gets in signals.txt and ends at the first (exit 130, with a
# teardown command) unless STANDIN_WAIT=stubborn, when it outlasts them.
# Each invocation's --run_stage goes to stages.txt; with STANDIN_WAIT_STAGE
# only that stage waits (upstream's stages, "harness"), the others end at
# once. The stage STANDIN_KILL_UPSTREAM_STAGE names sends upstream a
# SIGTERM as it starts (a second `kill`), before it handles signals. Every
# wait is bounded (60 s).
STANDIN = r'''#!/usr/bin/env python3
import json, os, signal, sys, time
here = os.path.dirname(os.path.abspath(__file__))
mode = os.environ.get('STANDIN_WAIT')
stage = ([a.split('=', 1)[1] for a in sys.argv if a.startswith('--run_stage=')]
         or ['dry_run'])[-1]
with open(os.path.join(here, 'stages.txt'), 'a') as f:
  f.write(stage + '\n')
if os.environ.get('STANDIN_KILL_UPSTREAM_STAGE') == stage:
  os.kill(os.getppid(), signal.SIGTERM)
  time.sleep(60)  # no handler yet: the SIGTERM passed on ends it
  sys.exit(1)
if os.environ.get('STANDIN_WAIT_STAGE', stage) != stage:
  sys.exit(0)  # a stage before or after the one that waits: done
if not mode:
  for line in os.environ['STANDIN_LAST'].split('\n'):
    print(line, file=sys.stderr)
  sys.exit(int(os.environ['STANDIN_EXIT']))
got = []
def Handle(signum, frame):
  with open(os.path.join(here, 'signals.txt'), 'a') as f:
    f.write(signal.Signals(signum).name + '\n')
  got.append(signum)
  if mode != 'stubborn':
    print('pkb: interrupted by %s; cleanup cut short: delete what is left '
          "with ./pkb.py --run_stage=teardown --run_uri=ab1 "
          "--results_dir='/srv/upstream run/results'"
          % signal.Signals(signum).name, file=sys.stderr)
    sys.exit(130)
for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
  signal.signal(sig, Handle)
print('probe 0')
for _ in range(600):
  if os.path.exists(os.path.join(here, 'go')):
    break
  time.sleep(0.1)
with open(os.path.join(here, 'ready.json.tmp'), 'w') as f:
  json.dump({'pid': os.getpid(), 'sid': os.getsid(0)}, f)
os.rename(os.path.join(here, 'ready.json.tmp'),
          os.path.join(here, 'ready.json'))
for _ in range(600):
  time.sleep(0.1)
print('pkb: never interrupted', file=sys.stderr)
sys.exit(1)
'''
STANDIN_ARGV = ['--run_uri=ab1', '--results_dir=/srv/upstream run/results',
                '--run_stage=run']


def _StandIn(tmp_path):
  harness = tmp_path / 'harness'
  harness.mkdir()
  (harness / 'pkb.py').write_text(STANDIN)
  (harness / 'pkb.py').chmod(0o755)
  return harness


def _StandInSaid(upstream, tmp_path, code, *lines):
  harness = _StandIn(tmp_path)
  env = dict(os.environ, STANDIN_LAST='\n'.join(lines),
             STANDIN_EXIT=str(code))
  done = subprocess.run(
      [os.path.join(REPO, '.venv', 'bin', 'python'),
       str(upstream / 'drive_plugin.py'), json.dumps({
           'flags': [], 'stream': str(harness), 'argv': STANDIN_ARGV})],
      cwd=str(upstream), env=env, capture_output=True, text=True,
      timeout=120, check=False)
  assert done.returncode == 0, done.stderr[-2000:]
  return json.loads(done.stdout.strip().splitlines()[-1]), harness


@pytest.mark.e2e
def test_a_command_the_harness_names_is_one_an_upstream_user_can_run(
    upstream, tmp_path):
  """The user is in upstream's checkout, where ./pkb.py is upstream's: the
  harness's './pkb.py --run_stage=teardown --run_uri=ab1 ...' ran
  upstream's pkb. The run's --results_dir, which the harness names with
  it (run_signals.TeardownCommand: the plugin's runs are off its default
  directory), goes through as the harness said it."""
  out, harness = _StandInSaid(
      upstream, tmp_path, 1,
      'pkb: run ab1 stopped: SSH to clients-0 failed; delete what is left '
      'with ./pkb.py --run_stage=teardown --run_uri=ab1 '
      '--results_dir=\'/srv/upstream run/results\', or refresh the '
      'prices with ./scripts/refresh_prices.py first.')
  error = out['error']
  assert error.startswith('HarnessRunError: redis_price_performance run: '
                          'run ab1 stopped'), error
  assert (f'with {harness}/pkb.py --run_stage=teardown --run_uri=ab1 '
          '--results_dir=\'/srv/upstream run/results\', or') in error, error
  assert error.count('--results_dir') == 1, error
  assert f'{harness}/scripts/refresh_prices.py' in error, error
  assert ' ./' not in error, error


@pytest.mark.e2e
def test_a_command_in_a_relayed_line_is_one_an_upstream_user_can_run(
    upstream, tmp_path):
  """The harness's lines relayed into upstream's log ('harness: pkb: 2
  resource(s) ... delete them with ./pkb.py --run_stage=teardown ...')
  were copied as they were, where only the plugin's closing line named the
  harness's full path: in upstream's checkout ./pkb.py is upstream's. The
  relay rewrites them as that line (ForUpstream)."""
  left = ('pkb: 2 resource(s) of run ab1 are left (teardown is not among '
          'its stages); delete them with ./pkb.py --run_stage=teardown '
          '--run_uri=ab1 --results_dir=\'/srv/upstream run/results\'')
  out, harness = _StandInSaid(
      upstream, tmp_path, 1, left,
      'pkb: refresh the prices with ./scripts/refresh_prices.py',
      'Samples: ./results/ab1 (0 samples).')
  relayed = [line for _, line in out['lines'] if line.startswith('harness: ')]
  assert relayed == [
      f'harness: pkb: 2 resource(s) of run ab1 are left (teardown is not '
      f'among its stages); delete them with {harness}/pkb.py '
      '--run_stage=teardown --run_uri=ab1 '
      '--results_dir=\'/srv/upstream run/results\'',
      f'harness: pkb: refresh the prices with '
      f'{harness}/scripts/refresh_prices.py',
      # Not a command: left as the harness wrote it.
      'harness: Samples: ./results/ab1 (0 samples).'], relayed


@pytest.mark.e2e
@pytest.mark.parametrize('said, about_flags', [
    ('pkb: clients-0: 127.0.0.2 port 22 is in use by run xy9 (its ssh '
     'session); run xz8 (redis-server PID 77 works in its workspace '
     '/tmp/pkb-xz8.Ab); nothing of this run was made there. Wait for them '
     'to finish, or tear them down: ./pkb.py --run_stage=teardown '
     '--run_uri=xy9 --results_dir=\'/srv/other run\'; run xz8 where it was '
     'started (its results directory is not known here)', False),
    ('pkb: --memtier_clients=1,2 is swept by --memtier_fixed_load; give '
     'one value.', True),
])
def test_only_a_refused_flag_is_pointed_at_the_plugins_flag(
    upstream, tmp_path, said, about_flags):
  """Every refusal (the harness's exit 2) ended '(the harness's flags go in
  --redis_price_performance_flags)', a machine in use by another run too.
  Another run's teardown command is the harness's, with that run's
  --results_dir (none of this run's); one whose results directory the
  harness does not know gets none."""
  out, harness = _StandInSaid(upstream, tmp_path, 2, said)
  error = out['error']
  assert error.startswith('BridgeError: redis_price_performance run: '), error
  assert error.endswith('(the harness\'s flags go in '
                        '--redis_price_performance_flags)') == about_flags
  if not about_flags:
    assert error.endswith(
        f'{harness}/pkb.py --run_stage=teardown --run_uri=xy9 '
        '--results_dir=\'/srv/other run\'; run xz8 where it was started '
        '(its results directory is not known here)'), error


def _Running(pid):
  """Whether a process (not this one's child) still runs: a zombie has
  ended."""
  try:
    with open(f'/proc/{pid}/stat') as f:
      return f.read().rsplit(')', 1)[1].split()[0] != 'Z'
  except FileNotFoundError:
    return False


def _Interrupted(upstream, tmp_path, signum, group, mode='once', waits=None,
                 stage=None, standin_env=None):
  """The drive running the stand-in in 'wait' mode, `signum` sent to the
  drive's process group (a Ctrl-C at the terminal) or to the drive alone
  once the stand-in runs; the drive's result, its exit code, the stand-in's
  ready.json, the signals it got and the stages it was run for. With
  `stage`, upstream's stages run the stand-in (Prepare its dry run and
  provision,prepare; Run its run; Cleanup its cleanup,teardown) and the
  signal comes in that harness stage."""
  harness = _StandIn(tmp_path)
  env = dict(os.environ, STANDIN_WAIT=mode, **(standin_env or {}))
  scenario = {'flags': [], 'stream': str(harness), 'argv': STANDIN_ARGV,
              'log_level': 'INFO'}
  if stage:
    env['STANDIN_WAIT_STAGE'] = stage
    env['FAKE_UPSTREAM_TEMP_DIR'] = str(tmp_path / 'run')
    os.makedirs(env['FAKE_UPSTREAM_TEMP_DIR'], exist_ok=True)
    scenario = {'flags': ['--run_uri=ab1', '--redis_price_performance_flags='
                          '--local_priced_as=GCP:n2d-standard-2'],
                'vms': _Vms(tmp_path), 'check': False, 'harness': str(harness),
                'log_level': 'INFO'}
  if waits:
    scenario['waits'] = waits
  drive = subprocess.Popen(  # pylint: disable=consider-using-with
      [os.path.join(REPO, '.venv', 'bin', 'python'),
       str(upstream / 'drive_plugin.py'), json.dumps(scenario)],
      cwd=str(upstream), env=env, stdout=subprocess.PIPE,
      stderr=subprocess.PIPE, text=True, start_new_session=True)
  ready = {}
  try:
    for _ in range(600):
      if (harness / 'ready.json').exists():
        break
      assert drive.poll() is None, drive.communicate()
      subprocess.run(['sleep', '0.1'], check=True)
    ready = json.loads((harness / 'ready.json').read_text())
    if group:
      os.killpg(drive.pid, signum)
    else:
      drive.send_signal(signum)
    stdout, stderr = drive.communicate(timeout=120)
    still = _Running(ready['pid'])
  finally:
    if drive.poll() is None:
      os.killpg(drive.pid, 9)
      drive.wait()
    if ready and _Running(ready['pid']):
      os.kill(ready['pid'], 9)
  got, stages = (
      (harness / name).read_text().split() if (harness / name).exists()
      else [] for name in ('signals.txt', 'stages.txt'))
  lines = stdout.strip().splitlines()
  out = json.loads(lines[-1]) if lines else None
  return dict(out=out, code=drive.returncode, ready=ready, got=got,
              still=still, log=stderr, drive_pid=drive.pid, stages=stages)


@pytest.mark.e2e
def test_ctrl_c_reaches_the_harness_once_and_upstream_after_it(upstream,
                                                                tmp_path):
  """A Ctrl-C at the terminal signals upstream's whole process group: the
  harness, in it, got the SIGINT from the terminal, and a plugin passing
  signals on would have sent it a second, which cuts its cleanup short.
  The harness runs in its own session, gets the SIGINT once, from the
  plugin, and ends; then upstream gets its KeyboardInterrupt."""
  done = _Interrupted(upstream, tmp_path, signal.SIGINT, group=True)
  # The drive has a session of its own (start_new_session): upstream's.
  assert done['ready']['sid'] != done['drive_pid']
  assert done['got'] == ['SIGINT'] and not done['still']
  assert done['out']['error'].startswith('KeyboardInterrupt'), done['out']
  said = [line for _, line in done['out']['lines']]
  assert 'SIGINT: the harness stopped (exit 130)' in said[-1], said


@pytest.mark.e2e
@pytest.mark.parametrize('signum', [signal.SIGTERM, signal.SIGHUP])
def test_a_signal_to_upstream_stops_the_harness_before_upstream(
    upstream, tmp_path, signum):
  """`kill <upstream's pid>` (or its terminal gone): upstream died at once
  and the harness ran on (62 s, its whole study, its shards left behind).
  The plugin passes the signal on, waits for the harness, then upstream
  ends by the signal as it would without the plugin."""
  done = _Interrupted(upstream, tmp_path, signum, group=False)
  assert done['got'] == [signal.Signals(signum).name]
  assert not done['still']
  assert done['code'] == -signum, done['log'][-2000:]


@pytest.mark.e2e
def test_a_harness_that_outlasts_its_stop_is_killed(upstream, tmp_path):
  """Bounded: a harness still running INTERRUPT_WAIT_S after the signal
  (here 0.5 s) is asked once more (SIGTERM cuts its cleanup short), then,
  KILL_WAIT_S later, killed; the plugin names the teardown command of its
  run, from anywhere, with the run's results directory."""
  done = _Interrupted(upstream, tmp_path, signal.SIGINT, group=False,
                      mode='stubborn', waits=[0.5, 0.5])
  assert done['got'] == ['SIGINT', 'SIGTERM'] and not done['still']
  assert done['out']['error'].startswith('KeyboardInterrupt'), done['out']
  harness = tmp_path / 'harness'
  said = done['out']['lines'][-1][1]
  assert (f'{harness}/pkb.py --run_stage=teardown --run_uri=ab1 '
          '--results_dir=\'/srv/upstream run/results\'') in said, said
  assert 'the harness was killed' in said, said


@pytest.mark.e2e
@pytest.mark.parametrize('stage', ['provision,prepare', 'run'])
def test_ctrl_c_in_a_stage_ends_with_upstreams_cleanup_tearing_down(
    upstream, tmp_path, stage):
  """A Ctrl-C in Prepare or Run: the harness stops that stage (no teardown
  among its stages), then upstream's KeyboardInterrupt calls the plugin's
  Cleanup (always_call_cleanup), which runs the harness's cleanup and
  teardown, once."""
  done = _Interrupted(upstream, tmp_path, signal.SIGINT, group=True,
                      stage=stage)
  assert done['got'] == ['SIGINT'] and not done['still']
  assert done['out']['error'].startswith('KeyboardInterrupt'), done['out']
  assert done['out']['cleanup_calls'] == 1
  assert done['stages'] == ['dry_run', 'provision,prepare'] + (
      ['run'] if stage == 'run' else []) + ['cleanup,teardown'], done['log']


@pytest.mark.e2e
@pytest.mark.parametrize('signum, stage', [
    (signal.SIGTERM, 'provision,prepare'), (signal.SIGTERM, 'run'),
    (signal.SIGHUP, 'run')])
def test_a_signal_upstream_dies_of_tears_the_harness_run_down_first(
    upstream, tmp_path, signum, stage):
  """`kill <upstream>` in Prepare or Run: upstream has no handler for it,
  so it ended without calling Cleanup and the harness run (stopped, its
  stages without teardown) kept its shards, workspaces and static claims.
  The plugin runs the harness's cleanup and teardown, then upstream ends
  by the signal."""
  done = _Interrupted(upstream, tmp_path, signum, group=False, stage=stage)
  assert done['got'] == [signal.Signals(signum).name]
  assert not done['still']
  assert done['code'] == -signum, done['log'][-2000:]
  assert done['stages'] == ['dry_run', 'provision,prepare'] + (
      ['run'] if stage == 'run' else []) + ['cleanup,teardown'], done['log']
  assert 'ends upstream without its Cleanup' in done['log'], done['log']


@pytest.mark.e2e
def test_a_second_kill_as_the_teardown_starts_names_the_teardown_command(
    upstream, tmp_path):
  """A second `kill <upstream>` while the plugin's own cleanup and teardown
  of the run starts, before the harness handles signals: the SIGTERM
  passed on ends it at once (exit -15), nothing of the run cleaned up
  (against real upstream: its workspaces and static claims left), and
  upstream ends by it. The plugin's last line said only 'the harness
  stopped (exit -15)'; it names the teardown command that finishes the
  run, with its results directory."""
  done = _Interrupted(upstream, tmp_path, signal.SIGTERM, group=False,
                      stage='run', standin_env={
                          'STANDIN_KILL_UPSTREAM_STAGE': 'cleanup,teardown'})
  assert done['got'] == ['SIGTERM'], done['log'][-2000:]
  assert done['code'] == -signal.SIGTERM, done['log'][-2000:]
  assert done['stages'][-1] == 'cleanup,teardown', done['stages']
  said, = [line for line in done['log'].splitlines()
           if 'redis_price_performance cleanup: SIGTERM' in line]
  results = tmp_path / 'run' / 'redis_price_performance' / 'results'
  assert 'the harness stopped (exit -15); delete what is left of its run ' \
      f'with {tmp_path}/harness/pkb.py --run_stage=teardown --run_uri=ab1' \
      in said, said
  assert f'--results_dir={results}' in said, said
