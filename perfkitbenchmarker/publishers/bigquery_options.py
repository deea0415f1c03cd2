"""BigQuery publishing flags and the one validated options object they become.

PKB's flag names (`--bigquery_table` in PKB's forms too, `--bq_project`,
`--service_account`, `--service_account_private_key`: a JSON key, as the
client library is used, never the bq CLI) plus our `--bq_api_endpoint` and
`--bq_timeout_seconds`. `BigQueryOptions.FromFlags` is the only reader:
one-line UsageErrors before a run starts, frozen options below. Imports
only absl, so pkb loads it at start-up (the client is bigquery_publisher's).
"""

import dataclasses
import json
import os
import re
import urllib.parse
from typing import Optional

from absl import flags

from perfkitbenchmarker import errors
from perfkitbenchmarker import flag_types
from perfkitbenchmarker import regular_files
from perfkitbenchmarker import vm_util

flags.DEFINE_string(
    'bigquery_table', None,
    'BigQuery table to publish the run\'s samples to at the end of the run: '
    'project.dataset.table, project:dataset.table, or dataset.table with '
    '--bq_project. The dataset must exist; the table is created when '
    'missing. See docs/bigquery.md.')
flags.DEFINE_string(
    'bq_project', None,
    'Project the BigQuery load and query jobs run (and are billed) in; also '
    'the table\'s project when --bigquery_table is dataset.table.')
flags.DEFINE_string(
    'service_account', None,
    'Service account email; with --service_account_private_key it must be '
    'the key\'s client_email.')
flags.DEFINE_string(
    'service_account_private_key', None,
    'JSON service-account key file for BigQuery (default: the google-auth '
    'application-default credentials).')
flags.DEFINE_string(
    'bq_api_endpoint', None,
    'BigQuery API endpoint, e.g. http://127.0.0.1:9050 for a local fake or '
    'emulator. Loopback endpoints are called without credentials.')
flag_types.DEFINE_float(
    'bq_timeout_seconds', 300,
    'How long each BigQuery call may keep retrying, and how long to wait for '
    'a load or query job.', lower_bound=0, upper_bound=3600, above=True)

# Project ids: 6-30 of [a-z0-9-], optionally domain-scoped (example.com:p).
_PROJECT = re.compile(r'(?:[a-z][a-z0-9-]*(?:\.[a-z0-9-]+)+:)?'
                      r'[a-z][a-z0-9-]{4,28}[a-z0-9]')
_NOT_A_PROJECT = ('is not a project id (6-30 lowercase letters, digits or '
                  'hyphens, starting with a letter)')
_DATASET = re.compile(r'[A-Za-z0-9_]{1,1024}')
# BigQuery allows more (Unicode letters, spaces); these are the portable ones.
_TABLE = re.compile(r'[A-Za-z0-9_][A-Za-z0-9_-]{0,1023}')
# A JSON service-account key is about 2.4 KB; far more is not one.
MAX_KEY_FILE_BYTES = 1 << 20


@dataclasses.dataclass(frozen=True)
class TableId:
  """A fully qualified table: project, dataset and table."""
  project: str
  dataset: str
  table: str

  def __str__(self) -> str:
    return f'{self.project}.{self.dataset}.{self.table}'


def ParseTableId(text: str, default_project: Optional[str] = None,
                 what: str = '--bigquery_table') -> TableId:
  """'p.d.t', 'p:d.t' or 'd.t' (with default_project) -> TableId, or a
  one-line UsageError naming the accepted forms."""
  forms = ('project.dataset.table, project:dataset.table, or dataset.table '
           'with --bq_project')
  text = (text or '').strip()
  project = None
  head, colon, rest = text.rpartition(':')
  if colon and rest.count('.') == 1:  # PKB / bq CLI form.
    project, (dataset, table) = head, rest.split('.')
  else:
    parts = text.rsplit('.', 2)
    if len(parts) == 3:
      project, dataset, table = parts
    elif len(parts) == 2:
      dataset, table = parts
    else:
      raise errors.UsageError(f'{what}="{text}" is not a table id; use '
                              f'{forms}.')
  if project is None:
    if not default_project:
      raise errors.UsageError(
          f'{what}="{text}" names no project; use {forms}.')
    project = default_project
  for pattern, part, why in (
      (_PROJECT, project, f'"{project}" {_NOT_A_PROJECT}'),
      (_DATASET, dataset, f'dataset "{dataset}" may only hold letters, '
                          'digits and underscores'),
      (_TABLE, table, f'table "{table}" may only hold letters, digits, '
                      'underscores and hyphens')):
    if not pattern.fullmatch(part):
      raise errors.UsageError(f'{what}="{text}": {why}.')
  return TableId(project, dataset, table)


@dataclasses.dataclass(frozen=True)
class BigQueryOptions:
  """Where and how to publish; built once from flags, read everywhere below."""
  table: TableId
  job_project: str
  key_file: Optional[str] = None
  api_endpoint: Optional[str] = None
  timeout_s: float = 300.0

  @classmethod
  def FromFlags(cls, flag_values) -> Optional['BigQueryOptions']:
    """The options, or None when --bigquery_table is not set."""
    if not flag_values.bigquery_table:
      return None
    bq_project = flag_values.bq_project
    if bq_project and not _PROJECT.fullmatch(bq_project):
      raise errors.UsageError(f'--bq_project="{bq_project}" {_NOT_A_PROJECT}.')
    table = ParseTableId(flag_values.bigquery_table, bq_project)
    key_file = _CheckKeyFile(flag_values.service_account_private_key,
                             flag_values.service_account)
    endpoint = flag_values.bq_api_endpoint
    if endpoint:
      try:  # A '[' without its ']', a port not a port: ValueError.
        parts = urllib.parse.urlsplit(endpoint)
        parts.port  # pylint: disable=pointless-statement
      except ValueError:
        parts = None
      if (not parts or parts.scheme not in ('http', 'https') or
          not parts.hostname):
        raise errors.UsageError(
            f'--bq_api_endpoint="{endpoint}" must be http(s)://host[:port].')
      if parts.scheme == 'http' and not vm_util.IsLoopbackEndpoint(endpoint):
        raise errors.UsageError(
            f'--bq_api_endpoint="{endpoint}": plain http is only for loopback '
            'fakes; use https.')
    return cls(table=table, job_project=bq_project or table.project,
               key_file=key_file, api_endpoint=endpoint or None,
               timeout_s=float(flag_values.bq_timeout_seconds))


def _CheckKeyFile(path: Optional[str],
                  service_account: Optional[str]) -> Optional[str]:
  if not path:
    if service_account:
      raise errors.UsageError(
          '--service_account needs --service_account_private_key (a JSON '
          'key file); without both, application-default credentials are '
          'used.')
    return None
  path = os.path.abspath(os.path.expanduser(path))
  try:
    # Bounded, a regular file only: a FIFO would wait for a writer for
    # ever and /dev/zero fill the memory.
    text = regular_files.ReadRegular(path, MAX_KEY_FILE_BYTES)
  except regular_files.NotRegular as e:
    raise errors.UsageError(
        f'--service_account_private_key: cannot read {path}: {e}.') from None
  try:
    key = json.loads(text)
  except (ValueError, RecursionError):
    key = None
  if not isinstance(key, dict) or key.get('type') != 'service_account':
    raise errors.UsageError(
        f'--service_account_private_key: {path} is not a JSON service-account '
        'key (P12 keys of the bq CLI are not supported).')
  if service_account and key.get('client_email') != service_account:
    raise errors.UsageError(
        f'--service_account={service_account} is not the account of the key '
        f'in {path}.')
  return path
