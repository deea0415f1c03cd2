"""`pip install .` gives a working `pkb` command outside the checkout.

A fresh virtualenv is made in a temporary directory and the package is
installed into it from a copy of this tree (so the build writes nothing into
the checkout). To stay fast and offline, runtime dependencies are not
re-downloaded: a .pth file in the new virtualenv's site-packages points at
this repository's .venv site-packages, which also supplies pip and the build
backend (`--no-deps --no-build-isolation`). The virtualenv is made without pip
of its own, so the older setuptools bundled with `venv` cannot shadow them.
Nothing of the checkout is on the installed command's path: it runs with
cwd=/ and must find its price catalog in the installed package.
"""

import os
import shutil
import subprocess
import sys
import sysconfig

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_NOT_COPIED = ('.venv', '.git', 'results', 'build', '__pycache__',
               '.pytest_cache', '*.egg-info')


@pytest.fixture(scope='module')
def installed(tmp_path_factory):
  tmp = tmp_path_factory.mktemp('packaging')
  src = tmp / 'src'
  shutil.copytree(REPO, src, ignore=shutil.ignore_patterns(*_NOT_COPIED))
  venv = tmp / 'v'
  subprocess.run([sys.executable, '-m', 'venv', '--without-pip', str(venv)],
                 check=True, timeout=60)
  python = venv / 'bin' / 'python'
  site_packages = subprocess.run(
      [str(python), '-c',
       'import sysconfig; print(sysconfig.get_paths()["purelib"])'],
      check=True, capture_output=True, text=True).stdout.strip()
  with open(os.path.join(site_packages, '_repo_venv_deps.pth'), 'w') as f:
    f.write(sysconfig.get_paths()['purelib'] + '\n')
  env = {k: v for k, v in os.environ.items()
         if k not in ('PYTHONPATH', 'VIRTUAL_ENV')}
  result = subprocess.run(
      [str(python), '-m', 'pip', 'install', '-q', '--no-deps',
       '--no-build-isolation', '--no-index', str(src)],
      capture_output=True, text=True, env=env, cwd=str(tmp), timeout=120)
  assert result.returncode == 0, result.stderr
  return venv, site_packages, env


def test_installed_pkb_dry_run_from_root(installed):
  venv, site_packages, env = installed
  pkb = venv / 'bin' / 'pkb'
  assert pkb.exists(), 'no console_scripts entry "pkb"'
  result = subprocess.run([str(pkb), '--dry_run'], capture_output=True,
                          text=True, env=env, cwd='/', timeout=60)
  assert result.returncode == 0, result.stderr
  assert 'Traceback' not in result.stderr
  # The plan names the benchmark and the priced machine type.
  assert 'redis_memtier' in result.stdout, result.stdout
  assert 'n2d-standard-2' in result.stdout, result.stdout
  # The command exits with Main's code.
  bad = subprocess.run([str(pkb), '--dry_run', '--run_stage=bogus'],
                       capture_output=True, text=True, env=env, cwd='/',
                       timeout=60)
  assert bad.returncode == 2, bad.stderr
  assert '--run_stage' in bad.stderr
  # The code and the price catalog came from the installed package.
  packaged = os.path.join(site_packages, 'perfkitbenchmarker', 'data',
                          'prices.yaml')
  with open(packaged) as f, open(os.path.join(REPO, 'configs',
                                              'prices.yaml')) as g:
    assert f.read() == g.read()
  where = subprocess.run(
      [str(venv / 'bin' / 'python'), '-c',
       'from perfkitbenchmarker import pricing; '
       'print(pricing.__file__); print(pricing.DEFAULT_CATALOG_PATH)'],
      capture_output=True, text=True, env=env, cwd='/', check=True)
  module_file, catalog = where.stdout.split()
  assert module_file.startswith(site_packages)
  assert catalog == packaged


def test_installed_pkb_py_script_still_works(installed):
  venv, _, env = installed
  result = subprocess.run([str(venv / 'bin' / 'pkb.py'), '--dry_run'],
                          capture_output=True, text=True, env=env, cwd='/',
                          timeout=60)
  assert result.returncode == 0, result.stderr
  assert 'redis_memtier' in result.stdout


def test_test_tools_are_not_runtime_requirements(installed):
  venv, _, env = installed
  requires = subprocess.run(
      [str(venv / 'bin' / 'python'), '-c',
       'import importlib.metadata as m; '
       'print("\\n".join(m.requires("redis-price-performance-pkb") or []))'],
      capture_output=True, text=True, env=env, cwd='/', check=True).stdout
  names = {r.split(';')[0].split('[')[0].split('>')[0].split('=')[0]
           .split('<')[0].strip().lower() for r in requires.splitlines()}
  assert 'psutil' in names  # A runtime dependency is declared...
  assert not names & {'pytest', 'moto', 'pillow'}, names  # ...tests' are not.


def test_checkout_reads_configs_prices_yaml():
  # In the checkout (no build copy in the package) the source of truth is
  # configs/prices.yaml, the file scripts/refresh_prices.py writes.
  from perfkitbenchmarker import pricing  # pylint: disable=g-import-not-at-top
  assert not os.path.exists(os.path.join(REPO, 'perfkitbenchmarker', 'data',
                                         'prices.yaml'))
  assert pricing.DEFAULT_CATALOG_PATH == os.path.join(REPO, 'configs',
                                                      'prices.yaml')


def test_repo_pkb_py_still_runs():
  result = subprocess.run([os.path.join(REPO, 'pkb.py'), '--dry_run'],
                          capture_output=True, text=True, cwd='/', timeout=60)
  assert result.returncode == 0, result.stderr
  assert 'redis_memtier' in result.stdout
