"""scripts/bench_probe_overhead.py: probe wall times read from real samples.

The bench itself needs root and a few minutes (it is run by hand; numbers
in docs/search.md); here its reading of a run's results file is checked on
the samples a real probe writes (price_performance.ProbeSamples through the
JSON publisher's label format).
"""

import json

from perfkitbenchmarker import measurement
from perfkitbenchmarker import price_performance
from scripts import bench_probe_overhead


def _Row(m, index, when):
  sample = price_performance.ProbeSamples(index, m, 1.0)[0]
  labels = ','.join(f'|{k}:{v}|' for k, v in sorted(sample.metadata.items()))
  return {'metric': sample.metric, 'value': sample.value,
          'timestamp': when, 'labels': labels}


def test_wall_time_is_between_probes_duration_is_the_probes_own(tmp_path):
  rows = []
  for index, (when, seconds) in enumerate([(100.0, 9.0), (103.0, 2.5),
                                           (105.4, 2.0)]):
    m = measurement.Measurement(measurement.Load(1, 8), 1000.0, 0.4,
                                duration_s=seconds, ops=1000)
    rows.append(_Row(m, index, when))
    rows.append({'metric': 'average_latency', 'timestamp': when + 0.001,
                 'labels': rows[-1]['labels'], 'value': 0.4})
  path = tmp_path / 'perfkitbenchmarker_results.json'
  path.write_text(''.join(json.dumps(r) + '\n' for r in rows))
  times = bench_probe_overhead.ProbeTimes(str(path))
  # The first probe has no start to measure from: left out.
  assert [round(t['wall_s'], 3) for t in times] == [3.0, 2.4]
  assert [t['duration_s'] for t in times] == [2.5, 2.0]
  assert abs(bench_probe_overhead.Report('x', times) - 2.7 / 2.25) < 1e-9
