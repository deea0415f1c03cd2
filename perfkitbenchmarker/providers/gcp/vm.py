"""GceVirtualMachine: a Compute Engine instance driven over SSH.

The instance body is built by the pure `BuildInstance`, so what is sent is
testable without any API.
"""

import dataclasses
import logging
from typing import Any, Callable, Dict, Optional, Sequence, TYPE_CHECKING

from google.api_core import exceptions as api_exceptions

from perfkitbenchmarker import errors
from perfkitbenchmarker import providers
from perfkitbenchmarker import resource
from perfkitbenchmarker import ssh_vm
from perfkitbenchmarker import virtual_machine
from perfkitbenchmarker.providers.gcp import compute_api
from perfkitbenchmarker.providers.gcp import images

if TYPE_CHECKING:  # Annotations only (compute_api.ComputeV1 says why).
  from google.cloud import compute_v1  # pylint: disable=g-import-not-at-top

CLOUD = 'GCP'
DEFAULT_BOOT_DISK_GB = 20
# Series whose machines attach only Hyperdisk (no pd-* boot disks).
HYPERDISK_ONLY_SERIES = ('c4', 'c4a', 'c4d', 'n4', 'n4d', 'h4d', 'm4', 'x4')
# Instance states from which it will not become RUNNING by itself.
_DEAD_STATES = ('STOPPING', 'STOPPED', 'SUSPENDING', 'SUSPENDED',
                'TERMINATED', 'REPAIRING')


def DefaultBootDiskType(machine_type: str) -> str:
  series = machine_type.split('-', 1)[0]
  return ('hyperdisk-balanced' if series in HYPERDISK_ONLY_SERIES
          else 'pd-balanced')


@dataclasses.dataclass(frozen=True)
class InstanceConfig:
  """Everything an instance is created with, besides its name and image."""
  project: str
  zone: str
  machine_type: str
  network_url: str
  subnetwork_url: Optional[str] = None
  image: Optional[str] = None  # An explicit image wins over the family.
  image_family: Optional[images.ImageFamily] = None
  boot_disk_gb: int = DEFAULT_BOOT_DISK_GB
  boot_disk_type: Optional[str] = None
  tags: Sequence[str] = ()
  labels: Dict[str, str] = dataclasses.field(default_factory=dict)
  placement_policy_url: Optional[str] = None


def BuildInstance(name: str, config: InstanceConfig, image_link: str,
                  ssh_user: str, public_key: str) -> 'compute_v1.Instance':
  """The instances.insert body for one VM of the run."""
  compute_v1 = compute_api.ComputeV1()
  disk_type = config.boot_disk_type or DefaultBootDiskType(config.machine_type)
  boot_disk = compute_v1.AttachedDisk(
      boot=True, auto_delete=True, type_='PERSISTENT',
      initialize_params=compute_v1.AttachedDiskInitializeParams(
          source_image=image_link, disk_size_gb=config.boot_disk_gb,
          disk_type=(f'projects/{config.project}/zones/{config.zone}/'
                     f'diskTypes/{disk_type}'),
          labels=dict(config.labels)))
  nic = compute_v1.NetworkInterface(
      network=config.network_url,
      # An external address so the operator can SSH in; the firewall keeps
      # everyone else out.
      access_configs=[compute_v1.AccessConfig(
          name='External NAT', type_='ONE_TO_ONE_NAT')])
  if config.subnetwork_url:
    nic.subnetwork = config.subnetwork_url
  instance = compute_v1.Instance(
      name=name,
      machine_type=(f'projects/{config.project}/zones/{config.zone}/'
                    f'machineTypes/{config.machine_type}'),
      disks=[boot_disk],
      network_interfaces=[nic],
      tags=compute_v1.Tags(items=list(config.tags)),
      labels=dict(config.labels),
      metadata=compute_v1.Metadata(items=[
          compute_v1.Items(key='ssh-keys', value=f'{ssh_user}:{public_key}'),
          # ssh-keys metadata is ignored where OS Login is on.
          compute_v1.Items(key='enable-oslogin', value='FALSE'),
      ]))
  if config.placement_policy_url:
    instance.resource_policies = [config.placement_policy_url]
    # Compact placement needs VMs that stop, not migrate, for maintenance.
    instance.scheduling = compute_v1.Scheduling(
        on_host_maintenance='TERMINATE', automatic_restart=True)
  return instance


class _Instance(compute_api.GceResource):
  """The instances API calls of one VM (recorded as the VM, not itself)."""

  KIND = 'gcp_instance'
  CLIENT, PARAM = 'instances', 'instance'

  def __init__(self, name: str, clients, project: str, zone: str,
               build: Optional[Callable[[], 'compute_v1.Instance']] = None,
               record_to: Optional[Callable[..., None]] = None,
               teardown_command: Optional[Callable[[], str]] = None,
               **kwargs):
    super().__init__(name, clients, project, **kwargs)
    self.zone = zone
    self._Body = build
    self._record_to = record_to
    self._teardown_command = teardown_command

  def TeardownCommand(self) -> str:
    # The VM's: it holds the run's record.
    if self._teardown_command is not None:
      return self._teardown_command()
    return super().TeardownCommand()

  def _Where(self) -> Dict[str, str]:
    return {'project': self.project, 'zone': self.zone}

  def _Record(self, **data: Any) -> None:
    # What the calls learn (the pending insert, the request_ids) goes in
    # the VM's entry.
    if self._record_to is not None:
      self._record_to(**data)

  def _CreateFailureHint(self, error: compute_api.OperationError) -> str:
    if error.code in compute_api.STOCKOUT_ERRORS:
      return (f' (zone {self.zone} is out of this machine type; try another '
              '--zone)')
    text = str(error).lower()
    if 'placement' in text or 'resourcepolic' in text:
      return ' (--placement_group_style=none runs without compact placement)'
    return ''


class GceVirtualMachine(ssh_vm.SshVirtualMachine):
  """A Compute Engine instance of the run, reached over SSH."""

  CLOUD = CLOUD
  KIND = 'gcp_vm'
  CAN = providers.CAPABILITIES[CLOUD]

  def __init__(self, spec: virtual_machine.VmSpec, name: str, group_name: str,
               *, clients: compute_api.ComputeClients, project: str,
               config: Optional[InstanceConfig] = None, **kwargs):
    super().__init__(spec, name, group_name, **kwargs)
    self.clients = clients
    self.project = project
    self.config = config
    self.image: Optional[str] = None
    # The run's public key for the ssh-keys metadata; set by Provision.
    self.ssh_public_key: Optional[str] = None
    self._instance = _Instance(name, clients, project, spec.zone,
                               build=self._BuildInstance,
                               record_to=self._Record,
                               teardown_command=self.TeardownCommand,
                               sleep=self._sleep, clock=self._clock)

  # Resource hooks ---------------------------------------------------------

  def _BuildInstance(self) -> 'compute_v1.Instance':
    # Only Provision creates, and only VMs it built with a config.
    if self.image is None:
      self.LearnMachineAndImage()
    if not self.ssh_public_key:
      raise errors.ResourceError(
          f'VM {self.name} has no SSH key to create it with; the provider\'s '
          'Provision makes the run\'s key first.')
    return BuildInstance(self.name, self.config, self.image, self.user,
                         self.ssh_public_key)

  def LearnMachineAndImage(self) -> None:
    """Checks the machine type is offered in the zone, filling num_cpus and
    memory_mib from it, and resolves the image: Provision asks before it
    makes anything, so a wrong type leaves nothing to tear down."""
    self._LearnMachineType()
    if self.config.image:
      self.image = self.config.image
    else:
      self.image = images.ResolveImage(self.clients, self.config.image_family,
                                       sleep=self._sleep)

  def _LearnMachineType(self) -> None:
    what = f'Looking up machine type {self.machine_type} in {self.zone}'
    try:
      machine = compute_api.Read(
          what, self.clients.machine_types.get, project=self.project,
          zone=self.zone, machine_type=self.machine_type, sleep=self._sleep,
          timeout=self.clients.call_timeout_s,
          passthrough=(api_exceptions.NotFound,))
    except api_exceptions.NotFound:
      raise errors.ResourceError(
          f'Machine type {self.machine_type} is not offered in zone '
          f'{self.zone}; pick another --machine_type or --zone.') from None
    self.num_cpus = self.num_cpus or machine.guest_cpus or None
    self.memory_mib = self.memory_mib or machine.memory_mb or None

  def _Create(self) -> None:
    logging.info('Creating GCE instance %s (%s in %s)', self.name,
                 self.machine_type, self.zone)
    self._instance._Create()  # pylint: disable=protected-access

  def _IsReady(self) -> bool:
    try:
      instance = self._instance.Get()
    except api_exceptions.NotFound:
      raise errors.ResourceError(
          f'Instance {self.name} disappeared while starting.') from None
    if instance.status in _DEAD_STATES:
      raise errors.ResourceError(
          f'Instance {self.name} is {instance.status} instead of RUNNING '
          f'({instance.status_message or "no reason given"}).')
    if instance.status != 'RUNNING':
      return False
    nic = instance.network_interfaces[0]
    self.internal_ip = nic.network_i_p or None
    self.ip_address = (nic.access_configs[0].nat_i_p
                       if nic.access_configs else None) or self.internal_ip
    if not self.ip_address:
      return False
    self.AwaitSsh()
    return True

  def _Delete(self) -> None:
    self._instance._Delete()  # pylint: disable=protected-access

  # Record and metadata ------------------------------------------------------

  def RecordData(self) -> Dict[str, Any]:
    # With the SSH and VM fields, what finds the instance again.
    return dict(super().RecordData(), project=self.project,
                api_endpoint=self.clients.endpoint, image=self.image,
                pending_insert=self._instance.pending_insert,
                insert_request_id=self._instance.insert_request_id,
                delete_request_id=self._instance.delete_request_id)

  def GetResourceMetadata(self) -> Dict[str, Any]:
    metadata = super().GetResourceMetadata()
    metadata['image'] = self.image
    if self.config is not None:
      metadata['placement_policy'] = (
          'compact' if self.config.placement_policy_url else 'none')
    return metadata

  class Fields(ssh_vm.SshVirtualMachine.Fields):
    machine_type: str
    zone: str
    os_type: str = 'debian12'
    user: ssh_vm.User = 'pkb'
    ip_address: Optional[ssh_vm.Host] = None  # Not yet known when created.
    project: compute_api.Project
    api_endpoint: Optional[compute_api.Endpoint] = None
    image: Optional[str] = None
    pending_insert: Optional[compute_api.OperationName] = None
    insert_request_id: Optional[compute_api.RequestId] = None
    delete_request_id: Optional[compute_api.RequestId] = None

    def Args(self, record) -> Dict[str, Any]:
      return dict(super().Args(record), project=self.project,
                  clients=compute_api.ComputeClients.ForTeardown(
                      self.api_endpoint))

  def Restore(self, fields: Fields) -> None:
    super().Restore(fields)
    self.image = fields.image
    self._instance.pending_insert = fields.pending_insert
    self._instance.insert_request_id = fields.insert_request_id
    self._instance.delete_request_id = fields.delete_request_id


resource.RegisterKind(GceVirtualMachine.KIND, GceVirtualMachine.FromRecord)
