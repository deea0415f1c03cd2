"""Fake upstream (tests only): plays upstream PKB's stage driver.

Run from a copy of this fake tree with the plugin installed in it:

  python drive_plugin.py '<scenario JSON>'

The scenario gives upstream's flags, the planned groups (cloud, machine
type, zone, count) and the provisioned VMs. CheckPrerequisites runs the
harness's real dry run; the stages after it record the harness command
lines instead of running them, and the run stage's result file is the
scenario's recorded harness rows (a real run's, tests/data/pkb_plugin/).
Prints one JSON object: what each stage did, or the error it raised.
"""

import json
import os
import shutil
import sys
import types

from absl import flags

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

# Upstream's own flags the plugin reads.
flags.DEFINE_string('static_vm_file', None, 'fake upstream flag')
flags.DEFINE_string('run_uri', None, 'fake upstream flag')

from perfkitbenchmarker.linux_benchmarks import redis_price_performance_benchmark as plugin  # pylint: disable=g-import-not-at-top


def _Planned(groups):
  return types.SimpleNamespace(vm_groups={
      name: types.SimpleNamespace(
          cloud=g['cloud'], vm_count=g['count'],
          vm_spec=types.SimpleNamespace(machine_type=g['machine_type'],
                                        zone=g['zone']))
      for name, g in groups.items()})


def _Vm(cloud, **attrs):
  vm = types.SimpleNamespace(**attrs)
  vm.CLOUD = cloud
  return vm


def main():
  scenario = json.loads(sys.argv[1])
  flags.FLAGS(['upstream'] + scenario['flags'])
  out = {'harness_argv': []}
  real_run_harness = plugin._RunHarness  # pylint: disable=protected-access

  def Recorded(argv, what, accept=(0,)):
    if '--dry_run' in argv:
      return real_run_harness(argv, what, accept)  # the real check
    out['harness_argv'].append(argv)
    if '--run_stage=run' in argv:
      results = next(a.split('=', 1)[1] for a in argv
                     if a.startswith('--results_dir='))
      run_uri = next(a.split('=', 1)[1] for a in argv
                     if a.startswith('--run_uri='))
      os.makedirs(os.path.join(results, run_uri), exist_ok=True)
      shutil.copy(scenario['rows'], os.path.join(
          results, run_uri, 'perfkitbenchmarker_results.json'))
    return None

  plugin._RunHarness = Recorded  # pylint: disable=protected-access
  try:
    out['config'] = plugin.GetConfig({})
    if scenario.get('check', True):  # tests of later stages skip it
      plugin.CheckPrerequisites(_Planned(scenario['planned']))
      out['checked'] = True
    if 'vms' in scenario:
      spec = types.SimpleNamespace(vm_groups={
          group: [_Vm(**vm) for vm in vms]
          for group, vms in scenario['vms'].items()}, sequence_number=0)
      plugin.Prepare(spec)
      workdir = os.path.join(os.environ['FAKE_UPSTREAM_TEMP_DIR'],
                             plugin.BENCHMARK_NAME)
      for name in ('static_vms.json', 'config.json'):
        with open(os.path.join(workdir, name)) as f:
          out[name] = json.load(f)
      out['samples'] = [list(s) for s in plugin.Run(spec)]
      plugin.Cleanup(spec)
  except Exception as e:  # pylint: disable=broad-except
    out['error'] = f'{type(e).__name__}: {e}'
  print(json.dumps(out))


if __name__ == '__main__':
  main()
