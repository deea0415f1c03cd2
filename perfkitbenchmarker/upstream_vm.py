"""The VM methods a benchmark module written for upstream PKB calls.

`UpstreamMethods` is mixed into virtual_machine.BaseVirtualMachine, so every
provider (Local, Static, GCP, AWS) has them, built only on the VM's own
command hooks (RemoteCommand, RemoteCommandWithReturnCode, a detached
RunDetached where the VM has one) and what it knows of itself
(scratch_dir, num_cpus, cpu_set, internal_ip, peer_tcp_ports,
DetectSystem). Upstream's names, signatures, return shapes and error types;
docs/upstream_api.md says where each differs and why (no sudo on Local,
paths in the scratch directory, ports opened from PEER_TCP_PORTS).
"""

import base64
import os
import posixpath
import shlex
import tarfile
import tempfile
from typing import Any, Dict, List, Optional, Sequence, Tuple

from perfkitbenchmarker import data
from perfkitbenchmarker import errors
from perfkitbenchmarker import system_info as system_info_lib
from perfkitbenchmarker import trusted_programs
from perfkitbenchmarker import vm_util

# RobustRemoteCommand's bound when given no timeout (upstream's has none).
ROBUST_TIMEOUT_S = 6 * 3600
# Most bytes of a file one PushFile or PullFile command carries (base64 in
# its input or its output).
FILE_CHUNK = 16 << 20
# Keyword arguments of upstream PKB's RemoteCommand(WithReturnCode) that
# change nothing here: its SSH retries (ours retry a connection that never
# started on their own), its TTY lock and its logging.
_UPSTREAM_NO_OPS = frozenset({'retries', 'disable_tty_lock', 'should_pre_log',
                              'stack_level', 'suppress_logging',
                              'ignore_failure'})


def UpstreamCommand(command: str, options: Dict[str, Any]) -> str:
  """`command` as upstream's RemoteCommandWithReturnCode(**options) runs it.

  login_shell=True runs it in a login shell; the options in
  _UPSTREAM_NO_OPS change nothing; any other is refused in one line.
  """
  unknown = sorted(set(options) - _UPSTREAM_NO_OPS - {'login_shell'})
  if unknown:
    raise errors.VirtualMachine.RemoteCommandError(
        f'RemoteCommand does not take {", ".join(unknown)}: this harness '
        f'takes timeout, ignore_failure, login_shell and '
        f'{", ".join(sorted(_UPSTREAM_NO_OPS - {"ignore_failure"}))} '
        '(docs/upstream_api.md).')
  if options.get('login_shell'):
    return f'bash -l -c {shlex.quote(command)}'
  return command


class UpstreamMethods:
  """Upstream PKB's VM methods over a VM's command hooks (module doc)."""

  def RobustRemoteCommand(self, command: str,
                          timeout: Optional[float] = None,
                          ignore_failure: bool = False) -> Tuple[str, str]:
    """RemoteCommand for long commands: over SSH it runs detached from the
    connection (ssh_jobs), so a dropped connection loses nothing; a Local
    command has no connection to lose. Bounded by ROBUST_TIMEOUT_S when
    given no timeout."""
    timeout = timeout or ROBUST_TIMEOUT_S
    detached = getattr(self, 'RunDetached', None)
    if detached is not None:
      out, err, rc = detached(command, timeout)
    else:
      out, err, rc = self.RemoteCommandWithReturnCode(command,
                                                      timeout=timeout)
    if not ignore_failure:
      vm_util.CheckedOutput(out, err, rc, command,
                            error=errors.VirtualMachine.RemoteCommandError)
    return out, err

  def InstallPackages(self, packages: str) -> None:
    """Installs the OS packages named (space-separated) with the VM's
    package manager; those already installed cost one check."""
    names = packages.split()
    if not names:
      return
    manager = self.DetectSystem().package_manager
    if manager is None:
      raise errors.VirtualMachine.RemoteCommandError(
          f'InstallPackages(\'{packages}\') on {self.name}: it has neither '
          'apt-get nor dnf/yum; install them yourself.')
    out, _ = self.RemoteCommand(
        system_info_lib.MissingPackagesCommand(manager, names),
        what=f'checking packages on {self.name}')
    missing = out.split()
    if missing:
      self.InstallMissingPackages(manager, missing)

  def InstallMissingPackages(self, manager: str,
                             missing: Sequence[str]) -> None:
    """Provider hook: install OS packages the VM lacks (as root)."""
    program = 'apt-get' if manager == 'apt' else manager
    raise errors.VirtualMachine.RemoteCommandError(
        f'InstallPackages on {self.name}: {" ".join(missing)} not installed, '
        f'and {self.CLOUD or "these"} VMs install no OS packages (no sudo '
        f'on the machine the harness runs on); install them yourself '
        f'({program} -y install {" ".join(missing)}) and run again.')

  # Files, as upstream PKB's modules move them ------------------------------

  def _ShellPath(self, path: str) -> str:
    """`path` on the VM as shell text: '~/x' under $HOME, a relative path
    in the VM's scratch directory (where its commands start; upstream's is
    the home directory), an absolute one as it is."""
    if path == '~' or path.startswith('~/'):
      return '"$HOME"' + (shlex.quote(path[1:]) if path[1:] else '')
    if not path.startswith('/'):
      path = posixpath.join(self.scratch_dir, path)
    return shlex.quote(path)

  def PushFile(self, source_path: str, remote_path: str = '') -> None:
    """Copies a local file or directory to the VM (upstream's PushFile).

    '' (the default) puts it in the VM's scratch directory; a directory
    there receives it under its own name. The bytes travel base64-encoded
    through the command channel, so any provider can push, FILE_CHUNK a
    command (whole, a file cost pkb four times its size in memory); a
    directory as a tar archive, in a local temporary file and then in the
    VM's scratch directory while it moves.
    """
    name = os.path.basename(os.path.normpath(source_path))
    target = (f't={self._ShellPath(remote_path or name)}; [ -d "$t" ] && '
              f't="$t"/{shlex.quote(name)}; ')
    what = f'pushing {source_path} to {self.name}'
    if not os.path.isdir(source_path):
      try:
        with open(source_path, 'rb') as f:
          self._PushChunks(f, target + 'base64 -d >', '"$t"', what)
      except OSError as e:
        raise errors.VirtualMachine.RemoteCommandError(
            f'PushFile to {self.name}: cannot read {source_path}: '
            f'{e.strerror}') from None
      return
    with tempfile.TemporaryFile() as f:
      with tarfile.open(fileobj=f, mode='w') as tar:
        tar.add(source_path, arcname='.')
      f.seek(0)
      out, _ = self.RemoteCommand(
          f'mktemp {self._ShellPath(".pkb-push.XXXXXXXX")}', what=what)
      archive = shlex.quote(out.strip())
      try:
        self._PushChunks(f, 'base64 -d >', archive, what)
        self.RemoteCommand(f'{target}mkdir -p "$t" && tar -xf {archive} '
                           '-C "$t"', what=what)
      finally:
        self.RemoteCommand(f'rm -f {archive}', what=what)

  def _PushChunks(self, f, write: str, path: str, what: str) -> None:
    """Sends `f` to `path` (shell text) on the VM, FILE_CHUNK a command:
    `write` ('... base64 -d >') makes the file, then appends (>>)."""
    first = True
    while True:
      chunk = f.read(FILE_CHUNK)
      if chunk or first:
        self.RemoteCommand(f'{write}{"" if first else ">"} {path}',
                           stdin=base64.b64encode(chunk).decode(), what=what)
      first = False
      if len(chunk) < FILE_CHUNK:
        return

  def _DataFile(self, name: str, what: str) -> str:
    """The data file data.ResourcePath finds, when no other user could
    change it (trusted_programs' rule): a template runs as it renders
    (Jinja2 reaches Python's os), and a pushed file is what the VM runs,
    often as root. The search starts in --data_search_paths, by default
    the current directory, which may be a shared one (/tmp)."""
    try:
      path = data.ResourcePath(name)
    except data.ResourceNotFound as e:
      raise errors.VirtualMachine.RemoteCommandError(
          f'{what} on {self.name}: {e}') from None
    problem = trusted_programs.Problem(path)
    if problem:
      raise errors.VirtualMachine.RemoteCommandError(
          f'{what} on {self.name}: {path} is not used: {problem}; a data '
          'file pkb renders or pushes must be owned by root or by you and '
          'writable by no one else, and so must every directory above it '
          '(look at --data_search_paths: its default, ., is the current '
          'directory).')
    return path

  def PushDataFile(self, data_file: str, remote_path: str = '',
                   should_double_copy: Optional[bool] = None) -> None:
    """Pushes the data file data.ResourcePath finds (upstream's), when no
    other user could change it (`_DataFile`)."""
    del should_double_copy  # One copy reaches any path here.
    self.PushFile(self._DataFile(data_file, 'PushDataFile'), remote_path)

  def PullFile(self, local_path: str, remote_path: str) -> None:
    """Copies a file or directory from the VM to local_path (into it, if
    it is a directory), FILE_CHUNK bytes a command: whole, a 200 MiB file
    took 1 GiB of pkb's memory (its base64 text, decoded, copied), and a
    large result file ended the run in the OOM killer's hands. A directory
    is a tar archive in the VM's scratch directory while it moves."""
    source = self._ShellPath(remote_path)
    what = f'pulling {remote_path} from {self.name}'
    # Its size too: the pull takes that many bytes, so a file that grows
    # meanwhile ends the loop, and one that shrinks is said.
    out, _ = self.RemoteCommand(
        f's={source}; if [ -d "$s" ]; then a=$(mktemp '
        f'{self._ShellPath(".pkb-pull.XXXXXXXX")}) && tar -cf "$a" -C "$s" '
        '. && echo "D $(wc -c < "$a") $a"; elif [ -f "$s" ] && [ -r "$s" ]; '
        'then echo "F $(wc -c < "$s")"; else echo "$s: no such readable file '
        'or directory" >&2; exit 1; fi', what=what)
    kind, size, archive = (out.strip().split(' ', 2) + ['', ''])[:3]
    if not size.isdecimal():
      raise errors.VirtualMachine.RemoteCommandError(
          f'{what}: no size in the answer {out.strip()[:80]!r}')
    if os.path.isdir(local_path):
      local_path = os.path.join(local_path, posixpath.basename(
          posixpath.normpath(remote_path)))
    if kind != 'D':
      with open(local_path, 'wb') as f:
        self._PullChunks(source, int(size), f, what)
      return
    try:
      with tempfile.TemporaryFile() as f:
        self._PullChunks(shlex.quote(archive), int(size), f, what)
        f.seek(0)
        os.makedirs(local_path, exist_ok=True)
        with tarfile.open(fileobj=f) as tar:
          tar.extractall(local_path, filter='data')
    finally:
      self.RemoteCommand(f'rm -f {shlex.quote(archive)}', what=what)

  def _PullChunks(self, source: str, size: int, f, what: str) -> None:
    """Appends the first `size` bytes of the file at `source` (shell text)
    on the VM to `f`, one FILE_CHUNK a command. A chunk that comes back
    short means the file shrank (or went) meanwhile: the pipeline's status
    is base64's, so only the byte count can tell."""
    offset = 0
    while offset < size:
      wanted = min(FILE_CHUNK, size - offset)
      out, _ = self.RemoteCommand(
          f'tail -c +{offset + 1} {source} | head -c {wanted} | base64',
          what=what)
      chunk = base64.b64decode(out)
      f.write(chunk)
      offset += len(chunk)
      if len(chunk) < wanted:
        raise errors.VirtualMachine.RemoteCommandError(
            f'{what}: the file changed while it was pulled ({offset:,} of '
            f'its {size:,} bytes came back)')

  def RemoveFile(self, filename: str) -> None:
    """rm -rf on the VM, as the run's user (upstream's uses sudo; the
    files a run makes are its user's)."""
    self.RemoteCommand(f'rm -rf {filename}')

  def RenderTemplate(self, template_path: str, remote_path: str,
                     context: Dict[str, Any], **unused_logging) -> None:
    """Renders a Jinja2 template (found as data.ResourcePath finds it, no
    other user's: `_DataFile`; every variable must be given:
    StrictUndefined), with `vm` this VM, and writes it to remote_path on
    the VM."""
    path = self._DataFile(template_path, 'RenderTemplate')
    try:
      with open(path) as f:
        text = f.read()
    except OSError as e:
      raise errors.VirtualMachine.RemoteCommandError(
          f'RenderTemplate on {self.name}: {e}') from None
    # Here, not at the top: jinja2 costs every pkb start tens of ms (600
    # starts in the test suite), and only upstream modules render.
    import jinja2  # pylint: disable=g-import-not-at-top
    rendered = jinja2.Environment(undefined=jinja2.StrictUndefined).from_string(
        text).render({'vm': self, **context})
    self.RemoteCommand(
        f'base64 -d > {self._ShellPath(remote_path)}',
        stdin=base64.b64encode(rendered.encode()).decode(),
        what=f'writing {remote_path} on {self.name}')

  # What the VM is, as upstream PKB's modules ask -----------------------------

  def GetScratchDir(self, disk_num: int = 0) -> str:
    """The VM's scratch directory: the run's own, removed at teardown."""
    if disk_num != 0:
      raise errors.Error(
          f'GetScratchDir(disk_num={disk_num}) on {self.name}: this harness '
          'gives a VM one scratch directory (disk_num=0) and attaches no '
          'disks (no disk_spec).')
    return self.scratch_dir

  def NumCpusForBenchmark(self, report_only_physical_cpus: bool = False
                          ) -> int:
    """The CPUs the VM has for the benchmark: a Local VM's pinned cores,
    else the machine's; physical cores only (SMT siblings counted once)
    when asked."""
    cpus = self.num_cpus or self.DetectSystem().num_cpus or 1
    if not report_only_physical_cpus:
      return cpus
    out, _ = self.RemoteCommand('lscpu -p=CPU,CORE,SOCKET',
                                what=f'reading the cores of {self.name}')
    cores = {}
    for line in out.splitlines():
      fields = line.split(',')
      if line.startswith('#') or len(fields) < 3 or not fields[0].isdigit():
        continue
      cores[int(fields[0])] = (fields[2], fields[1])
    mine = [cores[c] for c in (self.cpu_set or cores) if c in cores]
    return len(set(mine)) or cpus

  def GetInternalIPs(self) -> List[str]:
    """The addresses the run's other VMs reach this one on."""
    return [self.internal_ip] if self.internal_ip else []

  def AllowPort(self, start_port: int, end_port: Optional[int] = None,
                source_range: Optional[Sequence[str]] = None) -> None:
    """Upstream's firewall opening. The run's firewall is made when its VMs
    are, from the module's PEER_TCP_PORTS, and lets only the run's own VMs
    in; so a port already open that way is fine, any other is refused in
    one line saying to add it there. Local and Static machines have no
    firewall of the run's own: nothing to do."""
    end_port = end_port or start_port
    if self.peer_tcp_ports is None:
      return
    inside = any(low <= start_port and end_port <= high
                 for low, high in self.peer_tcp_ports)
    if inside and not source_range:
      return
    raise errors.VirtualMachine.VirtualMachineError(
        f'AllowPort({start_port}, {end_port}'
        f'{", source_range" if source_range else ""}) on {self.name}: this '
        'harness opens ports only between the run\'s own VMs, when it makes '
        f'the firewall; add ({start_port}, {end_port}) to the module\'s '
        'PEER_TCP_PORTS.')
