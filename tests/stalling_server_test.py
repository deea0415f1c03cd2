"""A server with periodic stalls: the p99 answer sits below the average one.

Issue 34 point 7. The test stops the run's redis-server (SIGSTOP) for
STALL_MS every INTERVAL_MS while ./pkb.py searches, once capping the
average and once p99 at the same CAP_MS. A request that arrives in a stall
waits up to STALL_MS, longer than the cap: the average hardly notices, the
p99 does once enough requests are caught (every connection's request waits
out a stall, so more connections put more of them over the cap), so the
p99 search stops at far fewer connections. The
average answer's own p99 is over the cap: capping the average would have
published a figure whose tail breaks a p99 cap.

This needs a load generator whose percentiles are faithful: a real
memtier_benchmark (PKB_TEST_MEMTIER=/path, else memtier_benchmark on
PATH). The replay stand-in replays recorded percentiles that no stall can
move and redis-benchmark's leave out client queueing (the run refuses a
percentile cap with it), so without a real memtier the test is skipped, in
CI too (CI has no memtier: README "Run the tests").
"""

import os
import signal
import subprocess
import threading
import time

import pytest

import e2e_support as e2e
import pkb_forkserver
from perfkitbenchmarker import verdict
from scripts import cpu_cgroups

_MEMTIER = (os.environ.get('PKB_TEST_MEMTIER') or
            e2e.FindTool('memtier_benchmark'))
# Without a real memtier (CI: no registry has it) the test skips at
# collection, never taking the machine alone (the alone lock) to do so.
pytestmark = [pytest.mark.e2e] + ([
    pytest.mark.alone,
    e2e.Needs('root and a writable CPU cgroup controller (the runs hold the '
              'server to half a CPU)', cpu_cgroups.Available)] if _MEMTIER
    else [pytest.mark.skip(
        reason='a real memtier_benchmark is not on PATH and PKB_TEST_MEMTIER '
               'is unset: faithful percentiles are what this test is about '
               '(module docstring)')])

# A stall twice the cap, 10 % of the time: a request caught in one waits up
# to STALL_MS. The cap is far above this shared machine's own tail (p99 of
# 8-25 ms at 1-128 connections at load average ~20), so the stalls decide.
CAP_MS = 20.0
STALL_MS = 40.0
INTERVAL_MS = 360.0
# Every search here ends well within this; the staller stops with the run.
RUN_TIMEOUT_S = 600
# Both runs on the split this test was measured with, the server held to
# half a CPU: by default a 2-core machine holds it so for an average cap
# but not for a percentile cap (split.py), and the answers are compared.
ARGS = ['--memtier_curve_rate_percents=', f'--memtier_latency_cap={CAP_MS}',
        '--memtier_key_maximum=20000', '--memtier_adaptive_min_connections=1',
        '--local_server_cpu_quota=0.5']


def _ServerPid(results_dir, run_uri, proc):
  """The run's redis-server, once its record names it (None: the run
  ended first)."""
  while proc.poll() is None:
    try:
      record = e2e.Record(results_dir, run_uri)
    except (OSError, ValueError):
      record = {'resources': []}
    for entry in record['resources']:
      pid = (entry.get('data') or {}).get('pid')
      if entry['kind'] in e2e.SHARD_KINDS and pid and e2e.ProcessAlive(
          pid, 'redis-server'):
        return int(pid)
    time.sleep(0.1)
  return None


class Staller:
  """Stops and continues one process on a schedule until told to stop;
  leaves it running, whatever happens."""

  def __init__(self, pid: int):
    self.pid = pid
    self.stalls = 0
    self._stop = threading.Event()
    self._thread = threading.Thread(target=self._Run, daemon=True)

  def _Run(self):
    deadline = time.monotonic() + RUN_TIMEOUT_S
    try:
      while not self._stop.is_set() and time.monotonic() < deadline:
        os.kill(self.pid, signal.SIGSTOP)
        try:
          time.sleep(STALL_MS / 1000)
        finally:
          os.kill(self.pid, signal.SIGCONT)
        self.stalls += 1
        self._stop.wait(INTERVAL_MS / 1000)
    except ProcessLookupError:
      pass  # The run stopped its server.

  def __enter__(self):
    self._thread.start()
    return self

  def __exit__(self, *unused):
    self._stop.set()
    self._thread.join(timeout=5)
    try:
      os.kill(self.pid, signal.SIGCONT)
    except ProcessLookupError:
      pass


def _StalledRun(tmp_path, memtier, statistic):
  results_dir = str(tmp_path / statistic)
  run_uri = e2e.NewRunUri()
  proc = pkb_forkserver.Popen(
      e2e.Command([f'--memtier_path={memtier}',
                   f'--latency_cap_statistic={statistic}'] + ARGS,
                  run_uri, results_dir),
      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
      cwd=e2e.REPO)
  try:
    pid = _ServerPid(results_dir, run_uri, proc)
    assert pid, 'the run ended before its server started'
    with Staller(pid) as staller:
      out, err = proc.communicate(timeout=RUN_TIMEOUT_S)
  finally:
    if proc.poll() is None:
      proc.kill()
      proc.communicate()
  assert staller.stalls > 10, staller.stalls
  assert proc.returncode == 0, out + err  # --accept_unconfirmed (e2e)
  rows = e2e.Samples(results_dir, run_uri)
  answers = [e2e.Labels(r) | {'value': r['value']} for r in rows
             if r['metric'] == 'latency_capped_throughput']
  assert answers, out + err
  return out, answers[0]


def test_the_p99_answer_sits_below_the_average_answer_under_stalls(tmp_path):
  memtier = _MEMTIER
  by_average_run, by_average = _StalledRun(tmp_path, memtier, 'avg')
  by_p99_run, by_p99 = _StalledRun(tmp_path, memtier, 'p99')
  print(f'avg answer: {by_average["value"]:,.0f} ops/s at '
        f'{by_average["connections"]} connections, avg '
        f'{by_average["average_latency_ms"]} p99 '
        f'{by_average["p99_latency_ms"]} ms, {by_average["verdict"]}')
  print(f'p99 answer: {by_p99["value"]:,.0f} ops/s at '
        f'{by_p99["connections"]} connections, avg '
        f'{by_p99["average_latency_ms"]} p99 {by_p99["p99_latency_ms"]} ms, '
        f'{by_p99["verdict"]}')
  assert f'under {CAP_MS:g} ms p99 latency' in by_p99_run
  assert by_p99['latency_cap_statistic'] == 'p99'
  # The average answer's tail breaks the p99 cap its average keeps.
  assert float(by_average['average_latency_ms']) < CAP_MS
  assert float(by_average['p99_latency_ms']) >= CAP_MS
  # The p99 answer: below in load, not above in throughput (on this
  # machine the 0.5-CPU server's throughput is flat from about 8-16
  # connections, so both answers can sit on that plateau), its p99 under
  # the cap.
  assert int(by_p99['connections']) < int(by_average['connections'])
  # Two runs' figures compare only if neither was disturbed: others' CPU
  # understates a disturbed run's throughput, as its verdict says (beside a
  # busy loop on each core the average run's was 9,346 ops/s at 64
  # connections, the p99 run's 18,034 at 32). Rules out the p99 search
  # reporting more than the average search at the same stalls.
  if not any(verdict.DISTURBED in a[verdict.FLAGS_KEY].split(',')
             for a in (by_average, by_p99)):
    assert by_p99['value'] <= by_average['value'] * 1.1
  assert float(by_p99['p99_latency_ms']) < CAP_MS
  # The verdict agrees: confirmed only with the repeats' merged p99 under
  # the cap (the figure above is that merged p99), never on the average.
  assert float(by_p99['capped_latency_ms']) == float(
      by_p99['p99_latency_ms'])
  if by_p99['verdict'] == 'confirmed':
    assert f'repeats under the {CAP_MS:g} ms p99 cap' in by_p99_run
