#!/usr/bin/env python3
"""Publishes PKB results files to BigQuery (CI's publish step, or a re-try).

  ./scripts/publish_bigquery.py RESULTS... --bigquery_table=P.D.T
      [--bq_project=P] [--run_uri=X] [--service_account_private_key=KEY.json]

RESULTS are PKB JSON-lines files or result directories, searched recursively
for perfkitbenchmarker_results.json. Samples the table already holds (same
sample_uri) are skipped, so running it again, or after a resumed run added
samples, loads only what is missing. The flags are pkb's (docs/bigquery.md).

Exit codes: 0 published (or nothing new), 1 publishing failed (one line on
stderr; the files are only read), 2 bad input.
"""

import os
import sys

_REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, _REPO)
from perfkitbenchmarker import venv_reexec  # pylint: disable=g-import-not-at-top
venv_reexec.UseRepoVenv(_REPO, __file__)

# pylint: disable=g-import-not-at-top,wrong-import-position
import logging
from typing import List, Optional

from absl import flags

from perfkitbenchmarker import errors
from perfkitbenchmarker.publishers import bigquery_options
from perfkitbenchmarker.publishers import bigquery_publisher

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
FLAGS = flags.FLAGS
flags.DEFINE_string('run_uri', None,
                    'Publish only the samples of this run.')


def Main(argv: Optional[List[str]] = None, client=None) -> int:
  argv = list(sys.argv if argv is None else argv)
  if any(a in ('-h', '--help', '--helpfull') for a in argv[1:]):
    print(__doc__)
    for name in ('bigquery_table', 'bq_project', 'run_uri',
                 'service_account_private_key', 'service_account',
                 'bq_api_endpoint', 'bq_timeout_seconds'):
      if name in FLAGS:
        print(f'  --{name}: {FLAGS[name].help}')
    return EXIT_OK
  try:
    paths = FLAGS(argv)[1:]
  except flags.Error as e:
    print(f'publish_bigquery: {e}', file=sys.stderr)
    return EXIT_USAGE
  logging.getLogger().setLevel(logging.WARNING)
  try:
    if not paths:
      raise errors.UsageError('give the results files or directories to '
                              'publish.')
    options = bigquery_options.BigQueryOptions.FromFlags(FLAGS)
    if options is None:
      raise errors.UsageError('--bigquery_table is required (project.dataset.'
                              'table).')
    result = bigquery_publisher.PublishFiles(options, paths, FLAGS.run_uri,
                                             client=client)
  except errors.UsageError as e:
    print(f'publish_bigquery: {e}', file=sys.stderr)
    return EXIT_USAGE
  except Exception as e:  # pylint: disable=broad-except
    print(f'publish_bigquery: publishing to {FLAGS.bigquery_table} failed: '
          f'{bigquery_publisher.Describe(e)}', file=sys.stderr)
    return EXIT_FAILED
  print(result.Summary())
  return EXIT_OK


if __name__ == '__main__':
  sys.exit(Main())
