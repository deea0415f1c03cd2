"""scripts/bench_probe_overhead.py: probe wall times and tool lifetimes read
from real samples and kept raw files.

The bench itself needs root and a few minutes (it is run by hand; numbers
in docs/search.md); here its reading of a run's results file and raw files
is checked on the samples a real probe writes (price_performance.ProbeSamples
through the JSON publisher's label format) and the evidence layout
evidence.Keep writes, with scripted times (no timing is measured here).
"""

import json
import os

import pytest

import sigterm_stand_in

from perfkitbenchmarker import evidence
from perfkitbenchmarker import measurement
from perfkitbenchmarker import price_performance
from scripts import bench_probe_overhead


class _Vm:
  name = 'clients-0'

  def __init__(self, run_dir):
    self.record = type('Record', (), {'run_dir': run_dir})()


def _Row(m, index, when):
  sample = price_performance.ProbeSamples(index, m, 1.0)[0]
  labels = ','.join(f'|{k}:{v}|' for k, v in sorted(sample.metadata.items()))
  return {'metric': sample.metric, 'value': sample.value,
          'timestamp': when, 'labels': labels}


def _Results(tmp_path, probes, manifest=None):
  """A results file of probes (sample time, [(process start, end)]) whose
  raw files hold those process times."""
  vm = _Vm(str(tmp_path))
  rows = []
  for index, (when, processes) in enumerate(probes):
    parts = {f'rc.{i}': f'0 {start} {end}\n'
             for i, (start, end) in enumerate(processes)}
    if manifest:
      parts[evidence.MANIFEST] = json.dumps(manifest)
    raw = evidence.Keep(vm, f'probe-{index}', [], parts)
    m = measurement.Measurement(measurement.Load(1, 8), 1000.0, 0.4,
                                duration_s=2.0, ops=1000,
                                metadata={evidence.METADATA_KEY: raw})
    rows.append(_Row(m, index, when))
    rows.append({'metric': 'average_latency', 'timestamp': when + 0.001,
                 'labels': rows[-1]['labels'], 'value': 0.4})
  path = tmp_path / 'perfkitbenchmarker_results.json'
  path.write_text(''.join(json.dumps(r) + '\n' for r in rows))
  return str(path)


def test_harness_part_and_tool_overrun_are_told_apart(tmp_path):
  # memtier-like: 2 s asked for, its process lives 2.6 s and 3.1 s; the
  # harness adds 0.3 s and 0.2 s around it.
  path = _Results(tmp_path, [(100.0, [(97.0, 99.9)]),
                             (103.0, [(100.1, 102.7)]),
                             (106.5, [(103.2, 106.3)])],
                  manifest={'test_time_s': 2})
  times = bench_probe_overhead.ProbeTimes(path, nominal_s=5.0)
  # The first probe has no start to measure from: left out.
  assert [round(t['wall_s'], 3) for t in times] == [3.0, 3.5]
  assert [round(t['lifetime_s'], 3) for t in times] == [2.6, 3.1]
  assert [t['nominal_s'] for t in times] == [2, 2]  # memtier's own, not 5.
  figures = bench_probe_overhead.Report('x', times)
  assert figures['harness_s'] == pytest.approx((0.4 + 0.4) / 2)
  assert figures['overrun_s'] == pytest.approx((0.6 + 1.1) / 2)
  assert figures['ratio'] == pytest.approx(3.25 / 2)


def test_side_by_side_processes_count_from_first_start_to_last_end(tmp_path):
  # redis-benchmark-like: a SET and a GET process, no test time of its own:
  # the nominal is the duration its request count was sized for.
  path = _Results(tmp_path, [(10.0, [(8.0, 9.9), (8.0, 9.8)]),
                             (13.0, [(10.2, 12.1), (10.3, 12.6)])])
  times = bench_probe_overhead.ProbeTimes(path, nominal_s=2.0)
  assert len(times) == 1
  assert times[0]['lifetime_s'] == pytest.approx(12.6 - 10.2)
  assert times[0]['nominal_s'] == 2.0
  figures = bench_probe_overhead.Report('x', times)
  assert figures['harness_s'] == pytest.approx(3.0 - 2.4)
  assert figures['overrun_s'] == pytest.approx(0.4)


def test_probes_without_raw_files_give_no_figure(tmp_path):
  rows = []
  for index, when in enumerate((1.0, 4.0)):
    m = measurement.Measurement(measurement.Load(1, 8), 1000.0, 0.4,
                                duration_s=2.0, ops=1000)
    rows.append(_Row(m, index, when))
  path = tmp_path / 'perfkitbenchmarker_results.json'
  path.write_text(''.join(json.dumps(r) + '\n' for r in rows))
  times = bench_probe_overhead.ProbeTimes(str(path))
  assert times[0]['lifetime_s'] is None
  assert bench_probe_overhead.Report('x', times)['harness_s'] is None


def test_sigterm_stops_its_pkb_run_and_sshd_and_removes_its_files(
    tmp_path, monkeypatch, capsys):
  # Killed with SIGTERM 25 s in (its ssh study running), the bench left
  # its sshd listening, pkb running on over it (with its ssh masters) and
  # /tmp/pkb-probe-overhead-... (the sshd's keys) behind; subprocess.run's
  # SIGKILL on an interruption or its bound would leave pkb's shards. In
  # process: a stand-in pkb whose wait calls the handler in force.
  seen = {}

  Pkb = sigterm_stand_in.PkbPopen(seen)

  monkeypatch.setattr(bench_probe_overhead.loopback_sshd, 'BenchRefusal',
                      lambda *unused: None)
  monkeypatch.setattr(bench_probe_overhead.pkb_child.subprocess, 'Popen', Pkb)
  monkeypatch.setattr(bench_probe_overhead.pkb_child.subprocess, 'run', None)
  monkeypatch.setattr(bench_probe_overhead.tempfile, 'tempdir', str(tmp_path))
  assert sigterm_stand_in.Main(bench_probe_overhead.main, ['--probes=1']) == 130
  assert seen['terminated'] and os.listdir(tmp_path) == []
  assert capsys.readouterr().err == (
      'bench_probe_overhead: interrupted; its pkb run and sshd were stopped '
      'and its files removed\n')
