"""The AWS provider: EC2 VMs in a network, key and placement group of the run.

Provision checks machine types and images before anything is created, then
creates the network, security group, key pair, placement group and
instances, each recorded before it is made, so teardown (also from the
record alone) deletes them newest first, instances waited for until
terminated.

`AwsProvisioner` does the work with injected clients, clock, sleep and SSH
wait; the module functions build it from the flags and the boto3 default
credential chain (or --aws_profile).
"""

import dataclasses
import functools
import getpass
import time
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from perfkitbenchmarker import errors
from perfkitbenchmarker import flags as pkb_flags
from perfkitbenchmarker import redis_shard
from perfkitbenchmarker import ssh_vm
from perfkitbenchmarker import virtual_machine
from perfkitbenchmarker.providers.aws import api
from perfkitbenchmarker.providers.aws import flags as aws_flags  # pylint: disable=unused-import
from perfkitbenchmarker.providers.aws import images
from perfkitbenchmarker.providers.aws import keys
from perfkitbenchmarker.providers.aws import naming
from perfkitbenchmarker.providers.aws import network
from perfkitbenchmarker.providers.aws import placement
from perfkitbenchmarker.providers.aws import vm as aws_vm
from perfkitbenchmarker.providers import operator_access

CLOUD = aws_vm.CLOUD
AwsVirtualMachine = aws_vm.AwsVirtualMachine


@dataclasses.dataclass(frozen=True)
class AwsOptions:
  """What the --aws_* and core flags ask of the provider, validated."""
  ssh_source_cidrs: Tuple[str, ...]
  redis_ports: Tuple[network.PortRange, ...] = ((6379, 8999), (16379, 18999))
  use_default_vpc: bool = False
  placement_group_style: str = 'cluster'  # or 'none' (the flag's enum)
  owner: str = ''
  timeout_minutes: Optional[float] = None
  profile: Optional[str] = None
  ssh_wait_s: float = ssh_vm.BOOT_SSH_TIMEOUT_S
  # Where a Redis run's shards listen on each server VM, which redis_ports
  # must admit.
  shards: 'ShardLayout' = dataclasses.field(
      default_factory=lambda: ShardLayout())  # pylint: disable=unnecessary-lambda

  @property
  def shard_ports(self) -> Tuple[network.PortRange, ...]:
    """The ports known before the server VMs' vCPUs are (a shard search
    without --redis_max_shards: its fewest shards')."""
    return self.shards.Ranges()

  def __post_init__(self):
    # Whoever builds the options, SSH is never opened wider than allowed.
    object.__setattr__(self, 'ssh_source_cidrs',
                       network.SshSourceCidrs(self.ssh_source_cidrs))

  @classmethod
  def FromFlags(cls, flag_values) -> 'AwsOptions':
    return cls(
        ssh_source_cidrs=network.SshSourceCidrs(
            flag_values.aws_ssh_source_cidr),
        redis_ports=network.PortRanges(flag_values.aws_redis_ports),
        use_default_vpc=flag_values.aws_use_default_vpc,
        placement_group_style=flag_values.placement_group_style,
        owner=flag_values.owner or getpass.getuser(),
        timeout_minutes=flag_values.timeout_minutes,
        profile=flag_values.aws_profile,
        ssh_wait_s=flag_values.ssh_wait_timeout_seconds,
        shards=ShardLayout.FromFlags(flag_values))


@dataclasses.dataclass(frozen=True)
class ShardLayout:
  """The ports shards take from --redis_start_port on (free ones first), and
  their cluster-bus ports (+10000) in cluster mode, with the replicas each
  server VM also holds (--redis_replicas_per_primary, on the ports after
  its primaries)."""
  start_port: int = 0  # 0: none to check.
  count: int = 1  # Shards per server VM.
  # A shard search (--redis_optimize_shards): its fewest and most shards
  # (None: up to the server VM's vCPUs, redis_shard.MostShardsSearched) and
  # --redis_shard_max_points; each count it tries starts on ports of its own.
  search: Optional[Tuple[int, Optional[int], int]] = None
  cluster_bus: bool = False
  replicas_per_primary: int = 0

  @classmethod
  def FromFlags(cls, flag_values) -> 'ShardLayout':
    get = lambda name, default=None: getattr(flag_values, name, default)
    search = None
    if get('redis_optimize_shards', False):
      search = (get('redis_min_shards') or 1, get('redis_max_shards'),
                get('redis_shard_max_points') or 1)
    return cls(start_port=get('redis_start_port') or 0,
               count=get('redis_total_num_processes') or 1, search=search,
               cluster_bus=bool(get('redis_server_cluster_mode', False)),
               replicas_per_primary=get('redis_replicas_per_primary') or 0)

  @property
  def needs_vcpus(self) -> bool:
    """A search whose most shards follow the server VMs' vCPUs."""
    return self.search is not None and self.search[1] is None

  def Ranges(self, vcpus: Optional[int] = None
             ) -> Tuple[network.PortRange, ...]:
    """The port ranges, for server VMs of `vcpus` (unknown, for a search up
    to them: its fewest shards')."""
    if not self.start_port:
      return ()
    count = self.count
    if self.search is not None:
      low, high, points = self.search
      if high is None:
        high = redis_shard.MostShardsSearched(low, vcpus) if vcpus else low
      count = redis_shard.ShardsStartedBySearch(low, high, points)[1]
    return redis_shard.PortRanges(
        self.start_port, count * (1 + self.replicas_per_primary),
        self.cluster_bus)


def CheckPrerequisites(flag_values) -> None:
  """One-line refusals before anything starts (no API calls)."""
  AwsOptions.FromFlags(flag_values)
  images.OsImageFor(flag_values.os_type)
  if pkb_flags.OneZone(flag_values):
    naming.RegionOf(pkb_flags.OneZone(flag_values))


def CheckPlan(spec) -> None:
  """The shard-port check of Provision, from the plan (a dry run's too):
  with the server VMs' vCPUs of the price catalog for a search that
  follows them (Provision checks again with the type's own)."""
  if not spec.starts_redis_shards:
    return
  # Only what the check reads: a dry run plans without the SSH source
  # (Provision refuses a run without it).
  shards = ShardLayout.FromFlags(spec.flags)
  vcpus = spec.ServerVcpus() if shards.needs_vcpus else None
  network.CheckShardPorts(shards.Ranges(vcpus),
                          network.PortRanges(spec.flags.aws_redis_ports),
                          spec.peer_tcp_ports)


def ZoneOf(group_specs: Dict[str, virtual_machine.VmSpec]) -> str:
  """The one zone every group is in (one subnet, one placement group)."""
  zones = {spec.zone for spec in group_specs.values()}
  if None in zones or '' in zones:
    raise errors.UsageError(
        'AWS VMs need a zone: set vm_spec.AWS.zone in the config or --zone '
        '(e.g. us-east-1a).')
  if len(zones) != 1:
    raise errors.UsageError(
        f'AWS VM groups are in different zones ({", ".join(sorted(zones))}); '
        'a run uses one zone (set --zone).')
  zone = zones.pop()
  naming.RegionOf(zone)
  return zone


class AwsProvisioner:
  """Builds and provisions one run's VMs with injected clients."""

  def __init__(self, options: AwsOptions, clients: api.AwsClients,
               run_uri: str, record, benchmark: str = '',
               ssh_waiter: Optional[Callable[[AwsVirtualMachine],
                                             None]] = None,
               sleep: Callable[[float], None] = time.sleep,
               clock: Callable[[], float] = time.monotonic,
               now: Callable[[], float] = time.time):
    self.options = options
    self.clients = clients
    self.run_uri = run_uri
    self.record = record
    self.tags = naming.RunTags(
        options.owner, run_uri, benchmark,
        operator_access.ExpiryStamp(now(), options.timeout_minutes))
    self._ssh_waiter = ssh_waiter
    self._sleep = sleep
    self._clock = clock

  def _Common(self) -> dict:
    return dict(record=self.record, sleep=self._sleep, clock=self._clock)

  def _Resource(self, cls, **kwargs):
    return cls(self.clients, self.run_uri, tags=self.tags, **kwargs,
               **self._Common())

  def ConstructVms(
      self, group_specs: Dict[str, virtual_machine.VmSpec],
      counts: Dict[str, int]) -> Dict[str, List[AwsVirtualMachine]]:
    """The run's VMs, servers first; resumed runs get back what they had.
    (_Provisioner checked their zone and made the clients its region's.)"""
    key_path = keys.KeyPath(self.run_uri)
    groups: Dict[str, List[AwsVirtualMachine]] = {}
    for group in virtual_machine.GroupOrder(group_specs):
      spec = group_specs[group]
      images.OsImageFor(spec.os_type)
      for i in range(counts[group]):
        vm = AwsVirtualMachine(
            spec, f'{group}-{i}', group, clients=self.clients,
            run_uri=self.run_uri, keyfile=key_path, tags=self.tags,
            ssh_waiter=self._ssh_waiter,
            ssh_timeout_s=self.options.ssh_wait_s, **self._Common())
        virtual_machine.CheckNameIsNew(
            group, vm.name_tag,
            {v.name_tag for vs in groups.values() for v in vs},
            f'names are cut at {naming.MAX_NAME_LENGTH} characters', 'tagged')
        vm.RestoreFromRecord()
        groups.setdefault(group, []).append(vm)
    return groups

  def _Check(self, vms: Sequence[AwsVirtualMachine]) -> None:
    """Machine types and images (each once), before anything is created."""
    describe = functools.cache(functools.partial(
        images.DescribeMachine, self.clients, sleep=self._sleep))
    look_up = functools.cache(functools.partial(
        images.LookUpImage, self.clients, sleep=self._sleep))
    for vm in vms:
      machine = describe(vm.machine_type, vm.zone)
      vm.image = look_up(vm.os_type, machine.architecture, vm.spec.image)
      vm.num_cpus = machine.vcpus
      vm.memory_mib = machine.memory_mib

  def _Network(self, zone: str) -> Tuple[str, str]:
    """(vpc id, subnet id): the run's own, or the default VPC's."""
    if self.options.use_default_vpc:
      return network.DefaultNetwork(self.clients, zone, sleep=self._sleep)
    vpc = self._Resource(network.Vpc)
    vpc.Create()
    subnet = self._Resource(network.Subnet, vpc_id=vpc.id, zone=zone)
    subnet.Create()
    gateway = self._Resource(network.InternetGateway, vpc_id=vpc.id)
    gateway.Create()
    self._Resource(network.RouteTable, vpc_id=vpc.id, gateway_id=gateway.id,
                   subnet_id=subnet.id).Create()
    return vpc.id, subnet.id

  def Provision(self, vms: Sequence[AwsVirtualMachine],
                peer_ports: Sequence[network.PortRange] = (),
                starts_redis_shards: bool = True) -> None:
    """Creates the run; `peer_ports` are the benchmark's extra TCP ranges
    between its VMs (spec.peer_tcp_ports), opened like the Redis ones;
    `starts_redis_shards`: the run listens from --redis_start_port
    (spec.starts_redis_shards), so those ports must be open."""
    if not vms:
      return
    if starts_redis_shards:
      # The benchmark's peer ports hold a database's (Redis Enterprise's).
      network.CheckShardPorts(self.options.shard_ports,
                              self.options.redis_ports, peer_ports)
    self._Check(vms)
    if starts_redis_shards and self.options.shards.needs_vcpus:
      # A shard search's most shards follow the server VMs' vCPUs, known
      # now (still before anything is made).
      vcpus = max((vm.num_cpus or 0 for vm in vms
                   if vm.group_name == virtual_machine.SERVER_GROUP),
                  default=0)
      network.CheckShardPorts(self.options.shards.Ranges(vcpus),
                              self.options.redis_ports, peer_ports)
    vpc_id, subnet_id = self._Network(vms[0].zone)
    group = self._Resource(network.SecurityGroup, vpc_id=vpc_id,
                           ssh_cidrs=self.options.ssh_source_cidrs,
                           redis_ports=self.options.redis_ports,
                           peer_ports=peer_ports)
    group.Create()
    key_pair = self._Resource(keys.KeyPair, key_path=vms[0].keyfile)
    key_pair.Create()
    group_name = None
    if self.options.placement_group_style == 'cluster':
      placement_group = self._Resource(placement.PlacementGroup)
      placement_group.Create()
      group_name = placement_group.name
    for vm in vms:
      vm.subnet_id = subnet_id
      vm.security_group_id = group.id
      vm.key_name = key_pair.name
      vm.placement_group = group_name
    # Every instance boots while the first is waited for.
    for vm in vms:
      vm.Launch()
    for vm in vms:
      vm.AwaitReady()


def _Provisioner(spec) -> AwsProvisioner:
  options = AwsOptions.FromFlags(spec.flags)
  zone = ZoneOf(spec.GroupSpecs())
  clients = api.DEFAULT_CLIENTS.ForRegion(naming.RegionOf(zone),
                                          options.profile)
  return AwsProvisioner(options, clients, spec.run_uri, spec.record,
                        benchmark=spec.name, ssh_waiter=spec.ssh_waiter)


def ConstructVms(spec) -> Dict[str, List[AwsVirtualMachine]]:
  groups = _Provisioner(spec).ConstructVms(spec.GroupSpecs(),
                                           spec.GroupCounts())
  for vm in (vm for vms in groups.values() for vm in vms):
    # The run's firewall admits these from its own VMs (AllowPort).
    vm.peer_tcp_ports = spec.peer_tcp_ports
  return groups


def Provision(spec) -> None:
  _Provisioner(spec).Provision(spec.vms, spec.peer_tcp_ports,
                               spec.starts_redis_shards)
