"""What every cloud provider shares: the operator, the run's lifetime, OSes.

SSH to a run's VMs is opened only to the operator's own address, which is
never guessed and never the whole internet; every resource carries the run's
expiry so an external sweeper can find strays; an --os_type no cloud offers
is refused in one line that says why. Providers call these instead of
keeping their own copies.
"""

import datetime
import ipaddress
from typing import Iterable, Optional, Sequence, Tuple

from perfkitbenchmarker import errors

# Narrower than this is a deliberate address; wider is almost surely a slip.
MIN_SSH_PREFIX = 16


def OperatorCidrs(values: Sequence[str], flag_name: str,
                  cloud: str) -> Tuple[str, ...]:
  """Validates an SSH source flag; returns normalised IPv4 CIDRs.

  Args:
    values: the flag's values (addresses or CIDRs; a bare address is a /32).
    flag_name: e.g. '--aws_ssh_source_cidr', named in every error.
    cloud: e.g. 'AWS', for the missing-flag message.
  """
  if not values:
    raise errors.UsageError(
        f'--cloud={cloud} needs {flag_name}=<your public IPv4 address>/32 '
        '(e.g. 203.0.113.7/32): SSH to the VMs is opened to it only; it is '
        'never guessed, and never 0.0.0.0/0.')
  cidrs = []
  for value in values:
    try:
      network = ipaddress.ip_network(value.strip(), strict=False)
    except ValueError:
      raise errors.UsageError(
          f'{flag_name}: "{value}" is not an IPv4 address or CIDR '
          '(e.g. 203.0.113.7/32).') from None
    if network.version != 4:
      raise errors.UsageError(
          f'{flag_name}: "{value}" is IPv6; the run\'s VMs are reached over '
          'IPv4, so give your public IPv4 address.')
    if network.prefixlen < MIN_SSH_PREFIX:
      raise errors.UsageError(
          f'{flag_name}: "{value}" would open SSH to '
          f'{network.num_addresses} addresses; give your own address as a '
          f'/32 (at most a /{MIN_SSH_PREFIX}).')
    cidrs.append(str(network))
  return tuple(dict.fromkeys(cidrs))


def ExpiryStamp(now_s: float, timeout_minutes: Optional[float]) -> str:
  """The run's deadline as a label/tag value, e.g. 20261121t1511z.

  Lowercase letters and digits only, so it is a valid GCP label value and
  AWS tag value; 'none' when the run has no timeout.
  """
  if not timeout_minutes:
    return 'none'
  expiry = datetime.datetime.fromtimestamp(
      now_s + timeout_minutes * 60, tz=datetime.timezone.utc)
  return expiry.strftime('%Y%m%dt%H%Mz')


# Known os_types past their end of life, with when it was: refused by every
# cloud with the reason.
RETIRED_OS_TYPES = {
    'centos7': 'CentOS 7 reached end of life in June 2024',
    'centos8': 'CentOS 8 reached end of life in December 2021',
    'centos_stream8': 'CentOS Stream 8 reached end of life in May 2024',
    'rhel7': 'RHEL 7 maintenance ended in June 2024',
    'debian9': 'Debian 9 reached end of life in June 2022',
    'debian10': 'Debian 10 reached end of life in June 2024',
    'debian11': 'Debian 11 reached end of life in August 2026',
    'ubuntu1604': 'Ubuntu 16.04 standard support ended in April 2021',
    'ubuntu1804': 'Ubuntu 18.04 standard support ended in May 2023',
    'ubuntu2004': 'Ubuntu 20.04 standard support ended in May 2025',
    'amazonlinux2': 'Amazon Linux 2 support ends in June 2026',
}


def OsTypeRefused(os_type: str, cloud: str,
                  offered: Iterable[str]) -> errors.UsageError:
  """The one-line error for an --os_type `cloud` does not offer."""
  reason = RETIRED_OS_TYPES.get(os_type)
  why = f' ({reason})' if reason else ''
  return errors.UsageError(
      f'--os_type={os_type} is not available on {cloud}{why}; use one of: '
      f'{", ".join(sorted(offered))}.')
