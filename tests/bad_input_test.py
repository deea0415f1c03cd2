"""Bad input is one line on stderr and exit 2, before anything is created.

Issue 10 points 9 (YAML part), 10 and 11: each row runs ./pkb.py as a user
would (a subprocess, its own --results_dir) and checks the exit code, that
stderr is one `pkb:` line naming the problem, that there is no traceback and
that no run directory was made. Most rows are dry runs: a dry run must refuse
exactly what a real run refuses, and a missing check then cannot start a
real run by accident.
"""

import json
import os
import re
import subprocess

import pytest

import e2e_support as e2e
from perfkitbenchmarker import configs
from perfkitbenchmarker import errors

# Every test here starts a process (tests/tier_guard.py).
pytestmark = pytest.mark.e2e

# A "billion laughs" YAML: ~400 bytes that expand to 10^9 leaves.
_ALIAS_BOMB = '\n'.join(
    ['a0: &a0 [x, x, x, x, x, x, x, x, x, x]'] +
    [f'a{i}: &a{i} [' + ', '.join([f'*a{i - 1}'] * 10) + ']'
     for i in range(1, 9)] +
    ['redis_memtier: {flags: {memtier_ratio: *a8}}']) + '\n'


def _Config(tmp_path, text, name='c.yaml'):
  path = tmp_path / name
  if isinstance(text, bytes):
    path.write_bytes(text)
  else:
    path.write_text(text)
  return f'--benchmark_config_file={path}'


def _Wrapper(tmp_path):
  path = tmp_path / 'memtier_wrapper.sh'
  path.write_text('#!/bin/sh\nexec memtier_benchmark "$@"\n')
  path.chmod(0o755)
  return path


def _StaticFile(tmp_path):
  """A --static_vm_file of two machines (a dry run reaches neither)."""
  key = tmp_path / 'static_key'
  key.write_text('not really a key\n')
  key.chmod(0o600)
  path = tmp_path / 'machines.json'
  path.write_text(json.dumps([{'ip_address': ip, 'user_name': 'u',
                               'keyfile_path': str(key)}
                              for ip in ('10.0.0.5', '10.0.0.6')]))
  return f'--static_vm_file={path}'


def _Override(key_value):
  return f'--config_override=redis_memtier.{key_value}'


# (id, args builder(tmp_path) -> list, text the one line must contain)
_CASES = [
    # --results_dir, --json_path, --csv_path.
    ('results_dir_is_a_file',
     lambda t: [f'--results_dir={t / "afile"}'], 'not a directory'),
    ('results_dir_under_a_file',
     lambda t: [f'--results_dir={t / "afile" / "sub"}'], 'not a directory'),
    ('results_dir_unwritable',
     lambda t: ['--results_dir=/proc/pkb-results'], 'cannot write'),
    # Empty: the run went to the default, where the flag was to move it
    # from (exit 0).
    ('results_dir_empty', lambda t: ['--results_dir='],
     '--results_dir is empty; give a path, or drop the flag'),
    ('json_path_empty', lambda t: ['--json_path='], '--json_path is empty'),
    ('csv_path_empty', lambda t: ['--csv_path='], '--csv_path is empty'),
    # The run measured Local (or --cloud) machines, or the built-in config.
    ('static_vm_file_empty', lambda t: ['--static_vm_file='],
     '--static_vm_file is empty'),
    ('benchmark_config_file_empty', lambda t: ['--benchmark_config_file='],
     '--benchmark_config_file is empty'),
    # A memtier found on PATH, else redis-benchmark, ran (the README: a
    # --memtier_path that does not exist is refused, not replaced); YCSB
    # was looked for in its default build.
    ('memtier_path_empty', lambda t: ['--memtier_path='],
     '--memtier_path is empty'),
    ('ycsb_build_dir_empty',
     lambda t: ['--benchmarks=redis_ycsb', '--ycsb_build_dir='],
     '--ycsb_build_dir is empty'),
    ('json_path_is_a_dir', lambda t: [f'--json_path={t}'], '--json_path'),
    ('json_path_under_a_file',
     lambda t: [f'--json_path={t / "afile" / "x.json"}'], '--json_path'),
    ('csv_path_is_a_dir', lambda t: [f'--csv_path={t}'], '--csv_path'),
    # A directory not made yet: the run failed at its first sample.
    ('json_path_is_a_dir_to_be', lambda t: [f'--json_path={t}/new/'],
     'is a directory'),
    ('csv_path_is_a_dir_to_be', lambda t: [f'--csv_path={t}/new/.'],
     'is a directory'),
    # --timeout_minutes.
    ('timeout_negative', lambda t: ['--timeout_minutes=-1'],
     '--timeout_minutes'),
    ('timeout_nan', lambda t: ['--timeout_minutes=nan'], '--timeout_minutes'),
    ('timeout_huge', lambda t: ['--timeout_minutes=1e308'],
     '--timeout_minutes'),
    ('timeout_zero', lambda t: ['--timeout_minutes=0'], '--timeout_minutes'),
    # Server options.
    ('memory_fraction_nan', lambda t: ['--redis_memory_fraction=nan'],
     '--redis_memory_fraction'),
    ('memory_fraction_zero', lambda t: ['--redis_memory_fraction=0'],
     '--redis_memory_fraction'),
    ('memory_fraction_above_one', lambda t: ['--redis_memory_fraction=1.5'],
     '--redis_memory_fraction'),
    ('start_port_70000', lambda t: ['--redis_start_port=70000'],
     '--redis_start_port'),
    ('start_port_zero', lambda t: ['--redis_start_port=0'],
     '--redis_start_port'),
    ('ports_past_65535', lambda t: ['--redis_start_port=65534',
                                    '--redis_total_num_processes=4'],
     '--redis_start_port'),
    ('server_option_port', lambda t: ['--redis_server_options=port 6500'],
     '"port"'),
    ('server_option_bind', lambda t: ['--redis_server_options=bind 0.0.0.0'],
     '"bind"'),
    ('server_option_requirepass',
     lambda t: ['--redis_server_options=requirepass hunter2'],
     '"requirepass"'),
    ('server_option_dir', lambda t: ['--redis_server_options=dir /tmp'],
     '"dir"'),
    ('server_option_daemonize',
     lambda t: ['--redis_server_options=daemonize yes'], '"daemonize"'),
    ('server_option_cluster',
     lambda t: ['--redis_server_options=Cluster-Enabled yes'],
     '"cluster-enabled"'),
    ('server_option_include',
     lambda t: ['--redis_server_options=include /etc/redis/x.conf'],
     '"include"'),
    ('server_option_rename_config',
     lambda t: ['--redis_server_options=rename-command CONFIG ""'],
     '"rename-command CONFIG"'),
    # The search.
    ('max_probes_zero', lambda t: ['--memtier_max_probes=0'],
     '--memtier_max_probes'),
    ('max_probes_negative', lambda t: ['--memtier_max_probes=-3'],
     '--memtier_max_probes'),
    ('cap_nan', lambda t: ['--memtier_latency_cap=nan'],
     '--memtier_latency_cap'),
    ('cap_inf', lambda t: ['--memtier_latency_cap=inf'],
     '--memtier_latency_cap'),
    ('keydb_threads_over_keydb_max',
     lambda t: ['--keydb_server_threads=17'], '--keydb_server_threads=17'),
    ('adaptive_max_threads_zero',
     lambda t: ['--memtier_adaptive_max_threads=0'],
     '--memtier_adaptive_max_threads=0'),
    ('adaptive_max_threads_not_integer',
     lambda t: ['--memtier_adaptive_max_threads=2.5'],
     '--memtier_adaptive_max_threads'),
    ('adaptive_max_threads_below_min_threads',
     lambda t: ['--memtier_adaptive_max_threads=2',
                '--memtier_min_threads=3'], '--memtier_min_threads=3'),
    ('adaptive_over_maxclients',
     lambda t: ['--memtier_adaptive_max_connections=20000'], 'maxclients'),
    ('linear_over_maxclients',
     lambda t: ['--memtier_latency_capped_search=linear',
                '--memtier_max_threads=400'], 'maxclients'),
    # Configs.
    ('servers_null',
     lambda t: [_Config(t, 'redis_memtier:\n  vm_groups:\n    servers: null\n'
                       )], 'vm_groups.servers'),
    ('config_not_utf8',
     lambda t: [_Config(t, b'redis_memtier:\n  description: \xff\xfe\n')],
     'UTF-8'),
    ('unknown_top_level_key',
     lambda t: [_Config(t, 'redis_memtier: {}\nbogus: 1\n')], '"bogus"'),
    ('run_uri_under_flags',
     lambda t: [_Config(t, 'redis_memtier:\n  flags:\n    run_uri: abc\n')],
     'run_uri'),
    ('results_dir_under_flags',
     lambda t: [_Config(t, 'flags:\n  results_dir: /tmp/x\n')],
     'results_dir'),
    ('benchmarks_under_flags',
     lambda t: [_Config(t, 'redis_memtier:\n  flags:\n    benchmarks: x\n')],
     'benchmarks'),
    ('num_cpus_zero', lambda t: [_Override('vm_groups.servers.vm_spec.Local.'
                                           'num_cpus=0')], 'num_cpus'),
    ('num_cpus_negative',
     lambda t: [_Override('vm_groups.clients.vm_spec.Local.num_cpus=-2')],
     'num_cpus'),
    ('memory_mib_zero',
     lambda t: [_Override('vm_groups.servers.vm_spec.Local.memory_mib=0')],
     'memory_mib'),
    ('yaml_alias_bomb', lambda t: [_Config(t, _ALIAS_BOMB)], 'alias'),
    # --benchmarks.
    ('benchmarks_empty', lambda t: ['--benchmarks='], '--benchmarks'),
    ('benchmarks_duplicated',
     lambda t: ['--benchmarks=redis_memtier,redis_memtier'], 'more than once'),
    ('enterprise_cpu_id_negative',
     lambda t: ['--benchmarks=redis_enterprise',
                '--enterprise_redis_disable_cpu_ids=3,-1'],
     '--enterprise_redis_disable_cpu_ids'),
    ('enterprise_cpu_id_not_a_number',
     lambda t: ['--benchmarks=redis_enterprise',
                '--enterprise_redis_disable_cpu_ids=cpu3'],
     '--enterprise_redis_disable_cpu_ids'),
    # Where it runs.
    ('machine_type_unknown_gcp',
     lambda t: ['--cloud=GCP', '--machine_type=n9-huge'], 'n9-huge'),
    ('machine_type_on_local', lambda t: ['--machine_type=n9-huge'],
     '--machine_type'),
    ('client_machine_type_on_local',
     lambda t: ['--client_machine_type=n9-huge'], '--client_machine_type'),
    # Existing machines are the file's, priced as --local_priced_as: the
    # plan said '1 x t2d-standard-16 ... priced as GCP n2d-standard-2'.
    ('machine_type_on_static',
     lambda t: ['--cloud=GCP', '--machine_type=t2d-standard-16',
                _StaticFile(t)],
     'its machine_type key in the file and the price with '
     '--local_priced_as'),
    ('client_machine_type_on_static',
     lambda t: ['--client_machine_type=n2-standard-8', _StaticFile(t)],
     '--client_machine_type=n2-standard-8: existing machines'),
    # Their zone is the file's too: the plan said '1 x static in
    # us-central1-a' for machines whose file names none (or another).
    ('zone_on_static',
     lambda t: ['--zone=us-central1-a', _StaticFile(t)],
     '--zone=us-central1-a: existing machines (--static_vm_file) are the '
     'ones the file lists; name a machine\'s zone with its zone key in the '
     'file, and drop the flag.'),
    ('zones_on_static_gcp',
     lambda t: ['--cloud=GCP', '--zone=us-central1-a', '--zone=us-east1-b',
                _StaticFile(t)],
     '--zone=us-central1-a,us-east1-b: existing machines'),
    # The same flags from the config's flags: section, which sets their
    # values without their being given (as PKB): the plan said '1 x static
    # in us-central1-a', '1 x n2-standard-8 in the machines file' and, on
    # Local, '1 x n2-standard-8 in this machine'.
    ('config_zone_on_static',
     lambda t: [_Override('flags.zone=us-central1-a'), _StaticFile(t)],
     'flags.zone=us-central1-a in the benchmark config: existing machines '
     '(--static_vm_file) are the ones the file lists; name a machine\'s '
     'zone with its zone key in the file, and drop it from the benchmark '
     'config.'),
    ('config_machine_type_on_static',
     lambda t: [_Override('flags.machine_type=n2-standard-8'),
                _StaticFile(t)],
     'flags.machine_type=n2-standard-8 in the benchmark config: existing '
     'machines'),
    ('config_file_client_machine_type_on_static',
     lambda t: [_Config(t, 'redis_memtier:\n  flags:\n'
                        '    client_machine_type: n2-standard-8\n'),
                _StaticFile(t)],
     'flags.client_machine_type=n2-standard-8 in the benchmark config: '
     'existing machines'),
    ('config_file_top_level_zone_on_static',
     lambda t: [_Config(t, 'flags:\n  zone: us-east1-b\n'), _StaticFile(t)],
     'flags.zone=us-east1-b in the benchmark config: existing machines'),
    ('config_machine_type_on_local',
     lambda t: [_Override('flags.machine_type=n2-standard-8')],
     'flags.machine_type=n2-standard-8 in the benchmark config: Local VMs '
     'are cores of this machine, priced by --local_priced_as; drop it from '
     'the benchmark config or choose a --cloud.'),
    ('config_client_machine_type_on_local',
     lambda t: [_Override('flags.client_machine_type=n2-standard-8')],
     'flags.client_machine_type=n2-standard-8 in the benchmark config: '
     'Local VMs'),
    # Refused by the spec before, as if the config's vm_spec named it
    # ('vm_groups.servers.vm_spec.Local.zone=...').
    ('config_zone_on_local',
     lambda t: [_Override('flags.zone=us-central1-a')],
     'flags.zone=us-central1-a in the benchmark config: Local runs on this '
     'machine'),
    ('config_os_type_on_local',
     lambda t: [_Override('flags.os_type=ubuntu2204')],
     'flags.os_type=ubuntu2204 in the benchmark config: Local runs on this '
     'machine\'s OS'),
    ('config_server_cpu_quota_off_local',
     lambda t: ['--cloud=GCP', _Override('flags.local_server_cpu_quota=0.5')],
     'flags.local_server_cpu_quota=0.5 in the benchmark config: a CPU quota '
     'on this machine\'s cores holds Local servers only'),
    ('os_type_windows', lambda t: ['--os_type=windows'], '--os_type'),
    ('os_type_windows_gcp', lambda t: ['--cloud=GCP', '--os_type=windows'],
     '--os_type'),
    ('zone_on_local', lambda t: ['--zone=mars-1a'], '--zone'),
    ('server_cpu_quota_off_local',
     lambda t: ['--cloud=GCP', '--local_server_cpu_quota=0.5'],
     'holds Local servers only'),
    ('server_cpu_quota_above_a_core', lambda t: ['--local_server_cpu_quota=2'],
     '--local_server_cpu_quota=2'),
    ('os_type_centos7_gcp', lambda t: ['--cloud=GCP', '--os_type=centos7'],
     'centos7'),
    ('os_type_centos7_aws', lambda t: ['--cloud=AWS', '--os_type=centos7'],
     'centos7'),
    ('server_version_on_local', lambda t: ['--redis_server_version=7.2'],
     'Local uses the installed redis-server'),
    # Issue 26 point 1: what prepare refuses, refused by the dry run too.
    ('memtier_path_missing', lambda t: ['--memtier_path=/nonexistent/mt'],
     'is no executable on this machine'),
    ('memtier_path_shell_wrapper',
     lambda t: [f'--memtier_path={_Wrapper(t)}'], 'wrapper'),
    ('ycsb_build_dir_missing',
     lambda t: ['--benchmarks=redis_ycsb', '--ycsb_build_dir=/nonexistent'],
     '--ycsb_build_dir=/nonexistent: there is no directory'),
    ('ycsb_build_dir_is_a_file',
     lambda t: ['--benchmarks=redis_ycsb', f'--ycsb_build_dir={t / "afile"}'],
     'is not a directory'),
    # A directory, but no build of scripts/build_ycsb.sh in it.
    ('ycsb_build_dir_not_built',
     lambda t: ['--benchmarks=redis_ycsb', f'--ycsb_build_dir={t}'],
     'pkb-ycsb-redis.jar'),
    # Issue 26 point 2: zones and machine types a cloud does not have.
    ('gcp_region_as_zone',
     lambda t: ['--cloud=GCP', '--project=p', '--zone=us-central1'],
     'is a GCP region, not a zone'),
    ('gcp_zone_letter_missing',
     lambda t: ['--cloud=GCP', '--project=p', '--zone=us-central1-z'],
     'has no zone "z"'),
    ('aws_region_as_zone', lambda t: ['--cloud=AWS', '--zone=us-east-1'],
     'is an AWS region, not a zone'),
    ('gcp_zone_in_a_config',
     lambda t: ['--cloud=GCP', _Override(
         'vm_groups.servers.vm_spec.GCP.zone=europe-west1-a')],
     'europe-west1-a'),
    ('aws_type_on_gcp',
     lambda t: ['--cloud=GCP', '--machine_type=c6gn.4xlarge',
                '--machine_price=c6gn.4xlarge=1'],
     'is an AWS type'),
    ('gcp_type_on_aws',
     lambda t: ['--cloud=AWS', '--zone=us-east-1a',
                '--machine_type=t2d-standard-16'], 'is a GCP type'),
]


def _CheckRefused(proc, results_dir, run_uri, needle):
  assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
  assert 'Traceback' not in proc.stderr
  lines = proc.stderr.strip().splitlines()
  assert len(lines) == 1, proc.stderr
  assert lines[0].startswith('pkb: '), lines
  assert needle in lines[0], lines[0]
  assert not os.path.exists(os.path.join(results_dir, run_uri))


@pytest.mark.parametrize('build,needle', [c[1:] for c in _CASES],
                         ids=[c[0] for c in _CASES])
def test_refused_in_one_line_on_a_dry_run(tmp_path, build, needle):
  (tmp_path / 'afile').write_text('x')
  results_dir = tmp_path / 'results'
  # The subprocess timeout bounds it; speed is not asserted here (a shared
  # 2-core machine makes wall-clock limits in tests flaky).
  proc, run_uri = e2e.Run(['--dry_run'] + build(tmp_path), str(results_dir))
  _CheckRefused(proc, str(results_dir), run_uri, needle)


@pytest.mark.parametrize('missing,needle', [
    ('build', 'the YCSB binding is not built in'),
    ('java', 'java not found: install a JDK 17'),
])
def test_a_local_ycsb_dry_run_refuses_no_build_or_java(
    pkb_main, capsys, tmp_path, monkeypatch, missing, needle):
  # Without --ycsb_build_dir a Local dry run planned (exit 0) with no
  # build/ycsb or no java on PATH; prepare refused them, after the shards.
  from perfkitbenchmarker import trusted_programs  # pylint: disable=g-import-not-at-top
  from perfkitbenchmarker.linux_packages import ycsb  # pylint: disable=g-import-not-at-top
  which = trusted_programs.Which
  java = None if missing == 'java' else '/usr/bin/java'  # Never run here.
  monkeypatch.setattr(trusted_programs, 'Which', lambda program, what='': (
      java if program == 'java' else which(program, what)))
  if missing == 'build':
    monkeypatch.setattr(ycsb, 'LOCAL_BUILD_DIR', str(tmp_path / 'ycsb'))
  results = tmp_path / 'results'
  common = ['--dry_run', '--benchmarks=redis_ycsb', f'--results_dir={results}']
  code = pkb_main(common)
  err = capsys.readouterr().err
  assert code == 2 and err.count('\n') == 1, err
  assert err.startswith('pkb: ') and needle in err, err
  assert not results.exists()
  # Cloud VMs install java and build YCSB themselves.
  assert pkb_main(common + ['--cloud=GCP', '--project=p']) == 0, (
      capsys.readouterr().err)


@pytest.mark.parametrize('args,needle', [
    (['--redis_server_options=port 6500'], '"port"'),
    (['--timeout_minutes=0'], '--timeout_minutes'),
    (['--memtier_max_probes=0'], '--memtier_max_probes'),
])
def test_a_real_run_refuses_before_anything_starts(tmp_path, args, needle):
  proc, run_uri = e2e.Run(args, str(tmp_path))
  _CheckRefused(proc, str(tmp_path), run_uri, needle)
  assert os.listdir(tmp_path) == []


_NO_CREDENTIALS = {'GOOGLE_APPLICATION_CREDENTIALS': '/nonexistent/key.json',
                   'AWS_SHARED_CREDENTIALS_FILE': '/nonexistent/c',
                   'AWS_CONFIG_FILE': '/nonexistent/c',
                   'AWS_ACCESS_KEY_ID': '', 'AWS_WEB_IDENTITY_TOKEN_FILE': ''}


@pytest.mark.parametrize('args,needles', [
    (['--cloud=GCP', '--zone=us-central1-a'],
     ['--project', '--gcp_ssh_source_range', 'credentials']),
    (['--cloud=AWS', '--zone=us-east-1a'],
     ['--aws_ssh_source_cidr', 'AWS credentials']),
])
def test_a_cloud_run_names_everything_missing_at_once(tmp_path, args,
                                                      needles):
  # Issue 26 point 2: every missing flag and credential in one line, exit 2,
  # no run directory, and so no credential lookup (the metadata server).
  proc, run_uri = e2e.Run(args, str(tmp_path),
                          env={**os.environ, **_NO_CREDENTIALS})
  assert proc.returncode == 2, proc.stderr
  # The plan's warnings (clients under 4x the servers) may come first.
  errors_ = [l for l in proc.stderr.splitlines()
             if not l.startswith('WARNING')]
  assert len(errors_) == 1 and errors_[0].startswith('pkb: '), proc.stderr
  for needle in needles:
    assert needle in errors_[0], errors_[0]
  assert os.listdir(tmp_path) == []


def test_yaml_alias_bomb_is_refused_quickly(tmp_path):
  assert len(_ALIAS_BOMB) < 600
  # In process: the loader refuses it by counting expanded nodes (a bound,
  # not a timing); unbounded, this document expands to ~10^9 nodes and
  # would not finish within the subprocess timeout below.
  with pytest.raises(errors.ConfigError, match='alias bomb'):
    configs.LoadYaml(_ALIAS_BOMB, 'bomb.yaml')
  config = _Config(tmp_path, _ALIAS_BOMB)
  proc, run_uri = e2e.Run(['--dry_run', config], str(tmp_path))
  _CheckRefused(proc, str(tmp_path), run_uri, 'alias')


def test_anchors_used_a_few_times_still_load(tmp_path):
  # The default config itself uses an anchor and a merge key.
  config = _Config(tmp_path, 'redis_memtier:\n  vm_groups:\n    servers:\n'
                   '      vm_spec: &s {Local: {machine_type: local}}\n'
                   '    clients:\n      vm_spec: *s\n')
  proc, _ = e2e.Run(['--dry_run', config], str(tmp_path))
  assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize('flag,words', [
    ('--memtier_run_duration=1e9', '--memtier_run_duration=1e9 is not a '
     'whole number'),
    ('--memtier_latency_cap=abc', '--memtier_latency_cap=abc is not a number'),
])
def test_a_flag_of_the_wrong_type_is_named_in_words(tmp_path, flag, words):
  # Issue 26 point 5: no raw Python error ("invalid literal for int()").
  proc, run_uri = e2e.Run(['--dry_run', flag], str(tmp_path))
  _CheckRefused(proc, str(tmp_path), run_uri, words)
  assert 'int()' not in proc.stderr and 'float' not in proc.stderr


def test_enum_values_take_the_spelling_people_type(tmp_path):
  proc, _ = e2e.Run(['--dry_run', '--load_generator=redis-benchmark'],
                    str(tmp_path))
  assert proc.returncode == 0, proc.stderr
  assert 'clients: load generator redis_benchmark' in proc.stdout


def test_help_leads_with_the_knobs_a_first_study_turns(tmp_path):
  proc, _ = e2e.Run(['--help'], str(tmp_path))
  assert proc.returncode == 0
  knobs = proc.stdout.split('Run-level flags:')[0]
  for flag in ('--memtier_latency_cap', '--memtier_path', '--load_generator',
               '--redis_total_num_processes', '--redis_server_cluster_mode',
               '--memtier_clients', '--cloud', '--zone', '--machine_type',
               '--price_basis'):
    assert flag.lstrip('-') in knobs, flag
  assert '1-12 lowercase' in proc.stdout  # --run_uri's help, as its check
  # README says what --help shows and about how long it is (it said
  # "about 140 lines" of a help of 216, and left the knobs out).
  with open(os.path.join(e2e.REPO, 'README.md'), encoding='utf-8') as f:
    said = re.search(r'`\./pkb\.py --help` shows the knobs a\s+first study '
                     r'turns,[^(]*\(about (\d+) lines\)', f.read())
  assert said, 'README no longer says what --help shows'
  lines = len(proc.stdout.splitlines())
  assert abs(lines - int(said.group(1))) <= 0.1 * lines, lines


def test_a_dry_run_with_its_input_and_output_closed_plans_as_usual(tmp_path):
  # './pkb.py --dry_run >&-' ended in 'pkb: internal error AttributeError:
  # 'NoneType' object has no attribute 'write'' and a traceback, exit 120:
  # Python leaves sys.stdout None when descriptor 1 is closed at its start.
  # With 0 closed too, the next file pkb opened took descriptor 0 or 1.
  results_dir = tmp_path / 'results'
  proc = subprocess.run(
      ['bash', '-c', 'exec "$@" <&- >&-', 'pkb'] +
      e2e.Command(['--dry_run'], e2e.NewRunUri(), str(results_dir)),
      capture_output=True, text=True, timeout=e2e.HANG_GUARD_S, cwd=e2e.REPO,
      check=False)
  assert (proc.returncode, proc.stderr) == (0, '')


@pytest.mark.parametrize('command', [
    'pkb.py', 'scripts/compare.py', 'scripts/recompute.py',
    'scripts/secrets_exposure.py'])
def test_help_into_a_pipe_its_reader_closed_is_quiet(command):
  # `./scripts/compare.py --help | head -1`: head gone before the help is
  # written ended in a BrokenPipeError traceback, exit 1. A pipe whose
  # read end is closed is the same, every time.
  read_end, write_end = os.pipe()
  os.close(read_end)
  try:
    proc = subprocess.run([os.path.join(e2e.REPO, command), '--help'],
                          stdout=write_end, stderr=subprocess.PIPE,
                          text=True, timeout=120, check=False,
                          cwd=e2e.REPO)
  finally:
    os.close(write_end)
  assert (proc.returncode, proc.stderr) == (0, ''), proc.stderr
