"""Packaging for the Redis price-performance harness (PKB-compatible core).

configs/prices.yaml (what scripts/refresh_prices.py writes) stays the one
source of truth for prices: the build copies it into the package as
perfkitbenchmarker/data/prices.yaml, where an installed pricing.py finds it,
and the presets (configs/*.yaml) as perfkitbenchmarker/data/configs/, where
`--benchmark_config_file=configs/<name>.yaml` finds them (paths.Preset).
The shell scripts pkb runs on VMs (perfkitbenchmarker/scripts/*.sh) are
package data. Console scripts: `pkb`, `pkb-compare` and `pkb-recompute`.
install_requires is requirements.txt (runtime only); the test tools are in
requirements-test.txt.
"""

import os
import shutil

import setuptools
from setuptools.command import build_py

_HERE = os.path.dirname(os.path.abspath(__file__))
_PRICES = os.path.join('configs', 'prices.yaml')


class _BuildPyWithPrices(build_py.build_py):
  """Also copies configs/prices.yaml and the presets into the package."""

  def run(self):
    super().run()
    if self.dry_run:
      return
    target = os.path.join(self.build_lib, 'perfkitbenchmarker', 'data')
    presets = os.path.join(target, 'configs')
    os.makedirs(presets, exist_ok=True)
    shutil.copyfile(os.path.join(_HERE, _PRICES),
                    os.path.join(target, 'prices.yaml'))
    for name in sorted(os.listdir(os.path.join(_HERE, 'configs'))):
      if name.endswith('.yaml'):
        shutil.copyfile(os.path.join(_HERE, 'configs', name),
                        os.path.join(presets, name))


def _Requirements(path):
  with open(os.path.join(_HERE, path)) as f:
    return [l.strip() for l in f if l.strip() and not l.startswith('#')]


setuptools.setup(
    name='redis-price-performance-pkb',
    version='0.1.0',
    description='Latency-capped Redis throughput per dollar across machine '
                'types, with a PerfKit Benchmarker compatible harness.',
    packages=setuptools.find_packages(include=['perfkitbenchmarker',
                                               'perfkitbenchmarker.*']),
    # scripts/*.sh: the shell scripts pkb runs on VMs (shell_scripts.py).
    package_data={'': ['*.yaml'], 'perfkitbenchmarker': ['scripts/*.sh'],
                  'perfkitbenchmarker.results_history': ['templates/*.j2']},
    install_requires=_Requirements('requirements.txt'),
    python_requires='>=3.9',
    cmdclass={'build_py': _BuildPyWithPrices},
    # The generated `pkb` command exits with Main()'s return code.
    entry_points={'console_scripts': [
        'pkb = perfkitbenchmarker.pkb:Main',
        'pkb-compare = perfkitbenchmarker.results_history.compare_cli:Main',
        'pkb-recompute = perfkitbenchmarker.recompute:Main',
    ]},
    scripts=['pkb.py'],
)
