"""The price catalog: lookups, sources, regions, bases and refusals."""

import re

import pytest
import yaml

import pkb_forkserver
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
  assert price.source_date == '2026-07-20'


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


def test_every_catalog_row_has_source_and_date():
  with open(pricing.DEFAULT_CATALOG_PATH) as f:
    data = yaml.safe_load(f)
  assert len(data['prices']) >= 1100
  for row in data['prices']:
    assert row['source'] in data['sources'], row
    assert re.fullmatch(r'\d{4}-\d{2}-\d{2}', row['date']), row
    assert data['sources'][row['source']]['reference'].startswith('github:')


def test_catalog_covers_the_compared_families_and_regions(catalog):
  rows = catalog.Rows()
  gcp = {(r.region, '-'.join(r.machine_type.split('-')[:2])) for r in rows
         if r.cloud == 'GCP'}
  assert {region for region, _ in gcp} == {
      'us-central1', 'us-east1', 'us-east4', 'us-west1', 'europe-west1',
      'europe-west4', 'asia-southeast1'}
  assert len({family for _, family in gcp}) == 15
  aws = {r.machine_type.split('.')[0] for r in rows if r.cloud == 'AWS'}
  assert {'c6gn', 'c7g', 'c7gn', 'c8g', 'm7i', 'i4i', 'c5'} <= aws
  assert len(aws) == 25


def test_issue_machines_have_dated_prices(catalog):
  c7g = catalog.Lookup('AWS', 'us-east-1a', 'c7g.4xlarge')
  assert (c7g.usd_per_hour, c7g.source_date) == (0.58, '2026-07-20')
  c4 = catalog.Lookup('GCP', 'europe-west4-a', 'c4-standard-16')
  assert (c4.usd_per_hour, c4.source_date) == (0.830214, '2026-07-30')
  assert c4.basis == 'on_demand'


@pytest.mark.parametrize('basis,usd', [('on_demand', 0.830214),
                                       ('spot', 0.2996),
                                       ('cud_1y', 0.523047),
                                       ('cud_3y', 0.3735984)])
def test_price_basis_picks_the_column(catalog, basis, usd):
  price = catalog.ForRun(basis).Lookup('GCP', 'europe-west4-a',
                                       'c4-standard-16')
  assert price.usd_per_hour == pytest.approx(usd)
  assert price.basis == basis
  assert price.Metadata('servers_')['servers_pricing_model'] == basis
  assert pricing.BASIS_NAMES[basis] in price.Describe()


def test_basis_the_source_lacks_is_one_line(catalog):
  with pytest.raises(errors.UsageError) as e:
    catalog.ForRun('spot').Lookup('AWS', 'us-east-1a', 'c7g.4xlarge')
  text = str(e.value)
  assert '\n' not in text
  assert 'no spot price for AWS c7g.4xlarge' in text
  assert '--price_basis=on_demand' in text
  assert '--machine_price=c7g.4xlarge=' in text
  with pytest.raises(errors.UsageError, match='1-year commitment'):
    catalog.ForRun('cud_1y').Lookup('GCP', 'us-central1-a', 't2a-standard-4')


def test_unpriced_region_names_nearest_rows_and_the_flag(catalog):
  with pytest.raises(errors.UsageError) as e:
    catalog.Lookup('AWS', 'us-west-2a', 'c7g.4xlarge')
  text = str(e.value)
  assert '\n' not in text
  assert 'No AWS price for c7g.4xlarge in us-west-2' in text
  assert 'c7g.4xlarge in us-east-1 at $0.5800/hr on-demand, 2026-07-20' in text
  assert '--machine_price=c7g.4xlarge=<USD per hour>' in text


def test_unknown_size_names_nearest_sizes(catalog):
  with pytest.raises(errors.UsageError) as e:
    catalog.Lookup('AWS', 'us-east-1a', 'c7g.5xlarge')
  near = str(e.value).split('nearest: ')[1]
  assert near.index('c7g.4xlarge') < near.index('c7g.8xlarge')


def test_user_price_plans_where_the_catalog_has_none(catalog):
  run = catalog.ForRun('on_demand', pricing.ParseMachinePrices(
      ['c7g.4xlarge=0.61']))
  price = run.Lookup('AWS', 'us-west-2a', 'c7g.4xlarge')
  assert (price.usd_per_hour, price.region, price.vcpus) == (
      0.61, 'us-west-2', 16)
  assert price.source == pricing.USER_SOURCE
  assert re.fullmatch(r'\d{4}-\d{2}-\d{2}', price.source_date)
  assert 'given with --machine_price' in price.Describe()


@pytest.mark.parametrize('bad', ['c7g.4xlarge', 'c7g.4xlarge=-1',
                                 'c7g.4xlarge=0', '=0.5', 'x=abc'])
def test_bad_machine_price_is_one_line(bad):
  with pytest.raises(errors.UsageError, match='--machine_price='):
    pricing.ParseMachinePrices([bad])


def test_two_prices_for_one_type_are_refused():
  # The second silently won: a run priced c7g.4xlarge at 2.5 with 1.5 given.
  with pytest.raises(errors.UsageError,
                     match=r'c7g.4xlarge=2.5": c7g.4xlarge was given 1.5 '):
    pricing.ParseMachinePrices(['c7g.4xlarge=1.5', 'c7g.4xlarge=2.5'])
  with pytest.raises(errors.UsageError, match='was given 1.5'):
    pricing.ParseMachinePrices(['c7g.4xlarge=1.5,c7g.4xlarge=2.5'])
  # The same price twice says one thing.
  assert pricing.ParseMachinePrices(['c7g.4xlarge=1.5', 'c7g.4xlarge=1.50',
                                     'x=2']) == {'c7g.4xlarge': 1.5, 'x': 2}


def test_unknown_basis_refused(catalog):
  with pytest.raises(errors.UsageError, match='--price_basis="hourly"'):
    catalog.ForRun('hourly')


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


def test_history_cells_keep_price_bases_apart():
  """compare: a spot run is another cell (same speed, other price); rows
  from before --price_basis existed were on-demand."""
  import pandas as pd  # pylint: disable=g-import-not-at-top
  from perfkitbenchmarker.results_history import cells  # pylint: disable=g-import-not-at-top
  old = pd.Series({'cloud': 'GCP', 'servers_machine_type': 'c4-standard-16'})
  spot = pd.Series({'cloud': 'GCP', 'servers_machine_type': 'c4-standard-16',
                    'pricing_model': 'spot'})
  assert cells.PricingModel(old) == 'on_demand'
  assert cells.MachineType(old) == 'c4-standard-16'
  assert cells.MachineType(spot) == 'c4-standard-16 (spot)'
  local = pd.Series({'cloud': 'Local', 'local_priced_as': 'GCP:t2d-standard-2',
                     'pricing_model': 'cud_3y'})
  assert cells.MachineType(local) == 'local as GCP:t2d-standard-2 (cud_3y)'


def test_fast_row_reader_reads_what_yaml_reads():
  with open(pricing.DEFAULT_CATALOG_PATH) as f:
    text = f.read()
  assert pricing.ParseCatalogText(text) == yaml.safe_load(text)
  # Anything the row reader does not know goes through YAML whole: an
  # unquoted date is a date there, and `yes` a boolean.
  odd = ('format_version: 2\nsources: {}\nprices:\n'
         '  - {cloud: GCP, date: 2026-07-30, spot: yes}\n')
  assert pricing.ParseCatalogText(odd) == yaml.safe_load(odd)
  assert pricing.ParseCatalogText(odd)['prices'][0]['spot'] is True


@pytest.mark.e2e
def test_a_matrix_compares_price_bases_cell_by_cell(tmp_path):
  """--price_basis is a flag like any other: a flag_matrix axis over it
  plans each cell at its own basis."""
  import sys  # pylint: disable=g-import-not-at-top
  import e2e_support as e2e  # pylint: disable=g-import-not-at-top
  config = tmp_path / 'bases.yaml'
  config.write_text(
      'redis_memtier:\n  flag_matrix: basis\n  flag_matrix_defs:\n'
      '    basis: {price_basis: [on_demand, spot, cud_3y]}\n'
      '  flags: {cloud: GCP, zone: europe-west4-a, '
      'machine_type: c4-standard-16, project: p}\n')
  proc = pkb_forkserver.Run(
      [sys.executable, e2e.PKB, f'--benchmark_config_file={config}',
       f'--results_dir={tmp_path / "r"}', '--dry_run'],
      timeout=120, cwd=e2e.REPO, check=False)
  assert proc.returncode == 0, proc.stderr
  for figure in ('$0.8302/hr each (on-demand;', '$0.2996/hr each (spot;',
                 '$0.3736/hr each (3-year commitment;'):
    assert proc.stdout.count(f'servers: 1 x c4-standard-16 in europe-west4-a'
                             f', {figure}') == 1, figure
