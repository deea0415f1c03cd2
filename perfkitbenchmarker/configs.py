"""Benchmark configuration: YAML, merged in PKB's order.

Precedence (later wins): the benchmark module's BENCHMARK_CONFIG <
--benchmark_config_file < --config_override < dedicated flags (--machine_type,
--zone, ...). Any key that the benchmark's default config does not define is an
error naming the key, except inside `flags:` where any defined flag may be set.

Extension seam: a benchmark declares everything it accepts in its
BENCHMARK_CONFIG; `ALLOWED_OPTIONAL_KEYS` lists keys a config may add although
the default does not carry them.
"""

from typing import Any, Dict, List, Mapping, Sequence

import yaml

from perfkitbenchmarker import errors

# Keys a user config may add to a vm_group or a vm_spec.<cloud> entry even when
# the module's default config leaves them out.
ALLOWED_OPTIONAL_KEYS = {
    'vm_group': {'vm_spec', 'vm_count', 'os_type', 'static_vms'},
    'vm_spec': {'machine_type', 'zone', 'num_cpus', 'memory_mib', 'image',
                'boot_disk_size', 'priced_as'},
}


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


def LoadYaml(text: str, source: str) -> Any:
  try:
    return _Unaliased(yaml.safe_load(text))
  except yaml.YAMLError as e:
    mark = getattr(e, 'problem_mark', None)
    where = f' at line {mark.line + 1}' if mark else ''
    raise errors.ConfigError(f'{source}: invalid YAML{where}: '
                             f'{getattr(e, "problem", e)}') from None


def _MergeInto(base: Dict[str, Any], update: Mapping[str, Any],
               path: List[str], strict_template: Any) -> None:
  """Merges `update` into `base`, checking keys against `strict_template`."""
  for key, value in update.items():
    key_path = path + [str(key)]
    template = (strict_template.get(key)
                if isinstance(strict_template, Mapping) else None)
    _CheckKeyAllowed(key, key_path, strict_template)
    if isinstance(value, Mapping) and isinstance(base.get(key), Mapping):
      _MergeInto(base[key], value, key_path, template)
    else:
      base[key] = _Unaliased(value)


def _CheckKeyAllowed(key: Any, key_path: Sequence[str],
                     template: Any) -> None:
  if not isinstance(template, Mapping):
    return
  if key in template:
    return
  # Free-form levels: benchmark flags, vm_spec per cloud, and the optional keys.
  parent = key_path[-2] if len(key_path) >= 2 else ''
  grandparent = key_path[-3] if len(key_path) >= 3 else ''
  if parent == 'flags':
    return
  if parent == 'vm_groups':
    return
  if parent == 'vm_spec':
    return  # A cloud name; checked when the spec is read.
  if grandparent == 'vm_spec' and key in ALLOWED_OPTIONAL_KEYS['vm_spec']:
    return
  if grandparent == 'vm_groups' and key in ALLOWED_OPTIONAL_KEYS['vm_group']:
    return
  raise errors.ConfigError(
      f'Unknown config key "{".".join(key_path)}"; known keys here: '
      f'{", ".join(sorted(map(str, template))) or "none"}.')


def ParseOverride(text: str) -> tuple:
  """Splits '<benchmark>.<path>=<yaml>' into (benchmark, path list, value)."""
  if '=' not in text:
    raise errors.ConfigError(
        f'--config_override "{text}" has no "="; use '
        '<benchmark>.<path.to.key>=<value>.')
  key, raw_value = text.split('=', 1)
  parts = [p for p in key.strip().split('.')]
  if len(parts) < 2 or not all(parts):
    raise errors.ConfigError(
        f'--config_override "{text}": the key must be '
        '<benchmark>.<path.to.key>, e.g. redis_memtier.vm_groups.servers.'
        'vm_count=2.')
  value = LoadYaml(raw_value, f'--config_override "{text}"')
  return parts[0], parts[1:], value


def _ApplyOverride(config: Dict[str, Any], path: Sequence[str], value: Any,
                   template: Mapping[str, Any], text: str) -> None:
  node, tnode = config, template
  for i, key in enumerate(path):
    key_path = path[:i + 1]
    try:
      _CheckKeyAllowed(key, ['?'] + list(key_path), tnode)
    except errors.ConfigError:
      raise errors.ConfigError(
          f'--config_override "{text}": unknown key '
          f'"{".".join(key_path)}".') from None
    last = i == len(path) - 1
    if last:
      node[key] = value
      return
    if key not in node or node[key] is None:
      node[key] = {}
    if not isinstance(node[key], dict):
      raise errors.ConfigError(
          f'--config_override "{text}": "{".".join(key_path)}" is a value, '
          'not a section.')
    node = node[key]
    tnode = tnode.get(key) if isinstance(tnode, Mapping) else None


def MergeConfigs(benchmark_name: str, default_config: Mapping[str, Any],
                 config_file_text: str | None,
                 overrides: Sequence[str]) -> Dict[str, Any]:
  """Returns the benchmark's config after the file and overrides are applied."""
  template = _Unaliased(default_config)
  config = _Unaliased(default_config)
  if config_file_text:
    user = LoadYaml(config_file_text, '--benchmark_config_file') or {}
    if not isinstance(user, Mapping):
      raise errors.ConfigError(
          '--benchmark_config_file must hold a mapping of benchmark names.')
    section = user.get(benchmark_name)
    if section is not None:
      if not isinstance(section, Mapping):
        raise errors.ConfigError(
            f'--benchmark_config_file: "{benchmark_name}" must be a mapping.')
      _MergeInto(config, section, [benchmark_name], template)
  for text in overrides:
    name, path, value = ParseOverride(text)
    if name != benchmark_name:
      continue
    _ApplyOverride(config, path, value, template, text)
  return config


def CheckOverridesNameBenchmarks(overrides: Sequence[str],
                                 benchmark_names: Sequence[str]) -> None:
  for text in overrides:
    name, _, _ = ParseOverride(text)
    if name not in benchmark_names:
      raise errors.ConfigError(
          f'--config_override "{text}" names benchmark "{name}", which is not '
          f'in --benchmarks ({", ".join(benchmark_names)}).')


def ApplyConfigFlags(config_flags: Mapping[str, Any], flag_values) -> None:
  """Sets flags from a config's `flags:` section unless given on the CLI.

  As in PKB, a flag on the command line wins over the config's value.
  """
  if not isinstance(config_flags, Mapping):
    raise errors.ConfigError('The config\'s "flags" must be a mapping of '
                             'flag names to values.')
  for name, value in config_flags.items():
    if name not in flag_values:
      raise errors.ConfigError(
          f'Config sets unknown flag "{name}"; see ./pkb.py --helpfull for '
          'flag names.')
    flag = flag_values[name]
    if flag.present:
      continue
    try:
      if isinstance(value, list):
        value = ','.join(str(v) for v in value)
      flag.parse(value if isinstance(value, str) else
                 str(value).lower() if isinstance(value, bool) else str(value))
    except Exception as e:  # pylint: disable=broad-except  (absl raises many)
      raise errors.ConfigError(
          f'Config flag {name}={value!r} is invalid: {e}') from None
    finally:
      # parse() counts as "given on the command line"; a config value is not.
      flag.present = 0
