"""What `prepare` builds: a typed Deployment of shards, password and clients.

`Deploy` installs the engine on the server VMs and chooses a load generator
per client VM, on every VM at once (`PrepareVms`, which the YCSB and Redis
Enterprise benchmarks use too), then starts the shards with `StartShards`,
the one function that starts shards. `Restore` rebuilds it for a resumed
run from the run record and the shards' config files. `Preload` writes the
key range from every client VM at once, each its own slice.

Extension seam: the server is an engine (engines/); the deployment only
calls the engine interface.
"""

import dataclasses
import time
from typing import Any, Callable, List, Optional, Sequence, Tuple

from perfkitbenchmarker import background_tasks
from perfkitbenchmarker import engines
from perfkitbenchmarker import errors
from perfkitbenchmarker import probe_processes
from perfkitbenchmarker import redis_shard
from perfkitbenchmarker import resource
from perfkitbenchmarker import terminal_text
from perfkitbenchmarker import virtual_machine
from perfkitbenchmarker import vm_util
from perfkitbenchmarker.engines import base as engine_base
from perfkitbenchmarker.engines import engine_options
from perfkitbenchmarker.linux_packages import memtier as memtier_package
from perfkitbenchmarker.linux_packages import redis_cluster
from perfkitbenchmarker.load_generators import base
from perfkitbenchmarker.load_generators import driver
from perfkitbenchmarker.load_generators import interference
from perfkitbenchmarker.load_generators import memtier
from perfkitbenchmarker.load_generators import redis_benchmark
from perfkitbenchmarker.study import options as options_lib
from perfkitbenchmarker.study import replication



@dataclasses.dataclass(frozen=True, kw_only=True)
class Servers:
  """The running shards of a run and what its flags made of them
  (`primaries`: the shards that hold data; the password is never in repr,
  logs or the record): every benchmark's deployment is one (Deployment,
  YCSB's). A later stage's are of the recorded shards (Restore holds the
  flags to their roles)."""
  engine: str
  engine_version: str
  cluster_mode: bool
  # Shards per server VM, replicas not counted (what the samples name).
  shards_per_vm: int
  primaries: int
  processes: Tuple[resource.BaseResource, ...]
  password: str = dataclasses.field(repr=False)
  # The engine's settings as recorded ((name, value) pairs) and replicas
  # per primary (study/replication.py).
  engine_settings: Tuple[Tuple[str, str], ...] = ()
  replicas_per_primary: int = 0

  @classmethod
  def Of(cls, spec, server: options_lib.ServerOptions,
         engine: engine_base.ServerEngine, processes, password: str,
         **clients):
    """`processes` (started by `server`'s flags, or recorded) and the
    benchmark's `clients` fields."""
    servers = spec.vm_groups['servers']
    return cls(
        engine=engine.NAME, engine_version=engine.Version(servers[0]),
        cluster_mode=server.cluster_mode,
        shards_per_vm=ShardsPerVm(len(processes), servers, server),
        primaries=Primaries(len(processes), server),
        processes=tuple(processes), password=password,
        engine_settings=tuple(engine.Settings().items()),
        replicas_per_primary=server.replicas_per_primary, **clients)

  @property
  def shards(self) -> Tuple[redis_shard.Shard, ...]:
    return tuple(map(redis_shard.Shard.Of, self.processes))

  @property
  def endpoints(self) -> List[base.Endpoint]:
    """Where the load goes: the cluster's first node, else every primary."""
    shards = self.shards
    if self.cluster_mode:
      return [base.Endpoint(shards[0].host, shards[0].port)]
    # Primaries come first (replicas start after them); load goes to them.
    return [base.Endpoint(s.host, s.port) for s in shards[:self.primaries]]


@dataclasses.dataclass(frozen=True, kw_only=True)
class Deployment(Servers):
  """The running servers and the load generators that will load them."""
  generators: Tuple[base.LoadGenerator, ...]


def BindAddress(vm) -> str:
  """Only the address the run's clients use: a wildcard bind on an existing
  machine would expose the server on every interface."""
  return vm.internal_ip or '127.0.0.1'


def ChooseGenerator(vm, generator: options_lib.GeneratorOptions
                    ) -> base.LoadGenerator:
  """memtier when asked for, given by path (missing, Install refuses it
  rather than quietly falling back), installed, or on a VM the run made
  (which installs it from Redis's APT repository); otherwise
  redis-benchmark."""
  path = generator.memtier_path or memtier_package.DEFAULT_PATH
  want = generator.choice
  if want == 'memtier' or (want == 'auto' and (
      generator.memtier_path or vm.CAN.made_by_run or
      memtier_package.IsAvailable(vm, path))):
    vm.Install('memtier', path=path)
    return memtier.MemtierGenerator(
        vm, path, load_key_pattern=generator.load_key_pattern,
        warmup_s=generator.warmup_s,
        processes_per_endpoint=generator.processes_per_client,
        requests=generator.requests)
  vm.Install('redis_benchmark')
  return redis_benchmark.RedisBenchmarkGenerator(vm)


def PrepareVms(servers: Sequence, clients: Sequence,
               prepare_server: Optional[Callable[[Any], Any]],
               prepare_client: Callable[[Any], Any]) -> List[Any]:
  """Runs `prepare_server(vm)` on every server VM and `prepare_client(vm)`
  on every client VM, all at once (one machine's VMs in turn:
  virtual_machine.MachineLane); returns the clients' results in order.
  Every VM's preparation runs to its end before a failure is raised.
  """
  jobs = ([(prepare_server, vm) for vm in servers] +
          [(prepare_client, vm) for vm in clients])
  results = background_tasks.RunEach(
      lambda job: job[0](job[1]), jobs, lane=lambda job: virtual_machine.MachineLane(job[1]))
  return results[len(servers):]


def PrepareServer(engine: engine_base.ServerEngine, vm,
                  system_tuning: bool) -> None:
  """Installs the engine on a server VM and, where the VM has it, applies
  (or with system_tuning False only records) the system tuning."""
  engine.Install(vm)
  if hasattr(vm, 'ApplySystemTuning'):
    vm.ApplySystemTuning(system_tuning)


def InstallAll(engine: engine_base.ServerEngine, servers: Sequence,
               clients: Sequence, opts: options_lib.RedisStudyOptions
               ) -> Tuple[base.LoadGenerator, ...]:
  """`PrepareServer` on every server VM, `ChooseGenerator` on every client
  VM, all at once; the generators in client order."""
  return tuple(PrepareVms(
      servers, clients,
      lambda vm: PrepareServer(engine, vm, opts.server.system_tuning),
      lambda vm: ChooseGenerator(vm, opts.generator)))


def ShardsPerVm(count: int, servers: Sequence,
                server: options_lib.ServerOptions) -> int:
  """The shards per server VM among `count` started by `server`'s flags,
  replicas not counted (what the samples name)."""
  return count // len(servers) // (1 + server.replicas_per_primary)


def Primaries(count: int, server: options_lib.ServerOptions) -> int:
  """The primaries among `count` shards started by `server`'s flags."""
  if server.replicas_per_primary:
    return count // (1 + server.replicas_per_primary)
  if server.cluster_mode:
    return count // (1 + server.cluster_replicas)
  return count


def StartShards(engine: engine_base.ServerEngine, servers: Sequence,
                shards_per_vm: int, password: str,
                server: options_lib.ServerOptions, record,
                start_port: int) -> Tuple[resource.BaseResource, ...]:
  """Starts `shards_per_vm` shards on every server VM (and the cluster)."""
  processes: List[resource.BaseResource] = []
  replicas = server.replicas_per_primary

  def ShardOptions(vm):
    return redis_shard.ShardOptions(
        cluster_mode=server.cluster_mode,
        maxmemory_mb=redis_shard.MaxMemoryPerShardMb(
            vm.memory_mib or 1024, shards_per_vm * (1 + replicas),
            server.memory_fraction),
        extra_config=server.extra_config, bind=BindAddress(vm))

  for vm in servers:
    processes.extend(engine.StartShards(vm, shards_per_vm, password,
                                        ShardOptions(vm), record, start_port))
  if replicas:
    processes.extend(replication.StartReplicas(
        engine, servers, processes, shards_per_vm, replicas, password,
        server.cluster_mode, ShardOptions, record, start_port))
  shards = [redis_shard.Shard.Of(p) for p in processes]
  per_primary = replicas or server.cluster_replicas
  if server.cluster_mode:
    engine.FormCluster(servers[0], shards, password, per_primary)
  if replicas or (server.cluster_mode and server.cluster_replicas):
    engine.VerifyReplication(servers[0], shards, password,
                             Primaries(len(processes), server), per_primary)
  return tuple(processes)


def Deploy(spec, opts: options_lib.RedisStudyOptions,
           engine: engine_base.ServerEngine,
           shards_per_vm: Optional[int] = None) -> Deployment:
  """Installs and tunes the servers and picks the load generators, on every
  VM at once, then starts the shards (each in the run record before it
  starts, so `StopAll` finds it even when a later step fails):
  `shards_per_vm` per server VM, by default --redis_total_num_processes."""
  servers = spec.vm_groups['servers']
  generators = InstallAll(engine, servers, spec.vm_groups['clients'], opts)
  password = redis_shard.NewPassword()
  processes = StartShards(engine, servers,
                          shards_per_vm or opts.server.shards_per_vm,
                          password, opts.server, spec.record,
                          opts.server.start_port)
  deployed = Deployment.Of(spec, opts.server, engine, processes, password,
                           generators=generators)
  KeepServer(spec, deployed)
  return deployed


# The record's info key of what each benchmark's shards run (engine, its
# version and settings), as its prepare started them: a later stage's
# samples name the server from its own flags (Restore checks they agree).
_SERVERS_INFO = 'servers'


def KeepServer(spec, deployed) -> None:
  """Keeps what `spec`'s benchmark's shards run, as its prepare started
  them, in the record's info: a later stage's Restore holds its flags to
  it (CheckRestoredServer). `deployed` is any benchmark's deployment with
  engine, engine_version and engine_settings (Deployment, YCSB's)."""
  spec.record.SetInfo(_SERVERS_INFO, {**spec.record.info.get(
      _SERVERS_INFO, {}), spec.name: _Server(deployed)})


def _Server(deployed) -> dict:
  return {'engine': deployed.engine, 'version': deployed.engine_version,
          'settings': dict(deployed.engine_settings)}


def _ServerWords(server: dict) -> str:
  settings = ', '.join(f'{k}={v}' for k, v in sorted(
      server['settings'].items())) or 'default settings'
  return f'{server["engine"]} {server["version"]} ({settings})'


def CheckRestoredServer(spec, restored) -> None:
  """Refuses server flags other than prepare's: a later stage measures the
  shards prepare started but its samples name the server its own flags
  describe (--redis_server_io_threads=2 published io-threads 2 measured on
  a server without them, --redis_server_version=8.2 a 7.0.15 as 8.2.3).
  A record from before prepare kept this (KeepServer) has nothing to check
  against. `restored`: as KeepServer's `deployed`."""
  servers = spec.record.info.get(_SERVERS_INFO)
  prepared = servers.get(spec.name) if isinstance(servers, dict) else None
  if not isinstance(prepared, dict):
    return
  now = _Server(restored)
  if prepared != now:
    raise errors.RestoreRefusal(
        f'Run {spec.run_uri}\'s shards run {_ServerWords(prepared)} as '
        f'prepare started them (its record), not the '
        f'{_ServerWords(now)} these flags describe; give the '
        '--redis_server_version and engine settings (e.g. '
        '--redis_server_io_threads) it was prepared with, or its samples '
        'would name a server that was not measured.')


def RecordedShards(spec, engine: engine_base.ServerEngine
                   ) -> Tuple[List[resource.BaseResource], str]:
  """The run's live shards from its record, and the password they share,
  read back from a shard's config file (never from the record) and
  registered for masking."""
  kinds = {entry['kind'] for entry in spec.record.Resources()
           if entry['status'] == 'created'}
  if engine.PROCESS_KIND not in kinds:
    others = sorted({engines.NameOfKind(k) for k in kinds
                     if k in engines.ShardKinds()} - {None})
    if others:
      raise errors.RestoreRefusal(
          f'Run {spec.run_uri} was prepared with '
          f'--redis_engine={" and ".join(others)} (its record\'s running '
          f'shards), not {engine.NAME}; give the --redis_engine it was '
          'prepared with.')
    raise errors.RestoreRefusal(
        f'Run {spec.run_uri} has no running shards; run --run_stage=prepare '
        'first.')
  processes = [resource.FromRecord(e, spec.record)
               for e in spec.record.Resources()
               if e['kind'] == engine.PROCESS_KIND and
               e['status'] == 'created']
  password = engine.ReadPassword(processes[0])
  redis_shard.RegisterPassword(password)
  for p in processes:
    p.password = password
  return processes, password


def Restore(spec, opts: options_lib.RedisStudyOptions,
            engine: engine_base.ServerEngine) -> Deployment:
  """The deployment of an earlier invocation (`--run_stage=run`), from its
  record; the load generators are chosen (and installed) again."""
  processes, password = RecordedShards(spec, engine)
  generators = PrepareVms((), spec.vm_groups['clients'], None,
                          lambda vm: ChooseGenerator(vm, opts.generator))
  restored = Deployment.Of(spec, opts.server, engine, processes, password,
                           generators=tuple(generators))
  CheckRestored(spec, opts.server, restored)
  return restored


def CheckRestored(spec, server: options_lib.ServerOptions, restored) -> None:
  """Every benchmark's Restore: refuses a later stage's server flags other
  than prepare's (CheckRestoredServer) and, for engines with replicas,
  shard flags that make other primaries of its shards
  (CheckRestoredPrimaries). `restored`: its deployment, with engine,
  engine_version, engine_settings, shards, primaries and password."""
  CheckRestoredServer(spec, restored)
  if server.engine in engine_options.REPLICA_ENGINES:
    CheckRestoredPrimaries(spec, restored)


def CheckRestoredPrimaries(spec, restored) -> None:
  """Refuses replica flags other than prepare's: the primaries (where the
  load goes, and what the samples count) are taken from them, so a later
  stage without --redis_replicas_per_primary loaded the replicas too
  (READONLY errors), and one adding it loaded half the primaries.
  `restored.primaries`: the primaries these flags make of the recorded
  shards (Primaries)."""
  shards = restored.shards
  roles = [redis_cluster.ReplicationInfo(spec.vm_groups['servers'][0], s,
                                         restored.password).get('role')
           for s in shards]
  primaries = roles.count('master')
  if primaries != restored.primaries:
    raise errors.RestoreRefusal(
        f'Run {spec.run_uri}\'s {len(shards)} shards are {primaries} '
        f'primaries and {len(shards) - primaries} replicas, not the '
        f'{restored.primaries} primaries these flags make of them; give the '
        '--redis_replicas_per_primary (or --redis_cluster_replicas) it was '
        'prepared with.')


def Restart(spec, deployment: Deployment, opts: options_lib.RedisStudyOptions,
            engine: engine_base.ServerEngine, shards_per_vm: int,
            start_port: int) -> Deployment:
  """Replaces every server VM's shards by `shards_per_vm` new ones, keeping
  the password and the load generators."""
  for proc in reversed(deployment.processes):
    proc.Delete()  # By PID and start time, checked against its command line.
  processes = StartShards(engine, spec.vm_groups['servers'], shards_per_vm,
                          deployment.password, opts.server, spec.record,
                          start_port)
  return dataclasses.replace(
      deployment, processes=processes, shards_per_vm=shards_per_vm,
      primaries=Primaries(len(processes), opts.server))


def StopAll(record) -> None:
  """Stops every shard the run record says may be running, newest first.

  By the record, not by memory, so shards of a failed start, of an earlier
  invocation or of earlier shard-study points are stopped too; every shard
  is tried (resource.TeardownFromRecord), then the failures raise in one
  line.
  """
  # Probes first (newer than the shards): a load generator a signal left
  # running stops before the servers it talks to.
  failures = resource.TeardownFromRecord(
      record, kinds=(probe_processes.KIND,) + engines.ShardKinds())
  if failures:
    raise errors.ProcessError('Stopping shards failed: ' +
                              resource.FailureSummary(failures))


@dataclasses.dataclass(frozen=True)
class ClientPreload:
  """One client VM's share of a preload."""
  vm: str
  keys: base.KeySlice
  written: int
  seconds: float


def _Failure(failures: Sequence[Tuple[str, Exception]]) -> errors.Error:
  """One line naming each client VM that failed, of the first error's kind
  when it is one of ours."""
  text = '; on '.join(
      f'{name}: ' + (vm_util.Tail(terminal_text.Lines(str(e).strip())[0], 1) or
                     type(e).__name__) for name, e in failures)
  message = f'Preload failed on {text}'
  first = failures[0][1]
  if isinstance(first, errors.Error):
    try:
      return type(first)(message)
    except TypeError:  # A kind built from other arguments.
      pass
  return errors.ProcessError(message)


def PreloadOnClients(clients: Sequence,
                     generators: Sequence[base.LoadGenerator],
                     endpoints: Sequence[base.Endpoint], password: str,
                     workload: base.Workload,
                     clock: Callable[[], float] = time.monotonic
                     ) -> List[ClientPreload]:
  """Every client VM writes its own slice of the key range
  (`base.SplitKeyRange`), all at once, after the first generator's
  `PreloadSetup`. A failure on any VM fails the preload with one line
  naming the VM(s), after the others end.
  """
  kinds = {g.NAME for g in generators}
  if len(kinds) > 1:
    chosen = ', '.join(f'{vm.name}: {g.NAME}'
                       for vm, g in zip(clients, generators))
    raise errors.UsageError(
        f'The client VMs chose different load generators ({chosen}), whose '
        'key names differ; give --load_generator=memtier (with '
        '--memtier_path) or --load_generator=redis_benchmark.')
  slices = base.SplitKeyRange(workload.key_minimum, workload.key_maximum,
                              len(generators))
  jobs = list(zip(clients, generators, slices))
  try:
    setup = generators[0].PreloadSetup(endpoints, password, workload)
  except Exception as e:  # pylint: disable=broad-except
    raise _Failure([(clients[0].name, e)]) from e

  def One(vm, generator, keys):
    start = clock()
    written = generator.Preload(endpoints, password, workload,
                                key_slice=keys, setup=setup)
    return ClientPreload(vm.name, keys, written, clock() - start)

  # Every client VM at once, however many (background_tasks runs a single
  # one in this thread).
  outcomes = background_tasks.RunInLanes(lambda job: One(*job), jobs,
                                         max_workers=len(jobs))
  failed = [(o.item[0].name, o.error) for o in outcomes
            if o.error is not None]
  if failed:
    raise _Failure(failed) from failed[0][1]
  return [o.result for o in outcomes]


def _AutoReason(spec, opts: options_lib.RedisStudyOptions,
                generators: Sequence[base.LoadGenerator]) -> str:
  """Why --load_generator=auto did not take memtier, for the preload line."""
  if (opts.generator.choice != 'auto' or
      generators[0].NAME == memtier.MemtierGenerator.NAME):
    return ''
  here = spec.can.is_runner_machine
  where = 'this machine' if here else spec.vm_groups['clients'][0].name
  how = ('install it (README: Load generators) or give --memtier_path'
         if here else
         '--load_generator=memtier installs it from Redis\'s APT repository')
  return (f' (auto: memtier_benchmark is not installed on {where}; {how})')


def Preload(spec, deployment: Deployment,
            opts: options_lib.RedisStudyOptions,
            engine: engine_base.ServerEngine) -> int:
  """Writes exactly the configured keys, split over the client VMs, and
  checks the key count."""
  workload = opts.workload
  generators = deployment.generators
  vms = min(len(generators), workload.key_count)
  spread = f', split over {vms} client VMs' if vms > 1 else ''
  spec.reporter.Line(f'Preloading {workload.key_count:,} keys of '
                     f'{workload.data_size} bytes with {generators[0].NAME}'
                     f'{spread}{_AutoReason(spec, opts, generators)}...')
  parts = PreloadOnClients(spec.vm_groups['clients'], generators,
                           deployment.endpoints, deployment.password,
                           workload)
  expected = sum(p.written for p in parts)
  found = engine.KeyCount(spec.vm_groups['servers'][0], deployment.shards,
                          deployment.password)
  if found != expected:
    raise errors.ProcessError(
        f'Preload left {found:,} keys but {expected:,} were expected; check '
        'the shards\' maxmemory and logs.')
  shares = ''
  if len(parts) > 1:
    shares = '; keys ' + ', '.join(f'{p.keys} from {p.vm} ({p.seconds:.1f} s)'
                                   for p in parts)
  replicas = len(deployment.processes) - deployment.primaries
  notes = []
  if deployment.primaries > 1 and (
      found == workload.key_count * deployment.primaries):
    # Every primary holds the whole key range (standalone shards, or
    # redis-benchmark's key tag per master): 'Preloading 100,000 keys' then
    # 'DBSIZE 300,000' read as a contradiction.
    notes.append(f'{workload.key_count:,} keys in each')
  if replicas > 0:
    # DBSIZE is the primaries' (engine.KeyCount); replicas hold copies.
    notes.append(f'their {replicas} replica(s) hold copies')
    over = f'{deployment.primaries} primary shard(s)'
  else:
    over = f'{len(deployment.processes)} shard(s)'
  if notes:
    over += f' ({"; ".join(notes)})'
  spec.reporter.Line(f'Preload verified: DBSIZE {found:,} over {over}'
                     f'{shares}.')
  return found


def ProbeDriver(spec, deployment: Deployment,
                opts: options_lib.RedisStudyOptions) -> driver.ProbeDriver:
  return Driver(spec, deployment.generators, deployment.endpoints,
                deployment.password, opts,
                server_pids=lambda vm: ServerPids(deployment, vm))


def Driver(spec, generators: Sequence[base.LoadGenerator],
           endpoints: Sequence[base.Endpoint], password: str,
           opts: options_lib.RedisStudyOptions,
           server_pids: Optional[Callable[[Any], List[int]]] = None
           ) -> driver.ProbeDriver:
  """Probes from `generators` (one per client VM), sampled on every VM
  and on the server processes `server_pids(vm)` names, if any."""
  clients = spec.vm_groups['clients']
  # Client VMs whose load generator measures its own CPU window (and steal
  # time) in the probe, so that no sampler reads them again.
  measured = [vm for vm, g in zip(clients, generators)
              if getattr(g, 'MEASURES_CLIENT_CPU', False)]
  return driver.ProbeDriver(
      clients, generators, endpoints, password, opts.workload,
      opts.generator.run_duration_s,
      duration_limit=lambda: spec.deadline.Remaining() - 10,
      interference=interference.ForRun(
          spec.vm_groups['servers'] + clients, measured=measured,
          server_pids=server_pids))


def ServerPids(deployment: Deployment, vm) -> List[int]:
  """The shard processes running on `vm` (what its server side counts)."""
  return [p.pid for p in deployment.processes
          if p.vm.name == vm.name and getattr(p, "pid", None)]
