"""The price catalog: lookups, sources, regions and refusals."""

import pytest

from perfkitbenchmarker import errors
from perfkitbenchmarker import pricing


@pytest.fixture(scope='module')
def catalog():
  return pricing.PriceCatalog.Load()


def test_gcp_lookup_by_zone(catalog):
  price = catalog.Lookup('GCP', 'us-central1-a', 't2d-standard-16')
  assert price.usd_per_hour == pytest.approx(0.675936)
  assert price.vcpus == 16
  assert price.source_date == '2026-07-30'
  assert 'Cloud Billing Catalog API' in price.source


def test_aws_lookup_by_zone(catalog):
  price = catalog.Lookup('AWS', 'us-east-1a', 'c6gn.16xlarge')
  assert price.usd_per_hour == pytest.approx(2.7648)
  assert price.source_date == '2026-01-19'


def test_every_reference_row_is_in_catalog(catalog):
  # A few rows across the table, incl. the last of each cloud.
  assert catalog.Lookup('GCP', None, 'c2-standard-30').usd_per_hour == (
      pytest.approx(1.56606))
  assert catalog.Lookup('AWS', None, 'c5.9xlarge').usd_per_hour == (
      pytest.approx(1.53))
  assert catalog.Lookup('GCP', 'us-central1', 'e2-standard-2').usd_per_hour == (
      pytest.approx(0.06701142))


def test_unknown_machine_type_names_alternatives(catalog):
  with pytest.raises(errors.UsageError) as e:
    catalog.Lookup('GCP', 'us-central1-a', 't2d-standard-17')
  assert 't2d-standard-17' in str(e.value)
  assert 't2d-standard-16' in str(e.value)


def test_unpriced_region(catalog):
  with pytest.raises(errors.UsageError, match='no GCP prices for region '
                     '"europe-west1"'):
    catalog.Lookup('GCP', 'europe-west1-b', 't2d-standard-16')


@pytest.mark.parametrize('cloud,zone,region', [
    ('GCP', 'us-central1-a', 'us-central1'),
    ('GCP', 'us-central1', 'us-central1'),
    ('AWS', 'us-east-1a', 'us-east-1'),
    ('AWS', 'us-east-1', 'us-east-1'),
    ('AWS', None, 'us-east-1'),
])
def test_region_from_zone(cloud, zone, region):
  assert pricing.RegionFromZone(cloud, zone) == region


def test_bad_zone():
  with pytest.raises(errors.UsageError, match='not a GCP zone'):
    pricing.RegionFromZone('GCP', 'mars')


def test_priced_as():
  assert pricing.ParsePricedAs('GCP:n2d-standard-2') == (
      'GCP', None, 'n2d-standard-2')
  assert pricing.ParsePricedAs('AWS:c6gn.xlarge@us-east-1') == (
      'AWS', 'us-east-1', 'c6gn.xlarge')
  with pytest.raises(errors.UsageError, match='--local_priced_as'):
    pricing.ParsePricedAs('n2d-standard-2')


def test_published_figure_basis():
  """3.9M ops/s on 3 x t2d-standard-16: per-VM vs all-VM price basis."""
  from perfkitbenchmarker import price_performance
  price = pricing.PriceCatalog.Load().Lookup('GCP', 'us-central1-a',
                                             't2d-standard-16')
  server = price_performance.GroupCost('servers', 3, price)
  s = price_performance.PricePerformanceSample(3.9e6, server, [])
  assert s.value == pytest.approx(1.923e6, rel=1e-3)
  assert s.metadata['price_performance_per_server_vm'] == pytest.approx(
      5.77e6, rel=1e-3)
  assert s.metadata['price_basis'] == 'all server VMs'
