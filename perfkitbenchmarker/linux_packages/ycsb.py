"""YCSB with PKB's Redis binding: install it on a client VM and run it.

What gets installed is YCSB core from Maven Central (pinned in
ycsb_redis_binding/pom.xml) plus our binding, `pkb.ycsb.RedisDataTypesClient`
(ycsb_redis_binding/src): stock YCSB's Redis binding stores every record as a
hash, and the Tair YCSB study needs strings, lists, sets and sorted sets too
(docs/ycsb.md).

* Local: scripts/setup.sh built it (scripts/build_ycsb.sh) into build/ycsb/;
  Install checks `java` and that build and refuses with the command to run
  (a dry run too: CheckLocalBuildDir).
* Remote (SSH/GCP/AWS) VMs: a non-root check first (`MissingToolsCommand`:
  a `java` of at least MIN_JAVA, `mvn`); only what is missing is installed,
  as root, from the OS packages (`JdkInstallScript`: headless JDK 17,
  Maven), so a machine that has both needs no sudo. The binding's sources
  are then written into the VM's scratch directory (`RemoteBuildDir`) and
  built there with the same Maven command as scripts/build_ycsb.sh, detached
  so a dropped connection does not kill it (YCSB core and Jedis come from
  Maven Central into the VM user's ~/.m2). Nothing is read from this
  machine's checkout or build on the VM; a second Install in the same run
  finds the jar and returns. The scratch directory, and the build with it,
  goes at teardown.

`YcsbCommand` builds the argument list of one `load` or `run` phase. The
password never goes into it: the connection properties (host, user,
password) are a 0600 file given with -P (`ConnectionProperties`).
"""

import dataclasses
import os
import shlex
from typing import List, Mapping, Optional, Sequence, Tuple

from perfkitbenchmarker import errors
from perfkitbenchmarker import regular_files
from perfkitbenchmarker import shell_scripts
from perfkitbenchmarker import terminal_text
from perfkitbenchmarker import trusted_programs
from perfkitbenchmarker import vm_util
from perfkitbenchmarker.linux_packages import package_commands
from perfkitbenchmarker.linux_packages import remote_install

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
BINDING_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                           'ycsb_redis_binding')
WORKLOAD_DIR = os.path.join(BINDING_DIR, 'workloads')
LOCAL_BUILD_DIR = os.path.join(REPO_ROOT, 'build', 'ycsb')
JAR_NAME = 'pkb-ycsb-redis.jar'
CLASSPATH_NAME = 'classpath.txt'
DB_CLASS = 'pkb.ycsb.RedisDataTypesClient'
CLIENT_CLASS = 'site.ycsb.Client'
YCSB_VERSION = '0.17.0'
# The pom compiles for Java 11 (maven.compiler.release); remote VMs get 17.
MIN_JAVA = 11
BUILD_TIMEOUT_S = 1200
COMMAND_GROUPS = ('string', 'hash', 'list', 'set', 'zset')
# Most bytes a workload property file may have: YCSB's core workloads are
# about 3 KiB; the bound keeps /dev/zero or a wrong file out of memory.
MAX_WORKLOAD_BYTES = 1 << 20
# classpath.txt names YCSB core, Jedis and their dependencies: ~40 jars.
MAX_CLASSPATH_BYTES = 1 << 20
# Properties the harness sets itself; a user value would point YCSB at
# another server or put the password on the command line.
MANAGED_PROPERTIES = frozenset({
    'redis.host', 'redis.port', 'redis.hosts', 'redis.user',
    'redis.password', 'redis.cluster', 'redis.command_group', 'recordcount',
    'operationcount', 'fieldcount', 'fieldlength', 'threadcount', 'db',
    'insertstart', 'insertcount'})


@dataclasses.dataclass(frozen=True)
class Installation:
  """Where YCSB is on one VM."""
  java: str
  jar: str
  classpath: str  # ':'-joined jars (YCSB core, Jedis, dependencies)
  build_dir: str

  @property
  def full_classpath(self) -> str:
    return f'{self.jar}:{self.classpath}'


def _ReadBuild(vm, build_dir: str) -> Optional[Installation]:
  jar = os.path.join(build_dir, JAR_NAME)
  cp_file = os.path.join(build_dir, CLASSPATH_NAME)
  out, _, rc = vm.RemoteCommandWithReturnCode(
      f'test -f {shlex.quote(jar)} && cat {shlex.quote(cp_file)}')
  if rc != 0 or not out.strip():
    return None
  return Installation('java', jar, out.strip(), build_dir)


def Install(vm, build_dir: Optional[str] = None) -> None:
  """Makes YCSB and the binding available on `vm` (see the module doc)."""
  vm.ycsb = Installed(vm, build_dir)


def Installed(vm, build_dir: Optional[str] = None) -> Installation:
  """Where YCSB is on `vm`; builds it there first on remote VMs.

  `build_dir` is for Local runs only (a build of scripts/build_ycsb.sh): a
  remote VM always builds from the sources written into its own scratch
  directory, never from a path of this machine.
  """
  if not vm.CAN.installs_packages:
    return _LocalBuild(build_dir or LOCAL_BUILD_DIR)
  if build_dir is not None:
    raise errors.UsageError(
        f'--ycsb_build_dir={build_dir} is for Local runs; {vm.name} builds '
        'YCSB in its scratch directory.')
  return _RemoteBuild(vm, RemoteBuildDir(vm))


def _LocalBuild(build_dir: str) -> Installation:
  # A Local VM is this machine: its PATH and files are read here, by a dry
  # run too (CheckLocalBuildDir), which has no VM yet.
  if trusted_programs.Which('java') is None:
    raise errors.PrerequisiteError(
        'java not found: install a JDK 17 (Debian: openjdk-17-jdk-headless) '
        'and Maven, then run scripts/setup.sh.')
  return _ReadLocalBuild(build_dir)


def _ReadLocalBuild(build_dir: str) -> Installation:
  jar = os.path.join(build_dir, JAR_NAME)
  try:  # Bounded, regular files only: a FIFO there would block the read.
    if not os.path.isfile(jar):
      raise regular_files.NotRegular(f'no {JAR_NAME}')
    classpath = regular_files.Utf8Text(regular_files.ReadRegular(
        os.path.join(build_dir, CLASSPATH_NAME), MAX_CLASSPATH_BYTES)).strip()
  except (regular_files.NotRegular, regular_files.NotText):
    classpath = ''
  if not classpath:
    raise errors.PrerequisiteError(
        f'the YCSB binding is not built in {build_dir} (no {JAR_NAME} with '
        f'its {CLASSPATH_NAME}); run scripts/build_ycsb.sh (scripts/setup.sh '
        'does).')
  found = Installation('java', jar, classpath, build_dir)
  # java runs these jars' code, as root with the run's password.
  for path in found.full_classpath.split(':'):
    if path:
      trusted_programs.Check(path, f'the YCSB build in {build_dir} ({path})')
  return found


def CheckLocalBuildDir(build_dir: Optional[str]) -> None:
  """What Install would refuse on a Local client, for a dry run too: no
  java, a --ycsb_build_dir that is no directory, no build of
  scripts/build_ycsb.sh in it (without the flag: in build/ycsb), or jars
  another user can change.

  Raises:
    errors.UsageError: in one line.
  """
  what = f'--ycsb_build_dir={build_dir}: ' if build_dir else ''
  if build_dir and not os.path.isdir(build_dir):
    problem = (f'{build_dir} is not a directory' if os.path.lexists(build_dir)
               else f'there is no directory {build_dir}')
    raise errors.UsageError(
        f'{what}{problem}; give the directory scripts/build_ycsb.sh built '
        'into, or drop the flag for build/ycsb.')
  try:
    _LocalBuild(build_dir or LOCAL_BUILD_DIR)
  except errors.PrerequisiteError as e:
    raise errors.UsageError(f'{what}{e}') from None


def RemoteBuildDir(vm) -> str:
  """The binding's sources and build on a remote VM (its scratch dir)."""
  return f'{vm.scratch_dir}/ycsb'


def _RemoteBuild(vm, build_dir: str) -> Installation:
  found = _ReadBuild(vm, build_dir)  # built already by this run
  if found is not None:
    return found
  out, _ = vm.RemoteCommand(MissingToolsCommand(),
                            what=f'looking for java and mvn on {vm.name}')
  missing = out.split()
  if missing:
    remote_install.RunAsRoot(
        vm, remote_install.ScriptFor(vm, JdkInstallScript),
        f'Installing {" and ".join(missing)} for YCSB')
  sources = BindingSources()
  dirs = sorted({os.path.dirname(f'{build_dir}/src/{relative}')
                 for relative, _ in sources})
  vm.RemoteCommand('mkdir -p ' + ' '.join(shlex.quote(d) for d in dirs),
                   what=f'making {build_dir} on {vm.name}')
  for relative, text in sources:
    vm.WriteFile(f'{build_dir}/src/{relative}', text, mode=0o644)
  # Detached: a first build downloads YCSB core and Jedis into ~/.m2 and may
  # outlive a dropped SSH connection.
  out, err, rc = vm.RunDetached(RemoteBuildCommand(build_dir),
                                BUILD_TIMEOUT_S)
  if rc != 0:
    reason = 'timed out' if rc == -9 else f'exit {rc}'
    detail = MavenErrors('\n'.join((out, err)))
    raise errors.PrerequisiteError(
        f'Building the YCSB binding on {vm.name} failed ({reason}): {detail}')
  found = _ReadBuild(vm, build_dir)
  if found is None:
    raise errors.PrerequisiteError(
        f'The YCSB build on {vm.name} left no {JAR_NAME} in {build_dir}.')
  return found


def MissingToolsCommand() -> str:
  """Prints `jdk` and/or `maven` for what the build needs and lacks."""
  return shell_scripts.Command('ycsb_tools.sh', MIN_JAVA, 'missing')


def JdkInstallScript(info) -> str:
  """Root script installing what MissingToolsCommand reports missing: a
  headless JDK 17 and Maven from the OS packages; checks java afterwards
  (scripts/ycsb_tools.sh)."""
  package_commands.RequireFamily(info, 'a JDK and Maven')
  return shell_scripts.Command('ycsb_tools.sh', MIN_JAVA, 'install',
                               info.family, info.package_manager)


def MavenErrors(output: str, lines: int = 3) -> str:
  """The first [ERROR] lines of Maven's output (its last ones are help)."""
  found = [line.strip() for line in terminal_text.Lines(output)
           if line.lstrip().startswith('[ERROR] ')]
  return vm_util.Tail('\n'.join(found[:lines]) or output, lines)


def BindingSources() -> List[Tuple[str, str]]:
  """(path relative to the binding dir, text) of every file the build needs."""
  files = []
  for root, _, names in os.walk(BINDING_DIR):
    for name in sorted(names):
      path = os.path.join(root, name)
      relative = os.path.relpath(path, BINDING_DIR)
      if relative.startswith('workloads') or relative == 'pom.xml' or \
          relative.endswith('.java'):
        with open(path) as f:
          files.append((relative, f.read()))
  return sorted(files)


def RemoteBuildCommand(build_dir: str) -> str:
  """The Maven build on a remote VM, as scripts/build_ycsb.sh runs it."""
  d = shlex.quote(build_dir)
  return (f'mvn -q -B -f {d}/src/pom.xml -Dpkb.build.dir={d}/target package '
          f'dependency:build-classpath -Dmdep.outputFile={d}/{CLASSPATH_NAME} '
          f'-Dmdep.includeScope=runtime && '
          f'cp {d}/target/pkb-ycsb-redis-1.0.0.jar {d}/{JAR_NAME}')


def WorkloadFile(name_or_path: str) -> str:
  """Our shipped copy of a core workload by name (workloada), or a path."""
  if os.sep in name_or_path:
    return name_or_path
  path = os.path.join(WORKLOAD_DIR, name_or_path)
  if not os.path.isfile(path):
    raise errors.UsageError(
        f'--ycsb_workloads: no workload "{name_or_path}"; PKB ships '
        f'{", ".join(sorted(os.listdir(WORKLOAD_DIR)))}, or give a path to '
        'any YCSB core workload file.')
  return path


def WorkloadText(name_or_path: str) -> str:
  """The text of a workload (WorkloadFile's), read bounded, a regular file
  only; one line saying why not, so a bad path is refused before the run
  (by the options' Check) rather than after its VMs are up."""
  path = WorkloadFile(name_or_path)
  try:
    return regular_files.ReadRegular(path, MAX_WORKLOAD_BYTES).decode('utf-8')
  except regular_files.NotRegular as e:
    raise errors.UsageError(
        f'--ycsb_workloads: cannot read {path}: {e}.') from None
  except UnicodeDecodeError:
    raise errors.UsageError(
        f'--ycsb_workloads: {path} is not UTF-8 text; give a YCSB core '
        'workload property file.') from None


def ConnectionProperties(hosts: Sequence[Tuple[str, int]], user: str,
                         password: str, cluster: bool,
                         timeout_ms: int) -> str:
  """The -P file holding where to connect and the credentials (mode 0600)."""
  lines = [f'redis.hosts={",".join(f"{h}:{int(p)}" for h, p in hosts)}',
           f'redis.cluster={"true" if cluster else "false"}',
           f'redis.timeout={int(timeout_ms)}',
           f'redis.user={user}',
           f'redis.password={password}']
  return '\n'.join(lines) + '\n'


def YcsbCommand(install: Installation, phase: str, workload_file: str,
                connection_file: str, properties: Mapping[str, object],
                threads: int, jvm_options: Sequence[str] = ()) -> List[str]:
  """argv of one YCSB phase ('load' or 'run'); never holds the password."""
  if phase not in ('load', 'run'):
    raise ValueError(f'phase {phase!r}: load or run')
  for key in properties:
    if key in ('redis.password', 'redis.user'):
      raise ValueError(f'{key} belongs in the connection file, not argv')
  argv = [install.java, *jvm_options, '-cp', install.full_classpath,
          CLIENT_CLASS,
          '-load' if phase == 'load' else '-t', '-db', DB_CLASS,
          '-P', workload_file, '-P', connection_file]
  for key, value in properties.items():
    argv += ['-p', f'{key}={value}']
  argv += ['-threads', str(int(threads))]
  return argv
