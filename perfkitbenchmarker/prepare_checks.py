"""What would fail in prepare, checked before anything is created.

The driver calls `Check(spec)` for every benchmark of a run or matrix cell,
dry or real, once its VM groups are priced: a load generator that cannot be
installed on the clients' OS, or a preload that cannot fit the servers'
memory, is refused in one errors.UsageError line instead of failing in
prepare with every VM billed. `RealRunNeeds(spec, flag_values)` lists what
a real cloud run needs that a dry run does not (--project, the SSH source
range, credentials, installer files); the dry-run plan prints it.

Extension seam: a benchmark module says what its VMs will run through two
optional hooks, both pure of side effects:
  * `ClientLoadGenerator(spec)` -> 'memtier', or None when the clients
    install nothing with OS limits (redis-benchmark and YCSB install on
    Debian/Ubuntu and RHEL-like images alike; a --memtier_path binary is
    the user's own).
  * `DatasetEstimate(spec)` -> `DatasetEstimate` (the preload's keys, bytes
    per key in the server's memory, copies, the memory share the shards
    get and the flag that sets the key count), or None.
A new OS image is one entry in `OS_FAMILIES`.
"""

import dataclasses
import os
from typing import List, Optional

from perfkitbenchmarker import benchmark_contract
from perfkitbenchmarker import errors
from perfkitbenchmarker import vm_util

# --os_type -> the family whose package tools its image has.
OS_FAMILIES = {
    'debian12': 'debian', 'debian13': 'debian', 'ubuntu2204': 'debian',
    'ubuntu2404': 'debian', 'rocky9': 'rhel', 'al2023': 'rhel',
    'amazonlinux2023': 'rhel',
}
# Redis's per-key cost beyond the value: the key name, its dict entry and
# object headers, the allocator's rounding. used_memory grew by 94 B (100 B
# values) and 106 B (1,000 B values) per key over the value when Redis
# 7.0.15 was filled with 200,000 "memtier-:<n>" keys (DEBUG POPULATE);
# rounded up.
REDIS_KEY_OVERHEAD_BYTES = 110


@dataclasses.dataclass(frozen=True)
class DatasetEstimate:
  """A preload as the server VMs will hold it."""
  keys: int
  bytes_per_key: int
  copies: int = 1  # primaries + replicas holding each key
  memory_fraction: float = 1.0  # share of a server VM's RAM for the data
  fraction_flag: str = ''  # the flag that sets memory_fraction
  key_flag: str = '--memtier_key_maximum'

  @property
  def total_bytes(self) -> int:
    return self.keys * self.bytes_per_key * self.copies


def Check(spec) -> None:
  """Refuses, in one line, what prepare would fail on (module docstring)."""
  if not spec.can.made_by_run:  # Only a machine the run makes is billed idle.
    return
  module = spec.module
  if benchmark_contract.Has(module, 'ClientLoadGenerator'):
    _CheckLoadGeneratorOs(spec, module.ClientLoadGenerator(spec))
  if benchmark_contract.Has(module, 'DatasetEstimate'):
    _CheckDatasetFits(spec, module.DatasetEstimate(spec))


def _CheckLoadGeneratorOs(spec, generator: Optional[str]) -> None:
  if generator != 'memtier':
    return
  client_spec = spec.GroupSpecs().get('clients')
  if client_spec is None or client_spec.image:
    return  # A custom image: its OS is the user's to know.
  family = OS_FAMILIES.get(client_spec.os_type)
  if family in (None, 'debian'):
    return  # Unknown os_types are the provider's to refuse.
  raise errors.UsageError(
      f'{spec.name}: the clients boot {client_spec.os_type} (RHEL-like), but '
      'memtier_benchmark installs only from Redis\'s APT repository '
      '(Debian/Ubuntu), so prepare would fail on every client VM; give the '
      'clients a Debian/Ubuntu image (vm_groups.clients.os_type: debian12, '
      f'e.g. --config_override={spec.name}.vm_groups.clients.os_type='
      'debian12), --memtier_path to a memtier already on the image, or '
      '--load_generator=redis_benchmark.')


def _CheckDatasetFits(spec, estimate: Optional[DatasetEstimate]) -> None:
  if estimate is None or estimate.keys <= 0:
    return
  price = spec.GroupPrice('servers')
  if not price.memory_gib:  # A --machine_price type the catalog lacks.
    return
  count = spec.GroupCounts()['servers']
  budget = count * price.memory_gib * 2**30 * estimate.memory_fraction
  if estimate.total_bytes <= budget:
    return
  fits = int(budget // (estimate.bytes_per_key * estimate.copies))
  copies = (f' x {estimate.copies} copies (primary + replicas)'
            if estimate.copies > 1 else '')
  share = (f' x {estimate.memory_fraction:g} ({estimate.fraction_flag})'
           if estimate.fraction_flag else '')
  raise errors.UsageError(
      f'{spec.name}: the preload of {estimate.keys:,} keys x about '
      f'{estimate.bytes_per_key:,} B{copies} is about '
      f'{estimate.total_bytes / 2**30:,.0f} GiB, but the servers hold '
      f'{budget / 2**30:,.0f} GiB ({count} x {price.machine_type} with '
      f'{price.memory_gib:g} GiB{share}), so the preload would fail in '
      f'prepare; lower {estimate.key_flag} to at most {fits:,} or use '
      'more or larger server VMs.')


def _GcpCredentials() -> Optional[str]:
  path = os.environ.get('GOOGLE_APPLICATION_CREDENTIALS') or os.path.join(
      os.path.expanduser('~'), '.config', 'gcloud',
      'application_default_credentials.json')
  return path if os.path.isfile(path) else None


def _AwsCredentials(profile: Optional[str]) -> Optional[str]:
  """Where boto3 would find credentials, judged without any network call
  (an instance role or SSO may still supply them on the real run)."""
  if os.environ.get('AWS_ACCESS_KEY_ID'):
    return 'AWS_ACCESS_KEY_ID'
  if os.environ.get('AWS_WEB_IDENTITY_TOKEN_FILE'):
    return 'AWS_WEB_IDENTITY_TOKEN_FILE'
  home = os.path.expanduser('~')
  for path in (os.environ.get('AWS_SHARED_CREDENTIALS_FILE') or
               os.path.join(home, '.aws', 'credentials'),
               os.environ.get('AWS_CONFIG_FILE') or
               os.path.join(home, '.aws', 'config')):
    if os.path.isfile(path):
      return path + (f' (profile {profile})' if profile else '')
  return None


def RealRunNeeds(spec, flag_values) -> List[str]:
  """What a real run on spec.cloud needs that this dry run was not given;
  an empty list when nothing is missing."""
  needs = []
  instance_credentials = getattr(flag_values, 'use_instance_credentials',
                                 False)
  # Each cloud's own flags and credentials (branches on its name: a dry
  # run names them without importing that cloud's SDK).
  if spec.cloud == 'GCP':
    if not getattr(flag_values, 'project', None):
      needs.append('--project=<GCP project id>')
    if not getattr(flag_values, 'gcp_ssh_source_range', None):
      needs.append('--gcp_ssh_source_range=<your address>/32 (SSH is '
                   'opened to it only)')
    # A loopback endpoint (a local fake) is called without credentials.
    if not (_GcpCredentials() or instance_credentials or
            vm_util.IsLoopbackEndpoint(
                getattr(flag_values, 'gcp_compute_endpoint', None))):
      needs.append('Google application-default credentials (none found on '
                   'this machine: set GOOGLE_APPLICATION_CREDENTIALS to a key '
                   'file, log in for application-default credentials, or on '
                   'a GCP VM pass --use_instance_credentials)')
  elif spec.cloud == 'AWS':
    if not getattr(flag_values, 'aws_ssh_source_cidr', None):
      needs.append('--aws_ssh_source_cidr=<your address>/32 (SSH is '
                   'opened to it only)')
    if not (_AwsCredentials(getattr(flag_values, 'aws_profile', None)) or
            instance_credentials):
      needs.append('AWS credentials (none found in the environment or '
                   '~/.aws; on an EC2 instance with a role, pass '
                   '--use_instance_credentials)')
  if spec.can.made_by_run:
    needs += benchmark_contract.Call(spec.module, 'RealRunNeeds', spec)
  return needs


def PlanLines(spec, flag_values) -> List[str]:
  """The dry-run plan's line about `RealRunNeeds` (none when nothing is
  missing)."""
  needs = RealRunNeeds(spec, flag_values)
  return [f'A real run also needs: {"; ".join(needs)}.'] if needs else []


def CheckRealRunNeeds(specs, flag_values) -> None:
  """Refuses a real run that lacks any of `RealRunNeeds`, all in one line,
  before the run has a directory and before any network call.

  Raises:
    errors.UsageError: naming everything missing at once.
  """
  needs = []
  for spec in specs:
    needs += [n for n in RealRunNeeds(spec, flag_values) if n not in needs]
  if needs:
    cloud = specs[0].cloud
    raise errors.UsageError(
        f'--cloud={cloud} needs {"; ".join(needs)}; nothing was created '
        '(--dry_run shows the plan without them).')
