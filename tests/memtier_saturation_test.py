"""A memtier probe that saturates the client core is flagged client_saturated.

The default Local study on a 2-core machine pins the client to one core; the
memtier probes at the top of the search keep it busy for the whole test time.
Measured over memtier's whole life (start-up and its idle last second) the
core looked ~60 % busy and saturation was missed; measured over the load
window it is not.
"""

import e2e_support as e2e
import secrets_ps_test


def test_memtier_saturating_the_client_core_is_flagged(tmp_path):
  memtier = secrets_ps_test.MemtierOrSkip()
  proc, run_uri = e2e.Run(
      ['--memtier_run_duration=2', '--memtier_key_maximum=20000',
       f'--memtier_path={memtier}', '--load_generator=memtier'],
      str(tmp_path))
  assert proc.returncode == 0, proc.stderr
  probes = [e2e.Labels(r) for r in e2e.Samples(str(tmp_path), run_uri)
            if r['metric'] == 'throughput']
  busiest = max(float(p['client_cpu_busy_pct']) for p in probes)
  assert busiest > 90, probes
  assert any(p['client_saturated'] == 'True' for p in probes), [
      (p['client_cpu_busy_pct'], p['client_saturated']) for p in probes]
