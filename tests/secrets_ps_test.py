"""No Redis password in `ps` or in any kept file, through real Local runs.

Each test runs ./pkb.py as a subprocess while a sampler reads every process's
argv (`ps -eo args`) every 0.1 s. The run's password is read from a shard's
config file in the scratch directory as soon as it exists; memtier and
redis-benchmark log in as the restricted load user, whose password must be
in no argv either (linux_packages/argv_secret.py hands it to them) and in no
kept file. memtier is the replay stand-in (tests/memtier_replay.py): a real
process that argv_secret's library is preloaded into, which logs in to the
run's servers with the password the library hands it (the run fails if it
gets the token instead), and copies `-a` into its JSON as memtier does.
"""

import glob
import io
import os
import re
import signal
import subprocess
import sys
import threading
import time

import pytest

import e2e_support as e2e
import memtier_replay
import script_modules

sys.path.insert(0, e2e.REPO)
from perfkitbenchmarker import redis_shard  # pylint: disable=g-import-not-at-top,wrong-import-position
from perfkitbenchmarker.linux_packages import argv_secret  # pylint: disable=g-import-not-at-top,wrong-import-position

# Every test here starts a process (tests/tier_guard.py).
pytestmark = pytest.mark.e2e


class PsSampler(threading.Thread):
  """Collects every distinct `ps -eo args` line, and the run's password."""

  def __init__(self, scratch_root: str, run_uri: str):
    super().__init__(daemon=True)
    self.pattern = os.path.join(scratch_root, f'pkb-{run_uri}.*', '*',
                                'redis-*.conf')
    self.lines = set()
    self.password = None
    self.stop = threading.Event()

  def _ReadPassword(self):
    for path in glob.glob(self.pattern):
      try:
        with open(path) as f:
          match = re.search(r'^requirepass (\S+)$', f.read(), re.M)
      except OSError:
        continue
      if match:
        self.password = match.group(1)

  def run(self):
    deadline = time.monotonic() + 600
    while not self.stop.is_set() and time.monotonic() < deadline:
      out = subprocess.run(['ps', '-eww', '-o', 'args'], capture_output=True,
                           text=True, check=False).stdout
      self.lines.update(out.splitlines())
      if self.password is None:
        self._ReadPassword()
      self.stop.wait(0.1)


def _RunAndSample(tmp_path, extra_args):
  scratch = str(tmp_path / 'scratch')
  os.makedirs(scratch)
  results = str(tmp_path / 'results')
  run_uri = e2e.NewRunUri()
  sampler = PsSampler(scratch, run_uri)
  sampler.start()
  try:
    proc, _ = e2e.Run(e2e.FAST + extra_args, results, run_uri=run_uri,
                      env=dict(os.environ, PKB_LOCAL_SCRATCH=scratch))
  finally:
    sampler.stop.set()
    sampler.join(30)
  assert proc.returncode == 0, proc.stderr
  # The sampler ran while the run had its secrets: it read the shard's
  # config, and each test checks that `ps` saw its load generator's probe
  # (events, not a count of samples, which a busy machine makes fewer).
  assert sampler.password, 'never saw the shard config'
  return proc, sampler, os.path.join(results, run_uri)


def _AssertNowhere(secret, sampler, run_dir, proc):
  leaks = [l for l in sampler.lines if secret in l]
  assert not leaks, leaks[:3]
  assert secret not in proc.stdout + proc.stderr
  _AssertNotKept(secret, run_dir)


def _AssertNotKept(secret, run_dir):
  kept = [os.path.join(d, f) for d, _, files in os.walk(run_dir)
          for f in files]
  assert kept
  for path in kept:
    with open(path, 'rb') as f:
      assert secret.encode() not in f.read(), path


def test_redis_benchmark_run_shows_no_password(tmp_path):
  proc, sampler, run_dir = _RunAndSample(
      tmp_path, ['--load_generator=redis_benchmark'])
  assert any('redis-benchmark' in l for l in sampler.lines)
  _AssertNowhere(sampler.password, sampler, run_dir, proc)
  _AssertNowhere(redis_shard.LoadPassword(sampler.password), sampler, run_dir,
                 proc)


def test_memtier_run_shows_no_password(tmp_path):
  memtier = memtier_replay.Path()
  proc, sampler, run_dir = _RunAndSample(
      tmp_path, [f'--memtier_path={memtier}', '--load_generator=memtier'])
  # `ps` saw the stand-in run with the token where the password goes; it
  # logged in all the same, with what the preloaded library handed it.
  runs = [l for l in sampler.lines
          if memtier in l and '--json-out-file' in l]
  assert runs and all(f'-a {redis_shard.LOAD_USER}:{argv_secret.TOKEN}' in l
                      for l in runs), runs[:3]
  _AssertNowhere(sampler.password, sampler, run_dir, proc)
  # memtier's JSON carries `-a`; what is kept has it masked.
  _AssertNowhere(redis_shard.LoadPassword(sampler.password), sampler, run_dir,
                 proc)


def test_secret_server_option_is_refused_without_echoing_it(tmp_path):
  # requirepass/masterauth are the harness's own (issue 10 point 10): the
  # run is refused before anything exists, and the value is never printed.
  results = str(tmp_path / 'results')
  proc, run_uri = e2e.Run(
      e2e.FAST + ['--load_generator=redis_benchmark',
                  '--redis_server_options=maxmemory-samples 5,'
                  'masterauth Sup3rSecretValue'], results)
  assert proc.returncode == 2, proc.stderr
  assert '"masterauth"' in proc.stderr
  assert 'Sup3rSecretValue' not in proc.stdout + proc.stderr
  assert not os.path.exists(os.path.join(results, run_uri))


def test_secrets_exposure_help_prints_its_usage_and_runs_nothing(tmp_path):
  """`scripts/secrets_exposure.py --help` passed --help on to pkb.py and
  then said it never saw a shard config (exit 1) instead of its usage."""
  script = os.path.join(e2e.REPO, 'scripts', 'secrets_exposure.py')
  env = dict(os.environ, TMPDIR=str(tmp_path))
  for flag in ('--help', '-h'):
    done = subprocess.run([sys.executable, script, flag], capture_output=True,
                          text=True, timeout=60, env=env, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith('usage: '), done.stdout
    assert './scripts/secrets_exposure.py [pkb flags...]' in done.stdout
    assert done.stderr == ''
  assert os.listdir(tmp_path) == []  # No scratch directory: nothing ran.


def test_secrets_exposure_stopped_by_sigterm_stops_pkb_and_leaves_nothing(
    tmp_path, monkeypatch, capsys):
  """`timeout 12 ./scripts/secrets_exposure.py ...` killed the script at
  its SIGTERM: pkb ran on alone (its shards with it) and the script's
  directory (pkb's results and scratch) stayed in /tmp. SIGTERM now
  interrupts it as Ctrl-C does, and its cleanup runs. In process: a
  stand-in pkb whose first poll finds the handler the script set and
  raises what that handler raises."""
  script = script_modules.Script('secrets_exposure')
  seen = {}

  class Pkb:
    returncode = None

    def __init__(self, argv, **unused_kwargs):
      seen['argv'] = argv

    def poll(self):
      if 'handler' not in seen:
        seen['handler'] = signal.getsignal(signal.SIGTERM)
        seen['handler'](signal.SIGTERM, None)
      return self.returncode

    def terminate(self):
      seen['terminated'] = True
      self.returncode = -signal.SIGTERM

    def wait(self):
      return self.returncode

  monkeypatch.setattr(script.subprocess, 'Popen', Pkb)
  monkeypatch.setattr(Pkb, 'stderr', io.StringIO(''), raising=False)
  monkeypatch.setattr(script.tempfile, 'tempdir', str(tmp_path))
  before = signal.getsignal(signal.SIGTERM)
  assert script.main(['--memtier_max_probes=2']) == 130
  assert seen['terminated'] and os.listdir(tmp_path) == []
  assert capsys.readouterr().err == (
      'secrets_exposure: interrupted; pkb was stopped and its directory '
      'removed\n')
  assert signal.getsignal(signal.SIGTERM) == before
