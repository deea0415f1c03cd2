"""Shared test set-up: the repo on sys.path, flags parsed, a fixture path.

Also the suite's two tiers (README "Tests"): a test that starts a process
(redis-server, sshd, pkb.py, a compiler) or reaches past loopback is marked
`e2e`; the rest are the fast tier, and tests/tier_guard.py fails a fast
test that starts a process anyway, so the mark cannot lie.
"""

import os
import sys

import pytest

import tier_guard

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(REPO, 'tests', 'data')
if REPO not in sys.path:
  sys.path.insert(0, REPO)


@pytest.fixture
def data_path():
  return lambda name: os.path.join(DATA, name)


@pytest.fixture
def pkb_flags():
  """absl FLAGS parsed with defaults, restored after the test."""
  from absl import flags  # pylint: disable=g-import-not-at-top
  from perfkitbenchmarker import pkb  # pylint: disable=g-import-not-at-top,unused-import
  fv = flags.FLAGS
  if not fv.is_parsed():
    fv(['pkb'])
  saved = fv.flag_values_dict()
  yield fv
  for name, value in saved.items():
    fv[name].value = value
    fv[name].present = 0


@pytest.fixture(autouse=True)
def private_key_dir(tmp_path_factory, monkeypatch):
  """Cloud runs' private SSH keys go to a per-test dir (run_keys.ENV_VAR)."""
  directory = str(tmp_path_factory.mktemp('keys'))
  monkeypatch.setenv('PKB_KEY_DIR', directory)
  return directory


def pytest_configure(config):
  config.addinivalue_line(
      'markers', 'e2e: the end-to-end tier: the test starts a process or a '
      'server (redis-server, sshd, pkb.py, ...). Unmarked tests are the fast '
      'tier, which tests/tier_guard.py holds to starting nothing.')
  tier_guard.GUARD.Install()
  config.addinivalue_line(
      'markers', 'requires(what, available, how): the test needs `what` '
      '(e2e_support.Needs/NeedsTools); missing, it skips here and fails in '
      'CI (CI=true), which installs it.')


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item):
  """Guards an unmarked (fast-tier) test from its set-up on.

  And checks every `requires` mark before the test: skip here, fail in CI.
  """
  tier_guard.GUARD.Take()
  _CheckRequires(item)  # Before the guard: a tool check may run the tool.
  tier_guard.GUARD.active = item.get_closest_marker('e2e') is None
  return (yield)


def _CheckRequires(item):
  marks = list(item.iter_markers('requires'))
  if not marks:
    return
  import e2e_support  # pylint: disable=g-import-not-at-top
  for mark in marks:
    if not mark.kwargs['available']():
      e2e_support.Unavailable(mark.kwargs['what'], mark.kwargs.get('how', ''))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item):
  del item
  tier_guard.GUARD.active = False
  return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
  """Fails a fast-tier test that started a process, even if it passed."""
  del item
  report = yield
  if call.when == 'teardown':
    return report
  found = tier_guard.GUARD.Take()
  if found and not report.failed:
    report.outcome = 'failed'
    report.longrepr = ('fast-tier rule broken: the test ' + '; '.join(found) +
                       '. Mark it pytest.mark.e2e (tests/tier_guard.py).')
  return report
