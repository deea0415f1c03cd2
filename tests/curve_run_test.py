"""The latency-throughput curve in a whole ./pkb.py run (Local, real Redis).

The load generator is memtier's replay stand-in (tests/memtier_replay.py,
NOT memtier: CI has none), which parses --rate-limiting as memtier does and
caps each replayed second at what memtier's limiter lets the connections
send. The run's curve points are on the console, in the samples (probe
role `curve`, offered and achieved rates) and in the kept command lines;
a point the stand-in could not give its rate (one above the recording's
own throughput) is named rate_not_achieved.
"""

import gzip
import re

import pytest

import e2e_support as e2e
from tests import memtier_replay

pytestmark = pytest.mark.e2e


def test_curve_points_are_printed_published_and_rate_limited(tmp_path):
  proc, run_uri = e2e.Run(e2e.FAST + [
      f'--memtier_path={memtier_replay.Path()}',
      '--memtier_curve_rate_percents=25,50,90'], str(tmp_path))
  assert proc.returncode == 0, proc.stderr
  rows = e2e.Samples(str(tmp_path), run_uri)
  capped = next(r for r in rows if r['metric'] == 'latency_capped_throughput')
  answer = capped['value']
  curve = [r for r in rows if r['metric'] == 'throughput' and
           e2e.Labels(r)['probe_role'] == 'curve']
  assert [int(e2e.Labels(r)['curve_percent']) for r in curve] == [25, 50, 90]
  search = [int(e2e.Labels(r)['probe_index']) for r in rows
            if r['metric'] == 'throughput' and
            e2e.Labels(r)['probe_role'] != 'curve']
  for i, row in enumerate(curve):
    labels = e2e.Labels(row)
    # Numbered after the search's probes, at the answer's connections.
    assert int(labels['probe_index']) == max(search) + 1 + i
    assert labels['connections'] == e2e.Labels(capped)['connections']
    offered = float(labels['offered_ops_per_s'])
    percent = int(labels['curve_percent'])
    assert offered == pytest.approx(answer * percent / 100, rel=0.02)
    # The stand-in never sends more than its limiter lets out (its whole
    # seconds and the recording's partial last one over memtier's span).
    assert row['value'] <= offered * 1.01
    achieved = float(labels['rate_achieved_pct'])
    assert achieved == pytest.approx(100 * row['value'] / offered, abs=0.1)
    if achieved < 95:
      assert labels['limit'] == 'rate_not_achieved'
      assert labels['limit_detail'].startswith(f'achieved {row["value"]:,.0f}')
    else:
      assert labels['limit'] != 'rate_not_achieved'
    assert labels['p99_latency_ms'] not in ('', 'None')
    # The cap's statistic (here the average) and its figure at the point.
    assert labels['latency_cap_statistic'] == 'avg'
    assert float(labels['capped_latency_ms']) == pytest.approx(
        float(labels['average_latency_ms']), rel=1e-3)
    # Its latency sample beside it, as every probe's.
    assert any(r['metric'] == 'average_latency' and
               e2e.Labels(r)['probe_index'] == labels['probe_index']
               for r in rows)
  # The console: one line per point after the search's, offered and
  # achieved, before the summary.
  out = proc.stdout
  assert re.search(r'^Curve under the answer \([\d,]+ ops/s at 1x\d+\): 3 '
                   r'probes at fixed offered rates', out, re.M), out
  lines = re.findall(r'^  probe +\d+  curve (\d+) %  offered +([\d,]+) ops/s'
                     r'  achieved +([\d,]+) ops/s', out, re.M)
  assert [int(p) for p, _, _ in lines] == [25, 50, 90]
  assert out.index('Curve under') < out.index('machine type')
  # Each point's memtier ran with its rate per connection.
  rates = sorted(e2e.Labels(r)['rate_per_connection'] for r in curve)
  commands = [
      (gzip.decompress(p.read_bytes()).decode() if p.suffix == '.gz'
       else p.read_text())
      for p in (tmp_path / run_uri / 'raw').rglob('command.txt*')]
  sent = sorted(m.group(1) for text in commands
                for m in re.finditer(r'--rate-limiting (\d+)', text))
  assert sent == sorted(rates)


def test_a_cluster_curve_counts_a_connection_per_primary(tmp_path):
  # memtier's cluster client opens a connection per primary for each of
  # its clients, each with its own limit: offered = rate x clients x 3.
  proc, run_uri = e2e.Run(e2e.FAST + [
      f'--memtier_path={memtier_replay.Path()}', '--redis_server_cluster_mode',
      '--redis_total_num_processes=3', '--memtier_curve_rate_percents=50',
      '--latency_cap_statistic=p99', '--memtier_latency_cap=20'],
      str(tmp_path))
  assert proc.returncode == 0, proc.stderr
  rows = e2e.Samples(str(tmp_path), run_uri)
  answer = next(r for r in rows
                if r['metric'] == 'latency_capped_throughput')['value']
  point = next(r for r in rows if r['metric'] == 'throughput' and
               e2e.Labels(r)['probe_role'] == 'curve')
  labels = e2e.Labels(point)
  offered = float(labels['offered_ops_per_s'])
  assert offered == pytest.approx(answer / 2, rel=0.02)
  assert offered == pytest.approx(
      int(labels['rate_per_connection']) * 3 * int(labels['connections']),
      rel=0.02)
  assert point['value'] <= offered * 1.01
  # A p99 cap: the point names it and gives its p99 as the capped figure.
  assert labels['latency_cap_statistic'] == 'p99'
  assert labels['capped_latency_ms'] == labels['p99_latency_ms']
  assert re.search(r'curve 50 %  offered .*\)  p99 +[\d.]+ ms', proc.stdout)
