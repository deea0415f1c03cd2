#!/usr/bin/env python3
"""Regenerates configs/prices.yaml from the providers' own price APIs.

  ./scripts/refresh_prices.py --aws --gcp [--output configs/prices.yaml]

AWS: boto3's Price List API (`pricing.get_products`, Linux, Shared tenancy,
no pre-installed software, capacitystatus Used, OnDemand) for every AWS
machine type already in the catalog, region us-east-1.
GCP: the Cloud Billing Catalog (`google-cloud-billing`,
`CloudCatalogClient.list_skus(parent="services/6F81-5844-456A")`): per-vCPU
and per-GiB on-demand SKUs of each family in the region; a machine's price is
vCPUs x core rate + GiB x RAM rate.
Both need credentials; without them this script says so and changes nothing.
Each row keeps its source and the date it was fetched.
"""

import argparse
import datetime
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import yaml  # pylint: disable=g-import-not-at-top

CATALOG = os.path.join(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))), 'configs', 'prices.yaml')
GCE_SERVICE = 'services/6F81-5844-456A'
GCP_FAMILY_PREFIXES = {'t2d': 'T2D AMD Instance', 'n2d': 'N2D AMD Instance',
                       'e2': 'E2 Instance', 'n2': 'N2 Instance',
                       'c2': 'Compute optimized'}
AWS_FILTER_FIELDS = {'operatingSystem': 'Linux', 'tenancy': 'Shared',
                     'preInstalledSw': 'NA', 'capacitystatus': 'Used',
                     'marketoption': 'OnDemand'}


def AwsFilters(instance_type: str, region: str) -> list:
  fields = dict(AWS_FILTER_FIELDS, instanceType=instance_type,
                regionCode=region)
  return [{'Type': 'TERM_MATCH', 'Field': k, 'Value': v}
          for k, v in fields.items()]


def AwsHourlyPrice(price_list_item: str) -> float:
  """USD/hour from one PriceList entry (a JSON string)."""
  item = json.loads(price_list_item)
  prices = [float(dim['pricePerUnit']['USD'])
            for term in item['terms']['OnDemand'].values()
            for dim in term['priceDimensions'].values()
            if dim.get('unit', 'Hrs') == 'Hrs']
  prices = [p for p in prices if p > 0]
  if len(prices) != 1:
    raise ValueError(f'expected one hourly price, got {prices}')
  return prices[0]


def SkuUnitPrice(sku: dict) -> float:
  """units + nanos/1e9 of a Billing Catalog SKU's first tier (dict form)."""
  expr = sku['pricingInfo'][0]['pricingExpression']
  rate = expr['tieredRates'][-1]['unitPrice']
  return float(rate.get('units', 0) or 0) + rate.get('nanos', 0) / 1e9


def GcpRates(skus, family: str, region: str) -> tuple:
  """(per vCPU-hour, per GiB-hour) on-demand rates of a machine family."""
  prefix = GCP_FAMILY_PREFIXES[family]
  core = ram = None
  for sku in skus:
    cat = sku['category']
    if (cat.get('resourceFamily') != 'Compute' or
        cat.get('usageType') != 'OnDemand' or
        region not in sku.get('serviceRegions', []) or
        not sku['description'].startswith(prefix)):
      continue
    if cat.get('resourceGroup') in ('CPU', 'N1Standard') and 'Core' in sku[
        'description']:
      core = SkuUnitPrice(sku)
    elif cat.get('resourceGroup') == 'RAM':
      ram = SkuUnitPrice(sku)
  if core is None or ram is None:
    raise ValueError(f'no on-demand CPU/RAM SKUs for {family} in {region}')
  return core, ram


def _RefreshAws(rows, today):
  import boto3  # pylint: disable=g-import-not-at-top
  client = boto3.client('pricing', region_name='us-east-1')
  for row in rows:
    if row['cloud'] != 'AWS':
      continue
    answer = client.get_products(ServiceCode='AmazonEC2', Filters=AwsFilters(
        row['machine_type'], row['region']))
    row['usd_per_hour'] = AwsHourlyPrice(answer['PriceList'][0])
    row['source'] = f'aws_price_list_{today}'
  return {f'aws_price_list_{today}': {
      'description': 'AWS Price List API via boto3 (Linux, Shared tenancy, '
                     'no pre-installed software, capacitystatus Used, '
                     'OnDemand)', 'date': today}}


def _RefreshGcp(rows, today):
  from google.cloud import billing_v1  # pylint: disable=g-import-not-at-top
  from google.protobuf import json_format  # pylint: disable=g-import-not-at-top
  client = billing_v1.CloudCatalogClient()
  skus = [json_format.MessageToDict(s._pb)  # pylint: disable=protected-access
          for s in client.list_skus(parent=GCE_SERVICE)]
  for row in rows:
    if row['cloud'] != 'GCP':
      continue
    core, ram = GcpRates(skus, row['machine_type'].split('-')[0],
                         row['region'])
    row['usd_per_hour'] = round(row['vcpus'] * core + row['memory_gib'] * ram,
                                8)
    row['source'] = f'gcp_billing_catalog_{today}'
  return {f'gcp_billing_catalog_{today}': {
      'description': 'Cloud Billing Catalog API (list_skus, on-demand '
                     'vCPU + RAM rates)', 'date': today}}


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument('--aws', action='store_true')
  parser.add_argument('--gcp', action='store_true')
  parser.add_argument('--output', default=CATALOG)
  args = parser.parse_args(argv)
  if not (args.aws or args.gcp):
    parser.error('choose --aws and/or --gcp')
  with open(CATALOG) as f:
    data = yaml.safe_load(f)
  today = datetime.date.today().isoformat()
  try:
    if args.aws:
      data['sources'].update(_RefreshAws(data['prices'], today))
    if args.gcp:
      data['sources'].update(_RefreshGcp(data['prices'], today))
  except ImportError as e:
    print(f'refresh_prices: missing Python package ({e.name}); pip install '
          'it into .venv.', file=sys.stderr)
    return 2
  except Exception as e:  # pylint: disable=broad-except
    print(f'refresh_prices: could not read prices ({type(e).__name__}: '
          f'{str(e).splitlines()[0] if str(e) else ""}); check credentials. '
          'Nothing was changed.', file=sys.stderr)
    return 1
  used = {row['source'] for row in data['prices']}
  data['sources'] = {k: v for k, v in data['sources'].items() if k in used}
  with open(args.output, 'w') as f:
    f.write('# On-demand hourly list prices (Linux, USD), keyed by cloud, '
            'region and machine type.\n# Generated by '
            'scripts/refresh_prices.py; do not edit entries by hand.\n')
    yaml.safe_dump(data, f, sort_keys=False, width=200)
  print(f'Wrote {len(data["prices"])} prices to {args.output}.')
  return 0


if __name__ == '__main__':
  sys.exit(main())
