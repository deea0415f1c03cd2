"""Per-phase wall time and cost of one run, before anything is created.

`EstimateRun` is pure: it takes the run's VM groups with their hourly prices,
the benchmark's probe-time estimate (the module's `EstimatedMinutes(spec)`),
the preload size and how many client VMs share the preload, and returns
minutes and dollars per phase:

  provision  creating the network, firewall and VMs and waiting for SSH
  install    packages, system tuning, starting the shards
  preload    writing the key range at a load rate per client VM (each
             writes its own slice, all at once), then verifying it
  search     the probes (the benchmark's own estimate)
  teardown   stopping the shards and deleting every resource

Every VM is billed for the whole wall time (a VM exists from the start of
provisioning until teardown deletes it), with the one-minute minimum both
GCP and AWS bill per VM. The per-cloud phase times in `RATES` are
assumptions stated here, chosen on the slow side of what the providers
usually take; `FromSpec` adapts a BenchmarkSpec for the dry run, the budget
guard (--max_cost_usd) and the matrix plan.

`PkbEstimate` prices upstream PKB's path for the same study on the same
VMs (Redis and memtier built from source, its memtier binary search of
about 17 runs of 60 s, a one-connection preload); on a cloud the dry run
prints it under ours, with the ratio of VM-dollars.

Extension seam: a new cloud adds its `PhaseRates` to `RATES`; a benchmark
with its own preload says so with an optional `EstimatedPreloadKeys(spec)`,
and with `EstimatedPreloadClientVms(spec)` when fewer than all its client
VMs write it.
"""

import dataclasses
from typing import List, Mapping, Optional, Sequence, Tuple

PHASES = ('provision', 'install', 'preload', 'search', 'teardown')
MIN_BILLED_MINUTES = 1.0


@dataclasses.dataclass(frozen=True)
class PhaseRates:
  """How long the fixed phases take on one kind of provider.

  The preload rates are one client VM's; client VMs preloading side by side
  add up. The servers are assumed to absorb that sum (not modelled): in the
  studies priced here it is far below what they serve, e.g. 6 clients x 100k
  keys/s = 600k SETs/s against the 3.9M ops/s under 1 ms of the T2D
  cluster (scripts/search_model.py).
  """
  provision_min: float
  install_min: float
  teardown_min: float
  preload_keys_per_s: float
  preload_bytes_per_s: float
  preload_fixed_s: float = 10.0  # start shards, connect, verify DBSIZE


RATES: Mapping[str, PhaseRates] = {
    # A scratch directory and cores of this machine; Debian's packages are
    # only checked; redis-benchmark preloads from one core.
    'Local': PhaseRates(0.05, 0.05, 0.05, 50_000, 50e6),
    # Existing machines: no provisioning, but installs over SSH.
    'Static': PhaseRates(0.5, 4.0, 0.2, 100_000, 100e6),
    # Network, firewall rules, placement policy, instances, SSH ready.
    'GCP': PhaseRates(3.0, 4.0, 2.0, 100_000, 100e6),
    # VPC, subnet, gateway, security group, key, placement group, instances.
    'AWS': PhaseRates(4.0, 4.0, 3.0, 100_000, 100e6),
}


@dataclasses.dataclass(frozen=True)
class PkbPath:
  """Upstream PKB's redis_memtier path, per phase (assumptions, stated).

  build_min: build tools, `git clone` + `make` of Redis and `autoreconf`,
    `configure`, `make` of memtier, on top of the cloud's install time.
  preload_keys_per_s: memtier -t 1 -c 1 --pipeline 100 --ratio 1:0 per
    client VM (PKB splits the key range over the client VMs).
  search_runs, run_seconds: its binary search over pipeline then clients
    took 16-17 runs in scripts/bench_search.py's model scenarios; 60 s each.
  run_overhead_s: per run: reachability check, file cleanup, result fetch.
  """
  build_min: float = 6.0
  preload_keys_per_s: float = 300_000
  search_runs: int = 17
  run_seconds: float = 60.0
  run_overhead_s: float = 5.0


PKB_PATH = PkbPath()


@dataclasses.dataclass(frozen=True)
class VmGroup:
  name: str
  count: int
  machine_type: str
  usd_per_hour: float  # one VM


@dataclasses.dataclass(frozen=True)
class Phase:
  name: str
  minutes: float
  usd: float


@dataclasses.dataclass(frozen=True)
class RunEstimate:
  """Minutes and dollars per phase of one run."""
  cloud: str
  groups: Tuple[VmGroup, ...]
  phases: Tuple[Phase, ...]
  reference: Optional['RunEstimate'] = None  # upstream PKB's path

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
  def usd(self) -> float:
    billed = sum(g.usd_per_hour * g.count *
                 max(self.minutes, MIN_BILLED_MINUTES) / 60
                 for g in self.groups)
    return max(billed, sum(p.usd for p in self.phases))

  def Lines(self, timeout_minutes: Optional[float] = None) -> List[str]:
    """The dry-run lines: a per-phase breakdown and the total."""
    lines = [f'Estimate ({self.vm_count} VMs, ${self.usd_per_hour:.4f}/hr '
             'for all of them):']
    for p in self.phases:
      lines.append(f'  {p.name:<9} {p.minutes:6.1f} min  ${p.usd:.4f}')
    at_most = ''
    if timeout_minutes:
      at_most = (f'; at most ${self.usd_per_hour * timeout_minutes / 60:.2f} '
                 f'if it runs to --timeout_minutes={timeout_minutes:g}')
    lines.append(f'Cost: about {self.minutes:.0f} min, estimated '
                 f'${self.usd:.4f}{at_most}.')
    if self.reference is not None:
      ref = self.reference
      lines.append(
          f'Upstream PKB\'s path for this study (source builds, its binary '
          f'search): about {ref.minutes:.0f} min, ${ref.usd:.4f}; this run '
          f'is {self.usd / ref.usd * 100:.0f} % of its VM-dollars.')
    return lines


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


def EstimateRun(cloud: str, groups: Sequence[VmGroup], search_minutes: float,
                preload_keys: int = 0, value_bytes: int = 0,
                rates: Optional[PhaseRates] = None,
                preload_client_vms: int = 1) -> RunEstimate:
  """Per-phase minutes and dollars of one run (see the module docstring)."""
  if rates is None:
    if cloud not in RATES:
      raise ValueError(f'no phase rates for cloud {cloud!r}; add them to '
                       'cost_estimate.RATES')
    rates = RATES[cloud]
  if search_minutes < 0:
    raise ValueError('search_minutes must not be negative')
  hourly = sum(g.usd_per_hour * g.count for g in groups)
  minutes = {
      'provision': rates.provision_min,
      'install': rates.install_min,
      'preload': PreloadSeconds(rates, preload_keys, value_bytes,
                                preload_client_vms) / 60,
      'search': search_minutes,
      'teardown': rates.teardown_min,
  }
  phases = tuple(Phase(name, minutes[name], hourly * minutes[name] / 60)
                 for name in PHASES)
  return RunEstimate(cloud=cloud, groups=tuple(groups), phases=phases)


def PkbEstimate(cloud: str, groups: Sequence[VmGroup], preload_keys: int = 0,
                value_bytes: int = 0, client_vms: int = 1,
                path: PkbPath = PKB_PATH,
                rates: Optional[PhaseRates] = None) -> RunEstimate:
  """The same study on the same VMs the way upstream PKB runs it."""
  rates = rates or RATES[cloud]
  pkb_rates = dataclasses.replace(
      rates, install_min=rates.install_min + path.build_min,
      preload_keys_per_s=path.preload_keys_per_s)
  search = path.search_runs * (path.run_seconds + path.run_overhead_s) / 60
  return EstimateRun(cloud, groups, search, preload_keys, value_bytes,
                     rates=pkb_rates, preload_client_vms=client_vms)


def FromSpec(spec) -> RunEstimate:
  """Adapts a BenchmarkSpec (not yet provisioned) to `EstimateRun`."""
  counts = spec.GroupCounts()
  groups = []
  for name, vm_spec in spec.GroupSpecs().items():
    price = spec.GroupPrice(name)
    groups.append(VmGroup(name, counts[name], vm_spec.machine_type,
                          price.usd_per_hour))
  module = spec.module
  search = (module.EstimatedMinutes(spec)
            if hasattr(module, 'EstimatedMinutes') else 0.0)
  if hasattr(module, 'EstimatedPreloadKeys'):
    keys = module.EstimatedPreloadKeys(spec)
  else:
    # The redis_memtier key range (memtier's flags), the study's preload.
    low = getattr(spec.flags, 'memtier_key_minimum', 1) or 1
    high = getattr(spec.flags, 'memtier_key_maximum', 0) or 0
    keys = max(0, high - low + 1)
  value_bytes = getattr(spec.flags, 'memtier_data_size', 0) or 0
  preloading = counts.get('clients', 1)
  if hasattr(module, 'EstimatedPreloadClientVms'):
    preloading = module.EstimatedPreloadClientVms(spec)
  estimate = EstimateRun(spec.cloud, groups, search, keys, value_bytes,
                         preload_client_vms=preloading)
  if spec.cloud in ('GCP', 'AWS'):
    estimate = dataclasses.replace(estimate, reference=PkbEstimate(
        spec.cloud, groups, keys, value_bytes, counts.get('clients', 1)))
  return estimate


def ScheduleMinutes(durations: Sequence[float], processes: int) -> float:
  """Wall time of running `durations` with `processes` at a time, in order.

  Each next job starts on the first free slot (how the matrix driver runs
  cells), so this is the makespan of that list schedule.
  """
  slots = [0.0] * max(1, processes)
  for d in durations:
    i = slots.index(min(slots))
    slots[i] += d
  return max(slots) if durations else 0.0
