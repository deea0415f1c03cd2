"""One validation path per flag: command line, config `flags:`, matrix axis.

Issue 18 point 4. Every int/float flag has finite bounds on its definition
(issue 27: absl's lower_bound/upper_bound, flag_types.DEFINE_float), and a
value is refused with the same line wherever it comes from; a matrix's cells
are counted before anything is expanded; --redis_server_options is read as
redis-server reads it (checked against the real redis-server); a VM spec's
text keys must be text; Local refuses more VMs than the machine can hold.
The end-to-end rows run ./pkb.py as a user does and check the one line.
"""

import copy
import math
import os
import subprocess
import time
import types

from absl import flags
import pytest

import e2e_support as e2e
from perfkitbenchmarker import configs
from perfkitbenchmarker import errors
from perfkitbenchmarker import flag_types
from perfkitbenchmarker import flags as pkb_flags
from perfkitbenchmarker import linux_benchmarks
from perfkitbenchmarker import matrix
from perfkitbenchmarker import pkb  # pylint: disable=unused-import  (flags)
from perfkitbenchmarker.linux_packages import redis_config
from perfkitbenchmarker.providers.local import limits as local_limits
from perfkitbenchmarker.providers.local import provider as local
from perfkitbenchmarker.study import options

FLAGS = pkb_flags.FLAGS
linux_benchmarks.BENCHMARKS  # pylint: disable=pointless-statement  (flags)


def _Numeric():
  # Only the product's flags: a script's own flags (scripts/bench_search.py,
  # imported by another test in this process) are not the product's inputs.
  return [name for name in sorted(FLAGS) if FLAGS[name].name == name and
          isinstance(FLAGS[name].parser, (flags.IntegerParser,
                                          flags.FloatParser,
                                          flag_types.IntegerListParser)) and
          (FLAGS.find_module_defining_flag(name) or '').startswith(
              'perfkitbenchmarker')]


def test_flags_defined_through_flag_types_are_their_callers():
  # absl files a flag under the module that called DEFINE: --helpfull listed
  # about 20 of them (--memtier_latency_cap, --timeout_minutes, ...) under
  # 'perfkitbenchmarker.flag_types:', the wrappers' own module.
  assert FLAGS.find_module_defining_flag('memtier_cap_margin') == (
      'perfkitbenchmarker.study.flags')
  assert FLAGS.find_module_defining_flag('memtier_clients') == (
      'perfkitbenchmarker.load_generators.flags')
  assert not [name for name in FLAGS if FLAGS.find_module_defining_flag(
      name) == flag_types.__name__]


def test_every_numeric_flag_declares_finite_bounds_around_its_default():
  names = _Numeric()
  assert len(names) > 60  # Every module's flags are defined.
  for name in names:
    parser = FLAGS[name].parser
    assert parser.lower_bound is not None and parser.upper_bound is not None, (
        f'--{name}: give its definition lower_bound and upper_bound')
    assert math.isfinite(parser.lower_bound), name
    assert math.isfinite(parser.upper_bound), name
    if isinstance(parser, flags.FloatParser):  # nan passes absl's bounds.
      assert isinstance(parser, flag_types.FiniteFloatParser), (
          f'--{name}: define it with flag_types.DEFINE_float')
    default = FLAGS[name].default
    if default is not None:
      parser.parse(default)  # Defaults are in bounds.


def _CommandLine(name, value):
  """The line pkb prints for --name=value (absl parses it with the flag)."""
  scratch = copy.deepcopy(FLAGS[name])
  with pytest.raises(flags.Error) as failure:
    scratch.parse(str(value))
  return pkb_flags.FlagErrorLine(failure.value)


@pytest.mark.parametrize('name,value', [
    ('timeout_minutes', -1), ('timeout_minutes', float('nan')),
    ('timeout_minutes', 1e308), ('timeout_minutes', 0),
    ('max_cost_usd', float('nan')), ('bq_timeout_seconds', float('inf')),
    ('bq_timeout_seconds', 0), ('memtier_latency_cap', 0),
    # Accepted, and the console printed a 306-character cap.
    ('memtier_latency_cap', 1e-300),
    ('memtier_clients', 100000), ('memtier_pipeline', 10 ** 9),
])
def test_a_bad_value_is_one_line_from_every_source(name, value):
  lines = [_CommandLine(name, value)]
  for where in ('Config', 'Config flags'):
    with pytest.raises(errors.UsageError) as config:
      configs.ParseConfigValue(FLAGS, name, value, where)
    lines.append(str(config.value))
  for line in lines:
    assert f'--{name}=' in line and '\n' not in line, line
  # The same words after the source.
  assert len({line.split(f'--{name}=', 1)[1] for line in lines}) == 1, lines
  if name == 'memtier_clients':
    assert '10000' in lines[0]  # Names the limit, no clamping.


@pytest.mark.parametrize('name,value,parsed', [
    ('memtier_clients', '1,x', None), ('memtier_clients', '100000', None),
    ('memtier_latency_cap', '-1', '-1.0'), ('load_generator', 'foo', None),
    ('cloud', 'Nope', None), ('memtier_clients', '1,' * 80 + 'x', None),
])
def test_a_bad_value_is_quoted_once(name, value, parsed):
  """absl says "flag --name=VALUE: " and its parser then names the value
  again ("1,x" is not ..., -1.0 is not ...): one line says it once (values
  over 200 characters were quoted once already)."""
  line = _CommandLine(name, value)
  assert line.count(value) == 1, line
  assert not parsed or parsed not in line, line


@pytest.mark.parametrize('name,value', [
    ('cloud', 'GCP\x1b]0;pwned\x07'),  # sets the terminal's title
    ('memtier_latency_cap', '1\x1b[2J'),  # clears the screen
    ('accept_unconfirmed', 'a\nb'),  # a second line
    ('memtier_clients', '1,\rx'),  # rewrites the line
    ('benchmarks', 'a\nb'),
])
def test_a_bad_value_with_controls_is_one_inert_line(name, value):
  """The value is quoted as terminal_text.Printable shows read text: a
  newline in it made the refusal two lines, and ESC sequences acted on the
  terminal (./pkb.py --cloud=$'GCP\\e]0;pwned\\a' set the window title)."""
  line = _CommandLine(name, value)
  assert line.isprintable(), repr(line)
  assert f'--{name}=' in line, line


def test_a_list_value_is_checked_item_by_item():
  with pytest.raises(errors.UsageError, match='100000'):
    configs.ParseConfigValue(FLAGS, 'memtier_clients', [4, 100000])
  assert configs.ParseConfigValue(FLAGS, 'memtier_clients', [4, 8]) == [4, 8]


def test_a_list_for_a_repeatable_flag_is_its_values():
  # As upstream PKB's config flags: each item one value. Joined with
  # commas, `zone: [us-central1-a, us-central1-b]` was refused as the one
  # zone 'us-central1-a,us-central1-b', and two --data_search_paths were
  # one directory named '/tmp,/usr'.
  zones = ['us-central1-a', 'us-central1-b']
  assert configs.ParseConfigValue(FLAGS, 'zone', zones) == zones
  assert configs.ParseConfigValue(FLAGS, 'data_search_paths',
                                  ['/tmp', '/usr']) == ['/tmp', '/usr']
  assert configs.ParseConfigValue(FLAGS, 'zone', 'us-east-1a') == [
      'us-east-1a']


# Counting, not expanding: 10^9 cells would take hours (and more memory than
# the machine has); the hang guard is far above counting's milliseconds.
@pytest.mark.timeout(120)
def test_matrix_cells_are_counted_before_expansion():
  axis = list(range(10))
  config = {'redis_memtier': {'flag_matrix': 'm', 'flag_matrix_defs': {'m': {
      f'memtier_{k}': axis for k in ('data_size', 'pipeline', 'clients',
                                     'key_maximum', 'run_duration',
                                     'max_probes', 'min_threads',
                                     'max_threads', 'confirm_repeats')}}}}
  with pytest.raises(errors.ConfigError, match='1,000,000,000 cells'):
    matrix.Expand(config, ['redis_memtier'])
  config['redis_memtier']['flag_matrix_defs']['m'] = {
      'memtier_clients': list(range(1, 101)),
      'memtier_pipeline': list(range(1, 101)),
      'memtier_data_size': [1, 2]}
  with pytest.raises(errors.ConfigError, match='20,000 cells'):
    matrix.Expand(config, ['redis_memtier'])


def test_matrix_axis_values_go_through_the_flag_check():
  seen = []

  def Check(where, name, value):
    seen.append((where, name, value))
    configs.ParseConfigValue(FLAGS, name, value, f'Config {where}')

  config = {'flags': {'memtier_data_size': 10},
            'redis_memtier': {'flag_matrix': 'm', 'flag_matrix_defs': {
                'm': {'timeout_minutes': [1, 2, -1]}}}}
  with pytest.raises(errors.UsageError, match='--timeout_minutes=-1'):
    matrix.Expand(config, ['redis_memtier'], check_flag=Check)
  assert ('flags', 'memtier_data_size', 10) in seen
  config['redis_memtier']['flag_matrix_defs']['m']['timeout_minutes'] = [1, 2]
  assert len(matrix.Expand(config, ['redis_memtier'], check_flag=Check)) == 2


# Each variant sets the port; redis-server must agree that it does.
_PORT_SPELLINGS = ['port {p}', "'port' {p}", '"port" {p}', 'PoRt {p}',
                   'po"rt" {p}', '"\\x70ort" {p}', "  port\t{p}"]


@pytest.mark.e2e
@pytest.mark.parametrize('spelling', _PORT_SPELLINGS)
def test_server_options_are_read_as_redis_server_reads_them(tmp_path,
                                                             spelling):
  server = e2e.RequireTool('redis-server')
  port = e2e.FreePort()
  line = spelling.format(p=port)
  assert redis_config.Directive(line) == 'port'
  with pytest.raises(errors.UsageError, match='"port" is set by the harness'):
    options.CheckServerOption(line)
  # The real redis-server takes that line as its port.
  conf = tmp_path / 'r.conf'
  conf.write_text(f'{line}\nbind 127.0.0.1\nsave ""\ndir {tmp_path}\n')
  proc = subprocess.Popen([server, str(conf)], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT)
  try:
    cli = e2e.RequireTool('redis-cli')
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
      out = subprocess.run([cli, '-p', str(port), 'ping'], capture_output=True,
                           text=True, timeout=5).stdout
      if 'PONG' in out:
        break
      time.sleep(0.05)
    assert 'PONG' in out
  finally:
    proc.kill()
    proc.wait()


@pytest.mark.e2e
@pytest.mark.parametrize('line', ['"port 7000', '"port"x 7000', "'port"])
def test_lines_redis_server_refuses_are_refused(tmp_path, line):
  assert redis_config.Directive(line) is None
  with pytest.raises(errors.UsageError, match='unbalanced quotes'):
    options.CheckServerOption(line)
  server = e2e.RequireTool('redis-server')
  conf = tmp_path / 'r.conf'
  conf.write_text(f'{line}\n')
  proc = subprocess.run([server, str(conf)], capture_output=True, text=True,
                        timeout=10)
  assert proc.returncode != 0 and 'quotes' in proc.stdout + proc.stderr


def test_a_line_break_in_a_server_option_is_refused():
  with pytest.raises(errors.UsageError, match='line break'):
    options.CheckServerOption('maxclients 10\nport 6500')


def test_local_vms_beyond_the_cores_are_refused_or_warned():
  with pytest.raises(errors.UsageError, match='41 Local VMs'):
    local.FitWarnings(41, cores=2)
  assert 'share' in local.FitWarnings(3, cores=2)[0]
  assert local.FitWarnings(2, cores=2) == []


def _Refused(proc, needle):
  assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
  assert 'Traceback' not in proc.stderr
  lines = proc.stderr.strip().splitlines()
  assert len(lines) == 1 and lines[0].startswith('pkb: '), proc.stderr
  assert needle in lines[0], lines[0]


@pytest.mark.e2e
@pytest.mark.parametrize('text,args,needle', [
    ('flags: {timeout_minutes: -1}\n', [], '--timeout_minutes=-1'),
    ('redis_memtier:\n  flag_matrix: m\n  flag_matrix_defs:\n    m:\n'
     '      timeout_minutes: [1, -1]\n', [], '--timeout_minutes=-1'),
    ('redis_memtier:\n  flag_matrix: m\n  flag_matrix_defs:\n    m:\n' +
     ''.join(f'      memtier_{k}: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]\n'
             for k in ('data_size', 'pipeline', 'clients', 'key_maximum',
                       'run_duration', 'max_probes', 'min_threads',
                       'max_threads', 'confirm_repeats')),
     ['--dry_run'], '1,000,000,000 cells'),
    ('redis_memtier:\n  vm_groups:\n    servers:\n      vm_spec:\n'
     '        Local:\n          machine_type: 123\n', [],
     'machine_type must be text'),
    ('', ['--max_cost_usd=nan'], '--max_cost_usd=nan'),
    ('', ["--redis_server_options='port' 6502"], '"port"'),
], ids=['config_flags', 'matrix_axis', 'matrix_1e9', 'machine_type_123',
        'max_cost_nan', 'quoted_port'])
def test_pkb_refuses_before_anything_starts(tmp_path, text, args, needle):
  if text:
    path = tmp_path / 'c.yaml'
    path.write_text(text)
    assert len(text) < 700
    args = args + [f'--benchmark_config_file={path}']
  results = tmp_path / 'results'
  proc, _ = e2e.Run(args, str(results))
  _Refused(proc, needle)
  # Nothing started: no run directory, no matrix directory.
  assert not results.exists() or os.listdir(results) == []
  assert not (tmp_path / 'matrix').exists()


@pytest.mark.parametrize('argv,shown', [
    (['memtier_latency_cap=0.5'], "'memtier_latency_cap=0.5'"),
    (['--dry_run', 'yes', 'extra'], "'yes' (and 1 more)"),
    (['--', '--dry_run'], "'--dry_run'"),
])
def test_an_argument_that_is_no_flag_is_refused_before_anything_starts(
    pkb_main, tmp_path, capsys, argv, shown):
  # Upstream's pkb refuses positional arguments too; here they were
  # dropped, and `./pkb.py memtier_latency_cap=0.5` ran the default study.
  results = tmp_path / 'results'
  code = pkb_main([f'--results_dir={results}'] + argv)
  out, err = capsys.readouterr()
  assert code == pkb.EXIT_USAGE
  assert (out, err) == ('', f'pkb: unexpected argument {shown}: pkb takes '
                        'flags only (--name=value); see ./pkb.py --helpfull.\n')
  assert not results.exists()


def test_a_flagfile_that_cannot_be_read_is_one_line(pkb_main, tmp_path,
                                                    capsys):
  """absl reads each --flagfile (and those it names) whole as UTF-8 with
  open(): a Latin-1 comment was a traceback, a FIFO waited for ever and
  /dev/zero filled the memory, all before pkb could say anything."""
  latin = tmp_path / 'latin.flags'
  latin.write_bytes(b'# r\xe9sum\xe9\n--memtier_run_duration=1\n')
  fifo = tmp_path / 'fifo'
  os.mkfifo(fifo)
  nested = tmp_path / 'nested.flags'
  nested.write_text(f'--dry_run\n--flagfile={fifo}\n')
  for arg, words in [
      (f'--flagfile={latin}', f'--flagfile={latin} is not UTF-8 text (byte '
       '0xe9 at offset 3)'),
      (f'--flagfile={fifo}', 'cannot read it: not a regular file (a FIFO)'),
      (f'--flagfile={nested}', f'--flagfile={fifo}: cannot read it'),
      ('--flagfile=/dev/zero', 'not a regular file')]:
    code = pkb_main(['--dry_run', arg])
    err = capsys.readouterr().err
    assert code == pkb.EXIT_USAGE and err.count('\n') == 1, err
    assert err.startswith('pkb: ') and words in err, err


def test_an_argument_that_is_not_utf8_is_one_line(capsys):
  """A byte that does not decode (os.fsdecode's lone surrogate) passed
  every check: --owner=$'\\xff' ran the whole study to its first sample,
  which no results file could hold ('internal error UnicodeEncodeError')."""
  code = pkb.Main(['pkb.py', '--dry_run', '--owner=Jos\udce9'])
  err = capsys.readouterr().err
  assert code == pkb.EXIT_USAGE and err.count('\n') == 1, err
  assert 'is not UTF-8 text (byte 0xe9 at offset 11)' in err, err


@pytest.mark.parametrize('owner, words', [
    (' ', '--owner=" " is blank; give a name'),
    ('', '--owner="" is blank'),
    ('a\x1b[2J', '--owner="a\\x1b[2J" must be printable text on one line'),
])
def test_a_blank_or_unprintable_owner_is_one_line(pkb_main, capsys, owner,
                                                   words):
  # It labels the run's cloud resources and every sample: ' ' was taken
  # (GCP's label '-', every sample's owner ' '), and so was an escape.
  code = pkb_main(['--dry_run', f'--owner={owner}'])
  err = capsys.readouterr().err
  assert code == pkb.EXIT_USAGE and err.count('\n') == 1, err
  assert err.startswith('pkb: ') and words in err, err


def test_a_blank_owner_from_a_config_is_one_line(pkb_main, capsys, tmp_path):
  # A config's flags: apply after the command line's checks: 'flags:
  # {owner: " "}' was planned (exit 0).
  config = tmp_path / 'owner.yaml'
  config.write_text('flags:\n  owner: " "\n')
  code = pkb_main(['--dry_run', f'--benchmark_config_file={config}',
                   f'--results_dir={tmp_path}'])
  err = capsys.readouterr().err
  assert code == pkb.EXIT_USAGE and err.count('\n') == 1, err
  assert '--owner=" " is blank; give a name' in err, err


@pytest.mark.parametrize('cloud, flag', [
    ('GCP', 'zone'), ('GCP', 'project'), ('GCP', 'gcp_network'),
    ('GCP', 'gcp_boot_disk_type'), ('GCP', 'gcp_ssh_user'),
    ('AWS', 'aws_profile'), ('AWS', 'aws_ssh_source_cidr')])
def test_a_cloud_name_with_a_control_character_is_one_line(
    pkb_main, capsys, tmp_path, cloud, flag):
  # A dry run planned them (exit 0), as configs.py refuses in a config's
  # names: they go into API calls, labels, the record and the plan's lines.
  code = pkb_main(['--dry_run', f'--cloud={cloud}', '--project=p',
                   f'--results_dir={tmp_path}', f'--{flag}=a\x1b[2J'])
  err = capsys.readouterr().err
  assert code == pkb.EXIT_USAGE and err.count('\n') == 1, err
  assert f'--{flag}="a\\x1b[2J" must be printable text on one line' in err


def test_a_zone_with_a_control_character_is_refused_in_one_wording(
    pkb_main, capsys, tmp_path):
  # As a flag: '--zone="us-central1-a\x1b[2J" must be printable text on one
  # line; give it without control characters.'; through --config_override
  # (or a config file's vm_spec) the older 'redis_memtier: vm_groups.servers.
  # vm_spec.GCP.zone must be printable text on one line, not "...".'
  zone = 'us-central1-a\x1b[2J'
  refusals = []
  for given in (f'--zone={zone}', '--config_override=redis_memtier.vm_groups.'
                f'servers.vm_spec.GCP.zone="{zone}"'.replace('\x1b', '\\e')):
    code = pkb_main(['--dry_run', '--cloud=GCP', '--project=p',
                     f'--results_dir={tmp_path}', given])
    err = capsys.readouterr().err
    assert code == pkb.EXIT_USAGE and err.count('\n') == 1, err
    refusals.append(err)
  words = ('="us-central1-a\\x1b[2J" must be printable text on one line; '
           'give it without control characters.\n')
  assert refusals == [
      'pkb: --zone' + words,
      'pkb: redis_memtier: vm_groups.servers.vm_spec.GCP.zone' + words]


def test_a_local_zone_from_a_config_is_refused_as_the_flag_is(
    pkb_main, capsys, tmp_path):
  # --zone on Local is refused; a config's vm_spec.Local.zone was taken:
  # the plan said '1 x local in europe-west4-a' (and every sample its zone)
  # for this machine.
  refusals = []
  for given in ('--zone=europe-west4-a', '--config_override=redis_memtier.'
                'vm_groups.servers.vm_spec.Local.zone=europe-west4-a'):
    code = pkb_main(['--dry_run', f'--results_dir={tmp_path}', given])
    err = capsys.readouterr().err
    assert code == pkb.EXIT_USAGE and err.count('\n') == 1, err
    refusals.append(err)
  assert refusals == [
      'pkb: --zone=europe-west4-a: Local runs on this machine; drop the flag '
      'or choose a --cloud.\n',
      'pkb: redis_memtier: vm_groups.servers.vm_spec.Local.zone='
      'europe-west4-a: Local runs on this machine; drop it or choose a '
      '--cloud.\n']


def test_an_owner_from_the_environment_that_is_not_utf8_is_one_line(
    monkeypatch, capsys):
  # LOGNAME=$'\xff': the run stopped at its first sample, as --owner did.
  monkeypatch.setenv('LOGNAME', 'Jos\udce9')
  FLAGS.unparse_flags()
  code = pkb.Main(['pkb.py', '--dry_run'])
  err = capsys.readouterr().err
  FLAGS.unparse_flags()
  assert code == pkb.EXIT_USAGE and err.count('\n') == 1, err
  assert "owner 'Jos\\udce9', from the environment" in err, err
  assert 'is not UTF-8 text (byte 0xe9 at offset 3)' in err, err
  assert 'give --owner' in err


def test_the_cloud_a_config_names_is_the_one_flags_are_checked_for(
    pkb_main, tmp_path, capsys, monkeypatch, private_key_dir):
  """The nightly cells name their cloud in their flags: section; the run
  level checks ran for the command line's (Local) before the config was
  read: --zone and --machine_type were refused ('Local runs on this
  machine') for a GCP run, and PKB_KEY_DIR inside --results_dir was
  accepted, the cell's SSH key to be kept with its results."""
  config = tmp_path / 'gcp.yaml'
  config.write_text('redis_memtier:\n  flags: {cloud: GCP}\n')
  results = tmp_path / 'results'
  args = ['--dry_run', f'--benchmark_config_file={config}',
          f'--results_dir={results}']
  assert pkb_main(args + ['--zone=us-central1-b']) == pkb.EXIT_OK
  assert 'in us-central1-b' in capsys.readouterr().out
  assert pkb_main(args + ['--local_server_cpu_quota=0.5']) == pkb.EXIT_USAGE
  assert 'this run is on GCP' in capsys.readouterr().err
  monkeypatch.setenv('PKB_KEY_DIR', str(results / 'keys'))
  assert pkb_main(args) == pkb.EXIT_USAGE
  assert 'is inside the results directory' in capsys.readouterr().err
  # A matrix cell naming its cloud: the parent checks it for that cloud.
  config.write_text('flags: {memtier_run_duration: 2}\n'
                    'redis_memtier:\n  flags: {cloud: GCP}\n')
  assert pkb_main(args) == pkb.EXIT_USAGE
  assert 'cell 1 (redis_memtier): PKB_KEY_DIR=' in capsys.readouterr().err
  monkeypatch.setenv('PKB_KEY_DIR', private_key_dir)
  assert pkb_main(args + ['--zone=us-central1-b']) == pkb.EXIT_OK
  assert not results.exists()


def test_what_this_machine_would_not_let_local_shards_do_is_refused_first(
    pkb_main, capsys, tmp_path, monkeypatch):
  # Without CAP_NET_BIND_SERVICE (not root), '--redis_start_port=100' failed
  # once the shards started ('bind: Permission denied', exit 1); under a
  # hard open-file limit of 1,024 a probe of 1,024 connections was refused
  # by the shard (Redis lowers maxclients to the limit less 32), 0 samples.
  monkeypatch.setattr(local_limits, '_Capable', lambda bit: False)
  monkeypatch.setattr(local_limits, 'FirstUnprivilegedPort', lambda: 1024)
  monkeypatch.setattr(local_limits, 'resource', types.SimpleNamespace(
      RLIMIT_NOFILE=7, RLIM_INFINITY=-1, getrlimit=lambda which: (1024, 1024)))
  refusals = []
  for given in (['--redis_start_port=100',
                 '--memtier_adaptive_max_connections=992'],
                ['--memtier_adaptive_max_connections=1000']):
    code = pkb_main(['--dry_run', f'--results_dir={tmp_path}', *given])
    err = capsys.readouterr().err
    assert code == pkb.EXIT_USAGE and err.count('\n') == 1, err
    refusals.append(err)
  assert refusals == [
      'pkb: --redis_start_port=100: a port below 1024 needs root '
      '(CAP_NET_BIND_SERVICE) on this machine, and this run does not have '
      'it; give --redis_start_port=1024 or more (default 7001), or run as '
      'root.\n',
      'pkb: --memtier_adaptive_max_connections=1000 over 1 client VM(s) and '
      '1 shard(s) means 1,000 connections per shard, above the 992 Redis '
      'takes here (its open-file limit, ulimit -Hn 1,024, less 32); lower '
      'it, or raise the limit (ulimit -Hn, as root) for the run.\n']
  assert pkb_main(['--dry_run', f'--results_dir={tmp_path}',
                   '--redis_start_port=1024',
                   '--memtier_adaptive_max_connections=992']) == 0
