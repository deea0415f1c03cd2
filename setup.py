"""Packaging for the Redis price-performance harness (PKB-compatible core)."""

import setuptools

with open('requirements.txt') as f:
  requirements = [l.strip() for l in f
                  if l.strip() and not l.startswith('#')]

setuptools.setup(
    name='redis-price-performance-pkb',
    version='0.1.0',
    description='Latency-capped Redis throughput per dollar across machine '
                'types, with a PerfKit Benchmarker compatible harness.',
    packages=setuptools.find_packages(include=['perfkitbenchmarker',
                                               'perfkitbenchmarker.*']),
    package_data={'': ['*.yaml'],
                  'perfkitbenchmarker.results_history': ['templates/*.j2']},
    install_requires=requirements,
    python_requires='>=3.9',
    scripts=['pkb.py'],
)
