"""scripts/bench_steady_noise.py's arguments, refused before anything starts.

The bench itself needs a real memtier, redis-server and minutes; these
cases stop before the server starts.
"""

import os
import signal

import pytest

import sigterm_stand_in
import script_modules

bench = script_modules.Script('bench_steady_noise')


@pytest.mark.parametrize('args, words', [
    # '--connections=x' was a ValueError traceback; '--runs=0' printed an
    # empty table and '{}', exit 0.
    (['--connections=x'], '--connections=x: give connection counts'),
    (['--connections=8,0'], '--connections=8,0: give connection counts'),
    (['--runs=0'], '--runs=0: give 1 or more'),
    (['--seconds=0'], '--seconds=0: give 1 or more'),
    (['--port=99999'], '--port=99999: ports run from 1 to 65535'),
])
def test_bad_numbers_are_one_line_before_anything_starts(
    tmp_path, monkeypatch, capsys, args, words):
  monkeypatch.setattr(bench.shutil, 'which', lambda name: f'/bin/{name}')
  monkeypatch.setattr(bench.tempfile, 'tempdir', str(tmp_path))
  assert bench.main(['--memtier_path=/bin/true'] + args) == 2
  err = capsys.readouterr().err
  assert err.startswith(f'bench_steady_noise: {words}')
  assert err.count('\n') == 1
  assert os.listdir(tmp_path) == []


def test_sigterm_stops_its_server_and_removes_its_directory(
    tmp_path, monkeypatch, capsys):
  # The script killed alone (kill PID) left its redis-server on 16391
  # running and /tmp/bench-steady-... behind. SIGTERM now interrupts it as
  # Ctrl-C does. In process: a stand-in server start that calls the
  # handler in force, as a SIGTERM then would.
  def Start(unused_argv, **unused_kwargs):
    signal.getsignal(signal.SIGTERM)(signal.SIGTERM, None)

  monkeypatch.setattr(bench.shutil, 'which', lambda name: f'/bin/{name}')
  monkeypatch.setattr(bench.tempfile, 'tempdir', str(tmp_path))
  monkeypatch.setattr(bench.subprocess, 'Popen', Start)
  assert sigterm_stand_in.Main(bench.main, ['--memtier_path=/bin/true']) == 130
  assert os.listdir(tmp_path) == []
  assert capsys.readouterr().err == (
      'bench_steady_noise: interrupted; its server and files are removed\n')
