"""Every probe path samples interference, not only the latency-capped search.

Issue 10, point 5, for the paths beside redis_memtier's search: fixed-load
runs, redis_ycsb's probes and redis_enterprise's steps. Each real run here
(./pkb.py on Local, loopback only) starts quiet; once the first probe's line
is printed the test starts a busy loop pinned to the server's core (bounded
in time, killed in finally), so the later probes share the run's cores with
a process foreign to it. Those probes' samples must say `interference`, and
the summary must warn. The quiet first probe is held to "not flagged" only
when the run's cores were quiet just before and after the run (measured
independently, from the cores' busy time): this machine is shared, and other
work on it is real interference. redis_enterprise's cloud steps (steal time)
run through the real samplers over a scripted probe and /proc/stat, and the
one wrapper every path uses (`interference.Sampled`) is checked on its own.
redis_enterprise on Local probes through redis_memtier's own probe driver
(interference_test.py); its real runs (redis_enterprise_benchmark_test.py)
check that every step's samples carry the figures.
"""

import concurrent.futures
import contextlib
import dataclasses
import io
import os
import re
import signal
import subprocess
import sys
import threading
import time
import types

import psutil
import pytest

import e2e_support
import memtier_replay
from perfkitbenchmarker import benchmark_spec
from perfkitbenchmarker import measurement
from perfkitbenchmarker import price_performance
from perfkitbenchmarker import pricing
from perfkitbenchmarker import providers
from perfkitbenchmarker import reporting
from perfkitbenchmarker.enterprise import cloud_run
from perfkitbenchmarker.enterprise import study_steps
from perfkitbenchmarker.linux_benchmarks import redis_enterprise_benchmark
from perfkitbenchmarker.linux_packages import ycsb
from perfkitbenchmarker.load_generators import interference
from scripts import attribution_cases

HOG_LIMIT_S = 40  # The loop ends by itself even if the kill is missed.
_HOG = ('import time\n'
        f'stop = time.monotonic() + {HOG_LIMIT_S}\n'
        'while time.monotonic() < stop:\n'
        '  pass\n')
_FIRST_PROBE = re.compile(r'^\s*probe\s+0\s')
QUIET_PCT = 5.0  # Cores busier than this without the run: a noisy machine.
WARNING = 'WARNING: processes foreign to this run'


def _RunCores():
  """The Local run's cores: its one server VM's, then its client VM's."""
  cores = sorted(os.sched_getaffinity(0))
  if len(cores) < 2:
    pytest.skip('needs two cores: one server VM and one client VM, pinned')
  return cores[:2]


def _BusyPct(cores, seconds=0.3):
  """Percent of `cores`' capacity in use over `seconds` (nothing of ours)."""

  def Busy(times):
    return sum(times) - times.idle - getattr(times, 'iowait', 0.0)

  start, before = time.monotonic(), psutil.cpu_times(percpu=True)
  time.sleep(seconds)
  after, end = psutil.cpu_times(percpu=True), time.monotonic()
  used = sum(Busy(after[c]) - Busy(before[c]) for c in cores)
  return 100.0 * used / ((end - start) * len(cores))


@contextlib.contextmanager
def _Hog():
  """hog.Start(core) starts the busy loop once; it is killed on exit."""
  started = []

  def Start(core):
    if not started:
      started.append(subprocess.Popen(
          ['taskset', '-c', str(core), sys.executable, '-c', _HOG],
          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))

  try:
    yield types.SimpleNamespace(Start=Start, started=started)
  finally:
    for proc in started:
      proc.kill()
      proc.wait(timeout=10)


def _RunHogAfterFirstProbe(args, tmp_path, timeout=120):
  """./pkb.py `args`; the busy loop starts on the server's core once the
  first probe's line is out. Returns stdout, the samples and the busy % of
  the run's cores just before and after the run (the larger)."""
  server_core = _RunCores()[0]
  ambient = _BusyPct(_RunCores())
  run_uri = e2e_support.NewRunUri()
  results = str(tmp_path / 'results')
  with _Hog() as hog:

    def OnLine(line):
      if _FIRST_PROBE.match(line):
        hog.Start(server_core)

    # SIGTERM past the timeout: the run still cleans up its shards.
    done = attribution_cases.Watch(
        e2e_support.Command(args, run_uri, results), timeout, OnLine,
        stop=signal.SIGTERM)
    started = bool(hog.started)
  ambient = max(ambient, _BusyPct(_RunCores()))
  out = done.stdout
  assert done.returncode == 0, out[-3000:] + done.stderr[-3000:]
  assert started, 'no probe line: ' + out[-2000:]
  assert not e2e_support.LeftoverProcesses(results, run_uri)
  return out, e2e_support.Samples(results, run_uri), ambient


def _ProbeFigures(rows, metric='throughput'):
  """probe index -> (foreign_cpu_pct, interference) of `metric`'s samples."""
  figures = {}
  for row in rows:
    labels = e2e_support.Labels(row)
    if row['metric'] != metric or labels.get('ycsb_phase') == 'load':
      continue
    figures.setdefault(int(labels['probe_index']), (
        float(labels['foreign_cpu_pct']), labels['interference'] == 'True'))
  return figures


def _CheckQuietThenLoud(figures, ambient):
  """Probe 0 ran before the busy loop; every later one ran beside it."""
  assert len(figures) >= 2, figures
  loud = [figures[i] for i in sorted(figures) if i > 0]
  # The loop had the server's core to share: a real share of the run's two.
  assert all(flagged and pct > 15 for pct, flagged in loud), figures
  if ambient < QUIET_PCT:
    assert figures[0][1] is False, (figures, ambient)


@pytest.mark.e2e
@pytest.mark.alone
@e2e_support.NeedsTools('redis-server', 'redis-cli', 'taskset')
def test_fixed_load_runs_are_sampled_and_flagged(tmp_path):
  # memtier is its replay stand-in: the busy loop and the samplers are real.
  out, rows, ambient = _RunHogAfterFirstProbe(
      [f'--memtier_path={memtier_replay.Path()}', '--memtier_fixed_load',
       '--memtier_ratios=1:1', '--memtier_threads=1,2',
       '--memtier_clients=2', '--memtier_run_duration=1',
       '--memtier_key_maximum=5000'], tmp_path)
  figures = _ProbeFigures(rows)
  assert sorted(figures) == [0, 1]
  _CheckQuietThenLoud(figures, ambient)
  flagged = [int(e2e_support.Labels(r)['interference_probes'])
             for r in rows if r['metric'] == price_performance.HOURLY_COST]
  assert flagged and all(n >= 1 for n in flagged)
  assert WARNING in out


def _HaveYcsb():
  return bool(e2e_support.FindTool('java')) and os.path.exists(
      os.path.join(ycsb.LOCAL_BUILD_DIR, ycsb.JAR_NAME))


@pytest.mark.e2e
@pytest.mark.alone
@e2e_support.NeedsTools('redis-server', 'redis-cli', 'taskset')
@e2e_support.Needs('java and the YCSB build', _HaveYcsb,
                   'scripts/setup.sh; scripts/build_ycsb.sh')
def test_ycsb_probes_are_sampled_and_flagged(tmp_path):
  out, rows, ambient = _RunHogAfterFirstProbe(
      ['--benchmarks=redis_ycsb', '--ycsb_workloads=workloada',
       '--ycsb_record_count=300', '--ycsb_operation_count=600',
       '--ycsb_max_threads=2', '--ycsb_latency_cap=200'], tmp_path)
  figures = _ProbeFigures(rows)
  assert sorted(figures) == [0, 1]
  _CheckQuietThenLoud(figures, ambient)
  # YCSB's own samples of each probe carry the same figures.
  assert _ProbeFigures(rows, 'ycsb_throughput') == figures
  capped = [e2e_support.Labels(r) for r in rows
            if r['metric'] == price_performance.CAPPED_THROUGHPUT]
  assert len(capped) == 1 and int(capped[0]['interference_probes']) >= 1
  assert WARNING in out


# redis_enterprise on a cloud: the real steal sampler, scripted probes. ------


class _Host:
  """The hypervisor's counters, which every VM's /proc/stat shows."""

  def __init__(self):
    self.busy = self.idle = self.steal = 0
    self._lock = threading.Lock()  # Client VMs probe in threads.

  def Run(self, jiffies, stolen_pct):
    steal = jiffies * stolen_pct // 100
    with self._lock:
      self.steal += steal
      self.busy += (jiffies - steal) // 2
      self.idle += jiffies - steal - (jiffies - steal) // 2

  def ProcStat(self):
    with self._lock:
      line = f'{self.busy} 0 0 {self.idle} 0 0 0 {self.steal} 0 0'
    return f'cpu  {line}\ncpu0 {line}\n'


class _CloudVm:

  CAN = providers.CAPABILITIES['GCP']

  def __init__(self, host, name):
    self.host, self.name = host, name
    self.machine_type = 'n2-standard-32'
    self.zone = 'us-central1-a'
    self.cpu_set = None

  def RemoteCommand(self, command):
    assert command == 'cat /proc/stat'
    return self.host.ProcStat(), ''


class _ScriptedGenerator:
  """Latency grows with threads; the host steals during some steps."""
  NAME = 'memtier_benchmark'

  def __init__(self, host, stolen_by_threads):
    self.host, self.stolen = host, stolen_by_threads

  def Probe(self, endpoints, password, workload, load, duration_s):
    del endpoints, password, workload
    self.host.Run(1000, self.stolen.get(load.threads, 0))
    return measurement.Measurement(
        load=load, throughput=10000.0 * load.threads,
        average_latency_ms=0.3 * load.threads, duration_s=duration_s,
        ops=int(10000 * load.threads * duration_s),
        client_cpu_busy_fraction=0.2)


class _Cluster:

  def TuneProxies(self, threads):
    del threads


def test_enterprise_cloud_steps_are_sampled_for_steal(pkb_flags, monkeypatch):
  # The samplers' start snapshots are taken in the background while a real
  # probe starts; the scripted probe here is instant, so let each snapshot be
  # taken first, or a step's steal can land before its own start snapshot.
  start = interference.ProbeInterference.Start

  def StartAndWait(self, *args):
    start(self, *args)
    concurrent.futures.wait(self._running)  # pylint: disable=protected-access

  monkeypatch.setattr(interference.ProbeInterference, 'Start', StartAndWait)
  pkb_flags.cloud = 'GCP'
  pkb_flags.enterprise_redis_min_threads = 1
  pkb_flags.enterprise_redis_max_threads = 4
  bench = redis_enterprise_benchmark
  out = io.StringIO()
  spec = benchmark_spec.BenchmarkSpec(
      bench, bench.GetConfig({}), 'tsteal', 'GCP', None, pkb_flags,
      pricing.PriceCatalog.Load(), lambda rows: None,
      reporter=reporting.ConsoleReporter(out))
  host = _Host()
  server = _CloudVm(host, 'servers-0')
  server.machine_type = 't2d-standard-16'
  spec.vm_groups = {'servers': [server],
                    'clients': [_CloudVm(host, 'clients-0'),
                                _CloudVm(host, 'clients-1')]}
  opts = bench._Options(spec)  # pylint: disable=protected-access
  study = study_steps.StudyOptions(
      opts, opts.load_records, opts.min_threads, opts.max_threads)
  # During the second step (2 threads) the host steals 30 % of the time.
  generator = _ScriptedGenerator(host, {2: 30})
  # What prepare leaves (the databases at their first shard count and the
  # proxies tuned), so the steps run without re-creating anything.
  spec.deployment = cloud_run.EnterpriseDeployment(
      _Cluster(), 'pw', study, (generator, generator),
      shards=opts.shards_per_db, proxies=opts.proxy_threads)
  samples = bench.Run(spec)
  by_probe = {s.metadata['probe_index']: s.metadata for s in samples
              if s.metric == price_performance.THROUGHPUT}
  assert sorted(by_probe) == [0, 1, 2, 3]  # 1.2 ms at 4 threads: over.
  assert {i: (m['foreign_cpu_pct'], m['interference'])
          for i, m in by_probe.items()} == {
              0: (0.0, False), 1: (30.0, True), 2: (0.0, False),
              3: (0.0, False)}
  capped = next(s for s in samples
                if s.metric == price_performance.CAPPED_THROUGHPUT)
  assert capped.metadata['interference_probes'] == 1
  assert 'used up to 30 % of its cores in 1 of 4 probes' in out.getvalue()


class _FixedSampler:

  def __init__(self, pct=None):
    self.pct, self.calls = pct, []

  def Start(self):
    self.calls.append('Start')

  def Stop(self):
    self.calls.append('Stop')
    if self.pct is None:
      raise OSError('no /proc/stat')
    return self.pct


def test_sampled_adds_the_figures_or_nothing():
  m = measurement.Measurement(measurement.Load(1, 1), 100.0, 0.5,
                              metadata={'load_generator': 'x'})
  sampler = _FixedSampler(42.0)
  measured = interference.Sampled(interference.ProbeInterference([sampler]),
                                  lambda load: m)(m.load)
  assert sampler.calls == ['Start', 'Stop']
  # Every probe is named its limit (attribution.py): none measured here.
  unmeasured = {'limit': 'unmeasured',
                'limit_detail': 'no CPU counters came back from either side'}
  assert measured.metadata == {'load_generator': 'x', 'foreign_cpu_pct': 42.0,
                               'interference': True, **unmeasured}
  # No samplers, or none that answered: the measurement as it was, with
  # its limit.
  for probe in (None, interference.ProbeInterference([_FixedSampler()])):
    same = interference.Sampled(probe, lambda load: m)(m.load)
    assert same.metadata == {'load_generator': 'x', **unmeasured}
    assert dataclasses.replace(same, metadata=m.metadata) == m
