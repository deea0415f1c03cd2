"""The price refresh script's parsing of the providers' price API answers."""

import importlib.util
import json
import os

import pytest

_SPEC = importlib.util.spec_from_file_location(
    'refresh_prices', os.path.join(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))), 'scripts', 'refresh_prices.py'))
refresh = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(refresh)


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
