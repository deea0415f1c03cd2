"""memtier's staircase search and warm-up, through a recorded client VM.

memtier_benchmark is not installed here (it is in no Debian release), so
these tests put a test double at the VM boundary: `RecordedClientVm` records
the shell scripts the load generator would run and, when the generator reads
the files memtier would have written, serves the outputs recorded from the
real tool (tests/data, see its README). Everything above the VM - command
building, the memtier parser, StaircaseSteps, the search and the samples -
is the real code.
"""

import base64
import io
import re
import types

import pytest

import snapshot_text

from perfkitbenchmarker import attribution
from perfkitbenchmarker import benchmark_spec
from perfkitbenchmarker import errors
from perfkitbenchmarker import measurement
from perfkitbenchmarker import pricing
from perfkitbenchmarker import reporting
from perfkitbenchmarker import shell_scripts
from perfkitbenchmarker import verdict as verdict_lib
from perfkitbenchmarker import verdict
from perfkitbenchmarker import virtual_machine
from perfkitbenchmarker.linux_benchmarks import redis_memtier_benchmark as bench
from perfkitbenchmarker.load_generators import base
from perfkitbenchmarker.load_generators import commands
from perfkitbenchmarker.load_generators import concurrent
from perfkitbenchmarker.load_generators import driver as driver_lib
from perfkitbenchmarker.load_generators import interference
from perfkitbenchmarker.load_generators import memtier
from perfkitbenchmarker.load_generators import redis_benchmark
from perfkitbenchmarker.load_generators import redis_benchmark_results
from perfkitbenchmarker.search import driver as search_driver
from perfkitbenchmarker.search import staircase
from perfkitbenchmarker.study import deployment
from perfkitbenchmarker.study import options as options_lib
from perfkitbenchmarker.study import search_runner

STAIRCASE = 'memtier_single_staircase_c16-256_step16_2s'
UNDER_CAP = 'memtier_single_t1c32_tt5_under1ms'
ENDPOINT = base.Endpoint('127.0.0.1', 7001)
Load = measurement.Load



def _Bundle(parts):
  """The bundle text probe.sh prints for `parts` (ParseBundle's inverse)."""
  return ''.join(f'{key} {base64.b64encode(text.encode()).decode()}\n'
                 for key, text in parts.items()) + concurrent.BUNDLE_END + '\n'


def _BundleRequests(script):
  """(key, path) of every part a probe script puts in its bundle, in order."""
  base, _, _, _, _, _, count, *rest = shell_scripts.Args(script)
  count = int(count)
  keys = [('stat0', f'{base}.stat0'), ('stat1', f'{base}.stat1')]
  keys += [(f'{kind}.{i}', f'{base}.{i}.{kind}')
           for i in range(count) for kind in ('rc', 'out', 'err')]
  return keys + [(f'file.{k}', path) for k, path in enumerate(rest[count:])]


class RecordedClientVm:
  """A client VM double serving recorded outputs (see module docstring).

  `outputs` maps 'staircase' and 'probe' to (json, stdout) texts; which one
  a run gets depends on whether its script passed --clients-start; every
  process's stderr is `stderr` (a recorded one). CPU counters advance by
  `busy_fraction` of each reading's jiffies.
  """

  CAN = virtual_machine.Capabilities()  # A remote machine.

  def __init__(self, outputs, busy_fraction=0.5, name='clients-0',
               stderr='', rc='0 100.0 132.5'):
    self.name = name
    self.stderr = stderr
    self.rc = rc  # probe.sh's: exit status, then start and end times.
    self.machine_type = 'local'
    self.scratch_dir = '/recorded'
    self.internal_ip = '127.0.0.1'
    self.num_cpus = 1
    self.cpu_set = None
    self.outputs = outputs
    self.scripts = []
    self.files = {}
    self.installed = set()
    self._busy_fraction = busy_fraction
    self._jiffies = 0.0

  def Pinned(self, command):
    return command

  def Install(self, package_name, **settings):
    del settings
    self.installed.add(package_name)

  def WriteFile(self, path, content, mode=0o600):
    del mode
    self.files[path] = content

  def RemoteCommand(self, command, timeout=None, ignore_failure=False,
                    env=None, what=None, stdin=None):
    del timeout, ignore_failure, env, what, stdin
    # Probe scripts are written to a file and run from it: record the text.
    script = next((text for path, text in self.files.items()
                   if path in command), None)
    self.scripts.append(script if script is not None else command)
    return '', ''

  def RemoteCommandWithReturnCode(self, command, timeout=None, env=None,
                                  stdin=None):
    del timeout, env, stdin
    if '--version' in command:
      return 'memtier_benchmark 255.255.255\n', '', 0
    script = next((text for path, text in self.files.items()
                   if path in command), None)
    if script is None:
      return '', '', 0
    # A probe script: its bundle, with the recorded files and CPU counters
    # read at the window's start and end.
    self.scripts.append(script)
    stats = {'stat0': self._Stat(100.0), 'stat1': self._Stat(132.5)}
    return _Bundle({
        key: stats[key] if key in stats else self.ReadFile(path)
        for key, path in _BundleRequests(script)}), '', 0

  def _Stat(self, when):
    busy, total = self.CpuTimes()
    return snapshot_text.Text(when, when,
                              [f'cpu  {busy} 0 0 {total - busy} 0 0 0 0'])

  def ReadFile(self, path):
    kind = 'staircase' if '--clients-start' in self.scripts[-1] else 'probe'
    json_text, stdout = self.outputs[kind]
    if path.endswith('.json'):
      return json_text
    if path.endswith('.out'):
      return stdout
    if path.endswith('.rc'):
      return self.rc
    if path.endswith('.err'):
      return self.stderr
    return ''

  def CpuTimes(self):
    self._jiffies += 1000
    return self._jiffies * self._busy_fraction, self._jiffies


def _Fixture(data_path, stem):
  with open(data_path(stem + '.json')) as f:
    json_text = f.read()
  with open(data_path(stem + '.txt')) as f:
    return json_text, f.read()


@pytest.fixture
def client_vm(data_path):
  return RecordedClientVm({'staircase': _Fixture(data_path, STAIRCASE),
                           'probe': _Fixture(data_path, UNDER_CAP)})


def _Generator(vm, warmup_s=0):
  return memtier.MemtierGenerator(vm, 'memtier_benchmark', warmup_s=warmup_s)


def test_staircase_run_gives_one_measurement_per_step(client_vm, pkb_flags):
  del pkb_flags
  steps = _Generator(client_vm).Staircase(
      [ENDPOINT], 'secret', base.Workload(), Load(1, 256),
      commands.StaircaseSpec(16, 16, 2))
  script = client_vm.scripts[-1]
  for fragment in ('--clients-start 16', '--clients-step 16',
                   '--step-duration 2', '--test-time 32', '-c 256'):
    assert fragment in script
  assert [m.load for m in steps] == [Load(1, c) for c in range(16, 257, 16)]
  # The run's last second is short (memtier ends it at a whole second):
  # the last step lasted 1.88 s.
  assert [m.duration_s for m in steps] == [2] * 15 + [pytest.approx(1.88)]
  assert steps[3].metadata['staircase_step'] == 3
  assert steps[3].metadata['staircase_clients_step'] == 16
  assert steps[0].metadata['warmup_supported'] is True


def test_staircase_policy_picks_best_step_and_confirms_it():
  steps = [measurement.Measurement(Load(1, c), t, lat, duration_s=2, ops=t * 2)
           for c, t, lat in ((16, 100e3, 0.2), (32, 120e3, 0.5),
                             (48, 118e3, 0.9), (64, 110e3, 1.4))]
  confirmations = []

  def Measure(load):
    confirmations.append(load)
    return measurement.Measurement(load, 119e3, 0.6, duration_s=2, ops=238e3)

  policy = staircase.StaircasePolicy(tuple(m.load for m in steps),
                                            confirm_repeats=2)
  result = search_driver.FindLatencyCappedMaximum(
      staircase.ReplayThenMeasure(steps, Measure), 1.0, policy)
  assert [p.role for p in result.probes] == ['search'] * 4 + ['confirm'] * 2
  assert result.best.load == Load(1, 32)
  assert confirmations == [Load(1, 32)] * 2
  assert result.capped_throughput == pytest.approx(119e3)
  assert result.confirmed_throughput_ci95 == pytest.approx(0.0)
  assert 'confirmed 1x32' in result.stop_reason


def test_staircase_policy_backs_off_when_the_repeats_fail():
  steps = [measurement.Measurement(Load(1, c), t, lat)
           for c, t, lat in ((16, 100e3, 0.2), (32, 120e3, 0.95))]

  def Measure(load):
    return measurement.Measurement(load, 100e3, 1.1 if load.clients == 32
                                   else 0.3)

  result = search_driver.FindLatencyCappedMaximum(
      staircase.ReplayThenMeasure(steps, Measure), 1.0,
      staircase.StaircasePolicy((Load(1, 16), Load(1, 32)),
                                       confirm_repeats=1))
  assert result.best.load == Load(1, 16)
  assert 'not under the 1.0 ms cap' in result.stop_reason
  with pytest.raises(ValueError, match='at least one step'):
    staircase.StaircasePolicy(())


def _Spec(client_vm, flag_values):
  out = io.StringIO()
  emitted = []
  spec = benchmark_spec.BenchmarkSpec(
      bench, bench.GetConfig({}), 'stairs', 'Local', None, flag_values,
      pricing.PriceCatalog.Load(), emitted.extend,
      reporter=reporting.ConsoleReporter(out))
  server = RecordedClientVm({}, name='servers-0')
  spec.vm_groups = {'servers': [server], 'clients': [client_vm]}
  shard = types.SimpleNamespace(vm=server, port=7001, pid=1, config_path='c')
  spec.deployment = deployment.Deployment(
      engine='redis', engine_version='7', cluster_mode=False,
      shards_per_vm=1, primaries=1, processes=(shard,),
      generators=(_Generator(client_vm),), password='secret')
  return spec, out


def test_benchmark_staircase_run_reports_steps_and_confirmed_answer(
    client_vm, pkb_flags):
  pkb_flags.memtier_staircase = True
  pkb_flags.memtier_run_duration = 5
  pkb_flags.memtier_confirm_repeats = 2
  spec, out = _Spec(client_vm, pkb_flags)
  samples = bench.Run(spec)
  probes = [s for s in samples if s.metric == 'throughput']
  steps = [s for s in probes if s.metadata['probe_role'] == 'search']
  # The steps up to the first one over the cap; none past it.
  clients = [s.metadata['clients'] for s in steps]
  assert clients == list(range(16, clients[-1] + 1, 16))
  assert clients[-1] < 256
  assert [s.metadata['under_latency_cap'] for s in steps] == (
      [True] * (len(steps) - 1) + [False])
  assert all(s.metadata['client_cpu_scope'] == 'whole staircase'
             for s in steps)
  # Read from the scripted snapshots: half of the client's jiffies busy.
  assert {s.metadata['client_cpu_busy_pct'] for s in steps} == {50.0}
  # Every step is named its limit (attribution.py), over the whole run.
  assert all(s.metadata['limit'] in attribution.LIMITS for s in steps)
  # Two repeats count; a repeat disturbed by foreign CPU (this machine is
  # shared) is run again, at most twice, and stays among the probes.
  confirms = [s for s in probes if s.metadata['probe_role'] == 'confirm']
  capped = next(s for s in samples
                if s.metric == 'latency_capped_throughput')
  excluded = [int(i) for i in capped.metadata.get(
      'disturbed_repeats_excluded', '').split(',') if i]
  assert len(confirms) == 2 + len(excluded) <= 2 + 2
  assert all(verdict.Disturbed(s.metadata) for s in probes
             if s.metadata['probe_index'] in excluded)
  capped = next(s for s in samples
                if s.metric == 'latency_capped_throughput')
  # The best step under the cap is 64 clients (131,510 ops/s); its repeats
  # (the 5 s probe recorded at 115,541 ops/s) are what is reported.
  assert capped.metadata['clients'] == 64
  assert capped.metadata['search_policy'] == 'staircase'
  assert capped.value == pytest.approx(577850 / 5.001)  # The real 5.001 s.
  assert capped.metadata['confirmation_repeats'] == 2
  perf = next(s for s in samples if s.metric == 'price_performance')
  assert perf.value == pytest.approx(capped.value / 0.084492, rel=1e-6)
  assert len([s for s in client_vm.scripts if '--clients-start' in s]) == 1
  assert 'staircase' in out.getvalue()


def test_a_staircase_search_keeps_to_the_probe_budget(client_vm, pkb_flags):
  """--memtier_max_probes is a hard bound on probes; a staircase's steps and
  its repeats are probes as the adaptive search's are. With
  --memtier_max_probes=4 a real staircase search under a CPU hog ran 9 (3
  steps, 6 repeats), then its hold and curve. The steps its ramp measured
  (8 here: 16 to 128 clients) are all kept, however few the budget."""
  pkb_flags.memtier_staircase = True
  pkb_flags.memtier_run_duration = 5
  pkb_flags.memtier_confirm_repeats = 2
  for budget, steps, repeats in ((9, 8, 1), (3, 8, 0)):
    pkb_flags.memtier_max_probes = budget
    spec, _ = _Spec(client_vm, pkb_flags)
    samples = bench.Run(spec)
    roles = [s.metadata['probe_role'] for s in samples
             if s.metric == 'throughput']
    assert (roles.count('search'), roles.count('confirm')) == (steps,
                                                                repeats)
    capped = next(s for s in samples
                  if s.metric == 'latency_capped_throughput')
    assert capped.metadata['verdict'] == 'unconfirmed'
    assert capped.metadata['verdict_reason'].startswith(
        f'probe budget of {steps + repeats} spent')


def test_staircase_refuses_redis_benchmark(pkb_flags):
  pkb_flags.memtier_staircase = True
  pkb_flags.load_generator = 'redis_benchmark'
  with pytest.raises(errors.UsageError, match='redis-benchmark has no '
                     'staircase mode'):
    bench.CheckPrerequisites({})
  pkb_flags.load_generator = 'auto'
  generators = [redis_benchmark.RedisBenchmarkGenerator(RecordedClientVm({}))]
  with pytest.raises(errors.PrerequisiteError, match='no staircase mode'):
    search_runner.RequireStaircaseGenerator(generators)


def test_supports_staircase_by_version():
  assert memtier.SupportsStaircase('2.3.0')
  assert memtier.SupportsStaircase('255.255.255')  # source build placeholder
  assert memtier.SupportsStaircase('2.1.3') is False
  assert memtier.SupportsStaircase('unknown') is None


def test_memtier_probe_runs_warmup_on_top_of_the_duration(client_vm,
                                                          pkb_flags):
  del pkb_flags
  m = _Generator(client_vm, warmup_s=2).Probe(
      [ENDPOINT], 'secret', base.Workload(), Load(1, 32), duration_s=3)
  assert '--test-time 5' in client_vm.scripts[-1]
  # The real run (5.001 s, replies in flight included) less the warm-up.
  assert m.duration_s == pytest.approx(3.001)
  assert [s.warmup for s in m.per_second][:3] == [True, True, False]
  assert m.ops == sum(s.ops for s in m.per_second if not s.warmup)
  assert m.metadata['warmup_s'] == 2
  assert m.metadata['warmup_supported'] is True


def _RecordedFailure(data_path, stem, load, duration_s,
                     rc='0 100.0 132.5', err_stem=None) -> str:
  """The one line a memtier probe fails with on the recorded outputs of
  `stem` (its JSON and stdout) and the stderr of `err_stem` (its own by
  default), ended as `rc` says."""
  with open(data_path((err_stem or stem) + '.err')) as f:
    vm = RecordedClientVm({'probe': _Fixture(data_path, stem)},
                          stderr=f.read(), rc=rc)
  with pytest.raises(errors.ProcessError) as failure:
    _Generator(vm).Probe([ENDPOINT], 'secret', base.Workload(), load,
                         duration_s=duration_s)
  return str(failure.value)


def test_a_probe_whose_requests_got_error_replies_has_no_figure(
    data_path, pkb_flags):
  """A shard past its maxmemory refuses every SET with -OOM; memtier counts
  the refusals as operations (its recorded run: 812 'ops', 408 of them
  refused) and says so only on stderr. Such a probe was published as
  throughput (a real run: the hold's 70,575 ops/s, every SET refused); it
  stops the run in one line now, as redis-benchmark's exit 1 does."""
  del pkb_flags
  assert _RecordedFailure(
      data_path, 'memtier_single_t1c4_tt2_rate100_oom', Load(1, 4), 2) == (
      "memtier_benchmark on clients-0 got 408 error replies in place of data "
      "(the first: -OOM command not allowed when used memory > 'maxmemory'.):"
      " memtier counts them as operations, so its figures would count "
      "requests the server refused as served; check the shards' maxmemory "
      "(--redis_memory_fraction, --redis_server_options) and logs.")


def test_error_replies_of_a_cut_stderr_are_counted_as_a_floor():
  """probe.sh brings back a stderr past 4 MiB cut (concurrent.CUT_MARK):
  the replies read are fewer than the tool got, redis-benchmark's too (its
  count read as exact before: one refusal for both tools now)."""
  cut = f'{concurrent.CUT_MARK}95487524 bytes left out\n'
  vm = types.SimpleNamespace(name='clients-0')
  line = ("server 127.0.0.1:7001 handle error response: -OOM command not "
          "allowed when used memory > 'maxmemory'.\n")
  output = concurrent.ProcessOutput('memtier-preload.0', '', line + cut + line,
                                    0, 1.0)
  with pytest.raises(errors.ProcessError, match='got 2 or more error replies'):
    memtier.RefuseUnserved(vm, [output])
  line = 'Error from server 127.0.0.1:7001: CLUSTERDOWN The cluster is down.\n'
  output = concurrent.ProcessOutput('redis-benchmark.0', '', line + cut + line,
                                    0, 1.0)
  with pytest.raises(errors.ProcessError, match='got 2 or more error replies'):
    redis_benchmark.RefuseErrorReplies(vm, [output])


def test_a_probe_whose_shard_died_says_so_in_one_line(data_path, pkb_flags):
  """A shard killed mid-probe: memtier exits 0, its restarted thread's
  figures gone (the recorded JSON counts 0 operations), and the run stopped
  with 'internal error ValueError: No operations measured after 0s
  warm-up'."""
  del pkb_flags
  assert _RecordedFailure(
      data_path, 'memtier-shard-killed_t1c64_tt3', Load(1, 64), 3) == (
      'memtier_benchmark on clients-0 lost its connection to the server '
      '(Connection error: Connection reset by peer): memtier leaves out what '
      "that connection had in flight and the figures of a thread it "
      'restarts, so they are not what the server served; check that every '
      "shard still runs (the shards' logs).")


def test_a_probe_whose_tool_was_killed_is_not_said_to_have_timed_out(
    client_vm, pkb_flags, monkeypatch):
  """memtier killed (SIGKILL) half a second into its probe: `timeout`
  passes that on as 137, which was read as its own KILL at the bound
  ('timed out after 36 s'); only 124, or 137 past the bound, is."""
  del pkb_flags
  recorded = client_vm.ReadFile
  monkeypatch.setattr(client_vm, 'ReadFile', lambda path: (
      '137 100.0 100.5' if path.endswith('.rc') else recorded(path)))
  with pytest.raises(errors.ProcessError) as failure:
    _Generator(client_vm).Probe([ENDPOINT], 'secret', base.Workload(),
                                Load(1, 32), duration_s=2)
  assert str(failure.value).startswith(
      'memtier_benchmark on clients-0 was killed by SIGKILL after 0.5 s (exit '
      'status 137): ')
  monkeypatch.setattr(client_vm, 'ReadFile', lambda path: (
      '137 100.0 141.0' if path.endswith('.rc') else recorded(path)))
  with pytest.raises(errors.ProcessError) as failure:
    _Generator(client_vm).Probe([ENDPOINT], 'secret', base.Workload(),
                                Load(1, 32), duration_s=2)
  assert 'timed out after 36 s: ' in str(failure.value)


def test_a_redis_benchmark_probe_with_clusterdown_replies_has_no_figure(
    data_path, pkb_flags):
  """redis-benchmark --cluster counts a CLUSTERDOWN reply as a request done
  after a second's wait: a real probe during which a master gave up slots
  for 2 s was published as 14,496 ops/s, avg 3.309 ms, over the cap (the
  search took 48 connections for too many). Its stderr alone says so."""
  del pkb_flags
  stem = 'redis-benchmark_cluster3_c24_n77504_clusterdown'
  with open(data_path(stem + '.txt')) as f:
    stdout = f.read()
  with open(data_path(stem + '.err')) as f:
    stderr = f.read()
  vm = RecordedClientVm({'probe': ('', stdout)}, stderr=stderr)
  generator = redis_benchmark.RedisBenchmarkGenerator(vm)
  with pytest.raises(errors.ProcessError) as failure:
    generator.Probe([ENDPOINT], 'secret', base.Workload(get_ratio=0),
                    Load(1, 24), duration_s=3)
  assert str(failure.value) == (
      'redis-benchmark on clients-0 got 8 error replies in place of data (the '
      'first: Error from server 127.0.0.1:7001: CLUSTERDOWN The cluster is '
      'down.): it counts them as requests done, so its figures would count '
      "requests the server refused as served; check the shards' logs (the "
      "cluster's state).")


def test_a_probe_that_hangs_names_the_error_not_its_progress_lines(
    data_path, pkb_flags):
  """memtier whose login the server refused (the load user's password
  changed) says 'error: authentication failed' once a connection, then a
  progress line a second until `timeout` ends it; the run's line showed the
  last five progress lines ('[RUN #1 1650%, 33 secs] ... 0 ops')."""
  del pkb_flags
  assert _RecordedFailure(
      data_path, UNDER_CAP, Load(1, 128), 2, rc='137 100.0 141.0',
      err_stem='memtier-auth-failed_t1c128_tt2') == (
      'memtier_benchmark on clients-0 timed out after 36 s: error: '
      'authentication failed [-WRONGPASS invalid username-password pair or '
      'user is disabled.]')


def test_a_probe_of_a_server_that_stopped_answering_says_so(
    data_path, pkb_flags):
  """A real memtier probe (-c 4, --test-time 2) of a redis-server
  SIGSTOPped a second in, past its bound: the run said 'timed out after
  N s' and its progress lines; their 0 ops a second is what is known."""
  del pkb_flags
  assert _RecordedFailure(
      data_path, UNDER_CAP, Load(1, 4), 2, rc='124 100.0 136.0',
      err_stem='memtier-server-stopped_t1c4_tt2').startswith(
      'memtier_benchmark on clients-0 timed out after 36 s, its last 4 s '
      'with 0 operations done (no replies: the server stopped answering): '
      '[RUN #1 100%,   2 secs]')


def test_an_error_said_over_two_lines_is_named_whole(pkb_flags, data_path):
  """redis-benchmark refused its login (a real run, the load user's
  password changed after probe 0) says 'Node 127.0.0.1:7001 replied with
  error:' and the reply on the next line: both, not the first alone."""
  del pkb_flags
  with open(data_path('redis-benchmark_single_t1c32_n400000_plain.txt')) as f:
    vm = RecordedClientVm({'probe': ('', f.read())})
  recorded = vm.ReadFile
  said = ('Node 127.0.0.1:7001 replied with error:\nWRONGPASS invalid '
          'username-password pair or user is disabled.\n')
  vm.ReadFile = lambda path: (
      said if path.endswith('.err') else
      '1 100.0 100.1' if path.endswith('.rc') else recorded(path))
  with pytest.raises(errors.ProcessError) as failure:
    redis_benchmark.RedisBenchmarkGenerator(vm).Probe(
        [ENDPOINT], 'secret', base.Workload(), Load(1, 32), duration_s=2)
  assert str(failure.value) == (
      'redis-benchmark on clients-0 exited with status 1: Node '
      '127.0.0.1:7001 replied with error: | WRONGPASS invalid '
      'username-password pair or user is disabled.')


def test_a_request_count_run_that_times_out_names_what_bounds_it(
    client_vm, pkb_flags, monkeypatch):
  """A fixed-load -n run lasts what its requests take; its probe's length
  only bounds it (3 x 2 + 30 s by default). Ended there by `timeout` (exit
  124), it said 'timed out after 36 s' and nothing of which flag that is."""
  del pkb_flags
  recorded = client_vm.ReadFile
  monkeypatch.setattr(client_vm, 'ReadFile', lambda path: (
      '124 100.0 136.0' if path.endswith('.rc') else recorded(path)))
  generator = memtier.MemtierGenerator(client_vm, 'memtier_benchmark',
                                       requests=100000)
  with pytest.raises(errors.ProcessError) as failure:
    generator.Probe([ENDPOINT], 'secret', base.Workload(), Load(1, 32),
                    duration_s=2)
  assert '-n 100000' in client_vm.scripts[-1]
  assert str(failure.value).startswith(
      'memtier_benchmark on clients-0 timed out after 36 s (the bound of '
      '--memtier_requests=100000 a client: 3 x --memtier_run_duration + 30 '
      's; give a longer --memtier_run_duration or fewer requests): ')
  # A timed probe's bound is its own length: nothing to add.
  with pytest.raises(errors.ProcessError) as failure:
    _Generator(client_vm).Probe([ENDPOINT], 'secret', base.Workload(),
                                Load(1, 32), duration_s=2)
  assert 'timed out after 36 s: ' in str(failure.value)


def test_a_probe_over_two_client_vms_counts_both(data_path, pkb_flags):
  """Each VM ran the recorded 1x32 probe (577,850 ops: 288,930 SET and
  288,920 GET): the probe's connections, operation counts and memtier's
  printed rate are both VMs', not the first one's (connections_total 32,
  set_ops 288,930 beside ops 1,155,700)."""
  del pkb_flags
  vms = [RecordedClientVm({'probe': _Fixture(data_path, UNDER_CAP)},
                          name=f'clients-{i}') for i in range(2)]
  probe_driver = driver_lib.ProbeDriver(
      vms, [_Generator(vm) for vm in vms], [ENDPOINT], 'secret',
      base.Workload(), 5)
  m = probe_driver(Load(1, 32))
  assert m.ops == 2 * 577850
  assert m.metadata['client_processes'] == 2
  assert m.metadata['connections_total'] == 64
  assert (m.metadata['set_ops'], m.metadata['get_ops']) == (2 * 288930,
                                                            2 * 288920)
  assert m.metadata['set_ops'] + m.metadata['get_ops'] == m.ops
  assert m.metadata['reported_ops_per_sec'] == pytest.approx(2 * 115541.0)
  assert m.metadata['processes'] == 2


def test_a_probe_over_two_client_vms_says_memtiers_duration_bug_on_either(
    data_path, pkb_flags):
  del pkb_flags
  stems = (UNDER_CAP, 'memtier_single_t2c16_tt5_durationbug')
  vms = [RecordedClientVm({'probe': _Fixture(data_path, stem)},
                          name=f'clients-{i}') for i, stem in enumerate(stems)]
  m = driver_lib.ProbeDriver(
      vms, [_Generator(vm) for vm in vms], [ENDPOINT], 'secret',
      base.Workload(), 5)(Load(1, 32))
  # clients-1's memtier printed a 4.001 s run that lasted 5.001 s.
  assert m.metadata['duration_bug_detected'] is True
  assert m.metadata['real_duration_s'] == pytest.approx(5.001)


def _RecordedRedisBenchmark(data_path):
  """A redis-benchmark generator on a client VM serving the recorded
  t1c32 run (110,284 ops/s), and that run's output."""
  with open(data_path('redis-benchmark_single_t1c32_n400000_plain.txt')) as f:
    plain = f.read()
  vm = RecordedClientVm({'probe': ('', plain)})
  generator = redis_benchmark.RedisBenchmarkGenerator(vm)
  generator._version = '7.0.15'  # pylint: disable=protected-access
  return vm, generator, plain


def test_redis_benchmark_says_it_has_no_warmup(data_path):
  _, generator, _ = _RecordedRedisBenchmark(data_path)
  m = generator.Probe([ENDPOINT], 'secret', base.Workload(), Load(1, 32), 2)
  assert m.metadata['warmup_s'] == 0
  assert m.metadata['warmup_supported'] is False
  # Its seconds come from its progress lines, none of them warm-up.
  assert m.per_second and not any(s.warmup for s in m.per_second)


def test_redis_benchmark_plans_its_first_probe_from_a_pilot(data_path):
  # A guessed 40,000 ops/s a process made a first probe of 2 s last 8 s
  # against a shard held to half a core (10,000 ops/s) and under 1 s
  # against a cloud VM's (110,000): a pilot measures the rate first.
  vm, generator, plain = _RecordedRedisBenchmark(data_path)
  generator.Probe([ENDPOINT], 'secret', base.Workload(), Load(1, 32), 2)
  runs = [s for s in vm.scripts if s and 'redis-benchmark -h' in s]
  assert len(runs) == 2, runs  # the pilot, then the probe
  pilot, probe = ([int(n) for n in re.findall(r' -n (\d+) ', run)]
                  for run in runs)
  assert pilot == [redis_benchmark.PILOT_MIN_REQUESTS] * 2  # SET and GET
  rate = redis_benchmark_results.ParseOutput(plain)[-1].rps  # 110,284/s
  assert probe == [int(rate * 2)] * 2
  # The next probe is planned from the probe's rate, with no pilot.
  generator.Probe([ENDPOINT], 'secret', base.Workload(), Load(1, 32), 2)
  runs = [s for s in vm.scripts if s and 'redis-benchmark -h' in s]
  assert len(runs) == 3


class _ScriptedSampler:
  """A sampler reporting a fixed foreign-CPU figure; counts its brackets."""

  def __init__(self, pct):
    self.pct = pct
    self.started = self.stopped = 0

  def Start(self):
    self.started += 1

  def Stop(self):
    self.stopped += 1
    return self.pct


def test_staircase_steps_carry_the_runs_interference(client_vm, pkb_flags):
  pkb_flags.memtier_staircase = True
  opts = options_lib.RedisStudyOptions.FromFlags(pkb_flags)
  sampler = _ScriptedSampler(30.0)
  probe_driver = driver_lib.ProbeDriver(
      [client_vm], [_Generator(client_vm)], [ENDPOINT], 'secret',
      base.Workload(), 5,
      interference=interference.ProbeInterference([sampler]))
  steps = search_runner.RunStaircase(probe_driver, opts)
  # One bracket around the one memtier run, its figures on every step.
  assert (sampler.started, sampler.stopped) == (1, 1)
  assert len(steps) > 1
  for m in steps:
    assert m.metadata['foreign_cpu_pct'] == 30.0
    assert m.metadata['interference'] is True
    assert m.metadata['interference_scope'] == 'whole staircase'


class _ScriptedStaircase:
  """A load generator whose staircase runs answer from a closed loop at
  100k ops/s (latency by Little's law: 1 ms at 100 clients); records the
  (first, last) clients of every run."""
  NAME = memtier.MemtierGenerator.NAME

  def __init__(self):
    self.runs = []

  def Staircase(self, endpoints, password, workload, load, spec, warmup_s):
    del endpoints, password, workload, warmup_s
    self.runs.append((spec.clients_start, load.clients))
    return [measurement.Measurement(Load(load.threads, c), 100e3,
                                    c / 100e3 * 1000, duration_s=2,
                                    ops=200000)
            for c in spec.Steps(load.clients)]


def test_staircase_runs_in_parts_and_stops_after_the_part_over_the_cap(
    client_vm, pkb_flags):
  # 16..256 by 16 is 16 steps; in runs of 4 steps, the cap (1 ms, reached
  # at 100 clients and over) falls in the second run (80..128): the third
  # and fourth runs (144..256) never start.
  pkb_flags.memtier_staircase = True
  opts = options_lib.RedisStudyOptions.FromFlags(pkb_flags)
  generator = _ScriptedStaircase()
  probe_driver = driver_lib.ProbeDriver(
      [client_vm], [generator], [ENDPOINT], 'secret', base.Workload(), 5)
  steps = search_runner.RunStaircaseToCap(probe_driver, opts)
  assert generator.runs == [(16, 64), (80, 128)]
  assert [m.load.clients for m in steps] == list(range(16, 129, 16))
  assert [m.metadata['staircase_step'] for m in steps] == list(range(8))
  assert [m.metadata['staircase_run'] for m in steps] == [0] * 4 + [1] * 4
  assert staircase.Parts(16, 16, 256) == [(16, 64), (80, 128), (144, 192),
                                          (208, 256)]
  # A lone last step joins the run before it (memtier needs two).
  assert staircase.Parts(16, 16, 80) == [(16, 80)]
  assert staircase.Parts(10, 10, 25) == [(10, 25)]
  with pytest.raises(ValueError, match='below the top'):
    staircase.Parts(64, 16, 64)


def test_no_step_held_under_the_cap_is_an_unconfirmed_answer_not_a_failure(
    data_path, pkb_flags):
  # Every confirmation probe is the recorded over-cap run (256 clients,
  # over 1 ms): no step holds when repeated. The run still answers, with
  # the nearest step, unconfirmed (pkb exits 4), instead of failing (1).
  vm = RecordedClientVm({'staircase': _Fixture(data_path, STAIRCASE),
                         'probe': _Fixture(data_path,
                                           'memtier_single_t1c256_tt5_over1ms')})
  pkb_flags.memtier_staircase = True
  pkb_flags.memtier_run_duration = 5
  pkb_flags.memtier_confirm_repeats = 2
  spec, out = _Spec(vm, pkb_flags)
  samples = bench.Run(spec)
  capped = next(s for s in samples
                if s.metric == 'latency_capped_throughput')
  assert capped.metadata['verdict'] == 'unconfirmed'
  assert capped.metadata['verdict_reason'].startswith(
      'no step held under the 1 ms cap when repeated')
  # Its figure: every probe at its load, the step and its repeats (not the
  # curve's, at that load's connections but rate-limited, after it).
  at_load = [s for s in samples if s.metric == 'throughput' and
             s.metadata['clients'] == capped.metadata['clients'] and
             s.metadata['probe_role'] not in ('curve', 'hold')]
  assert capped.metadata['answer_probes'] == len(at_load) >= 3
  assert capped.value == pytest.approx(
      sum(s.value for s in at_load) / len(at_load))
  assert verdict_lib.RunVerdict(samples).name == verdict_lib.UNCONFIRMED
  assert 'Verdict: UNCONFIRMED' in out.getvalue()
