"""Publishes a run's PKB samples to BigQuery with load jobs, and reads back.

`ReadRows(table, client)` gives every row as a PKB JSON line dict (labels
collapsed), sorted by timestamp then sample_uri; `IterRows` the same rows
unsorted, a page at a time: the results-history loader reads through it. `PublishFiles` publishes PKB JSON files or result
directories; `PublishRun` is pkb's end-of-run hook, one line whatever
happens, never raising for a publishing failure.

Publishing the same samples twice adds nothing: a query bounded to their
days (the partitioning column) and run_uris finds the sample_uris already
there. The load job id is derived from table and rows, so a retried load is
a 409 Conflict whose job is awaited; a failed earlier job loaded nothing
(load jobs are atomic) and the next id of a fixed sequence is used. Load
jobs (free, atomic), never streaming inserts; the table is created when
missing (bigquery_schema.py, docs/bigquery.md), the dataset must exist.
Every call has a retry deadline and a request timeout, and `MakeClient`'s
client reads each answer within a time and size limit (bounded_http.py).
"""

import concurrent.futures
import dataclasses
import hashlib
import io
import json
import logging
import os
import re
import shlex
import socket
import sys
import urllib.parse
from typing import Any, Dict, Iterator, List, Optional, Sequence

import google.auth as google_auth
from google.api_core import exceptions as api_exceptions
from google.auth import credentials as auth_credentials
from google.auth import exceptions as auth_exceptions
from google.cloud import bigquery
from google.cloud.bigquery import retry as bq_retry
from google.oauth2 import service_account
import requests

from perfkitbenchmarker import bounded_http
from perfkitbenchmarker import errors
from perfkitbenchmarker import vm_util
from perfkitbenchmarker.publishers import bigquery_options
from perfkitbenchmarker.publishers import bigquery_schema as schema
from perfkitbenchmarker.publishers import publisher

BIGQUERY_SCOPE = 'https://www.googleapis.com/auth/bigquery'
# Below this size an upload is one multipart request; above it, resumable.
MULTIPART_MAX_BYTES = 4 * 1024 * 1024
# Rows per tabledata page: a few MB, well within bounded_http's size limit.
READ_PAGE_SIZE = 2000
# Retries of an upload's own requests (the client's num_retries).
UPLOAD_RETRIES = 3
# Deterministic load job ids tried in turn when an earlier one failed.
MAX_JOB_ATTEMPTS = 5
# One HTTP request's own timeout (retries come on top, up to timeout_s).
REQUEST_TIMEOUT_S = 60.0
# Connecting to the endpoint before the first call (CheckReachable).
CONNECT_TIMEOUT_S = 10.0
DEFAULT_ENDPOINT = 'https://bigquery.googleapis.com'


class PublishError(errors.Error):
  """Publishing failed; the message is one line."""


_PROXY_VARIABLES = ('HTTPS_PROXY', 'https_proxy', 'HTTP_PROXY', 'http_proxy',
                    'ALL_PROXY', 'all_proxy')


def CheckReachable(endpoint: Optional[str],
                   timeout_s: float = CONNECT_TIMEOUT_S) -> None:
  """One TCP connection to the endpoint before any API call (skipped behind
  a proxy): the client would retry an unreachable one silently for
  --bq_timeout_seconds; this fails in seconds, in one line."""
  if any(os.environ.get(v) for v in _PROXY_VARIABLES):
    return
  url = urllib.parse.urlsplit(endpoint or DEFAULT_ENDPOINT)
  host = url.hostname or ''
  port = url.port or (443 if url.scheme == 'https' else 80)
  try:
    socket.create_connection((host, port), timeout=timeout_s).close()
  except OSError as e:
    reason = (f'no answer within {timeout_s:g} s'
              if isinstance(e, socket.timeout) else
              e.strerror or str(e) or type(e).__name__)
    raise PublishError(
        f'cannot reach the BigQuery endpoint {host}:{port} ({reason}); check '
        '--bq_api_endpoint and the network.') from None


@dataclasses.dataclass(frozen=True)
class PublishResult:
  table: str
  loaded: int  # Rows this call loaded.
  already: int  # Rows the table held before.
  job_id: Optional[str] = None

  def Summary(self, what: str = 'samples') -> str:
    if not self.loaded and not self.already:
      return f'no {what} to publish to {self.table}.'
    if not self.loaded:
      return (f'{self.table} already holds all {self.already} {what}; '
              'nothing loaded.')
    return (f'{self.loaded} new {what} loaded into {self.table} '
            f'({self.already} already there; job {self.job_id}).')


def Describe(error: BaseException) -> str:
  """One line for any error the client or this module raises."""
  if isinstance(error, api_exceptions.RetryError) and error.cause:
    return f'gave up retrying: {Describe(error.cause)}'
  text = ''
  if isinstance(error, api_exceptions.GoogleAPICallError):
    # The client prefixes "GET https://...: "; the URL adds nothing here.
    message = re.sub(r'^[A-Z]+ \S+: ', '', error.message or '')
    text = f'{error.code or ""} {message}'.strip()
  text = text or str(error) or type(error).__name__
  line = ' '.join(text.split())
  return vm_util.Mask(line[:300] + ('...' if len(line) > 300 else ''))


def MakeClient(options: bigquery_options.BigQueryOptions) -> bigquery.Client:
  """A client for the options' endpoint and credentials whose session reads
  each answer within a time and size limit and nothing past
  --bq_timeout_seconds (the client's own timeouts bound each socket read
  only: a trickling or endless body held a publish for ever)."""
  if vm_util.IsLoopbackEndpoint(options.api_endpoint):
    credentials = auth_credentials.AnonymousCredentials()
  elif options.key_file:
    credentials = service_account.Credentials.from_service_account_file(
        options.key_file, scopes=[BIGQUERY_SCOPE])
  else:
    try:
      credentials, _ = google_auth.default(scopes=[BIGQUERY_SCOPE])
    except auth_exceptions.DefaultCredentialsError:
      raise PublishError(
          'no Google credentials for BigQuery; run "gcloud auth '
          'application-default login", set GOOGLE_APPLICATION_CREDENTIALS '
          'or give --service_account_private_key.') from None
  client_options = ({'api_endpoint': options.api_endpoint}
                    if options.api_endpoint else None)
  client = bigquery.Client(project=options.job_project,
                           credentials=credentials,
                           client_options=client_options,
                           _http=bounded_http.Session(credentials))
  client._http.Deadline(options.timeout_s)  # pylint: disable=protected-access
  return client


class BigQueryPublisher:
  """Loads PKB rows into one table, skipping rows it already holds."""

  def __init__(self, client: bigquery.Client,
               options: bigquery_options.BigQueryOptions,
               multipart_max_bytes: int = MULTIPART_MAX_BYTES):
    self.client = client
    self.options = options
    self.multipart_max_bytes = multipart_max_bytes
    self._retry = bq_retry.DEFAULT_RETRY.with_timeout(options.timeout_s)
    self._request_timeout = min(REQUEST_TIMEOUT_S, options.timeout_s)
    self._ref = bigquery.TableReference(
        bigquery.DatasetReference(options.table.project,
                                  options.table.dataset),
        options.table.table)

  def Publish(self, rows: Sequence[Dict[str, Any]]) -> PublishResult:
    """Loads the rows (PKB JSON line dicts) the table does not hold yet."""
    table_rows = {}
    for row in rows:
      converted = schema.ToTableRow(row)
      table_rows.setdefault(converted['sample_uri'], converted)
    name = str(self.options.table)
    if not table_rows:
      return PublishResult(name, 0, 0)
    try:
      location = self._DatasetLocation()
      table = self._EnsureTable()
      columns = {field.name for field in table.schema}
      present = self._PresentSampleUris(list(table_rows.values()), location,
                                        columns)
      new = sorted((r for uri, r in table_rows.items() if uri not in present),
                   key=lambda r: (r['timestamp'], r['sample_uri']))
      if not new:
        return PublishResult(name, 0, len(table_rows))
      job_id = self._Load(new, location, columns)
    except (api_exceptions.GoogleAPIError,
            requests.exceptions.RequestException) as e:
      raise PublishError(Describe(e)) from None
    except concurrent.futures.TimeoutError:
      raise PublishError(f'a BigQuery job took longer than '
                         f'{self.options.timeout_s:g} s '
                         '(--bq_timeout_seconds).') from None
    return PublishResult(name, len(new), len(table_rows) - len(new), job_id)

  def _DatasetLocation(self) -> Optional[str]:
    dataset_id = self._ref.dataset_id
    try:
      dataset = self.client.get_dataset(
          bigquery.DatasetReference(self._ref.project, dataset_id),
          retry=self._retry, timeout=self._request_timeout)
    except api_exceptions.NotFound:
      raise PublishError(
          f'dataset {self._ref.project}.{dataset_id} does not exist; create '
          'it first, in the location the results should live in.') from None
    return dataset.location

  def _EnsureTable(self) -> bigquery.Table:
    """The table, created with our schema, partitioning and clustering."""
    try:
      table = self.client.get_table(self._ref, retry=self._retry,
                                    timeout=self._request_timeout)
    except api_exceptions.NotFound:
      table = bigquery.Table(self._ref, schema=TableSchema())
      table.time_partitioning = bigquery.TimePartitioning(
          type_=bigquery.TimePartitioningType.DAY,
          field=schema.PARTITION_COLUMN)
      table.clustering_fields = list(schema.CLUSTERING)
      table.description = ('PerfKitBenchmarker samples (redis price-'
                           'performance harness); see docs/bigquery.md.')
      logging.info('Creating BigQuery table %s', self.options.table)
      table = self.client.create_table(table, exists_ok=True,
                                       retry=self._retry,
                                       timeout=self._request_timeout)
    missing = [c for c in schema.CORE_COLUMNS
               if c not in {f.name for f in table.schema}]
    if missing:
      raise PublishError(
          f'table {self.options.table} has no column(s) {", ".join(missing)}; '
          'it does not hold PKB samples, publish to another table.')
    return table

  def _PresentSampleUris(self, rows, location, columns) -> set:
    """Which of the rows' sample_uris the table holds already."""
    run_uris = sorted({r['run_uri'] for r in rows})
    params = [bigquery.ArrayQueryParameter('run_uris', 'STRING', run_uris)]
    sql = (f'SELECT DISTINCT sample_uri FROM `{self.options.table}` '
           'WHERE run_uri IN UNNEST(@run_uris)')
    if schema.PARTITION_COLUMN in columns:
      # Scans only the samples' own days (a sample's time never changes).
      times = sorted(r['timestamp'] for r in rows)
      sql += (f' AND {schema.PARTITION_COLUMN} BETWEEN '
              'TIMESTAMP_SECONDS(@first) AND TIMESTAMP_SECONDS(@last)')
      params += [
          bigquery.ScalarQueryParameter('first', 'INT64', int(times[0]) - 1),
          bigquery.ScalarQueryParameter('last', 'INT64', int(times[-1]) + 2)]
    job = self.client.query(
        sql, job_config=bigquery.QueryJobConfig(query_parameters=params),
        location=location, project=self.options.job_project,
        retry=self._retry, timeout=self._request_timeout, job_retry=None)
    result = job.result(retry=self._retry, timeout=self.options.timeout_s)
    return {row['sample_uri'] for row in result}

  def _Load(self, rows, location, columns) -> str:
    """Loads rows with a deterministic job id; returns the id that did."""
    data = ''.join(
        json.dumps({k: v for k, v in r.items() if k in columns},
                   sort_keys=True) + '\n' for r in rows).encode()
    base_id = LoadJobId(str(self.options.table), rows, data)
    config = bigquery.LoadJobConfig(
        source_format=bigquery.SourceFormat.NEWLINE_DELIMITED_JSON,
        write_disposition=bigquery.WriteDisposition.WRITE_APPEND,
        create_disposition=bigquery.CreateDisposition.CREATE_NEVER)
    for attempt in range(MAX_JOB_ATTEMPTS):
      job_id = base_id if attempt == 0 else f'{base_id}_retry{attempt}'
      fresh = True
      try:
        job = self.client.load_table_from_file(
            io.BytesIO(data), self._ref, job_id=job_id, location=location,
            project=self.options.job_project, job_config=config,
            size=len(data) if len(data) < self.multipart_max_bytes else None,
            num_retries=UPLOAD_RETRIES, timeout=self._request_timeout)
      except api_exceptions.Conflict:
        # Submitted before (a retry, or a concurrent publish of the same rows).
        fresh = False
        job = self.client.get_job(job_id, project=self.options.job_project,
                                  location=location, retry=self._retry,
                                  timeout=self._request_timeout)
      try:
        job.result(retry=self._retry, timeout=self.options.timeout_s)
        return job_id
      except api_exceptions.GoogleAPICallError as e:
        if fresh or job.error_result is None:
          raise PublishError(f'load job {job_id} failed: {Describe(e)}'
                             ) from None
        logging.info('Earlier load job %s failed (%s); trying the next id.',
                     job_id, Describe(e))
    raise PublishError(f'load jobs {base_id}[_retryN] all failed before; '
                       'see their errors in the BigQuery console.')


def TableSchema() -> List[bigquery.SchemaField]:
  def Field(name, kind, mode, description, fields=()):
    return bigquery.SchemaField(name, kind, mode=mode, description=description,
                                fields=fields)
  nested = [Field(*f) for f in schema.METADATA_FIELDS]
  return [Field(*c, fields=nested if c[1] == 'RECORD' else ())
          for c in schema.COLUMNS]


def LoadJobId(table: str, rows: Sequence[Dict[str, Any]], data: bytes) -> str:
  """pkb_load_<run>_<hash of table and rows>: the same rows, the same id."""
  run_uris = sorted({publisher.ShortRunUri(r['run_uri']) for r in rows})
  run = run_uris[0] if len(run_uris) == 1 else f'{len(run_uris)}runs'
  run = re.sub(r'[^A-Za-z0-9_-]', '_', run)[:40]
  digest = hashlib.sha256(table.encode() + b'\n' + data).hexdigest()[:40]
  return f'pkb_load_{run}_{digest}'


def PublishFiles(options: bigquery_options.BigQueryOptions,
                 paths: Sequence[str], run_uri: Optional[str] = None,
                 client: Optional[bigquery.Client] = None,
                 **publisher_args) -> PublishResult:
  """Publishes the PKB samples in files/directories (of one run if given):
  ResultsFileError for bad input, PublishError when BigQuery fails."""
  rows = schema.ReadResultsFiles(paths, run_uri)
  if not rows:
    return PublishResult(str(options.table), 0, 0)
  if client is None:
    CheckReachable(options.api_endpoint,
                   min(CONNECT_TIMEOUT_S, options.timeout_s))
    client = MakeClient(options)
  return BigQueryPublisher(client, options, **publisher_args).Publish(rows)


def PublishRun(options: bigquery_options.BigQueryOptions, json_path: str,
               run_uri: str, out=None, err=None,
               client: Optional[bigquery.Client] = None,
               **publisher_args) -> bool:
  """pkb's end-of-run hook: one line on `out` or, saying how to publish
  later, on `err`; a failure never changes the run's exit code."""
  out, err = out or sys.stdout, err or sys.stderr
  if not os.path.exists(json_path):
    print(f'BigQuery: run {run_uri} wrote no samples; nothing to publish.',
          file=out)
    return True
  try:
    result = PublishFiles(options, [json_path], run_uri=run_uri,
                          client=client, **publisher_args)
  except Exception as e:  # pylint: disable=broad-except
    # Any failure, bugs included: the traceback goes to pkb.log only.
    logging.debug('Publishing to BigQuery failed', exc_info=True)
    # The publish that failed: this run's samples only (a --json_path may
    # be shared), to the same endpoint, as the same identity.
    command = [os.path.join('scripts', 'publish_bigquery.py'), json_path,
               f'--bigquery_table={options.table}', f'--run_uri={run_uri}']
    if options.job_project != options.table.project:
      command.append(f'--bq_project={options.job_project}')
    if options.api_endpoint:
      command.append(f'--bq_api_endpoint={options.api_endpoint}')
    if options.key_file:
      command.append(f'--service_account_private_key={options.key_file}')
    reason = Describe(e)
    stop = '' if reason.endswith('.') else '.'  # Some reasons end in one.
    print(f'pkb: publishing run {run_uri} to BigQuery table {options.table} '
          f'failed: {reason}{stop} The local results are intact and the exit '
          'code is the run\'s own; publish later with: '
          f'{shlex.join(command)}', file=err)
    return False
  print(f'BigQuery: {result.Summary(f"samples of run {run_uri}")}', file=out)
  return True


def IterRows(table: str, client: bigquery.Client
             ) -> Iterator[Dict[str, Any]]:
  """Every row of `table` as a PKB JSON line dict, in the table's order, a
  page at a time (the results-history loader keeps a few keys of each)."""
  ref = bigquery_options.ParseTableId(table, client.project, what='table')
  for row in client.list_rows(str(ref), page_size=READ_PAGE_SIZE):
    yield schema.FromTableRow(dict(row.items()))


def ReadRows(table: str, client: bigquery.Client) -> List[Dict[str, Any]]:
  """Every row of `table` as a PKB JSON line dict (see the module doc)."""
  result = list(IterRows(table, client))
  result.sort(key=lambda r: (r['timestamp'] is None, r['timestamp'] or 0,
                             r['sample_uri'] or ''))
  return result
