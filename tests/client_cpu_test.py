"""The load generator's own threads decide saturation, not the whole VM.

Issue 17 point 1: on a 32-vCPU client one fully busy load-generator thread
is 3 % of the VM, so the whole-VM rule never fired on cloud VMs. Issue 23:
the time a thread is ON a CPU decides, never its runnable time (a thread
waiting behind other processes is not busy), nor the VM's or a core's busy
share (others' processes fill those too). Checked on snapshots in the probe
script's format (a recorded 32-core case, thread births and reused thread
ids), then on the real probe script run here with a real spinning thread
and a real sleeping one.
"""

import dataclasses
import os
import subprocess
import sys

import pytest

import snapshot_text
from perfkitbenchmarker import attribution
from perfkitbenchmarker import measurement
from perfkitbenchmarker import shell_scripts
from perfkitbenchmarker import providers
from perfkitbenchmarker import vm_util
from perfkitbenchmarker.load_generators import client_cpu
from perfkitbenchmarker.load_generators import concurrent
from perfkitbenchmarker.load_generators import driver

HZ = 100


def _Snapshot(wall, uptime, cores, threads):
  """Probe-script text: `cores` is [(busy, idle)] jiffies per core;
  `threads` is [(pid, tid, name, start_ticks, cpu_ticks, run_ns, wait_ns)]."""
  busy = sum(b for b, _ in cores)
  idle = sum(i for _, i in cores)
  rows = [f'cpu  {busy} 0 0 {idle} 0 0 0 0 0 0']
  rows += [f'cpu{n} {b} 0 0 {i} 0 0 0 0 0 0' for n, (b, i) in
           enumerate(cores)]
  records = []
  for pid, tid, name, start, cpu, run, wait in threads:
    stat = ([str(tid), f'({name})', 'R', '1'] + ['0'] * 9 +
            [str(cpu), '0'] + ['0'] * 6 + [str(start)] + ['0'] * 20)
    records += snapshot_text.Thread(pid, tid, ' '.join(stat),
                                    f'{run} {wait} 10')
  return snapshot_text.Text(wall, uptime, rows, records, HZ)


def test_one_busy_thread_on_32_cores_is_saturation_the_vm_rule_missed():
  # 2 s window: core 5 runs memtier's busy thread (97 % on a CPU), the
  # other 31 cores idle; a second memtier thread is mostly asleep.
  before = _Snapshot(100.0, 5000.0, [(0, 0)] * 32,
                     [(40, 41, 'memtier_benchm', 499000, 0, 0, 0),
                      (40, 42, 'memtier_benchm', 499000, 0, 0, 0)])
  cores = [(0, 200)] * 32
  cores[5] = (194, 6)
  after = _Snapshot(102.0, 5002.0, cores,
                    [(40, 41, 'memtier_benchm', 499000, 194, 1.94e9, 0.02e9),
                     (40, 42, 'memtier_benchm', 499000, 10, 0.1e9, 0.0)])
  cpu = client_cpu.MeasureText(before, after, None)
  assert cpu.busy_fraction < 0.04  # What the old rule compared with 90 %.
  assert cpu.busiest_thread == 'memtier_benchm'
  assert abs(cpu.busiest_thread_fraction - 0.97) < 1e-6
  assert abs(cpu.busiest_thread_runnable_fraction - 0.98) < 1e-6
  assert cpu.busiest_core == 'cpu5' and cpu.busiest_core_fraction == 0.97
  assert attribution.Decide([cpu.side], []).name == attribution.CLIENT_CPU
  # Through the probe driver's rule: flagged, and the metadata says why.
  m = driver.WithClientCpu(measurement.Measurement(
      measurement.Load(1, 8), 1000.0, 0.5, client_cpu=cpu,
      client_cpu_busy_fraction=cpu.busy_fraction))
  assert m.client_saturated
  assert m.metadata['client_saturated_by'] == attribution.CLIENT_CPU
  assert m.metadata['client_busiest_thread_pct'] == 97.0
  assert m.metadata['client_busiest_thread_runnable_pct'] == 98.0
  assert m.metadata['client_busiest_core_pct'] == 97.0


def test_a_thread_starved_of_cpu_is_not_saturated():
  before = _Snapshot(0.0, 10.0, [(0, 0)] * 4, [])
  after = _Snapshot(2.0, 12.0, [(100, 100)] * 4, [
      # Wanted a CPU the whole time but got one for only half of it: the
      # CPU went to others, the tool was not its own limit.
      (7, 7, 'redis-benchmark', 1000, 100, 1.0e9, 0.95e9),
      (9, 9, 'redis-benchmark', 1000, 20, 0.2e9, 0.01e9)])
  cpu = client_cpu.MeasureText(before, after, None)
  assert cpu.busiest_thread_fraction == 0.5
  assert cpu.side.waited_most.wait == 0.475
  assert attribution.Decide([cpu.side], []).name == attribution.LATENCY
  # With foreign CPU measured on its cores, it is what it is: disturbed.
  disturbed = dataclasses.replace(cpu.side, foreign_pct=45.0)
  assert attribution.Decide([disturbed], []).name == attribution.DISTURBED


def test_a_busy_core_alone_is_not_the_clients_limit():
  before = _Snapshot(0.0, 10.0, [(0, 0), (0, 0)], [])
  after = _Snapshot(1.0, 11.0, [(99, 1), (10, 90)], [])
  cpu = client_cpu.MeasureText(before, after, None)
  assert cpu.busiest_core_fraction == 0.99 and cpu.busy_fraction < 0.9
  # No load-generator thread seen: nothing to decide on.
  assert cpu.side is None
  m = driver.WithClientCpu(measurement.Measurement(
      measurement.Load(1, 8), 1000.0, 0.5, client_cpu=cpu,
      client_cpu_busy_fraction=cpu.busy_fraction))
  assert not m.client_saturated
  # Pinned to core 1 only: core 0 is not the client's.
  pinned = client_cpu.MeasureText(before, after, [1])
  assert pinned.busiest_core == 'cpu1' and pinned.busy_fraction == 0.1


def test_threads_born_late_reused_or_seen_briefly():
  before = _Snapshot(0.0, 100.0, [(0, 0)], [
      (5, 6, 'old', 1000, 50, 0.5e9, 0.0)])
  after = _Snapshot(2.0, 102.0, [(100, 100)], [
      # tid 6 now names a thread born at 101.0 s (start 10100 ticks): its
      # 0.9 s of CPU are over its 1 s of life, not over the window.
      (5, 6, 'new', 10100, 90, 0.9e9, 0.0),
      # Born 0.1 s before the end: too briefly seen to judge.
      (5, 8, 'blip', 10190, 10, 0.1e9, 0.0)])
  cpu = client_cpu.MeasureText(before, after, None)
  assert cpu.threads_seen == 1
  assert cpu.busiest_thread == 'new'
  assert abs(cpu.busiest_thread_fraction - 0.9) < 1e-9
  assert client_cpu.MeasureText('', after, None) is None


def _RunScript(tmp_path, command, window_s):
  """The probe script run on `command`: (its ClientCpu, when the tool
  ended). The command may use {stat1}, the window's snapshot file."""
  base = str(tmp_path / 'probe')
  script = concurrent.Script(base, [command.format(stat1=base + '.stat1')],
                             timeout_s=30, cpu_window_s=window_s)
  with open(base + '.sh', 'w') as f:
    f.write(script)
  out, err, rc = vm_util.RunLocal(f'bash {base}.sh', timeout=60)
  assert rc == 0, err
  bundle = concurrent.ParseBundle(out)
  code, _, ended = bundle['rc.0'].split()
  assert code == '0'
  return (client_cpu.MeasureText(bundle['stat0'], bundle['stat1'], None),
          float(ended))

def _ProbeInWorkspace(tmp_path, commands, **script_args):
  """The probe script run on `commands` inside a run workspace of its own
  (so the foreign scan leaves them out): its output bundle."""
  workspace = tmp_path / 'pkb-run.x'
  workspace.mkdir()
  base = str(workspace / 'probe')
  script = concurrent.Script(base, commands, timeout_s=30,
                             run_root=str(workspace), **script_args)
  with open(base + '.sh', 'w') as f:
    f.write(script)
  out, err, rc = vm_util.RunLocal(f'bash {base}.sh', timeout=60)
  assert rc == 0, err
  return concurrent.ParseBundle(out)



@pytest.mark.e2e
@pytest.mark.alone
@pytest.mark.usefixtures('shipped_scripts')
def test_probe_script_measures_a_real_spinning_thread(tmp_path):
  # Spins until the window's snapshot is taken (30 s at most), then 0.5 s
  # more: the window ends while it spins, however loaded the machine.
  spin = vm_util.QuoteAll([sys.executable, '-c', (
      'import os, sys, time\n'
      'end = time.time() + 30\n'
      'while time.time() < end and not os.path.exists(sys.argv[1]): pass\n'
      'end = time.time() + 0.5\n'
      'while time.time() < end: pass'), '{stat1}'])
  cpu, ended = _RunScript(tmp_path, spin, 1.0)
  assert cpu.threads_seen >= 1
  # The 1 s window, taken while the thread still spun.
  assert cpu.window_s >= 0.9 and cpu.window_end < ended
  # Always runnable, whatever else this machine runs.
  assert cpu.busiest_thread_runnable_fraction >= 0.9, cpu
  # On a CPU all the time unless others took it: then it waited, and the
  # rule says so (this machine is shared).
  limit = attribution.Decide([cpu.side], [])
  if cpu.busiest_thread_fraction >= 0.9:
    assert limit.name == attribution.CLIENT_CPU, limit
  else:
    assert limit.name in (attribution.DISTURBED, attribution.LATENCY), limit
  assert cpu.side.cores == len(os.sched_getaffinity(0))
  assert cpu.busiest_core_fraction is not None
  assert len(os.sched_getaffinity(0)) >= 1


@pytest.mark.e2e
@pytest.mark.alone
@pytest.mark.usefixtures('shipped_scripts')
def test_probe_script_sees_a_sleeping_tool_as_idle(tmp_path):
  cpu, _ = _RunScript(tmp_path, 'sleep 1.2', 0.8)
  assert cpu.threads_seen == 1 and cpu.busiest_thread == 'sleep'
  assert cpu.busiest_thread_runnable_fraction < 0.2, cpu
  # (The machine itself may be busy with other work: only the thread rule
  # is about the tool.)
  assert attribution.Decide([cpu.side], []).name != attribution.CLIENT_CPU


def test_cloud_clients_default_the_adaptive_threads_to_their_vcpus(pkb_flags):
  # pylint: disable=g-import-not-at-top
  from perfkitbenchmarker.study import options
  from perfkitbenchmarker.study import search_runner
  pkb_flags.cloud = 'GCP'
  opts = options.RedisStudyOptions.FromFlags(pkb_flags)
  assert search_runner.Policy(opts, client_vcpus=32).max_threads == 32
  pkb_flags.cloud = 'Local'  # Local pins its cores: the user's setting.
  local = options.RedisStudyOptions.FromFlags(pkb_flags)
  assert search_runner.Policy(local, client_vcpus=32).max_threads is None
  pkb_flags.cloud = 'AWS'
  pkb_flags['memtier_min_threads'].parse('2')  # The user's threads stay.
  explicit = options.RedisStudyOptions.FromFlags(pkb_flags)
  assert search_runner.Policy(explicit, client_vcpus=64).max_threads is None


class _Vm:

  def __init__(self, cloud):
    self.CAN = providers.CapabilitiesOf(cloud)  # pylint: disable=invalid-name


@pytest.mark.e2e
@pytest.mark.usefixtures('shipped_scripts')
def test_the_foreign_scan_leaves_out_pkb_itself_on_this_machine(tmp_path):
  # pkb works from the user's directory, not the run's workspace: on a Local
  # run its own CPU must not count as a process foreign to the run (it did
  # for a while, adding pkb's own 1-3 % to every probe's foreign_cpu_pct).
  assert client_cpu.OwnPid(_Vm('Local')) == str(os.getpid())
  # Elsewhere pkb's PID names some other process of that machine.
  assert client_cpu.OwnPid(_Vm('GCP')) == ''
  workspace = tmp_path / 'pkb-run.x'
  workspace.mkdir()

  def Scanned(own_pid):
    script = shell_scripts.Text('snapshot.sh') + 'snapshot scan\n'
    out = subprocess.run(['bash', '-c', script], cwd='/', check=True,
                         capture_output=True, text=True, timeout=60,
                         env=dict(os.environ, PKB_RUN_ROOT=str(workspace),
                                  PKB_OWN_PID=own_pid or '0')).stdout
    return {p.pid for p in client_cpu.Snapshot.Parse(out).foreign.values()}

  assert os.getpid() in Scanned('')
  assert os.getpid() not in Scanned(str(os.getpid()))


def test_a_recorded_series_reads_whole_and_cut_short(data_path):
  # scripts/cpu_sampler.sh's real output (tests/data/README.md).
  with open(data_path('cpu_sampler_series.jsonl')) as f:
    text = f.read()
  series = client_cpu.ParseSeries(text)
  assert len(series) == 9 and text.endswith(client_cpu.SERIES_END + '\n')
  assert [s.foreign is not None for s in series] == [True] + [False] * 7 + [
      True]
  assert len(series[0].foreign) == 20 and series[0].clk_tck == 100
  assert series[0].affinity == {29913: (0, 1), 29912: (0, 1)}
  side = client_cpu.SideOf(series[0], series[-1], 'server', pids={29912})
  assert [t.name for t in side.threads] == ['python']
  assert side.threads[0].on_cpu == pytest.approx(0.2, abs=0.01)
  assert side.quota_cores == 0.2 and side.cores == 2
  assert (side.periods, side.throttled_periods) == (17, 17)
  assert side.throttled_s == pytest.approx(1.324334903)
  # Cut short mid-line: the snapshots before it still read, the cut one
  # is left out; a head of another version is not read at all.
  assert len(client_cpu.ParseSeries(text[:len(text) // 2])) == 4
  with pytest.raises(ValueError):
    client_cpu.Snapshot.Parse(text.replace('{"v":3,', '{"v":2,', 1))
  # Cut short between two lines (a stop that gave up on a starved
  # sampler, hog flake hunt at c8994cb): the last snapshot has the
  # spinner's threads but not yet its affinity and cgroup. Read, it gave
  # a server side with no CPUs allowed and no quota; it is left out.
  last = text.rindex('{"v":3,')
  cut = text.index('{"pid":29912,"cpus"', last)
  short = client_cpu.ParseSeries(text[:cut])
  assert len(short) == 8 and short == series[:8]
  assert all(29912 in s.affinity for s in short)
  with pytest.raises(ValueError):
    client_cpu.Snapshot.Parse(text[last:cut])
  # A part appended after the WHOLE line (probe.sh's first snapshot gets
  # its foreign scan so) is read once it ends with its own, and left out
  # when cut short: no scan is better than one that missed processes.
  first = text[:text.index('{"v":3,', 1)]
  body, scan = first.split('{"scan":true}\n')  # scan: its lines, WHOLE
  body += '{"whole":true}\n'
  whole = client_cpu.Snapshot.Parse(body + '{"scan":true}\n' + scan)
  assert len(whole.foreign) == 20
  scan_lines = scan.splitlines(keepends=True)
  cut_scan = ''.join(scan_lines[:5])  # four foreign processes, no WHOLE
  partial = client_cpu.Snapshot.Parse(body + '{"scan":true}\n' + cut_scan)
  assert partial.foreign is None and partial.affinity == whole.affinity
  with pytest.raises(ValueError):
    client_cpu.Snapshot.Parse('[1]\n')


def _ForeignLine(cpu_ticks, core=0):
  """A foreign process's stat line (pid 77, started at tick 1234) that has
  used `cpu_ticks` and last ran on `core`."""
  fields = (['R', '1', '7', '7'] + ['0'] * 7 + [str(cpu_ticks), '0'] +
            ['0'] * 6 + ['1234'] + ['0'] * 16 + [str(core)] + ['0'] * 15)
  return f'77 (hog) {" ".join(fields)}'


def test_the_foreign_share_is_over_the_scans_own_time():
  # probe.sh appends the last scan once the tools have ended when its
  # sampler took none while they ran (hog flake hunt 8): that scan began a
  # second after its snapshot here, and the hog's ticks run until then.
  # Half a core for 1.2 s over the 0.2 s between the snapshots read 100 %
  # (300 %, capped); over the 1.2 s between the scans it is 50 %.
  rows = ['cpu  0 0 0 0 0 0 0 0 0 0', 'cpu0 0 0 0 0 0 0 0 0 0 0']

  def Pair(up0, up1):
    return [client_cpu.Snapshot.Parse(snapshot_text.Text(
        wall, uptime, rows, snapshot_text.Scan([_ForeignLine(ticks)], up)))
            for wall, uptime, ticks, up in ((1000.0, 100.0, 0, up0),
                                            (1000.2, 100.2, 60, up1))]

  assert client_cpu.ForeignPct(*Pair(100.0, 101.2), [0]) == 50.0
  # A scan that does not say when it began (records before it did): over
  # the snapshots' window, as before.
  assert client_cpu.ForeignPct(*Pair(None, None), [0]) == 100.0


@pytest.mark.e2e
@pytest.mark.usefixtures('shipped_scripts')
def test_a_probe_that_ends_before_a_scanned_snapshot_still_gets_one(tmp_path):
  # Without a window, the sampler's snapshots have no foreign scan (the
  # first one's is scan0's). A probe that ended before a scanned one kept
  # a snapshot without: its foreign share unknown, a client that waited for
  # a CPU 83-100 % of the window was `latency`, not `disturbed` (hunt 8,
  # over SSH with a hog). A 30 s SAMPLE_EVERY_S keeps the first snapshot.
  bundle = _ProbeInWorkspace(tmp_path, ['sleep 1'], sample_every_s=30)
  after = client_cpu.Snapshot.Parse(bundle['stat1'])
  assert after.foreign is not None
  # Scanned once the tool had ended, after the snapshot it belongs to.
  assert after.scan_uptime_s >= after.uptime_s
  cpu = client_cpu.MeasureText(bundle['stat0'], bundle['stat1'], None)
  assert cpu.threads_seen == 1 and cpu.side.foreign_pct is not None


@pytest.mark.e2e
@pytest.mark.usefixtures('shipped_scripts')
def test_a_first_scan_the_probe_outlasts_is_still_read(tmp_path):
  # The sampler scans for the first snapshot after the tools start; the end
  # of the probe stops it with a TERM that waits for the scan. Its handler
  # exited before the scan's WHOLE line, so a scan that a probe outlasted
  # (seconds on a starved machine) was not read: no foreign share (hunt 8,
  # the kept raw output of a 'latency' probe whose client waited 69 %).
  # A scan of 1 s here (snapshot.sh's fscan kept from redefinition), over
  # a tool of 0.3 s.
  slow_scan = ('fscan() { sleep 1; echo \'{"scan":true,"uptime":1.0}\'; }; '
               'readonly -f fscan')
  bundle = _ProbeInWorkspace(tmp_path, ['sleep 0.3'], setup_lines=[slow_scan])
  before = client_cpu.Snapshot.Parse(bundle['stat0'])
  assert before.foreign == {} and before.scan_uptime_s == 1.0


@pytest.mark.e2e
@pytest.mark.usefixtures('shipped_scripts')
def test_a_slow_first_scan_does_not_cut_the_clients_window_short(tmp_path):
  # The sampler took the first snapshot's foreign scan itself, between its
  # first snapshot (0.1 s in) and the next: a scan that outlasted the tools
  # (seconds on a starved machine) left the first as the last, and the
  # client's figures read over 0.11 s of a 0.69 s probe (hunt 9, over SSH
  # beside 20 busy loops: 5 of 9 probes). Here the first scan takes 1.5 s
  # (snapshot.sh's fscan kept from redefinition; the later ones are quick)
  # over a tool of 1.2 s sampled every 0.2 s: the last snapshot taken while
  # it ran is its last one, not its first.
  slow_first_scan = (
      'fscan() { read -r up _ < /proc/uptime; [ -e "$base.scanned" ] || '
      '{ : > "$base.scanned"; sleep 1.5; }; '
      'echo "{\\"scan\\":true,\\"uptime\\":$up}"; }; readonly -f fscan')
  bundle = _ProbeInWorkspace(tmp_path, ['sleep 1.2'],
                             setup_lines=[slow_first_scan], sample_every_s=0.2)
  before, after = (client_cpu.Snapshot.Parse(bundle[k])
                   for k in ('stat0', 'stat1'))
  assert after.uptime_s - before.uptime_s >= 0.8, (before.uptime_s,
                                                  after.uptime_s)
  # Both scans read, the first over its whole 1.5 s.
  assert before.foreign is not None and after.foreign is not None
  assert after.scan_uptime_s - before.scan_uptime_s >= 1.0


@pytest.mark.e2e
@pytest.mark.usefixtures('shipped_scripts')
def test_a_tool_whose_workers_ended_is_not_the_last_snapshot(tmp_path):
  # redis-benchmark's worker thread ends, then its main thread prints the
  # report: on a starved machine a snapshot in that tail became the last
  # one, its client the main thread alone, 0.3 % on a CPU, `latency` (hunt
  # 9, over SSH beside 20 busy loops). Here a worker of 0.8 s, then 0.6 s
  # of the main thread alone, sampled every 0.2 s: the last snapshot is one
  # taken while the worker ran.
  tool = (f'{sys.executable} -c "import threading, time; '
          't = threading.Thread(target=time.sleep, args=(0.8,)); t.start(); '
          't.join(); time.sleep(0.6)"')
  bundle = _ProbeInWorkspace(tmp_path, [tool], sample_every_s=0.2)
  after = client_cpu.Snapshot.Parse(bundle['stat1'])
  assert len(after.threads) == 2, after.threads
