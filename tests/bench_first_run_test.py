"""scripts/bench_first_run.py's arguments, refused before any run starts.

The bench itself runs ./pkb.py several times (minutes, root for the
quota); this case stops before the first.
"""

import os

import sigterm_stand_in
import script_modules

bench = script_modules.Script('bench_first_run')


def test_no_repeats_is_one_line(tmp_path, monkeypatch, capsys):
  # '--repeats=0' ran nothing, then ended in "KeyError: ('redis-benchmark',
  # 'quota')" under a traceback where the table of ratios is printed.
  monkeypatch.setattr(bench.tempfile, 'tempdir', str(tmp_path))
  assert bench.main(['--repeats=0']) == 2
  captured = capsys.readouterr()
  assert captured.out == ''
  assert captured.err == 'bench_first_run: --repeats=0: give 1 or more\n'
  assert os.listdir(tmp_path) == []


def test_sigterm_stops_its_pkb_run_and_removes_the_results(
    tmp_path, monkeypatch, capsys):
  # The bench killed alone (kill PID) left its pkb run going on
  # (/tmp/bench-first-run-.../<run_uri>) and its results directory behind.
  # SIGTERM now interrupts it as Ctrl-C does: its pkb is terminated (pkb
  # tears down on SIGTERM) and the directory removed. In process: a
  # stand-in pkb whose wait calls the handler in force, as a SIGTERM then
  # would.
  seen = {}

  Pkb = sigterm_stand_in.PkbPopen(seen)

  monkeypatch.setattr(bench.pkb_child.subprocess, 'Popen', Pkb)
  monkeypatch.setattr(bench.tempfile, 'tempdir', str(tmp_path))
  assert sigterm_stand_in.Main(bench.main, ['--repeats=1']) == 130
  assert seen['terminated'] and os.listdir(tmp_path) == []
  assert capsys.readouterr().err == (
      'bench_first_run: interrupted; its pkb run was stopped and the '
      'results removed\n')


def test_failed_runs_end_in_exit_1(tmp_path, monkeypatch, capsys):
  # '--sides="a=--bogus_flag;b=--bogus_flag"': every pkb run refused the
  # flag (exit 2, on its line), yet the bench printed 'wall time a/b 0.70x'
  # of the refusals and exited 0.
  class Pkb:
    pid = 0

    def __init__(self, argv, **unused_kwargs):
      self.returncode = 2 if '--bogus_flag' in argv else 4

    def communicate(self, timeout=None):
      del timeout
      return '', "pkb: Unknown command line flag 'bogus_flag'\n"

    def poll(self):
      return self.returncode

  monkeypatch.setattr(bench.pkb_child.subprocess, 'Popen', Pkb)
  monkeypatch.setattr(bench.tempfile, 'tempdir', str(tmp_path))
  assert bench.main(['--repeats=1', '--sides=a=--bogus_flag;b=']) == 1
  assert capsys.readouterr().err == (
      'bench_first_run: 1 of 2 runs failed (their lines say why); the wall '
      'times above count them\n')
