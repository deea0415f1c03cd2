"""scripts/bench_shipped_scripts.py stopped part way leaves nothing behind.

The bench itself starts an sshd on a loopback address (root) and times
thousands of commands; this case stops it at the sshd's start.
"""

import os
import signal

import sigterm_stand_in
import script_modules

bench = script_modules.Script('bench_shipped_scripts')


def test_sigterm_stops_its_sshd_and_removes_its_keys(tmp_path, monkeypatch,
                                                     capsys):
  # Killed with SIGTERM 15 s in, the bench left its sshd listening on
  # 127.0.0.3 and /tmp/pkb-bench-shipped-.../sshd (host key, user_key)
  # behind. SIGTERM now interrupts it as Ctrl-C does and its finally runs.
  # In process: a stand-in sshd whose start calls the handler in force.
  class Sshd:

    def __init__(self, unused_directory, host):
      del host

    def Start(self):
      signal.getsignal(signal.SIGTERM)(signal.SIGTERM, None)

  monkeypatch.setattr(bench.loopback_sshd, 'BenchRefusal', lambda *a: None)
  monkeypatch.setattr(bench.loopback_sshd, 'Sshd', Sshd)
  monkeypatch.setattr(bench.tempfile, 'tempdir', str(tmp_path))
  assert sigterm_stand_in.Main(bench.main, ['--rounds=1']) == 130
  assert os.listdir(tmp_path) == []
  assert capsys.readouterr().err == (
      'bench_shipped_scripts: interrupted; its sshd was stopped and its files '
      'removed\n')
