"""The dry run's VM lines say where a group without a zone is from what its
provider's machines can do (providers.CAPABILITIES), not from the cloud's
name (issue 37 point 2)."""

import pytest

from perfkitbenchmarker import benchmark_spec
from perfkitbenchmarker import cost_estimate
from perfkitbenchmarker import errors
from perfkitbenchmarker import pricing
from perfkitbenchmarker import providers
from perfkitbenchmarker import run_plan
from perfkitbenchmarker import virtual_machine
from perfkitbenchmarker.linux_benchmarks import redis_memtier_benchmark as bench


def test_where_follows_the_machines_capabilities():
  assert run_plan.Where(providers.CapabilitiesOf('Local')) == 'this machine'
  assert run_plan.Where(
      providers.CapabilitiesOf('Static')) == 'the machines file'
  # A provider named nowhere here whose machines are the runner's own reads
  # as Local does.
  assert run_plan.Where(virtual_machine.Capabilities(
      installs_packages=False, is_runner_machine=True)) == 'this machine'
  assert run_plan.Where(virtual_machine.Capabilities(made_by_run=True)) == '?'


@pytest.mark.parametrize('cloud, says', [
    ('Local', ' x local in this machine priced as '),
    # Not Local's "x local": the machines' own, 'static' when the file
    # gives none (as their VMs and samples say).
    ('Static', ': 1 x static in the machines file priced as ')])
def test_a_dry_run_places_its_groups_where_its_machines_are(
    pkb_flags, cloud, says):
  spec = benchmark_spec.BenchmarkSpec(
      bench, bench.GetConfig({}), 'plan', cloud, None, pkb_flags,
      pricing.PriceCatalog.Load(), lambda s: None)
  lines = run_plan.DryRunLines(spec, [], cost_estimate.FromSpec(spec), 60)
  groups = [line for line in lines if line.startswith(('  servers:',
                                                       '  clients:'))]
  assert len(groups) == 2, lines
  assert all(says in g for g in groups), groups


def test_the_budget_never_refuses_stages_that_only_delete(pkb_flags):
  # --run_stage=cleanup,teardown of a provisioned run was refused, "nothing
  # was created", leaving its VMs up.
  pkb_flags.max_cost_usd = 0.0001
  for stages in (['cleanup'], ['teardown'], ['cleanup', 'teardown']):
    run_plan.CheckBudget(0.0028, pkb_flags, 'This run', stages)
  for stages in ((), ['run'], ['run', 'cleanup', 'teardown'], ['provision']):
    with pytest.raises(errors.UsageError, match='above --max_cost_usd'):
      run_plan.CheckBudget(0.0028, pkb_flags, 'This run', stages)


def test_a_static_plan_refuses_the_machines_file_provision_would(
    pkb_flags, tmp_path):
  # A dry run never read the file: one listing too few machines (or not
  # JSON) passed it with a plan and a cost, and the real run refused it
  # only in provision, after making the run's directory.
  key = tmp_path / 'key'
  key.write_text('not really a key\n')
  key.chmod(0o600)
  machines = tmp_path / 'machines.json'
  pkb_flags.static_vm_file = str(machines)
  pkb_flags.dry_run = True
  catalog = run_plan.Catalog(pkb_flags)
  for text, why in (
      ('[{"ip_address": "10.0.0.1", "user_name": "u", "keyfile_path": "key"}]',
       r'lists 1 machine\(s\) but the config needs 2 '
       r'\(servers=1, clients=1\)'),
      ('[[', 'not valid JSON')):
    machines.write_text(text)
    with pytest.raises(errors.UsageError, match=why):
      run_plan.PlanBenchmark(bench, bench.GetConfig({}), 'plan', pkb_flags,
                             catalog)
  # Later stages of a run take its machines from the record, not the file.
  pkb_flags.run_stage = ['cleanup']
  run_plan.PlanBenchmark(bench, bench.GetConfig({}), 'plan', pkb_flags,
                         catalog)
