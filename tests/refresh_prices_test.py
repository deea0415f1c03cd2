"""The price refresh script's parsing of the providers' price API answers.

tests/data/gcp_billing_catalog_skus_t2d_t2a.json is in the Billing Catalog
API's list_skus answer shape (dict form, as json_format gives it), written
here without credentials: its unit rates reproduce the catalog's us-central1
t2d-standard-16 and t2a-standard-4 rows; it also holds SKUs a careless
filter would take (another region, sole tenancy, custom, N2D, network).
"""

import json
import os
import subprocess

import pytest

import e2e_support
import script_modules
from perfkitbenchmarker import errors
from perfkitbenchmarker import pricing

_SCRIPT = os.path.join(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))), 'scripts', 'refresh_prices.py')
refresh = script_modules.Load(_SCRIPT, 'refresh_prices')


def test_aws_price_from_price_list_item():
  item = {'product': {'attributes': {'instanceType': 'c6gn.16xlarge'}},
          'terms': {'OnDemand': {'X.JRTCKXETXF': {'priceDimensions': {
              'X.JRTCKXETXF.6YS6EN2CT7': {
                  'unit': 'Hrs', 'pricePerUnit': {'USD': '2.7648000000'}}}}}}}
  assert refresh.AwsHourlyPrice(json.dumps(item)) == pytest.approx(2.7648)


def test_aws_filters_pin_the_reference_terms():
  filters = {f['Field']: f['Value']
             for f in refresh.AwsFilters('i4i.4xlarge', 'us-east-1')}
  assert filters == {'operatingSystem': 'Linux', 'tenancy': 'Shared',
                     'preInstalledSw': 'NA', 'capacitystatus': 'Used',
                     'marketoption': 'OnDemand', 'instanceType': 'i4i.4xlarge',
                     'regionCode': 'us-east-1'}


def test_aws_metal_types_ask_for_the_bare_metal_entry():
  filters = {f['Field']: f['Value']
             for f in refresh.AwsFilters('c7g.metal', 'us-east-1')}
  assert filters['tenancy'] == 'Dedicated'
  assert filters['productFamily'] == 'Compute Instance (bare metal)'
  assert 'productFamily' not in {
      f['Field'] for f in refresh.AwsFilters('c7g.16xlarge', 'us-east-1')}


def _Sku(description, group, units, nanos, region='us-central1',
         usage='OnDemand'):
  return {'description': description,
          'category': {'resourceFamily': 'Compute', 'resourceGroup': group,
                       'usageType': usage},
          'serviceRegions': [region],
          'pricingInfo': [{'pricingExpression': {'tieredRates': [
              {'unitPrice': {'units': str(units), 'nanos': nanos}}]}}]}


def test_gcp_machine_price_is_cores_plus_ram():
  skus = [
      _Sku('N2D AMD Instance Core running in Americas', 'CPU', 0, 27502000),
      _Sku('N2D AMD Instance Ram running in Americas', 'RAM', 0, 3686000),
      _Sku('N2D AMD Instance Core running in Americas', 'CPU', 0, 5000000,
           usage='Preemptible'),
      _Sku('N2D AMD Instance Core running in Europe', 'CPU', 0, 99000000,
           region='europe-west1'),
  ]
  core, ram = refresh.GcpRates(skus, 'n2d', 'us-central1')
  # The reference: n2d-standard-2 (2 vCPU, 8 GB) is $0.084492/hr.
  assert 2 * core + 8 * ram == pytest.approx(0.084492, rel=1e-4)


def test_gcp_missing_family_is_an_error():
  with pytest.raises(ValueError, match='no on-demand CPU/RAM SKUs for t2d'):
    refresh.GcpRates([], 't2d', 'us-central1')


def test_without_credentials_nothing_changes(tmp_path, monkeypatch):
  monkeypatch.setenv('AWS_ACCESS_KEY_ID', 'x')
  monkeypatch.setenv('AWS_SECRET_ACCESS_KEY', 'x')
  # Point the client at a closed loopback port (never at AWS): the call
  # fails and the catalog is left alone.
  monkeypatch.setenv('AWS_ENDPOINT_URL', 'http://127.0.0.1:9')
  monkeypatch.setenv('AWS_MAX_ATTEMPTS', '1')
  monkeypatch.setenv('AWS_EC2_METADATA_DISABLED', 'true')
  out = tmp_path / 'prices.yaml'
  assert refresh.main(['--aws', '--output', str(out)]) == 1
  assert not out.exists()


def _Skus():
  with open(os.path.join(os.path.dirname(__file__), 'data',
                         'gcp_billing_catalog_skus_t2d_t2a.json')) as f:
    return json.load(f)['skus']


def test_gcp_rows_priced_on_every_basis_match_the_catalog():
  """The SKUs reproduce the catalog's t2d-standard-16 row on all four
  bases, and T2A gets no commitment prices (GCP sells none for it)."""
  rows = [{'cloud': 'GCP', 'region': 'us-central1',
           'machine_type': 't2d-standard-16', 'vcpus': 16,
           'memory_gib': 64, 'usd_per_hour': 1.0, 'source': 'old'},
          {'cloud': 'GCP', 'region': 'us-central1',
           'machine_type': 't2a-standard-4', 'vcpus': 4, 'memory_gib': 16,
           'usd_per_hour_cud_1y': 9.0, 'source': 'old'},
          {'cloud': 'AWS', 'region': 'us-east-1', 'machine_type': 'c5.large',
           'vcpus': 2, 'memory_gib': 4, 'usd_per_hour': 0.085,
           'source': 'aws'}]
  sources = refresh.RefreshGcpRows(rows, _Skus(), '2026-11-23')
  assert list(sources) == ['gcp_billing_catalog_api_2026-11-23']
  t2d, t2a, aws = rows
  catalog = pricing.PriceCatalog.Load()
  want = catalog.Rows()
  want = next(r for r in want if (r.cloud, r.region, r.machine_type) == (
      'GCP', 'us-central1', 't2d-standard-16'))
  for basis, usd in want.prices:
    assert t2d[pricing.BASES[basis]] == pytest.approx(usd), basis
  assert t2a['usd_per_hour'] == pytest.approx(0.154)
  assert t2a['usd_per_hour_spot'] == pytest.approx(0.065568)
  assert 'usd_per_hour_cud_1y' not in t2a  # The stale figure is dropped.
  assert t2d['date'] == '2026-11-23'
  assert aws == {'cloud': 'AWS', 'region': 'us-east-1',
                 'machine_type': 'c5.large', 'vcpus': 2, 'memory_gib': 4,
                 'usd_per_hour': 0.085, 'source': 'aws'}


def test_import_csv_keeps_source_and_date_per_row(tmp_path):
  table = tmp_path / 'aws.csv'
  table.write_text(
      'region,machine_type,vcpus,memory_gb,usd_per_hour,source,source_date,'
      'usd_per_hour_spot,usd_per_hour_cud1y,usd_per_hour_cud3y\n'
      'us-west-2,c7g.4xlarge,16,32,0.58,github:aws/karpenter-provider-aws@'
      '6fc13b5236fd:x.go,2026-07-20,,,\n')
  data = {'format_version': 2, 'sources': {}, 'prices': []}
  assert refresh.ImportCsv(data, str(table), 'AWS', 'test rows') == 1
  out = tmp_path / 'prices.yaml'
  refresh.Write(data, str(out))
  price = pricing.PriceCatalog.Load(str(out)).Lookup('AWS', 'us-west-2b',
                                                      'c7g.4xlarge')
  assert (price.usd_per_hour, price.source_date, price.source) == (
      0.58, '2026-07-20', 'test rows')
  with pytest.raises(errors.UsageError, match='no spot price'):
    pricing.PriceCatalog.Load(str(out)).ForRun('spot').Lookup(
        'AWS', 'us-west-2b', 'c7g.4xlarge')


@pytest.mark.parametrize('price', ['0', 'nan', '1e400', '-0.5'])
def test_a_bad_imported_price_writes_nothing(tmp_path, price):
  """Issue 24 item 14: what refresh_prices.py writes passes the catalog's
  one price validation first; a bad price is one line, exit 2, and the
  catalog is left as it was."""
  table = tmp_path / 'aws.csv'
  table.write_text(
      'region,machine_type,vcpus,memory_gb,usd_per_hour,source,source_date\n'
      f'us-west-2,c7g.4xlarge,16,32,{price},github:aws/karpenter-provider-aws@'
      '6fc13b5236fd:x.go,2026-07-20\n')
  catalog = tmp_path / 'prices.yaml'
  with open(pricing.DEFAULT_CATALOG_PATH) as f:
    catalog.write_text(f.read())
  before = catalog.read_bytes()
  assert refresh.main(['--import_csv', str(table), '--cloud', 'AWS',
                       '--source_description', 'reviewed', '--input',
                       str(catalog), '--output', str(catalog)]) == 2
  assert catalog.read_bytes() == before
  assert sorted(os.listdir(tmp_path)) == ['aws.csv', 'prices.yaml']


@pytest.mark.parametrize('where', ['no_directory', 'a_directory'])
def test_an_output_that_cannot_be_written_is_one_line(tmp_path, capsys,
                                                      where):
  """--output=/tmp/hd/nodir/out.yaml ended in a FileNotFoundError
  traceback; --output=/tmp/hd (a directory) in an IsADirectoryError one,
  leaving /tmp/hd.<pid>.tmp, a whole catalog, behind."""
  table = tmp_path / 'aws.csv'
  table.write_text(
      'region,machine_type,vcpus,memory_gb,usd_per_hour,source,source_date\n'
      'us-west-2,c7g.4xlarge,16,32,0.58,github:aws/karpenter-provider-aws@'
      '6fc13b5236fd:x.go,2026-07-20\n')
  out = tmp_path / 'out'
  out.mkdir()
  output = out / 'nodir' / 'prices.yaml' if where == 'no_directory' else out
  assert refresh.main(['--import_csv', str(table), '--cloud', 'AWS',
                       '--source_description', 'reviewed', '--output',
                       str(output)]) == 2
  err = capsys.readouterr().err
  assert err.startswith(f'refresh_prices: not written: cannot write {output} (')
  assert err.count('\n') == 1
  assert sorted(os.listdir(tmp_path)) == ['aws.csv', 'out']
  assert os.listdir(out) == []


def test_an_imported_line_short_of_cells_is_one_line(tmp_path, capsys):
  """A CSV line with fewer cells than its header (a cut paste) ended in
  `TypeError: expected string or bytes-like object, got 'NoneType'`, a
  traceback."""
  table = tmp_path / 'gcp.csv'
  table.write_text(
      'region,machine_type,vcpus,memory_gb,usd_per_hour,source,source_date\n'
      'us-central1,n2d-standard-2\n')
  out = tmp_path / 'prices.yaml'
  assert refresh.main(['--import_csv', str(table), '--cloud', 'GCP',
                       '--source_description', 'reviewed', '--output',
                       str(out)]) == 2
  assert capsys.readouterr().err == (
      f'refresh_prices: cannot import {table} (ValueError: line 2 has fewer '
      'cells than the header); nothing was changed.\n')
  assert not out.exists()


def test_an_imported_cell_past_the_csv_field_limit_is_one_line(tmp_path,
                                                               capsys):
  """A cell of 200,000 characters ended in `_csv.Error: field larger than
  field limit (131072)`, a traceback."""
  table = tmp_path / 'gcp.csv'
  table.write_text(
      'region,machine_type,vcpus,memory_gb,usd_per_hour,source,source_date\n'
      f'"{"a" * 200000}",x,1,1,1,s,2026-01-01\n')
  out = tmp_path / 'prices.yaml'
  assert refresh.main(['--import_csv', str(table), '--cloud', 'GCP',
                       '--source_description', 'reviewed', '--output',
                       str(out)]) == 2
  assert capsys.readouterr().err == (
      f'refresh_prices: cannot import {table} (Error: field larger than '
      'field limit (131072)); nothing was changed.\n')
  assert not out.exists()


@pytest.mark.parametrize('kind', ['fifo', 'device'])
def test_an_import_that_is_not_a_regular_file_is_one_line(tmp_path, capsys,
                                                          kind):
  """--import_csv read with a plain open(): a FIFO with no writer hung it,
  /dev/zero read without end."""
  if kind == 'fifo':
    table = tmp_path / 'aws.csv'
    os.mkfifo(table)
  else:
    table = '/dev/zero'
  out = tmp_path / 'prices.yaml'
  assert refresh.main(['--import_csv', str(table), '--cloud', 'AWS',
                       '--source_description', 'reviewed', '--output',
                       str(out)]) == 2
  err = capsys.readouterr().err
  assert err.startswith(f'refresh_prices: cannot import {table} (NotRegular: '
                        'not a regular file') and err.count('\n') == 1, err
  assert not out.exists()


def test_an_import_saved_with_a_byte_order_mark_is_read(tmp_path):
  # Spreadsheets save CSV with one; it made the first column unknown.
  table = tmp_path / 'aws.csv'
  table.write_bytes(
      b'\xef\xbb\xbfregion,machine_type,vcpus,memory_gb,usd_per_hour,source,'
      b'source_date\nus-west-2,c7g.4xlarge,16,32,0.58,github:aws/karpenter-'
      b'provider-aws@6fc13b5236fd:x.go,2026-07-20\n')
  out = tmp_path / 'prices.yaml'
  assert refresh.main(['--import_csv', str(table), '--cloud', 'AWS',
                       '--source_description', 'reviewed', '--output',
                       str(out)]) == 0
  assert pricing.PriceCatalog.Load(str(out)).ForRun('on_demand').Lookup(
      'AWS', 'us-west-2b', 'c7g.4xlarge').usd_per_hour == 0.58


@pytest.mark.parametrize('text', ['[]\n', 'sources: {}\n', 'x\n',
                                  'sources: {}\nprices: [1]\n'])
def test_an_input_that_is_not_a_catalog_is_one_line(tmp_path, capsys, text):
  """--input=list.yaml holding `[]` ended in `TypeError: list indices must
  be integers or slices, not str`, a traceback."""
  table = tmp_path / 'aws.csv'
  table.write_text(
      'region,machine_type,vcpus,memory_gb,usd_per_hour,source,source_date\n'
      'us-west-2,c7g.4xlarge,16,32,0.58,github:aws/karpenter-provider-aws@'
      '6fc13b5236fd:x.go,2026-07-20\n')
  catalog = tmp_path / 'prices.yaml'
  catalog.write_text(text)
  assert refresh.main(['--import_csv', str(table), '--cloud', 'AWS',
                       '--source_description', 'reviewed', '--input',
                       str(catalog), '--output', str(catalog)]) == 2
  assert capsys.readouterr().err == (
      f'refresh_prices: cannot read {catalog} (not a price catalog: a '
      'mapping with sources: and a list of prices:).\n')
  assert catalog.read_text() == text


@pytest.mark.e2e
@e2e_support.NeedsTools('/usr/bin/python3')
def test_started_by_the_system_python_it_runs_in_the_checkouts_venv():
  """`python3 scripts/refresh_prices.py` (its #! line's python) ended in
  `ModuleNotFoundError: No module named 'tenacity'`, a traceback, as the
  project's modules need the .venv that compare and publish_bigquery
  re-exec themselves in."""
  env = {'PATH': '/usr/bin:/bin', 'HOME': os.environ.get('HOME', '/')}
  done = subprocess.run(['/usr/bin/python3', _SCRIPT, '--help'],
                        capture_output=True, text=True, timeout=120,
                        env=env, check=False)
  assert done.returncode == 0, done.stderr
  assert 'Traceback' not in done.stderr
  assert done.stdout.startswith('usage: refresh_prices.py')


def test_an_import_naming_a_machine_type_twice_writes_nothing(tmp_path,
                                                              capsys):
  """A reviewed CSV naming one machine type twice in one region (two
  sources pasted together) kept the last line's price without a word
  ('Imported 2 AWS rows', 'Wrote ...', exit 0): the catalog refuses a
  machine type twice, and which line is the right price is the
  reviewer's call, not the order of the lines."""
  table = tmp_path / 'aws.csv'
  table.write_text(
      'region,machine_type,vcpus,memory_gb,usd_per_hour,source,source_date\n'
      'us-west-2,c7g.4xlarge,16,32,0.58,github:a/b@6fc13b5:x.go,2026-07-20\n'
      'us-west-2,c7g.4xlarge,16,32,5.80,github:a/b@6fc13b5:x.go,2026-07-20\n')
  out = tmp_path / 'prices.yaml'
  assert refresh.main(['--import_csv', str(table), '--cloud', 'AWS',
                       '--source_description', 'reviewed', '--output',
                       str(out)]) == 2
  assert capsys.readouterr().err == (
      f'refresh_prices: cannot import {table} (ValueError: line 3 names '
      'AWS us-west-2 c7g.4xlarge again (line 2 did); give each machine '
      'type once per region); nothing was changed.\n')
  assert not out.exists()


def test_text_the_import_holds_is_shown_as_text(tmp_path, capsys):
  """A machine type or date in the CSV holding terminal sequences (a window
  title, a clear screen) reached the terminal as written in the catalog
  validation's refusal; it is shown as text, on one line."""
  table = tmp_path / 'gcp.csv'
  table.write_text(
      'region,machine_type,vcpus,memory_gb,usd_per_hour,source,source_date\n'
      'us-central1,n2d\x1b]0;PWNED\x07-x,2,8,0.0845,github:a/b@1234567:x,'
      '2026-01-01\n')
  out = tmp_path / 'prices.yaml'
  assert refresh.main(['--import_csv', str(table), '--cloud', 'GCP',
                       '--source_description', 'reviewed', '--output',
                       str(out)]) == 2
  err = capsys.readouterr().err
  assert err.startswith('refresh_prices: not written: the price catalog ')
  assert '\x1b' not in err and '\x07' not in err and err.count('\n') == 1
  assert '(GCP us-central1 n2d\\x1b]0;PWNED\\x07-x)' in err
  assert not out.exists()
