"""Planning a run before anything is created: the one way to plan.

The driver (`pkb.py`, one run of one or more benchmarks) and the matrix
(`matrix_runner.py`, one plan per cell) plan a benchmark the same way
(`PlanBenchmark`): the module's `CheckPrerequisites`, the spec built without
VMs (unpriced machine types and bad VM specs refused), its plan warnings on
stderr, what prepare would fail on (`prepare_checks`), the per-phase cost
estimate and, for --dry_run, the plan text. `CheckBudget` then refuses a total
above --max_cost_usd, before anything is created.
"""

import dataclasses
import sys
from typing import Any, List, Optional, Sequence, Tuple

from perfkitbenchmarker import benchmark_contract
from perfkitbenchmarker import benchmark_spec as spec_lib
from perfkitbenchmarker import cost_estimate
from perfkitbenchmarker import errors
from perfkitbenchmarker import flag_types
from perfkitbenchmarker import prepare_checks
from perfkitbenchmarker import pricing
from perfkitbenchmarker import providers

flag_types.DEFINE_float(
    'max_cost_usd', None,
    'Refuse, before anything is created, a run or matrix whose estimated cost '
    'is above this many US dollars.',
    lower_bound=0, upper_bound=1e6)


@dataclasses.dataclass(frozen=True)
class Plan:
  """One benchmark's plan: its VM-less spec, estimate and dry-run text."""
  spec: spec_lib.BenchmarkSpec
  estimate: cost_estimate.RunEstimate
  lines: Tuple[str, ...]  # The --dry_run plan; empty for a real run.


def Catalog(flag_values,
            base: Optional[pricing.PriceCatalog] = None
            ) -> pricing.PriceCatalog:
  """The prices of a run: --price_basis and --machine_price applied."""
  base = base or pricing.PriceCatalog.Load()
  return base.ForRun(flag_values.price_basis,
                     pricing.ParseMachinePrices(flag_values.machine_price))


def PlanBenchmark(module, config: Any, run_uri: str, flag_values,
                  catalog: pricing.PriceCatalog, warning_prefix: str = ''
                  ) -> Plan:
  """Plans one benchmark (module doc); raises errors.Error to refuse it."""
  benchmark_contract.Call(module, 'CheckPrerequisites', config)
  spec = spec_lib.BenchmarkSpec(
      module, config, run_uri, providers.CloudOf(flag_values), None,
      flag_values, catalog, lambda s: None)
  for warning in spec.PlanWarnings():
    print(warning_prefix + warning, file=sys.stderr)
  prepare_checks.Check(spec)  # What prepare would fail on.
  estimate = cost_estimate.FromSpec(spec)
  lines = ()
  if flag_values.dry_run:
    lines = tuple(DryRunLines(
        spec, benchmark_contract.Call(module, 'DescribePlan', spec) +
        prepare_checks.PlanLines(spec, flag_values), estimate,
        flag_values.timeout_minutes))
  return Plan(spec, estimate, lines)


def DryRunLines(spec, plan_lines: List[str], estimate: cost_estimate.RunEstimate,
                timeout_minutes: float) -> List[str]:
  """The VMs, software, search and cost of a run, without creating anything."""
  lines = [f'Dry run of {spec.name} on {spec.cloud} (nothing is created).',
           'VMs:']
  counts = spec.GroupCounts()
  for group, vm_spec in spec.GroupSpecs().items():
    price = spec.GroupPrice(group)
    where = vm_spec.zone or Where(spec.can)
    priced = ('' if not spec.can.priced_as_catalog else
              f' priced as {price.cloud} {price.machine_type}')
    lines.append(
        f'  {group}: {counts[group]} x {vm_spec.machine_type} in {where}'
        f'{priced}, {price.Describe().replace("/hr", "/hr each", 1)}')
  sizing = spec.ClientSizing()
  if sizing and not sizing.startswith('WARNING'):  # Warnings go to stderr.
    lines.append(f'  {sizing}')
  split = spec.LocalSplit()
  if split is not None:
    lines.append(f'  {split.Line()}')
  return lines + plan_lines + estimate.Lines(timeout_minutes)


def Where(can) -> str:
  """Where a VM group without a zone is, as its machines' capabilities say
  (virtual_machine.Capabilities): the runner's own machine, or the user's
  machines listed in --static_vm_file."""
  if can.is_runner_machine:
    return 'this machine'
  return '?' if can.made_by_run else 'the machines file'


# Stages that only stop and delete what a run made.
DELETING_STAGES = frozenset({'cleanup', 'teardown'})


def CheckBudget(usd: float, flag_values, what: str,
                stages: Sequence[str]) -> None:
  """Refuses an estimate above --max_cost_usd (one line, exit 2), unless
  the `stages` asked only stop and delete (refused, they would leave the
  run's VMs up, costing on)."""
  limit = flag_values.max_cost_usd
  if stages and set(stages) <= DELETING_STAGES:
    return
  if limit is not None and usd > limit:
    raise errors.UsageError(
        f'{what} is estimated at ${usd:{".2f" if usd >= 1 else ".4f"}}, '
        f'above --max_cost_usd={limit:g}; nothing was created. Raise the '
        'budget or shrink the run.')
