"""Fake upstream (tests only): plays upstream PKB's stage driver.

Run from a copy of this fake tree with the plugin installed in it:

  python drive_plugin.py '<scenario JSON>'

The scenario gives upstream's flags, the planned groups (cloud, machine
type, zone, count) and the provisioned VMs. CheckPrerequisites runs the
harness's real dry run; the stages after it record the harness command
lines instead of running them, and the run stage's result file is the
scenario's recorded harness rows (a real run's, tests/data/pkb_plugin/),
written as the harness writes them: `official` only where the row was
official and the run stage was given --official; its exit code and last
stderr line are the scenario's `run_exit` and `run_last`.

The check runs as upstream's _CreateBenchmarkSpecs runs it (logged with its
traceback when it fails, then raised on), the stages as upstream's
RunBenchmark runs them (pkb.py at the commit in pkb_plugin/README.md): the
status is FAILED unless every stage of
--run_stage returns; a stage's error is logged with its traceback by
RunBenchmark and again by RunBenchmarkTask; Run's samples reach the collector only when Run
returns; the benchmark's Cleanup is called only for static VMs or when the
spec says always_call_cleanup, and once more after a failure (a
KeyboardInterrupt too) when it does;
the collected rows are published whatever happened (`publisher.py`).

With `"real_harness": true` every stage runs the real harness (the cloud
rehearsal's VMs are real hosts: tests/cloud_rehearsal_test.py).

With `"uncaught": true` only the check runs, its log on stderr, and a
failed check ends the process as upstream's does (the error raised out of
main).

With `"stream": DIR` it instead runs the plugin's real _RunHarness on the
harness at DIR (with `"argv"`, and `"waits"` for its bounded waits after a
signal) and reports when each of its lines reached the log, and what it
returned or raised (KeyboardInterrupt included).

With `"harness": DIR` the stages run the plugin's real _RunHarness on the
stand-in harness at DIR (`"waits"` as for `"stream"`), its lines watched
as there.

`"log_level"` sets the log's level (upstream's --log_level; WARNING unless
given).

Prints one JSON object: what each stage did, or the error it raised.
"""

import json
import logging
import os
import sys
import time
import types

from absl import flags

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

# Upstream's own flags the plugin reads, defined where upstream defines them.
flags.DEFINE_string('static_vm_file', None, 'fake upstream flag')
flags.DEFINE_string('run_uri', None, 'fake upstream flag')
flags.DEFINE_bool('connect_via_internal_ip', False, 'fake upstream flag')
from perfkitbenchmarker import publisher  # pylint: disable=g-import-not-at-top
from perfkitbenchmarker import stages  # pylint: disable=g-import-not-at-top,unused-import
from perfkitbenchmarker.linux_packages import memtier  # pylint: disable=g-import-not-at-top,unused-import
from perfkitbenchmarker.linux_packages import redis_server  # pylint: disable=g-import-not-at-top,unused-import
from perfkitbenchmarker.linux_benchmarks import redis_price_performance_benchmark as plugin  # pylint: disable=g-import-not-at-top

FLAGS = flags.FLAGS


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
  vm.cloud = cloud
  vm.is_static = cloud == 'Static'

  def GetConnectionIp():  # upstream's, for a created VM
    if FLAGS.connect_via_internal_ip:
      return vm.internal_ip
    if not vm.ip_address:
      raise ValueError(f'{vm.ip_address} has no (public) ip_address')
    return vm.ip_address

  vm.GetConnectionIp = GetConnectionIp
  return vm


class _Lines(logging.Handler):
  """Each log line with the time it was logged."""

  def __init__(self, on_line=None):
    super().__init__()
    self.lines = []
    self.on_line = on_line

  def emit(self, record):
    self.lines.append((time.time(), record.getMessage()))
    if self.on_line:
      self.on_line(record.getMessage())


def _StandIn(harness, waits=None):
  """The plugin's harness is the stand-in at `harness`; a handler lets the
  stand-in go on once its first line is in the log (a file it makes);
  `waits` are the plugin's INTERRUPT_WAIT_S and KILL_WAIT_S (a stand-in
  that ignores signals is killed without waiting minutes)."""
  if waits:
    plugin.INTERRUPT_WAIT_S, plugin.KILL_WAIT_S = waits
    plugin.POLL_S = 0.1
  go = os.path.join(harness, 'go')

  def OnLine(message):
    if message == 'harness: probe 0':
      open(go, 'w').close()

  handler = _Lines(OnLine)
  logging.getLogger().addHandler(handler)
  logging.getLogger().setLevel(logging.INFO)
  os.environ['REDIS_PRICE_PERFORMANCE_HARNESS'] = harness
  return handler


def Stream(harness, argv=('--x',), waits=None):
  """The plugin's _RunHarness on a stand-in harness that prints a line,
  waits until that line is in the log, then prints another; a relay that
  buffers never lets it go on. `argv` is the harness's."""
  handler = _StandIn(harness, waits)
  out = {}
  try:
    out['returned'] = list(plugin._RunHarness(list(argv), 'run'))  # pylint: disable=protected-access
  except BaseException as e:  # pylint: disable=broad-except
    # KeyboardInterrupt too: upstream's own handling of a SIGINT.
    out['error'] = f'{type(e).__name__}: {e}'
  out['lines'] = handler.lines
  return out


def main():
  scenario = json.loads(sys.argv[1])
  FLAGS(['upstream'] + scenario['flags'])
  if 'stream' in scenario:
    print(json.dumps(Stream(scenario['stream'],
                            scenario.get('argv', ['--x']),
                            scenario.get('waits'))))
    return
  out = {'harness_argv': [], 'cleanup_calls': 0}
  real_run_harness = plugin._RunHarness  # pylint: disable=protected-access

  def Recorded(argv, what, accept=(0,), **more):
    if '--dry_run' in argv:
      return real_run_harness(argv, what, accept, **more)  # the real check
    out['harness_argv'].append(argv)
    if '--run_stage=run' not in argv or scenario.get('no_results'):
      return 0, ''
    results = next(a.split('=', 1)[1] for a in argv
                   if a.startswith('--results_dir='))
    run_uri = next(a.split('=', 1)[1] for a in argv
                   if a.startswith('--run_uri='))
    os.makedirs(os.path.join(results, run_uri), exist_ok=True)
    with open(scenario['rows']) as f, open(os.path.join(
        results, run_uri, 'perfkitbenchmarker_results.json'), 'a') as to:
      for line in f:
        row = json.loads(line)
        row['official'] = row['official'] is True and '--official' in argv
        to.write(json.dumps(row) + '\n')
    code = scenario.get('run_exit', 0)
    assert code in accept, (code, accept)
    return code, scenario.get('run_last', '')

  if not scenario.get('real_harness') and not scenario.get('harness'):
    plugin._RunHarness = Recorded  # pylint: disable=protected-access
  real_cleanup = plugin.Cleanup

  def CountedCleanup(spec):
    out['cleanup_calls'] += 1
    return real_cleanup(spec)

  # Upstream's log on stderr.
  logging.basicConfig(stream=sys.stderr, format='%(levelname)s %(message)s',
                      level=scenario.get('log_level', 'WARNING'))
  if scenario.get('harness'):
    _StandIn(scenario['harness'], scenario.get('waits'))
  if scenario.get('uncaught'):
    # Upstream's main: a failed check ends the process as the error it
    # raised.
    CheckPrerequisites(scenario['planned'])
    return
  collector = publisher.SampleCollector()
  try:
    out['config'] = plugin.GetConfig({})
    if scenario.get('check', True):  # tests of later stages skip it
      CheckPrerequisites(scenario['planned'])
      out['checked'] = True
    if 'vms' in scenario:
      RunBenchmarkTask(scenario, out, collector, CountedCleanup)
  except (Exception, SystemExit, KeyboardInterrupt) as e:  # pylint: disable=broad-except
    # Upstream's RunBenchmarks stops at a KeyboardInterrupt, then publishes.
    out['error'] = f'{type(e).__name__}: {e}'
  published = os.path.join(os.environ['FAKE_UPSTREAM_TEMP_DIR'],
                           'perfkitbenchmarker_results.json')
  collector.PublishSamples(published)
  out['published'] = []
  if os.path.exists(published):
    with open(published) as f:
      out['published'] = [json.loads(line) for line in f]
  print(json.dumps(out))


def CheckPrerequisites(planned):
  """As upstream's _CreateBenchmarkSpecs calls it: a failed check is logged
  with its traceback, then raised on (out of upstream's main)."""
  try:
    plugin.CheckPrerequisites(_Planned(planned))
  except:  # pylint: disable=bare-except
    logging.exception('Prerequisite check failed for %s', plugin.BENCHMARK_NAME)
    raise


def RunBenchmarkTask(scenario, out, collector, cleanup):
  """As upstream's RunBenchmarkTask calls RunBenchmark: a failure is logged
  with its traceback (a second time) and the next benchmark runs; here it
  is raised on, for the scenario's `error`."""
  try:
    RunBenchmark(scenario, out, collector, cleanup)
  except BaseException:
    logging.exception('Exception running benchmark')
    logging.error('Benchmark 1/1 %s failed. Execution will continue.',
                  plugin.BENCHMARK_NAME)
    raise


def RunBenchmark(scenario, out, collector, cleanup):
  """Upstream's RunBenchmark over the plugin's stages (see the docstring)."""
  spec = types.SimpleNamespace(
      vm_groups={group: [_Vm(**vm) for vm in vms]
                 for group, vms in scenario['vms'].items()},
      sequence_number=scenario.get('sequence', 0),
      uuid='upstream0-fake-uuid', name=plugin.BENCHMARK_NAME,
      always_call_cleanup=False, status='FAILED')
  spec.vms = [vm for vms in spec.vm_groups.values() for vm in vms]

  def CleanupPhase():
    if spec.always_call_cleanup or any(vm.is_static for vm in spec.vms):
      cleanup(spec)

  try:
    if 'prepare' in FLAGS.run_stage:
      plugin.Prepare(spec)
      workdir = os.path.join(os.environ['FAKE_UPSTREAM_TEMP_DIR'],
                             plugin.BENCHMARK_NAME)
      run_uri = spec.redis_price_performance_run_uri
      for name in ('static_vms.json', 'config.json'):
        with open(os.path.join(workdir, f'{run_uri}_{name}')) as f:
          out[name] = json.load(f)
    if 'run' in FLAGS.run_stage:
      samples = plugin.Run(spec)
      out['samples'] = [list(s) for s in samples]
      collector.AddSamples(samples, spec.name, spec)
    if 'cleanup' in FLAGS.run_stage:
      CleanupPhase()
  except (Exception, KeyboardInterrupt) as e:  # pylint: disable=broad-except
    out['status_detail'] = str(e)
    logging.exception('Error during benchmark %s', spec.name)
    if 'cleanup' in FLAGS.run_stage and spec.always_call_cleanup:
      CleanupPhase()
    raise
  finally:
    out['status'] = spec.status
  spec.status = out['status'] = 'SUCCEEDED'


if __name__ == '__main__':
  main()
