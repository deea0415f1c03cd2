"""A Local scratch directory with a space or shell syntax in its path.

Every path reaches the shell quoted (shlex.quote) and redis.conf quoted in its
own syntax, so the run works and the injected command never runs.
"""

import os

import pytest

import e2e_support as e2e

# Every test here starts a process (tests/tier_guard.py).
pytestmark = pytest.mark.e2e


@pytest.mark.parametrize('name', ['with space', 'x;touch${IFS}PWNED4;'])
def test_run_in_a_hostile_scratch_path(tmp_path, name):
  work = tmp_path / 'work'
  work.mkdir()
  scratch = work / name.replace('PWNED4', str(tmp_path / 'PWNED4'))
  scratch.mkdir(parents=True)
  results = str(tmp_path / 'results')
  proc, run_uri = e2e.Run(
      e2e.FAST + ['--load_generator=redis_benchmark'], results,
      env=dict(os.environ, PKB_LOCAL_SCRATCH=str(scratch)))
  assert not (tmp_path / 'PWNED4').exists()
  assert not list(work.rglob('PWNED4'))
  assert proc.returncode == 0, proc.stderr
  assert e2e.LeftoverProcesses(results, run_uri) == []
  assert os.listdir(scratch) == []
