"""The attribution matrix: real runs whose limit is known beforehand.

Each case is a real staged ./pkb.py run (real redis-server, redis-benchmark
or the memtier stand-in, real cgroups this test makes and removes; see
scripts/attribution_cases.py) and asserts on the limit each probe and the
answer are named, never on throughput figures:

  server_quota  shards held to 20 % of a CPU by a cgroup quota: the server
                quota, never client-bound (Local and over SSH)
  client_quota  the load generator held to 20 %: the client quota
  client_hog    a busy loop on the client's cores: disturbed, never
                client-bound (Local and over SSH)
  client_spin   a load generator with a spinning thread: client CPU
  quiet         nothing done: every probe names its limit, with the
                figures it rests on, and they agree with the rule

The decisions rest on throttling and on-CPU counters, which other load on
this shared machine cannot fake; the test's own cgroups run at a high
weight so the case under test gets the CPU it asks for. Skipped cleanly
where there is no writable CPU cgroup controller (not root, or a kernel
without one).
"""

import json

import psutil
import pytest

import e2e_support
import memtier_replay
from perfkitbenchmarker import attribution
from perfkitbenchmarker import verdict
from scripts import attribution_cases
from scripts import cpu_cgroups

from sshd_fixture import sshd  # pylint: disable=unused-import  (fixture)

pytestmark = [
    pytest.mark.e2e,  # Every test here starts a process (tier_guard.py).
    # CI runs as root on a kernel with a CPU controller: missing, it fails.
    e2e_support.Needs('root and a writable CPU cgroup controller (v1 cpu or '
                      'v2 with cpu delegated)', cpu_cgroups.Available),
    e2e_support.NeedsTools('redis-server', 'redis-benchmark', 'taskset')]


# Measures CPU, each case in cgroups of its own at a high weight (even the
# run stage's, so others' load does not starve the client): other tests may
# run beside it, another such test not (conftest). Every case is; the
# file's last test, which measures nothing, is not.
own_cgroups = pytest.mark.own_cgroups


def _Check(result, expected):
  """Most probes name `expected`; none the client unless expected; the
  answer's limit and verdict agree."""
  assert result.probes, (result.stdout[-2000:], result.stderr[-2000:])
  limits = result.limits
  assert all(l in attribution.LIMITS for l in limits), limits
  assert result.Majority() == expected, (limits, result.stdout[-3000:])
  answer = result.answer
  assert answer is not None, result.stderr[-2000:]
  assert answer['limit'] == expected, answer
  flags = answer[verdict.FLAGS_KEY].split(',')
  client = expected in attribution.CLIENT_LIMITS
  if not client:
    assert not any(l in attribution.CLIENT_LIMITS for l in limits), limits
  assert (verdict.CLIENT_BOUND in flags) == client, flags
  # DISTURBED flags an answer one of whose probes others took CPU from. In
  # a case not about it, load beside the test (a CPU-hog flake hunt's busy
  # loop on each core) may still take a probe's, and then the flag is due
  # (hog run 3 at a9f74ab: client_quota's probes named disturbed,
  # client_quota, client_quota): only a probe named disturbed may raise it,
  # and the case's own limit is the majority's and the answer's (above).
  if expected == attribution.DISTURBED:
    assert verdict.DISTURBED in flags, (flags, limits)
  else:
    assert (verdict.DISTURBED not in flags or
            attribution.DISTURBED in limits), (flags, limits)
  # The answer's words name it, with its figures, on the Verdict line.
  line, = [l for l in result.stdout.splitlines() if l.startswith('Verdict:')]
  assert f'limit: {attribution.WORDS[expected]} (' in line, line
  return answer


def _ClientCpuFigures(labels):
  """The figures a client_cpu limit rests on hold (attribution.Decide): the
  client's threads together used >= 90 % of what they may use, or its
  busiest thread was on a CPU >= 90 % of it (of one CPU at most)."""
  return float(labels['client_cpu_used_pct']) >= 90 or float(
      labels['client_busiest_thread_pct']) >= 90 * min(
          1.0, float(labels['client_cpu_allowed']))


def _SharedRun(results, extra=()):
  """One provisioned run several cases share, each a run stage of its own
  (what a case does is undone after it: the quota'd shard moved back, the
  hogs killed): one provision and preload instead of one per case."""
  run_uri = attribution_cases.Prepare(results, extra)
  yield results, run_uri, extra
  attribution_cases.TearDown(run_uri, results, extra)


@pytest.fixture(scope='module')
def local_run(tmp_path_factory):
  yield from _SharedRun(str(tmp_path_factory.mktemp('local')))


def _Shared(case, run, **kwargs):
  results, run_uri, extra = run
  return attribution_cases.RunCase(case, results, extra, run_uri=run_uri,
                                   **kwargs)


# pylint: disable=redefined-outer-name
@own_cgroups
def test_server_quota_is_the_servers_limit_never_the_clients(local_run):
  result = _Shared('server_quota', local_run)
  answer = _Check(result, attribution.SERVER_QUOTA)
  assert float(answer['server_cpu_quota']) == pytest.approx(0.2)
  assert float(answer['server_throttled_pct']) >= 10
  assert 'server cgroup throttled in' in answer['limit_detail']
  # A server limit is a server figure: no client flag on its probes.
  assert all(p['client_saturated'] == 'False' for p in result.probes)


@own_cgroups
def test_client_quota_is_the_clients_limit(local_run):
  result = _Shared('client_quota', local_run)
  answer = _Check(result, attribution.CLIENT_QUOTA)
  assert float(answer['client_cpu_quota']) == pytest.approx(0.2)
  assert result.returncode == verdict.EXIT_UNCONFIRMED
  assert 'CLIENT QUOTA' in result.stdout


@own_cgroups
def test_a_hog_on_the_clients_core_is_disturbed_not_client_bound(local_run):
  result = _Shared('client_hog', local_run)
  answer = _Check(result, attribution.DISTURBED)
  assert float(answer['client_foreign_cpu_pct']) >= 10, answer
  assert float(answer['client_thread_wait_pct']) >= 10, answer


@own_cgroups
def test_a_spinning_client_thread_is_client_cpu(tmp_path, local_run):
  # The run stage chooses its load generator again (deployment.Restore):
  # this one's is the memtier stand-in, the shared run's shards its server.
  path = memtier_replay.Executable(str(tmp_path), spinning_thread=True)
  results, run_uri, extra = local_run
  result = attribution_cases.RunCase(
      'client_spin', results, [*extra, f'--memtier_path={path}'],
      run_uri=run_uri)
  answer = _Check(result, attribution.CLIENT_CPU)
  # The client CPU rule's figures, the busiest thread's or all threads'
  # (attribution.Decide), not the busiest thread's alone: a quiet run at
  # 98d941e named it on the spinner at 89.3 %, a tenth of its core gone to
  # others, and the client's threads at 90 % or more together.
  assert _ClientCpuFigures(answer), answer
  assert all(_ClientCpuFigures(p) for p in result.probes
             if p['limit'] == attribution.CLIENT_CPU), result.probes


@own_cgroups
def test_a_quiet_run_says_what_it_is_with_its_figures(local_run):
  result = _Shared('quiet', local_run)
  assert result.probes, result.stderr[-2000:]
  for labels in result.probes:
    assert labels['limit'] in attribution.LIMITS, labels
    assert labels['limit_detail'], labels
    for key in ('client_busiest_thread_pct', 'client_cpu_allowed',
                'server_main_thread_pct', 'server_cpu_allowed'):
      assert key in labels, (key, labels)
    # The figures the probe rests on agree with the limit it names.
    name = labels['limit']
    if name == attribution.CLIENT_CPU:
      assert _ClientCpuFigures(labels), labels
    elif name == attribution.SERVER_CPU:
      assert float(labels['server_cpu_used_pct']) >= 90 or float(
          labels['server_main_thread_pct']) >= 90 * min(
              1.0, float(labels['server_cpu_allowed'])) or (
                  'worker threads' in labels['limit_detail'])
    elif name == attribution.DISTURBED:
      assert float(labels['client_thread_wait_pct']) >= 10 or float(
          labels['server_thread_wait_pct']) >= 10
    else:
      # Nothing here holds a quota: never a quota limit.
      assert name not in (attribution.CLIENT_QUOTA, attribution.SERVER_QUOTA)
  assert result.answer['limit'] in attribution.LIMITS
  line, = [l for l in result.stdout.splitlines() if l.startswith('Verdict:')]
  assert 'limit: ' in line


@pytest.fixture(scope='module')
def ssh_run(tmp_path_factory, sshd):
  """A run shared as local_run's is, over SSH: a static VM file naming the
  loopback sshd twice (server and client)."""
  tmp_path = tmp_path_factory.mktemp('ssh')
  machine = {'ip_address': sshd.host, 'user_name': sshd.user,
             'keyfile_path': sshd.user_key, 'ssh_port': sshd.port}
  path = tmp_path / 'static.json'
  path.write_text(json.dumps([machine, machine]))
  yield from _SharedRun(str(tmp_path / 'r'), [f'--static_vm_file={path}'])


@own_cgroups
def test_over_ssh_server_quota_is_the_servers_limit(ssh_run, sshd):
  result = _Shared('server_quota', ssh_run, client_pids=[sshd.pid])
  answer = _Check(result, attribution.SERVER_QUOTA)
  assert float(answer['server_cpu_quota']) == pytest.approx(0.2)


@own_cgroups
def test_over_ssh_a_hog_on_the_clients_cores_is_disturbed(ssh_run):
  _Check(_Shared('client_hog', ssh_run), attribution.DISTURBED)


def test_the_cases_leave_the_shared_runs_as_they_found_them(local_run,
                                                            ssh_run):
  # Every case undid what it did: the runs' shards still up (the quota'd
  # ones moved back out of their cgroup), no hog left.
  for results, run_uri, _ in (local_run, ssh_run):
    pids = attribution_cases.ShardPids(results, run_uri)
    assert pids, run_uri
    for pid in pids:
      assert psutil.Process(pid).status() != psutil.STATUS_ZOMBIE, pid
  hogs = [p.pid for p in psutil.Process().children(recursive=True)
          if p.cmdline()[-1:] == [attribution_cases.HOG_CODE]]
  assert hogs == []
