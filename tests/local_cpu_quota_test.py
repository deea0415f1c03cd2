"""A default Local run on 2 cores holds its server to a CPU quota, and the
cgroup it makes for that is recorded and removed whatever ends the run.

Each run is `./pkb.py` as a user types it, under `taskset -c <2 cores>` so
that it sees a 2-core machine wherever the test runs: the plan line says
how it split the machine, the server's processes run in the run's cgroup
with the quota, the samples and the summary name the quota, and the cgroup
is gone after the run; killed with SIGKILL (nothing of the run left to
clean up), the cgroup stays in the record and `--run_stage=teardown`
removes it. (The planning itself: tests/local_split_test.py.)
"""

import os
import signal
import subprocess
import sys

import pytest

import e2e_support as e2e
import pkb_forkserver
from perfkitbenchmarker.providers.local import cpu_quota

pytestmark = [
    pytest.mark.e2e,
    # CI runs as root on a kernel with a CPU controller: missing, it fails.
    e2e.Needs('root and a writable CPU cgroup controller (v1 cpu or v2 with '
              'cpu delegated)', lambda: cpu_quota.Version() is not None),
    e2e.NeedsTools('redis-server', 'redis-benchmark', 'taskset'),
    e2e.Needs('2 cores', lambda: len(os.sched_getaffinity(0)) >= 2)]

SPLIT_LINE = ('Local split of 2 cores: servers-0 on core {0} held to 50 % of '
              'it by a CPU quota, clients-0 on core {1} ')


def _TwoCores():
  return sorted(os.sched_getaffinity(0))[:2]


def _Command(cores, args, run_uri, results_dir):
  return (['taskset', '-c', ','.join(map(str, cores))] +
          e2e.Command(e2e.FAST + list(args), run_uri, results_dir))


def _Quota(results_dir, run_uri):
  entries = [e for e in e2e.Record(results_dir, run_uri)['resources']
             if e['kind'] == cpu_quota.KIND]
  assert len(entries) == 1, entries
  return entries[0]


def _ShardPid(results_dir, run_uri):
  for entry in e2e.Record(results_dir, run_uri)['resources']:
    if entry['kind'] == 'redis_process' and entry['data'].get('pid'):
      return entry['data']['pid']
  raise AssertionError('no shard pid in the record')


def _Cgroups(pid):
  with open(f'/proc/{pid}/cgroup') as f:
    return f.read()


def _QuotaFiles(path):
  """(quota, period) in microseconds, as the kernel holds them."""
  v1 = os.path.join(path, 'cpu.cfs_quota_us')
  if os.path.exists(v1):
    with open(v1) as q, open(os.path.join(path, 'cpu.cfs_period_us')) as p:
      return int(q.read()), int(p.read())
  with open(os.path.join(path, 'cpu.max')) as f:
    quota, period = f.read().split()
    return int(quota), int(period)


def test_a_finished_run_measures_under_the_quota_and_removes_it(tmp_path):
  cores, run_uri = _TwoCores(), e2e.NewRunUri()
  proc = pkb_forkserver.Run(_Command(cores, [], run_uri, str(tmp_path)),
                            timeout=240,
                            cwd=e2e.REPO)
  assert proc.returncode in (0, 4), proc.stderr[-3000:]
  assert SPLIT_LINE.format(*cores) in proc.stdout, proc.stdout[:2000]
  # The summary says what the figure is: a 0.5-CPU server's.
  assert 'local, server 0.5 CPU (priced as' in proc.stdout
  assert 'Server CPU: the server was given 0.5 CPU (50 % of a core)' in (
      proc.stdout)
  rows = e2e.Samples(str(tmp_path), run_uri)
  probes = [e2e.Labels(r) for r in rows if r['metric'] == 'throughput']
  assert probes
  # Each probe read the server's cgroup quota (attribution's counters).
  assert all(float(p['server_cpu_quota']) == 0.5 for p in probes), probes
  capped = [e2e.Labels(r) for r in rows
            if r['metric'] == 'latency_capped_throughput']
  assert capped and capped[0]['servers_cpu_quota'] == '0.5'
  entry = _Quota(str(tmp_path), run_uri)
  assert entry['status'] == 'deleted'
  assert not os.path.exists(entry['data']['path'])
  assert e2e.LeftoverProcesses(str(tmp_path), run_uri, settle_s=0.5) == []


def test_a_killed_run_leaves_its_quota_to_teardown(tmp_path):
  cores, run_uri = _TwoCores(), e2e.NewRunUri()
  run = pkb_forkserver.Popen(_Command(cores, ['--memtier_run_duration=3'],
                                      run_uri, str(tmp_path)),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, cwd=e2e.REPO)
  seen = []
  try:
    for line in run.stdout:  # Bounded by the run's own length.
      seen.append(line)
      if 'probe ' in line or 'Searching' in line:
        break
    assert run.poll() is None, ''.join(seen)
    assert SPLIT_LINE.format(*cores) in ''.join(seen)
    entry = _Quota(str(tmp_path), run_uri)
    path = entry['data']['path']
    assert entry['status'] == 'created' and os.path.isdir(path)
    assert _QuotaFiles(path) == (1000, 2000)
    # The server runs in it from its start (it daemonized inside).
    shard = _ShardPid(str(tmp_path), run_uri)
    assert os.path.basename(path) in _Cgroups(shard)
    run.send_signal(signal.SIGKILL)
    run.wait(timeout=10)
    assert os.path.isdir(path)  # Nothing of the run was left to remove it.
  finally:
    teardown = e2e.KillAndTearDown(run, run_uri, str(tmp_path))
  assert teardown.returncode == 0, teardown.stderr
  assert not os.path.exists(path)
  assert _Quota(str(tmp_path), run_uri)['status'] == 'deleted'
  assert e2e.LeftoverProcesses(str(tmp_path), run_uri, settle_s=0.5) == []


if __name__ == '__main__':
  sys.exit(pytest.main([__file__, '-q']))
