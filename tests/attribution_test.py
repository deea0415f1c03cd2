"""The one rule that names a probe's limit, and the counters it reads.

The rule (attribution.Decide) on scripted sides, row by row of its table;
the snapshot parser on recorded cgroup v2 text (this machine has no v2 CPU
controller) and on v1 read live from a cgroup this test makes and removes;
the server sampler's shell run for real against a throttled process.
"""

import os
import signal
import subprocess
import sys
import time

import pytest

import e2e_support
import snapshot_text

from perfkitbenchmarker import attribution
from perfkitbenchmarker import shell_scripts
from perfkitbenchmarker import verdict
from perfkitbenchmarker.load_generators import client_cpu
from scripts import cpu_cgroups

T = attribution.ThreadCpu
Side = attribution.SideCpu


def _Client(on_cpu, wait=0.0, **kw):
  return Side('client', (T('memtier_benchmark', on_cpu, wait, True),), 2.0,
              cores=kw.pop('cores', 1), **kw)


def _Server(main, workers=(), wait=0.0, **kw):
  threads = (T('redis-server', main, wait, True),) + tuple(
      T(f'io_thd_{i}', w, 0.0) for i, w in enumerate(workers, 1)) + (
          T('bio_close_file', 0.0, 0.0),)
  return Side('server', threads, 2.0, cores=kw.pop('cores', 1), **kw)


@pytest.mark.parametrize('client, server, name', [
    # Quota: throttled in >= 10 % of the periods, whatever the CPU figures.
    (_Client(0.19, 0.8, quota_cores=0.2, periods=20, throttled_periods=19,
             throttled_s=1.5), _Server(0.3), attribution.CLIENT_QUOTA),
    (_Client(0.3), _Server(0.2, wait=0.8, quota_cores=0.2, periods=20,
                           throttled_periods=20, throttled_s=1.6,
                           foreign_pct=60.0), attribution.SERVER_QUOTA),
    # Throttled, but in the bursts a starved server runs in (on a CPU 15 %
    # of the window under a 0.5 CPU quota): others took it, not the quota.
    (_Client(0.07, 0.47, foreign_pct=25.0),
     _Server(0.15, wait=0.48, quota_cores=0.5, periods=308,
             throttled_periods=57, throttled_s=0.02, foreign_pct=53.1),
     attribution.DISTURBED),
    (_Client(0.3), _Server(0.15, quota_cores=0.5, periods=308,
                           throttled_periods=57, throttled_s=0.02),
     attribution.LATENCY),
    # A quota shared with processes the side does not count (the matrix's
    # client_quota case: the whole run stage in the cgroup): 39 % of it seen
    # used, yet throttled in 54 % of the periods, 0.66 s of the window.
    (_Client(0.078, 0.33, quota_cores=0.2, periods=26, throttled_periods=14,
             throttled_s=0.66, foreign_pct=17.7), _Server(0.1),
     attribution.CLIENT_QUOTA),
    # CPU: on a CPU >= 90 % of what a thread may use.
    (_Client(0.95), _Server(0.5), attribution.CLIENT_CPU),
    (_Client(0.5), _Server(0.97), attribution.SERVER_CPU),
    # Every busy io-thread saturated, the main thread not.
    (_Client(0.4), _Server(0.6, workers=(0.93, 0.95), cores=4),
     attribution.SERVER_CPU),
    # Three server threads on one core use all of it between them.
    (_Client(0.4), _Server(0.4, workers=(0.3, 0.25)),
     attribution.SERVER_CPU),
    # Waiting behind foreign processes is never client-bound.
    (_Client(0.3, 0.65, foreign_pct=62.0), _Server(0.3),
     attribution.DISTURBED),
    # Foreign CPU on cores the threads never waited for takes nothing.
    (_Client(0.3, 0.02, foreign_pct=40.0, cores=4), _Server(0.3),
     attribution.LATENCY),
    (_Client(0.3), _Server(0.4), attribution.LATENCY),
])
def test_the_rule_table(client, server, name):
  limit = attribution.Decide([client], [server])
  assert limit.name == name, limit
  assert limit.detail
  assert limit.client_limited == (name in attribution.CLIENT_LIMITS)


def test_quota_beats_the_cpu_rule_and_is_named_with_its_figures():
  # A thread held to 0.2 CPU that uses all of it is on a CPU 100 % of what
  # it may use: the quota is what limits it, and the words say so.
  client = _Client(0.2, 0.78, quota_cores=0.2, periods=21,
                   throttled_periods=21, throttled_s=1.43)
  limit = attribution.Decide([client], [_Server(0.1)])
  assert limit.name == attribution.CLIENT_QUOTA
  assert 'throttled in 100 % of its 21 CPU periods' in limit.detail
  assert 'quota 0.2 CPUs' in limit.detail
  md = limit.Metadata()
  assert md['limit'] == 'client_quota'
  assert md['client_cpu_allowed'] == 0.2
  assert md['client_throttled_pct'] == 100.0
  assert md['server_main_thread_pct'] == 10.0
  assert attribution.Short(md) == 'client quota (throttled 100 %)'


def test_a_server_limit_is_confirmable_and_official():
  md = attribution.Decide([_Client(0.4)], [_Server(0.97)]).Metadata()
  assert 'server main thread redis-server on a CPU 97 %' in md['limit_detail']
  assert verdict.IsOfficial(md)
  assert not verdict.ClientLimited(md) and not verdict.Disturbed(md)
  # Figures above 10 % foreign CPU with no wait: still official (the old
  # `interference` flag alone no longer decides once a limit is there).
  assert verdict.IsOfficial({**md, 'interference': True})
  disturbed = attribution.Decide(
      [_Client(0.3, 0.6, foreign_pct=50.0)], [_Server(0.3)]).Metadata()
  assert not verdict.IsOfficial(disturbed) and verdict.Disturbed(disturbed)
  # Samples recorded before limits keep their old reading.
  assert not verdict.IsOfficial({'client_saturated': 'True'})
  assert not verdict.IsOfficial({'interference': 'True'})


def test_an_answers_limit_is_what_most_of_its_probes_name():
  quota = attribution.Limit(attribution.SERVER_QUOTA, 'held')
  other = attribution.Limit(attribution.DISTURBED, 'noise')
  answer = attribution.OfAnswer([quota, other, quota])
  assert answer.name == attribution.SERVER_QUOTA
  assert answer.detail == '2 of 3 probes: held'
  assert attribution.OfAnswer([]) is None
  assert attribution.Decide([], []).name == attribution.UNMEASURED


# What the snapshot shell prints for a process in a v2 cgroup with a
# quota of 0.3 CPU (cpu.max and cpu.stat as a v2 kernel writes them),
# before and after a 2 s window: 20 periods, 18 throttled, 1.31 s.
_SERVICE = '/sys/fs/cgroup/system.slice/valkey.service'


def _V2(wall, up, idle, ticks, run, wait, usage, periods, throttled, usec):
  return snapshot_text.Text(wall, up, [
      f'cpu  100 0 0 {idle} 0 0 0 0 0 0', f'cpu0 50 0 0 {idle} 0 0 0 0 0 0',
      f'cpu1 50 0 0 {idle} 0 0 0 0 0 0'], snapshot_text.Thread(
          812, 812, '812 (valkey-server) S 1 812 812 0 -1 4194560 0 0 0 0 '
          f'{ticks} 0 0 0 20 0 4 0 5000 0 0', f'{run} {wait} 100') + [
              {'pid': 812, 'cpus': '\t0-1'}] + snapshot_text.Cgroup(
                  812, _SERVICE, {'cpu.max': '30000 100000', 'cpu.stat': (
                      f'usage_usec {usage}\nuser_usec 10\nsystem_usec 10\n'
                      f'nr_periods {periods}\nnr_throttled {throttled}\n'
                      f'throttled_usec {usec}\nnr_bursts 0\nburst_usec 0')}) +
      snapshot_text.Cgroup(812, '/sys/fs/cgroup/system.slice', {
          'cpu.max': 'max 100000',
          'cpu.stat': 'nr_periods 0\nnr_throttled 0\nthrottled_usec 0'}))


def test_cgroup_v2_counters_from_recorded_text():
  before = client_cpu.Snapshot.Parse(_V2(
      wall=100.0, up=500.0, idle=0, ticks=0, run=0, wait=0, usage=0,
      periods=100, throttled=40, usec=2_000_000))
  after = client_cpu.Snapshot.Parse(_V2(
      wall=102.0, up=502.0, idle=100, ticks=60, run=int(0.6e9),
      wait=int(1.3e9), usage=600000, periods=120, throttled=58,
      usec=3_310_000))
  assert after.affinity[812] == (0, 1)
  level = after.cgroups['/sys/fs/cgroup/system.slice/valkey.service']
  assert level.quota_cores == pytest.approx(0.3)
  assert after.cgroups['/sys/fs/cgroup/system.slice'].quota_cores is None
  side = client_cpu.SideOf(before, after, 'server', pids={812})
  assert side.cores == 2 and side.quota_cores == pytest.approx(0.3)
  assert side.allowed == pytest.approx(0.3)
  assert (side.periods, side.throttled_periods) == (20, 18)
  assert side.throttled_s == pytest.approx(1.31)
  assert side.threads[0].main and side.threads[0].on_cpu == pytest.approx(0.3)
  assert side.threads[0].wait == pytest.approx(0.65)
  assert attribution.Decide([], [side]).name == attribution.SERVER_QUOTA


def test_cpu_lists_and_the_window_a_series_covers():
  assert client_cpu.CpuList('0-3,8,10-11\n') == (0, 1, 2, 3, 8, 10, 11)
  snaps = [client_cpu.Snapshot(t, t, {}, {}) for t in (0.0, 0.2, 0.4, 0.6,
                                                        0.8, 1.0)]
  first, last = client_cpu.WindowOf(snaps, 0.1, 0.9)
  assert (first.wall_s, last.wall_s) == (0.2, 0.8)
  first, last = client_cpu.WindowOf(snaps, 0.45, 0.55)
  assert (first.wall_s, last.wall_s) == (0.4, 0.6)
  assert client_cpu.WindowOf(snaps, None, None) == (snaps[0], snaps[-1])
  assert client_cpu.WindowOf(snaps[:1], 0.0, 1.0) is None


needs_cgroups = e2e_support.Needs(
    'root and a writable CPU cgroup controller', cpu_cgroups.Available)


@pytest.mark.e2e
@pytest.mark.alone
@needs_cgroups
def test_the_sampler_shell_reads_a_live_throttled_cgroup(tmp_path):
  """A spinning process in a cgroup of this test's own, held to 0.2 CPU:
  the real sampler script reads its quota and throttling (v1 here; v2
  where the kernel has the CPU controller there)."""
  with cpu_cgroups.CpuCgroup(0.2) as group:
    spin = subprocess.Popen([sys.executable, '-c', (
        'import time\nend = time.time() + 20\nwhile time.time() < end: '
        'pass')])
    try:
      group.Add(spin.pid)
      base = str(tmp_path / 'server-cpu')
      sampler = subprocess.Popen(
          ['bash', '-c', shell_scripts.Text(client_cpu.SAMPLER), 'sampler'] +
          client_cpu.SamplerArgs([spin.pid], base, 0.2, 30,
                                 str(tmp_path / 'no-run')),
          stdout=subprocess.PIPE, text=True)
      assert sampler.stdout.readline() == 'ready\n'
      # Until the quota has held it back in 8 more periods (0.8 s here),
      # not a fixed 1.5 s: the window the sampler reads has them, however
      # loaded the machine (the check below wants 5).
      throttled, deadline = group.Throttled(), time.monotonic() + 20
      while (group.Throttled() < throttled + 8 and
             time.monotonic() < deadline):
        time.sleep(0.05)
      text = subprocess.run(
          ['bash', '-c', client_cpu.StopSamplerCommand(base)],
          capture_output=True, text=True, check=True, timeout=30).stdout
      sampler.wait(timeout=30)
      sampler.stdout.close()
    finally:
      spin.kill()
      spin.wait()
  assert os.listdir(tmp_path) == []  # The stop took its files away.
  series = client_cpu.ParseSeries(text)
  assert len(series) >= 3 and text.rstrip().endswith(client_cpu.SERIES_END)
  assert series[0].foreign is not None and series[-1].foreign is not None
  side = client_cpu.SideOf(series[0], series[-1], 'server', pids={spin.pid})
  assert side.quota_cores == pytest.approx(0.2)
  assert side.cores == len(os.sched_getaffinity(0))
  # Every period it ran in, it used its quota up: throttling is the
  # process's own counter, which no other load on this machine can fake.
  assert side.periods >= 5 and side.throttled_fraction >= 0.5, side
  assert side.threads[0].on_cpu <= 0.25
  assert attribution.Decide([], [side]).name == attribution.SERVER_QUOTA
  assert not os.path.exists(group.path)


@pytest.mark.e2e
def test_a_sampler_held_up_past_its_stop_ends_and_leaves_no_file(tmp_path):
  """A sampler held up (SIGSTOP here; a starved machine in a hog flake
  hunt) while its stop wakes it, gives up waiting and removes its files:
  once it runs again it ends although its `read -t` lost the wake line,
  and its last snapshots go to the file it opened, which the stop
  removed, not to a new 'server-cpu.out' left in the run's directory."""
  base = str(tmp_path / 'server-cpu')
  sampler = subprocess.Popen(
      ['bash', '-c', shell_scripts.Text(client_cpu.SAMPLER), 'sampler'] +
      client_cpu.SamplerArgs([os.getpid()], base, 0.2, 30,
                             str(tmp_path / 'no-run')),
      stdout=subprocess.PIPE, text=True)
  try:
    assert sampler.stdout.readline() == 'ready\n'
    time.sleep(0.1)  # In its `read -t 0.2`, as it mostly is.
    sampler.send_signal(signal.SIGSTOP)
    text = subprocess.run(
        ['bash', '-c', client_cpu.StopSamplerCommand(base, wait_s=0.3)],
        capture_output=True, text=True, check=True, timeout=30).stdout
    assert client_cpu.ParseSeries(text)  # what was there when it gave up
    assert os.listdir(tmp_path) == []
  finally:
    sampler.send_signal(signal.SIGCONT)
    # Its next check (0.2 s) sees the stop; before, it ran its 30 s out.
    sampler.wait(timeout=10)
    sampler.stdout.close()
  assert os.listdir(tmp_path) == []


def test_a_disturbed_probe_line_names_the_samples_foreign_cpu_pct():
  """Recorded on a static machine beside a CPU hog: the line's figure is the
  sample's foreign_cpu_pct (the probe's, steal included), never a smaller
  per-side one."""
  md = {'limit': 'disturbed', 'foreign_cpu_pct': 70.0,
        'client_foreign_cpu_pct': 66.0, 'interference': True}
  assert attribution.Short(md) == 'disturbed (foreign 70 %)'
  assert attribution.Short({'limit': 'disturbed', 'foreign_cpu_pct': 66.0,
                            'client_foreign_cpu_pct': 66.0}) == (
                                'disturbed (foreign 66 %)')
