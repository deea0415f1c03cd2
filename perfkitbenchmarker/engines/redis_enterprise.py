"""Redis Enterprise on VMs: install, cluster, proxies, databases.

Not a shard engine (`base.ServerEngine` starts redis-server processes; here
the cluster manager does): the redis_enterprise benchmark drives this class
directly, and on --cloud=Local uses engines.Get('redis') instead. The user
supplies the installer tarball and the licence (never downloaded). Commands
come from redis_enterprise_rladmin.py (pure text) and carry no secret; the
cluster is formed and the databases are made through the REST API
(redis_enterprise_rest.py), from curl on each server VM to its own API,
the credentials and licence on curl's stdin, never in any argv.

Seam: the cluster reads its settings through `ClusterSettings`, which the
redis_enterprise benchmark's options (enterprise/options.py) satisfy; this
module imports nothing of the benchmark.
"""

import base64
import os
import posixpath
import shlex
from typing import Callable, Iterator, List, Optional, Protocol, Sequence, Tuple

from perfkitbenchmarker import background_tasks
from perfkitbenchmarker import redis_shard
from perfkitbenchmarker import virtual_machine
from perfkitbenchmarker import vm_util
from perfkitbenchmarker.engines import redis_enterprise_rest as rest_client
from perfkitbenchmarker.engines import redis_enterprise_rladmin as rladmin

NAME = 'redis_enterprise'
ADMIN_USER = 'pkb@example.com'  # cluster admin, an e-mail by convention
DATABASE_PREFIX = 'pkb-db'
# base64 of whole 3-byte groups has no padding, so chunks concatenate.
_COPY_CHUNK_BYTES = 3 * 256 * 1024


class ClusterSettings(Protocol):
  """What the cluster reads from the benchmark's frozen options."""
  tarball: Optional[str]  # the user's installer, copied to every server VM
  license_path: Optional[str]
  tune_on_startup: bool
  install_dir: Optional[str]
  programs_dir: str  # install_dir, else rladmin.INSTALL_DIR
  disable_cpu_ids: Tuple[int, ...]
  pin_workers: bool
  api_port: int
  database_port: int
  db_count: int
  db_replication: bool
  memory_size_percentage: float
  flash: bool
  flash_ram_ratio: float

  def LicenceText(self) -> str:
    """The licence file's text (read bounded; one line if it cannot be)."""


class _Base64File:
  """A local file as base64 text chunks; iterable afresh for each retry."""

  def __init__(self, path: str):
    self.path = path

  def __iter__(self) -> Iterator[str]:
    with open(self.path, 'rb') as f:
      while True:
        chunk = f.read(_COPY_CHUNK_BYTES)
        if not chunk:
          return
        yield base64.b64encode(chunk).decode() + '\n'


def _Copy(vm, local_path: str, remote_path: str) -> None:
  """Streams a file to the VM through its own command channel (base64 on
  stdin), written privately and renamed into place. Needs nothing on the VM
  but a shell and coreutils: no SFTP subsystem, which scp requires since
  OpenSSH 9."""
  quoted = shlex.quote(remote_path)
  vm.RemoteCommand(
      f'umask 077; base64 -d > {quoted}.part && mv -f {quoted}.part {quoted}',
      stdin=_Base64File(local_path), timeout=1800,
      what=f'copying {os.path.basename(local_path)} to {vm.name}')


def WorkDir(vm) -> str:
  """The installer's and licence's directory on `vm`: inside the run's
  scratch directory, so teardown removes them."""
  return posixpath.join(vm.scratch_dir, 'redislabs')


class RedisEnterpriseCluster:
  """One Redis Enterprise cluster over the server VMs of a run."""

  def __init__(self, opts: ClusterSettings, servers: Sequence,
               password: str, copy: Callable = _Copy,
               session_factory: Callable = rest_client.CurlOnVm,
               api_url: Optional[str] = None,
               sleep: Optional[Callable[[float], None]] = None,
               clock: Optional[Callable[[], float]] = None,
               bootstrap_timeout_s: float = 600):
    self.opts = opts
    self.servers = list(servers)
    self._password = password
    self._copy = copy
    self._session_factory = session_factory
    self._api_url = api_url or rest_client.LocalApiUrl(opts.api_port)
    self._injected = {k: v for k, v in (('sleep', sleep), ('clock', clock))
                      if v is not None}
    self._bootstrap_timeout_s = bootstrap_timeout_s
    vm_util.RegisterSecret(password)
    vm_util.RegisterSecret(redis_shard.LoadPassword(password))
    self.client = self._ClientOn(self.servers[0])
    # uids of the load user's Redis ACL, role and user, once created.
    self.load_access: Optional[Tuple[int, int, int]] = None
    self.formed = False  # True once the cluster exists on servers-0.

  def _ClientOn(self, vm) -> rest_client.RestClient:
    """The REST API of `vm` itself (curl on `vm` to its own port)."""
    return rest_client.RestClient(self._session_factory(vm), self._api_url,
                                  (ADMIN_USER, self._password),
                                  **self._injected)

  def InstallOn(self, vm) -> None:
    """Copies the user's tarball to `vm` and installs it there (the licence
    goes to the cluster in the bootstrap request, see Form). The benchmark
    runs it on every server VM at once, beside the clients' installs
    (deployment.PrepareVms)."""
    tarball = os.path.basename(self.opts.tarball)
    workdir = WorkDir(vm)
    vm.RemoteCommand(f'mkdir -p -m 700 {shlex.quote(workdir)}')
    self._copy(vm, self.opts.tarball, posixpath.join(workdir, tarball))
    for command in rladmin.InstallCommands(
        workdir, tarball, self.opts.tune_on_startup, self.opts.install_dir):
      vm.RemoteCommand(command, timeout=1800)
    for command in rladmin.OfflineCpus(self.opts.disable_cpu_ids):
      vm.RemoteCommand(command)

  def Form(self) -> None:
    """Creates the cluster on the first server, then joins the others one
    at a time, each through its own API's bootstrap request (rladmin
    cluster create/join would take the password as an argument)."""
    first = self.servers[0]
    licence = self.opts.LicenceText()
    self.client.Bootstrap(rest_client.ClusterBootstrap(
        rest_client.CREATE_CLUSTER, ADMIN_USER, self._password,
        cluster_name=rladmin.CLUSTER_NAME, license=licence))
    self.client.WaitBootstrapped(f'cluster create on {first.name}',
                                 timeout_s=self._bootstrap_timeout_s)
    self.formed = True
    for vm in self.servers[1:]:
      client = self._ClientOn(vm)
      client.Bootstrap(rest_client.ClusterBootstrap(
          rest_client.JOIN_CLUSTER, ADMIN_USER, self._password,
          nodes=(first.internal_ip,)))
      client.WaitBootstrapped(f'join of {vm.name} to {first.internal_ip}',
                              timeout_s=self._bootstrap_timeout_s)

  def TuneProxies(self, threads: Optional[int]) -> None:
    if not threads:
      return
    for command in rladmin.TuneProxy(threads, self.opts.programs_dir):
      self.servers[0].RemoteCommand(command)
    if self.opts.pin_workers:
      # Every server VM at once (one machine's VMs in turn).
      background_tasks.RunEach(lambda vm: self._Pin(vm, threads),
                               self.servers,
                               lane=virtual_machine.MachineLane)

  def _Pin(self, vm, threads: int) -> None:
    nodes, _ = vm.RemoteCommand('ls -d /sys/devices/system/node/node* | wc -l')
    count = max(1, int(nodes.strip() or 1))
    per_node = max(1, threads // count)
    for node in range(count):
      cpus, _ = vm.RemoteCommand(rladmin.NumaNodeCpuList(node))
      vm.RemoteCommand(rladmin.PinWorkers(cpus.strip(), per_node * node,
                                          per_node, self.opts.programs_dir))

  # The load generators' user ------------------------------------------------

  def CreateLoadAccess(self) -> None:
    """The load generators log in as redis_shard.LOAD_USER with its derived
    password, as on Redis OSS shards; Redis Enterprise defines such a user
    through access control: a Redis ACL with the same rules, a role without
    cluster rights, and a user with that role, bound to each database."""
    if self.load_access is not None:
      return
    name = redis_shard.LOAD_USER
    acl = self.client.CreateRedisAcl(name, redis_shard.LOAD_USER_RULES)
    self.load_access = (acl, None, None)
    role = self.client.CreateRole(name)
    self.load_access = (acl, role, None)
    user = self.client.CreateUser(name, f'{name}@example.com',
                                  redis_shard.LoadPassword(self._password),
                                  [role])
    self.load_access = (acl, role, user)

  def DeleteLoadAccess(self) -> None:
    """Deletes what CreateLoadAccess made (after the databases)."""
    if self.load_access is None:
      return
    acl, role, user = self.load_access
    for kind, uid in (('users', user), ('roles', role), ('redis_acls', acl)):
      if uid is not None:
        self.client.Delete(kind, uid)
    self.load_access = None

  # Databases -----------------------------------------------------------------

  def DatabaseSpecs(self, shards: int) -> List[rest_client.DatabaseSpec]:
    out, _ = self.servers[0].RemoteCommand(
        rladmin.Status(self.opts.programs_dir))
    memory = int(rladmin.ProvisionableRamBytes(out) *
                 self.opts.memory_size_percentage / self.opts.db_count)
    permissions = ()
    if self.load_access is not None:
      acl, role, _ = self.load_access
      permissions = ((role, acl),)
    return [rest_client.DatabaseSpec(
        name=f'{DATABASE_PREFIX}{i}', memory_size=memory,
        password=self._password, shards=shards,
        replication=self.opts.db_replication, oss_cluster=shards > 1,
        port=self.opts.database_port + i, flash=self.opts.flash,
        flash_ram_ratio=self.opts.flash_ram_ratio,
        roles_permissions=permissions)
            for i in range(self.opts.db_count)]

  def CreateDatabases(self, shards: int) -> List[Tuple[str, int]]:
    """Creates every database, waits for active; returns the endpoints."""
    for spec in self.DatabaseSpecs(shards):
      bdb = self.client.CreateDatabase(spec)
      self.client.WaitActive(bdb['uid'])
    return self.client.Endpoints(self._Ours())

  def _Ours(self) -> List[int]:
    """uids of this benchmark's databases (others on the cluster are not
    measured, and never deleted)."""
    return [b['uid'] for b in self.client.ListDatabases()
            if str(b.get('name', '')).startswith(DATABASE_PREFIX)]

  def DeleteDatabases(self) -> None:
    for uid in self._Ours():
      self.client.DeleteDatabase(uid)
