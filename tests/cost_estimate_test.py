"""The per-phase estimate: minutes and dollars of every phase, not just probes."""

import types

import pytest

from perfkitbenchmarker import cost_estimate as ce
from perfkitbenchmarker.linux_benchmarks import redis_memtier_benchmark

GROUPS = (ce.VmGroup('servers', 1, 't2d-standard-16', 0.675936),
          ce.VmGroup('clients', 2, 'n2-standard-32', 1.553888))
HOURLY = 0.675936 + 2 * 1.553888


def _Rates(network=0, ready=0, install=0, delete=0, network_delete=0,
           keys=100_000, byte_rate=1e9, fixed=0, search_fixed=0):
  return ce.PhaseRates(network, ready, install, delete, network_delete, keys,
                       byte_rate, search_fixed_s=search_fixed,
                       preload_fixed_s=fixed)


def test_every_phase_is_counted_and_vms_billed_while_they_exist():
  rates = _Rates(network=1, ready=2, install=4, delete=1.5, network_delete=1)
  est = ce.EstimateRun('GCP', GROUPS, search_minutes=20,
                       preload_keys=1_200_000, value_bytes=100, rates=rates)
  minutes = {p.name: p.minutes for p in est.phases}
  assert minutes == pytest.approx({'provision': 3, 'install': 4,
                                   'preload': 0.2, 'search': 20,
                                   'teardown': 2.5})
  billed = {p.name: p.billed_minutes for p in est.phases}
  # The network before the VMs and after them bills no VM.
  assert billed == pytest.approx({'provision': 2, 'install': 4,
                                  'preload': 0.2, 'search': 20,
                                  'teardown': 1.5})
  assert est.minutes == pytest.approx(29.7)
  assert est.billed_minutes == pytest.approx(27.7)
  assert est.vm_count == 3
  assert est.usd_per_hour == pytest.approx(HOURLY)
  assert est.usd == pytest.approx(HOURLY * 27.7 / 60)
  assert sum(p.usd for p in est.phases) == pytest.approx(est.usd)
  lines = est.Lines()
  assert '(1.0 min before or after the VMs exist)' in lines[1]
  assert 'before or after' not in lines[2]


def test_preload_is_bound_by_the_slower_of_keys_and_bytes():
  rates = _Rates(keys=100_000, byte_rate=10e6, fixed=10)
  # 1M keys of 1 KB: 100 MB at 10 MB/s = 100 s > 10 s at the key rate.
  assert ce.PreloadSeconds(rates, 1_000_000, 1000) == pytest.approx(110)
  assert ce.PreloadSeconds(rates, 0, 1000) == 0


def test_one_minute_minimum_billing_and_the_lines():
  rates = _Rates(keys=1, byte_rate=1)
  est = ce.EstimateRun('Local', GROUPS[:1], search_minutes=0.1, rates=rates)
  assert est.usd == pytest.approx(0.675936 / 60)
  lines = est.Lines(timeout_minutes=60)
  assert lines[0].startswith('Estimate (1 VMs, $0.6759/hr')
  # No keys to load: no preload line.
  assert [l.split()[0] for l in lines[1:-1]] == [
      'provision', 'install', 'search', 'teardown']
  assert 'at most $0.6759 if it runs to --timeout_minutes=60' in lines[-1]
  # A cheap run's bound at the estimate's precision (it said '$0.00'),
  # never below the estimate (a minute is billed at the least).
  assert est.Lines(timeout_minutes=5)[-1].endswith(
      'estimated $0.0113; at most $0.0563 if it runs to --timeout_minutes=5.')
  assert est.Lines(timeout_minutes=0.5)[-1].endswith(
      'estimated $0.0113; at most $0.0113 if it runs to '
      '--timeout_minutes=0.5.')
  # A deadline shorter than the estimate stops the run: said, not priced.
  assert est.Lines(timeout_minutes=0.05)[-1].endswith(
      '; longer than --timeout_minutes=0.05: the run would be stopped at its '
      'deadline, then torn down.')
  lines = ce.EstimateRun('Local', GROUPS[:1], 0.1, 1000, 10,
                         rates=rates).Lines()
  assert [l.split()[0] for l in lines[1:-1]] == list(ce.PHASES)


def test_a_plan_of_seconds_is_not_about_0_min():
  # A dry run of a short plan said 'Cost: about 0 min' (and a matrix's
  # cells 'est. min 0').
  rates = _Rates(keys=1, byte_rate=1)
  est = ce.EstimateRun('Local', GROUPS[:1], search_minutes=0.1, rates=rates)
  assert est.minutes < 1
  assert est.Lines()[-1].startswith('Cost: under a minute, estimated')
  assert ce.Minutes(0.49) == 'under a minute'
  assert ce.Minutes(12.4) == 'about 12 min'


def test_cloud_rates_differ_and_unknown_clouds_are_refused():
  local = ce.EstimateRun('Local', GROUPS, 1)
  gcp = ce.EstimateRun('GCP', GROUPS, 1)
  aws = ce.EstimateRun('AWS', GROUPS, 1)
  assert local.minutes < min(gcp.minutes, aws.minutes)
  assert gcp.phases[0].minutes == pytest.approx(
      ce.RATES['GCP'].network_min + ce.RATES['GCP'].vms_ready_min)
  assert aws.phases[0].minutes == pytest.approx(
      ce.RATES['AWS'].network_min + ce.RATES['AWS'].vms_ready_min)
  with pytest.raises(ValueError, match='Azure'):
    ce.EstimateRun('Azure', GROUPS, 1)
  with pytest.raises(ValueError):
    ce.EstimateRun('GCP', GROUPS, -1)


def test_schedule_of_parallel_cells():
  assert ce.ScheduleMinutes([30, 30, 33, 33], 1) == 126
  assert ce.ScheduleMinutes([30, 30, 33, 33], 2) == 63
  assert ce.ScheduleMinutes([30, 30, 33, 33], 8) == 33
  assert ce.ScheduleMinutes([], 3) == 0


def test_from_spec_uses_the_benchmark_estimate_and_key_range():
  price = types.SimpleNamespace(usd_per_hour=2.0)
  spec = types.SimpleNamespace(
      cloud='AWS',
      flags=types.SimpleNamespace(memtier_key_minimum=1,
                                  memtier_key_maximum=500_000,
                                  memtier_data_size=100),
      module=types.SimpleNamespace(EstimatedMinutes=lambda s: 12.5,
                                   EstimatedPreloadKeys=lambda s: 500_000),
      GroupCounts=lambda: {'servers': 1, 'clients': 2},
      GroupSpecs=lambda: {'servers': types.SimpleNamespace(machine_type='a'),
                          'clients': types.SimpleNamespace(machine_type='b')},
      GroupPrice=lambda group: price)
  est = ce.FromSpec(spec)
  phases = {p.name: p.minutes for p in est.phases}
  # The benchmark's probe minutes and the provider's fixed part of the
  # run stage.
  assert phases['search'] == pytest.approx(
      12.5 + ce.RATES['AWS'].search_fixed_s / 60)
  # A cloud dry run prints this run's estimate only: the model of upstream
  # PKB's path lives in scripts/pkb_model.py, not in the product.
  assert not any('PKB' in line for line in est.Lines())
  assert not hasattr(ce, 'PkbEstimate')
  # Both client VMs preload a half each.
  assert phases['preload'] == pytest.approx(
      ce.PreloadSeconds(ce.RATES['AWS'], 500_000, 100, client_vms=2) / 60)
  assert est.usd_per_hour == 6.0 and est.vm_count == 3
  # A benchmark whose preload runs from fewer client VMs says so.
  spec.module.EstimatedPreloadClientVms = lambda s: 1
  phases = {p.name: p.minutes for p in ce.FromSpec(spec).phases}
  assert phases['preload'] == pytest.approx(
      ce.PreloadSeconds(ce.RATES['AWS'], 500_000, 100) / 60)


def test_a_module_without_an_estimate_is_counted_to_its_timeout():
  # Upstream PKB's modules have no EstimatedMinutes: their run is not
  # estimated, so the dry run and --max_cost_usd take its bound.
  price = types.SimpleNamespace(usd_per_hour=3.0)
  spec = types.SimpleNamespace(
      cloud='GCP', name='example_vm',
      flags=types.SimpleNamespace(timeout_minutes=20, memtier_key_maximum=9),
      module=types.SimpleNamespace(),
      GroupCounts=lambda: {'default': 1},
      GroupSpecs=lambda: {'default': types.SimpleNamespace(machine_type='a')},
      GroupPrice=lambda group: price)
  est = ce.FromSpec(spec)
  assert est.minutes == pytest.approx(20)
  # Billed while the VMs exist: the whole bound but the network's minutes.
  unbilled = ce.RATES['GCP'].network_min + ce.RATES['GCP'].network_delete_min
  assert est.usd == pytest.approx(3.0 * (20 - unbilled) / 60)
  phases = {p.name: p.minutes for p in est.phases}
  assert phases['preload'] == 0  # memtier's key range is not its preload
  lines = est.Lines(timeout_minutes=20)
  run, = [l for l in lines if l.split()[0] == 'run']
  assert 'example_vm gives no EstimatedMinutes' in run
  assert lines[-1] == (f'Cost: not estimated; at most ${est.usd:.4f} if it '
                       'runs to --timeout_minutes.')
  assert not any(l.split()[0] in ('preload', 'search') for l in lines[1:])


def test_redis_memtier_preloads_its_key_range():
  flags = types.SimpleNamespace(memtier_key_minimum=1,
                                memtier_key_maximum=500_000)
  assert redis_memtier_benchmark.EstimatedPreloadKeys(
      types.SimpleNamespace(flags=flags)) == 500_000


def test_client_vms_preloading_side_by_side_divide_the_preload():
  rates = _Rates(keys=100_000, byte_rate=10e6, fixed=10)
  # 50M keys of 100 B from one VM: 500 s by keys, 500 s by bytes.
  assert ce.PreloadSeconds(rates, 50_000_000, 100) == pytest.approx(510)
  assert ce.PreloadSeconds(rates, 50_000_000, 100,
                           client_vms=6) == pytest.approx(10 + 500 / 6)
  assert ce.PreloadSeconds(rates, 50_000_000, 100,
                           client_vms=0) == pytest.approx(510)
  one = ce.EstimateRun('GCP', GROUPS, 1, 50_000_000, 100, rates=rates)
  two = ce.EstimateRun('GCP', GROUPS, 1, 50_000_000, 100, rates=rates,
                       preload_client_vms=2)
  preload = lambda e: {p.name: p.minutes for p in e.phases}['preload']
  assert preload(two) == pytest.approx((10 + 250) / 60)
  assert one.minutes - two.minutes == pytest.approx(250 / 60)


def test_the_run_stages_fixed_part_is_the_providers():
  # A cloud's minute (an assumption) is not Local's: the nightly local plan
  # said about 5 minutes for 3 cells that ran in 95-115 s, each cell's
  # search carrying a cloud's 60 s.
  def Search(cloud):
    spec = types.SimpleNamespace(
        cloud=cloud, flags=types.SimpleNamespace(),
        module=types.SimpleNamespace(EstimatedMinutes=lambda s: 0.5),
        GroupCounts=lambda: {'servers': 1},
        GroupSpecs=lambda: {'servers': types.SimpleNamespace(
            machine_type='a')},
        GroupPrice=lambda group: types.SimpleNamespace(usd_per_hour=1.0))
    return {p.name: p.minutes for p in ce.FromSpec(spec).phases}['search']
  assert Search('Local') == pytest.approx(0.5 + ce.LOCAL_SEARCH_FIXED_S / 60)
  assert Search('GCP') == pytest.approx(
      0.5 + ce.RATES['GCP'].search_fixed_s / 60)
  assert ce.LOCAL_SEARCH_FIXED_S < 15 < ce.RATES['GCP'].search_fixed_s
  with pytest.raises(ValueError, match='Azure'):
    Search('Azure')


def test_cloud_rates_say_where_they_come_from():
  # Every cloud's fixed phases are set; the VMs are billed only while they
  # exist, so no cloud bills the network minutes.
  for cloud, rates in ce.RATES.items():
    est = ce.EstimateRun(cloud, GROUPS, 1, rates=rates)
    assert est.billed_minutes <= est.minutes, cloud
  gcp = ce.EstimateRun('GCP', GROUPS, 0)
  assert gcp.minutes - gcp.billed_minutes == pytest.approx(
      ce.RATES['GCP'].network_min + ce.RATES['GCP'].network_delete_min)
