"""Benchmark configuration: YAML, merged in PKB's order.

Precedence (later wins): the benchmark module's BENCHMARK_CONFIG <
--benchmark_config_file < --config_override < dedicated flags (--machine_type,
--zone, ...). Any key that the benchmark's default config does not define is an
error naming the key, except inside `flags:`, where any defined flag may be
set (checked by the flag's own parser), and `vm_groups:`, which is read
through the `VmGroup` model.

Extension seam: a benchmark declares everything it accepts in its
BENCHMARK_CONFIG; what a VM group may say is `VmGroup`'s. A module written
for upstream PKB calls `LoadConfig(BENCHMARK_CONFIG, user_config,
BENCHMARK_NAME)`, and its vm_spec may name upstream's anchors
(`*default_dual_core`, `*default_single_core`): CONFIG_CONSTANTS.
"""

import copy
import re
from typing import Annotated, Any, Dict, List, Mapping, Optional, Sequence

from absl import flags
import pydantic
import yaml

from perfkitbenchmarker import errors
from perfkitbenchmarker import flags as pkb_flags
from perfkitbenchmarker import paths
from perfkitbenchmarker import regular_files
from perfkitbenchmarker import terminal_text

def _Unaliased(value: Any) -> Any:
  """A deep copy in which YAML anchors no longer share one object.

  copy.deepcopy keeps shared references shared, so an override of one
  anchored section would leak into every alias of it.
  """
  if isinstance(value, Mapping):
    return {k: _Unaliased(v) for k, v in value.items()}
  if isinstance(value, list):
    return [_Unaliased(v) for v in value]
  return value


# Most VMs one group, and one run in all, may ask for (each is created,
# billed and torn down).
MAX_GROUP_VMS = 1000
MAX_RUN_VMS = 1000

# Most nodes a config may expand to once aliases are followed: far above any
# real config (the default has ~30), far below what hurts (a 500-byte
# "billion laughs" file expands to 10^9).
MAX_EXPANDED_NODES = 100000

# Most levels a config may nest: far above any real config (the presets
# nest eight at most), far below Python's recursion limit, which PyYAML's
# composer (one call per level) and every reader of the result would reach.
MAX_DEPTH = 100

# Most bytes a config file may have: far above any real one (the presets in
# configs/ have at most 5 KiB), so a huge file is refused before YAML reads
# it.
MAX_CONFIG_BYTES = 4 << 20

# Flags that name the run itself; a config may not set them (PKB reads them
# before any config is loaded, so there they would be silently ignored: a
# section's `flags: {flag_matrix: m}` ran one plain run, not matrix m).
RESERVED_CONFIG_FLAGS = frozenset({
    'benchmarks', 'run_uri', 'results_dir', 'run_stage',
    'benchmark_config_file', 'config_override', 'json_path', 'csv_path',
    'dry_run', 'flag_matrix', 'flag_zip', 'run_processes'})


class _AliasBomb(Exception):
  pass


class _TooDeep(Exception):
  pass


class _DuplicateKey(Exception):
  pass


# YAML 1.1's base-60 numbers (PyYAML's int and float resolvers): 1:30 is 90.
_SEXAGESIMAL = re.compile(r'[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?')


class _BoundedLoader(yaml.SafeLoader):  # pylint: disable=too-many-ancestors
  """A SafeLoader that refuses documents whose aliases expand too far.

  Each composed node's expanded size (itself plus its children's, aliases
  counted at the size of what they point to) is computed as the document is
  composed, before anything is constructed or copied, so a small file of
  nested aliases is refused in microseconds instead of expanding.
  """

  UNIQUE_KEYS = True  # A key twice in one mapping is refused.

  def __init__(self, stream):
    super().__init__(stream)
    self._expanded = {}
    self._depth = 0

  def resolve(self, kind, value, implicit):
    # Text, as in YAML 1.2: a SET:GET ratio written unquoted, upstream's
    # 'memtier_ratio: 1:4', was the number 64 and refused as
    # '--memtier_ratio="64" must be SET:GET like 1:1'.
    if (kind is yaml.ScalarNode and implicit[0] and
        _SEXAGESIMAL.fullmatch(value)):
      return self.DEFAULT_SCALAR_TAG
    return super().resolve(kind, value, implicit)

  def compose_node(self, parent, index):
    if self._depth >= MAX_DEPTH:
      raise _TooDeep(self.peek_event().start_mark.line + 1)
    self._depth += 1
    try:
      node = super().compose_node(parent, index)
    finally:
      self._depth -= 1
    if id(node) in self._expanded:  # An alias: already counted.
      return node
    if isinstance(node, yaml.MappingNode) and self.UNIQUE_KEYS:
      _CheckKeysOnce(node)
    size = 1
    if isinstance(node, yaml.SequenceNode):
      size += sum(self._expanded.get(id(c), 1) for c in node.value)
    elif isinstance(node, yaml.MappingNode):
      size += sum(self._expanded.get(id(k), 1) + self._expanded.get(id(v), 1)
                  for k, v in node.value)
    if size > MAX_EXPANDED_NODES:
      raise _AliasBomb(node.start_mark.line + 1)
    self._expanded[id(node)] = size
    return node


def _CheckKeysOnce(node: yaml.MappingNode) -> None:
  """Raises _DuplicateKey for a key given twice in one mapping: PyYAML
  keeps the last, so a second `redis_memtier:` section (or flag) dropped
  the first without a word. Keys a merge (<<:) brings may be overridden."""
  seen = {}
  for key, _ in node.value:
    if not isinstance(key, yaml.ScalarNode) or key.tag.endswith(':merge'):
      continue
    first = seen.setdefault((key.tag, key.value), key.start_mark.line + 1)
    if first != key.start_mark.line + 1:
      raise _DuplicateKey(key.value, first, key.start_mark.line + 1)


def ReadConfigFile(path: str, flag: str = '--benchmark_config_file') -> str:
  """The text of a config file, or one line saying why it cannot be read.

  A relative `configs/<name>.yaml` that is not there is the preset of that
  name (paths.Preset), so the presets work from any directory and from an
  installed package.
  """
  path = paths.Preset(path)
  try:
    # Bounded, a regular file only: a FIFO would wait for a writer for
    # ever and /dev/zero fill the memory.
    data = regular_files.ReadRegular(path, MAX_CONFIG_BYTES)
  except regular_files.NotRegular as e:
    raise errors.UsageError(f'{flag}: cannot read {path}: {e}.') from None
  try:
    return regular_files.Utf8Text(data)
  except regular_files.NotText as e:
    raise errors.ConfigError(
        f'{flag}: {path} is {e}; save it as UTF-8.') from None


class _LastKeyWinsLoader(_BoundedLoader):  # pylint: disable=too-many-ancestors
  UNIQUE_KEYS = False


def LoadYaml(text: str, source: str, lines_before: int = 0,
             unique_keys: bool = True) -> Any:
  """`text` read as YAML; an error names its line in `source`, whose
  first line is `text`'s line `lines_before` + 1 (text put before it).
  A key given twice in one mapping is refused unless not `unique_keys`."""
  loader = _BoundedLoader if unique_keys else _LastKeyWinsLoader
  try:
    return _Unaliased(yaml.load(text, Loader=loader))  # nosec: safe
  except _AliasBomb as e:
    raise errors.ConfigError(
        f'{source}: YAML aliases expand to more than {MAX_EXPANDED_NODES:,} '
        f'nodes (at line {e.args[0] - lines_before}); refused as an alias '
        'bomb.') from None
  except _DuplicateKey as e:
    key, first, second = e.args
    raise errors.ConfigError(
        f'{source}: key "{key}" is given twice in one mapping (lines '
        f'{first - lines_before} and {second - lines_before}); YAML would '
        'keep the second alone: merge them or rename one.') from None
  except _TooDeep as e:
    raise errors.ConfigError(
        f'{source}: YAML nested more than {MAX_DEPTH} levels deep (at line '
        f'{e.args[0] - lines_before}); a config nests a few.') from None
  except yaml.YAMLError as e:
    mark = getattr(e, 'problem_mark', None)
    where = f' at line {mark.line + 1 - lines_before}' if mark else ''
    raise errors.ConfigError(f'{source}: invalid YAML{where}: '
                             f'{getattr(e, "problem", e)}') from None


def _MergeInto(base: Dict[str, Any], update: Mapping[str, Any],
               path: List[str], template: Any, where: str) -> None:
  """Merges `update` into `base` as PKB does (mappings key by key, any other
  value replaces), refusing keys `template` (the default config) lacks."""
  for key, value in update.items():
    key_path = path + [str(key)]
    if isinstance(template, Mapping) and key not in template:
      raise errors.ConfigError(
          f'{where}: unknown key "{".".join(key_path)}"; known keys here: '
          f'{", ".join(sorted(map(str, template))) or "none"}.')
    if isinstance(value, Mapping) and base.get(key) is None:
      base[key] = {}
    if not isinstance(value, Mapping):
      base[key] = _Unaliased(value)
    elif not isinstance(base[key], Mapping):
      raise errors.ConfigError(
          f'{where}: "{".".join(key_path)}" is a value, not a section.')
    else:  # flags: and vm_groups: are checked as a whole, after the merge.
      free = key in ('flags', 'vm_groups') or not isinstance(template, Mapping)
      _MergeInto(base[key], value, key_path, None if free else template[key],
                 where)


def ParseOverride(text: str) -> tuple:
  """Splits '<benchmark>.<path>=<yaml>' into (benchmark, path list, value)."""
  if '=' not in text:
    raise errors.ConfigError(
        f'--config_override "{text}" has no "="; use '
        '<benchmark>.<path.to.key>=<value>.')
  key, raw_value = text.split('=', 1)
  parts = key.strip().split('.')
  if len(parts) < 2 or not all(parts):
    raise errors.ConfigError(
        f'--config_override "{text}": the key must be '
        '<benchmark>.<path.to.key>, e.g. redis_memtier.vm_groups.servers.'
        'vm_count=2.')
  if len(parts) > MAX_DEPTH:  # It nests the value as deep (a file's bound).
    raise errors.ConfigError(
        f'--config_override "{text}": the key has {len(parts):,} parts; a '
        f'config nests at most {MAX_DEPTH} levels.')
  value = LoadYaml(raw_value, f'--config_override "{text}"')
  return parts[0], parts[1:], value


def MergeConfigs(benchmark_name: str, default_config: Mapping[str, Any],
                 config_file_text: str | None,
                 overrides: Sequence[str]) -> Dict[str, Any]:
  """Returns the benchmark's config after the file (its shape checked by
  CheckUserConfig before) and the overrides are applied."""
  template = _Unaliased(default_config)
  config = _Unaliased(default_config)
  if config_file_text:
    user = LoadYaml(config_file_text, '--benchmark_config_file') or {}
    _MergeInto(config, user.get(benchmark_name) or {}, [benchmark_name],
               template, '--benchmark_config_file')
  for text in overrides:
    name, path, value = ParseOverride(text)
    if name == benchmark_name:  # As PKB: {a: {b: value}}, merged.
      for key in reversed(path):
        value = {key: value}
      _MergeInto(config, value, [], template, f'--config_override "{text}"')
  NullCountsAreNumVms(config)
  CheckVmGroups(config, benchmark_name)
  return config


def CheckOverridesNameBenchmarks(overrides: Sequence[str],
                                 benchmark_names: Sequence[str]) -> None:
  for text in overrides:
    name, _, _ = ParseOverride(text)
    if name not in benchmark_names:
      raise errors.ConfigError(
          f'--config_override "{text}" names benchmark "{name}", which is not '
          f'in --benchmarks ({", ".join(benchmark_names)}).')


def CheckNotReserved(flag_name: Any, where: str) -> None:
  if flag_name in RESERVED_CONFIG_FLAGS:
    raise errors.ConfigError(
        f'Config "{where}" sets --{flag_name}, which names the run itself; '
        'give it on the command line instead.')


def CheckUserConfig(user: Any, benchmark_names: Sequence[str]) -> None:
  """Refuses a loaded config file's unknown top-level keys, reserved flags
  and bad VM groups. A top-level key is one of `benchmark_names` (known
  benchmarks and --benchmarks), a named section (PKB's `name:` says which
  benchmark it configures), `benchmarks` or `flags`."""
  if user is None:
    return
  if not isinstance(user, Mapping):
    raise errors.ConfigError(
        '--benchmark_config_file must hold a mapping of benchmark names.')
  allowed = set(benchmark_names) | {'benchmarks', 'flags'}
  for key, value in user.items():
    named = isinstance(value, Mapping) and value.get('name') in allowed
    if key not in allowed and not named:
      raise errors.ConfigError(
          f'--benchmark_config_file: unknown top-level key "{key}"; known: '
          f'{", ".join(sorted(map(str, allowed)))}.')
  top_flags = user.get('flags')
  for name in top_flags if isinstance(top_flags, Mapping) else ():
    CheckNotReserved(name, 'flags')
  sections = {str(k): v for k, v in user.items()
              if k not in ('benchmarks', 'flags')}
  listed = user.get('benchmarks')
  for i, entry in enumerate(listed if isinstance(listed, list) else []):
    if isinstance(entry, Mapping):
      sections.update({f'benchmarks[{i}].{k}': v for k, v in entry.items()})
  for where, section in sections.items():
    if section is not None and not isinstance(section, Mapping):
      raise errors.ConfigError(
          f'--benchmark_config_file: "{where}" must be a mapping.')
    config_flags = (section or {}).get('flags')
    for name in config_flags if isinstance(config_flags, Mapping) else ():
      CheckNotReserved(name, f'{where}.flags')
    NullCountsAreNumVms(section)
    CheckVmGroups(section, where)


def NullCountsAreNumVms(config: Any) -> None:
  """A vm_groups entry's `vm_count: null` becomes --num_vms, as upstream
  PKB's VM group spec reads it (a user's config file too, where it was
  refused: 'vm_count None: input should be a valid integer')."""
  groups = (config or {}).get('vm_groups') if isinstance(
      config, Mapping) else None
  for group in groups.values() if isinstance(groups, Mapping) else ():
    if isinstance(group, dict) and 'vm_count' in group and (
        group['vm_count'] is None):
      group['vm_count'] = flags.FLAGS.num_vms


def _MustBeText(value: Any) -> Any:
  if value is not None and not isinstance(value, str):
    raise ValueError(f'must be text, not {value!r}; quote it in the YAML '
                     f'("{value}")')
  if value is not None and not value.isprintable():
    # A name, never a control sequence: Local's machine_type "\e[31m..."
    # reached the terminal as one in the plan's VM lines. Worded as a
    # flag's is (errors.Problems puts it right after the field's path).
    raise ValueError(terminal_text.NotPrintable(value))
  return value


_Text = Annotated[Optional[str], pydantic.BeforeValidator(_MustBeText)]


def _UpTo(limit: int) -> Any:
  return Optional[Annotated[int, pydantic.Field(ge=1, le=limit)]]


class CloudSpec(pydantic.BaseModel):
  """A vm_spec.<cloud> entry: virtual_machine.VmSpec's fields but cloud."""

  model_config = pydantic.ConfigDict(extra='forbid')
  machine_type: _Text = None
  zone: _Text = None
  os_type: _Text = None
  image: _Text = None
  priced_as: _Text = None
  num_cpus: _UpTo(4096) = None
  memory_mib: _UpTo(64 * 1024 * 1024) = None
  boot_disk_size: _UpTo(65536) = None  # GB


# The clouds a vm_spec may name: this harness's (benchmark_spec reads its
# entry for the run's cloud) and upstream PKB's others (provider_info's
# VALID_CLOUDS), so an upstream config's Azure entry is accepted, unused.
VM_SPEC_CLOUDS = pkb_flags.CLOUDS + ('Static',)
UPSTREAM_ONLY_CLOUDS = ('Azure', 'IBMCloud', 'AliCloud', 'Kubernetes',
                        'DigitalOcean', 'OpenStack', 'CloudStack',
                        'Rackspace', 'Mesos', 'ProfitBricks', 'Docker',
                        'UnitTest')


class VmGroup(pydantic.BaseModel):
  """A vm_groups entry."""

  model_config = pydantic.ConfigDict(extra='forbid')
  vm_spec: Optional[Dict[str, Optional[CloudSpec]]] = None
  vm_count: Annotated[int, pydantic.Field(strict=True, ge=1,
                                          le=MAX_GROUP_VMS)] = 1
  os_type: _Text = None
  static_vms: Any = None  # PKB's; refused below, never ignored.

  @pydantic.field_validator('vm_spec')
  @classmethod
  def _KnownClouds(cls, value: Any) -> Any:
    # As upstream PKB's spec refuses them: a misspelt cloud ('gcp') was
    # skipped, and the run took the default config's machine type.
    unknown = [c for c in value or {}
               if c not in VM_SPEC_CLOUDS + UPSTREAM_ONLY_CLOUDS]
    if unknown:
      raise ValueError(f'names no cloud: {", ".join(map(repr, unknown))}; '
                       f'the clouds here are {", ".join(VM_SPEC_CLOUDS)} '
                       '(upstream PKB\'s others are accepted and unused)')
    return value

  @pydantic.field_validator('static_vms')
  @classmethod
  def _NoStaticVms(cls, value: Any) -> Any:
    if value is not None:
      raise ValueError('is PKB\'s way to name existing machines, not read '
                       'here; list them in a --static_vm_file instead '
                       '(README: "Existing machines")')
    return value


_VmGroups = pydantic.create_model(
    '_VmGroups', vm_groups=(Optional[Dict[str, VmGroup]], None))


def Checked(model: Any, data: Any, where: str) -> Any:
  """VM groups read through the pydantic `model`, or one line naming what
  is wrong with them."""
  try:
    return model.model_validate(data)
  except pydantic.ValidationError as e:
    keys = ''
    if any(p['type'] == 'extra_forbidden' for p in e.errors()):
      keys = (f' (a group has {", ".join(VmGroup.model_fields)}; a '
              f'vm_spec.<cloud> has {", ".join(CloudSpec.model_fields)})')
    raise errors.ConfigError(f'{where}: {errors.Problems(e)}{keys}.') from None


def CheckVmGroups(config: Any, where: str) -> Dict[str, VmGroup]:
  """A config's vm_groups, checked: group name -> VmGroup."""
  groups = (config or {}).get('vm_groups')
  if isinstance(groups, Mapping) and len(groups) > MAX_RUN_VMS:  # Read none.
    raise errors.ConfigError(f'{where}: vm_groups has {len(groups):,} groups; '
                             f'a run has at most {MAX_RUN_VMS} VMs in all.')
  checked = Checked(_VmGroups, {'vm_groups': groups}, where).vm_groups or {}
  total = sum(group.vm_count for group in checked.values())
  if total > MAX_RUN_VMS:
    raise errors.ConfigError(f'{where}: vm_groups ask for {total:,} VMs in '
                             f'all; a run has at most {MAX_RUN_VMS}.')
  return checked


def ConfigText(value: Any) -> str:
  """A YAML value as the text absl parses (lists joined with commas)."""
  if isinstance(value, list):
    return ','.join(str(v) for v in value)
  if isinstance(value, bool):
    return str(value).lower()
  return value if isinstance(value, str) else str(value)


def ParseConfigValue(flag_values, name: Any, value: Any,
                     where: str = 'Config') -> Any:
  """The value a config's `flags: {name: value}` gives the flag, checked.

  The flag's own parser and bounds (declared on its definition) decide, so
  a value is refused with the words the command line gets: "<where>: flag
  --name=value: why". Nothing is set: a matrix checks every axis value this
  way before any cell runs, and `ApplyConfigFlags` sets what this returns.
  """
  if name not in flag_values:
    raise errors.ConfigError(
        f'{where} sets unknown flag "{name}"; see ./pkb.py --helpfull for '
        'flag names.')
  scratch = copy.deepcopy(flag_values[name])  # Parsed, nothing set.
  # A list for a repeatable flag (--zone, --machine_price) is its values,
  # one each, as upstream PKB's config flags parse it: joined, [a, b] was
  # the one value 'a,b'.
  text = ([ConfigText(v) for v in value]
          if isinstance(value, list) and isinstance(scratch, flags.MultiFlag)
          else ConfigText(value))
  try:
    scratch.parse(text)
  except (flags.Error, ValueError, TypeError) as e:
    raise errors.ConfigError(
        f'{where}: {pkb_flags.FlagErrorLine(e)}') from None
  return scratch.value


def ApplyConfigFlags(config_flags: Mapping[str, Any], flag_values) -> None:
  """Sets flags from a config's `flags:` section unless given on the CLI.

  As in PKB, a flag on the command line wins over the config's value.
  Upstream's OverrideFlags parses the value (marking it present) and puts
  the flag back after the benchmark; here the value is set and `present`
  stays the command line's, so a refusal can say where a value came from:
  whether a flag was given either way is flag_util.IsGiven.
  """
  if not isinstance(config_flags, Mapping):
    raise errors.ConfigError('The config\'s "flags" must be a mapping of '
                             'flag names to values.')
  for name, value in config_flags.items():
    CheckNotReserved(name, 'flags')
    value = ParseConfigValue(flag_values, name, value)
    if not flag_values[name].present:
      flag_values[name].value = value


def RedisVmGroups(aws_machine_type: str = 'c6gn.16xlarge',
                  client_vms: int = 1) -> str:
  """The `vm_groups:` of a Redis benchmark's BENCHMARK_CONFIG (YAML, indented
  for its section): one server VM (GCP t2d-standard-16, the T2D study's) and
  `client_vms` client VMs (GCP n2-standard-32), of one type on AWS."""
  return f"""  vm_groups:
    servers:
      vm_spec: &server_spec
        Local:
          machine_type: local
          num_cpus: 1
        GCP:
          machine_type: t2d-standard-16
          zone: us-central1-a
        AWS:
          machine_type: {aws_machine_type}
          zone: us-east-1a
      vm_count: 1
    clients:
      vm_spec:
        <<: *server_spec
        GCP:
          machine_type: n2-standard-32
          zone: us-central1-a
      vm_count: {client_vms}
"""


def BenchmarkConfig(name: str, default_yaml: str, user_config: Mapping[str, Any],
                    flag_values) -> Dict[str, Any]:
  """A benchmark's GetConfig: its BENCHMARK_CONFIG < the user's config file <
  --config_override, then the config's `flags:` applied to `flag_values`."""
  default = LoadYaml(default_yaml, name)[name]
  config = MergeConfigs(name, default, user_config.get('file'),
                        user_config.get('overrides', []))
  ApplyConfigFlags(config.get('flags') or {}, flag_values)
  return config


# The YAML anchors upstream PKB puts before every BENCHMARK_CONFIG
# (its configs/default_config_constants.yaml), for the clouds this harness
# has. On Local, the cores of this machine the VM is pinned to; a Static
# machine is what it is (the Local entry stands for it, without a size).
# default_single_core left upstream in 2025 (23824eb: "many machine families
# do not have single-core SKUs"); it stays here for modules written before.
CONFIG_CONSTANTS = """
default_single_core: &default_single_core
  Local:
    machine_type: local
    num_cpus: 1
  GCP:
    machine_type: t2d-standard-1
    zone: us-central1-a
  AWS:
    machine_type: m7a.medium
    zone: us-east-1a
default_dual_core: &default_dual_core
  Local:
    machine_type: local
    num_cpus: 2
  GCP:
    machine_type: n4-standard-2
    zone: us-central1-b
  AWS:
    machine_type: m7i.large
    zone: us-east-1a
"""


def LoadMinimalConfig(benchmark_config: str,
                      benchmark_name: str) -> Dict[str, Any]:
  """A BENCHMARK_CONFIG's section `benchmark_name`, read after
  CONFIG_CONSTANTS so its anchors resolve (upstream PKB's function)."""
  # The module's line numbers in an error, not the joined text's; its
  # config may redefine a constant, the later one kept (as upstream).
  loaded = LoadYaml(f'{CONFIG_CONSTANTS}\n{benchmark_config}', benchmark_name,
                    lines_before=CONFIG_CONSTANTS.count('\n') + 1,
                    unique_keys=False)
  if not isinstance(loaded, Mapping) or not isinstance(
      loaded.get(benchmark_name), Mapping):
    raise errors.ConfigError(
        f'{benchmark_name}: BENCHMARK_CONFIG has no section named '
        f'"{benchmark_name}"; it must start with "{benchmark_name}:".')
  return loaded[benchmark_name]


def LoadConfig(benchmark_config: str, user_config: Mapping[str, Any],
               benchmark_name: str) -> Dict[str, Any]:
  """Upstream PKB's GetConfig body: the module's BENCHMARK_CONFIG (its
  anchors from CONFIG_CONSTANTS) merged with the user's config, as
  BenchmarkConfig merges it (file < --config_override, then the config's
  `flags:` applied). A vm_count of null is --num_vms VMs, as upstream."""
  default = LoadMinimalConfig(benchmark_config, benchmark_name)
  NullCountsAreNumVms(default)
  config = MergeConfigs(benchmark_name, default, user_config.get('file'),
                        user_config.get('overrides', []))
  ApplyConfigFlags(config.get('flags') or {}, flags.FLAGS)
  return config
