"""Per-phase wall time and cost of one run, before anything is created.

`EstimateRun` (pure) takes the VM groups with their hourly prices, the
benchmark's probe minutes (`EstimatedMinutes(spec)`) and the preload, and
returns minutes and dollars for provision (network, then every VM at once
until SSH answers), install, preload (each client VM its slice, at once),
search (probes plus the run stage's fixed part) and teardown. A VM bills
from its create request until its delete finished, at least a minute; the
network objects around the VMs take wall time but bill nothing. `RATES`
says where each per-cloud time comes from (measured, published or
assumed); `CompareWithRun` (scripts/check_estimate.py) sets a run's
`--timing_measurements=runtimes` stages against them, which is how they
should be corrected. `FromSpec` serves the dry run, --max_cost_usd and the
matrix plan; upstream PKB's path is modelled in scripts/pkb_model.py.
A new cloud adds its `PhaseRates`; a benchmark with a preload gives
`EstimatedPreloadKeys(spec)` (and `EstimatedPreloadClientVms(spec)`). A
benchmark without `EstimatedMinutes` (upstream PKB's modules) gets no
estimate of its run: its run phase is the rest of --timeout_minutes, the
most it can cost, which --max_cost_usd then checks.
"""

import dataclasses
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from perfkitbenchmarker import benchmark_contract

PHASES = ('provision', 'install', 'preload', 'search', 'teardown')
MIN_BILLED_MINUTES = 1.0


@dataclasses.dataclass(frozen=True)
class PhaseRates:
  """How long the fixed phases take on one kind of provider.

  Preload rates are one client VM's; side by side they add up, and the
  servers are assumed to absorb the sum (6 clients x 100k keys/s = 600k
  SETs/s against the T2D cluster's 3.9M ops/s under 1 ms:
  scripts/search_scenarios.py).
  """
  network_min: float  # network, subnets, firewall, placement: not billed
  vms_ready_min: float  # create requests until every VM answers SSH
  install_min: float  # every VM at once, the slowest VM's
  vms_delete_min: float  # every VM's delete at once, until gone
  network_delete_min: float  # after the VMs are gone: not billed
  preload_keys_per_s: float
  preload_bytes_per_s: float
  # The run stage beyond its probes, once a run: the deployment's checks
  # before the first probe, the summary, samples and run-record writes after
  # the last, and on a VM the SSH sessions they take.
  search_fixed_s: float
  preload_fixed_s: float = 10.0  # start shards, connect, verify DBSIZE


# Install: scripts/bench_install.py on a fresh Debian 12 root measured ours
# at 13-20 s for the slower VM, a client (redis-tools and the C compiler;
# 2026-11-24: docs/data/install.json, rendered in docs/search.md).
# memtier from Redis's APT repository (one more repository, two
# `apt-get update`s and a small package) could not be measured here; it and
# our own SSH steps (probe, tuning, scratch directory, compiling
# argv_secret) get the rest of the minute.
OUR_INSTALL_MIN = 1.0
# Local's run stage beyond its probes: the three cells of
# configs/nightly_local.yaml (2026-11-26, a load average of 10-12) measured
# `Benchmark Run Runtime` 21.0, 29.8 and 23.3 s for 6, 7 and 5 probes of
# 16.2, 23.4 and 17.2 s: 2-4 s beyond the probes and PROBE_OVERHEAD_S each
# (a default study at a load average of 12: 41.0 s for 7 probes of 32.9 s,
# 4.6 s), rounded up. Their `Benchmark Prepare Runtime` (shards, preload of 20,000
# keys, verify; the third also creates a cluster) was 0.3, 1.0 and 5.1 s:
# Local's fixed preload part is 3 s, not a VM's 10.
LOCAL_SEARCH_FIXED_S = 5.0
RATES: Mapping[str, PhaseRates] = {
    # A scratch directory and cores of this machine; Debian's packages are
    # only checked; redis-benchmark preloads from one core.
    # The run stage's fixed part: LOCAL_SEARCH_FIXED_S.
    'Local': PhaseRates(0.0, 0.05, 0.05, 0.05, 0.0, 50_000, 50e6,
                        search_fixed_s=LOCAL_SEARCH_FIXED_S,
                        preload_fixed_s=3.0),
    # Existing machines: no provisioning, but installs over SSH. The run
    # stage's fixed part on a VM (here and below) is an assumption, not
    # measured: a minute.
    'Static': PhaseRates(0.0, 0.5, OUR_INSTALL_MIN, 0.2, 0.0, 100_000,
                         100e6, search_fixed_s=60.0),
    # VMs ready: time-to-SSH of about 25 s for GCE VMs of <= 32 vCPUs (R.
    # Aboukhalil, "Move Fast and Break the Cloud", 2018, ~5,000 VMs) and 41.5
    # s for a 2-vCPU Debian VM (C. McAnlis, Google Cloud Performance Atlas,
    # 2017), rounded up to a minute for the image and machine-type look-ups
    # and the SSH waiter's polling. Network objects (network, subnetwork,
    # placement policy, 2-3 firewall rules, one waited operation each) and
    # the deletes are assumptions, not measured.
    'GCP': PhaseRates(1.0, 1.0, OUR_INSTALL_MIN, 1.0, 1.0, 100_000, 100e6,
                      search_fixed_s=60.0),
    # VMs ready: about 29 s from RunInstances to SSH for Linux on c5.xlarge
    # (C. Percival, "EC2 boot time benchmarking", 2021, medians of 9), a
    # minute with our polling. EC2 bills neither pending nor shutting-down
    # (the EC2 user guide's instance lifecycle table), so the billed delete
    # minute is an upper bound. VPC, subnet, gateway, route table, security
    # group, key and placement group are quick API calls; their deletes wait
    # for the instances' network interfaces to go (assumed).
    'AWS': PhaseRates(0.5, 1.0, OUR_INSTALL_MIN, 1.0, 1.0, 100_000, 100e6,
                      search_fixed_s=60.0),
}


# Seconds one probe costs beyond its nominal duration, in two parts. The
# harness's own (starting the probe, waiting, collecting it with its CPU
# and interference figures, the search step, the samples):
# scripts/bench_probe_overhead.py's "harness" (wall minus the tool's
# lifetime), 2026-11-26 on a 2-core machine shared with other jobs (load
# average 8-12), 2 s probes, after one SSH trip per probe and the samplers
# read in the tool's idle tail: 0.2-0.3 s on Local, 0.3-0.4 s over a
# loopback sshd; rounded up to 0.5 s for a cloud VM's network round trip.
HARNESS_OVERHEAD_S = 0.5
# What the tool itself adds (the bench's "overrun": its lifetime minus the
# nominal duration), measured the same day: memtier_benchmark starts up and
# then idles through its last second before it exits, 1.0-1.9 s a probe
# (mean 1.3-1.6 s at that load; about 1.05 s on a quiet machine);
# redis-benchmark's request count is sized for the duration from the last
# probe's rate, so it ends about on time: 0.4 s on average, either side.
TOOL_OVERRUN_S = {'memtier': 1.0, 'redis_benchmark': 0.4}


def ProbeOverheadS(generator: str) -> float:
  """Seconds a probe of `generator` (GeneratorOptions.choice) costs beyond
  its nominal duration. 'auto' is counted as memtier (the study's tool
  wherever it is installed): an estimate that errs high, not low."""
  return HARNESS_OVERHEAD_S + TOOL_OVERRUN_S.get(generator,
                                                 TOOL_OVERRUN_S['memtier'])


@dataclasses.dataclass(frozen=True)
class VmGroup:
  name: str
  count: int
  machine_type: str
  usd_per_hour: float  # one VM


@dataclasses.dataclass(frozen=True)
class Phase:
  name: str
  minutes: float  # wall time
  usd: float
  billed_minutes: float  # of `minutes`, the part while the VMs exist


@dataclasses.dataclass(frozen=True)
class RunEstimate:
  """Minutes and dollars per phase of one run."""
  cloud: str
  groups: Tuple[VmGroup, ...]
  phases: Tuple[Phase, ...]
  # Why the search phase is the rest of the run's bound, not an estimate
  # ('' when estimated).
  unestimated: str = ''

  @property
  def usd_per_hour(self) -> float:
    return sum(g.usd_per_hour * g.count for g in self.groups)

  @property
  def vm_count(self) -> int:
    return sum(g.count for g in self.groups)

  @property
  def minutes(self) -> float:
    return sum(p.minutes for p in self.phases)

  @property
  def billed_minutes(self) -> float:
    return sum(p.billed_minutes for p in self.phases)

  @property
  def usd(self) -> float:
    billed = sum(g.usd_per_hour * g.count *
                 max(self.billed_minutes, MIN_BILLED_MINUTES) / 60
                 for g in self.groups)
    return max(billed, sum(p.usd for p in self.phases))

  def Record(self) -> Dict[str, Any]:
    """What the run record keeps, for `CompareWithRun` after the run."""
    return {'cloud': self.cloud,
            'minutes': {p.name: round(p.minutes, 3) for p in self.phases},
            'usd': round(self.usd, 4)}

  def Lines(self, timeout_minutes: Optional[float] = None) -> List[str]:
    """The dry-run lines: a per-phase breakdown and the total."""
    lines = [f'Estimate ({self.vm_count} VMs, ${self.usd_per_hour:.4f}/hr '
             'for all of them):']
    for p in self.phases:
      if p.name == 'preload' and not p.minutes:
        continue  # The benchmark loads nothing before its run.
      unbilled = p.minutes - p.billed_minutes
      note = (f'  ({unbilled:.1f} min before or after the VMs exist)'
              if unbilled > 0.05 else '')
      name = p.name
      if name == 'search' and self.unestimated:
        name, note = 'run', f'  ({self.unestimated})'
      lines.append(f'  {name:<9} {p.minutes:6.1f} min  ${p.usd:.4f}{note}')
    if self.unestimated:
      lines.append(f'Cost: not estimated; at most ${self.usd:.4f} if it runs '
                   'to --timeout_minutes.')
      return lines
    at_most = ''
    if timeout_minutes and timeout_minutes < self.minutes:
      # 'at most' below the estimate read as a contradiction ('estimated
      # $0.0028; at most $0.00'): the deadline would stop the run first.
      at_most = (f'; longer than --timeout_minutes={timeout_minutes:g}: the '
                 'run would be stopped at its deadline, then torn down')
    elif timeout_minutes:
      # At the estimate's precision ($0.00 said nothing), and never below
      # it (the minimum billed minutes count at any deadline).
      bound = max(self.usd, self.usd_per_hour * timeout_minutes / 60)
      at_most = (f'; at most ${bound:.4f} if it runs to '
                 f'--timeout_minutes={timeout_minutes:g}')
    lines.append(f'Cost: {Minutes(self.minutes)}, estimated '
                 f'${self.usd:.4f}{at_most}.')
    return lines


def Minutes(minutes: float) -> str:
  """An estimate's minutes for people: a plan of seconds read 'about 0
  min'."""
  return 'under a minute' if minutes < 1 else f'about {minutes:.0f} min'


def PreloadSeconds(rates: PhaseRates, keys: int, value_bytes: int,
                   client_vms: int = 1) -> float:
  """The slower of the key rate and the byte rate of `client_vms` client VMs
  writing their slices at once, plus the fixed part."""
  if keys <= 0:
    return 0.0
  vms = max(1, client_vms)
  return rates.preload_fixed_s + max(
      keys / (rates.preload_keys_per_s * vms),
      keys * max(value_bytes, 1) / (rates.preload_bytes_per_s * vms))


def RatesOf(cloud: str) -> PhaseRates:
  if cloud not in RATES:
    raise ValueError(f'no phase rates for cloud {cloud!r}; add them to '
                     'cost_estimate.RATES')
  return RATES[cloud]


def EstimateRun(cloud: str, groups: Sequence[VmGroup], search_minutes: float,
                preload_keys: int = 0, value_bytes: int = 0,
                rates: Optional[PhaseRates] = None,
                preload_client_vms: int = 1) -> RunEstimate:
  """Per-phase minutes and dollars of one run (see the module docstring)."""
  if rates is None:
    rates = RatesOf(cloud)
  if search_minutes < 0:
    raise ValueError('search_minutes must not be negative')
  hourly = sum(g.usd_per_hour * g.count for g in groups)
  preload = PreloadSeconds(rates, preload_keys, value_bytes,
                           preload_client_vms) / 60
  # (wall minutes, of which billed)
  minutes = {
      'provision': (rates.network_min + rates.vms_ready_min,
                    rates.vms_ready_min),
      'install': (rates.install_min, rates.install_min),
      'preload': (preload, preload),
      'search': (search_minutes, search_minutes),
      'teardown': (rates.vms_delete_min + rates.network_delete_min,
                   rates.vms_delete_min),
  }
  phases = tuple(Phase(name, minutes[name][0],
                       hourly * minutes[name][1] / 60, minutes[name][1])
                 for name in PHASES)
  return RunEstimate(cloud=cloud, groups=tuple(groups), phases=phases)


def FromSpec(spec) -> RunEstimate:
  """Adapts a BenchmarkSpec (not yet provisioned) to `EstimateRun`."""
  counts = spec.GroupCounts()
  groups = [VmGroup(name, counts[name], vm_spec.machine_type,
                    spec.GroupPrice(name).usd_per_hour)
            for name, vm_spec in spec.GroupSpecs().items()]
  module = spec.module
  if benchmark_contract.Has(module, 'EstimatedMinutes'):
    # The benchmark's probe minutes, and the run stage's fixed part here.
    search = (module.EstimatedMinutes(spec) +
              RatesOf(spec.cloud).search_fixed_s / 60)
    unestimated = ''
  else:
    # A module that says nothing of its run (upstream's have no such hook)
    # is counted to the run's bound, so --max_cost_usd holds for it too.
    search = None
    unestimated = (f'{spec.name} gives no EstimatedMinutes: the rest of '
                   f'--timeout_minutes={spec.flags.timeout_minutes:g}')
  keys = (module.EstimatedPreloadKeys(spec) if benchmark_contract.Has(
      module, 'EstimatedPreloadKeys') else 0)
  value_bytes = getattr(spec.flags, 'memtier_data_size', 0) or 0
  preloading = counts.get('clients', 1)
  if benchmark_contract.Has(module, 'EstimatedPreloadClientVms'):
    preloading = module.EstimatedPreloadClientVms(spec)
  estimate = EstimateRun(spec.cloud, groups, search or 0.0, keys,
                         value_bytes, preload_client_vms=preloading)
  if search is None:
    estimate = EstimateRun(
        spec.cloud, groups,
        max(0.0, spec.flags.timeout_minutes - estimate.minutes), keys,
        value_bytes, preload_client_vms=preloading)
  return dataclasses.replace(estimate, unestimated=unestimated)


# The driver's stage samples (timing_util, --timing_measurements=runtimes)
# that measure each group of the estimate's phases.
MEASURED_BY = (
    (('provision',), ('Resource Provisioning',)),
    (('install', 'preload'), ('Benchmark Prepare',)),
    (('search',), ('Benchmark Run',)),
    (('teardown',), ('Benchmark Cleanup', 'Resource Teardown')),
)


@dataclasses.dataclass(frozen=True)
class PhaseCheck:
  phases: Tuple[str, ...]
  stages: Tuple[str, ...]
  estimated_min: float
  measured_min: Optional[float]  # None: a stage sample is missing

  @property
  def ratio(self) -> Optional[float]:
    if self.measured_min is None or self.estimated_min <= 0:
      return None
    return self.measured_min / self.estimated_min


def CompareWithRun(estimated_minutes: Mapping[str, float],
                   stage_seconds: Mapping[str, float]) -> List[PhaseCheck]:
  """The estimate's phases against a run's '<stage> Runtime' samples (by
  stage name, in seconds), grouped as MEASURED_BY says."""
  checks = []
  for phases, stages in MEASURED_BY:
    measured = [stage_seconds.get(stage) for stage in stages]
    checks.append(PhaseCheck(
        phases, stages,
        sum(float(estimated_minutes.get(p, 0.0)) for p in phases),
        None if None in measured else sum(measured) / 60))
  return checks


def ScheduleMinutes(durations: Sequence[float], processes: int) -> float:
  """Wall time of `durations` run `processes` at a time, each next one on
  the first free slot (as the matrix driver runs cells)."""
  slots = [0.0] * max(1, processes)
  for d in durations:
    slots[slots.index(min(slots))] += d
  return max(slots) if durations else 0.0
