"""Which public image a VM boots, chosen by --os_type (or vm_spec os_type).

Extension seam: supporting another OS is one row in `_FAMILIES` (its image
project and the x86-64 and Arm64 image families). Images are resolved through
images.getFromFamily at creation time, so a run always boots the newest
non-deprecated image of the family and records which one it was. A vm_spec
`image` (an image URL or projects/<p>/global/images/<name>) bypasses this.
"""

import dataclasses
import time
from typing import Callable, Dict, Tuple

from perfkitbenchmarker import errors
from perfkitbenchmarker.providers import operator_access


@dataclasses.dataclass(frozen=True)
class ImageFamily:
  project: str
  family: str


# os_type -> (image project, x86-64 family, Arm64 family).
_FAMILIES: Dict[str, Tuple[str, str, str]] = {
    'debian12': ('debian-cloud', 'debian-12', 'debian-12-arm64'),
    'debian13': ('debian-cloud', 'debian-13', 'debian-13-arm64'),
    'ubuntu2204': ('ubuntu-os-cloud', 'ubuntu-2204-lts',
                   'ubuntu-2204-lts-arm64'),
    'ubuntu2404': ('ubuntu-os-cloud', 'ubuntu-2404-lts-amd64',
                   'ubuntu-2404-lts-arm64'),
    'rocky9': ('rocky-linux-cloud', 'rocky-linux-9', 'rocky-linux-9-arm64'),
}
# Machine series whose CPUs are Arm64 and need the Arm64 image.
ARM64_SERIES = ('t2a', 'c4a')

SUPPORTED_OS_TYPES = tuple(sorted(_FAMILIES))


def CheckOsType(os_type: str) -> None:
  if os_type not in _FAMILIES:
    raise operator_access.OsTypeRefused(os_type, 'GCP', _FAMILIES)


def FamilyFor(os_type: str, machine_type: str) -> ImageFamily:
  CheckOsType(os_type)
  project, x86_family, arm_family = _FAMILIES[os_type]
  arm64 = machine_type.split('-', 1)[0] in ARM64_SERIES
  return ImageFamily(project, arm_family if arm64 else x86_family)


def ResolveImage(clients, family: ImageFamily,
                 sleep: Callable[[float], None] = time.sleep) -> str:
  """The self link of the newest image in `family` (`clients`: a
  compute_api.ComputeClients; `sleep`: the pauses of compute_api.Read)."""
  # Here, not at the top: the checks above run in every GCP dry run, and the
  # Compute client library takes seconds to import.
  from google.api_core import exceptions as api_exceptions  # pylint: disable=g-import-not-at-top
  from perfkitbenchmarker.providers.gcp import compute_api  # pylint: disable=g-import-not-at-top
  what = f'Looking up image family {family.project}/{family.family}'
  try:
    image = compute_api.Read(what, clients.images.get_from_family,
                             project=family.project, family=family.family,
                             sleep=sleep, timeout=clients.call_timeout_s,
                             passthrough=(api_exceptions.NotFound,))
  except api_exceptions.NotFound:
    raise errors.ResourceError(
        f'{what}: no such family; give the vm_spec an explicit image or '
        f'another --os_type ({", ".join(SUPPORTED_OS_TYPES)}).') from None
  return image.self_link
