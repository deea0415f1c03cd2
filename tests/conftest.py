"""Shared test set-up: the repo on sys.path, flags parsed, a fixture path."""

import os
import sys

import pytest

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
      'markers', 'requires(what, available, how): the test needs `what` '
      '(e2e_support.Needs/NeedsTools); missing, it skips here and fails in '
      'CI (CI=true), which installs it.')


def pytest_runtest_setup(item):
  """Checks every `requires` mark before the test: skip here, fail in CI."""
  marks = list(item.iter_markers('requires'))
  if not marks:
    return
  import e2e_support  # pylint: disable=g-import-not-at-top
  for mark in marks:
    if not mark.kwargs['available']():
      e2e_support.Unavailable(mark.kwargs['what'], mark.kwargs.get('how', ''))
