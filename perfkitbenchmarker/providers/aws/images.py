"""Which AMI and what machine: --os_type and architecture -> image id.

AMIs are looked up at run time from the public SSM parameters the
distributions publish (so a run always gets the current image of its region,
and no AMI id is ever hard-coded), by --os_type and by the machine type's
architecture: arm64 for Graviton types (c6gn, c7g, m6g, ...), x86_64
otherwise, as EC2's DescribeInstanceTypes reports it. The AMI's own
architecture is checked against the machine's before anything is created.

Extension seam: a new OS is one `OsImage` entry in OS_IMAGES (its parameter
path with an {arch} placeholder, its names for the two architectures, its
login user). Retired systems are refused with the reason
(operator_access.RETIRED_OS_TYPES) instead of failing in the cloud.
"""

import dataclasses
import time
from typing import Callable, Dict, Optional, Sequence

from perfkitbenchmarker import errors
from perfkitbenchmarker.providers.aws import api
from perfkitbenchmarker.providers import operator_access

ARM64 = 'arm64'
X86_64 = 'x86_64'


@dataclasses.dataclass(frozen=True)
class OsImage:
  parameter: str  # SSM parameter name with an {arch} placeholder.
  arch_names: Dict[str, str]  # ARM64/X86_64 -> the distribution's name.
  ssh_user: str


_DEBIAN_ARCH = {X86_64: 'amd64', ARM64: 'arm64'}
_AL_ARCH = {X86_64: 'x86_64', ARM64: 'arm64'}
_AL2023 = OsImage(
    '/aws/service/ami-amazon-linux-latest/al2023-ami-kernel-default-{arch}',
    _AL_ARCH, 'ec2-user')

OS_IMAGES: Dict[str, OsImage] = {
    'debian12': OsImage('/aws/service/debian/release/12/latest/{arch}',
                        _DEBIAN_ARCH, 'admin'),
    'debian13': OsImage('/aws/service/debian/release/13/latest/{arch}',
                        _DEBIAN_ARCH, 'admin'),
    'ubuntu2204': OsImage(
        '/aws/service/canonical/ubuntu/server/22.04/stable/current/{arch}/'
        'hvm/ebs-gp2/ami-id', _DEBIAN_ARCH, 'ubuntu'),
    'ubuntu2404': OsImage(
        '/aws/service/canonical/ubuntu/server/24.04/stable/current/{arch}/'
        'hvm/ebs-gp3/ami-id', _DEBIAN_ARCH, 'ubuntu'),
    'al2023': _AL2023,
    'amazonlinux2023': _AL2023,  # PKB's name for it.
}


def CheckOsType(os_type: str) -> None:
  """Refuses an --os_type with no image here, in one line."""
  OsImageFor(os_type)


def OsImageFor(os_type: str) -> OsImage:
  """The OsImage of --os_type; a one-line UsageError naming the choices."""
  if os_type in OS_IMAGES:
    return OS_IMAGES[os_type]
  raise operator_access.OsTypeRefused(os_type, 'AWS', OS_IMAGES)


def ParameterName(os_type: str, architecture: str) -> str:
  image = OsImageFor(os_type)
  return image.parameter.format(arch=image.arch_names[architecture])


def ArchitectureOf(machine_type: str, supported: Sequence[str]) -> str:
  """arm64 or x86_64 from DescribeInstanceTypes' SupportedArchitectures."""
  if X86_64 in supported:
    return X86_64
  if ARM64 in supported:
    return ARM64
  raise errors.UsageError(
      f'{machine_type} runs {"/".join(supported) or "no known"} '
      'architecture; this harness supports x86_64 and arm64 (Graviton) '
      'machine types.')


@dataclasses.dataclass(frozen=True)
class MachineInfo:
  machine_type: str
  vcpus: int
  memory_mib: int
  architecture: str


def DescribeMachine(clients: api.AwsClients, machine_type: str, zone: str,
                    sleep: Callable[[float], None] = time.sleep
                    ) -> MachineInfo:
  """vCPUs, memory and architecture; refuses types the zone does not offer.
  (`sleep`: the pauses of api.Read.)"""
  ec2 = clients.ec2
  types = api.Read(f'looking up machine type {machine_type}',
                   lambda: ec2.describe_instance_types(
                       InstanceTypes=[machine_type])['InstanceTypes'],
                   sleep=sleep, gone={'InvalidInstanceType'})
  if not types:
    raise errors.UsageError(
        f'{machine_type} is not an EC2 instance type; check machine_type in '
        'the config or --machine_type.')
  offered = api.Read(
      f'checking that {zone} offers {machine_type}',
      lambda: ec2.describe_instance_type_offerings(
          LocationType='availability-zone',
          Filters=[{'Name': 'instance-type', 'Values': [machine_type]},
                   {'Name': 'location', 'Values': [zone]}],
      )['InstanceTypeOfferings'], sleep=sleep)
  if not offered:
    raise errors.UsageError(
        f'{zone} does not offer {machine_type}; choose another --zone.')
  info = types[0]
  return MachineInfo(
      machine_type=machine_type,
      vcpus=int(info['VCpuInfo']['DefaultVCpus']),
      memory_mib=int(info['MemoryInfo']['SizeInMiB']),
      architecture=ArchitectureOf(
          machine_type, info['ProcessorInfo']['SupportedArchitectures']))


@dataclasses.dataclass(frozen=True)
class ImageChoice:
  image_id: str
  architecture: str
  root_device_name: str
  source: str  # The SSM parameter, or 'vm_spec.image'.


def LookUpImage(clients: api.AwsClients, os_type: str, architecture: str,
                image_id: Optional[str] = None,
                sleep: Callable[[float], None] = time.sleep) -> ImageChoice:
  """The AMI for os_type on architecture (or the vm_spec's own image).
  (`sleep`: the pauses of api.Read.)"""
  source = 'vm_spec.image'
  if not image_id:
    source = ParameterName(os_type, architecture)
    value = api.Read(
        f'reading SSM parameter {source}',
        lambda: clients.ssm.get_parameter(Name=source)['Parameter']['Value'],
        sleep=sleep, gone={'ParameterNotFound'})
    if not value:
      raise errors.ResourceError(
          f'{clients.region} publishes no {source}; --os_type={os_type} may '
          f'not be offered there for {architecture}.')
    image_id = value
  images = api.Read(
      f'looking up AMI {image_id}',
      lambda: clients.ec2.describe_images(ImageIds=[image_id])['Images'],
      sleep=sleep, gone={'InvalidAMIID.NotFound', 'InvalidAMIID.Malformed'})
  if not images:
    raise errors.ResourceError(
        f'AMI {image_id} (from {source}) is not visible in {clients.region}.')
  image = images[0]
  if image.get('Architecture') != architecture:
    raise errors.UsageError(
        f'AMI {image_id} (from {source}) is {image.get("Architecture")} but '
        f'the machine type needs {architecture}.')
  return ImageChoice(image_id, architecture,
                     image.get('RootDeviceName') or '/dev/xvda', source)
