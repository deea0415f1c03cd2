#!/usr/bin/env python3
"""The compare command of a checkout (installed: `pkb-compare`).

  ./scripts/compare.py [RESULTS...] [--report=PATH.html] [--markdown=PATH.md]
                       [--json=PATH.json] [--include_unconfirmed]
                       [--fail_on_regression] [--bigquery_table=P.D.T]

Everything is in perfkitbenchmarker/results_history/compare_cli.py (its
--help); with no RESULTS this reads the checkout's results/ tree. The
contract is in docs/compare.md.
"""

import os
import sys

_REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, _REPO)
from perfkitbenchmarker import venv_reexec  # pylint: disable=g-import-not-at-top
venv_reexec.UseRepoVenv(_REPO, __file__)

# pylint: disable=g-import-not-at-top,wrong-import-position,unused-import
from perfkitbenchmarker.results_history import compare_cli
from perfkitbenchmarker.results_history.compare_cli import EXIT_INTERNAL
from perfkitbenchmarker.results_history.compare_cli import EXIT_OK
from perfkitbenchmarker.results_history.compare_cli import EXIT_REGRESSION
from perfkitbenchmarker.results_history.compare_cli import EXIT_USAGE
from perfkitbenchmarker.results_history.compare_cli import LoadHistory

DEFAULT_RESULTS = os.path.join(_REPO, 'results')


def Main(argv=None) -> int:
  return compare_cli.Main(argv, default_results=DEFAULT_RESULTS,
                          command='./scripts/compare.py')


if __name__ == '__main__':
  sys.exit(Main())
