"""A test that needs a missing tool skips here but fails in CI (issue 10, 16).

CI installs redis-server, sshd, chromium and the rest (scripts/setup.sh;
memtier is no tool CI has: its tests run tests/memtier_replay.py), so there a test that cannot run must fail, not pass
quietly as a skip. Every such check goes through e2e_support (RequireTool,
Unavailable, and the Needs/NeedsTools marks checked by tests/conftest.py).
"""

import os
import re
import subprocess
import sys

import pytest

import e2e_support

TESTS = os.path.dirname(os.path.abspath(__file__))
MISSING = 'no-such-tool-pkb-test'
_PROBE_TESTS = f'''
import pytest
import e2e_support

@e2e_support.NeedsTools({MISSING!r}, how='nothing installs it')
def test_marked():
  pass

@pytest.mark.parametrize('x', [pytest.param(
    1, marks=e2e_support.Needs('a missing thing', lambda: False))])
def test_param(x):
  del x

def test_required():
  e2e_support.RequireTool({MISSING!r})

@e2e_support.NeedsTools('sh')
def test_present():
  assert e2e_support.RequireTool('sh')
'''


def _RunPytest(tmp_path, ci):
  path = tmp_path / 'probe_tools_test.py'
  path.write_text(_PROBE_TESTS)
  env = {k: v for k, v in os.environ.items() if k != 'CI'}
  if ci is not None:
    env['CI'] = ci
  env['PYTHONPATH'] = os.pathsep.join([TESTS, e2e_support.REPO])
  return subprocess.run(
      [sys.executable, '-m', 'pytest', '-q', '-rsf', '-p', 'conftest',
       '-p', 'no:cacheprovider', str(path)],
      capture_output=True, text=True, timeout=120, cwd=str(tmp_path), env=env)


@pytest.mark.e2e
def test_missing_tools_skip_on_a_workstation(tmp_path):
  proc = _RunPytest(tmp_path, None)
  assert proc.returncode == 0, proc.stdout + proc.stderr
  assert '1 passed, 3 skipped' in proc.stdout, proc.stdout
  assert f'{MISSING} not available (nothing installs it)' in proc.stdout


@pytest.mark.e2e
def test_missing_tools_fail_in_ci(tmp_path):
  proc = _RunPytest(tmp_path, 'true')
  assert proc.returncode == 1, proc.stdout + proc.stderr
  # A mark fails the test's set-up (an error), RequireTool the test itself.
  assert '1 failed, 1 passed, 2 errors' in proc.stdout, proc.stdout
  assert (f'{MISSING} is missing, but CI must provide it (nothing installs '
          'it).') in proc.stdout
  assert 'a missing thing is missing, but CI must provide it' in proc.stdout


# Skips that are not about a tool CI installs (data, privileges, this
# checkout's own venv).
_NOT_A_TOOL = ('tests/data/history is not in this tree',
               'cannot mount a tmpfs', "os.path.join(REPO, '.venv')",
               'needs two cores')
_TOOL_CHECK = re.compile(r"which\(|os\.access|install|missing|not found|"
                         r"needs ")


def test_no_test_skips_for_a_missing_tool_on_its_own():
  offenders = []
  for name in sorted(os.listdir(TESTS)):
    if not name.endswith('.py') or name in ('e2e_support.py', 'conftest.py',
                                            os.path.basename(__file__)):
      continue
    with open(os.path.join(TESTS, name)) as f:
      lines = f.read().splitlines()
    for i, line in enumerate(lines):
      if not re.search(r'pytest\.(skip|mark\.skipif)\(', line):
        continue
      chunk = '\n'.join(lines[max(0, i - 3):i + 3])
      if _TOOL_CHECK.search(chunk) and not any(a in chunk for a in _NOT_A_TOOL):
        offenders.append(f'{name}:{i + 1}: {line.strip()}')
  assert not offenders, ('use e2e_support.RequireTool/Needs/NeedsTools so CI '
                         'fails instead of skipping:\n' + '\n'.join(offenders))
