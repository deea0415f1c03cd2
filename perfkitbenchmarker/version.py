"""The harness's version, as PKB records it in every sample.

PKB puts `perfkitbenchmarker_version` into each sample's metadata: `git
describe` of the checkout it runs from, else the version it was packaged
with. Same here: `git describe --always --dirty` of this repository when it
is a git checkout with git installed, else the installed package's version.
"""

import functools
import os
import subprocess

PACKAGE_NAME = 'redis-price-performance-pkb'  # setup.py's name
_REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _PackageVersion() -> str:
  from importlib import metadata  # pylint: disable=g-import-not-at-top
  try:
    return metadata.version(PACKAGE_NAME)
  except metadata.PackageNotFoundError:
    return 'unknown'


def _GitDescribe(repo: str) -> str:
  if not os.path.exists(os.path.join(repo, '.git')):
    return ''
  try:
    proc = subprocess.run(
        ['git', '-C', repo, 'describe', '--always', '--dirty'],
        capture_output=True, text=True, timeout=10, check=False)
  except (OSError, subprocess.SubprocessError):
    return ''
  return proc.stdout.strip() if proc.returncode == 0 else ''


@functools.lru_cache(maxsize=None)
def VersionOf(repo: str = _REPO) -> str:
  """git describe of `repo` if it is a checkout, else the package version."""
  return _GitDescribe(repo) or _PackageVersion()


VERSION_KEY = 'perfkitbenchmarker_version'
