"""Names and labels for everything a run creates in GCP.

Every name starts with pkb-<run_uri>, so the objects of one run are found by
prefix (firewall rules, networks and placement policies take no labels), and
instances and disks carry labels an external sweeper can filter on: owner,
run_uri, benchmark and timeout (the UTC time after which the run is overdue).
GCP names are lowercase letters, digits and hyphens, start with a letter and
are at most 63 characters; label values are lowercase letters, digits,
underscores and hyphens, at most 63 characters.
"""

import re
from typing import Dict, Optional

MAX_LENGTH = 63
_NAME_BAD = re.compile(r'[^a-z0-9-]+')
_LABEL_BAD = re.compile(r'[^a-z0-9_-]+')


def ResourceName(run_uri: str, *parts: str) -> str:
  """pkb-<run_uri>[-part...], made a legal Compute resource name."""
  name = _NAME_BAD.sub('-', '-'.join(('pkb', run_uri) + parts).lower())
  return re.sub(r'-{2,}', '-', name)[:MAX_LENGTH].rstrip('-')


def NetworkTag(run_uri: str) -> str:
  """The network tag on the run's instances; firewall rules target it."""
  return ResourceName(run_uri)


def LabelValue(text: Optional[str]) -> str:
  return _LABEL_BAD.sub('-', (text or '').lower())[:MAX_LENGTH]


def RunLabels(owner: str, run_uri: str, benchmark: str,
              expiry: str) -> Dict[str, str]:
  return {
      'owner': LabelValue(owner),
      'run_uri': LabelValue(run_uri),
      'benchmark': LabelValue(benchmark),
      'timeout': LabelValue(expiry),
  }


def RegionOf(zone: str) -> str:
  """us-central1-a -> us-central1."""
  return zone.rsplit('-', 1)[0]
