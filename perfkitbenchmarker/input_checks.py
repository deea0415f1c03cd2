"""Run-level checks of the command line, before anything is created.

The driver calls `CheckRunFlags` first (every number's bounds are on its
flag's definition, checked as absl parses it): where results go and the
benchmark list; `CheckCloudFlags` once the configs are read: where the run
happens. Each
problem is one errors.UsageError line (exit 2), for a dry run exactly as for a real run.
Benchmark settings are checked by their options builders
(study/options.py), config structure by configs.py.

Extension seam: a new run-level flag gets its check here; a provider's own
flags are checked by its CheckPrerequisites.
"""

import getpass
import os
import tempfile
from typing import List, NamedTuple, Optional, Tuple

from perfkitbenchmarker import benchmark_contract
from perfkitbenchmarker import errors
from perfkitbenchmarker import evidence
from perfkitbenchmarker import flag_util
from perfkitbenchmarker import providers
from perfkitbenchmarker import run_log
from perfkitbenchmarker import run_record
from perfkitbenchmarker import run_scope
from perfkitbenchmarker import terminal_text
from perfkitbenchmarker import trusted_programs
from perfkitbenchmarker.publishers import bigquery_schema

# A run's results files in its run directory, unless --json_path and
# --csv_path say otherwise.
RESULTS_JSON = bigquery_schema.RESULTS_FILE
RESULTS_CSV = 'results.csv'


def CheckRunFlags(flag_values, results_dir: str) -> None:
  """Refuses bad run-level flags in one line each (those about where the
  run happens: CheckCloudFlags)."""
  _CheckBenchmarks(flag_values.benchmarks)
  # An empty path is a mistake, not the default: the run went where the
  # flag was to move it from (an empty --static_vm_file measured Local, or
  # --cloud, machines; an empty --memtier_path ran whatever auto found).
  empty = flag_util.GivenEmpty(flag_values, (
      'results_dir', 'json_path', 'csv_path', 'static_vm_file',
      'benchmark_config_file') + PROGRAM_PATH_FLAGS)
  if empty:
    raise errors.UsageError(
        f'--{empty} is empty; give a path, or drop the flag for the default.')
  CheckWritableDir(results_dir, '--results_dir')
  for flag in ('json_path', 'csv_path'):
    path = getattr(flag_values, flag)
    if path:
      _CheckWritableFile(path, f'--{flag}')
  if flag_values.json_path and flag_values.csv_path:
    _CheckNotOneFile(flag_values.json_path, flag_values.csv_path,
                     flag_values)
  _CheckOwner(flag_values)
  _CheckKeysRootAbsolute()


def CheckCloudFlags(flag_values, cloud: str, results_dir: str) -> None:
  """Refuses flags that cannot apply where the run happens, `cloud`: the
  one its configs' flags: name (the nightly cells' `cloud: GCP`), so the
  driver calls it once they are applied, for each matrix cell too."""
  _CheckCloudNames(flag_values)
  _CheckOwner(flag_values)  # Again: a config's flags: may set it.
  _CheckWhere(flag_values, cloud)
  _CheckProgramPaths(flag_values, cloud)
  _CheckKeysOutside(results_dir, cloud)


def ResultsPaths(flag_values, run_dir: str) -> Tuple[str, str]:
  """(JSON lines path, CSV path) of a run: --json_path and --csv_path, by
  default in its run directory."""
  return (flag_values.json_path or os.path.join(run_dir, RESULTS_JSON),
          flag_values.csv_path or os.path.join(run_dir, RESULTS_CSV))


def CheckResultsPaths(flag_values, run_dir: str, run_uri: str) -> None:
  """Refuses results files that would overwrite each other or a file of
  the run itself (its record, its log, its raw output, its lock or keys):
  the samples would be lost, or the run's record, in one line, before the
  run has a directory."""
  json_path, csv_path = ResultsPaths(flag_values, run_dir)
  _CheckNotOneFile(json_path, csv_path, flag_values)
  own_files = [(os.path.join(run_dir, run_record.RECORD_FILE),
                'its run record'),
               (os.path.join(run_dir, run_log.LOG_FILE), 'its log'),
               (run_scope.RunLock(run_uri).path, 'its lock')]
  own_dirs = [(os.path.join(run_dir, evidence.RAW_DIR), 'its raw output'),
              (run_scope.RunKeyDir(run_uri), 'its SSH keys')]
  for flag, path in (('--json_path', flag_values.json_path),
                     ('--csv_path', flag_values.csv_path)):
    if not path:
      continue
    for own, what in own_files:
      if _SameFile(path, own):
        raise errors.UsageError(
            f'{flag}={path} is a file of run {run_uri} itself ({what}, '
            f'{own}); writing samples there would destroy it. Give a path '
            'outside the run\'s own files.')
    resolved = os.path.realpath(path)
    for own, what in own_dirs:
      if resolved.startswith(os.path.realpath(own).rstrip(os.sep) + os.sep):
        raise errors.UsageError(
            f'{flag}={path} is inside {what} ({own}) of run {run_uri}; give '
            'a path outside the run\'s own files.')


def _SameFile(a: str, b: str) -> bool:
  """Whether two paths name one file: one inode when both exist (links,
  relative forms), else one path once symlinks are resolved."""
  try:
    return os.path.samefile(a, b)
  except OSError:
    return os.path.realpath(a) == os.path.realpath(b)


def _CheckNotOneFile(json_path: str, csv_path: str, flag_values) -> None:
  if _SameFile(json_path, csv_path):
    json_is = (f'--json_path={json_path}' if flag_values.json_path else
               f'the JSON results\' default path ({json_path})')
    csv_is = (f'--csv_path={csv_path}' if flag_values.csv_path else
              f'the CSV results\' default path ({csv_path})')
    raise errors.UsageError(
        f'{json_is} and {csv_is} name the same file; each would overwrite '
        'the other\'s rows. Give --json_path and --csv_path different files.')


def _CheckOwner(flag_values) -> None:
  """The run's owner (every sample's, a cloud resource's label) is text a
  results file can hold: without --owner it is getpass's ($LOGNAME, $USER,
  $LNAME, $USERNAME, then the account's name), and a byte there that does
  not decode stopped the run at its first sample (UnicodeEncodeError).
  A given --owner is a name: blank, it labelled the run's GCP resources
  '-' and every sample ' '; a control character reached each sample."""
  if flag_values['owner'].present or flag_values.owner is not None:
    owner = flag_values.owner or ''  # A config's flags: may give it.
    if not owner.strip():
      raise errors.UsageError(
          f'--owner="{owner}" is blank; give a name (it labels the run\'s '
          'cloud resources and every sample), or drop the flag for your '
          'login name.')
    _RequirePrintable('owner', owner, ' (it labels the run\'s cloud '
                      'resources and every sample).')
  if flag_values.owner:
    return  # pkb.Main refused an argument that is not UTF-8.
  owner = getpass.getuser()
  problem = terminal_text.NotUtf8(owner)
  if problem:
    raise errors.UsageError(
        f'the run\'s owner {owner!r}, from the environment ($LOGNAME, '
        f'$USER, $LNAME or $USERNAME), is {problem}; give --owner.')


def _CheckKeysRootAbsolute() -> None:
  """PKB_KEY_DIR names one directory for every stage of a run: a relative
  one was each stage's working directory's. A GCP run provisioned from one
  directory and torn down from another left its private SSH key on disk
  (the record's key lay outside the run's directories as the teardown's
  PKB_KEY_DIR resolved them: 'left alone')."""
  root = os.environ.get(run_scope.KEYS_ENV_VAR)
  if root and not os.path.isabs(root):
    name = run_scope.KEYS_ENV_VAR
    raise errors.UsageError(
        f'{name}={terminal_text.Printable(root)} is a relative path, which '
        'each stage of a run would read from its own working directory (a '
        'teardown started elsewhere leaves the run\'s SSH key behind); give '
        'an absolute path, e.g. '
        f'{name}={terminal_text.Printable(os.path.abspath(root))}.')


def _CheckKeysOutside(results_dir: str, cloud: str) -> None:
  """A cloud run's private SSH key (run_scope.RunKeyDir) is never kept with
  its results, which are meant to be shared (the nightly job uploads
  results/runs/): PKB_KEY_DIR inside the results directory put it in the
  run's own directory (<results>/<run_uri>/pkb_ssh_key)."""
  if not providers.CapabilitiesOf(cloud).made_by_run:
    return  # Only a run that makes its VMs makes their key.
  keys = os.path.realpath(run_scope.KeysRoot())
  results = os.path.realpath(results_dir)
  if keys == results or keys.startswith(results.rstrip(os.sep) + os.sep):
    raise errors.UsageError(
        f'{run_scope.KEYS_ENV_VAR}={run_scope.KeysRoot()} is inside the '
        f'results directory {results_dir}: the run\'s private SSH key would '
        'be kept with its results, which are meant to be shared. Set '
        f'{run_scope.KEYS_ENV_VAR} to a directory of your own outside it (or '
        'unset it: ~/.local/state/pkb/keys).')


# Flags naming programs (or builds of them) this machine runs on Local.
PROGRAM_PATH_FLAGS = ('memtier_path', 'ycsb_build_dir')


def _CheckProgramPaths(flag_values, cloud: str) -> None:
  """A program a Local run would execute from a place another user can
  change (trusted_programs) is refused before anything runs; a path that
  does not exist is left to its benchmark's own check."""
  if not providers.CapabilitiesOf(cloud).is_runner_machine:
    return
  for flag in PROGRAM_PATH_FLAGS:
    path = getattr(flag_values, flag, None)
    if path and os.path.exists(path):
      trusted_programs.Check(path, f'--{flag}={path}')


def _CheckBenchmarks(names) -> None:
  names = [n.strip() for n in names]
  if not names or not all(names):
    raise errors.UsageError(
        '--benchmarks is empty; name at least one, e.g. '
        '--benchmarks=redis_memtier.')
  repeated = sorted({n for n in names if names.count(n) > 1})
  if repeated:
    raise errors.UsageError(
        f'--benchmarks names {", ".join(repeated)} more than once; a '
        'benchmark runs once per run (use a config\'s flag_matrix for '
        'repeats).')


def MissingDirs(path: str) -> List[str]:
  """`path` and its ancestors that do not exist yet, deepest first."""
  missing = []
  path = os.path.abspath(path)
  while not os.path.lexists(path):
    missing.append(path)
    path = os.path.dirname(path)
  return missing


def _NearestExisting(path: str) -> str:
  missing = MissingDirs(path)
  return os.path.dirname(missing[-1]) if missing else os.path.abspath(path)


def CheckWritableDir(path: str, flag: str) -> None:
  """`path` is, or can be made as, a directory this process can write in."""
  problem = _DirProblem(_NearestExisting(path))
  if problem:
    raise errors.UsageError(f'{flag}={path}: {problem}.')


def _DirProblem(existing: str) -> Optional[str]:
  if not os.path.isdir(existing):
    return (f'{existing} is not a directory' if os.path.lexists(existing)
            else f'there is no directory {existing}')
  try:  # os.access is wrong for root and read-only mounts; try for real.
    with tempfile.TemporaryFile(dir=existing, prefix='.pkb-write-check-'):
      pass
  except OSError as e:
    return f'cannot write in {existing} ({e.strerror})'
  return None


def FileProblem(path: str, dirs_made: bool = False) -> Optional[str]:
  """Why a file cannot be written at `path`, or None: the run's results
  files (whose directories the run makes: `dirs_made`) and a bench's
  output, each checked before the minutes of work that end in writing it."""
  # 'dir/' (or 'dir/.') names a directory even before it exists: the open
  # at the end would fail, after the run's VMs and preload.
  if os.path.isdir(path) or os.path.basename(path) in ('', '.', '..'):
    return 'it is a directory; give a file path'
  if os.path.lexists(path) and not os.access(path, os.W_OK):
    return 'the file is not writable'
  where = os.path.dirname(os.path.abspath(path))
  return _DirProblem(_NearestExisting(where) if dirs_made else where)


def _CheckWritableFile(path: str, flag: str) -> None:
  problem = FileProblem(path, dirs_made=True)
  if problem:
    raise errors.UsageError(f'{flag}={path}: {problem}.')


def EffectiveOsType(flag_values, cloud: str) -> Optional[str]:
  """--os_type as the named benchmarks use it on `cloud`.

  A benchmark reproducing a published study may take a retired --os_type
  and boot a named successor: its module's `UsedOsType(requested, cloud)`
  says which (None on Local: recorded, not applied). Otherwise the flag.
  """
  requested = flag_values.os_type
  from perfkitbenchmarker import linux_benchmarks  # pylint: disable=g-import-not-at-top
  modules = [linux_benchmarks.BENCHMARKS.get(n.strip())
             for n in getattr(flag_values, 'benchmarks', None) or ()]
  if not modules or not all(benchmark_contract.Has(m, 'UsedOsType')
                            for m in modules):
    return requested
  used = {m.UsedOsType(requested, cloud) for m in modules}
  return used.pop() if len(used) == 1 else requested


# Flags whose text names something of a cloud's (a project, a zone, a
# network, a machine type, a user, a profile, an address): it goes into API
# calls, labels, the run record and the plan's lines.
CLOUD_NAME_FLAGS = (
    'project', 'zone', 'machine_type', 'client_machine_type', 'os_type',
    'gcp_network', 'gcp_boot_disk_type', 'gcp_ssh_user',
    'gcp_compute_endpoint', 'gcp_ssh_source_range', 'aws_profile',
    'aws_ssh_source_cidr', 'aws_redis_ports')


def _CheckCloudNames(flag_values) -> None:
  """A name is printable text on one line, as a config's are (configs.py):
  --zone=$'us-central1-a\\e[2J' on GCP, --project, --gcp_network and
  --aws_profile with a control character were planned by a dry run."""
  for flag in CLOUD_NAME_FLAGS:
    if flag not in flag_values:
      continue  # A provider's flags, not defined in this process.
    value = flag_values[flag].value
    if isinstance(value, list):  # --zone repeats; the --*_range lists.
      value = ','.join(value)
    if value:
      _RequirePrintable(flag, value,
                        f'; {terminal_text.NOT_PRINTABLE_ADVICE}.')


def _RequirePrintable(flag: str, value: str, then: str) -> None:
  """A flag's name is printable text on one line (`then` ends the line)."""
  if not value.isprintable():
    raise errors.UsageError(
        f'--{flag}{terminal_text.NotPrintable(value, then)}')


class Given(NamedTuple):
  """A flag set away from its default, as a refusal names it."""
  name: str  # '--zone', or 'flags.zone' (a config's flags: section)
  value: str  # as given (a repeated --zone's values joined by commas)
  where: str  # '', or ' in the benchmark config'
  drop: str  # what to drop: 'the flag', or 'it from the benchmark config'

  def Text(self, value: Optional[str] = None) -> str:
    """'--zone=a', 'flags.zone=a in the benchmark config' (`value` shown
    instead of the given text, e.g. a number formatted)."""
    return f'{self.name}={self.value if value is None else value}{self.where}'


def GivenFlag(flag_values, flag: str) -> Optional[Given]:
  """How `flag` got its value, None when it has its default: the one place
  a refusal keyed on a flag's value learns whether and where it was set.

  On the command line it is `present`; a config's `flags:` section (a
  --benchmark_config_file, --config_override=<benchmark>.flags.<flag>=...,
  a matrix cell's) sets the value only (configs.ApplyConfigFlags; upstream
  marks it present), so a check of `present` alone let `flags.zone` past
  the refusal of --zone (flag_util.IsGiven). Nothing else sets these flags
  (a config's vm_spec keys are read by the spec, not as flags)."""
  state = flag_values[flag]
  value = state.value
  if isinstance(value, list):  # --zone repeats, as upstream PKB's
    value = ','.join(str(v) for v in value)
  if state.present:
    return Given(f'--{flag}', value, '', 'the flag')
  if not flag_util.IsGiven(flag_values, flag):
    return None
  return Given(f'flags.{flag}', value, ' in the benchmark config',
               'it from the benchmark config')


def _CheckWhere(flag_values, cloud: str) -> None:
  """Flags about where VMs run: refused where they cannot apply."""
  os_type = EffectiveOsType(flag_values, cloud)
  recorded_only = os_type is None  # The benchmark records it (Local).
  if os_type and os_type.lower().startswith('windows'):
    raise errors.UsageError(
        f'--os_type={os_type}: the Redis study runs on Linux VMs only.')
  can = providers.CapabilitiesOf(cloud)
  if can.is_runner_machine:
    cores = 'Local VMs are cores of this machine, priced by --local_priced_as'
    for flag, why in (
        ('zone', providers.ZONE_ON_THIS_MACHINE),
        ('machine_type', cores), ('client_machine_type', cores),
        ('os_type', 'Local runs on this machine\'s OS')):
      given = GivenFlag(flag_values, flag)
      if given and not (flag == 'os_type' and recorded_only):
        raise errors.UsageError(providers.NotOnThisMachine(
            given.name, given.value + given.where, why, drop=given.drop))
    return
  if not can.made_by_run:
    # Machines of a --static_vm_file: a type or zone flag named them in
    # the plan and the samples ('1 x t2d-standard-16 ... priced as GCP
    # n2d-standard-2', '1 x static in us-central1-a') while they are the
    # file's, at --local_priced_as's price. On a cloud they say where and
    # what the VMs the run makes are, as upstream's.
    typed = ('name a machine\'s type with its machine_type key in the file '
             'and the price with --local_priced_as')
    for flag, instead in (
        ('machine_type', typed), ('client_machine_type', typed),
        ('zone', 'name a machine\'s zone with its zone key in the file')):
      given = GivenFlag(flag_values, flag)
      if given:
        raise errors.UsageError(
            f'{given.Text()}: existing machines '
            '(--static_vm_file) are the ones the file lists; '
            f'{instead}, and drop {given.drop}.')
  given = GivenFlag(flag_values, 'local_server_cpu_quota')
  if given:
    raise errors.UsageError(
        f'{given.Text(f"{flag_values.local_server_cpu_quota:g}")}: a CPU quota '
        'on this machine\'s cores holds Local servers only, and this run is '
        f'on {cloud}; drop {given.drop}.')
  providers.CheckOsType(cloud, os_type)
