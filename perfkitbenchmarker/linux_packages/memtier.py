"""memtier_benchmark: find or install it, and read its version.

memtier is in no Debian release. Local runs use it when it is on PATH or given
by --memtier_path; otherwise the benchmark falls back to redis-benchmark (a
--memtier_path that is not there is refused, never replaced).
Remote VMs install it from Redis's APT repository (remote_install.py); no
source build. `path` is --memtier_path, passed down by the study's options.
"""

import os
import re
import shlex
import shutil

from absl import flags

from perfkitbenchmarker import errors
from perfkitbenchmarker import providers
from perfkitbenchmarker import run_scope
from perfkitbenchmarker import terminal_text
from perfkitbenchmarker import trusted_programs
from perfkitbenchmarker import vm_util
from perfkitbenchmarker.linux_packages import argv_secret
from perfkitbenchmarker.linux_packages import remote_install

flags.DEFINE_string('memtier_path', None,
                    'memtier_benchmark binary to use (default: the one on '
                    'PATH, if any).')

DEFAULT_PATH = 'memtier_benchmark'


def IsAvailable(vm, path: str = DEFAULT_PATH) -> bool:
  _, _, rc = vm.RemoteCommandWithReturnCode(
      f'command -v {shlex.quote(path)} >/dev/null 2>&1 || '
      f'test -x {shlex.quote(path)}')
  return rc == 0


def Install(vm, path: str = DEFAULT_PATH) -> None:
  if IsAvailable(vm, path):
    # Only a program no other user can change runs (trusted_programs),
    # checked on the VM before it first runs there.
    trusted_programs.CheckOn(
        vm, path, f'--memtier_path={path}' if os.sep in path else path)
    # A wrapper is refused here, before any probe (handed the password,
    # it would start the real tool with it in its argv).
    argv_secret.CheckTool(vm, path)
    return
  if path != DEFAULT_PATH:
    raise errors.PrerequisiteError(
        f'memtier_benchmark not found on {vm.name}: --memtier_path={path} '
        'is no executable there; give the memtier_benchmark binary, or drop '
        '--memtier_path to use the one on PATH (or redis-benchmark).')
  if not vm.CAN.installs_packages:
    raise errors.PrerequisiteError(
        f'memtier_benchmark not found on {vm.name} ({path}); give '
        '--memtier_path or use --load_generator=redis_benchmark.')
  remote_install.InstallMemtier(vm)


class _ThisMachine:
  """This machine as the install checks see a VM (a Local dry run has no
  VMs yet, but its client is this machine): argv_secret's library is built
  in a private temporary directory, so the dry run refuses what prepare
  would (a wrapper, no C compiler)."""
  name = 'this machine'
  CAN = providers.CAPABILITIES['Local']  # It is this machine.

  def __init__(self, scratch_dir: str):
    self.scratch_dir = scratch_dir

  def Install(self, package: str) -> None:
    if '_argv_secret_library' not in self.__dict__:
      argv_secret.Install(self)

  def HasCommand(self, program: str) -> bool:
    return trusted_programs.Which(program) is not None

  def WriteFile(self, path: str, content: str, mode: int) -> None:
    with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode),
              'w') as f:
      f.write(content)

  def RemoteCommand(self, command: str, timeout=None, what=None):
    vm_util.CheckedOutput(*self.RemoteCommandWithReturnCode(command, timeout),
                          what or command, what or command)

  def RemoteCommandWithReturnCode(self, command: str, timeout=None):
    return vm_util.RunLocal(command, timeout=timeout or 30)


def CheckLocalPath(path: str) -> None:
  """What Install would refuse on a Local client, for a dry run too: a
  --memtier_path that is no executable here, a wrapper (argv_secret) or no
  memtier.

  Raises:
    errors.UsageError: in one line.
  """
  if not (os.path.isfile(path) and os.access(path, os.X_OK)):
    raise errors.UsageError(
        f'--memtier_path={path} is no executable on this machine; give the '
        'memtier_benchmark binary, or drop --memtier_path to use the one on '
        'PATH (or redis-benchmark).')
  trusted_programs.Check(path, f'--memtier_path={path}')  # Before it runs.
  # In TMPDIR only when no other user can rename things there (MakeTempDir:
  # TEMP_ADVICE), as the SSH control directories: the library built in it
  # is preloaded into the tool, and a directory swapped for another user's
  # between the build and that load would run their library as this user.
  scratch = run_scope.MakeTempDir('pkb-check-')
  try:
    here = _ThisMachine(scratch)
    argv_secret.CheckTool(here, path)
    GetVersion(here, path)  # Another program is no memtier.
  except errors.PrerequisiteError as e:
    raise errors.UsageError(str(e)) from None
  finally:
    shutil.rmtree(scratch, ignore_errors=True)


def GetVersion(vm, path: str = DEFAULT_PATH) -> str:
  out, err, _ = vm.RemoteCommandWithReturnCode(f'{shlex.quote(path)} --version')
  text = out + err
  match = re.search(r'memtier_benchmark\s+(\S+)', text)
  if not match:
    # Another program (e.g. --memtier_path=/bin/sh) would run the preload
    # and the probes as if it were memtier and leave no keys.
    first = (vm_util.Tail(terminal_text.Lines(text.strip())[0], 1)[:120] or
             'nothing')
    raise errors.PrerequisiteError(
        f'{path} on {vm.name} is not memtier_benchmark: its --version printed '
        f"'{first}'; give the memtier_benchmark binary (--memtier_path).")
  # Source builds between releases print the placeholder 255.255.255.
  return match.group(1)
