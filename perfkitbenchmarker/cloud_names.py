"""Names of a cloud's zones and machine types, checked before anything.

`--zone=us-central1` (a region), `us-central1-z` (no such zone) or AWS
`us-east-1` used to pass a dry run and fail minutes into a real one. The
list is data (configs/zones.yaml, with its source and date), read without
any network call: GCP zones are exact (a region and its zone letters), AWS
zones are a listed region and a letter a-f (availability-zone letters are
mapped per account, so AWS itself refuses one the account lacks).

A zone opened after the list's date is refused with that date; the run's
`--allow_unlisted_zone` lets it through (still checked for the cloud's
zone syntax).

Machine types are told apart by their shape: AWS names are family.size
(c6gn.4xlarge), GCP names family-kind-size (t2d-standard-16), so a type of
the other cloud is refused as such instead of as merely unpriced (where
--machine_price would then have let it through to a failed insert).
"""

import difflib
import functools
import os
import re
from typing import Dict, FrozenSet, Optional, Tuple

import yaml

from perfkitbenchmarker import errors
from perfkitbenchmarker import paths

FILE_NAME = 'zones.yaml'
# How each cloud that has regions names its zones: a region (a regex),
# what joins a zone's letter to it, an example zone (pricing's too).
ZONE_SHAPES = {'GCP': (r'[a-z]+-[a-z]+\d+', '-', 'us-central1-a'),
               'AWS': (r'[a-z]+-(?:gov-)?[a-z]+-\d+', '', 'us-east-1a')}


@functools.lru_cache(maxsize=None)
def _Load(path: str) -> Dict[str, Tuple[Dict[str, FrozenSet[str]], str]]:
  """cloud -> ({region: zone letters}, date)."""
  with open(path, encoding='utf-8') as f:
    data = yaml.safe_load(f)
  clouds = {}
  for cloud in ZONE_SHAPES:
    entry = data[cloud]
    regions = entry['regions']
    if isinstance(regions, list):  # AWS: one set of letters for every region
      letters = frozenset(entry['zone_letters'])
      regions = {r: letters for r in regions}
    else:
      regions = {r: frozenset(letters) for r, letters in regions.items()}
    clouds[cloud] = (regions, str(entry['date']))
  return clouds


def _A(cloud: str) -> str:
  return ('an ' if cloud[0] in 'AEIOU' else 'a ') + cloud


def CheckZone(cloud: str, zone: Optional[str], allow_unlisted: bool = False,
          path: Optional[str] = None) -> None:
  """Refuses, in one line, a zone `cloud` does not have.

  Raises:
    errors.UsageError: a region given for a zone, an unknown region, or a
      zone letter the region does not have (unless `allow_unlisted`).
  """
  if not zone or cloud not in ZONE_SHAPES:
    return
  regions, date = _Load(
      path or os.path.join(paths.PresetsDir(), FILE_NAME))[cloud]
  region_shape, joiner, example = ZONE_SHAPES[cloud]
  if zone in regions:
    letters = ', '.join(f'{zone}{joiner}{l}'
                        for l in sorted(regions[zone])[:3])
    raise errors.UsageError(
        f'--zone={zone} is {_A(cloud)} region, not a zone; name one of its '
        f'zones, e.g. {letters}.')
  match = re.fullmatch(f'({region_shape}){joiner}([a-z])', zone)
  split = match.groups() if match else None  # (region, letter)
  if split and split[0] in regions and split[1] in regions[split[0]]:
    return
  if allow_unlisted and split:
    return
  if split and split[0] in regions:
    region = split[0]
    known = ', '.join(f'{region}{joiner}{l}' for l in sorted(regions[region]))
    raise errors.UsageError(
        f'--zone={zone}: {cloud} region {region} has no zone '
        f'"{split[1]}" (zones listed on {date}: {known}); a zone opened '
        'since then needs --allow_unlisted_zone.')
  region = split[0] if split else zone
  near = difflib.get_close_matches(region, list(regions), n=4, cutoff=0.75)
  hint = (f' (a region like {" or ".join(near)}?)' if near else '')
  # --allow_unlisted_zone lets through only what is shaped as a zone.
  advice = ('; a zone opened since then needs --allow_unlisted_zone' if split
            else '')
  raise errors.UsageError(
      f'--zone={zone} is not {_A(cloud)} zone{hint} in the list dated '
      f'{date}; zones look like {example}{advice}.')


_MACHINE_TYPE_SHAPES = {
    'AWS': (re.compile(r'[a-z][a-z0-9-]*\.[a-z0-9-]+'), 'c6gn.4xlarge'),
    'GCP': (re.compile(r'[a-z][a-z0-9]*-[a-z0-9-]+'), 't2d-standard-16'),
}


def CheckMachineType(cloud: str, machine_type: Optional[str]) -> None:
  """Refuses a machine type named the way another cloud names them.

  Raises:
    errors.UsageError: e.g. c6gn.4xlarge with --cloud=GCP.
  """
  if not machine_type or cloud not in _MACHINE_TYPE_SHAPES:
    return
  shape, example = _MACHINE_TYPE_SHAPES[cloud]
  if shape.fullmatch(machine_type):
    return
  others = [c for c, (other, _) in _MACHINE_TYPE_SHAPES.items()
            if c != cloud and other.fullmatch(machine_type)]
  if others:
    raise errors.UsageError(
        f'machine type {machine_type} is {_A(others[0])} type, but the run is '
        f'on --cloud={cloud}, whose types look like {example}; use --cloud='
        f'{others[0]} or a {cloud} type.')
  raise errors.UsageError(
      f'machine type "{machine_type}" is not {_A(cloud)} machine type name '
      f'(e.g. {example}).')
