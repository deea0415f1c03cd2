"""Providers: where VMs come from. One package per cloud under providers/.

Extension seam: a provider is a module (providers/<cloud>/provider.py) with
  ConstructVms(spec) -> {group name: [BaseVirtualMachine, ...]}
      builds (does not create) the run's VMs from spec.GroupSpecs() and
      spec.GroupCounts();
  Provision(spec)   (optional)
      creates shared resources (networks, firewalls, placement groups) and
      then the VMs, each through BaseResource.Create so it is in the run
      record before the call that creates it returns; without it every VM's
      Create() is called in turn;
  CheckPrerequisites(flag_values)   (optional)
      refuses bad provider flags (one-line errors) before anything starts;
  CheckMachines(spec)   (optional; providers whose machines the run does
      not make) refuses, in every plan (--dry_run too), machines the run
      could not be given (one-line errors); returns the plan's warnings
      about them;
  CheckPlan(spec)   (optional) refuses, in every plan (--dry_run too),
      what Provision would refuse before making anything, as far as the
      spec tells it without an API call (one-line errors);
  CheckRunDirs()   (optional; default ssh_vm.CheckRunDirs, a TMPDIR the
      SSH control sockets cannot be private in) refuses a run whose
      directories on this machine exist and are not the user's own
      (run_scope), before anything starts;
It registers each of its resource kinds with resource.RegisterKind at import,
so `--run_stage=teardown --run_uri=X` can delete them from the record alone;
each kind's name starts with its package's name and '_' (`KIND_PREFIXES`),
so that teardown imports only the providers a record names (LoadKindsOf).
Add the cloud's name to `_PROVIDERS` and what its machines can do to
`CAPABILITIES` (the code above asks those, never the cloud's name);
--static_vm_file selects 'Static' (`CloudOf`).
"""

import contextlib
import importlib
from typing import Iterable, Optional

from perfkitbenchmarker import errors
from perfkitbenchmarker import virtual_machine

_PROVIDERS = {
    'Local': 'perfkitbenchmarker.providers.local.provider',
    'GCP': 'perfkitbenchmarker.providers.gcp.provider',
    'AWS': 'perfkitbenchmarker.providers.aws.provider',
    'Static': 'perfkitbenchmarker.providers.static.provider',
}

# What each provider's machines can do; each VM class's CAN is its entry.
CAPABILITIES = {
    'Local': virtual_machine.Capabilities(
        installs_packages=False, is_runner_machine=True,
        priced_as_catalog=True),
    'GCP': virtual_machine.Capabilities(made_by_run=True),
    'AWS': virtual_machine.Capabilities(made_by_run=True),
    'Static': virtual_machine.Capabilities(priced_as_catalog=True),
}

# The start of every resource kind each provider registers: its package's
# name (providers/<cloud>/) and '_'.
KIND_PREFIXES = {cloud: f'{cloud.lower()}_' for cloud in _PROVIDERS}


def CloudOf(flag_values) -> str:
  """The provider a command line runs on: a machines file makes it
  'Static' whatever --cloud says."""
  return 'Static' if flag_values.static_vm_file else flag_values.cloud


def CapabilitiesOf(cloud: str) -> virtual_machine.Capabilities:
  """What `cloud`'s machines can do, before any exists (plans, options)."""
  return CAPABILITIES.get(cloud, virtual_machine.Capabilities())


def CapabilitiesOfRun(flag_values) -> virtual_machine.Capabilities:
  """What the machines of the run a command line asks for can do."""
  return CapabilitiesOf(CloudOf(flag_values))


# Why a zone names nothing for a run on this machine (Local).
ZONE_ON_THIS_MACHINE = 'Local runs on this machine'


def NotOnThisMachine(name: str, value: str, why: str = ZONE_ON_THIS_MACHINE,
                     drop: str = 'the flag') -> str:
  """The refusal of where-to-run text (`name`: --zone, or a config's
  vm_spec zone) for a run on this machine: one wording for a flag and a
  config."""
  return f'{name}={value}: {why}; drop {drop} or choose a --cloud.'


# The module of each cloud whose CheckOsType(os_type) refuses an --os_type
# it has no image for (light: no SDK needed to import it).
_OS_TYPE_CHECKS = {
    'GCP': 'perfkitbenchmarker.providers.gcp.images',
    'AWS': 'perfkitbenchmarker.providers.aws.images',
}


def CheckOsType(cloud: str, os_type: Optional[str]) -> None:
  """The cloud's own --os_type check, so a dry run refuses what a real run
  would (without an SDK the real run's GetProvider says what is missing)."""
  if cloud not in _OS_TYPE_CHECKS:
    return
  try:
    images = importlib.import_module(_OS_TYPE_CHECKS[cloud])
  except ImportError:
    return
  images.CheckOsType(os_type)


def GetProvider(cloud: str):
  module_name = _PROVIDERS.get(cloud)
  try:
    if module_name is None:
      raise ModuleNotFoundError(module_name)
    return importlib.import_module(module_name)
  except ModuleNotFoundError as e:
    if module_name and e.name and not module_name.startswith(e.name):
      raise errors.PrerequisiteError(
          f'--cloud={cloud} needs the Python package "{e.name}"; run '
          './scripts/setup.sh.') from None
    raise errors.UsageError(
        f'--cloud={cloud} is not available yet in this build; run with '
        '--cloud=Local (the default), or use --dry_run to see the plan.'
    ) from None


def LoadKindsOf(kinds: Iterable[str]) -> None:
  """Imports the providers whose resource kinds are among `kinds` (a run
  record's), so those can be torn down; no other (the GCP client alone
  takes 2 s of CPU to import, for a Local run's teardown too)."""
  kinds = [k for k in kinds if isinstance(k, str)]
  for cloud, prefix in KIND_PREFIXES.items():
    if any(k.startswith(prefix) for k in kinds):
      # An error: its SDK is missing, and its kinds are refused as unknown.
      with contextlib.suppress(errors.Error):
        GetProvider(cloud)
