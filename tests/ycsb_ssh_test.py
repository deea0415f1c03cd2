"""redis_ycsb over SSH: YCSB's remote install and a full run on a real sshd.

What is real and what is a stand-in:

  * Real: `./pkb.py --benchmarks=redis_ycsb --static_vm_file=...` with both
    VMs this machine through the sshd on 127.0.0.1 (sshd_fixture.py); the
    harness's remote install (the java/mvn check, the binding's sources
    written into the client VM's scratch directory, Maven building them
    there, detached), redis-server, the JDK and YCSB's load and run phases.
  * Stand-in: the package managers. apt-get, dnf and yum on the VM's PATH
    only log their arguments and systemctl refuses, so nothing is installed
    on this machine; the real java and mvn are present, so the check must
    find them and install nothing. `java` and `mvn` there are wrappers that
    log each call (and, for YCSB, which files its scratch directory held)
    before running the real programs; `mvn` runs offline, from the Maven
    cache scripts/build_ycsb.sh filled, so the test never reaches Maven
    Central.
  * Missing java: the install script itself (`ycsb.JdkInstallScript`) runs
    through bash with a PATH of stand-ins only: a package manager that logs
    and "installs" a java and mvn stand-in, so the commands it issues for
    each OS family, and its check afterwards, are tested without root.

The VM's PATH comes from a forced command on the test's own SSH key, so the
harness's commands run unchanged.
"""

import dataclasses
import json
import os
import shutil
import subprocess
import time

import pytest

import e2e_support as e2e
from perfkitbenchmarker import errors
from perfkitbenchmarker import process_stat
from perfkitbenchmarker import providers
from perfkitbenchmarker.linux_packages import ycsb
from perfkitbenchmarker.study import ycsb_options

from sshd_fixture import sshd  # pylint: disable=unused-import  (fixture)

_APT = 'apt-get -o DPkg::Lock::Timeout=600 -y -q'


def _MavenCacheReady() -> bool:
  """YCSB core, Jedis and the rest in ~/.m2 (scripts/build_ycsb.sh)."""
  path = os.path.join(ycsb.LOCAL_BUILD_DIR, ycsb.CLASSPATH_NAME)
  if not os.path.exists(path):
    return False
  with open(path) as f:
    jars = f.read().strip().split(':')
  return all(os.path.exists(j) for j in jars)


# --- The install script, run through bash -----------------------------------

_JAVA = '#!/bin/sh\necho \'{banner}\' >&2\n'
_MVN = '#!/bin/sh\necho "Apache Maven 3.8.7"\n'
# A package manager that logs its arguments and "installs" stand-ins for
# the JDK package (a java 17) and maven (an mvn). The package named
# `missing` fails the install, as one the distribution lacks does; any other
# installs nothing.
_PACKAGE_MANAGER = r'''#!/bin/bash
echo "$(/usr/bin/basename "$0") $*" >> @LOG@
[[ " $* " == *" install "* ]] || exit 0
for p in "$@"; do
  case $p in
    @MISSING@) echo "No package $p available." >&2; exit 1 ;;
    @JDK@)
      banner='openjdk version "17.0.9" 2023-10-17'
      printf '#!/bin/sh\necho %s >&2\n' "'$banner'" > @BIN@/java ;;
    maven)
      printf '#!/bin/sh\necho Apache Maven 3.8.7\n' > @BIN@/mvn ;;
  esac
done
/bin/chmod 755 @BIN@/java @BIN@/mvn 2>/dev/null
exit 0
'''


@dataclasses.dataclass
class Os:
  """A SystemInfo look-alike: what JdkInstallScript reads."""
  family: str
  package_manager: str
  os_id: str = 'debian'
  os_pretty_name: str = ''

  @property
  def display_name(self) -> str:
    return self.os_pretty_name or self.os_id


class StandIns:
  """A directory that is the script's whole PATH (and the shipped
  scripts)."""

  def __init__(self, tmp_path, manager='apt-get',
               jdk_package='openjdk-17-jdk-headless', missing='-none-'):
    self.bin = tmp_path / 'bin'
    self.bin.mkdir()
    # ycsb_tools.sh, as a VM ships it.
    (tmp_path / 'scratch').mkdir(mode=0o700)
    self.scripts = e2e.ShippedScripts(
        tmp_path / 'scratch')['PKB_SCRIPTS']
    self.log = tmp_path / 'packages.log'
    text = _PACKAGE_MANAGER
    for key, value in (('LOG', str(self.log)), ('BIN', str(self.bin)),
                       ('JDK', jdk_package), ('MISSING', missing)):
      text = text.replace(f'@{key}@', value)
    self.Write(manager, text)

  def Write(self, name, text):
    (self.bin / name).write_text(text)
    (self.bin / name).chmod(0o755)

  def Java(self, banner):
    self.Write('java', _JAVA.format(banner=banner))

  def Run(self, script):
    """(stdout, stderr, rc) of `script` under bash with only the stand-ins."""
    done = subprocess.run(['/bin/bash', '-c', script], capture_output=True,
                          text=True, timeout=30, check=False,
                          env={'PATH': str(self.bin), 'HOME': str(self.bin),
                               'PKB_SCRIPTS': self.scripts})
    return done.stdout, done.stderr, done.returncode

  def Logged(self):
    return self.log.read_text().splitlines() if self.log.exists() else []


DEBIAN = Os('debian', 'apt')


@pytest.mark.e2e
def test_missing_tools_check(tmp_path):
  tools = StandIns(tmp_path)
  assert tools.Run(ycsb.MissingToolsCommand())[0].split() == ['jdk', 'maven']
  tools.Java('java version "1.8.0_392"')  # too old for the build
  tools.Write('mvn', _MVN)
  assert tools.Run(ycsb.MissingToolsCommand())[0].split() == ['jdk']
  for banner in ('openjdk version "17.0.15" 2025-04-15',
                 'openjdk version "21" 2023-09-19'):
    tools.Java(banner)
    assert tools.Run(ycsb.MissingToolsCommand()) == ('', '', 0)
  assert tools.Logged() == []


@pytest.mark.e2e
def test_java_missing_installs_the_jdk_and_maven_debian(tmp_path):
  tools = StandIns(tmp_path)
  out, err, rc = tools.Run(ycsb.JdkInstallScript(DEBIAN))
  assert rc == 0, err
  assert tools.Logged() == [
      f'{_APT} update',
      f'{_APT} install openjdk-17-jdk-headless maven']
  assert out.strip().splitlines()[-1] == f'java 17, {tools.bin}/mvn'


@pytest.mark.e2e
def test_only_what_is_missing_is_installed(tmp_path):
  tools = StandIns(tmp_path)
  tools.Write('mvn', _MVN)
  tools.Java('java version "1.8.0_392"')
  assert tools.Run(ycsb.JdkInstallScript(DEBIAN))[2] == 0
  assert tools.Logged() == [f'{_APT} update',
                            f'{_APT} install openjdk-17-jdk-headless']


@pytest.mark.e2e
def test_java_present_installs_nothing(tmp_path):
  tools = StandIns(tmp_path)
  tools.Write('mvn', _MVN)
  tools.Java('openjdk version "17.0.15" 2025-04-15')
  out, err, rc = tools.Run(ycsb.JdkInstallScript(DEBIAN))
  assert rc == 0, err
  assert tools.Logged() == []
  assert out.strip() == f'java 17, {tools.bin}/mvn'


@pytest.mark.e2e
def test_rhel_falls_back_to_corretto(tmp_path):
  # Amazon Linux 2023 has no java-17-openjdk-devel.
  tools = StandIns(tmp_path, manager='dnf',
                   jdk_package='java-17-amazon-corretto-devel',
                   missing='java-17-openjdk-devel')
  out, err, rc = tools.Run(ycsb.JdkInstallScript(Os('rhel', 'dnf')))
  assert rc == 0, err
  assert tools.Logged() == ['dnf install -y java-17-openjdk-devel',
                            'dnf install -y java-17-amazon-corretto-devel',
                            'dnf install -y maven']
  assert out.strip().endswith(f'java 17, {tools.bin}/mvn')


@pytest.mark.e2e
def test_a_java_still_too_old_fails_naming_it(tmp_path):
  tools = StandIns(tmp_path, jdk_package='-none-')  # installs no java
  tools.Java('java version "1.8.0_392"')
  tools.Write('mvn', _MVN)
  _, err, rc = tools.Run(ycsb.JdkInstallScript(DEBIAN))
  assert rc != 0
  assert 'java on PATH is version 8 after installing' in err


def test_unknown_os_is_refused():
  with pytest.raises(errors.PrerequisiteError, match='by hand'):
    ycsb.JdkInstallScript(Os('unknown', '', 'alpine', 'Alpine Linux'))


def test_build_dir_is_for_local_runs_only(pkb_flags, tmp_path):
  pkb_flags.ycsb_build_dir = 'build/ycsb'
  opts = ycsb_options.YcsbStudyOptions.FromFlags(pkb_flags)
  assert opts.build_dir == os.path.abspath('build/ycsb')
  pkb_flags.static_vm_file = str(tmp_path / 'vms.json')
  with pytest.raises(errors.UsageError, match='is for Local runs'):
    ycsb_options.YcsbStudyOptions.FromFlags(pkb_flags)

  class RemoteVm:
    CAN, name = providers.CAPABILITIES['Static'], 'clients-0'

  with pytest.raises(errors.UsageError, match='builds YCSB in its scratch'):
    ycsb.Installed(RemoteVm(), build_dir=ycsb.LOCAL_BUILD_DIR)


def test_maven_errors_are_its_first_error_lines():
  output = '\n'.join([
      '[ERROR] Failed to execute goal on project pkb-ycsb-redis: Could not '
      'resolve dependencies',
      '[ERROR] ', '[ERROR] To see the full stack trace of the errors, re-run',
      '[ERROR] Re-run Maven using the -X switch to enable full debug',
      '[ERROR] [Help 1] http://cwiki.example/DependencyResolutionException'])
  assert ycsb.MavenErrors(output).startswith(
      '[ERROR] Failed to execute goal on project pkb-ycsb-redis')


# --- A full run over SSH -------------------------------------------------


_LOGGING_WRAPPER = '''#!/bin/bash
# Stand-in wrapper (tests/ycsb_ssh_test.py): logs the call, runs the real one.
echo "@NAME@ $*" >> @LOG@
@EXTRA@
exec @REAL@ @OPTIONS@ "$@"
'''
# For YCSB's JVM: which files the scratch directory (its cwd) held.
_LIST_SCRATCH = ('case " $* " in *" site.ycsb.Client "*) '
                 'find "$PWD" -type f >> @FILES@ ;; esac')
_REFUSE = '#!/bin/sh\necho "$0 must not run in tests/ycsb_ssh_test.py" >&2\n' \
          'exit 97\n'


@dataclasses.dataclass
class Vm:
  """The sshd's machine as the test's key logs in to it."""
  keyfile: str
  calls: str     # java and mvn calls, one line each
  files: str     # files of the scratch dir each YCSB JVM started in
  packages: str  # package manager calls


@pytest.fixture
def vm_login(sshd, tmp_path):  # pylint: disable=redefined-outer-name
  stubs = tmp_path / 'stubs'
  vm = Vm(str(tmp_path / 'vm_key'), str(tmp_path / 'calls.log'),
          str(tmp_path / 'files.log'), str(tmp_path / 'packages.log'))
  tools = {name: f'#!/bin/sh\necho "{name} $*" >> {vm.packages}\n'
           for name in ('apt-get', 'dnf', 'yum')}
  tools['systemctl'] = _REFUSE
  # Only used when not root (vm.Sudo wraps in `sudo -n bash -c`).
  tools['sudo'] = '#!/bin/sh\n[ "$1" = -n ] && shift\nexec "$@"\n'
  for name, options, extra in (('java', '', _LIST_SCRATCH),
                               ('mvn', '--offline', '')):
    text = _LOGGING_WRAPPER
    for key, value in (('NAME', name), ('LOG', vm.calls),
                       ('EXTRA', extra.replace('@FILES@', vm.files)),
                       ('REAL', shutil.which(name)), ('OPTIONS', options)):
      text = text.replace(f'@{key}@', value)
    tools[name] = text
  sshd.AuthorizeStubbedKey(str(tmp_path), tools, keyfile=vm.keyfile)
  # Safety first: what the harness's commands find on the VM's PATH.
  names = ('apt-get', 'dnf', 'yum', 'systemctl', 'java', 'mvn')
  found = subprocess.run(
      ['ssh', '-F', '/dev/null', '-i', vm.keyfile, '-p', str(sshd.port),
       '-o', 'BatchMode=yes', '-o', 'IdentitiesOnly=yes',
       '-o', 'StrictHostKeyChecking=no', '-o', 'UserKnownHostsFile=/dev/null',
       '-o', 'LogLevel=ERROR', f'{sshd.user}@{sshd.host}',
       f'command -v {" ".join(names)}'],
      capture_output=True, text=True, timeout=30, check=False)
  assert found.stdout.split() == [str(stubs / n) for n in names], found.stderr
  return vm


def _StaticFile(tmp_path, sshd_server, keyfile):
  machine = {'ip_address': sshd_server.host, 'user_name': sshd_server.user,
             'keyfile_path': keyfile, 'ssh_port': sshd_server.port}
  path = tmp_path / 'vms.json'
  path.write_text(json.dumps({'servers': [machine], 'clients': [machine]}))
  return str(path)


def _RunProcesses(run_uri):
  """Live processes of the run: in its scratch tree, or naming it."""
  found = []
  for pid in filter(str.isdigit, os.listdir('/proc')):
    try:
      with open(f'/proc/{pid}/cmdline', 'rb') as f:
        cmdline = f.read().replace(b'\0', b' ').decode(errors='replace')
      cwd = os.readlink(f'/proc/{pid}/cwd')
    except OSError:
      continue
    stat = process_stat.Read(pid)
    state = stat.state if stat else 'Z'
    if state != 'Z' and (f'/pkb-{run_uri}.' in cwd or
                         f'/pkb-{run_uri}.' in cmdline):
      found.append(f'{pid}: {cmdline[:200]}')
  return found


def _Arg(argv, flag):
  return argv[argv.index(flag) + 1]


@pytest.mark.e2e
@e2e.NeedsTools('java', 'mvn', 'redis-server', 'redis-cli', 'ssh-keygen',
                how='scripts/setup.sh')
@e2e.Needs('YCSB core and Jedis in the Maven cache', _MavenCacheReady,
           how='scripts/build_ycsb.sh')
def test_redis_ycsb_over_ssh_builds_and_runs_on_the_client_vm(
    tmp_path, sshd, vm_login):  # pylint: disable=redefined-outer-name
  start = time.monotonic()
  run_uri = e2e.NewRunUri()
  results = tmp_path / 'results'
  proc, _ = e2e.Run(
      ['--benchmarks=redis_ycsb',
       f'--static_vm_file={_StaticFile(tmp_path, sshd, vm_login.keyfile)}',
       '--nosystem_tuning',  # never retune the test machine
       # redis_ycsb_test.py's shortest run: one workload, one probe.
       '--ycsb_command_group=hash', '--ycsb_workloads=workloada',
       '--ycsb_record_count=300', '--ycsb_operation_count=600',
       '--ycsb_load_threads=2', '--ycsb_max_threads=1',
       '--ycsb_latency_cap=200',
       '--ycsb_jvm_options=-XX:TieredStopAtLevel=1,-XX:+UseSerialGC',
       '--timeout_minutes=3'], str(results), run_uri=run_uri)
  elapsed = time.monotonic() - start
  assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
  assert 'Load verified: 300 keys.' in proc.stdout

  # Nothing of the run is left: no shard, JVM or Maven, no scratch tree.
  # Gone within LeftoverProcesses' settle of pkb's exit (reaped once
  # scheduled, later on a busy machine).
  e2e.WaitFor(lambda: _RunProcesses(run_uri) == [], "the run's processes gone",
              timeout=3.0)
  assert e2e.LeftoverProcesses(str(results), run_uri) == []
  assert e2e.Workspaces(run_uri) == []

  # java and mvn were present: the check found java, nothing was installed.
  assert not os.path.exists(vm_login.packages), open(vm_login.packages).read()
  with open(vm_login.calls) as f:
    calls = [line.split() for line in f.read().splitlines()]
  assert calls[0] == ['java', '-version']  # the harness's check, first
  scratch = e2e.ScratchDir(str(results), run_uri, 'clients-0')
  build = f'{scratch}/ycsb'
  builds = [c for c in calls if c[0] == 'mvn']
  assert len(builds) == 1 and _Arg(builds[0], '-f') == f'{build}/src/pom.xml'
  assert f'-Dmdep.outputFile={build}/{ycsb.CLASSPATH_NAME}' in builds[0]

  # YCSB ran from the copy built in the client VM's scratch directory,
  # never from this checkout.
  phases = [c[1:] for c in calls if c[0] == 'java' and
            ycsb.CLIENT_CLASS in c]
  assert [('-load' if '-load' in argv else '-t') for argv in phases] == [
      '-load', '-t']
  for argv in phases:
    classpath = _Arg(argv, '-cp').split(':')
    assert classpath[0] == f'{build}/{ycsb.JAR_NAME}'
    assert not any(e2e.REPO in arg for arg in argv), argv
    assert [argv[i + 1] for i, a in enumerate(argv) if a == '-P'] == [
        f'{scratch}/ycsb-workloada.properties',
        f'{scratch}/ycsb-connection.properties']
  with open(vm_login.files) as f:
    files = set(f.read().split())
  assert {f'{build}/src/pom.xml', f'{build}/{ycsb.JAR_NAME}',
          f'{build}/{ycsb.CLASSPATH_NAME}',
          f'{build}/src/src/main/java/pkb/ycsb/RedisDataTypesClient.java',
          f'{scratch}/ycsb-workloada.properties'} <= files

  # Samples: YCSB's own and the search's, with the engine's metadata.
  rows = e2e.Samples(str(results), run_uri)
  labelled = [(r, e2e.Labels(r)) for r in rows]
  runs = [(r, l) for r, l in labelled if r['metric'] == 'ycsb_throughput'
          and l['ycsb_phase'] == 'run']
  assert runs and all(r['value'] > 0 for r, _ in runs)
  capped = [r for r, l in labelled
            if r['metric'] == 'latency_capped_throughput']
  assert len(capped) == 1 and capped[0]['value'] > 0
  for _, labels in labelled:
    assert labels['engine'] == 'redis' and labels['engine_version']
    assert labels['engine_settings']
    assert labels['ycsb_command_group'] == 'hash'
    assert labels['ycsb_binding'] == ycsb.DB_CLASS
  assert labelled[0][1]['cloud'] == 'Static'
  # The machines' system and tuning, as the memtier study's samples have.
  for _, labels in labelled:
    assert labels['servers_system_tuning'] == 'off'
    assert labels['servers_os_release'] and labels['clients_cpu_arch']
  print(f'redis_ycsb over SSH in {elapsed:.1f} s')
