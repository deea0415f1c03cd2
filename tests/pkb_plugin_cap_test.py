"""Upstream's latency cap through the plugin, with the real harness.

Upstream PKB's --latency_capped_throughput keeps a load while its p95 is
within --memtier_latency_cap (its memtier.py compares latency_dic['95']).
The fake upstream (tests/fake_upstream_pkb/) drives the plugin, which runs
every stage of the real harness over SSH to a loopback sshd standing for
both of upstream's VMs; memtier is the replay stand-in
(tests/memtier_replay.py, not memtier), whose figures are those of real
memtier recordings, the one nearest a probe's connections:

  probe's connections   average    p95 (the recording's histogram)
  up to 90              0.261 ms   0.399 ms
  over 90               2.497 ms   2.543 ms

So under a 2.52 ms cap a probe of over 90 connections is under the cap on
its average and over it on its p95: capped on the average (what the plugin
passed upstream's cap on as before), the search counts it under.
"""

import json
import os
import re
import signal
import subprocess
import threading
import uuid

import pytest

from perfkitbenchmarker import run_record

import memtier_replay
import pkb_plugin_test as plugin
from pkb_plugin_test import upstream  # pylint: disable=unused-import  (fixture)
from sshd_fixture import sshd  # pylint: disable=unused-import  (fixture)

CAP_MS = 2.52
# Short probes, few of them, no hold or curve: the test is about the cap.
STUDY = ['--local_priced_as=GCP:n2d-standard-2', '--nosystem_tuning',
         '--memtier_run_duration=1', '--memtier_key_maximum=2000',
         '--memtier_clients=32', '--memtier_adaptive_max_connections=512',
         '--memtier_max_probes=6', '--memtier_confirm_repeats=2',
         '--memtier_hold_duration=0', '--memtier_curve_rate_percents=',
         '--accept_unconfirmed', '--timeout_minutes=10']

pytestmark = pytest.mark.e2e
# pylint: disable=redefined-outer-name  (pytest fixtures)
# pylint: disable=protected-access  (pkb_plugin_test's drive helpers)


def _Labels(row):
  """A published row's metadata (upstream's JSON collapses it into
  |key:value| labels)."""
  return dict(label.strip('|').split(':', 1)
              for label in row['labels'].split('|,|'))


def test_upstreams_cap_gives_a_p95_answer_under_it(upstream, tmp_path, sshd):
  memtier = memtier_replay.Executable(str(tmp_path))
  host = dict(cloud='Static', ip_address=sshd.host, internal_ip=sshd.host,
              user_name=sshd.user, ssh_private_key=sshd.user_key,
              ssh_port=sshd.port, machine_type=None, zone='loopback')
  # A run_uri of its own: run locks are per user on the machine, and two
  # checkouts running this test at once took the same one ('Run capp950 is
  # in use by pid ...').
  out = plugin._Drive(upstream, tmp_path, {
      'flags': [f'--run_uri=cp{uuid.uuid4().hex[:6]}',
                '--static_vm_file=/dev/null',
                '--latency_capped_throughput',
                f'--memtier_latency_cap={CAP_MS}',
                '--redis_price_performance_flags=' + ' '.join(
                    STUDY + [f'--memtier_path={memtier}'])],
      'planned': plugin._Groups(),
      'vms': {'servers': [host], 'clients': [host]}, 'real_harness': True})
  assert 'error' not in out, out.get('error')
  rows = [r for r in out['published']
          if '|harness:redis_price_performance|' in r['labels']]
  assert rows, out['published']
  for row in rows:  # every row says what its figures were capped on
    labels = _Labels(row)
    assert labels['latency_cap_statistic'] == 'p95', (row['metric'], labels)
    assert float(labels['latency_cap_ms']) == CAP_MS, row['metric']
  probes = [_Labels(r) for r in rows if r['metric'] == 'throughput']
  for probe in probes:  # each probe held to its p95
    assert probe['under_latency_cap'] == str(
        float(probe['p95_latency_ms']) < CAP_MS), probe
  # Some probe was under the cap on its average, over it on p95.
  assert [p for p in probes
          if float(p['average_latency_ms']) < CAP_MS <= float(
              p['p95_latency_ms'])], json.dumps(probes)[:2000]
  answer, = [_Labels(r) for r in rows
             if r['metric'] == 'latency_capped_throughput']
  assert float(answer['p95_latency_ms']) < CAP_MS, answer


def _Workspaces(run_uri):
  """The harness run's workspaces on the loopback VM, and the processes
  working in them."""
  places = [p for p in os.listdir('/tmp') if p.startswith(f'pkb-{run_uri}.')]
  working = []
  for pid in filter(str.isdigit, os.listdir('/proc')):
    try:
      cwd = os.readlink(f'/proc/{pid}/cwd')
    except OSError:
      continue
    if cwd.startswith(f'/tmp/pkb-{run_uri}.'):
      working.append(int(pid))
  return places, working


def test_a_sigterm_in_the_search_leaves_nothing_of_the_harness_run(
    upstream, tmp_path, sshd):
  """`kill <upstream>` during the search: upstream has no handler for
  SIGTERM, so its Cleanup never ran and the harness's run (stopped in its
  run stage, which has no teardown) kept its workspace and its claim on
  the machine. The plugin tears it down before upstream ends by the
  signal: the record says interrupted, with its teardown done, every
  resource deleted, and nothing of it is left on the machine."""
  memtier = memtier_replay.Executable(str(tmp_path))
  host = dict(cloud='Static', ip_address=sshd.host, internal_ip=sshd.host,
              user_name=sshd.user, ssh_private_key=sshd.user_key,
              ssh_port=sshd.port, machine_type=None, zone='loopback')
  run_uri = f'st{uuid.uuid4().hex[:6]}'
  scenario = {
      'flags': [f'--run_uri={run_uri}', '--static_vm_file=/dev/null',
                '--redis_price_performance_flags=' + ' '.join(
                    STUDY + [f'--memtier_path={memtier}'])],
      'vms': {'servers': [host], 'clients': [host]}, 'real_harness': True,
      'check': False, 'log_level': 'INFO'}
  env = dict(os.environ, FAKE_UPSTREAM_TEMP_DIR=str(tmp_path / 'run'))
  os.makedirs(env['FAKE_UPSTREAM_TEMP_DIR'])
  drive = subprocess.Popen(  # pylint: disable=consider-using-with
      [os.path.join(plugin.REPO, '.venv', 'bin', 'python'),
       str(upstream / 'drive_plugin.py'), json.dumps(scenario)],
      cwd=str(upstream), env=env, stdout=subprocess.DEVNULL,
      stderr=subprocess.PIPE, text=True, start_new_session=True)
  log = []
  try:
    searching = threading.Event()

    def Read():
      for line in drive.stderr:
        log.append(line)
        if re.search(r'harness: +probe +1 ', line):
          searching.set()

    reader = threading.Thread(target=Read, daemon=True)
    reader.start()
    assert searching.wait(120), ''.join(log[-30:])
    drive.send_signal(signal.SIGTERM)
    assert drive.wait(timeout=300) == -signal.SIGTERM, ''.join(log[-30:])
    reader.join(timeout=10)
  finally:
    if drive.poll() is None:
      os.killpg(drive.pid, signal.SIGKILL)
      drive.wait()
  harness_uri = run_uri + '0'  # the plugin's RunUri for the first spec
  record = run_record.RunRecord.Load(
      str(tmp_path / 'run' / 'redis_price_performance' / 'results' /
          harness_uri), harness_uri)
  said = ''.join(log[-30:])
  assert 'ends upstream without its Cleanup' in said, said
  assert record.status == 'interrupted', said
  assert 'teardown' in record.stages_done, record.stages_done
  assert record.Resources() and not list(record.LiveResources()), said
  assert _Workspaces(harness_uri) == ([], []), said
