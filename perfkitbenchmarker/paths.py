"""Where pkb keeps results and finds its presets, checked out or installed.

In a checkout (pkb.py beside the package) results go to the checkout's
results/ and presets are its configs/. Installed with `pip install .`, pkb
keeps results where upstream PKB keeps its run data,
<temp dir>/perfkitbenchmarker/ (`/tmp/perfkitbenchmarker/runs/<run_uri>`),
never in the directory it was started from; `--results_dir` moves a run,
and the presets (configs/*.yaml) come from the package's data/configs/.
The seam: every default path pkb or compare writes or reads is a function
here.
"""

import os
import tempfile

PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(PACKAGE_DIR)
PRESETS_DIR = 'configs'
PACKAGED_PRESETS = os.path.join(PACKAGE_DIR, 'data', PRESETS_DIR)


def InCheckout() -> bool:
  return os.path.exists(os.path.join(REPO_ROOT, 'pkb.py'))


def ResultsRoot() -> str:
  """results/ of a checkout; <temp dir>/perfkitbenchmarker installed."""
  if InCheckout():
    return os.path.join(REPO_ROOT, 'results')
  return os.path.join(tempfile.gettempdir(), 'perfkitbenchmarker')


def RunsDir() -> str:
  """Where each run's directory (named by its run_uri) goes by default."""
  return os.path.join(ResultsRoot(), 'runs')


def Preset(path: str) -> str:
  """A config path as given, or the preset it names when it is not there.

  `configs/nightly_local.yaml` read from another directory (or from an
  installed package) is the preset of that name.
  """
  if os.path.isabs(path) or os.path.exists(path):
    return path
  parts = os.path.normpath(path).split(os.sep)
  if len(parts) != 2 or parts[0] != PRESETS_DIR or parts[1] in ('', '..'):
    return path
  found = os.path.join(PresetsDir(), parts[1])
  return found if os.path.isfile(found) else path


def PresetsDir() -> str:
  """configs/ of a checkout; the package's data/configs/ installed."""
  return (os.path.join(REPO_ROOT, PRESETS_DIR) if InCheckout()
          else PACKAGED_PRESETS)


def Shown(path: str) -> str:
  """A path as the console shows it: relative under the current directory
  (results/runs/<uri> in a checkout), else absolute (an installed pkb's
  /tmp/perfkitbenchmarker/runs/<uri>, never ../../tmp/...); as given
  once the current directory is gone (removed while the run ran)."""
  try:
    relative = os.path.relpath(path)
  except FileNotFoundError:
    return path
  return os.path.abspath(path) if relative.startswith('..') else relative
