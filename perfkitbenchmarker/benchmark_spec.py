"""BenchmarkSpec: one benchmark's config, VMs, run record and sample sink.

The spec turns the merged config into VMs of the chosen provider, provisions
and tears them down through the run record, and carries what the benchmark
module needs while it runs: `EmitSamples` is the one sample channel (it
publishes samples as soon as they exist; `published` lists them); `metadata`
is added to every sample (PKB's group metadata); `options` and `deployment`
hold the benchmark's frozen options and what its prepare stage built;
`peer_tcp_ports` is what the benchmark module declares its VMs must reach on
each other (its PEER_TCP_PORTS), for the cloud providers to open.
"""

import logging
import time
from typing import Any, Callable, Dict, List, Optional, Tuple, Union

from perfkitbenchmarker import benchmark_contract
from perfkitbenchmarker import cloud_names
from perfkitbenchmarker import configs
from perfkitbenchmarker import errors
from perfkitbenchmarker import flags as pkb_flags
from perfkitbenchmarker import pricing
from perfkitbenchmarker import providers
from perfkitbenchmarker import resource
from perfkitbenchmarker import sample as sample_lib
from perfkitbenchmarker import virtual_machine
from perfkitbenchmarker.enterprise import cloud_run
from perfkitbenchmarker.enterprise import options as enterprise_options
from perfkitbenchmarker.study import deployment as deployment_lib
from perfkitbenchmarker.study import options as study_options
from perfkitbenchmarker.study import ycsb_options
from perfkitbenchmarker.study import ycsb_runner

SERVER_GROUP, CLIENT_GROUP = virtual_machine.SERVER_GROUP, 'clients'
# Clients need at least this many times the servers' vCPUs not to be the
# limit (the published T2D study: 2 x n2-standard-32 for one
# t2d-standard-16).
CLIENT_VCPU_RATIO = 4
# Clients sized to follow the servers never exceed this many VMs.
MAX_FOLLOWING_CLIENTS = 16
# PKB's provider_info.DEFAULT_VM_PLATFORM: an ordinary VM (no containers).
DEFAULT_VM_PLATFORM = 'DEFAULT_VM'
# What a study's prepare built, as its run reads it: redis_memtier's (and
# enterprise on Local's) servers and clients, redis_ycsb's, or a cloud
# Redis Enterprise cluster's.
StudyDeployment = Union[deployment_lib.Deployment, ycsb_runner.YcsbDeployment,
                        cloud_run.EnterpriseDeployment]
# A study's frozen options, built from flags by its benchmark module:
# redis_memtier's, redis_ycsb's or redis_enterprise's.
StudyOptions = Union[study_options.RedisStudyOptions,
                     ycsb_options.YcsbStudyOptions,
                     enterprise_options.EnterpriseOptions]
# The name of the End to End Runtime sample PKB emits when every stage ran.
END_TO_END_RUNTIME = 'End to End Runtime'


def _ImageName(vm) -> str:
  """The VM's image (an AMI id, a GCE image), else 'local'."""
  image = getattr(vm, 'image', None)
  image = getattr(image, 'image_id', image)  # AWS keeps an ImageChoice.
  return str(image or vm.spec.image or 'local')


class Deadline:
  """Seconds left before --timeout_minutes; the clock is injectable."""

  def __init__(self, timeout_s: Optional[float],
               clock: Callable[[], float] = time.monotonic):
    self._clock = clock
    self._end = None if timeout_s is None else clock() + timeout_s

  def Remaining(self) -> float:
    if self._end is None:
      return float('inf')
    return max(0.0, self._end - self._clock())


class BenchmarkSpec:
  """Everything one benchmark run needs, built from its merged config."""

  def __init__(self, module, config: Dict[str, Any], run_uri: str, cloud: str,
               record, flag_values, catalog: pricing.PriceCatalog,
               emit: Callable[[List[sample_lib.Sample]], None],
               reporter=None, deadline: Optional[Deadline] = None,
               ssh_waiter: Optional[Callable[[Any], None]] = None):
    self.module = module
    self.name = module.BENCHMARK_NAME
    self.config = config
    self.run_uri = run_uri
    self.cloud = cloud
    self.record = record
    self.flags = flag_values
    self.catalog = catalog
    self._emit = emit
    self.reporter = reporter
    self.deadline = deadline or Deadline(None)
    # How cloud VMs wait for SSH (None: really wait); tests against fake
    # cloud endpoints inject one, as nothing there answers SSH.
    self.ssh_waiter = ssh_waiter
    self.vm_groups: Dict[str, List[virtual_machine.BaseVirtualMachine]] = {}
    self.vms: List[virtual_machine.BaseVirtualMachine] = []
    # Every sample says which price basis costed it (--price_basis).
    self.metadata: Dict[str, Any] = (
        {'pricing_model': catalog.basis} if catalog is not None else {})
    # The benchmark module's frozen options record (CachedOptions).
    self.options: Optional[StudyOptions] = None
    self.deployment: Optional[StudyDeployment] = None
    self._published: List[sample_lib.Sample] = []

  @property
  def can(self) -> virtual_machine.Capabilities:
    """What this cloud's machines can do (providers.CAPABILITIES)."""
    return providers.CapabilitiesOf(self.cloud)

  @property
  def provider(self):
    # Looked up only when VMs are built, so --dry_run works for every cloud.
    return providers.GetProvider(self.cloud)

  @property
  def peer_tcp_ports(self) -> Tuple[Tuple[int, int], ...]:
    """(low, high) TCP ranges the run's VMs open to each other, beyond Redis.

    Declared by the benchmark module as PEER_TCP_PORTS (none by default);
    providers admit them from the run's own VMs only. SSH stays the
    operator's alone, so a range holding 22 is refused.
    """
    ranges = tuple(getattr(self.module, 'PEER_TCP_PORTS', ()))
    for port_range in ranges:
      low, high = port_range
      if not 1 <= low <= high <= 65535 or low <= 22 <= high:
        raise errors.ConfigError(
            f'{self.name}.PEER_TCP_PORTS has {port_range}; give (low, high) '
            'TCP ranges within 1-65535 that leave out SSH (22).')
    return ranges

  @property
  def starts_redis_shards(self) -> bool:
    """Whether the run listens on ports from --redis_start_port, as the
    benchmark module declares (STARTS_REDIS_SHARDS); an upstream module,
    which does not, is never refused for ports it does not use."""
    return bool(getattr(self.module, 'STARTS_REDIS_SHARDS', False))

  # VM specs ----------------------------------------------------------------

  def GroupSpecs(self) -> Dict[str, virtual_machine.VmSpec]:
    self._ConfigCounts()  # The limits first: the work below grows with them.
    return {group: self.GroupSpec(group)
            for group in self.config.get('vm_groups', {})}

  def GroupSpec(self, group: str) -> virtual_machine.VmSpec:
    """One vm_group's VmSpec for this cloud, with dedicated flags applied."""
    group_config = configs.Checked(
        configs.VmGroup, self.config['vm_groups'][group], f'vm_groups.{group}')
    vm_specs = group_config.vm_spec or {}
    # Existing machines take the Local entry unless the config has its own
    # (a branch on names: configs' vm_spec keys are cloud names).
    spec_cloud = ('Local' if self.cloud == 'Static' and
                  'Static' not in vm_specs else self.cloud)
    entry = vm_specs.get(spec_cloud)
    cloud_spec = entry.model_dump(exclude_none=True) if entry else {}
    if not cloud_spec:
      raise errors.ConfigError(
          f'vm_groups.{group}.vm_spec has no {self.cloud} entry; add one '
          'with --benchmark_config_file or --config_override.')
    if spec_cloud != self.cloud and 'machine_type' in cloud_spec:
      # Local's type names this machine, not the machines in the file: the
      # dry run said "1 x local in the machines file". Their VMs say
      # 'static' where the file gives no type.
      cloud_spec['machine_type'] = 'static'
    # --machine_type sizes the servers (the machine type being measured);
    # clients keep the config's type unless --client_machine_type.
    sized = (getattr(self.flags, 'client_machine_type', None)
             if group == CLIENT_GROUP else self.flags.machine_type)
    if sized:
      cloud_spec['machine_type'] = sized
    if pkb_flags.OneZone(self.flags):
      cloud_spec['zone'] = pkb_flags.OneZone(self.flags)
    if (providers.CapabilitiesOf(self.cloud).is_runner_machine and
        cloud_spec.get('zone')):
      # As --zone is (input_checks): the plan said '1 x local in
      # europe-west4-a' and every sample its zone.
      raise errors.UsageError(self.name + ': ' + providers.NotOnThisMachine(
          f'vm_groups.{group}.vm_spec.{spec_cloud}.zone', cloud_spec['zone'],
          drop='it'))
    if 'machine_type' not in cloud_spec:
      raise errors.ConfigError(
          f'vm_groups.{group}.vm_spec.{spec_cloud} needs a machine_type.')
    # A zone or machine type the cloud does not have fails minutes into a
    # real run; refused here, for a dry run too.
    cloud_names.CheckZone(self.cloud, cloud_spec.get('zone'),
                          getattr(self.flags, 'allow_unlisted_zone', False))
    cloud_names.CheckMachineType(self.cloud, cloud_spec['machine_type'])
    cloud_spec.setdefault('os_type', group_config.os_type or
                          self.flags.os_type)
    return virtual_machine.VmSpec(cloud=self.cloud, **cloud_spec)

  def GroupCounts(self) -> Dict[str, int]:
    counts = self._ConfigCounts()
    if CLIENT_GROUP in counts and self._ClientsFollowServers():
      vcpus = self._GroupVcpus()
      if vcpus:
        server_vcpus, client_vcpus = vcpus
        counts[CLIENT_GROUP] = max(counts[CLIENT_GROUP], min(
            MAX_FOLLOWING_CLIENTS, -(-CLIENT_VCPU_RATIO * server_vcpus //
                                     client_vcpus)))
    return counts

  def _ConfigCounts(self) -> Dict[str, int]:
    """vm_group name -> its configured VM count, within the limits."""
    groups = configs.CheckVmGroups(self.config, self.name)
    return {group: checked.vm_count for group, checked in groups.items()}

  def _ClientsFollowServers(self) -> bool:
    """With --machine_type on a cloud, the clients are sized to the
    servers (CLIENT_VCPU_RATIO) unless --client_machine_type sizes them."""
    return (self.can.made_by_run and bool(self.flags.machine_type)
            and not getattr(self.flags, 'client_machine_type', None))

  def _GroupVcpus(self) -> Optional[Tuple[int, int]]:
    """(all servers' vCPUs, one client's vCPUs) from the catalog; None
    when either is unknown (a --machine_price type)."""
    counts = self._ConfigCounts()
    try:
      server = self.GroupPrice(SERVER_GROUP).vcpus
      client = self.GroupPrice(CLIENT_GROUP).vcpus
    except (errors.Error, KeyError):
      return None
    if not server or not client or SERVER_GROUP not in counts:
      return None
    return server * counts[SERVER_GROUP], client

  def ClientSizing(self) -> Optional[str]:
    """The plan's line on the clients' vCPUs against the servers'; None off
    the clouds."""
    if not self.can.made_by_run or CLIENT_GROUP not in (
        self.config.get('vm_groups') or {}):
      return None
    vcpus = self._GroupVcpus()
    if not vcpus:
      return None
    server_vcpus, one_client = vcpus
    clients = self.GroupCounts()[CLIENT_GROUP]
    total = clients * one_client
    ratio = f'{total / server_vcpus:.2g}x'
    if total >= CLIENT_VCPU_RATIO * server_vcpus:
      rule = (' (--machine_type sizes the servers; the clients follow them)'
              if self._ClientsFollowServers() else '')
      return (f'clients: {total} vCPUs for the servers\' {server_vcpus}, '
              f'{ratio}{rule}')
    return (f'WARNING: the clients have {total} vCPUs for the servers\' '
            f'{server_vcpus} ({ratio}, under the {CLIENT_VCPU_RATIO}x rule): '
            'the load generator may be the limit; give --client_machine_type '
            'or more client VMs (vm_groups.clients.vm_count).')

  def PlanWarnings(self) -> List[str]:
    """Checks the plan before anything starts (raises errors.UsageError),
    cheapest limits first; returns its warnings, the benchmark module's
    own PlanWarnings(spec) included."""
    warnings = []
    counts = self._ConfigCounts()
    if not self.can.made_by_run:
      # Machines that exist already: the provider checks that the run can
      # have them, so a dry run refuses what the run would, and a run
      # refuses before its directory is made; it warns of what the figures
      # would suffer from them.
      warnings += getattr(self.provider, 'CheckMachines', lambda spec: [])(
          self)
    # What the provider would refuse before making anything, in a dry run
    # too (AWS: shards on ports its security group keeps closed).
    getattr(self.provider, 'CheckPlan', lambda spec: None)(self)
    if self.can.is_runner_machine:
      warnings += self.provider.FitWarnings(sum(counts.values()))
      problem = self.LocalSplit().problem
      if problem:
        warnings.append(problem)
    for group in counts:
      self.GroupPrice(group)
    sizing = self.ClientSizing()
    if sizing and sizing.startswith('WARNING'):
      warnings.append(sizing)
    warnings += benchmark_contract.Call(self.module, 'PlanWarnings', self)
    return warnings

  def LocalSplit(self):
    """How a Local run splits this machine: each VM's cores and the servers'
    CPU quota (providers/local/split.py); None off Local."""
    if not self.can.is_runner_machine:
      return None
    return self.provider.PlannedSplit(self)

  def ServerVcpus(self) -> Optional[int]:
    """vCPUs of one server VM as the run will have it; None when unknown
    before the machines are reached (Static, an uncatalogued type)."""
    if self.can.is_runner_machine:
      cores = self.provider.PlannedCores(self).get(f'{SERVER_GROUP}-0')
      return len(cores) if cores else len(self.provider.AvailableCores())
    if self.can.made_by_run:  # Of a catalog machine type.
      try:
        return self.GroupPrice(SERVER_GROUP).vcpus or None
      except (errors.Error, KeyError):
        return None
    return None

  def GroupPrice(self, group: str) -> pricing.HourlyPrice:
    spec = self.GroupSpec(group)
    if self.can.priced_as_catalog:
      cloud, region, machine_type = pricing.ParsePricedAs(
          spec.priced_as or self.flags.local_priced_as)
      return self.catalog.Lookup(cloud, region, machine_type)
    return self.catalog.Lookup(self.cloud, spec.zone, spec.machine_type)

  # Stages ------------------------------------------------------------------

  def _SetGroups(self, groups) -> None:
    """vm_groups and vms by group name, as upstream PKB keeps them (its
    ConstructVirtualMachines builds the groups in sorted(vm_groups): a
    module's vms[0] is the first group by name, whatever the config's
    order); the providers build servers first: placement, not order."""
    self.vm_groups = dict(sorted(groups.items()))
    self.vms = [vm for vms in self.vm_groups.values() for vm in vms]

  def ConstructVirtualMachines(self) -> None:
    self._SetGroups(self.provider.ConstructVms(self))

  def PricedAs(self) -> Dict[str, str]:
    """Each group's price, named: what the run record keeps from the
    invocation that provisioned (pkb's RunRecord info 'priced_as')."""
    named = {}
    for group in self.GroupSpecs():
      price = self.GroupPrice(group)
      named[group] = f'{price.cloud}:{price.region}:{price.machine_type}'
    return named

  def CheckRecordedVms(self) -> None:
    """Refuses flags or a config naming other machines than the record's:
    a later stage prices its groups from those (GroupPrice), while its VMs
    come from the record, so its figures would be another machine's."""
    if self.can.priced_as_catalog:
      # Machines priced as a catalog type (--local_priced_as): the record
      # keeps the provisioning invocation's (none in a record made before).
      info = self.record.info
      recorded = info.get('priced_as') if isinstance(info, dict) else None
      priced = recorded.get(self.name) if isinstance(recorded, dict) else None
      now = self.PricedAs()
      if isinstance(priced, dict) and priced != now:
        raise errors.UsageError(
            f'Run {self.run_uri} was priced as {_Named(priced)} when it was '
            f'provisioned (its record), not {_Named(now)}; give the '
            '--local_priced_as (or vm_spec priced_as) it was provisioned with.')
    if not self.can.made_by_run:  # Machines not sized by the flags.
      return
    specs = self.GroupSpecs()
    for entry in self.record.Resources():
      data = entry['data']
      spec = specs.get(data.get('group'))
      if spec is None or entry['status'] != 'created':
        continue
      had = (data.get('machine_type'), data.get('zone'))
      if had != (spec.machine_type, spec.zone):
        raise errors.UsageError(
            f'Run {self.run_uri}\'s {data["group"]} VM {entry["name"]} is '
            f'{had[0]} in {had[1]} (its record), not {spec.machine_type} in '
            f'{spec.zone}; give the flags it was provisioned with (it would '
            'be priced as the other).')

  def RestoreVirtualMachines(self, every_group: bool = True) -> None:
    """Rebuilds the VMs an earlier invocation of this run provisioned;
    refuses a group with none unless not `every_group`."""
    groups: Dict[str, List[virtual_machine.BaseVirtualMachine]] = {}
    for entry in self.record.Resources():
      if 'group' in entry['data'] and entry['status'] == 'created':
        vm = resource.FromRecord(entry, self.record)
        vm.record = self.record
        groups.setdefault(entry['data']['group'], []).append(vm)
    missing = set(self.GroupCounts()) - set(groups)
    if missing and every_group:
      raise errors.UsageError(
          f'Run {self.run_uri} has no provisioned {", ".join(sorted(missing))}'
          ' VMs; start with --run_stage=provision (or all).')
    self._SetGroups(groups)

  def Provision(self) -> None:
    provision = getattr(self.provider, 'Provision', None)
    if provision is not None:
      provision(self)
      return
    for vm in self.vms:
      logging.info('Creating %s VM %s (%s)', self.cloud, vm.name,
                   vm.machine_type)
      vm.Create()

  def Teardown(self) -> List[str]:
    return resource.TeardownFromRecord(self.record)

  # Samples -----------------------------------------------------------------

  def EmitSamples(self, samples: List[sample_lib.Sample]) -> None:
    """Publishes samples now, with the spec's metadata under theirs: the one
    channel."""
    samples = [s.Sealed(under=self.metadata) for s in samples]
    self._published.extend(samples)
    self._emit(samples)

  def CachedOptions(self, build: Callable[[], StudyOptions]) -> StudyOptions:
    """The benchmark's options record, built once per spec by `build`."""
    if self.options is None:
      self.options = build()
    return self.options

  @property
  def published(self) -> List[sample_lib.Sample]:
    """Every sample published so far, in order (a copy)."""
    return list(self._published)

  def GroupMetadata(self) -> Dict[str, Any]:
    """PKB-style <group>_machine_type, <group>_vm_count, ... metadata; for
    a machine reached over SSH also its OS, kernel, architecture and system
    tuning (<group>_os_release, <group>_system_tuning, ...: its
    SystemMetadata), so every benchmark's samples say what they were
    measured on."""
    metadata: Dict[str, Any] = {'cloud': self.cloud}
    zones = set()
    for group, vms in self.vm_groups.items():
      if not vms:
        continue
      first = vms[0]
      metadata[f'{group}_machine_type'] = first.machine_type
      metadata[f'{group}_vm_count'] = len(vms)
      metadata[f'{group}_num_cpus'] = first.num_cpus
      metadata[f'{group}_zone'] = first.zone or self.cloud.lower()
      metadata[f'{group}_os_type'] = first.os_type
      metadata[f'{group}_cloud'] = first.CLOUD or self.cloud
      metadata[f'{group}_image'] = _ImageName(first)
      metadata[f'{group}_vm_platform'] = (
          'local' if first.CAN.is_runner_machine else DEFAULT_VM_PLATFORM)
      if first.cpu_set is not None:
        metadata[f'{group}_cpu_set'] = ','.join(map(str, first.cpu_set))
      if getattr(first, 'cpu_quota', None):
        # CPUs its cgroup quota allows: a figure for that, not whole cores.
        metadata[f'{group}_cpu_quota'] = first.cpu_quota
      system = getattr(first, 'SystemMetadata', None)
      if system is not None:
        metadata.update({f'{group}_{k}': v for k, v in system().items()})
      zones.update(vm.zone for vm in vms if vm.zone)
    metadata['zone'] = ','.join(sorted(zones)) if zones else 'local'
    return metadata


def _Named(priced_as: Dict[str, str]) -> str:
  return ', '.join(f'{group} {named}' for group, named in
                   sorted(priced_as.items()))
