"""scripts/bench_quota_period.py's arguments, refused before anything starts.

The bench itself needs root, a CPU cgroup controller, redis-server and
minutes; these cases stop before any of them is used.
"""

import os
import signal

import pytest

import sigterm_stand_in
import script_modules

bench = script_modules.Script('bench_quota_period')


@pytest.mark.parametrize('args, words', [
    # Each was a traceback: int('x') once the tools were found, '1000/0' a
    # ZeroDivisionError and 'bogus' a ValueError with the server started,
    # --rounds=0 a KeyError after the preload, --port=99999 a RuntimeError
    # after ten seconds of PINGs.
    (['--rb_connections=x'], '--rb_connections=x: give connection counts'),
    (['--memtier_connections=2,-1'], '--memtier_connections=2,-1: give'),
    (['--configs=1000/2000,bogus'], "'bogus' is not quota/period"),
    (['--configs=1000/0'], "'1000/0' is not quota/period"),
    (['--rounds=0'], '--rounds=0: give 1 or more'),
    (['--port=99999'], '--port=99999: ports run from 1 to 65535'),
    (['--rb_connections='], 'no load to offer'),
])
def test_bad_numbers_are_one_line_before_anything_starts(capsys, args,
                                                         words):
  assert bench.main(args) == 2
  captured = capsys.readouterr()
  assert captured.out == ''
  assert captured.err.startswith('bench_quota_period: ')
  assert words in captured.err and captured.err.count('\n') == 1


def test_sigterm_removes_its_cgroups_server_and_directory(tmp_path,
                                                          monkeypatch,
                                                          capsys):
  # 'timeout 22 ./scripts/bench_quota_period.py ...' killed the script at
  # its SIGTERM: its cgroup (/sys/fs/cgroup/cpu/pkb-bench-...) and its
  # directory stayed, and a redis-server if the script alone was killed.
  # SIGTERM now interrupts it as Ctrl-C does and its finally runs. In
  # process: a stand-in cgroup that finds the handler the script set and
  # raises what that handler raises, as a SIGTERM there would.
  class Cgroup:

    def __init__(self, **unused_kwargs):
      signal.getsignal(signal.SIGTERM)(signal.SIGTERM, None)

  monkeypatch.setattr(bench.cpu_cgroups, 'Available', lambda: True)
  monkeypatch.setattr(bench.cpu_cgroups, 'CpuCgroup', Cgroup)
  monkeypatch.setattr(bench.shutil, 'which', lambda name: f'/bin/{name}')
  monkeypatch.setattr(bench.tempfile, 'tempdir', str(tmp_path))
  assert sigterm_stand_in.Main(bench.main, ['--configs=none']) == 130
  assert os.listdir(tmp_path) == []
  assert capsys.readouterr().err == (
      'bench_quota_period: interrupted; its server, cgroups and files are '
      'removed\n')
