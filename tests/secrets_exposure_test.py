"""scripts/secrets_exposure.py reads pkb's stderr while pkb runs.

The script runs a whole Local study (minutes); here pkb is an in-process
stand-in whose stderr is more than a pipe holds.
"""

import io
import os

import script_modules

script = script_modules.Script('secrets_exposure')


def test_a_run_writing_more_than_a_pipe_holds_to_stderr_ends_on_its_own(
    tmp_path, monkeypatch, capsys):
  # stderr was read only once pkb had ended: a run writing more than 64 KiB
  # there blocked on the full pipe and ran on until MAX_RUN_S (1800 s)
  # killed it ('pkb exited -15'). The stand-in ends once its stderr is
  # read to the end, as a writer blocked on the pipe would.
  seen = {}
  err = io.StringIO('w' * 100_000 + '\npkb: the last line\n')

  class Pkb:
    stderr = err

    def __init__(self, argv, **unused_kwargs):
      self.returncode = None

    def poll(self):
      if self.returncode is None and err.tell() == len(err.getvalue()):
        self.returncode = 0
      return self.returncode

    def wait(self):
      while self.poll() is None:
        pass
      return self.returncode

    def terminate(self):
      seen['terminated'] = True
      self.returncode = -15

    def communicate(self):  # What the script called before.
      return '', err.read()

  monkeypatch.setattr(script.subprocess, 'Popen', Pkb)
  monkeypatch.setattr(script.tempfile, 'tempdir', str(tmp_path))
  monkeypatch.setattr(script, 'MAX_RUN_S', 1)
  assert script.main([]) == 1
  assert 'terminated' not in seen and os.listdir(tmp_path) == []
  assert capsys.readouterr().err.startswith(
      'never saw a shard config; pkb exited 0: ')
