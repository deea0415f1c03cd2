"""Core command-line flags, named as in PerfKit Benchmarker.

Benchmark-, package- and provider-specific flags live next to the code that
reads them (for example `linux_packages/redis_server.py`), as in PKB; this
module only holds the flags every run has.
"""

import os
import re
import textwrap
from typing import List

from absl import flags

from perfkitbenchmarker import errors
from perfkitbenchmarker import flag_types
from perfkitbenchmarker import regular_files
from perfkitbenchmarker import terminal_text

CLOUDS = ('Local', 'GCP', 'AWS')
RUN_STAGES = ('provision', 'prepare', 'run', 'cleanup', 'teardown')

flags.DEFINE_list('benchmarks', ['redis_memtier'],
                  'Benchmarks to run, by BENCHMARK_NAME (upstream PKB\'s '
                  'default is cluster_boot; ours is the Redis study).')
flags.DEFINE_enum('cloud', 'Local', CLOUDS,
                  'Where the VMs run. Local needs no cloud account (upstream '
                  'PKB defaults to GCP; ours to Local, which costs nothing).')
flags.DEFINE_string('machine_type', None,
                    'Machine type of the server VMs (the machine type being '
                    'measured); overrides the config. On GCP and AWS the '
                    'clients then keep the config\'s type and grow in number '
                    'to at least 4x the servers\' vCPUs (upstream PKB sets '
                    'every VM group; --client_machine_type sizes the '
                    'clients).')
flags.DEFINE_string('client_machine_type', None,
                    'Machine type of the client VMs (load generators); '
                    'default: the config\'s.')
flags.DEFINE_multi_string(
    'zone', [],
    'Zone for every VM group, e.g. us-central1-a. Upstream PKB\'s repeatable '
    'flag; one zone per run here (every VM of the study in one zone).')
flags.DEFINE_string('project', None, 'GCP project to create resources in.')
flags.DEFINE_boolean(
    'use_instance_credentials', False,
    'On a GCP or EC2 VM: use its service account or instance role, fetched '
    'from the metadata server. Off by default: credentials are looked for '
    'on this machine only (key files, ~/.aws, the environment) and no '
    'credential lookup leaves it.')
flags.DEFINE_boolean(
    'allow_unlisted_zone', False,
    'Accept a --zone missing from configs/zones.yaml (a zone opened after '
    'that list\'s date); by default an unknown zone or a region given as a '
    'zone is refused before anything starts.')
flags.DEFINE_string('os_type', 'debian12',
                    'Guest OS image family, e.g. debian12, ubuntu2204 '
                    '(upstream PKB: ubuntu2404 of its enum; ours: debian12, '
                    'whose packages the installs are tested on).')
flags.DEFINE_string('owner', None,
                    'Owner label on samples and resources (default: the '
                    'login name at run time, as getpass finds it: $LOGNAME, '
                    '$USER, $LNAME or $USERNAME, else the account\'s name; '
                    'upstream PKB reads the same user when its flags load). '
                    'A blank one, or one with a control character, is '
                    'refused.')
flags.DEFINE_string('run_uri', None,
                    'Name of this run (1-12 lowercase letters/digits; '
                    'generated ones have 8); generated when absent. Needed to '
                    'resume or tear down a run.')
flags.DEFINE_list('run_stage', list(RUN_STAGES),
                  'Stages to run: provision, prepare, run, cleanup, teardown '
                  'or all (the default: every stage, as upstream PKB); a list '
                  'goes in that order without skipping one, but teardown may '
                  'follow provision and cleanup prepare (as upstream PKB).')


def RunStages(values) -> List[str]:
  """--run_stage's stages as given, `all` alone standing for every stage
  (pkb checks the list; a provider asks what a run will do)."""
  stages = [s.strip() for s in values]
  return list(RUN_STAGES) if stages == ['all'] else stages


flags.DEFINE_multi_string('config_override', [],
                          'Overrides one config value: '
                          '<benchmark>.<path.to.key>=<yaml value>.')
flags.DEFINE_string('benchmark_config_file', None,
                    'YAML file merged over the benchmark configs.')
flag_types.DEFINE_float(
    'timeout_minutes', 60,
    'Deadline for the whole run; when reached the run stops, cleans up, tears '
    'down and keeps its samples. Above 0 and at most 10080 (a week): every '
    "run has a deadline. Upstream PKB's is an integer, 240, annotated on "
    'resources; ours takes its values too, defaults to 60 (the study takes '
    'minutes) and is enforced.',
    lower_bound=0, upper_bound=7 * 24 * 60, above=True)
flag_types.DEFINE_float(
    'ssh_wait_timeout_seconds', 300,
    "How long a new GCP or AWS VM may take to answer SSH (with the run's user "
    'and key) before provisioning fails and the run tears down. Slow-booting '
    'images need more.',
    lower_bound=0, upper_bound=24 * 3600, above=True)
flags.DEFINE_string('results_dir', None,
                    'Directory for run records (default: results/runs under '
                    'the repository; installed, /tmp/perfkitbenchmarker/runs '
                    'in the temporary directory, $TMPDIR, where upstream PKB '
                    'keeps its runs).')
flags.DEFINE_string('json_path', None,
                    'PKB-format JSON lines output (default: '
                    '<results_dir>/<run_uri>/perfkitbenchmarker_results.json; '
                    'upstream PKB\'s default is the same file name in its '
                    'run\'s temporary directory).')
flags.DEFINE_string('csv_path', None,
                    'CSV output (default: <results_dir>/<run_uri>/results.csv).')
flags.DEFINE_boolean('collapse_labels', True,
                     'Write metadata as a labels string |k:v|,|k:v| in the '
                     'JSON output; --nocollapse_labels writes an object.')
flags.DEFINE_boolean('dry_run', False,
                     'Print the plan (VMs, software, search, cost) and exit '
                     'without creating anything (with --run_stage=teardown: '
                     'how many resources it would delete, deleting none).')
flags.DEFINE_string('local_priced_as', 'GCP:n2d-standard-2',
                    'Catalog machine type that prices Local VMs, as '
                    '<cloud>:<machine_type>[@<region>].')
flag_types.DEFINE_float(
    'local_server_cpu_quota', None,
    'Local only: the fraction of each of its cores a server VM may use, '
    'held by a CPU quota (a cgroup the run makes and removes; needs root). '
    'Default: 0.5 where the Local VMs take every core and the clients have '
    'no more cores than the servers (a 2-core machine), so the load '
    'generator can drive the server to its limit; none elsewhere. 0: none.',
    lower_bound=0, upper_bound=1)
flags.DEFINE_boolean('official', False,
                     'Mark samples as official results (never the samples '
                     'of an answer whose verdict is not confirmed).')
flags.DEFINE_boolean('accept_unconfirmed', False,
                     'Exit 0 when the run\'s answer is not confirmed '
                     '(verdict unconfirmed, client_bound or disturbed) '
                     'instead of 4; the samples and the summary still carry '
                     'the verdict and are still never official.')
flags.DEFINE_enum('price_basis', 'on_demand',
                  ['on_demand', 'spot', 'cud_1y', 'cud_3y'],
                  'Which catalog price a run is costed at: on-demand list '
                  'price, spot, or a 1- or 3-year committed-use price (GCP '
                  'rows have all four, AWS rows on-demand only). Recorded '
                  'in every sample as pricing_model.')
flags.DEFINE_multi_string('machine_price', [],
                          'Your own hourly price for a machine type, as '
                          '<machine_type>=<USD per hour>, e.g. '
                          'c7g.4xlarge=0.58; used instead of the catalog '
                          '(and where it has no row), recorded as given '
                          'with --machine_price and today\'s date. One price '
                          'per type: two different ones are refused.')

# PKB's --timing_measurements values; `none` stands alone.
TIMING_NONE = 'none'
TIMING_END_TO_END_RUNTIME = 'end_to_end_runtime'
TIMING_RUNTIMES = 'runtimes'
TIMING_TIMESTAMPS = 'timestamps'
TIMING_MEASUREMENTS = (TIMING_NONE, TIMING_END_TO_END_RUNTIME,
                       TIMING_RUNTIMES, TIMING_TIMESTAMPS)
flags.DEFINE_list(
    'timing_measurements', [TIMING_END_TO_END_RUNTIME],
    'Timing samples to add, from none, end_to_end_runtime (End to End '
    'Runtime, when every stage ran and none failed), runtimes (that and '
    '"<stage> Runtime" in seconds for each stage that ran to its end: '
    'Resource Provisioning, Benchmark Prepare, Benchmark Run, Benchmark '
    'Cleanup, Resource Teardown) and timestamps ("<stage> Start Timestamp" '
    'and "<stage> Stop Timestamp", seconds since the epoch). none is alone.')

FLAGS = flags.FLAGS


def OneZone(flag_values):
  """The run's --zone, or None; several are refused in one line."""
  zones = flag_values.zone
  if not zones:
    return None
  if isinstance(zones, str):
    return zones
  if len(zones) > 1:
    raise errors.UsageError(
        f'--zone given {len(zones)} times ({", ".join(zones)}): the study '
        'puts every VM in one zone (its latency depends on it); run one zone '
        'per run, e.g. a flag_matrix over zone.')
  return zones[0]

flags.DEFINE_string('static_vm_file', None,
                    'JSON file of existing machines (PKB format: ip_address, '
                    'user_name, keyfile_path, optional internal_ip, ssh_port, '
                    'os_type, zone). No cloud API is called in such a run.')
flags.DEFINE_integer('num_vms', 1,
                     'VMs of a vm_group whose vm_count is null (upstream '
                     'PKB\'s flag, as its example_vm benchmark uses it).',
                     lower_bound=1, upper_bound=1000)
flags.DEFINE_multi_string('data_search_paths', ['.'],
                          'Directories searched, in order, for the data files '
                          'a benchmark module pushes (vm.PushDataFile, '
                          'data.ResourcePath) before perfkitbenchmarker/data '
                          '(upstream PKB\'s flag).')
flags.DEFINE_enum('placement_group_style', 'cluster',
                  ['cluster', 'none'],
                  'Place the run\'s VMs close together (GCP compact '
                  'placement policy, AWS cluster placement group) or not. '
                  'Upstream PKB\'s is a free string left to each cloud when '
                  'unset; ours defaults to cluster, since the study measures '
                  'latency between the VMs.')


USAGE = ('Usage: pkb [--flags] (./pkb.py in a checkout); with no flags runs '
         'the Local study.\n')

# Flags upstream PKB also has whose type or default differs here on purpose:
# docs/upstream_flags.md's table (tests/upstream_flags_test.py keeps the two
# equal). --help shows each, with the reason in its help text.
UPSTREAM_DIFFERENCES = (
    'benchmarks', 'cloud', 'json_path', 'memtier_clients', 'memtier_data_size',
    'memtier_distinct_client_seed', 'memtier_key_maximum', 'memtier_ratio',
    'memtier_requests', 'memtier_run_duration', 'memtier_threads', 'os_type',
    'owner', 'placement_group_style', 'redis_server_io_threads',
    'redis_server_version', 'timeout_minutes', 'ycsb_field_count',
    'ycsb_field_length', 'ycsb_operation_count', 'ycsb_record_count')


def _FlagHelp(name: str) -> str:
  """One flag as absl's help shows it."""
  flag = FLAGS[name]
  prefix = '[no]' if flag.boolean else ''
  lines = textwrap.wrap(f'--{prefix}{name}: {flag.help}', 78,
                        initial_indent='  ', subsequent_indent='    ')
  if flag.default is not None:
    lines.append(f'    (default: {flag.default_as_str})')
  return '\n'.join(lines)


# What a first study changes, shown first by --help (wherever defined).
FIRST_KNOBS = (
    'memtier_latency_cap', 'latency_cap_statistic', 'load_generator',
    'memtier_path', 'redis_total_num_processes', 'redis_server_cluster_mode',
    'memtier_clients', 'cloud', 'zone', 'machine_type', 'client_machine_type',
    'price_basis', 'dry_run')


def HelpText(argv) -> str:
  """--help: the run-level flags (this module's); --helpfull: every flag of
  every module, as upstream PKB. '' when neither is asked for."""
  asked = set(argv[1:])
  if '--helpfull' in asked:
    return USAGE + '\n' + FLAGS.get_help(include_special_flags=False)
  if asked & {'-h', '--help', '--helpshort'}:
    own = {f.name for f in FLAGS.get_flags_for_module(__name__)}
    differ = [_FlagHelp(n) for n in UPSTREAM_DIFFERENCES
              if n not in own and n in FLAGS]
    knobs = [_FlagHelp(n) for n in FIRST_KNOBS if n in FLAGS]
    return (USAGE + '\nThe knobs a first study turns:\n' + '\n'.join(knobs)
            + '\n\nRun-level flags:\n' + FLAGS.module_help(__name__) +
            '\n\nUpstream PKB flags whose default differs here on purpose '
            '(docs/upstream_flags.md):\n' + '\n'.join(differ) +
            '\n\nThe run-level flags above, and those; --helpfull lists every '
            'flag (search, load generators, engines, clouds).')
  return ''


# Most bytes a --flagfile may have (a few hundred lines of flags).
MAX_FLAGFILE_BYTES = 1 << 20
_FLAGFILE_DIRECTIVES = ('--flagfile=', '-flagfile=')


def FlagFileProblem(argv) -> str:
  """Why a --flagfile of argv, or one such a file names (absl reads them
  nested), cannot be read, in one line; '' when each can. absl opens each
  with open() and reads it whole as UTF-8: a FIFO waited for a writer for
  ever, /dev/zero filled the memory and a Latin-1 byte in a comment was a
  traceback, before pkb had anything to say it with."""
  pending, seen, rest = [], set(), list(argv[1:])
  while rest:  # As absl's read_flags_from_files finds them.
    arg = rest.pop(0)
    if arg == '--':
      break
    if arg in ('--flagfile', '-flagfile') and rest:
      pending.append(rest.pop(0))
    elif arg.startswith(_FLAGFILE_DIRECTIVES):
      pending.append(arg.split('=', 1)[1])
  while pending:
    path = os.path.expanduser(pending.pop(0).strip())
    if not path or path in seen:  # absl skips both.
      continue
    seen.add(path)
    try:
      text = regular_files.Utf8Text(
          regular_files.ReadRegular(path, MAX_FLAGFILE_BYTES))
    except regular_files.NotRegular as e:
      return f'--flagfile={path}: cannot read it: {e}'
    except regular_files.NotText as e:
      return f'--flagfile={path} is {e}; save it as UTF-8'
    pending.extend(line.split('=', 1)[1] for line in text.splitlines()
                   if line.startswith(_FLAGFILE_DIRECTIVES))
  return ''


def TypedArgv(argv, flag_values=None):
  """argv with enum values in the spelling people type made the flag's own:
  --load_generator=redis-benchmark (a tool's name as its binary spells it)
  or REDIS_BENCHMARK becomes redis_benchmark; anything else is left for
  absl to refuse."""
  flag_values = flag_values or FLAGS
  fixed = list(argv)
  for i, arg in enumerate(fixed):
    if not arg.startswith('--') or '=' not in arg:
      continue
    name, _, value = arg[2:].partition('=')
    flag = flag_values[name] if name in flag_values else None
    choices = getattr(getattr(flag, 'parser', None), 'enum_values', None)
    if not choices or value in choices:
      continue
    wanted = value.strip().lower().replace('-', '_')
    for choice in choices:
      if choice.lower().replace('-', '_') == wanted:
        fixed[i] = f'--{name}={choice}'
  return fixed


def _SameNumber(said: str, value: str) -> bool:
  try:
    return float(said) == float(value)
  except ValueError:
    return False


def FlagErrorLine(error: Exception) -> str:
  """absl's flag error in words, without Python's own (e.g. "invalid literal
  for int() with base 10"), the value quoted once and abbreviated when long
  (absl's "flag --name=VALUE: " comes before a parser's words that quote
  VALUE again: "--name=VALUE is not ..." says it once), as one printable
  line (terminal_text.Printable: a line break or an ESC sequence in VALUE
  is shown as its escape, not printed)."""
  text = str(error)
  match = re.match(r'flag (--[\w.-]+)=(.*?): (invalid literal for int\(\)|'
                   r'could not convert string to float)', text, re.S)
  if match:
    kind = ('a whole number' if match.group(3).startswith('invalid')
            else 'a number')
    return terminal_text.Abbreviated(terminal_text.Printable(
        f'{match.group(1)}={match.group(2)} is not {kind}'))
  match = re.match(r'flag (--[\w.-]+)=(.*?): (.*)', text, re.S)
  if match and match.group(2):
    name, value, words = match.groups()
    quoted = '|'.join(re.escape(q + value + q) for q in ('"', "'"))
    said = re.sub(f'^(?:{quoted}|{re.escape(value)})(?=\\s)', '', words,
                  count=1)
    first, _, rest = words.partition(' ')
    if said == words and rest and _SameNumber(first, value):
      said = ' ' + rest  # The value as parsed (-1 as -1.0).
    if said != words:  # The words began with the value.
      text = f'{name}={value}{said}'
    else:  # Elsewhere in them (quoted: a bare short value is any text).
      text = f'flag {name}={value}: ' + re.sub(quoted, '(above)', words,
                                                count=1)
  return terminal_text.Abbreviated(terminal_text.Printable(text))
