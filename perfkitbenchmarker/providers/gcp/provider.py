"""GCP provider: the run's Compute Engine VMs and what they need around them.

Provision creates, each recorded before it is made: the SSH key pair, the
run's network and subnetworks (unless --gcp_network), the compact placement
policy, the firewall rules, then the instances in parallel. Teardown needs
nothing from here: every kind registers FromRecord, and the record's
newest-first order deletes them in reverse.

Test seam: `GceProvider` takes its clients, options, SSH waiter, sleep and
clocks in its constructor; the module-level functions build one from
`GcpOptions.FromFlags` (the only flag reads) and the spec's SSH waiter.
"""

import dataclasses
import getpass
import logging
import time
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from perfkitbenchmarker import background_tasks
from perfkitbenchmarker import errors
from perfkitbenchmarker import run_scope
from perfkitbenchmarker import ssh_vm
from perfkitbenchmarker import virtual_machine
from perfkitbenchmarker.providers.gcp import compute_api
from perfkitbenchmarker.providers.gcp import flags as gcp_flags  # pylint: disable=unused-import
from perfkitbenchmarker.providers.gcp import images
from perfkitbenchmarker.providers.gcp import keys
from perfkitbenchmarker.providers.gcp import naming
from perfkitbenchmarker.providers.gcp import network
from perfkitbenchmarker.providers.gcp import vm as vm_lib
from perfkitbenchmarker.providers import operator_access

CLOUD = 'GCP'
DEFAULT_REDIS_START_PORT = 7001


def SshSourceRanges(values: Sequence[str]) -> List[str]:
  """--gcp_ssh_source_range as normalized IPv4 CIDRs; refuses bad ones."""
  return list(operator_access.OperatorCidrs(
      values, '--gcp_ssh_source_range', 'GCP'))


@dataclasses.dataclass(frozen=True)
class GcpOptions:
  """What the --gcp_* and core flags ask of the provider, validated."""
  project: str
  ssh_source_ranges: Tuple[str, ...]
  os_type: str = 'debian12'
  placement_group_style: str = 'cluster'
  network: Optional[str] = None
  owner: str = ''
  timeout_minutes: Optional[float] = None
  boot_disk_type: Optional[str] = None
  ssh_user: str = 'pkb'
  compute_endpoint: Optional[str] = None
  redis_start_port: int = DEFAULT_REDIS_START_PORT
  ssh_wait_s: float = ssh_vm.BOOT_SSH_TIMEOUT_S

  @classmethod
  def FromFlags(cls, flag_values) -> 'GcpOptions':
    if not flag_values.project:
      raise errors.UsageError(
          '--cloud=GCP needs --project=<GCP project id> to create the VMs '
          'in.')
    # It becomes a part of every API call's path: one with a '/' (or a
    # space) made each call an 'internal error ValueError: Invalid request.'
    # and left the run's first resource for every teardown.
    problem = compute_api.ProjectProblem(flag_values.project)
    if problem:
      raise errors.UsageError(f'--project: {problem}.')
    # Checked before any VM exists: the record keeps it, and a teardown
    # leaves alone a VM whose recorded user is no user name.
    problem = ssh_vm.FieldProblem('user', flag_values.gcp_ssh_user)
    if problem:
      raise errors.UsageError(f'--gcp_ssh_user: {problem}.')
    return cls(
        project=flag_values.project,
        # Checked by CheckPrerequisites and again before any firewall rule.
        ssh_source_ranges=tuple(flag_values.gcp_ssh_source_range or ()),
        os_type=flag_values.os_type,
        placement_group_style=flag_values.placement_group_style,
        network=flag_values.gcp_network,
        owner=flag_values.owner or getpass.getuser(),
        timeout_minutes=flag_values.timeout_minutes,
        boot_disk_type=flag_values.gcp_boot_disk_type,
        ssh_user=flag_values.gcp_ssh_user,
        compute_endpoint=flag_values.gcp_compute_endpoint,
        redis_start_port=(getattr(flag_values, 'redis_start_port', None) or
                          DEFAULT_REDIS_START_PORT),
        ssh_wait_s=flag_values.ssh_wait_timeout_seconds)


def CheckPrerequisites(flag_values) -> None:
  """Refuses flags that cannot work, before anything is created."""
  compute_api.CheckInstalled()
  options = GcpOptions.FromFlags(flag_values)
  SshSourceRanges(options.ssh_source_ranges)
  problem = compute_api.EndpointProblem(options.compute_endpoint)
  if problem:
    raise errors.UsageError(f'--gcp_compute_endpoint: {problem}.')
  from perfkitbenchmarker import input_checks  # pylint: disable=g-import-not-at-top
  images.CheckOsType(input_checks.EffectiveOsType(flag_values, CLOUD) or
                     options.os_type)


@dataclasses.dataclass(frozen=True)
class _RunLayout:
  """Names and URLs shared by the run's VMs and network objects."""
  project: str
  run_uri: str
  network_name: str
  # region -> CIDR; empty in an existing network (--gcp_network).
  subnet_ranges: Dict[str, str]
  placement_region: Optional[str]

  @property
  def network_url(self) -> str:
    return network.NetworkUrl(self.project, self.network_name)

  @property
  def placement_policy_name(self) -> str:
    return naming.ResourceName(self.run_uri, 'compact')

  @property
  def placement_policy_url(self) -> Optional[str]:
    if not self.placement_region:
      return None
    return network.PlacementPolicyUrl(self.project, self.placement_region,
                                      self.placement_policy_name)

  def SubnetworkUrl(self, region: str) -> Optional[str]:
    if region not in self.subnet_ranges:
      return None
    return network.SubnetworkUrl(self.project, region, self.network_name)


class GceProvider:
  """Builds and provisions a run's GCP resources through injected clients."""

  def __init__(self, clients: compute_api.ComputeClients,
               options: GcpOptions,
               ssh_waiter: Optional[Callable[[vm_lib.GceVirtualMachine],
                                             None]] = None,
               sleep: Callable[[float], None] = time.sleep,
               clock: Callable[[], float] = time.monotonic,
               wall_clock: Callable[[], float] = time.time):
    self.clients = clients
    self.options = options
    self._ssh_waiter = ssh_waiter
    self._sleep = sleep
    self._clock = clock
    self._wall_clock = wall_clock

  def _ResourceArgs(self, spec) -> dict:
    return {'record': spec.record, 'sleep': self._sleep, 'clock': self._clock}

  def _Layout(self, spec, zones: Sequence[str], vm_count: int) -> _RunLayout:
    regions = sorted({naming.RegionOf(z) for z in zones})
    cluster = (self.options.placement_group_style == 'cluster' and
               vm_count > 1)
    if cluster and len(set(zones)) > 1:
      raise errors.UsageError(
          f'--placement_group_style=cluster needs every VM in one zone, not '
          f'{", ".join(sorted(set(zones)))}; set --zone or use '
          '--placement_group_style=none.')
    creates_network = not self.options.network
    return _RunLayout(
        project=self.options.project, run_uri=spec.run_uri,
        network_name=(naming.ResourceName(spec.run_uri) if creates_network
                      else self.options.network),
        subnet_ranges=(network.SubnetRanges(regions) if creates_network
                       else {}),
        placement_region=regions[0] if cluster else None)

  # Provider contract ------------------------------------------------------

  def ConstructVms(self, spec) -> Dict[str, List[vm_lib.GceVirtualMachine]]:
    group_specs = spec.GroupSpecs()
    counts = spec.GroupCounts()
    for group, vm_spec in group_specs.items():
      if not vm_spec.zone:
        raise errors.ConfigError(
            f'vm_groups.{group}.vm_spec.GCP needs a zone (or give --zone).')
      if not vm_spec.image:
        images.CheckOsType(vm_spec.os_type)
    layout = self._Layout(
        spec, [s.zone for s in group_specs.values()], sum(counts.values()))
    labels = naming.RunLabels(
        self.options.owner, spec.run_uri, spec.name,
        operator_access.ExpiryStamp(self._wall_clock(),
                                    self.options.timeout_minutes))
    groups: Dict[str, List[vm_lib.GceVirtualMachine]] = {}
    for group in virtual_machine.GroupOrder(group_specs):
      vm_spec = group_specs[group]
      config = vm_lib.InstanceConfig(
          project=layout.project, zone=vm_spec.zone,
          machine_type=vm_spec.machine_type, network_url=layout.network_url,
          subnetwork_url=layout.SubnetworkUrl(naming.RegionOf(vm_spec.zone)),
          image=vm_spec.image,
          image_family=(None if vm_spec.image else images.FamilyFor(
              vm_spec.os_type, vm_spec.machine_type)),
          boot_disk_gb=vm_spec.boot_disk_size or vm_lib.DEFAULT_BOOT_DISK_GB,
          boot_disk_type=self.options.boot_disk_type,
          tags=(naming.NetworkTag(spec.run_uri),), labels=labels,
          placement_policy_url=layout.placement_policy_url)
      for i in range(counts[group]):
        name = naming.ResourceName(spec.run_uri, group, str(i))
        virtual_machine.CheckNameIsNew(
            group, name, {v.name for vs in groups.values() for v in vs},
            f'GCP names are at most {naming.MAX_LENGTH} lowercase letters, '
            'digits and -', fix=' of those')
        vm = vm_lib.GceVirtualMachine(
            vm_spec, name, group,
            clients=self.clients, project=layout.project, config=config,
            ssh_waiter=self._ssh_waiter, user=self.options.ssh_user,
            ssh_timeout_s=self.options.ssh_wait_s,
            run_uri=spec.run_uri, **self._ResourceArgs(spec))
        vm.RestoreFromRecord()
        # The run's firewall admits these from its own VMs (AllowPort).
        vm.peer_tcp_ports = spec.peer_tcp_ports
        groups.setdefault(group, []).append(vm)
    return groups

  def Provision(self, spec) -> None:
    vms = [vm for vm in spec.vms if isinstance(vm, vm_lib.GceVirtualMachine)]
    if not vms:
      return
    ssh_ranges = SshSourceRanges(self.options.ssh_source_ranges)
    peer_ports = spec.peer_tcp_ports  # Checked before anything exists.
    layout = self._Layout(spec, [vm.zone for vm in vms], len(vms))
    args = dict(self._ResourceArgs(spec), clients=self.clients,
                project=layout.project)
    tag = naming.NetworkTag(spec.run_uri)
    for vm in vms:
      if not vm.created:
        vm.LearnMachineAndImage()

    key = keys.SshKeyPair(run_scope.RunKeyDir(spec.run_uri),
                          comment=f'pkb-{spec.run_uri}',
                          **self._ResourceArgs(spec))
    key.Create()
    for vm in vms:
      vm.keyfile = key.private_key_path
      vm.ssh_public_key = key.public_key
    if layout.subnet_ranges:  # The run's own network.
      network.GceNetwork(layout.network_name, **args).Create()
      for region, ip_range in sorted(layout.subnet_ranges.items()):
        network.GceSubnetwork(layout.network_name, region=region,
                              network_url=layout.network_url,
                              ip_range=ip_range, **args).Create()
    else:
      logging.warning(
          'Using existing network %s: its own firewall rules apply too.',
          layout.network_name)
    if layout.placement_region:
      network.GcePlacementPolicy(layout.placement_policy_name,
                                 region=layout.placement_region,
                                 **args).Create()
    rules = [
        ('ssh', ['22'], {'source_ranges': ssh_ranges}, 'SSH to run {} from '
         'its operator'),
        ('redis', network.RedisPorts(self.options.redis_start_port),
         {'source_tags': [tag]}, 'Redis between the VMs of run {}')]
    if peer_ports:
      # A rule of its own, so the Redis rule stays the same for every
      # benchmark and the record shows who asked for what.
      rules.append(('peers', network.PortList(peer_ports),
                    {'source_tags': [tag]},
                    f'{spec.name} between the VMs of run {{}}'))
    for suffix, ports, sources, description in rules:
      network.GceFirewallRule(
          naming.ResourceName(spec.run_uri, suffix),
          network_url=layout.network_url, ports=ports, target_tags=[tag],
          description=description.format(spec.run_uri), **sources,
          **args).Create()
    _CreateAll([vm for vm in vms if not vm.created])


def _CreateAll(vms: Sequence[vm_lib.GceVirtualMachine]) -> None:
  """Creates the instances in parallel; raises the first failure after all.

  Waiting for every create keeps the record true: each instance that was
  asked for is recorded and, when it exists, marked created.
  """
  outcomes = background_tasks.RunInLanes(lambda vm: vm.Create(), vms)
  failures = [o.error for o in outcomes if o.error is not None]
  if failures:
    if len(failures) > 1:
      logging.error('%d instances failed: %s', len(failures),
                    '; '.join(str(e) for e in failures))
    raise failures[0]


def _ProviderFor(spec) -> GceProvider:
  options = GcpOptions.FromFlags(spec.flags)
  return GceProvider(compute_api.ComputeClients.Create(
      options.compute_endpoint), options, ssh_waiter=spec.ssh_waiter)


def ConstructVms(spec) -> Dict[str, List[vm_lib.GceVirtualMachine]]:
  return _ProviderFor(spec).ConstructVms(spec)


def Provision(spec) -> None:
  _ProviderFor(spec).Provision(spec)
