"""Every study preset in configs/ dry-runs with its plan and cost.

The README's preset table promises it; this runs each preset as a user
would (`./pkb.py --benchmark_config_file=configs/<preset>.yaml --dry_run`,
with a placeholder --project for the GCP ones) and checks exit 0, a cost
line and that nothing was created.
"""

import glob
import os
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PRESETS = sorted(p for p in glob.glob(os.path.join(REPO, 'configs', '*.yaml'))
                 if os.path.basename(p) != 'prices.yaml')


def test_the_readme_names_every_preset():
  with open(os.path.join(REPO, 'README.md')) as f:
    readme = f.read()
  missing = [os.path.basename(p) for p in PRESETS
             if os.path.basename(p) not in readme]
  assert not missing, f'presets missing from README.md: {missing}'


@pytest.mark.parametrize('preset', PRESETS, ids=os.path.basename)
def test_preset_dry_runs_with_a_cost(preset, tmp_path):
  proc = subprocess.run(
      [sys.executable, os.path.join(REPO, 'pkb.py'),
       f'--benchmark_config_file={preset}', '--project=placeholder',
       f'--results_dir={tmp_path}', '--dry_run'],
      cwd=REPO, capture_output=True, text=True, timeout=120, check=False)
  assert proc.returncode == 0, proc.stderr[-1500:]
  assert '$' in proc.stdout and ('Total:' in proc.stdout or
                                 'Cost:' in proc.stdout), proc.stdout[-1500:]
  assert 'Traceback' not in proc.stderr
  assert os.listdir(tmp_path) == []
