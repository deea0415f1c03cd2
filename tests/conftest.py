"""Shared test set-up: the repo on sys.path, flags parsed, a fixture path.

Also the suite's two tiers (README "Tests"): a test that starts a process
(redis-server, sshd, pkb.py, a compiler) or reaches past loopback is marked
`e2e`; the rest are the fast tier, and tests/tier_guard.py fails a fast
test that starts a process anyway, so the mark cannot lie.

./scripts/test.sh runs the suite in parallel (pytest-xdist), a file's tests
on one worker; a test that measures CPU or time (mark `alone`) runs with no
other test beside it, and one that measures in CPU cgroups of its own (mark
`own_cgroups`) with no other such test beside it (`_Alone` below).
"""

import collections
import fcntl
import json
import math
import os
import sys

import pytest

import tier_guard

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(REPO, 'tests', 'data')
# Seconds each test file took in a whole-suite run under ./scripts/test.sh
# (PKB_RECORD_DURATIONS=1 ./scripts/test.sh updates it, as does
# scripts/suite_durations.py from a whole suite's JUnit report). Only the
# order the files are handed out in depends on it: the longest start first,
# so no long file is the last thing running while the other workers idle.
DURATIONS = os.path.join(REPO, 'tests', 'durations.json')
# Every static run of the suite measures on this one machine (the loopback
# sshd), beside other tests' runs, on purpose: a static run is refused
# while another run's processes work there unless this says so
# (providers/static/provider.py). Its test unsets it.
os.environ['PKB_SHARED_MACHINES'] = '1'
if REPO not in sys.path:
  sys.path.insert(0, REPO)
from scripts import suite_durations  # pylint: disable=g-import-not-at-top,wrong-import-position


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


@pytest.fixture
def pkb_main(pkb_flags):
  """pkb.Main in this process on a fresh command line (`./pkb.py` runs
  it so): its exit code; the process's umask, which Main sets, given back."""
  from perfkitbenchmarker import pkb  # pylint: disable=g-import-not-at-top

  def Main(argv):
    pkb_flags.unparse_flags()  # Each as its own command line.
    umask = os.umask(0o022)
    try:
      return pkb.Main(['pkb.py'] + list(argv))
    finally:
      os.umask(umask)
  return Main


@pytest.fixture(autouse=True)
def private_key_dir(tmp_path_factory, monkeypatch):
  """Cloud runs' private SSH keys go to a per-test dir (run_scope.KEYS_ENV_VAR)."""
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
  config.addinivalue_line(
      'markers', 'alone: the test measures CPU or time (attribution, '
      'saturation, a probe\'s window): under pytest-xdist it runs with no '
      'other test beside it (tests/conftest.py).')
  config.addinivalue_line(
      'markers', 'own_cgroups: the test measures a case it runs in CPU '
      'cgroups of its own at a high weight (scripts/cpu_cgroups.py), which '
      'other load cannot starve (the suite passes beside a busy loop on '
      'each core: scripts/flake_hunt.py --hog); two such tests would take '
      'each other\'s share: under pytest-xdist it runs beside any test but '
      'another own_cgroups one or an alone one (tests/conftest.py).')


def pytest_collection_modifyitems(config, items):
  """Under pytest-xdist (--dist loadfile --no-loadscope-reorder: a test
  file is a unit of work, handed out in this order): the `alone` tests
  first, so the workers start on them together and take turns instead of
  waiting for each other's long tests later; then the other files with
  end-to-end tests (the long ones start early), then the rest (the fast
  tier fills the end); within each, the longest files first (DURATIONS),
  and a file not in it (a new one) before those: its length is unknown,
  and a long file handed out last keeps the other workers idle until it
  ends (25 files, 16 of them end-to-end, were missing at 3b38261). Every
  worker collects: the order is a pure function of the items and the
  file, the same on each."""
  if not hasattr(config, 'workerinput'):
    return
  seconds = _Durations()
  e2e_files = {item.path for item in items if item.get_closest_marker('e2e')}
  items.sort(key=lambda item: (
      not item.get_closest_marker('alone'), item.path not in e2e_files,
      -seconds.get(_File(item.nodeid), math.inf)))


def _File(nodeid: str) -> str:
  return nodeid.split('::', 1)[0]


def _Durations() -> dict:
  try:
    with open(DURATIONS) as f:
      return {k: float(v) for k, v in json.load(f).items()}
  except (OSError, ValueError, AttributeError, TypeError):
    return {}  # No file, or a broken one: collection order.


_SECONDS = collections.Counter()


def pytest_runtest_logreport(report):
  _SECONDS[_File(report.nodeid)] += report.duration


def pytest_sessionfinish(session, exitstatus):
  """With PKB_RECORD_DURATIONS=1, a passing run of the whole suite
  (./scripts/test.sh, no -k or -m: a part of a file would record too few
  seconds) writes each file's seconds into DURATIONS (in the format
  scripts/suite_durations.py also writes from a JUnit report)."""
  config = session.config
  if (hasattr(config, 'workerinput') or exitstatus != 0 or not _SECONDS or
      os.environ.get('PKB_RECORD_DURATIONS') != '1' or
      config.args != ['tests'] or config.option.keyword or
      config.option.markexpr):
    return
  suite_durations.Write(_SECONDS, DURATIONS)


class _Alone:
  """An `alone` test runs while no other worker runs a test; an
  `own_cgroups` test while no other worker runs an `alone` or an
  `own_cgroups` one.

  A readers-writer lock between the workers of one session, on files in
  the session's base temp directory: every test holds `lock` shared, an
  `alone` test exclusive. A worker passes through `gate` first, and an
  `alone` test keeps it: the other workers finish the test they run and
  then wait, so the exclusive lock is never starved. A worker keeps both
  locks from an `alone` test to the last of those that follow it. An
  `own_cgroups` test holds `lock` shared and then `cgroups` exclusive.

  An `alone` test waiting for its turn is queued (holds `queue` shared),
  and a test that is not `alone` waits, before the gate, until none is:
  when a worker's `alone` tests end and its next test is not `alone`, a
  queued `alone` test goes next. Without the queue that worker, already
  running, mostly took the gate back first, and the queued tests waited
  out its next test with the other workers idle (13.8 s once, at load
  10). Waits of `alone` tests for tests beside them to end, in runs of the
  `alone` files and three other end-to-end ones (-n 4): 7.1-20.1 s in all
  (4 runs), with the queue 5.6-8.5 s (3 runs); what is left comes from
  files a worker reaches after another file's tests that are not `alone`
  (tests already running when a test queues still end first).

  No two workers wait for each other: each takes `queue`, `gate`, `lock`
  and `cgroups` in that order and never waits for one while holding a
  later one; a worker waiting at `queue` (for a test that is not `alone`)
  holds nothing, as a worker's last test gave everything back unless its
  next is `alone` too. Whoever holds `gate` waits only for tests running,
  and a test running holds `lock` shared and waits at most for `cgroups`,
  which a running test holds. flock locks go with their holder, whatever
  ends it.

  The locks cover a test's set-up, call and teardown. Another worker's
  set-up or teardown is load on the cores an `alone` test measures
  (attribution_matrix_test's module fixture provisions and preloads a
  run), so every test holds `lock` shared through all three. An `alone`
  test's own set-up and teardown measure nothing (an sshd, a redis-server,
  scripts copied, a VM object) and could run with `lock` shared, only the
  call exclusive; but they take 0.5-0.7 s in all against 26-63 s of calls
  (load 2-11): not worth a shared-to-exclusive step inside a test, which
  would have to give its shared lock back before the gate (else it and
  the worker holding the gate wait for each other).
  """

  def __init__(self, directory: str):
    def Open(name):
      return os.open(os.path.join(directory, name), os.O_RDWR | os.O_CREAT,
                     0o600)
    self._queue = Open('alone.queue')
    self._gate = Open('alone.gate')
    self._lock = Open('alone.lock')
    self._cgroups = Open('own_cgroups.lock')
    self._exclusive = False

  def Enter(self, alone: bool, own_cgroups: bool = False) -> None:
    if self._exclusive:
      return
    if alone:
      # Waits only while another worker passes the queue (below).
      fcntl.flock(self._queue, fcntl.LOCK_SH)
    else:
      # Past every queued `alone` test (flock grants shared locks beside a
      # waiting exclusive one: one queued later goes first too).
      fcntl.flock(self._queue, fcntl.LOCK_EX)
      fcntl.flock(self._queue, fcntl.LOCK_UN)
    fcntl.flock(self._gate, fcntl.LOCK_EX)
    if alone:
      fcntl.flock(self._lock, fcntl.LOCK_EX)
      self._exclusive = True
      return
    fcntl.flock(self._lock, fcntl.LOCK_SH)
    fcntl.flock(self._gate, fcntl.LOCK_UN)
    if own_cgroups:
      fcntl.flock(self._cgroups, fcntl.LOCK_EX)

  def Leave(self, next_alone: bool) -> None:
    if self._exclusive and next_alone:
      return  # The group's next test goes on alone.
    fcntl.flock(self._cgroups, fcntl.LOCK_UN)  # Held or not: no error.
    fcntl.flock(self._lock, fcntl.LOCK_UN)
    if self._exclusive:
      fcntl.flock(self._gate, fcntl.LOCK_UN)
      fcntl.flock(self._queue, fcntl.LOCK_UN)
      self._exclusive = False


_ALONE = []


def _AloneLock(config):
  """The session's _Alone under pytest-xdist (each worker's base temp is
  <session base temp>/popen-gwN), else None."""
  if not hasattr(config, 'workerinput'):
    return None
  if not _ALONE:
    parent = os.path.dirname(str(config.option.basetemp).rstrip('/'))
    _ALONE.append(_Alone(parent))
  return _ALONE[0]


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item, nextitem):
  """Set-up, call and teardown of a test, under the alone lock."""
  lock = _AloneLock(item.config)
  if lock is None:
    return (yield)
  lock.Enter(item.get_closest_marker('alone') is not None,
             item.get_closest_marker('own_cgroups') is not None)
  try:
    return (yield)
  finally:
    lock.Leave(nextitem is not None and
               nextitem.get_closest_marker('alone') is not None)


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


@pytest.fixture
def shipped_scripts(tmp_path_factory, monkeypatch):
  """For an e2e test that runs shell_scripts.Command lines by hand (bash
  -c, no VM): the scripts shipped as a VM ships them, PKB_SCRIPTS naming
  them in this process's environment (so in its commands')."""
  import e2e_support  # pylint: disable=g-import-not-at-top
  env = e2e_support.ShippedScripts(tmp_path_factory.mktemp('scratch'))
  monkeypatch.setenv('PKB_SCRIPTS', env['PKB_SCRIPTS'])
  return env['PKB_SCRIPTS']
