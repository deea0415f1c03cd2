"""Every study preset in configs/ dry-runs with its plan and cost, or
refuses in one line that says why.

The README's preset table promises it; this runs each preset as a user
would (`./pkb.py --benchmark_config_file=configs/<preset>.yaml --dry_run`,
with a placeholder --project for the GCP ones) and checks exit 0 and a cost
line (or exit 2 and one line, for the presets in REFUSED) and that nothing
was created. It also checks what the presets' comments promise: the nightly
clients' vCPUs and the T2D preset's memtier-capable clients.
"""

import glob
import os
import sys

import pytest
import yaml

import pkb_forkserver
from perfkitbenchmarker import errors
from perfkitbenchmarker import prepare_checks
from perfkitbenchmarker import pricing
from perfkitbenchmarker import system_info
from perfkitbenchmarker.enterprise import options as enterprise_options
from perfkitbenchmarker.linux_packages import package_commands

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PRESETS = sorted(p for p in glob.glob(os.path.join(REPO, 'configs', '*.yaml'))
                 if os.path.basename(p) not in ('prices.yaml', 'zones.yaml'))


def test_the_readme_names_every_preset():
  with open(os.path.join(REPO, 'README.md')) as f:
    readme = f.read()
  missing = [os.path.basename(p) for p in PRESETS
             if os.path.basename(p) not in readme]
  assert not missing, f'presets missing from README.md: {missing}'


# Presets whose dry run refuses, and the words that say why. A refusal is
# for something prepare would fail on, before anything is created.
REFUSED = {
    # Redis OSS keeps every key in RAM; the study's 771M x 1 KiB is flash's.
    'redis_on_flash.yaml': 'lower --memtier_key_maximum to at most',
}


@pytest.mark.e2e
@pytest.mark.parametrize('preset', PRESETS, ids=os.path.basename)
def test_preset_dry_runs_or_refuses_in_one_line(preset, tmp_path):
  proc = pkb_forkserver.Run(
      [sys.executable, os.path.join(REPO, 'pkb.py'),
       f'--benchmark_config_file={preset}', '--project=placeholder',
       f'--results_dir={tmp_path}', '--dry_run'],
      cwd=REPO, timeout=120, check=False)
  assert 'Traceback' not in proc.stderr
  assert os.listdir(tmp_path) == []
  why = REFUSED.get(os.path.basename(preset))
  if why:
    assert proc.returncode == 2, proc.stdout[-1500:]
    # The plan's warnings (e.g. clients under 4x the servers' vCPUs, as in
    # the published flash study) may come before the one refusal line.
    lines = [l for l in proc.stderr.strip().splitlines()
             if 'WARNING: ' not in l]
    assert len(lines) == 1 and lines[0].startswith('pkb: '), proc.stderr
    assert why in lines[0]
    return
  assert proc.returncode == 0, proc.stderr[-1500:]
  assert '$' in proc.stdout and ('Total:' in proc.stdout or
                                 'Cost:' in proc.stdout), proc.stdout[-1500:]


def _Cells(name):
  with open(os.path.join(REPO, 'configs', name)) as f:
    config = yaml.safe_load(f)
  return {key: value for key, value in config.items()
          if isinstance(value, dict) and 'vm_groups' in value}


def test_nightly_clients_have_four_times_the_server_vcpus():
  """The nightly config's comment: clients >= 4x the server's vCPUs."""
  catalog = pricing.PriceCatalog.Load()
  cells = _Cells('nightly_gcp_aws.yaml')
  assert len(cells) == 4
  for name, cell in cells.items():
    vcpus = {}
    for group, group_config in cell['vm_groups'].items():
      (cloud, vm_spec), = group_config['vm_spec'].items()
      price = catalog.Lookup(cloud, vm_spec['zone'], vm_spec['machine_type'])
      vcpus[group] = price.vcpus * group_config.get('vm_count', 1)
    assert vcpus['clients'] >= 4 * vcpus['servers'], (name, vcpus)


def test_t2d_preset_clients_can_install_memtier():
  """The Redis Enterprise T2D preset: servers boot the centos7 successor
  (Rocky 9), clients a Debian image, whose memtier install script is built
  (the RHEL-like one refuses)."""
  centos_successor = enterprise_options.ChooseOs('centos7', 'GCP').used
  rocky = system_info.SystemInfo.Parse(
      'ID=rocky\nID_LIKE="rhel centos fedora"\nVERSION_ID=9.4\n')
  with pytest.raises(errors.PrerequisiteError, match='APT repository'):
    package_commands.MemtierInstall(rocky)
  for name, cell in _Cells('redis_enterprise_t2d.yaml').items():
    clients = cell['vm_groups']['clients']
    assert clients['os_type'] == 'debian12', name
    assert prepare_checks.OS_FAMILIES[clients['os_type']] == 'debian'
    assert 'os_type' not in cell['vm_groups']['servers']  # -> successor
  assert centos_successor == 'rocky9'
  debian = system_info.SystemInfo.Parse(
      'ID=debian\nVERSION_ID="12"\nVERSION_CODENAME=bookworm\n')
  script = package_commands.MemtierInstall(debian)
  assert 'memtier-benchmark' in script and 'bookworm' in script
