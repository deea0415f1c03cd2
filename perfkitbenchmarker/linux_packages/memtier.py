"""memtier_benchmark: find or install it, and read its version.

memtier is in no Debian release. Local runs use it when it is on PATH or given
by --memtier_path; otherwise the benchmark falls back to redis-benchmark.
Remote VMs install it from Redis's APT repository through the VM's
`InstallMemtier` hook (see providers); no source build.
"""

import re
import shlex

from absl import flags

from perfkitbenchmarker import errors

flags.DEFINE_string('memtier_path', None,
                    'memtier_benchmark binary to use (default: the one on '
                    'PATH, if any).')

FLAGS = flags.FLAGS
# memtier < 2.4.4 miscomputes Ops/sec (pull requests #465 and #503 fixed it);
# the parser recomputes throughput from counts, so older ones still work.
FIXED_DURATION_VERSION = (2, 4, 4)


def Path() -> str:
  return FLAGS.memtier_path or 'memtier_benchmark'


def IsAvailable(vm) -> bool:
  _, _, rc = vm.RemoteCommandWithReturnCode(
      f'command -v {shlex.quote(Path())} >/dev/null 2>&1 || '
      f'test -x {shlex.quote(Path())}')
  return rc == 0


def Install(vm) -> None:
  if IsAvailable(vm):
    return
  installer = getattr(vm, 'InstallMemtier', None)
  if vm.CLOUD == 'Local' or installer is None:
    raise errors.PrerequisiteError(
        f'memtier_benchmark not found on {vm.name} ({Path()}); give '
        '--memtier_path or use --load_generator=redis_benchmark.')
  installer()


def GetVersion(vm) -> str:
  out, err, _ = vm.RemoteCommandWithReturnCode(f'{shlex.quote(Path())} --version')
  text = out + err
  match = re.search(r'memtier_benchmark\s+(\S+)', text)
  version = match.group(1) if match else text.strip().splitlines()[0:1]
  # Source builds between releases print the placeholder 255.255.255.
  return str(version)
