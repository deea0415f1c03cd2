"""The engine's constructor settings from flags, checked in one line.

Called by study/options.ServerOptions.FromFlags (the one place the study
reads flags). Each engine takes only its own settings; a flag of another
engine is refused rather than silently ignored.
"""

from typing import Any, Tuple

from perfkitbenchmarker import engines
from perfkitbenchmarker import errors
from perfkitbenchmarker import flag_types
from perfkitbenchmarker import providers
from perfkitbenchmarker.engines import flags as _  # pylint: disable=unused-import
from perfkitbenchmarker.linux_packages import local_redis_builds

# engine -> {flag: constructor argument}; a flag at its default is unset.
_ENGINE_FLAGS = {
    'redis': {'redis_server_io_threads': 'io_threads'},
    'valkey': {'redis_server_io_threads': 'io_threads'},
    'dragonfly': {'dragonfly_proactor_threads': 'proactor_threads',
                  'dragonfly_cluster_mode': 'cluster_mode'},
    'keydb': {'keydb_server_threads': 'server_threads'},
}
REPLICA_ENGINES = ('redis', 'valkey')


def SettingsFromFlags(f) -> Tuple[Tuple[str, Any], ...]:
  """(argument, value) pairs for engines.Get(f.redis_engine, ...)."""
  engine = f.redis_engine
  if engine not in engines.Names():
    raise errors.UsageError(
        f'--redis_engine={engine} is not an engine; choose one of '
        f'{", ".join(engines.Names())}.')
  engines.CheckVersion(engine, f.redis_server_version)
  if not providers.CapabilitiesOfRun(f).installs_packages:
    engines.RefuseLocal(engine)
  own = _ENGINE_FLAGS[engine]
  given = {flag for names in _ENGINE_FLAGS.values() for flag in names
           if f[flag].value != f[flag].default}
  foreign = sorted(given - own.keys())
  if foreign:
    raise errors.UsageError(
        f'--{foreign[0]} does not apply to --redis_engine={engine}; drop it.')
  replicas = f.redis_replicas_per_primary
  if replicas and engine not in REPLICA_ENGINES:
    raise errors.UsageError(
        f'--redis_replicas_per_primary: replicas are set up for '
        f'{" and ".join(REPLICA_ENGINES)} only, not {engine}.')
  if f.redis_cluster_replicas and not f.redis_server_cluster_mode:
    # Counted inside the shards of a cluster only: standalone shards ran
    # without a replica, and no sample said so.
    raise errors.UsageError(
        f'--redis_cluster_replicas={f.redis_cluster_replicas} sets replicas '
        'in a Redis Cluster; add --redis_server_cluster_mode, or give '
        '--redis_replicas_per_primary for standalone shards.')
  if replicas and f.redis_cluster_replicas:
    raise errors.UsageError(
        '--redis_replicas_per_primary and --redis_cluster_replicas both set; '
        'use one (the first adds replicas to --redis_total_num_processes '
        'primaries, the second counts them in it).')
  return tuple((arg, _Value(f, flag)) for flag, arg in own.items()
               if flag in given)


def _Value(f, flag: str):
  if flag != 'redis_server_io_threads':
    return f[flag].value
  # Upstream PKB's redis_memtier runs once per listed value; here one run
  # deploys one server configuration and compares across runs.
  return flag_types.OneValue(
      f[flag].value, flag, 'one run deploys one server configuration; run '
      'one value per run (e.g. a flag_matrix over redis_server_io_threads).')


def CheckLocalVersion(engine: str, version: str) -> None:
  """Local runs the builds this machine has: Redis from Debian or a wheel
  (local_redis_builds.py), Valkey from its wheel; else one line."""
  if engine == 'redis':
    local_redis_builds.ServerPath(version)
    return
  raise errors.UsageError(
      f'--redis_server_version={version}: Local uses the installed '
      f'{engine} server (its version is in the samples); drop the flag or '
      'run on a cloud or --static_vm_file.')

