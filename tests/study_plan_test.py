"""The dry-run plan says what the search does and estimates what it costs.

The adaptive search's probe counts come from the policy a run would build
(search_runner.Policy), the plan text names them, and the dry run's cost
uses the same typical count.
"""

import re
import types

import pytest

import e2e_support as e2e
from perfkitbenchmarker import cost_estimate
from perfkitbenchmarker import errors
from perfkitbenchmarker.search import adaptive
from perfkitbenchmarker.study import options
from perfkitbenchmarker.study import plan
from perfkitbenchmarker.study import search_runner


def _Options(flag_values):
  return options.RedisStudyOptions.FromFlags(flag_values)


def _Text(opts):
  return '\n'.join(plan.SearchPlan(opts))


def test_default_plan_describes_the_interval_stop_and_the_counts(pkb_flags):
  opts = _Options(pkb_flags)
  counts = plan.ProbesPerSearch(opts)
  assert counts == search_runner.Policy(opts).EstimateProbes().Capped(40)
  assert counts == adaptive.ProbeCounts(fewest=5, typical=6, most=40)
  text = _Text(opts)
  assert '  adaptive: 1 thread(s), 4..1024 connections' in text
  assert ('mean and 95 % interval of 3-6 repeats (past 3 only while the '
          'interval\'s half-width is over 2 % of the mean and 6 repeats '
          'could bring it there)') in text
  assert 'up to 2 lower loads tried' in text
  assert ('probes per search: about 6 (fewest 5, at most 40, the '
          '--memtier_max_probes budget); the cost estimate uses 6') in text
  assert 'mean of 3 repeats' not in text


def test_a_percentile_caps_back_off_is_not_called_an_average(pkb_flags):
  """The plan of a p99 cap said 'lower loads tried if the repeats average
  over the cap': the search backs off when their merged p99 is."""
  pkb_flags.latency_cap_statistic = 'p99'
  text = _Text(_Options(pkb_flags))
  assert ('up to 2 lower loads tried if the repeats together have a p99 at '
          'or over the cap') in text
  assert 'average over the cap' not in text


def test_counts_follow_the_options(pkb_flags):
  pkb_flags.memtier_confirm_repeats = 5
  pkb_flags.memtier_adaptive_max_threads = 8
  pkb_flags.memtier_adaptive_start_connections = 1024
  pkb_flags.memtier_max_probes = 200
  opts = _Options(pkb_flags)
  counts = plan.ProbesPerSearch(opts)
  # Started at the top of the range: no growth, 1 search probe at fewest;
  # 5-6 repeats; typically the measured 3 search probes and one set.
  assert counts == search_runner.Policy(opts).EstimateProbes().Capped(200)
  assert counts.fewest == 1 + 5
  assert counts.typical == 3 + 5
  # At most: 8 halvings down to 4 connections, 3 prediction probes, 4
  # bisections; 6 repeats of 3 loads in 3 rounds and 2 back-offs, again
  # after a failed hold's back-off probe; 3 re-runs of disturbed repeats.
  rounds = 3 * 3 * 6 + 2
  assert counts.most == (1 + 8 + 3 + 4) + rounds + (1 + rounds) + 3
  text = _Text(opts)
  assert '1..8 threads (one client each, then more clients per thread)' in text
  assert '5-6 repeats (past 5 only' in text
  assert f'at most {counts.most});' in text  # under the budget: no mention
  pkb_flags.memtier_max_probes = 7
  capped = plan.ProbesPerSearch(_Options(pkb_flags))
  assert capped == adaptive.ProbeCounts(6, 7, 7)


def test_without_repeats_the_plan_says_so(pkb_flags):
  pkb_flags.memtier_confirm_repeats = 0
  opts = _Options(pkb_flags)
  text = _Text(opts)
  assert 'answer: the best search probe, unrepeated' in text
  assert 'repeats' not in text
  assert plan.ProbesPerSearch(opts) == adaptive.ProbeCounts(2, 3, 13)


def test_estimate_is_the_typical_count_of_probes(pkb_flags):
  pkb_flags.memtier_run_duration = 5
  pkb_flags.memtier_warmup_seconds = 1
  opts = _Options(pkb_flags)
  per_probe = 5 + 1 + cost_estimate.ProbeOverheadS(opts.generator.choice)
  # The search's typical probes and the curve's two (Local's default: 1 s
  # each, with the warm-up), then the answer's load held (3 s on Local) and
  # one probe's overhead. The auto choice may hold with redis-benchmark
  # (Local's fallback), asked for (3 + 0.5) x 1.2 = 4.2 s of requests so
  # that 3 whole seconds come out: longer than memtier's 3 s + 1 s warm-up.
  hold = 4.2 + cost_estimate.ProbeOverheadS(opts.generator.choice)
  curve = 2 * (1 + 1 + cost_estimate.ProbeOverheadS(opts.generator.choice))
  assert plan.EstimatedSeconds(opts) == pytest.approx(
      plan.ProbesPerSearch(opts).typical * per_probe + curve + hold)
  pkb_flags.memtier_hold_duration = 0
  assert plan.EstimatedSeconds(_Options(pkb_flags)) == pytest.approx(
      plan.ProbesPerSearch(opts).typical * per_probe + curve)
  assert 'hold: none (--memtier_hold_duration=0)' in _Text(
      _Options(pkb_flags))
  pkb_flags.memtier_hold_duration = None
  assert ('hold: the answer\'s load for 3 s + 1 s warm-up (memtier only) '
          'after the search (redis-benchmark, which runs a request count, is asked for 4.2 s '
          'of requests so that 3 whole seconds come out), every second'
          in _Text(opts))
  pkb_flags.redis_optimize_shards = True
  shards = _Options(pkb_flags)
  assert plan.EstimatedSeconds(shards) == pytest.approx(
      (plan.ProbesPerSearch(shards).typical * per_probe + 20) *
      shards.shards.typical_points)


def test_the_hold_is_estimated_as_long_as_the_tool_is_asked_to_run(
    pkb_flags):
  # A 3 s hold ran about 4.2 s with redis-benchmark while the estimate
  # counted 3 s: the estimate counts what HoldAnswer asks the tool for.
  pkb_flags.memtier_warmup_seconds = 1
  pkb_flags['memtier_curve_rate_percents'].parse('')

  def HoldS(choice, memtier_path=None):
    pkb_flags.load_generator = choice
    pkb_flags.memtier_path = memtier_path
    with_hold = plan.EstimatedSeconds(_Options(pkb_flags))
    pkb_flags.memtier_hold_duration = 0
    without = plan.EstimatedSeconds(_Options(pkb_flags))
    pkb_flags.memtier_hold_duration = None
    return with_hold - without - cost_estimate.ProbeOverheadS(choice)

  assert HoldS('redis_benchmark') == pytest.approx(4.2)  # no warm-up there
  assert HoldS('memtier') == pytest.approx(3 + 1)
  assert HoldS('auto', '/usr/bin/true') == pytest.approx(3 + 1)
  assert HoldS('auto') == pytest.approx(4.2)  # either may run: the longer
  pkb_flags.load_generator = 'memtier'
  assert 'redis-benchmark' not in plan.HoldPlanLine(_Options(pkb_flags))
  assert 'for 3 s + 1 s warm-up after' in plan.HoldPlanLine(
      _Options(pkb_flags))
  pkb_flags.load_generator = 'redis_benchmark'
  assert 'asked for 4.2 s of requests' in plan.HoldPlanLine(
      _Options(pkb_flags))
  # redis-benchmark drops no warm-up: the dry run said '3 s + 1 s warm-up'.
  assert 'warm-up' not in plan.HoldPlanLine(_Options(pkb_flags))


def test_linear_and_staircase_lines_keep_their_counts(pkb_flags):
  pkb_flags.memtier_latency_capped_search = 'linear'
  linear = _Options(pkb_flags)
  assert plan.ProbesPerSearch(linear) == adaptive.ProbeCounts(1, 8, 8)
  assert 'stop at the cap; at most 8 probes' in _Text(linear)
  pkb_flags.memtier_staircase = True
  stairs = _Options(pkb_flags)
  assert plan.ProbesPerSearch(stairs) == adaptive.ProbeCounts(3, 3, 9)
  # A staircase's repeats are a fixed count.
  assert 'answer = mean of 3 repeats with 95 % interval' in _Text(stairs)


@pytest.mark.e2e
def test_dry_run_cost_uses_the_plans_count(tmp_path):
  # Local's default hold (3 s; the pure plan tests check the default):
  # given, since e2e runs hold nothing unless asked (e2e.Command).
  proc, _ = e2e.Run(['--dry_run', '--memtier_run_duration=5',
                     '--memtier_confirm_repeats=4',
                     '--memtier_hold_duration=3'], str(tmp_path))
  assert proc.returncode == 0, proc.stderr
  typical = int(re.search(r'probes per search: about (\d+) \(fewest \d+, '
                          r'at most \d+', proc.stdout).group(1))
  search_min = float(re.search(r'^  search\s+([\d.]+) min', proc.stdout,
                               re.M).group(1))
  # The probes' seconds and the provider's fixed part of the run stage
  # (Local: no cloud's minute).
  # The default generator choice (auto) is costed as memtier's, with the
  # curve's probes (Local: two; the plan's "Curve:" line).
  curve = int(re.search(r'^  (\d+) probes after the search', proc.stdout,
                        re.M).group(1))
  assert curve == 2
  overhead = cost_estimate.ProbeOverheadS('memtier')
  probe_s = typical * (5 + overhead) + curve * (1 + overhead)
  # Then the answer's load, held for Local's default 3 s: as long as
  # redis-benchmark (the auto choice's fallback) is asked to run for it.
  probe_s += 4.2 + cost_estimate.ProbeOverheadS('memtier')
  assert ('hold: the answer\'s load for 3 s after the search (redis-benchmark'
          ', which runs a request count, is asked for 4.2 s') in proc.stdout
  assert search_min == pytest.approx(
      (probe_s + cost_estimate.RATES['Local'].search_fixed_s) / 60, abs=0.05)
  assert typical == 3 + 4  # the measured 3 search probes, one set of 4


def _DryRun(tmp_path, *args):
  proc, _ = e2e.Run(['--dry_run'] + list(args), str(tmp_path))
  assert proc.returncode == 0, proc.stderr
  return proc.stdout, proc.stderr


@pytest.mark.e2e
def test_the_cloud_plan_uses_the_real_runs_threads_and_client_sizing(
    tmp_path):
  # Issue 26 point 1: the dry run showed 1 thread and 1 x t2d-standard-16
  # clients while the real run grows threads to the client's vCPUs, and
  # --machine_type sized the clients like the servers.
  out, err = _DryRun(tmp_path, '--cloud=GCP', '--project=p',
                     '--zone=us-central1-a', '--machine_type=t2d-standard-16')
  assert '  servers: 1 x t2d-standard-16' in out
  assert '  clients: 2 x n2-standard-32' in out, out
  assert '64 vCPUs for the servers\' 16, 4x' in out
  assert 'adaptive: 1..32 threads' in out, out
  assert 'WARNING' not in err
  # The same run's policy, as search_runner builds it with the client's
  # vCPUs, is what the plan printed.
  out, err = _DryRun(tmp_path, '--cloud=GCP', '--project=p',
                     '--zone=us-central1-a', '--machine_type=t2d-standard-16',
                     '--client_machine_type=n2-standard-8')
  assert '  clients: 1 x n2-standard-8' in out
  assert 'adaptive: 1..8 threads' in out
  assert 'the clients have 8 vCPUs for the servers\' 16' in err


def test_the_core_warning_counts_the_replicas_a_server_vm_holds():
  # '--redis_total_num_processes=1 --redis_replicas_per_primary=1' put two
  # redis-servers on Local's one server core without a warning.
  server = options.ServerOptions(shards_per_vm=1, replicas_per_primary=1)
  study = types.SimpleNamespace(server=server)  # What CoreWarnings reads.
  warnings = plan.CoreWarnings(study, 1)
  assert warnings == [
      'WARNING: 2 shards per server VM (primaries and replicas) on 1 '
      'core(s): shards share cores and measure each other; lower '
      '--redis_total_num_processes or use larger server VMs.'], warnings
  assert not plan.CoreWarnings(study, 2)


def test_redis_ycsb_warns_of_more_shards_than_server_cores(pkb_flags):
  # './pkb.py --benchmarks=redis_ycsb --redis_server_cluster_mode
  # --redis_total_num_processes=3' ran 3 shards on Local's one server core
  # without the warning redis_memtier prints for the same servers.
  from perfkitbenchmarker.linux_benchmarks import redis_ycsb_benchmark  # pylint: disable=g-import-not-at-top
  pkb_flags.redis_total_num_processes = 3
  spec = types.SimpleNamespace(CachedOptions=lambda build: build(),
                               ServerVcpus=lambda: 1)
  warnings = redis_ycsb_benchmark.PlanWarnings(spec)
  assert len(warnings) == 1 and warnings[0].startswith(
      'WARNING: 3 shards per server VM on 1 core(s)'), warnings


@pytest.mark.e2e
def test_more_shards_or_io_threads_than_server_cores_are_warned(tmp_path):
  out, err = _DryRun(tmp_path, '--redis_total_num_processes=64',
                     '--redis_server_io_threads=64')
  assert re.search(r'WARNING: 64 shards per server VM on \d+ core', err), err
  assert 'WARNING: --redis_server_io_threads=64 on a server VM' in err


@pytest.mark.e2e
def test_a_memtier_path_of_an_interpreter_script_dry_runs(tmp_path):
  # The dry run runs argv_secret's wrapper check with a library it builds in
  # a temporary directory (a Python #! tool such as the replay stand-in
  # starts nothing and is let through; wrappers are refused: bad_input_test).
  import memtier_replay  # pylint: disable=g-import-not-at-top
  path = memtier_replay.Executable(str(tmp_path))
  out, _ = _DryRun(tmp_path / 'r', f'--memtier_path={path}')
  assert f'load generator memtier_benchmark ({path})' in out


def test_the_curve_is_planned_and_estimated_where_it_runs(pkb_flags):
  opts = _Options(pkb_flags)
  assert plan.CurveProbes(opts) == 2
  assert _Text(opts).endswith(
      'Curve:\n  2 probes after the search at 50, 90 % of the answer\'s '
      'throughput: the answer\'s connections, each at a fixed rate (memtier '
      '--rate-limiting), 1 s each; none if the load generator is '
      'redis-benchmark (no rate limiter); --memtier_curve_rate_percents= '
      'turns it off')
  with_curve = plan.EstimatedSeconds(opts)
  pkb_flags['memtier_curve_rate_percents'].parse('')
  off = _Options(pkb_flags)
  assert plan.CurveProbes(off) == 0 and 'Curve' not in _Text(off)
  assert with_curve - plan.EstimatedSeconds(off) == pytest.approx(
      2 * (1 + cost_estimate.ProbeOverheadS('auto')))
  pkb_flags['memtier_curve_rate_percents'].parse('25,50,75,90')
  pkb_flags.load_generator = 'redis_benchmark'
  assert plan.CurveProbes(_Options(pkb_flags)) == 0
  pkb_flags.load_generator = 'memtier'
  assert plan.CurveProbes(_Options(pkb_flags)) == 4
  pkb_flags.memtier_curve_run_duration = 3
  assert ('4 probes after the search at 25, 50, 75, 90 %' in
          _Text(_Options(pkb_flags)))
  assert 'rate-limiting), 3 s each; --memtier' in _Text(_Options(pkb_flags))
  pkb_flags.load_generator = 'auto'  # with a memtier of the user's: memtier
  pkb_flags.memtier_path = '/usr/bin/true'
  assert 'rate-limiting), 3 s each; --memtier' in _Text(_Options(pkb_flags))
  pkb_flags.redis_optimize_shards = True
  # Given, the curve's flags are refused there (RequireOneCappedAnswer);
  # its default draws none.
  pkb_flags.memtier_curve_run_duration = None
  pkb_flags.memtier_curve_rate_percents = None
  assert plan.CurveProbes(_Options(pkb_flags)) == 0


@pytest.mark.parametrize('run', ['memtier_fixed_load',
                                 'redis_optimize_shards'])
def test_hold_and_curve_flags_are_refused_where_no_answer_is_searched(
    pkb_flags, run):
  # './pkb.py --redis_optimize_shards --memtier_curve_rate_percents=50'
  # and '--memtier_fixed_load --memtier_hold_duration=10' passed their dry
  # runs and ran no curve and no hold, without a word.
  pkb_flags.memtier_path = '/usr/bin/true'
  pkb_flags.load_generator = 'memtier'
  pkb_flags[run].value = True
  _Options(pkb_flags)  # Their defaults: nothing asked.
  pkb_flags.memtier_hold_duration = 0
  pkb_flags['memtier_curve_rate_percents'].parse('')
  _Options(pkb_flags)  # Turned off: nothing asked either.
  for name, text in [('memtier_hold_duration', '10'),
                     ('memtier_curve_rate_percents', '50,90'),
                     ('memtier_curve_run_duration', '2')]:
    pkb_flags[name].parse(text)
    with pytest.raises(errors.UsageError, match=(
        f'--{name}={text}: a --{run} run has no single capped answer to '
        f'hold or to draw the latency-throughput curve under.*drop it or '
        f'--{run}')):
      _Options(pkb_flags)
    pkb_flags[name].value = pkb_flags[name].default
  pkb_flags[run].value = False
  pkb_flags['memtier_hold_duration'].parse('10')
  pkb_flags['memtier_curve_rate_percents'].parse('50,90')
  _Options(pkb_flags)  # A capped search holds and draws them.


def test_the_shard_study_plan_names_the_counts_the_run_climbs(pkb_flags):
  # With --redis_min_shards above the server's vCPUs the plan said
  # "in [5000, vCPUs] from vCPUs / 2"; the run climbs [5000, 5000] from 5000.
  pkb_flags.redis_optimize_shards = True
  pkb_flags.redis_min_shards = 5000
  opts = _Options(pkb_flags)
  assert ('hill-climbed in [5000, 5000] from 5000; at most 8 counts' in
          '\n'.join(plan.SearchPlan(opts, server_vcpus=16)))
  assert opts.shards.Bounds(16) == (5000, 5000, 5000)
  pkb_flags.redis_min_shards = 1
  assert ('hill-climbed in [1, 16] from 8;' in
          '\n'.join(plan.SearchPlan(_Options(pkb_flags), server_vcpus=16)))
  # Unknown before the machines are reached (a static VM): in words.
  assert ('hill-climbed in [1, vCPUs] from vCPUs / 2;' in
          '\n'.join(plan.SearchPlan(_Options(pkb_flags))))
