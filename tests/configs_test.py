"""Config merging: module YAML < config file < overrides < dedicated flags."""

import os

import pytest

from perfkitbenchmarker import configs
from perfkitbenchmarker import errors

DEFAULT = configs.LoadYaml("""
bench:
  description: d
  vm_groups:
    servers:
      vm_spec: &spec
        Local: {machine_type: local, num_cpus: 1}
        GCP: {machine_type: t2d-standard-16, zone: us-central1-a}
      vm_count: 1
    clients:
      vm_spec: *spec
      vm_count: 1
  flags: {}
""", 'test')['bench']


def test_anchor_is_shared_but_merge_does_not_alias():
  config = configs.MergeConfigs(
      'bench', DEFAULT, None,
      ['bench.vm_groups.clients.vm_spec.GCP.machine_type=n2-standard-32'])
  assert config['vm_groups']['clients']['vm_spec']['GCP'][
      'machine_type'] == 'n2-standard-32'
  assert config['vm_groups']['servers']['vm_spec']['GCP'][
      'machine_type'] == 't2d-standard-16'


def test_file_then_override_order():
  text = """
bench:
  vm_groups:
    servers:
      vm_count: 2
  flags:
    memtier_run_duration: 5
"""
  config = configs.MergeConfigs(
      'bench', DEFAULT, text, ['bench.vm_groups.servers.vm_count=3'])
  assert config['vm_groups']['servers']['vm_count'] == 3
  assert config['flags'] == {'memtier_run_duration': 5}
  # The file's value stands when no override touches it.
  config = configs.MergeConfigs('bench', DEFAULT, text, [])
  assert config['vm_groups']['servers']['vm_count'] == 2


def test_override_yaml_types():
  config = configs.MergeConfigs('bench', DEFAULT, None, [
      'bench.vm_groups.servers.vm_spec.Local.num_cpus=2',
      'bench.flags.redis_server_cluster_mode=true'])
  assert config['vm_groups']['servers']['vm_spec']['Local']['num_cpus'] == 2
  assert config['flags']['redis_server_cluster_mode'] is True


def test_override_for_other_benchmark_ignored():
  config = configs.MergeConfigs('bench', DEFAULT, None,
                                ['other.vm_groups.servers.vm_count=9'])
  assert config['vm_groups']['servers']['vm_count'] == 1


@pytest.mark.parametrize('override,needle', [
    ('bench.vm_groups.servers.vm_count', 'has no "="'),
    ('bench=3', 'must be <benchmark>.<path.to.key>'),
    ('bench.vm_groupz.servers.vm_count=2', 'unknown key "vm_groupz"'),
    ('bench.vm_groups.servers.vm_cnt=2', 'vm_groups.servers.vm_cnt is unknown'),
    ('bench.vm_groups.servers.vm_spec.GCP.machine_typo=x',
     'vm_groups.servers.vm_spec.GCP.machine_typo is unknown'),
    ('bench.vm_groups.servers.vm_count=[1, 2', 'invalid YAML'),
    ('bench.description.x=1', '"description" is a value, not a section'),
    # Its parts nest the value: 3,000 (6 KB) ended in a RecursionError.
    ('bench.flags.' + '.'.join(['a'] * 3000) + '=1',
     'the key has 3,002 parts; a config nests at most 100 levels.'),
])
def test_bad_overrides(override, needle):
  with pytest.raises(errors.ConfigError) as e:
    configs.MergeConfigs('bench', DEFAULT, None, [override])
  assert needle in str(e.value)
  assert '\n' not in str(e.value)


def test_unknown_key_in_file_is_named():
  with pytest.raises(errors.ConfigError, match='vm_groups.servers.colour'):
    configs.MergeConfigs('bench', DEFAULT,
                         'bench:\n  vm_groups:\n    servers:\n      colour: 1\n',
                         [])


def test_pkbs_static_vms_are_refused_not_ignored():
  # A PKB config naming its machines in a group would otherwise run on
  # new VMs of the provider instead, silently.
  with pytest.raises(errors.ConfigError) as e:
    configs.MergeConfigs(
        'bench', DEFAULT, 'bench:\n  vm_groups:\n    servers:\n      '
        'static_vms:\n        - ip_address: 10.0.0.1\n', [])
  assert 'vm_groups.servers.static_vms' in str(e.value)
  assert '--static_vm_file' in str(e.value)
  assert '\n' not in str(e.value)


def test_a_vm_spec_naming_no_cloud_is_refused_not_ignored():
  # 'gcp' for GCP was skipped: the run took the default's machine type.
  with pytest.raises(errors.ConfigError) as e:
    configs.MergeConfigs(
        'bench', DEFAULT, 'bench:\n  vm_groups:\n    servers:\n      '
        'vm_spec:\n        gcp: {machine_type: n2-standard-8}\n', [])
  assert "vm_groups.servers.vm_spec names no cloud: 'gcp'" in str(e.value)
  assert '\n' not in str(e.value)
  # Upstream PKB's other clouds are not this harness's, and not wrong.
  config = configs.MergeConfigs(
      'bench', DEFAULT, 'bench:\n  vm_groups:\n    servers:\n      '
      'vm_spec:\n        Azure: {machine_type: Standard_D2s_v5}\n', [])
  assert 'Azure' in config['vm_groups']['servers']['vm_spec']


def test_optional_vm_spec_keys_allowed():
  config = configs.MergeConfigs(
      'bench', DEFAULT, None,
      ['bench.vm_groups.servers.vm_spec.Local.priced_as=AWS:c6gn.xlarge'])
  assert config['vm_groups']['servers']['vm_spec']['Local'][
      'priced_as'] == 'AWS:c6gn.xlarge'


@pytest.mark.parametrize('flag', ['flag_matrix', 'flag_zip', 'run_processes'])
def test_the_matrix_flags_in_a_configs_flags_are_refused(flag):
  # Read before any config's flags: were applied: 'flags: {flag_matrix: m}'
  # ran one plain run, not matrix m, without a word.
  with pytest.raises(errors.ConfigError) as e:
    configs.CheckUserConfig({'bench': {'flags': {flag: 'm'}}}, ['bench'])
  assert f'sets --{flag}, which names the run itself' in str(e.value)


def test_override_naming_absent_benchmark_is_error():
  with pytest.raises(errors.ConfigError, match='not in --benchmarks'):
    configs.CheckOverridesNameBenchmarks(['nope.a=1'], ['bench'])


def test_apply_config_flags(pkb_flags):
  configs.ApplyConfigFlags({'memtier_run_duration': 7,
                            'redis_server_cluster_mode': True}, pkb_flags)
  assert pkb_flags.memtier_run_duration == 7
  assert pkb_flags.redis_server_cluster_mode is True
  with pytest.raises(errors.ConfigError, match='unknown flag "no_such_flag"'):
    configs.ApplyConfigFlags({'no_such_flag': 1}, pkb_flags)
  with pytest.raises(errors.ConfigError, match='memtier_run_duration'):
    configs.ApplyConfigFlags({'memtier_run_duration': 'soon'}, pkb_flags)


def test_command_line_flag_wins_over_config(pkb_flags):
  pkb_flags['memtier_run_duration'].parse('3')
  pkb_flags['memtier_run_duration'].present = 1
  configs.ApplyConfigFlags({'memtier_run_duration': 9}, pkb_flags)
  assert pkb_flags.memtier_run_duration == 3


def test_a_config_file_that_is_no_regular_file_or_too_big_is_one_line(
    tmp_path):
  # A FIFO waited for a writer for ever, /dev/zero ended in MemoryError.
  fifo = str(tmp_path / 'config.fifo')
  os.mkfifo(fifo, 0o600)
  big = tmp_path / 'big.yaml'
  big.write_text('#' * (configs.MAX_CONFIG_BYTES + 1))
  for path, needle in ((fifo, 'not a regular file (a FIFO)'),
                       ('/dev/zero', 'not a regular file (a device)'),
                       (str(big), '4,194,305 bytes, more than the 4,194,304')):
    with pytest.raises(errors.UsageError) as raised:
      configs.ReadConfigFile(path)
    message = str(raised.value)
    assert message.startswith(
        f'--benchmark_config_file: cannot read {path}: '), message
    assert needle in message and '\n' not in message


@pytest.mark.parametrize('text', [
    'bench:\n  flags:\n    memtier_clients: ' + '[' * 5000 + ']' * 5000,
    'bench: ' + '{a: ' * 3000 + '1' + '}' * 3000,
    'bench:\n' + ''.join('  ' * i + f'a{i}:\n' for i in range(1, 2000)),
])
def test_a_config_nested_past_the_bound_is_one_line(text):
  # PyYAML composes a level a call: 5,000 brackets (10 KB) ended in
  # 'pkb: internal error RecursionError: maximum recursion depth exceeded'
  # after a Python traceback.
  with pytest.raises(errors.ConfigError) as raised:
    configs.LoadYaml(text, '--benchmark_config_file')
  message = str(raised.value)
  assert message.startswith('--benchmark_config_file: YAML nested more than '
                            f'{configs.MAX_DEPTH} levels deep (at line ')
  assert '\n' not in message
  nested = 'bench: ' + '[' * (configs.MAX_DEPTH - 1) + ']' * (
      configs.MAX_DEPTH - 1)
  assert configs.LoadYaml(nested, 'x')['bench'] is not None


def test_a_ratio_written_unquoted_is_text_not_base_60():
  # YAML 1.1 reads 1:4 as 64 (base 60), so upstream's 'memtier_ratio: 1:4'
  # was refused as '--memtier_ratio="64" must be SET:GET like 1:1 ...'.
  loaded = configs.LoadYaml(
      'flags: {memtier_ratio: 1:4, memtier_ratios: [1:1, 4:1, 1:0],'
      ' memtier_run_duration: 1_0, memtier_cap_margin: 0.5}', 'x')['flags']
  assert loaded == {'memtier_ratio': '1:4',
                    'memtier_ratios': ['1:1', '4:1', '1:0'],
                    'memtier_run_duration': 10, 'memtier_cap_margin': 0.5}


@pytest.mark.parametrize('text,key,lines', [
    ('bench:\n  flags: {memtier_run_duration: 1}\n'
     'bench:\n  flags: {memtier_run_duration: 5}\n', 'bench', '1 and 3'),
    ('bench:\n  flags:\n    memtier_run_duration: 1\n'
     '    memtier_run_duration: 2\n', 'memtier_run_duration', '3 and 4'),
])
def test_a_key_given_twice_in_one_mapping_is_refused(text, key, lines):
  # PyYAML keeps the last: a second section of one name dropped the first.
  with pytest.raises(errors.ConfigError) as e:
    configs.LoadYaml(text, '--benchmark_config_file')
  assert str(e.value) == (
      f'--benchmark_config_file: key "{key}" is given twice in one mapping '
      f'(lines {lines}); YAML would keep the second alone: merge them or '
      'rename one.')
  # A key a merge brings is the one to override.
  assert configs.LoadYaml('a: &a {x: 1, y: 2}\nb: {<<: *a, x: 3}\n',
                          'x')['b'] == {'x': 3, 'y': 2}


def test_a_vm_spec_name_with_a_control_character_is_refused():
  # Local takes any machine_type: "\e[31mred" reached the terminal as a
  # colour sequence in the dry run's 'servers: 1 x ...' line.
  with pytest.raises(errors.ConfigError) as e:
    configs.MergeConfigs(
        'bench', DEFAULT, 'bench:\n  vm_groups:\n    servers:\n      '
        'vm_spec:\n        Local: {machine_type: "\\e[31mred"}\n', [])
  assert str(e.value) == (
      'bench: vm_groups.servers.vm_spec.Local.machine_type="\\x1b[31mred" '
      'must be printable text on one line; give it without control '
      'characters.')
  config = configs.MergeConfigs(
      'bench', DEFAULT, None,
      ['bench.vm_groups.servers.vm_spec.Local.machine_type=café-1'])
  assert config['vm_groups']['servers']['vm_spec']['Local'][
      'machine_type'] == 'café-1'
