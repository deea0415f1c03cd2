"""Redis latency-capped throughput per dollar, run by an upstream PKB.

This file is an upstream PerfKit Benchmarker benchmark module. It is
installed into an upstream checkout's perfkitbenchmarker/linux_benchmarks/ by
the harness's scripts/install_pkb_plugin.py and imports only upstream's own
modules and the standard library.

Upstream provisions the `servers` and `clients` groups (or takes them from
its --static_vm_file) and tears them down. This module bridges to the
harness, which runs out of process in its own virtualenv: CheckPrerequisites
runs the harness's dry run over the planned machine types, before anything
is provisioned; Prepare hands the provisioned VMs to the harness as a static
VM file, priced by the machine types upstream really got, and runs its
provision and prepare stages; Run its run stage, whose JSON rows come back
as upstream samples; Cleanup its cleanup and teardown stages (the VMs are
upstream's to delete).

Study settings pass through one flag, --redis_price_performance_flags (the
harness's own flags), so no flag name is defined in both programs. A machine
type the harness cannot price is refused before the study starts, naming
the harness flag that prices it (--machine_price or --local_priced_as).
"""

import collections
import itertools
import json
import logging
import os
import pathlib
import re
import shlex
import signal
import subprocess
import threading
import time
from typing import Any, Dict, List, Optional, Tuple

from absl import flags

from perfkitbenchmarker import configs
from perfkitbenchmarker import errors
from perfkitbenchmarker import sample
from perfkitbenchmarker import vm_util

# scripts/install_pkb_plugin.py writes the harness checkout's path here.
HARNESS_DIR = '@HARNESS_DIR@'

BENCHMARK_NAME = 'redis_price_performance'
BENCHMARK_CONFIG = """
redis_price_performance:
  description: >
    Latency-capped Redis throughput and throughput per dollar of the server
    machine type, measured by the Redis price-performance harness.
  vm_groups:
    servers:
      vm_spec:
        GCP:
          machine_type: t2d-standard-16
          zone: us-central1-a
        AWS:
          machine_type: c6gn.16xlarge
          zone: us-east-1a
      vm_count: 1
    clients:
      vm_spec:
        GCP:
          machine_type: n2-standard-32
          zone: us-central1-a
        AWS:
          machine_type: c6gn.16xlarge
          zone: us-east-1a
      vm_count: 1
"""

STUDY_FLAGS = flags.DEFINE_string(
    'redis_price_performance_flags', '',
    'Flags for the Redis price-performance harness, as on its own command '
    'line, e.g. "--memtier_latency_cap=0.5 --redis_total_num_processes=2". '
    '--machine_price=TYPE=USD prices a machine type its catalog lacks; '
    '--local_priced_as=GCP:TYPE prices VMs of other clouds as a catalog '
    'type.')

GROUPS = ('servers', 'clients')
HARNESS_BENCHMARK = 'redis_memtier'
# Metadata upstream's DefaultMetadataProvider sets itself (per-group VM
# metadata under servers_/clients_, VM lists under vm_, the version, ...):
# the harness's values of these keys are kept under a harness_ prefix.
UPSTREAM_KEYS = ('perfkitbenchmarker_version', 'project', 'hostnames',
                 'cloud', 'zone', 'set_files', 'sysctl',
                 'simulate_maintenance')
UPSTREAM_PREFIXES = ('servers_', 'clients_', 'vm_')
# Harness flags --redis_price_performance_flags may not give, by reason.
REFUSED = {
    'is set by the bridge from what upstream provisioned; drop it': (
        'cloud', 'static_vm_file', 'run_stage', 'run_uri', 'results_dir',
        'benchmarks', 'benchmark_config_file', 'zone', 'machine_type',
        'client_machine_type', 'collapse_labels', 'timing_measurements'),
    # The bridge reads the rows from the harness's results file.
    'would move or publish the rows upstream publishes; use upstream\'s '
    'own flag (--json_path, --csv_path, --bigquery_table, --official)': (
        'json_path', 'csv_path', 'bigquery_table', 'bq_project',
        'bq_api_endpoint', 'bq_timeout_seconds', 'service_account',
        'service_account_private_key', 'official'),
    'does not run one study; drop it (the harness\'s own flags: '
    '<harness>/pkb.py --helpfull)': (
        'dry_run', 'help', 'helpfull', 'helpshort', 'h', 'flag_matrix',
        'flag_zip', 'run_processes', 'max_cost_usd'),
    # absl would read flags past this check, or hide unknown ones.
    'would read or hide flags past the bridge\'s check; give the flags '
    'themselves': ('flagfile', 'undefok'),
}
# Upstream's own memtier and Redis flags that mean the same in the harness
# (docs/upstream_flags.md): a value set upstream is passed on.
MAPPED = ('memtier_clients', 'memtier_data_size',
          'memtier_distinct_client_seed', 'memtier_key_maximum',
          'memtier_key_pattern', 'memtier_pipeline', 'memtier_ratio',
          'memtier_requests', 'memtier_run_duration', 'memtier_threads',
          'redis_server_cluster_mode', 'redis_server_io_threads',
          'redis_server_version', 'redis_total_num_processes')
# Upstream's latency-capped mode (--latency_capped_throughput, its
# memtier.py) keeps a load only while the load's p95 is within
# --memtier_latency_cap; the harness's cap bounds the statistic its
# --latency_cap_statistic names (the average unless set). So upstream's cap
# reaches the harness with upstream's statistic, both flags together.
UPSTREAM_CAP = 'memtier_latency_cap'
UPSTREAM_CAPPED_MODE = 'latency_capped_throughput'
UPSTREAM_CAP_STATISTIC = 'p95'
HARNESS_CAP_FLAGS = ('memtier_latency_cap', 'latency_cap_statistic')
# Values of mapped flags that mean something upstream the harness has no
# setting for, and what to give instead.
UPSTREAM_ONLY_VALUES = {
    'redis_total_num_processes': (0, 'upstream starts one process per vCPU; '
                                  'give the number of shards per server VM'),
}
# Upstream's redis_memtier refuses --redis_server_cluster_mode without
# --memtier_cluster_mode (memtier's --cluster-mode); the harness runs memtier
# in cluster mode exactly when the shards are a cluster. So upstream's
# memtier flag means the same here when it says what upstream's cluster
# flag says, and is taken without being passed on.
UPSTREAM_MEMTIER_CLUSTER = 'memtier_cluster_mode'
UPSTREAM_SERVER_CLUSTER = 'redis_server_cluster_mode'
# Upstream flags of these families not mapped above have no meaning here; a
# value a user set is refused rather than ignored.
UPSTREAM_FAMILIES = ('memtier_', 'redis_')
# Metadata every capped figure of the harness carries; the bridge gives it
# to each row of the run that lacks it (a price row), so every row upstream
# publishes says which latency its figures were capped on.
CAP_KEYS = ('latency_cap_statistic', 'latency_cap_ms')
UNCONFIRMED_EXIT = 4  # the harness's: a result without a confirmed answer
FAILED_EXIT = 1  # the harness's: a run that failed (its samples are kept)
PRICED_CLOUDS = ('GCP', 'AWS')  # the clouds the harness's catalog prices
HARNESS_TIMEOUT_S = 24 * 3600  # the harness enforces its own deadline
# Signals an upstream user stops a run with: passed on to the harness once
# (it runs in its own session, so a Ctrl-C at the terminal reaches it only
# through the plugin); it then stops and cleans up (`_TearDownFirst`, or
# upstream's Cleanup, tears its run down).
FORWARDED_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
INTERRUPT_WAIT_S = 600  # for the stopped harness's cleanup (and teardown)
KILL_WAIT_S = 60  # after a second signal asks it to cut them short
POLL_S = 1.0  # how often the wait looks at a signal that came
LAST_LINES = 20  # of the harness's stderr, kept for an error's one line


class BridgeError(errors.Setup.InvalidConfigurationError):
  """A setting or machine type the harness cannot run with."""


class HarnessRunError(errors.Benchmarks.RunError):
  """A harness stage that failed; its message is the harness's own line."""


class Refused(SystemExit):
  """A BridgeError of CheckPrerequisites, said in one line.

  Upstream logs a failed prerequisite check with its traceback, then lets
  the error end the process, which prints it again. As a SystemExit (code
  1, what the error would have exited with) it ends the process without
  the second; `_OneLineErrors` puts its line in place of the first.
  Nothing is provisioned yet: upstream checks every benchmark first.
  """

  def __init__(self, line: str):
    super().__init__(1)
    self.line = line

  def __str__(self) -> str:
    return self.line


# The plugin's own errors: each message is a whole, actionable line, and
# their tracebacks (through the bridge and upstream's stage driver) say
# nothing a user can act on.
ONE_LINE_ERRORS = (BridgeError, HarnessRunError, Refused)


class _OneLineErrors(logging.Filter):
  """On upstream's root logger: a record logged with one of the plugin's
  errors says the error's line after the record's own message instead of
  a traceback, once. Upstream logs a failed stage's error twice with its
  traceback (pkb.py: RunBenchmark's 'Error during benchmark', then
  RunBenchmarkTask's 'Exception running benchmark'); the second record of
  the same error is dropped (the 'Benchmark ... failed' line after it
  stays)."""

  def filter(self, record: logging.LogRecord) -> bool:
    error = record.exc_info[1] if record.exc_info else None
    if not isinstance(error, ONE_LINE_ERRORS):
      return True
    if getattr(error, 'redis_price_performance_said', False):
      return False
    error.redis_price_performance_said = True
    record.msg, record.args = f'{record.getMessage()}: {error}', None
    record.exc_info = record.exc_text = None
    return True


def _SayErrorsInOneLine() -> None:
  """Installs `_OneLineErrors` once; each stage calls it first, so the
  filter is there whichever stage fails (upstream skips the check on a
  run of later stages only)."""
  root = logging.getLogger()
  if not any(isinstance(f, _OneLineErrors) for f in root.filters):
    root.addFilter(_OneLineErrors())


def GetConfig(user_config: Dict[str, Any]) -> Dict[str, Any]:
  return configs.LoadConfig(BENCHMARK_CONFIG, user_config, BENCHMARK_NAME)


# --- the harness's command line -------------------------------------------


def HarnessDir() -> str:
  path = os.environ.get('REDIS_PRICE_PERFORMANCE_HARNESS') or HARNESS_DIR
  if path.startswith('@') or not os.path.isfile(os.path.join(path, 'pkb.py')):
    raise BridgeError(
        f'redis_price_performance: no harness at "{path}"; install the plugin '
        'with <harness>/scripts/install_pkb_plugin.py <this checkout>.')
  return path


def _FlagName(arg: str) -> str:
  return re.sub(r'^--?', '', arg.split('=', 1)[0])


def _Refusal(name: str) -> Optional[str]:
  """Why --name (or --noname of a boolean) is refused, None if it is not."""
  for reason, names in REFUSED.items():
    if name in names:
      return f'--{name} {reason}'
    if name.startswith('no') and name[2:] in names:
      return f'--{name[2:]} {reason}'
  return None


def StudyFlags(text: str) -> List[str]:
  """--redis_price_performance_flags as argv; what the bridge owns refused."""
  try:
    argv = shlex.split(text or '')
  except ValueError as e:
    raise BridgeError(f'--redis_price_performance_flags: {e}') from None
  for arg in argv:
    if not arg.startswith('-') or _FlagName(arg) in ('', '-'):
      raise BridgeError(
          f'--redis_price_performance_flags: "{arg}" is not a flag; give '
          'the harness\'s flags as --name=value.')
    refusal = _Refusal(_FlagName(arg)) or _OverrideRefusal(arg)
    if refusal:
      raise BridgeError(f'--redis_price_performance_flags: {refusal}.')
  return argv


def _OverrideKey(arg: str) -> Optional[List[str]]:
  """The key path a --config_override sets (the harness's parse: the text
  before the first '=', split at dots), None for another flag."""
  if _FlagName(arg) != 'config_override' or '=' not in arg:
    return None
  return arg.split('=', 1)[1].split('=', 1)[0].strip().split('.')


def _OverrideRefusal(arg: str) -> Optional[str]:
  """A --config_override that sets what the bridge owns: a flag through
  the config's `flags:` (BENCHMARK.flags.NAME=VALUE, applied by the
  harness as if given) or the VM groups upstream provisioned."""
  path = _OverrideKey(arg)
  if path is None:
    return None
  key = '.'.join(path)
  if len(path) >= 2 and path[1] == 'vm_groups':
    return (f'--config_override={key}: the VM groups are set by the bridge '
            'from what upstream provisioned (use upstream\'s '
            '--config_override=redis_price_performance.vm_groups...)')
  if len(path) == 2 and path[1] == 'flags':
    # A YAML mapping of flags: the bridge would need the harness's YAML
    # reading to see which, so it takes them one by one.
    return (f'--config_override={key}=<mapping> sets flags the bridge '
            'cannot check one by one; give each flag itself in '
            '--redis_price_performance_flags (or '
            f'--config_override={key}.NAME=VALUE)')
  if len(path) >= 3 and path[1] == 'flags':
    refusal = _Refusal(path[2])
    if refusal:
      return f'--config_override={key}: {refusal}'
  return None


def _Given(study_argv: List[str]) -> set:
  """The harness flags --redis_price_performance_flags sets: given as
  flags (--name, --noname) or through the config's `flags:`."""
  given = set()
  for arg in study_argv:
    path = _OverrideKey(arg)
    if path is not None:
      if len(path) >= 3 and path[1] == 'flags':
        given.add(path[2])
      continue
    name = _FlagName(arg)
    given |= {name, re.sub(r'^no', '', name)}
  return given


def _Set(flag) -> bool:
  return bool(flag.present) or flag.value != flag.default


def UpstreamFlags(flag_values, study_argv: List[str]) -> List[str]:
  """Upstream's memtier/Redis flags a user set, as the harness's argv:
  MAPPED ones pass on, upstream's cap as `UpstreamCap`; others of their
  families, and a mapped one also in --redis_price_performance_flags, are
  refused in one line."""
  given = _Given(study_argv)
  argv, foreign, twice = [], [], []
  for name in sorted(flag_values):
    flag = flag_values[name]
    if name == STUDY_FLAGS.name or flag.name != name or not _Set(flag):
      continue  # our own flag, a short alias, or left at upstream's default
    if name in MAPPED:
      value, meaning = UPSTREAM_ONLY_VALUES.get(name, (None, None))
      if meaning and flag.value == value:
        raise BridgeError(f'redis_price_performance: upstream\'s '
                          f'{flag.serialize()}: {meaning}.')
      if name in given:
        twice.append(name)
      elif flag.value is not None:
        argv.append(flag.serialize())  # upstream's own syntax, the harness's
    elif name == UPSTREAM_CAPPED_MODE:
      if not flag.value:  # upstream's uncapped runs: not this study
        foreign.append(name)
    elif name == UPSTREAM_MEMTIER_CLUSTER:
      server_cluster = (UPSTREAM_SERVER_CLUSTER in flag_values and
                        flag_values[UPSTREAM_SERVER_CLUSTER].value)
      if bool(flag.value) != bool(server_cluster):
        raise BridgeError(
            f'redis_price_performance: upstream\'s {flag.serialize()}: the '
            'harness runs memtier in cluster mode exactly when the shards '
            'are a cluster, upstream\'s --redis_server_cluster_mode (which '
            'upstream\'s redis_memtier requires with --memtier_cluster_mode); '
            'give both upstream flags or neither.')
    elif name.startswith(UPSTREAM_FAMILIES) and name != UPSTREAM_CAP:
      foreign.append(name)
  if twice:
    raise BridgeError(
        'redis_price_performance: ' + ', '.join(f'--{n}' for n in twice) +
        ' given both as upstream\'s flag and in '
        '--redis_price_performance_flags; give each once.')
  if foreign:
    raise BridgeError(
        'redis_price_performance: upstream\'s ' +
        ', '.join(f'--{n}' for n in foreign) + ' mean nothing to this '
        'benchmark (their meanings are not the harness\'s); drop them or run '
        'upstream\'s redis_memtier for them. Mapped: ' +
        ', '.join(f'--{n}' for n in MAPPED + (UPSTREAM_CAP,
                                                UPSTREAM_CAPPED_MODE,
                                                UPSTREAM_MEMTIER_CLUSTER)) +
        '; the harness\'s own flags go in --redis_price_performance_flags.')
  return argv + UpstreamCap(flag_values, given)


def UpstreamCap(flag_values, given: set) -> List[str]:
  """Upstream's cap as the harness's flags, when a user set upstream's
  --memtier_latency_cap or --latency_capped_throughput: the same
  milliseconds on upstream's statistic, p95. The harness's own cap flags in
  --redis_price_performance_flags would say otherwise: refused."""
  if UPSTREAM_CAP not in flag_values:
    return []  # an upstream without the flag: nothing of upstream's to map
  capped_mode = (UPSTREAM_CAPPED_MODE in flag_values and
                 flag_values[UPSTREAM_CAPPED_MODE].value)
  if not (_Set(flag_values[UPSTREAM_CAP]) or capped_mode):
    return []
  clash = sorted(given & set(HARNESS_CAP_FLAGS))
  if clash:
    raise BridgeError(
        'redis_price_performance: upstream\'s --memtier_latency_cap caps '
        f'{UPSTREAM_CAP_STATISTIC} latency (its latency-capped mode\'s '
        'statistic), and --redis_price_performance_flags gives ' +
        ', '.join(f'--{n}' for n in clash) + ' too; give the cap in one '
        'place: upstream\'s flags for a p95 cap, or --redis_price_performance'
        '_flags="--memtier_latency_cap=MS --latency_cap_statistic=STAT".')
  return [flag_values[UPSTREAM_CAP].serialize(),
          f'--latency_cap_statistic={UPSTREAM_CAP_STATISTIC}']


def Study() -> List[str]:
  """The study's harness flags: upstream's mapped flags, then
  --redis_price_performance_flags, then upstream's --official."""
  study = StudyFlags(STUDY_FLAGS.value)
  official = ['--official'] if flags.FLAGS.official else []
  return UpstreamFlags(flags.FLAGS, study) + study + official


def _GivesPrice(study_argv: List[str]) -> bool:
  return any(a.startswith('--local_priced_as=') for a in study_argv)


def PricedAs(cloud: Optional[str], machine_type: Optional[str],
             zone: Optional[str], study_argv: List[str],
             group: str) -> Optional[str]:
  """The harness's CLOUD:TYPE@ZONE price key of a group, None to use the
  given --local_priced_as; refused when neither can price it."""
  if cloud in PRICED_CLOUDS and machine_type:
    return f'{cloud}:{machine_type}' + (f'@{zone}' if zone else '')
  if _GivesPrice(study_argv):
    return None
  raise BridgeError(
      f'redis_price_performance: the {group} VMs are {cloud or "?"} '
      f'{machine_type or "(no machine type)"}, which the harness cannot '
      'price (its catalog covers GCP and AWS machine types); price them as '
      'a catalog type with --redis_price_performance_flags='
      '--local_priced_as=GCP:<machine type> (or AWS:<machine type>).')


def HarnessConfig(groups: Dict[str, Dict[str, Any]]) -> str:
  """The harness's benchmark config: each group as upstream has it, with
  its price key (`PricedAs`)."""
  out = {}
  for group in GROUPS:
    g = groups[group]
    static = {'machine_type': g.get('machine_type') or 'static'}
    if g.get('zone'):
      static['zone'] = g['zone']
    if g.get('priced_as'):
      static['priced_as'] = g['priced_as']
    out[group] = {'vm_count': g['count'], 'vm_spec': {'Static': static}}
  return json.dumps({HARNESS_BENCHMARK: {'vm_groups': out}})


def StandInVmFile(groups: Dict[str, Dict[str, Any]], keyfile: str) -> str:
  """A static VM file of stand-ins for the planned VMs, for the dry run:
  it plans the study for machines (the harness's prepare runs on
  upstream's VMs as static machines) and logs in nowhere, so no address is
  real (192.0.2.0/24, reserved for documentation) and the key is empty."""
  out, address = {}, itertools.count(1)
  for group in GROUPS:
    out[group] = [{'ip_address': f'192.0.2.{next(address)}',
                   'user_name': 'standin', 'keyfile_path': keyfile}
                  for _ in range(groups[group]['count'])]
  return json.dumps(out, indent=1)


def StaticVmFile(vm_groups) -> str:
  """The harness's static VM file (JSON) for upstream's VMs, by group."""
  out = {}
  for group in GROUPS:
    # The address upstream itself logs in at: the internal one under its
    # --connect_via_internal_ip (a PKB runner inside the VMs' network,
    # where the external one may be missing or closed to SSH).
    out[group] = [{
        'ip_address': vm.GetConnectionIp(),
        'internal_ip': vm.internal_ip or vm.ip_address,
        'user_name': vm.user_name,
        'keyfile_path': vm.ssh_private_key,
        'ssh_port': int(vm.ssh_port or 22),
        'machine_type': vm.machine_type or 'static',
        'zone': vm.zone or '',
    } for vm in vm_groups[group]]
  return json.dumps(out, indent=1)


def RunUri(run_uri: str, sequence: int = 0) -> str:
  """A harness run id (1-12 lowercase letters/digits) for this spec."""
  base = re.sub(r'[^a-z0-9]', '', (run_uri or 'pkb').lower())[:10] or 'pkb'
  return f'{base}{sequence % 100}'[:12]


def _Workdir() -> str:
  path = os.path.join(vm_util.GetTempDir(), BENCHMARK_NAME)
  os.makedirs(path, exist_ok=True)
  return path


def _Relay(stream, kept: Optional[collections.deque],
           logged: bool = True, harness: Optional[str] = None) -> None:
  """Logs each line of the harness's output as it comes (probe lines reach
  upstream's log during a stage), a command it names as `ForUpstream` has
  it (`harness`: the harness's directory); keeps them as written."""
  for line in stream:
    line = line.rstrip('\n')
    if logged:
      logging.info('harness: %s', ForUpstream(line, harness))
    if kept is not None and line.strip():
      kept.append(line)


def LastWords(stderr_lines, returncode) -> str:
  """The harness's closing message: its trailing 'pkb: ' lines as one line,
  else its last line."""
  lines = [l.strip() for l in stderr_lines]
  trailing = list(itertools.takewhile(lambda l: l.startswith('pkb: '),
                                      reversed(lines)))
  if trailing:
    return ' '.join(l.removeprefix('pkb: ') for l in reversed(trailing))
  return lines[-1] if lines else f'exit {returncode}'


def _ArgValue(argv: List[str], name: str) -> Optional[str]:
  """The value of the harness's --name=VALUE in argv, None without it."""
  values = [a.split('=', 1)[1] for a in argv if a.startswith(f'--{name}=')]
  return values[-1] if values else None


def TeardownCommand(run_uri: str, results_dir: str) -> str:
  """The harness command that tears its run down from its record, as run
  from anywhere (the user is in upstream's checkout, whose ./pkb.py is
  upstream's); the plugin's runs keep their results outside the harness's
  default directory, so it names theirs."""
  return (f'{shlex.quote(os.path.join(HarnessDir(), "pkb.py"))} '
          f'--run_stage=teardown --run_uri={run_uri} '
          f'--results_dir={shlex.quote(results_dir)}')


def ForUpstream(line: str, harness: Optional[str] = None) -> str:
  """A harness message as an upstream user reads it: a command it names
  (`./pkb.py ...`, `./scripts/x ...`, relative to the harness's checkout)
  with the harness's full path (`harness`, else HarnessDir()); every line
  the plugin logs of the harness's, relayed or its closing one. (The
  harness names a teardown command with its run's --results_dir itself,
  when it is not the harness's default.)"""
  harness = shlex.quote(harness or HarnessDir())
  return re.sub(r'(?<![\w./~-])\./(?=pkb\.py\b|scripts/)',
                lambda _: harness + '/', line)


def _NamesAFlag(line: str) -> bool:
  """Whether a refusal is about a flag: it names one outside the commands
  it quotes (`.../pkb.py --run_stage=teardown ...` names no flag of the
  user's)."""
  outside = re.sub(r'\S*pkb\.py(\s+--\S+)*', '', line)
  return re.search(r'(?<![\w-])--[a-z]\w*', outside) is not None


class _Forwarder:
  """While the harness runs in the main thread: SIGINT, SIGTERM and SIGHUP
  passed on to it once (the first one; it stops, cleans up and tears down
  its run), the previous handlers kept for `Reraise`."""

  def __init__(self):
    self.proc: Optional[subprocess.Popen] = None
    self.signum: Optional[int] = None
    self.previous = {}
    # Signals upstream has no handler for: re-raised, they end it at once.
    self.fatal = set()

  def Started(self, proc: subprocess.Popen) -> None:
    """The harness runs: a signal that came while it started is its."""
    self.proc = proc
    if self.signum is not None:
      _Signal(proc, self.signum)

  def Install(self) -> None:
    for sig in FORWARDED_SIGNALS:
      handler = signal.getsignal(sig)
      if handler in (signal.SIG_IGN, None):
        continue  # upstream ignores it (nohup), or a handler not Python's
      if handler == signal.SIG_DFL:
        self.fatal.add(sig)
      self.previous[sig] = signal.signal(sig, self._Handle)

  def _Handle(self, signum, frame) -> None:  # pylint: disable=unused-argument
    if self.signum is not None:
      return  # passed on once; the bounded wait does the rest
    self.signum = signum
    if self.proc is not None:  # else `Started` passes it on
      _Signal(self.proc, signum)  # `_Wait` logs it (no logging in a handler)

  def Restore(self) -> None:
    for sig, handler in self.previous.items():
      signal.signal(sig, handler)
    self.previous = {}

  def EndsUpstream(self) -> bool:
    """Whether the signal, re-raised, ends upstream before its Cleanup:
    upstream sets no handler for SIGTERM or SIGHUP (its pkb.py), so its
    RunBenchmark's except and finally never run; a SIGINT is its
    KeyboardInterrupt, after which it calls Cleanup (always_call_cleanup,
    set in Prepare)."""
    return self.signum in self.fatal

  def Reraise(self) -> None:
    """The signal, to upstream's own handling of it (SIGINT: its
    KeyboardInterrupt, which tears down its VMs; SIGTERM, SIGHUP: as
    upstream has them), now that the harness has ended."""
    self.Restore()
    if self.signum is not None:
      signal.raise_signal(self.signum)


def _Signal(proc: subprocess.Popen, signum: int, group: bool = False) -> None:
  """Sends the harness (or its whole session) a signal, if it still runs."""
  if proc.poll() is not None:
    return
  try:
    if group:
      os.killpg(proc.pid, signum)
    else:
      proc.send_signal(signum)
  except (ProcessLookupError, PermissionError):
    pass


def _Wait(proc: subprocess.Popen, forwarder: _Forwarder,
          own_session: bool) -> Tuple[Optional[int], str]:
  """The harness's exit code and how it ended ('' on its own; else the
  stop that ended it). Bounded: after a signal passed on (or past
  HARNESS_TIMEOUT_S, SIGTERM), INTERRUPT_WAIT_S for its cleanup and
  teardown; then a second SIGTERM cuts them short, and KILL_WAIT_S after
  it SIGKILL ends it (its session with it)."""
  started = time.monotonic()
  stop_at, stopped = None, ''
  while True:
    try:
      return proc.wait(timeout=POLL_S), stopped
    except subprocess.TimeoutExpired:
      pass
    now = time.monotonic()
    if stop_at is None:
      if forwarder.signum is not None:
        logging.warning(
            'redis_price_performance: %s: passed on to the harness, which '
            'stops and cleans up (waiting up to %d s).',
            signal.Signals(forwarder.signum).name, INTERRUPT_WAIT_S)
        stopped = 'stopping'
      elif now - started > HARNESS_TIMEOUT_S:
        _Signal(proc, signal.SIGTERM)
        stopped = 'timeout'
      if stopped:
        stop_at = now + INTERRUPT_WAIT_S
    elif now > stop_at and stopped in ('stopping', 'timeout'):
      logging.warning('redis_price_performance: the harness still runs %d s '
                      'after it was stopped; asking it to cut its cleanup '
                      'short (SIGTERM), then killing it after %d s.',
                      INTERRUPT_WAIT_S, KILL_WAIT_S)
      _Signal(proc, signal.SIGTERM)
      stopped, stop_at = 'cut short', now + KILL_WAIT_S
    elif now > stop_at and stopped == 'cut short':
      _Signal(proc, signal.SIGKILL, group=own_session)
      return proc.wait(), 'killed'


def _RunHarness(argv: List[str], what: str,
                accept: tuple = (0,), relay_stdout: bool = True
                ) -> Tuple[int, str]:
  """Runs the harness, its output streamed into upstream's log (its stdout
  kept out of the log without `relay_stdout`); returns the exit code (one
  of `accept`, another raises) and `LastWords` (as `ForUpstream`).

  Run from the main thread (upstream's stage driver), the harness gets a
  session of its own and the plugin passes it a signal upstream got
  (`_Forwarder`, `_Wait`), then, the harness ended, re-raises it to
  upstream."""
  harness = HarnessDir()
  command = [os.path.join(harness, 'pkb.py')] + argv
  logging.info('redis_price_performance: %s', ' '.join(
      shlex.quote(a) for a in command))
  # The harness runs in its own virtualenv: upstream's must not leak in.
  # Unbuffered, so each line arrives when the harness writes it.
  env = {k: v for k, v in os.environ.items()
         if k not in ('VIRTUAL_ENV', 'PYTHONPATH', 'PYTHONHOME')}
  env['PYTHONUNBUFFERED'] = '1'
  kept = collections.deque(maxlen=LAST_LINES)
  # Signal handlers can be set in the main thread only; elsewhere the
  # harness stays in upstream's session, where a Ctrl-C reaches it.
  own_session = threading.current_thread() is threading.main_thread()
  forwarder = _Forwarder()
  if own_session:
    # Before the harness starts: no moment when a signal would end upstream
    # with the harness, in its own session, left running.
    forwarder.Install()
  try:
    # pylint: disable-next=consider-using-with  (`with proc` below)
    proc = subprocess.Popen(command, cwd=harness, env=env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            errors='replace', start_new_session=own_session)
  except BaseException:
    forwarder.Restore()
    raise
  with proc:
    forwarder.Started(proc)
    try:
      relays = [threading.Thread(
          target=_Relay, args=(proc.stdout, None, relay_stdout, harness),
          name='harness-stdout', daemon=True),
                threading.Thread(target=_Relay,
                                 args=(proc.stderr, kept, True, harness),
                                 name='harness-stderr', daemon=True)]
      for relay in relays:
        relay.start()
      returncode, stopped = _Wait(proc, forwarder, own_session)
      for relay in relays:
        relay.join(timeout=KILL_WAIT_S)  # a left child may hold a pipe
    finally:
      forwarder.Restore()
  last = ForUpstream(LastWords(kept, returncode), harness)
  run_uri, results_dir = (_ArgValue(argv, 'run_uri'),
                          _ArgValue(argv, 'results_dir'))
  teardown = (f'; delete what is left of its run with '
              f'{TeardownCommand(run_uri, results_dir)}'
              if run_uri and results_dir else '')
  if forwarder.signum is not None:
    name = signal.Signals(forwarder.signum).name
    said = '' if last == f'exit {returncode}' else f': {last}'
    # Its teardown command when its cleanup was cut short or never ran: a
    # harness ended by the signal itself (exit -N: it came as the harness
    # started, before its handlers; a second `kill` as the plugin's
    # teardown starts) cleaned nothing up and said nothing.
    unfinished = stopped in ('cut short', 'killed') or (
        returncode is not None and returncode < 0)
    logging.error('redis_price_performance %s: %s: the harness %s (exit '
                  '%s)%s%s', what, name,
                  'was killed' if stopped == 'killed' else 'stopped',
                  returncode, said, teardown if unfinished else '')
    stages = _ArgValue(argv, 'run_stage')
    if forwarder.EndsUpstream() and stages and 'teardown' not in stages:
      _TearDownFirst(argv, name)
    forwarder.Reraise()  # upstream's handling; if it goes on, a failure
    raise HarnessRunError(f'redis_price_performance {what}: interrupted by '
                          f'{name}: {last}{teardown}')
  if stopped:
    raise HarnessRunError(
        f'redis_price_performance {what}: the harness ran past '
        f'{HARNESS_TIMEOUT_S} s and was stopped; last line: {last}'
        f'{teardown if stopped != "timeout" else ""}')
  if returncode in accept:
    return returncode, last  # the caller says what a code other than 0 means
  if returncode == 2 and _NamesAFlag(last):  # a refusal of a setting
    last = (f'{last} (the harness\'s flags go in '
            '--redis_price_performance_flags)')
  error = BridgeError if returncode == 2 else HarnessRunError
  raise error(f'redis_price_performance {what}: {last}')


def _TearDownFirst(argv: List[str], name: str) -> None:
  """The harness's cleanup and teardown of the run `argv` stopped, before a
  signal upstream has no handler for ends upstream (`EndsUpstream`): its
  Cleanup would never run, and the run's shards, workspaces and claims on
  upstream's VMs (a static machine's, kept) stayed. Bounded as any harness
  run; a signal during it is passed on to it (one before its handlers are
  set ends it: its line names the teardown command), then ends upstream."""
  logging.warning('redis_price_performance: %s ends upstream without its '
                  'Cleanup; the harness\'s cleanup and teardown of its run '
                  'run first.', name)
  closing = [a for a in argv if not a.startswith('--run_stage=')] + [
      '--run_stage=cleanup,teardown']
  try:
    _RunHarness(closing, 'cleanup')
  except (BridgeError, HarnessRunError) as e:
    logging.error('%s', e)


# --- upstream's stages ----------------------------------------------------


def _PlannedGroup(benchmark_config, group):
  group_spec = benchmark_config.vm_groups[group]
  vm_spec = group_spec.vm_spec
  return (group_spec.cloud, getattr(vm_spec, 'machine_type', None),
          getattr(vm_spec, 'zone', None), group_spec.vm_count or 1)


def CheckPrerequisites(benchmark_config) -> None:
  """The bridge's checks and the harness's dry run over the planned machine
  types and settings, before anything is bought; a refusal ends upstream
  in one line (`Refused`)."""
  _SayErrorsInOneLine()
  try:
    _CheckStudy(benchmark_config)
  except BridgeError as e:
    raise Refused(str(e)) from None


def _CheckStudy(benchmark_config) -> None:
  study = Study()
  static = bool(flags.FLAGS.static_vm_file)
  placeholder = static and not _GivesPrice(study)
  if placeholder:
    # Upstream's static machines: existing machines, priced at Prepare
    # (`PricedAs`); a catalog price here only lets the settings be checked.
    study = study + ['--local_priced_as=GCP:n2d-standard-2']
  groups = {}
  for group in GROUPS:
    cloud, machine_type, zone, count = _PlannedGroup(benchmark_config, group)
    if static:
      # The config's cloud machine types are never created under
      # --static_vm_file: the plan names the machines static.
      groups[group] = dict(count=count, machine_type=None, zone=None,
                           priced_as=None)
      continue
    groups[group] = dict(
        count=count, machine_type=machine_type, zone=zone,
        priced_as=PricedAs(cloud, machine_type, zone, study, group))
  _DryRun(groups, study, relay_plan=not placeholder)
  if placeholder:
    logging.info(
        'redis_price_performance: the study\'s settings are checked for '
        'upstream\'s static machines (--static_vm_file: existing machines, '
        'none created); Prepare prices them, with '
        '--redis_price_performance_flags=--local_priced_as=CLOUD:TYPE.')


def _DryRun(groups, study, relay_plan: bool = True) -> None:
  """The harness's dry run over stand-ins of the VMs (`StandInVmFile`), as
  its prepare stage will run on them: a Local plan on this machine (the PKB
  runner) refused what only this machine lacks (a --redis_server_version or
  --redis_engine it has no build of), which the harness installs on VMs.
  Its plan goes to upstream's log unless `relay_plan` is false (a plan
  priced only to check the settings)."""
  workdir = _Workdir()
  config = os.path.join(workdir, 'plan_config.json')
  pathlib.Path(config).write_text(HarnessConfig(groups))
  keyfile = os.path.join(workdir, 'plan_key')
  os.close(os.open(keyfile, os.O_CREAT | os.O_WRONLY | os.O_NOFOLLOW, 0o600))
  os.chmod(keyfile, 0o600)  # the harness refuses a key others can read
  machines = os.path.join(workdir, 'plan_vms.json')
  pathlib.Path(machines).write_text(StandInVmFile(groups, keyfile))
  _RunHarness(['--dry_run', f'--benchmarks={HARNESS_BENCHMARK}',
               f'--static_vm_file={machines}',
               f'--benchmark_config_file={config}',
               f'--results_dir={workdir}'] + OnTheVms(study), 'check',
              relay_stdout=relay_plan)


def OnTheVms(study: List[str]) -> List[str]:
  """The study's flags for the dry run, which runs on this machine (the PKB
  runner) for upstream's VMs: the harness installs memtier on cloud VMs
  and checks a static VM's tool and paths at its prepare stage, on the VM;
  so the plan takes memtier unless the study names another generator, and
  leaves a --memtier_path to that stage."""
  kept = [a for a in study if _FlagName(a) != 'memtier_path']
  chosen = [a.split('=', 1)[-1] for a in kept
            if _FlagName(a) == 'load_generator']
  if chosen and chosen[-1] != 'auto':
    return kept
  return [a for a in kept if _FlagName(a) != 'load_generator'] + [
      '--load_generator=memtier']


def _RunFile(spec, name: str) -> str:
  """A file of this spec's harness run. Upstream keeps every spec of an
  invocation in one temporary directory: a spec's later stage
  (--run_stage=run, another invocation) read the config of whichever spec
  was prepared last, and the harness prices a later stage by its config,
  so its rows were priced as the other spec's machine type."""
  return os.path.join(_Workdir(),
                      f'{spec.redis_price_performance_run_uri}_{name}')


def _Argv(spec, stages: str) -> List[str]:
  workdir = _Workdir()
  return [f'--benchmarks={HARNESS_BENCHMARK}',
          f'--static_vm_file={_RunFile(spec, "static_vms.json")}',
          f'--benchmark_config_file={_RunFile(spec, "config.json")}',
          f'--run_uri={spec.redis_price_performance_run_uri}',
          f'--results_dir={os.path.join(workdir, "results")}',
          '--nocollapse_labels', '--timing_measurements=none',
          f'--run_stage={stages}'] + Study()


def Prepare(spec) -> None:
  """Prices the VMs upstream provisioned, hands them to the harness, and
  runs its provision and prepare stages."""
  _SayErrorsInOneLine()
  # Upstream calls Cleanup on cloud VMs only when asked to (it deletes
  # them); the harness's cleanup stops the shards of a failed stage too,
  # and Cleanup reports an unconfirmed answer (`Run`).
  spec.always_call_cleanup = True
  study = Study()
  groups = {}
  for group in GROUPS:
    vms = spec.vm_groups.get(group) or []
    if not vms:
      raise BridgeError(f'redis_price_performance needs a {group} group.')
    first = vms[0]
    groups[group] = dict(
        count=len(vms), machine_type=first.machine_type, zone=first.zone,
        priced_as=PricedAs(first.CLOUD, first.machine_type, first.zone,
                           study, group))
  _DryRun(groups, study)
  spec.redis_price_performance_run_uri = RunUri(
      flags.FLAGS.run_uri, getattr(spec, 'sequence_number', 0) or 0)
  pathlib.Path(_RunFile(spec, 'config.json')).write_text(
      HarnessConfig(groups))
  pathlib.Path(_RunFile(spec, 'static_vms.json')).write_text(
      StaticVmFile(spec.vm_groups))
  _RunHarness(_Argv(spec, 'provision,prepare'), 'prepare')


def UpstreamMetadata(metadata: Dict[str, Any]) -> Dict[str, Any]:
  """The harness's metadata, the keys upstream's providers set renamed; its
  perfkitbenchmarker_version is the row's harness_version, not kept twice."""
  out = {}
  for key, value in metadata.items():
    if key == 'perfkitbenchmarker_version' and 'harness_version' in metadata:
      continue
    if key in UPSTREAM_KEYS or key.startswith(UPSTREAM_PREFIXES):
      key = f'harness_{key}'
    out[key] = value
  return out


def RunCap(rows: List[Dict[str, Any]]) -> Dict[str, Any]:
  """The cap of one harness run (`CAP_KEYS`), from its first row that
  names it; {} from a harness that names none."""
  for row in rows:
    metadata = row.get('metadata') or {}
    if all(key in metadata for key in CAP_KEYS):
      return {key: metadata[key] for key in CAP_KEYS}
  return {}


class _KeyTwice(ValueError):
  """A row's object names a key twice (`_UniqueKeys`)."""


def _UniqueKeys(pairs: List[Tuple[str, Any]]) -> Dict[str, Any]:
  """A JSON object of a row (json's object_pairs_hook), refusing one that
  names a key twice: json keeps the last, silently. The harness's
  json_input does this for every file it reads back; the plugin imports
  only upstream's modules, so it has its own."""
  obj = dict(pairs)
  if len(obj) != len(pairs):
    seen = set()
    for key, _ in pairs:
      if key in seen:
        raise _KeyTwice(key)
      seen.add(key)
  return obj


def _RowProblem(row: Any) -> Optional[str]:
  """What keeps a parsed row from being a sample (None: nothing)."""
  if not isinstance(row, dict):
    return 'is not a JSON object'
  for key in ('metric', 'unit'):
    if not isinstance(row.get(key), str):
      return f'has no "{key}"' if key not in row else f'"{key}" is not text'
  if 'value' not in row:
    return 'has no "value"'
  value = row['value']
  if isinstance(value, bool) or not isinstance(value, (int, float)):
    return '"value" is not a number'
  if not isinstance(row.get('metadata') or {}, dict):
    return '"metadata" is not an object'
  return None


def SamplesFromRows(lines, path: str, official: bool = False
                    ) -> Tuple[List[sample.Sample], int]:
  """One harness run's JSON rows (--nocollapse_labels), read from `path`,
  as upstream samples, each naming the run's cap (`RunCap`), and how many
  were withheld: upstream's publisher marks every sample of a run with its
  own --official, so under it only the rows the harness marked official
  are returned. A row naming a key twice, or one that is not a sample
  (`_RowProblem`), is refused (HarnessRunError, one line naming `path`):
  nothing of the run is published."""
  rows = []
  for number, line in enumerate(lines, 1):
    if not line.strip():
      continue
    try:
      row = json.loads(line, object_pairs_hook=_UniqueKeys)
    except _KeyTwice as e:
      raise HarnessRunError(
          f'redis_price_performance run: {path}: a row of this run gives the '
          f'key {json.dumps(str(e)[:40])} twice in one object, which the '
          'harness never writes; refused rather than publishing either '
          'value (the file was edited or damaged).') from None
    except (ValueError, RecursionError):
      problem = 'is not JSON'
    else:
      problem = _RowProblem(row)
    if problem:
      raise HarnessRunError(
          f'redis_price_performance run: {path}: row {number} {problem}, '
          'not a row the harness writes; nothing of the run is published '
          '(the file was edited or damaged).')
    rows.append(row)
  cap = RunCap(rows)
  samples, withheld = [], 0
  for row in rows:
    if official and row.get('official') is not True:
      withheld += 1
      continue
    metadata = {**cap, **(row.get('metadata') or {})}
    metadata['harness_run_uri'] = row.get('run_uri')
    samples.append(sample.Sample(row['metric'], row['value'], row['unit'],
                                 UpstreamMetadata(metadata),
                                 timestamp=row.get('timestamp')))
  return samples, withheld


def _ResultsPath(spec) -> str:
  return os.path.join(_Workdir(), 'results',
                      spec.redis_price_performance_run_uri,
                      'perfkitbenchmarker_results.json')


def Run(spec) -> List[sample.Sample]:
  """The harness's latency-capped search; its rows as upstream samples.

  An unconfirmed answer (the harness's exit 4, unless --accept_unconfirmed)
  or a search that failed after measuring (exit 1) fails the benchmark, its
  rows still published, none official: Cleanup raises the failure, after
  upstream has collected them; under upstream's --official (which would
  mark every row official) or without a cleanup stage, Run raises it.
  """
  _SayErrorsInOneLine()
  path = _ResultsPath(spec)
  before = os.path.getsize(path) if os.path.exists(path) else 0
  code, last = _RunHarness(_Argv(spec, 'run'), 'run',
                           accept=(0, UNCONFIRMED_EXIT, FAILED_EXIT))
  wrote = os.path.exists(path) and os.path.getsize(path) > before
  if code == FAILED_EXIT and not wrote:
    raise HarnessRunError(f'redis_price_performance run: {last}')
  if not os.path.exists(path):
    raise HarnessRunError(
        f'redis_price_performance run: the harness wrote no results at '
        f'{path}; see its pkb.log beside it.')
  official = bool(flags.FLAGS.official)
  with open(path) as f:
    f.seek(before)
    samples, withheld = SamplesFromRows(f, path, official=official)
  if withheld:
    logging.warning(
        'redis_price_performance: %d of the harness\'s rows are not '
        'official by its verdicts; under --official upstream would publish '
        'them as official, so they are not handed to it (they are in %s).',
        withheld, path)
  if code == 0:
    return samples
  failure = 'redis_price_performance run: ' + last.rstrip('.').replace(
      '(--accept_unconfirmed exits 0)',
      '(--redis_price_performance_flags=--accept_unconfirmed accepts it)')
  if official or 'cleanup' not in (flags.FLAGS.run_stage or ()):
    raise HarnessRunError(
        f'{failure}; its rows are in {path}, none published.')
  logging.warning('%s; its rows go to upstream\'s publishers, none '
                  'official, and Cleanup fails the benchmark.', failure)
  spec.redis_price_performance_failure = failure
  return samples


def Cleanup(spec) -> None:
  """The harness's cleanup and teardown stages; then an unconfirmed answer
  fails the benchmark (`Run`)."""
  _SayErrorsInOneLine()
  failure = getattr(spec, 'redis_price_performance_failure', None)
  spec.redis_price_performance_failure = None  # raised once
  if (getattr(spec, 'redis_price_performance_run_uri', None) and
      not getattr(spec, 'redis_price_performance_cleaned', False)):
    spec.redis_price_performance_cleaned = True  # once, even if it fails
    _RunHarness(_Argv(spec, 'cleanup,teardown'), 'cleanup')
  if failure:
    raise HarnessRunError(failure)
