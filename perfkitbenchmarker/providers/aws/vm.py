"""AwsVirtualMachine: an SshVirtualMachine on an EC2 instance.

Tagged in the launch call itself; ready once EC2 says running and SSH
answers (SshVirtualMachine.AwaitSsh). The
harness reaches its public address, the VMs each other's private one (the
security group admits Redis only from the group). Deleting waits until EC2
says terminated, so the placement group, key pair and security group
deleted after it are free.
"""

import uuid
from typing import Any, Dict, List, Optional

from perfkitbenchmarker import errors
from perfkitbenchmarker import providers
from perfkitbenchmarker import ssh_vm
from perfkitbenchmarker import virtual_machine
from perfkitbenchmarker import waits
from perfkitbenchmarker.providers.aws import api
from perfkitbenchmarker.providers.aws import images
from perfkitbenchmarker.providers.aws import naming

CLOUD = 'AWS'
_LIVE_STATES = ['pending', 'running', 'stopping', 'stopped', 'shutting-down']
_NOT_FOUND = 'InvalidInstanceID.NotFound'


class AwsVirtualMachine(ssh_vm.SshVirtualMachine):
  """One EC2 instance of the run."""

  CLOUD = CLOUD
  KIND = 'aws_vm'
  CAN = providers.CAPABILITIES[CLOUD]
  READY_TIMEOUT_S = 900  # Boot plus the SSH wait.
  TERMINATE_TIMEOUT_S = 600
  # Throttling is waited out by these retries, botocore making none
  # (api's docstring).
  CREATE_RETRIES = DELETE_RETRIES = api.ATTEMPTS

  def __init__(self, spec: virtual_machine.VmSpec, name: str, group_name: str,
               *, clients: api.AwsClients, run_uri: str,
               user: Optional[str] = None,
               tags: Optional[Dict[str, str]] = None, **kwargs):
    super().__init__(spec, name, group_name, run_uri=run_uri,
                     user=user or images.OsImageFor(spec.os_type).ssh_user,
                     **kwargs)
    self.clients = clients
    self.ec2 = clients.ec2
    self.region = clients.region
    self.name_tag = naming.ResourceName(run_uri, name)
    self.tags = tags or {}
    self.instance_id: Optional[str] = None
    self.create_unanswered = False  # api.SendCreate.
    # Set by the provider before Create().
    self.image: Optional[images.ImageChoice] = None
    self.subnet_id: Optional[str] = None
    self.security_group_id: Optional[str] = None
    self.key_name: Optional[str] = None
    self.placement_group: Optional[str] = None
    # Makes a retried RunInstances of this object idempotent; a new object
    # (a new provision attempt) gets a new token.
    self._client_token = f'{self.name_tag}-{uuid.uuid4().hex[:12]}'[-64:]

  # Lifecycle ---------------------------------------------------------------

  def _FindInstances(self, states: List[str]) -> List[str]:
    filters = naming.RunFilters(self.run_uri, self.name_tag) + [
        {'Name': 'instance-state-name', 'Values': states}]
    with api.Translated(f'looking up instance {self.name_tag}',
                        retry=api.TRANSIENT_CODES):
      reservations = self.ec2.describe_instances(
          Filters=filters)['Reservations']
    return [i['InstanceId'] for r in reservations for i in r['Instances']]

  def LaunchArguments(self) -> Dict[str, Any]:
    """The RunInstances arguments (Provision set what they name)."""
    placement = {'AvailabilityZone': self.zone}
    if self.placement_group:
      placement['GroupName'] = self.placement_group
    arguments = {
        'ImageId': self.image.image_id,
        'InstanceType': self.machine_type,
        'MinCount': 1, 'MaxCount': 1,
        'KeyName': self.key_name,
        'ClientToken': self._client_token,
        'Placement': placement,
        'NetworkInterfaces': [{
            'DeviceIndex': 0, 'SubnetId': self.subnet_id,
            'Groups': [self.security_group_id],
            'AssociatePublicIpAddress': True, 'DeleteOnTermination': True}],
        'TagSpecifications': naming.TagSpecifications(
            self.tags, self.name_tag, 'instance', 'volume',
            'network-interface'),
        'MetadataOptions': {'HttpTokens': 'required',
                            'HttpEndpoint': 'enabled'},
        # A stray VM that shuts itself down also stops costing money.
        'InstanceInitiatedShutdownBehavior': 'terminate',
    }
    if self.spec.boot_disk_size:
      arguments['BlockDeviceMappings'] = [{
          'DeviceName': self.image.root_device_name,
          'Ebs': {'VolumeSize': self.spec.boot_disk_size,
                  'VolumeType': 'gp3', 'DeleteOnTermination': True}}]
    return arguments

  def _Create(self) -> None:
    # An earlier attempt whose reply was lost may have launched it already.
    found = self._FindInstances(['pending', 'running'])
    if found:
      self.Remember(instance_id=found[0])
      return
    arguments = self.LaunchArguments()
    with api.Translated(f'launching {self.name} ({self.machine_type} in '
                        f'{self.zone})', retry=api.TRANSIENT_CODES):
      reply = api.SendCreate(self,
                             lambda: self.ec2.run_instances(**arguments))
    self.Remember(instance_id=reply['Instances'][0]['InstanceId'])

  def _Describe(self, instance_id: str) -> Optional[Dict[str, Any]]:
    """The instance (a readiness or termination check: api.Read), or None:
    just launched instances can be invisible for a moment; gone ones too."""
    reservations = api.Read(
        f'looking up instance {instance_id}',
        lambda: self.ec2.describe_instances(
            InstanceIds=[instance_id])['Reservations'],
        sleep=self._sleep, gone={_NOT_FOUND}) or []
    instances = [i for r in reservations for i in r['Instances']]
    return instances[0] if instances else None

  def _IsReady(self) -> bool:
    instance = self._Describe(self.instance_id)
    if instance is None or instance['State']['Name'] == 'pending':
      return False
    state = instance['State']['Name']
    if state != 'running':
      reason = instance.get('StateReason', {}).get('Message', 'no reason given')
      raise errors.ResourceError(
          f'{self.name}: instance {self.instance_id} is {state} instead of '
          f'running ({reason}).')
    if not instance.get('PublicIpAddress'):
      return False
    self.Remember(ip_address=instance['PublicIpAddress'],
                   internal_ip=instance.get('PrivateIpAddress'))
    self.AwaitSsh()
    return True

  def _Delete(self) -> None:
    ids = [self.instance_id] if self.instance_id else []
    if not ids and self.create_unanswered:
      # EC2 may have launched it without listing it yet (api's docstring).
      ids = api.LookAgain(
          self, f'looking up instance {self.name_tag}, whose launch went '
          'unanswered', lambda: self._FindInstances(_LIVE_STATES),
          self._sleep)
    else:
      ids += [i for i in self._FindInstances(_LIVE_STATES) if i not in ids]
    for instance_id in ids:
      with api.Translated(f'terminating {self.name} ({instance_id})',
                          retry=api.TRANSIENT_CODES, gone={_NOT_FOUND}):
        self.ec2.terminate_instances(InstanceIds=[instance_id])

    def AllTerminated() -> bool:
      for instance_id in ids:
        instance = self._Describe(instance_id)
        if instance is not None and instance['State']['Name'] != 'terminated':
          return False
      return True

    # Not boto3's waiter: it sleeps on the real clock, takes no deadline of
    # ours, and fails on an instance id EC2 no longer knows.
    if not waits.Poll(AllTerminated, bool, self.TERMINATE_TIMEOUT_S, 5,
                      self._clock, self._sleep)[0]:
      raise errors.ResourceError(
          f'terminating {self.name} took more than '
          f'{self.TERMINATE_TIMEOUT_S}s; run `{self.TeardownCommand()}` '
          'again later.')

  # Record ------------------------------------------------------------------

  def RecordData(self) -> Dict[str, Any]:
    return dict(
        super().RecordData(), region=self.region,
        profile=self.clients.profile, instance_id=self.instance_id,
        create_unanswered=self.create_unanswered, name_tag=self.name_tag,
        placement_group=self.placement_group,
        image_id=self.image.image_id if self.image else None)

  class Fields(ssh_vm.SshVirtualMachine.Fields):
    os_type: str = 'debian12'
    user: Optional[ssh_vm.User] = None  # The image's, by os_type.
    ip_address: Optional[ssh_vm.Host] = None  # Not yet known when created.
    region: api.Region
    profile: Optional[str] = None
    instance_id: Optional[str] = None
    create_unanswered: bool = False
    placement_group: Optional[str] = None

    def Args(self, record) -> Dict[str, Any]:
      return dict(super().Args(record), run_uri=record.run_uri,
                  clients=api.DEFAULT_CLIENTS.ForRegion(self.region,
                                                        self.profile))

  def Restore(self, fields: Fields) -> None:
    super().Restore(fields)
    self.instance_id = fields.instance_id
    self.create_unanswered = fields.create_unanswered
    self.placement_group = fields.placement_group

  def GetResourceMetadata(self) -> Dict[str, Any]:
    metadata = super().GetResourceMetadata()
    metadata['placement_group'] = self.placement_group or 'none'
    if self.image:
      metadata['image'] = self.image.image_id
    return metadata


api.Register(AwsVirtualMachine)
