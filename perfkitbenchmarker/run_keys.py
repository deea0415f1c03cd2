"""Where a cloud run keeps its private SSH key: never under results/.

results/runs/<run_uri>/ holds what is meant to be published or shared, so
the run's private key lives in a directory of its own, private to the
operator (0700): $PKB_KEY_DIR/<run_uri>/ when that variable is set (tests
use it), else $XDG_STATE_HOME/pkb/keys/<run_uri>/, else
~/.local/state/pkb/keys/<run_uri>/. The key resources record the path, and
record_checks.LocalRunRoots lists the directory among the run's roots, so
teardown (which validates every recorded path) may delete the key and then
the directory. Teardown must see the same PKB_KEY_DIR / XDG_STATE_HOME as
the run did.
"""

import os

from perfkitbenchmarker import own_dirs

ENV_VAR = 'PKB_KEY_DIR'


def KeysRoot() -> str:
  """The directory holding every run's key directory."""
  root = os.environ.get(ENV_VAR)
  if not root:
    state = os.environ.get('XDG_STATE_HOME') or os.path.join(
        os.path.expanduser('~'), '.local', 'state')
    root = os.path.join(state, 'pkb', 'keys')
  return os.path.abspath(root)


def RunKeyDir(run_uri: str) -> str:
  """The run's key directory (not created)."""
  return os.path.join(KeysRoot(), run_uri)


def MakePrivateDir(directory: str) -> str:
  """directory, created (with its parents) and made 0700.

  An existing directory must be the running user's own (own_dirs): the
  run's private key goes there.
  """
  own_dirs.MakeOwnDir(directory)
  os.chmod(directory, 0o700)
  return directory


def RemoveKeyDirIfEmpty(key_path: str) -> None:
  """Removes a run's key directory holding key_path once it is empty.

  Only a directory directly under KeysRoot() is removed (an older run's key
  sits in its results directory, which is left alone).
  """
  directory = os.path.dirname(os.path.abspath(key_path))
  if os.path.dirname(directory) != KeysRoot():
    return
  try:
    os.rmdir(directory)
  except OSError:
    pass  # Not empty or already gone.
