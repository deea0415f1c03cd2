"""Names and tags for everything a run creates in AWS.

Every object is named pkb-<run_uri>[-<vm name>] (the `Name` tag, and the
real name where EC2 has one: security group, key pair, placement group), and
carries tags an external sweeper can filter on, as GCP's labels: owner,
run_uri, benchmark and timeout (the UTC time after which the run is overdue,
e.g. 20261121t1511z, or 'none'). Tags are set in the call that creates the
object (TagSpecifications), so nothing ever exists untagged, and teardown can
find an object by its tags even when the run died before recording its id.
"""

import re
from typing import Dict, List, Optional

from perfkitbenchmarker import errors

# EC2 tag values may be up to 256 characters; names are kept short anyway.
MAX_NAME_LENGTH = 63
MAX_TAG_VALUE_LENGTH = 256
_NAME_BAD = re.compile(r'[^A-Za-z0-9-]+')
# us-east-1a, us-gov-west-1b, and Local Zones such as us-west-2-lax-1a.
_ZONE = re.compile(r'^([a-z]{2}(?:-[a-z]+)+-\d+)(-[a-z]+-\d+)?[a-z]$')

TAG_RUN_URI = 'run_uri'


def ResourceName(run_uri: str, *parts: str) -> str:
  """pkb-<run_uri>[-part...], legal as any EC2 name."""
  name = _NAME_BAD.sub('-', '-'.join(('pkb', run_uri) + parts))
  return re.sub(r'-{2,}', '-', name)[:MAX_NAME_LENGTH].rstrip('-')


def RunTags(owner: str, run_uri: str, benchmark: str,
            expiry: str) -> Dict[str, str]:
  """The run's tags, each value cut to EC2's limit: EC2 refuses a longer
  one (a long --owner) in the first create, after the run's key is made."""
  return {key: value[:MAX_TAG_VALUE_LENGTH] for key, value in {
      'owner': owner or 'unknown',
      TAG_RUN_URI: run_uri,
      'benchmark': benchmark or 'unknown',
      'timeout': expiry,
  }.items()}


def TagSpecifications(tags: Dict[str, str], name: str,
                      *resource_types: str) -> List[Dict]:
  """The TagSpecifications argument that tags objects as they are created."""
  tag_list = [{'Key': 'Name', 'Value': name}] + [
      {'Key': k, 'Value': v} for k, v in sorted(tags.items())]
  return [{'ResourceType': t, 'Tags': tag_list} for t in resource_types]


def RunFilters(run_uri: str, name: Optional[str] = None) -> List[Dict]:
  """Describe* filters matching the run's objects (with this Name tag)."""
  filters = [{'Name': f'tag:{TAG_RUN_URI}', 'Values': [run_uri]}]
  if name is not None:
    filters.append({'Name': 'tag:Name', 'Values': [name]})
  return filters


def RegionOf(zone: str) -> str:
  """us-east-1a -> us-east-1; refuses anything that is not a zone."""
  match = _ZONE.match(zone or '')
  if not match:
    raise errors.UsageError(
        f'"{zone}" is not an AWS availability zone; give one such as '
        'us-east-1a with --zone or vm_spec.AWS.zone.')
  return match.group(1)
