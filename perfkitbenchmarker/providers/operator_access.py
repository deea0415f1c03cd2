"""What every cloud provider shares about the operator and the run's lifetime.

SSH to a run's VMs is opened only to the operator's own address, which is
never guessed and never the whole internet; every resource carries the run's
expiry so an external sweeper can find strays. Providers call these instead
of keeping their own copies.
"""

import datetime
import ipaddress
from typing import Optional, Sequence, Tuple

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
