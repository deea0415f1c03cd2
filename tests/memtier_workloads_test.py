"""The published studies' memtier workloads (issue 12 parts 3 and 5).

Command lines built from the presets' flags against the studies' exact
memtier lines (docs/studies.md), the RAM-hit-ratio helper, refusals in one
line, a Gaussian run of the built argv, a fixed-load run, and the presets:
cloud ones dry-run with cost, local ones run for real. memtier is its replay
stand-in (tests/memtier_replay.py): it parses the argv as memtier does and
writes request-count runs' keys for real with memtier's key patterns, so the
Gaussian run checks that the built --key-median/--key-stddev reach the tool;
timed runs answer with recorded memtier outputs.
"""

import contextlib
import os
import re
import shlex
import shutil
import socket
import statistics
import subprocess
import sys
import time
import types

import numpy as np
import pytest

import pkb_forkserver
from perfkitbenchmarker import errors
from perfkitbenchmarker import measurement
from perfkitbenchmarker import sample
from perfkitbenchmarker import verdict
from perfkitbenchmarker.load_generators import base
from perfkitbenchmarker.load_generators import commands
from perfkitbenchmarker.load_generators import key_distribution
from perfkitbenchmarker.study import options
from perfkitbenchmarker.study import workload_options
from tests import e2e_support as e2e
from tests import memtier_replay

HAVE_REDIS = bool(shutil.which('redis-server') and shutil.which('redis-cli'))
ENDPOINT = base.Endpoint('10.0.0.5', 6379)
CONFIGS = os.path.join(e2e.REPO, 'configs')

# The studies' memtier lines, verbatim (studies.md); <r> and [--pipeline 30]
# filled in for one case each.
DRAGONFLY_STUDY_REDIS = ('--ratio 0:1 -t 24 -c 1 --test-time 180 '
                         '--distinct-client-seed -d 256 --cluster-mode '
                         '--key-maximum 1000000 --hide-histogram --pipeline 30')
DRAGONFLY_STUDY_DRAGONFLY = ('--ratio 1:0 -t 55 -c 30 -n 200000 '
                             '--distinct-client-seed -d 256 --key-maximum '
                             '1000000 --hide-histogram')
ROF_STUDY = ('--hide-histogram --pipeline=1 -c 4 -t 256 -d 1000 '
             '--key-maximum=771141855 --key-pattern=G:G --key-stddev=50358491 '
             '--ratio=1:1 --distinct-client-seed --randomize --test-time=1200')

_SHORT = {'-t': '--threads', '-c': '--clients', '-d': '--data-size',
          '-n': '--requests', '-s': '--server', '-p': '--port',
          '-a': '--authenticate'}
_SWITCHES = {'--distinct-client-seed', '--randomize', '--hide-histogram',
             '--cluster-mode'}
# What our lines add to a study's: connection, output and our preload's
# key naming (memtier's own defaults apart from --key-minimum, see the
# presets' comments).
_OURS_ONLY = {'--server', '--port', '--authenticate', '--key-prefix',
              '--key-minimum', '--print-percentiles', '--json-out-file',
              '--key-pattern', '--pipeline'}
_MEMTIER_DEFAULTS = {'--key-pattern': 'R:R', '--pipeline': '1',
                     '--key-prefix': 'memtier-'}


def _Options(argv):
  """memtier options as {long name: value or True}, any spelling/order."""
  tokens = list(argv)
  if tokens and not tokens[0].startswith('-'):
    tokens = tokens[1:]  # The program.
  out = {}
  i = 0
  while i < len(tokens):
    token = tokens[i]
    name, eq, value = token.partition('=')
    name = _SHORT.get(name, name)
    if eq:
      out[name] = value
    elif name in _SWITCHES:
      out[name] = True
    else:
      out[name] = tokens[i + 1]
      i += 1
    i += 1
  return out


def _AssertReproduces(ours, study_text):
  mine = _Options(ours)
  study = _Options(shlex.split(study_text))
  for name, value in study.items():
    assert mine.get(name) == value, (name, mine.get(name), value)
  extra = set(mine) - set(study)
  assert extra <= _OURS_ONLY, extra
  for name in extra & set(_MEMTIER_DEFAULTS):
    assert mine[name] == _MEMTIER_DEFAULTS[name], name


def _StudyOptions(fv, **values):
  for name, value in values.items():
    setattr(fv, name, value)
  return options.RedisStudyOptions.FromFlags(fv)


def _Argvs(opts, test_time=None):
  """One argv per fixed-load run, as MemtierGenerator builds them."""
  import dataclasses  # pylint: disable=g-import-not-at-top
  argvs = []
  for (s, g), threads, clients, pipeline in opts.fixed.Runs():
    workload = dataclasses.replace(opts.workload, set_ratio=s, get_ratio=g)
    argvs.append(commands.MemtierProbeCommand(
        'memtier_benchmark', ENDPOINT, None, workload,
        measurement.Load(threads, clients, pipeline),
        test_time or opts.generator.run_duration_s, '/tmp/o.json',
        requests=opts.generator.requests))
  return argvs


DRAGONFLY_COMMON = dict(
    memtier_fixed_load=True, memtier_ratios=['0:1', '1:0'],
    memtier_pipelines=['1', '30'], memtier_data_size=256,
    memtier_key_maximum=1000000, memtier_distinct_client_seed=True)


def test_redis_vs_dragonfly_redis_line(pkb_flags):
  opts = _StudyOptions(pkb_flags, **DRAGONFLY_COMMON,
                       redis_server_cluster_mode=True,
                       redis_total_num_processes=40, memtier_threads=[24],
                       memtier_clients=[1], memtier_processes_per_client=2,
                       memtier_run_duration=180)
  argvs = _Argvs(opts)
  # GET p1, GET p30, SET p1, SET p30.
  assert [(_Options(a)['--ratio'], _Options(a)['--pipeline'])
          for a in argvs] == [('0:1', '1'), ('0:1', '30'), ('1:0', '1'),
                              ('1:0', '30')]
  _AssertReproduces(argvs[1], DRAGONFLY_STUDY_REDIS)
  _AssertReproduces(argvs[0], DRAGONFLY_STUDY_REDIS.replace(
      ' --pipeline 30', ''))
  assert opts.generator.processes_per_client == 2


def test_redis_vs_dragonfly_dragonfly_line(pkb_flags):
  opts = _StudyOptions(pkb_flags, **DRAGONFLY_COMMON, memtier_threads=[55],
                       memtier_clients=[30], memtier_requests=200000)
  argvs = _Argvs(opts)
  _AssertReproduces(argvs[2], DRAGONFLY_STUDY_DRAGONFLY)
  assert '--test-time' not in argvs[2]


def test_redis_on_flash_line(pkb_flags):
  opts = _StudyOptions(
      pkb_flags, memtier_fixed_load=True, memtier_ratios=['1:1', '1:4', '4:1'],
      memtier_threads=[256], memtier_clients=[4], memtier_data_size=1000,
      memtier_key_maximum=771141855, memtier_key_pattern='G:G',
      memtier_key_stddev=50358491, memtier_distinct_client_seed=True,
      memtier_randomize=True, memtier_run_duration=1200)
  argvs = _Argvs(opts)
  _AssertReproduces(argvs[0], ROF_STUDY)
  assert [_Options(a)['--ratio'] for a in argvs] == ['1:1', '1:4', '4:1']


def test_redis_on_flash_stddev_from_the_hit_ratio(pkb_flags):
  opts = _StudyOptions(
      pkb_flags, memtier_key_maximum=771141855, memtier_key_pattern='G:G',
      memtier_ram_fraction=0.2, memtier_ram_hit_ratio=0.85)
  assert opts.workload.key_stddev == 53568947
  argv = commands.MemtierProbeCommand(
      'm', ENDPOINT, None, opts.workload, measurement.Load(256, 4), 1200, 'o')
  assert _Options(argv)['--key-stddev'] == '53568947'
  assert '--key-median' not in argv  # memtier's default, the middle.


def test_default_command_line_is_unchanged():
  argv = commands.MemtierProbeCommand('m', ENDPOINT, None, base.Workload(),
                                      measurement.Load(1, 4), 2, 'o')
  for flag in ('--key-stddev', '--key-median', '--distinct-client-seed',
               '--randomize', '-n'):
    assert flag not in argv


def test_request_count_and_median_in_the_argv():
  workload = base.Workload(key_pattern='G:G', key_median=1234.0,
                           key_stddev=10.4)
  argv = commands.MemtierProbeCommand('m', ENDPOINT, None, workload,
                                      measurement.Load(1, 4), 2, 'o',
                                      requests=500)
  got = _Options(argv)
  assert got['--requests'] == '500' and '--test-time' not in got
  assert got['--key-median'] == '1234' and got['--key-stddev'] == '10'
  with pytest.raises(ValueError):
    commands.MemtierProbeCommand('m', ENDPOINT, None, workload,
                                 measurement.Load(1, 4), 2, 'o', requests=0)


# The RAM-hit-ratio helper.

ROF_KEYS = 771141855


def test_rof_85_percent_is_close_to_the_published_stddev():
  stddev = key_distribution.GaussianStddevForHitRatio(1, ROF_KEYS, 0.2, 0.85)
  assert stddev == pytest.approx(53568947, abs=1)
  # Within 7 % of the study's 50,358,491 (its derivation is unpublished);
  # the same model puts the study's figure at an 87.4 % hit ratio.
  assert stddev == pytest.approx(50358491, rel=0.07)
  window = 0.2 * ROF_KEYS
  assert 2 * statistics.NormalDist().cdf(window / (2 * 50358491)) - 1 == (
      pytest.approx(0.8743, abs=1e-4))


@pytest.mark.parametrize('hit', [0.5, 0.85])
def test_sampled_keys_hit_the_ram_window_at_the_ratio(hit):
  # memtier's G pattern: normal draws around the median, redrawn outside
  # the range. The hottest 20 % of keys (centred) should take `hit`.
  low, high = 1, 1_000_000
  g = key_distribution.GaussianForHitRatio(low, high, 0.2, hit)
  rng = np.random.default_rng(12)
  keys = rng.normal(g.median, g.stddev, 400_000)
  keys = keys[(keys >= low) & (keys <= high + 1)].astype(np.int64)
  window = 0.2 * (high - low + 1)
  inside = np.abs(keys - g.median) <= window / 2
  assert inside.mean() == pytest.approx(hit, abs=0.005)


def test_helper_refusals():
  with pytest.raises(ValueError, match='between 0 and 1'):
    key_distribution.GaussianStddevForHitRatio(1, 1000, 0, 0.5)
  with pytest.raises(ValueError, match='between 0 and 1'):
    key_distribution.GaussianStddevForHitRatio(1, 1000, 0.2, 1.0)
  with pytest.raises(ValueError, match='redraw'):  # 90 % RAM, 10 % hits.
    key_distribution.GaussianStddevForHitRatio(1, 1000, 0.9, 0.1)
  with pytest.raises(ValueError, match='outside'):
    key_distribution.GaussianStddevForHitRatio(1, 1000, 0.2, 0.8, 5000)


# Refusals: one line, before anything is created.

@pytest.mark.parametrize('values, words', [
    (dict(load_generator='redis_benchmark', memtier_key_pattern='G:G',
          memtier_distinct_client_seed=True),
     ['--memtier_key_pattern=G:G', '--memtier_distinct_client_seed',
      'need memtier_benchmark', 'those flags']),
    # One flag named: it needs (the line said 'need ... them').
    (dict(load_generator='redis_benchmark',
          memtier_distinct_client_seed=True),
     ['--memtier_distinct_client_seed needs memtier_benchmark',
      'cannot do it', 'or that flag.']),
    (dict(load_generator='redis_benchmark', memtier_fixed_load=True,
          memtier_processes_per_client=2, memtier_requests=10),
     ['--memtier_requests', '--memtier_processes_per_client',
      'redis-benchmark cannot']),
    (dict(memtier_requests=100), ['--memtier_fixed_load']),
    # A warm-up was dropped without a word from a request-count run.
    (dict(memtier_fixed_load=True, memtier_requests=100,
          memtier_warmup_seconds=2),
     ['--memtier_warmup_seconds=2', '--memtier_requests', 'drop one']),
    (dict(memtier_pipelines=['1', '30']), ['swept by --memtier_fixed_load']),
    (dict(memtier_fixed_load=True, memtier_staircase=True),
     ['--memtier_staircase']),
    (dict(memtier_key_pattern='G:G', memtier_ram_hit_ratio=0.85),
     ['--memtier_ram_fraction']),
    (dict(memtier_ram_fraction=0.2), ['only used with']),
    (dict(memtier_key_stddev=10.0), ['use G:G']),
    (dict(memtier_key_pattern='G:G', memtier_ram_hit_ratio=0.1,
          memtier_ram_fraction=0.9), ['redraw']),
    (dict(memtier_fixed_load=True, memtier_ratios=['1:1', '0:0']),
     ['--memtier_ratios="0:0"']),
    (dict(memtier_fixed_load=True, memtier_pipelines=['0']),
     ['--memtier_pipelines=0']),
    # memtier wrapped it to 0:1 and ran GETs only, recorded as given.
    (dict(memtier_ratio='4294967296:1'),
     ['--memtier_ratio="4294967296:1"', 'up to 4,294,967,295']),
    (dict(memtier_clients=[4, 8]), ['--memtier_fixed_load', 'one']),
    (dict(memtier_threads=[4]), ['--memtier_min_threads', 'fixed load']),
    (dict(memtier_pipeline=[1, 30]), ['--memtier_fixed_load', 'one']),
    # Counted, not listed: 10^9 runs ended in 'internal error MemoryError'.
    (dict(memtier_fixed_load=True, memtier_threads=list(range(1, 1001)),
          memtier_clients=list(range(1, 1001)),
          memtier_pipeline=list(range(1, 1001))),
     ['1 ratio(s) x 1,000 pipeline(s) x 1,000 client count(s) x 1,000 '
      'thread count(s) are 1,000,000,000 fixed-load runs', 'at most 604,800']),
])
def test_refused_in_one_line(pkb_flags, values, words):
  with pytest.raises(errors.UsageError) as e:
    _StudyOptions(pkb_flags, **values)
  text = str(e.value)
  assert '\n' not in text
  for word in words:
    assert word in text, (word, text)


@pytest.mark.parametrize('args', [
    ['--memtier_fixed_load', '--memtier_requests=100', '--memtier_threads=1',
     '--memtier_clients=4'],
    ['--memtier_key_pattern=G:G']])
def test_memtier_only_settings_without_memtier_here_are_refused_before_start(
    pkb_main, monkeypatch, tmp_path, capsys, args):
  """'./pkb.py --memtier_fixed_load --memtier_requests=1000 ...' on this
  machine without memtier: the dry run passed, and the run stopped after
  its shards and preload, 'pkb: redis_memtier stopped: --memtier_requests
  need memtier_benchmark, but the load generator here is redis-benchmark
  ...', exit 1 (README: such a run is refused in one line)."""
  from perfkitbenchmarker.linux_benchmarks import redis_memtier_benchmark  # pylint: disable=g-import-not-at-top
  which = shutil.which
  monkeypatch.setattr(redis_memtier_benchmark.shutil, 'which', lambda name: (
      None if name == 'memtier_benchmark' else which(name)))
  for dry in (['--dry_run'], []):
    assert pkb_main(args + dry + [f'--results_dir={tmp_path}']) == 2
    err = capsys.readouterr().err
    assert err.count('\n') == 1, err
    # One flag each here: it needs, and the run goes without it.
    assert 'needs memtier_benchmark, but the load generator here is ' \
        'redis-benchmark' in err and 'to run without it)' in err
    assert os.listdir(tmp_path) == []  # Refused before the run began.
  # --redis_benchmark_fallback runs it without them, as the presets do.
  assert pkb_main(args + ['--redis_benchmark_fallback', '--dry_run',
                          f'--results_dir={tmp_path}']) == 0


def test_a_percentile_cap_on_redis_benchmark_names_the_flag_to_drop(
    pkb_flags, tmp_path):
  """With --load_generator=redis_benchmark the refusal told a user who had
  given --memtier_path to 'give --memtier_path': redis-benchmark stays
  chosen with it; --load_generator is what to drop."""
  with pytest.raises(errors.UsageError) as e:
    _StudyOptions(pkb_flags, load_generator='redis_benchmark',
                  latency_cap_statistic='p99',
                  memtier_path=str(tmp_path / 'memtier_benchmark'))
  assert 'drop --load_generator=redis_benchmark' in str(e.value)
  assert 'give --memtier_path' not in str(e.value)


def test_fixed_load_alone_runs_on_redis_benchmark(pkb_flags):
  opts = _StudyOptions(pkb_flags, load_generator='redis_benchmark',
                       memtier_fixed_load=True, memtier_ratios=['0:1', '1:0'])
  assert len(opts.fixed.Runs()) == 2


# Real runs (loopback only).

def _FreePort():
  with socket.socket() as s:
    s.bind(('127.0.0.1', 0))
    return s.getsockname()[1]


@contextlib.contextmanager
def _RedisServer():
  port = _FreePort()
  server = subprocess.Popen(
      ['redis-server', '--port', str(port), '--bind', '127.0.0.1', '--save',
       '', '--appendonly', 'no'], stdout=subprocess.DEVNULL,
      stderr=subprocess.DEVNULL)
  try:
    for _ in range(100):
      ping = subprocess.run(['redis-cli', '-p', str(port), 'ping'],
                            capture_output=True, text=True, check=False)
      if ping.stdout.strip() == 'PONG':
        break
      time.sleep(0.05)
    yield base.Endpoint('127.0.0.1', port)
  finally:
    server.terminate()
    server.wait(timeout=10)


@pytest.mark.e2e
@e2e.NeedsTools('redis-server', 'redis-cli')
def test_built_gaussian_argv_runs_and_stays_near_the_median(tmp_path):
  workload = base.Workload(set_ratio=1, get_ratio=0, key_minimum=1,
                           key_maximum=100000, key_pattern='G:G',
                           key_median=50000, key_stddev=100,
                           distinct_client_seed=True, randomize=True)
  with _RedisServer() as endpoint:
    argv = commands.MemtierProbeCommand(
        memtier_replay.Path(), endpoint, None, workload, measurement.Load(1, 2), 1,
        str(tmp_path / 'o.json'), requests=2000)
    subprocess.run(argv, capture_output=True, check=True, timeout=60)
    keys = subprocess.run(['redis-cli', '-p', str(endpoint.port), '--scan'],
                          capture_output=True, text=True,
                          check=True).stdout.split()
  indices = [int(k.rsplit('-', 1)[1]) for k in keys]
  # 4,000 SETs over ~6 stddev of keys: a few hundred distinct, all close.
  assert 100 < len(indices) < 1200
  assert all(abs(i - 50000) < 700 for i in indices)


def _Pkb(args, results_dir, timeout=e2e.HANG_GUARD_S):
  return pkb_forkserver.Run(
      [sys.executable, e2e.PKB, f'--results_dir={results_dir}',
       '--accept_unconfirmed'] + args,
      timeout=timeout, cwd=e2e.REPO)


FIXED_LOAD = [
    '--memtier_fixed_load', '--memtier_ratios=0:1,1:0',
    '--memtier_pipelines=1,8', '--memtier_threads=1', '--memtier_clients=2',
    '--memtier_processes_per_client=2', '--memtier_distinct_client_seed',
    '--memtier_run_duration=1', '--memtier_key_maximum=5000']
# The local presets as their test runs them: the preset's two cells side by
# side (the matrix's own option; nothing here reads a figure), and
# redis_on_flash_local's 2 s timed runs at 1 s (the replay answers them with
# recorded outputs: their length is idle time).
PRESETS = {
    'redis_vs_dragonfly_local.yaml': ['--run_processes=2'],
    'redis_on_flash_local.yaml': ['--run_processes=2',
                                  '--memtier_run_duration=1'],
}


@pytest.fixture(scope='module')
def real_runs(tmp_path_factory):
  """This file's three real ./pkb.py runs (the fixed load and the two local
  presets), started together when the first of their tests runs: each
  test reads its own. Their timed runs are mostly the replay idling, so
  side by side they take about as long as the longest. Every run is
  waited for to its end (its own teardown), also one no test read."""
  replay = memtier_replay.Path()
  runs = {}
  try:
    fixed = str(tmp_path_factory.mktemp('fixed_load'))
    run_uri = e2e.NewRunUri()
    runs['fixed_load'] = e2e.Background(
        e2e.Command([f'--memtier_path={replay}'] + FIXED_LOAD, run_uri,
                    fixed), fixed, run_uri)
    for preset, extra in PRESETS.items():
      results = tmp_path_factory.mktemp('preset') / 'runs'
      runs[preset] = e2e.Background(
          [sys.executable, e2e.PKB, f'--results_dir={results}',
           '--accept_unconfirmed',
           f'--benchmark_config_file={CONFIGS}/{preset}',
           f'--memtier_path={replay}'] + extra, results)
    yield runs
  finally:
    for run in runs.values():
      run.Finish()


def _FixedLoadVerdict(rows):
  """verdict.FixedLoadVerdict of a run's results rows, as pkb's."""
  return verdict.FixedLoadVerdict(
      sample.Sample(r['metric'], 0.0, '', e2e.Labels(r)) for r in rows)


@pytest.mark.e2e
@e2e.NeedsTools('redis-server', 'redis-cli')
def test_fixed_load_runs_for_real_with_memtier(real_runs):
  run = real_runs['fixed_load']
  proc, run_uri, results = run.Finish(), run.run_uri, run.results_dir
  assert proc.returncode == 0, proc.stderr
  assert 'Fixed load: 4 run(s), no search' in proc.stdout
  rows = e2e.Samples(results, run_uri)
  runs = [r for r in rows if r['metric'] == 'throughput']
  assert len(runs) == 4 and all(r['value'] > 0 for r in runs)
  labels = [e2e.Labels(r) for r in runs]
  assert [(l['memtier_ratio'], l['pipeline']) for l in labels] == [
      ('0:1', '1'), ('0:1', '8'), ('1:0', '1'), ('1:0', '8')]
  assert all(l['probe_role'] == 'fixed' and l['fixed_load'] == 'True' and
             l['client_processes'] == '2' and
             l['load_generator'] == 'memtier_benchmark' and
             l['memtier_distinct_client_seed'] == 'True' for l in labels)
  metrics = {r['metric'] for r in rows}
  assert 'average_latency' in metrics and 'hourly_cost' in metrics
  # The cost samples carry the fixed runs' verdict (official only where it
  # is confirmed), as a search's carry its answer's.
  ran = _FixedLoadVerdict(rows)
  costs = [e2e.Labels(r) for r in rows if r['metric'] == 'hourly_cost']
  assert costs and all(c[verdict.KEY] == ran.name and
                       c[verdict.REASON_KEY] == ran.reason for c in costs)
  assert 'latency_capped_throughput' not in metrics
  assert 'price_performance' not in metrics
  assert not e2e.LeftoverProcesses(results, run_uri)


def _PathWithoutMemtier():
  return os.pathsep.join(
      d for d in os.environ['PATH'].split(os.pathsep)
      if not os.path.exists(os.path.join(d, 'memtier_benchmark')))


@pytest.mark.e2e
@e2e.NeedsTools('redis-server', 'redis-cli', 'redis-benchmark')
def test_fallback_run_says_and_records_what_redis_benchmark_ran(tmp_path):
  """--redis_benchmark_fallback without memtier: the console and the samples
  describe the redis-benchmark run, not the memtier settings it dropped
  (the header said '2 memtier process(es)' and '-n 1,000 requests', and the
  samples carried memtier_processes_per_client, memtier_requests and the
  G:G key pattern of a uniform-key run)."""
  proc, run_uri = e2e.Run(
      ['--redis_benchmark_fallback', '--memtier_fixed_load',
       '--memtier_ratios=1:0', '--memtier_threads=1', '--memtier_clients=2',
       '--memtier_processes_per_client=2', '--memtier_requests=1000',
       '--memtier_distinct_client_seed', '--memtier_key_pattern=G:G',
       '--memtier_key_stddev=100', '--memtier_run_duration=1',
       '--memtier_key_maximum=2000'],
      str(tmp_path), env=dict(os.environ, PATH=_PathWithoutMemtier()))
  assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr
  assert 'WARNING: memtier_benchmark not found' in proc.stdout
  header = next(l for l in proc.stdout.splitlines()
                if l.startswith('Fixed load: '))
  assert 'redis-benchmark; 1 s each' in header, header
  assert 'memtier' not in header and '-n ' not in header, header
  rows = e2e.Samples(str(tmp_path), run_uri)
  labels = e2e.Labels(next(r for r in rows if r['metric'] == 'throughput'))
  assert labels['load_generator'] == 'redis-benchmark'
  assert labels['memtier_only_dropped'] == (
      '--memtier_key_pattern=G:G --memtier_key_stddev '
      '--memtier_distinct_client_seed --memtier_requests '
      '--memtier_processes_per_client')
  assert labels['memtier_key_pattern'] == 'R:R'
  for key in ('memtier_key_stddev', 'memtier_distinct_client_seed',
              'memtier_requests', 'memtier_processes_per_client'):
    assert key not in labels, key


@pytest.mark.e2e
@e2e.NeedsTools('redis-server', 'redis-cli', 'redis-benchmark')
def test_fixed_load_redis_benchmark_mix_of_one_connection_refused_first(
    tmp_path):
  """`--memtier_fixed_load --memtier_clients=1,2,4` without memtier: the
  1-connection SET:GET run cannot be split into redis-benchmark's SET and
  GET processes; refused once the load generator is known, before the
  preload (it failed at that run, after the preload)."""
  proc, _ = e2e.Run(['--memtier_fixed_load', '--memtier_clients=1,2,4',
                     '--memtier_run_duration=1', '--memtier_key_maximum=2000'],
                    str(tmp_path),
                    env=dict(os.environ, PATH=_PathWithoutMemtier()))
  assert proc.returncode == 2, proc.stderr  # bad input, found in a stage
  assert 'Preloading' not in proc.stdout
  assert proc.stderr.strip().splitlines()[-1] == (
      'pkb: redis_memtier stopped: --memtier_fixed_load: redis-benchmark '
      'needs at least 2 connections for a SET:GET mix (a SET and a GET '
      'process), but the 1:1 run of 1 thread(s) x 1 client(s) has 1; raise '
      '--memtier_clients or use memtier_benchmark (--memtier_path).')


@pytest.mark.e2e
def test_a_memtier_path_that_is_not_there_is_refused_not_replaced(tmp_path):
  """A mistyped --memtier_path ran the whole study with redis-benchmark,
  saying so only in the preload line."""
  missing = str(tmp_path / 'no' / 'memtier_benchmark')
  proc, _ = e2e.Run([f'--memtier_path={missing}', '--memtier_run_duration=1',
                     '--memtier_key_maximum=2000'], str(tmp_path / 'r'),
                    env=dict(os.environ, PATH=_PathWithoutMemtier()))
  # Refused before anything starts, as its dry run refuses it (exit 2).
  assert proc.returncode == 2, proc.stderr
  assert 'Preloading' not in proc.stdout
  assert proc.stderr.strip().splitlines()[-1] == (
      f'pkb: --memtier_path={missing} is no executable on this machine; give '
      'the memtier_benchmark binary, or drop --memtier_path to use the one '
      'on PATH (or redis-benchmark).')


@pytest.mark.e2e
def test_a_memtier_path_that_is_another_program_is_refused(tmp_path):
  """--memtier_path=/bin/sh (an ELF, so argv_secret lets it run) ended in
  'Preload left 0 keys ...; check the shards' maxmemory'."""
  proc, _ = e2e.Run(['--memtier_path=/bin/sh', '--memtier_run_duration=1',
                     '--memtier_key_maximum=2000'], str(tmp_path))
  assert proc.returncode == 2, proc.stderr
  assert 'Preloading' not in proc.stdout
  line = proc.stderr.strip().splitlines()[-1]
  assert line.startswith('pkb: /bin/sh on this machine is not '
                         'memtier_benchmark: its --version printed '), line


@pytest.mark.e2e
def test_memtier_only_workload_refused_when_memtier_is_missing(tmp_path):
  # A PATH without memtier, whatever this machine has.
  path = _PathWithoutMemtier()
  proc, _ = e2e.Run(['--memtier_key_pattern=G:G', '--memtier_key_stddev=100',
                     '--memtier_run_duration=1', '--memtier_key_maximum=2000'],
                    str(tmp_path), env=dict(os.environ, PATH=path))
  assert proc.returncode != 0
  assert ('--memtier_key_pattern=G:G, --memtier_key_stddev need '
          'memtier_benchmark') in proc.stdout + proc.stderr


def test_fallback_drops_memtier_only_settings_only_when_asked():
  workload = base.Workload(key_pattern='G:G', key_stddev=100.0,
                           distinct_client_seed=True)
  rb = [types.SimpleNamespace(NAME='redis-benchmark')]
  mt = [types.SimpleNamespace(NAME='memtier_benchmark')]

  def Opts(**generator):
    return types.SimpleNamespace(
        workload=workload, generator=options.GeneratorOptions(**generator))

  dropped = ['--memtier_key_pattern=G:G', '--memtier_key_stddev',
             '--memtier_distinct_client_seed', '--memtier_requests']
  assert workload_options.RequireMemtier(
      rb, Opts(fallback=True, requests=10)) == dropped
  assert workload_options.RequireMemtier(mt, Opts(fallback=True)) == []
  for generator in (dict(), dict(fallback=True, choice='memtier')):
    # Exit 2 at prepare too, as README's exit codes and its percentile-cap
    # paragraph say (it was a PrerequisiteError: exit 1, a failed run).
    with pytest.raises(errors.UsageError, match='need memtier_bench'):
      workload_options.RequireMemtier(rb, Opts(**generator))
    opts = types.SimpleNamespace(
        search=types.SimpleNamespace(cap=measurement.LatencyCap(1.0, 'p99')),
        generator=options.GeneratorOptions(**generator))
    with pytest.raises(errors.UsageError, match='needs memtier_benchmark'):
      workload_options.RequirePercentileGenerator(rb, opts)


@pytest.mark.e2e
def test_every_local_preset_runs_without_memtier(tmp_path):
  # A local preset either uses no memtier-only setting or lets
  # --load_generator=auto fall back to redis-benchmark without them.
  memtier_only = re.compile(
      r'^\s*(memtier_key_pattern: G|memtier_distinct_client_seed: true|'
      r'memtier_randomize: true|memtier_requests:|'
      r'memtier_processes_per_client: [2-9]|memtier_ram_hit_ratio)', re.M)
  presets = [n for n in sorted(os.listdir(CONFIGS))
             if n.endswith('_local.yaml')]
  assert len(presets) >= 4, presets
  for name in presets:
    with open(os.path.join(CONFIGS, name)) as f:
      text = f.read()
    assert not re.search(r'^\s*load_generator: memtier', text, re.M), name
    if memtier_only.search(text):
      assert re.search(r'^\s*redis_benchmark_fallback: true', text,
                       re.M), name
  # The plan says what a run without memtier leaves out.
  proc = _Pkb([f'--benchmark_config_file={CONFIGS}/redis_on_flash_local.yaml',
               '--dry_run'], tmp_path)
  assert proc.returncode == 0, proc.stderr
  assert proc.stdout.count(
      'without memtier it runs without --memtier_key_pattern=G:G, '
      '--memtier_key_stddev, --memtier_distinct_client_seed, '
      '--memtier_randomize') == 2


# Presets.

@pytest.mark.e2e
def test_redis_vs_dragonfly_preset_dry_runs_with_cost(tmp_path):
  proc = _Pkb([f'--benchmark_config_file={CONFIGS}/redis_vs_dragonfly.yaml',
               '--dry_run'], tmp_path)
  assert proc.returncode == 0, proc.stderr
  out = proc.stdout
  assert out.count('servers: 1 x c6gn.16xlarge') == 2
  assert out.count('clients: 1 x c6gn.16xlarge') == 2
  assert 'x threads 24 x 1 clients x pipeline 1,30; 2 memtier' in out
  assert 'x threads 55 x 30 clients x pipeline 1,30; 1 memtier' in out
  assert '-n 200,000 requests per client' in out
  assert out.count('probes SET:GET 0:1, 1:0') == 2
  assert 'one Redis Cluster' in out and '40 shard(s) per VM' in out
  assert 'servers: engine dragonfly' in out
  assert 'Total: 2 cell(s), 4 VMs, estimated $' in out


@pytest.mark.e2e
def test_redis_on_flash_preset_refused_then_dry_runs_with_cost(tmp_path):
  """Redis OSS keeps every key in RAM: the study's 771M x 1 KiB preload
  (with a replica each) is refused in one line naming the key count that
  fits 2 x i4i.4xlarge; with it the preset plans every cell."""
  preset = f'--benchmark_config_file={CONFIGS}/redis_on_flash.yaml'
  proc = _Pkb([preset, '--dry_run'], tmp_path)
  assert proc.returncode == 2
  # One refusal line (the plan's warnings may come first: the study's one
  # m5.8xlarge client is under 4x its servers' vCPUs).
  refusals = [l for l in proc.stderr.splitlines() if 'WARNING: ' not in l]
  assert len(refusals) == 1, proc.stderr
  assert 'the preload of 771,141,855 keys' in proc.stderr
  fits = int(proc.stderr.split('to at most ')[1].split()[0].replace(',', ''))
  assert 80_000_000 < fits < 90_000_000
  proc = _Pkb([preset, '--dry_run', f'--memtier_key_maximum={fits}'],
              tmp_path)
  assert proc.returncode == 0, proc.stderr
  out = proc.stdout
  for machine_type in ('i4i.4xlarge', 'i4i.8xlarge', 'i4i.16xlarge',
                       'i3.8xlarge'):
    assert out.count(f'servers: 2 x {machine_type}') == 2, machine_type
  assert out.count('clients: 1 x m5.8xlarge') == 8
  assert f'preload {fits:,} keys x 1000 B' in out
  assert 'SET:GET 1:1, 1:4, 4:1 x threads 256 x 4 clients x pipeline 1' in out
  assert 'Total: 8 cell(s), 24 VMs, estimated $' in out


@pytest.mark.e2e
@e2e.NeedsTools('redis-server', 'redis-cli')
@pytest.mark.parametrize('preset, cells, runs_per_cell', [
    ('redis_vs_dragonfly_local.yaml', 2, 4),
    ('redis_on_flash_local.yaml', 2, 3)])
def test_local_preset_runs(real_runs, preset, cells, runs_per_cell):
  run = real_runs[preset]
  proc, results = run.Finish(), run.results_dir
  assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr
  run_dirs = [d for d in os.listdir(results)
              if os.path.exists(results / d / 'perfkitbenchmarker_results.json')]
  assert len(run_dirs) == cells
  confirmed = 0
  for run_uri in run_dirs:
    rows = e2e.Samples(str(results), run_uri)
    runs = [r for r in rows if r['metric'] == 'throughput']
    assert len(runs) == runs_per_cell and all(r['value'] > 0 for r in runs)
    confirmed += _FixedLoadVerdict(rows).confirmed
  # --accept_unconfirmed exits 0, yet a cell whose fixed runs were
  # client-bound or disturbed (most, on 2 shared cores) is no result.
  told = re.search(rf'(\d+) of {cells} cell\(s\) succeeded(, (\d+) gave no '
                   r'confirmed result)?;', proc.stdout)
  assert told, proc.stdout[-3000:]
  assert int(told[1]) == confirmed
  assert int(told[3] or 0) == cells - confirmed
