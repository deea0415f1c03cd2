"""cloud_names: zones and machine types a cloud has (issue 26 point 2)."""

import pytest

from perfkitbenchmarker import cloud_names
from perfkitbenchmarker import errors


@pytest.mark.parametrize('cloud,zone', [
    ('GCP', 'us-central1-a'), ('GCP', 'us-central1-f'),
    ('GCP', 'europe-west1-d'), ('GCP', 'asia-southeast1-c'),
    ('AWS', 'us-east-1a'), ('AWS', 'us-east-1f'), ('AWS', 'eu-west-1b'),
    ('AWS', 'us-gov-west-1a'), ('Local', 'anything'), ('GCP', None),
])
def test_zones_the_list_has_pass(cloud, zone):
  cloud_names.CheckZone(cloud, zone)


@pytest.mark.parametrize('cloud,zone,words', [
    ('GCP', 'us-central1', 'is a GCP region, not a zone'),
    ('GCP', 'us-central1-z', 'has no zone "z"'),
    ('GCP', 'europe-west1-a', 'europe-west1-b, europe-west1-c'),
    ('GCP', 'us-centrl1-a', 'us-central1'),
    ('GCP', 'us-east-1a', 'not a GCP zone'),
    ('AWS', 'us-east-1', 'is an AWS region, not a zone'),
    ('AWS', 'us-east-1g', 'has no zone "g"'),
    ('AWS', 'us-central1-a', 'not an AWS zone'),
    ('AWS', 'mars-1a', 'not an AWS zone'),
])
def test_zones_the_cloud_lacks_are_refused_with_a_hint(cloud, zone, words):
  with pytest.raises(errors.UsageError, match='--allow_unlisted_zone|zones') as e:
    cloud_names.CheckZone(cloud, zone)
  assert words in str(e.value)
  assert '\n' not in str(e.value)


def test_a_zone_opened_since_the_list_passes_only_when_allowed():
  with pytest.raises(errors.UsageError, match='2026-11-26'):
    cloud_names.CheckZone('GCP', 'us-central1-e')
  cloud_names.CheckZone('GCP', 'us-central1-e', allow_unlisted=True)
  cloud_names.CheckZone('GCP', 'us-central9-a', allow_unlisted=True)
  # Still a zone's shape: a region is not let through by the flag.
  with pytest.raises(errors.UsageError, match='region, not a zone'):
    cloud_names.CheckZone('GCP', 'us-central1', allow_unlisted=True)
  with pytest.raises(errors.UsageError):
    cloud_names.CheckZone('GCP', 'nonsense', allow_unlisted=True)


@pytest.mark.parametrize('cloud,zone', [
    ('AWS', 'us-west-2-lax-1a'), ('AWS', 'us-east-1-bos-1a'),
    ('GCP', 'US-CENTRAL1-A'), ('GCP', 'nonsense'),
])
def test_a_name_not_shaped_as_a_zone_is_not_sent_to_the_flag(cloud, zone):
  # --allow_unlisted_zone would be refused the same: not advised.
  for allow_unlisted in (False, True):
    with pytest.raises(errors.UsageError) as e:
      cloud_names.CheckZone(cloud, zone, allow_unlisted=allow_unlisted)
    assert f'--zone={zone} is not a' in str(e.value)
    assert 'allow_unlisted_zone' not in str(e.value)


@pytest.mark.parametrize('cloud,machine_type', [
    ('GCP', 't2d-standard-16'), ('GCP', 'e2-micro'),
    ('GCP', 'custom-4-8192'), ('GCP', 'c3-highcpu-4-lssd'),
    ('AWS', 'c6gn.16xlarge'), ('AWS', 'i4i.metal'), ('AWS', 'u-6tb1.metal'),
])
def test_machine_types_of_the_cloud_pass(cloud, machine_type):
  cloud_names.CheckMachineType(cloud, machine_type)


@pytest.mark.parametrize('cloud,machine_type,words', [
    ('GCP', 'c6gn.4xlarge', 'is an AWS type'),
    ('AWS', 't2d-standard-16', 'is a GCP type'),
    ('GCP', 'bogus', 'not a GCP machine type'),
    ('AWS', 'C6GN.4XLARGE', 'not an AWS machine type'),
])
def test_machine_types_of_another_cloud_are_refused(cloud, machine_type,
                                                    words):
  with pytest.raises(errors.UsageError) as e:
    cloud_names.CheckMachineType(cloud, machine_type)
  assert words in str(e.value)
