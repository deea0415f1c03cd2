"""A user other than the one who ran setup.sh gets one line, not a
ModuleNotFoundError (issue 24 item 17).

A checkout whose .venv python points into a private (0700) directory of
root, as a venv made by root from pyenv's python does, started by user
nobody with the system python3.
"""

import os
import shutil
import subprocess
import tempfile

import pytest

import e2e_support

# Every test here starts a process (tests/tier_guard.py).
pytestmark = pytest.mark.e2e

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NOBODY = 65534


@pytest.fixture
def checkout():
  # World-traversable (pytest's tmp_path is not), removed after the test.
  top = tempfile.mkdtemp(prefix='pkb-venv-')
  os.chmod(top, 0o755)
  try:
    repo = os.path.join(top, 'repo')
    os.makedirs(os.path.join(repo, 'perfkitbenchmarker'))
    for path in ('pkb.py', 'perfkitbenchmarker/__init__.py',
                 'perfkitbenchmarker/venv_reexec.py',
                 'perfkitbenchmarker/owned_paths.py'):
      shutil.copy(os.path.join(REPO, path), os.path.join(repo, path))
    private = os.path.join(top, 'private')  # root's pyenv, say
    os.makedirs(private, mode=0o700)
    os.symlink('/usr/bin/python3', os.path.join(private, 'python3'))
    os.makedirs(os.path.join(repo, '.venv', 'bin'))
    os.symlink(os.path.join(private, 'python3'),
               os.path.join(repo, '.venv', 'bin', 'python'))
    for root, dirs, files in os.walk(repo):
      for name in dirs + files:
        path = os.path.join(root, name)
        if not os.path.islink(path):
          os.chmod(path, 0o755)
    os.chmod(repo, 0o755)
    yield repo
  finally:
    shutil.rmtree(top)


@e2e_support.Needs(
    'root, setpriv and /usr/bin/python3 (it runs a command as user nobody)',
    lambda: (os.geteuid() == 0 and bool(shutil.which('setpriv')) and
             os.path.exists('/usr/bin/python3')))
def test_a_venv_another_user_cannot_run_is_one_line(checkout):  # pylint: disable=redefined-outer-name
  env = {'PATH': '/usr/bin:/bin', 'HOME': '/nonexistent'}
  done = subprocess.run(
      ['setpriv', f'--reuid={NOBODY}', f'--regid={NOBODY}', '--clear-groups',
       '/usr/bin/python3', os.path.join(checkout, 'pkb.py'), '--help'],
      capture_output=True, text=True, timeout=60, env=env, cwd='/',
      check=False)
  assert done.returncode == 2, done.stderr
  line, = done.stderr.strip().splitlines()
  assert line.startswith(f'pkb: {checkout}/.venv cannot be used by user ')
  assert 'PYTHON=/usr/bin/python3 ./scripts/setup.sh' in line
  assert 'Traceback' not in done.stderr
