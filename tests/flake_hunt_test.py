"""scripts/flake_hunt.py past a run's bound: the run's processes stopped, the
run counted as failed, the table and a non-zero exit (no traceback).

The script clones the checkout and runs the suite (minutes a run); here its
clone and its suite run are stand-ins.
"""

import signal
import subprocess

import script_modules

flake_hunt = script_modules.Script('flake_hunt')


def test_a_run_past_its_bound_is_a_failed_run_not_a_traceback(
    tmp_path, monkeypatch, capsys):
  # subprocess.run(timeout=RUN_TIMEOUT_S) ended the script in
  # 'subprocess.TimeoutExpired: Command ... timed out after 3600 seconds'.
  seen = {}

  class Suite:
    pid = 4242
    returncode = None

    def __init__(self, argv, **kwargs):
      seen['new_session'] = kwargs.get('start_new_session')

    def communicate(self, timeout=None):
      if 'killed' not in seen:
        raise subprocess.TimeoutExpired('test.sh', timeout, output=b'.')
      self.returncode = -signal.SIGKILL
      return '....\ncollected so far\n', None

    def kill(self):
      pass

    def wait(self):
      return self.returncode

  monkeypatch.setattr(flake_hunt, '_Clone', lambda scratch, setup: str(
      tmp_path))
  monkeypatch.setattr(flake_hunt.subprocess, 'Popen', Suite)
  monkeypatch.setattr(flake_hunt.os, 'killpg',
                      lambda pid, sig: seen.setdefault('killed', (pid, sig)))
  monkeypatch.setattr('sys.argv', ['flake_hunt.py', '--runs', '1'])
  assert flake_hunt.main() == 1
  out = capsys.readouterr().out
  # The suite's whole process group, as the script started it in its own.
  assert seen == {'new_session': True, 'killed': (4242, signal.SIGKILL)}
  assert out.startswith('run 1: stopped past its bound of 3600 s (0 s wall)\n')
  assert '1/1  (the run passed its bound of 3600 s)' in out
  assert 'collected so far' in out
