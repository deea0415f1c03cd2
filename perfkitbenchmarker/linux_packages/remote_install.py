"""Runs the install scripts on a remote (SSH) VM.

linux_packages/redis_server.py, redis_benchmark.py and memtier.py call these
from their `Install(vm)` on non-Local VMs (system tuning is the machine's:
ssh_vm.py's `ApplySystemTuning`).
Each checks what is already there first (so reruns and existing machines cost
one command), runs the script from package_commands.py as root through
`vm.RunDetached` (an apt run survives a dropped connection) and verifies the
result. Running them on several VMs at once is the caller's job.

Extension seam: the VM needs `RemoteCommandWithReturnCode`, `HasCommand`,
`RunDetached`, `Sudo` and `DetectSystem`; any VM class with those can use
these functions.
"""

import os
import shlex

from perfkitbenchmarker import errors
from perfkitbenchmarker import vm_util
from perfkitbenchmarker.linux_packages import package_commands

INSTALL_TIMEOUT_S = 1200


def RunAsRoot(vm, script: str, what: str,
              timeout: float = INSTALL_TIMEOUT_S) -> str:
  """Runs `script` (package_commands.Script: steps of the shipped
  scripts/install.sh) as root. The VM hands it the shipped scripts'
  directory once checked the run's own, and `vm.Sudo` passes that on
  explicitly: sudo keeps none of the caller's environment."""
  out, err, rc = vm.RunDetached(vm.Sudo(script), timeout)
  if rc != 0:
    reason = 'timed out' if rc == -9 else f'exit {rc}'
    hint = ('; give the user passwordless sudo'
            if 'password is required' in err else '')
    raise errors.PrerequisiteError(
        f'{what} on {vm.name} failed ({reason}): '
        f'{vm_util.Tail(err, 3) or vm_util.Tail(out, 3)}{hint}')
  return out


def ScriptFor(vm, build, *args) -> str:
  """`build(vm's SystemInfo, *args)` (a package_commands script builder);
  its refusal names the VM (installs run on every VM at once)."""
  try:
    return build(vm.DetectSystem(), *args)
  except errors.Error as e:
    raise type(e)(f'On {vm.name}: {e}') from e


def VersionMatches(installed: str, wanted: str) -> bool:
  """'distro' takes any; '7.2' takes 7.2.x; '7.2.4' takes only 7.2.4."""
  return bool(installed) and (wanted == 'distro' or installed == wanted or
                              installed.startswith(wanted + '.'))


def _InstalledVersion(vm, program: str) -> str:
  """The version of the `program` `vm`'s PATH finds ('' if none). What
  PATH finds is checked first (vm.HasCommand, trusted_programs): the run
  executes it, as root on a static machine, with the run's password; so
  is what an install put there, asked again after it."""
  if not vm.HasCommand(program):
    return ''
  out, _, rc = vm.RemoteCommandWithReturnCode(f'{program} --version')
  return package_commands.ServerVersion(out) if rc == 0 else ''


def GetVersion(vm, program: str) -> str:
  """The version `program` (a server) reports, recorded in every sample."""
  out, _ = vm.RemoteCommand(
      f'{shlex.quote(program)} --version',
      what=f'{os.path.basename(program)} --version on {vm.name}')
  return package_commands.ServerVersion(out) or out.strip()


def InstallServer(vm, program: str, product: str, version: str, build,
                  *args) -> None:
  """Runs the script `build(info, *args)` unless `program` at `version` and
  redis-cli are there, then checks the version (another `program` earlier
  on the PATH would shadow the new one)."""
  if (VersionMatches(_InstalledVersion(vm, program), version) and
      vm.HasCommand('redis-cli')):
    return
  RunAsRoot(vm, ScriptFor(vm, build, *args), f'Installing {product} {version}')
  installed = _InstalledVersion(vm, program)
  if not VersionMatches(installed, version):
    raise errors.PrerequisiteError(
        f'{vm.name} runs {product} {installed or "(none)"} after installing '
        f'{version}; check which {program} is first on its PATH.')


def InstallRedis(vm, version: str) -> None:
  InstallServer(vm, 'redis-server', 'Redis', version,
                package_commands.RedisServerInstall, version)


def InstallRedisTools(vm) -> None:
  if vm.HasCommand('redis-benchmark') and vm.HasCommand('redis-cli'):
    return
  RunAsRoot(vm, ScriptFor(vm, package_commands.RedisToolsInstall),
            'Installing redis-tools')


def InstallMemtier(vm) -> None:
  # memtier.Install has already looked for a usable binary.
  RunAsRoot(vm, ScriptFor(vm, package_commands.MemtierInstall),
            'Installing memtier-benchmark')
  out, err, _ = vm.RemoteCommandWithReturnCode('memtier_benchmark --version')
  if not package_commands.MemtierVersionOk(out + err):
    raise errors.PrerequisiteError(
        f'memtier_benchmark on {vm.name} is "{vm_util.Tail(out + err, 1)}"; '
        'need >= 2.4.4 (packages.redis.io has it).')
