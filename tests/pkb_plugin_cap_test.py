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
import uuid

import pytest

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
