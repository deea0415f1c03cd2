"""Redis Enterprise on VMs: install, cluster, proxies, databases.

Not a shard engine (`base.ServerEngine` starts redis-server processes; here
the cluster manager does): the redis_enterprise benchmark drives this class
directly, and on --cloud=Local uses engines.Get('redis') instead. The user
supplies the installer tarball and the licence (never downloaded). Commands
come from enterprise/rladmin.py (pure text); databases go through the REST
API (enterprise/rest_client.py) from curl on the first server VM.
"""

import concurrent.futures
import os
import posixpath
import subprocess
from typing import Callable, List, Optional, Sequence, Tuple

from perfkitbenchmarker import errors
from perfkitbenchmarker import vm_util
from perfkitbenchmarker.enterprise import options as options_lib
from perfkitbenchmarker.enterprise import rest_client
from perfkitbenchmarker.enterprise import rladmin

NAME = 'redis_enterprise'
ADMIN_USER = 'pkb@example.com'  # cluster admin, an e-mail by convention


def _Copy(vm, local_path: str, remote_path: str) -> None:
  """scp over the VM's own SSH options (argument list, no shell)."""
  argv = (['scp'] + vm.SshOptions() +
          ['-P', str(vm.port), local_path,
           f'{vm._Target()}:{remote_path}'])  # pylint: disable=protected-access
  done = subprocess.run(argv, capture_output=True, text=True, timeout=1800,
                        check=False)
  if done.returncode != 0:
    raise errors.ProcessError(
        f'Copying {os.path.basename(local_path)} to {vm.name} failed: '
        f'{vm_util.Mask(done.stderr.strip())[:200]}')


class RedisEnterpriseCluster:
  """One Redis Enterprise cluster over the server VMs of a run."""

  def __init__(self, opts: options_lib.EnterpriseOptions, servers: Sequence,
               password: str, copy: Callable = _Copy,
               session_factory: Callable = rest_client.CurlOnVm,
               api_url: str = rest_client.LocalApiUrl(),
               sleep: Optional[Callable[[float], None]] = None):
    self.opts = opts
    self.servers = list(servers)
    self._password = password
    self._copy = copy
    vm_util.RegisterSecret(password)
    extra = {} if sleep is None else {'sleep': sleep}
    self.client = rest_client.RestClient(
        session_factory(self.servers[0]), api_url, (ADMIN_USER, password),
        **extra)

  def _Env(self):
    return {rladmin.PASSWORD_ENV: self._password}

  def _OnEach(self, function) -> None:
    with concurrent.futures.ThreadPoolExecutor(len(self.servers)) as pool:
      list(pool.map(function, self.servers))

  def Install(self) -> None:
    """Copies the user's tarball and licence, installs on every server."""
    tarball = os.path.basename(self.opts.tarball)

    def One(vm):
      vm.RemoteCommand(f'mkdir -p {rladmin.WORKDIR}')
      self._copy(vm, self.opts.tarball,
                 posixpath.join(rladmin.WORKDIR, tarball))
      self._copy(vm, self.opts.license_path,
                 posixpath.join(rladmin.WORKDIR, self.opts.license_file))
      for command in rladmin.InstallCommands(tarball,
                                             self.opts.tune_on_startup):
        vm.RemoteCommand(command, timeout=1800)
      for command in rladmin.OfflineCpus(self.opts.disable_cpu_ids):
        vm.RemoteCommand(command)
    self._OnEach(One)

  def Form(self) -> None:
    """rladmin cluster create on the first server; the others join."""
    first = self.servers[0]
    first.RemoteCommand(rladmin.ClusterCreate(self.opts.license_file,
                                              ADMIN_USER), env=self._Env(),
                        timeout=600)
    for vm in self.servers[1:]:
      vm.RemoteCommand(rladmin.ClusterJoin(first.internal_ip, ADMIN_USER),
                       env=self._Env(), timeout=600)

  def TuneProxies(self, threads: Optional[int]) -> None:
    if not threads:
      return
    for command in rladmin.TuneProxy(threads):
      self.servers[0].RemoteCommand(command)
    if self.opts.pin_workers:
      self._OnEach(lambda vm: self._Pin(vm, threads))

  def _Pin(self, vm, threads: int) -> None:
    nodes, _ = vm.RemoteCommand('ls -d /sys/devices/system/node/node* | wc -l')
    count = max(1, int(nodes.strip() or 1))
    per_node = max(1, threads // count)
    for node in range(count):
      cpus, _ = vm.RemoteCommand(rladmin.NumaNodeCpuList(node))
      vm.RemoteCommand(rladmin.PinWorkers(cpus.strip(), per_node * node,
                                          per_node))

  def DatabaseSpecs(self, shards: int) -> List[rest_client.DatabaseSpec]:
    out, _ = self.servers[0].RemoteCommand(rladmin.Status())
    memory = int(rladmin.ProvisionableRamBytes(out) *
                 self.opts.memory_size_percentage / self.opts.db_count)
    return [rest_client.DatabaseSpec(
        name=f'pkb-db{i}', memory_size=memory, password=self._password,
        shards=shards, replication=self.opts.db_replication,
        oss_cluster=shards > 1, port=self.opts.database_port + i,
        flash=self.opts.flash, flash_ram_ratio=self.opts.flash_ram_ratio)
            for i in range(self.opts.db_count)]

  def CreateDatabases(self, shards: int) -> List[Tuple[str, int]]:
    """Creates every database, waits for active; returns the endpoints."""
    for spec in self.DatabaseSpecs(shards):
      bdb = self.client.CreateDatabase(spec)
      self.client.WaitActive(bdb['uid'])
    return self.client.Endpoints()

  def DeleteDatabases(self) -> None:
    for bdb in self.client.ListDatabases():
      self.client.DeleteDatabase(bdb['uid'])
