"""scripts/bench_commands.py: its refusals, an interrupt, and a real run of
its cheapest command against this same checkout."""

import os
import signal
import subprocess
import sys

import pytest

import sigterm_stand_in
import script_modules

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(REPO, 'scripts', 'bench_commands.py')
bench = script_modules.Load(SCRIPT, 'bench_commands')


@pytest.mark.parametrize('args,words', [
    (['--commands=help,nope'], '--commands: nope; known: gcp_plan, '),
    (['--commands=,'], '--commands: none given; known: '),
    (['--repeats=0'], '--repeats=0: give 1 to 100.'),
    (['--other=/nonexistent'], '--other=/nonexistent: no pkb.py there; '),
])
def test_bad_arguments_are_one_line_before_anything_runs(args, words,
                                                         capsys):
  with pytest.raises(SystemExit) as exited:
    bench.main(['--other=' + REPO] + args)
  assert exited.value.code == 2
  err = capsys.readouterr().err
  assert err.startswith('bench_commands: ' + words) and err.count('\n') == 1


def test_sigterm_stops_the_command_and_removes_the_scratch(
    tmp_path, monkeypatch, capsys):
  # In process: the command's wait calls the SIGTERM handler in force, as
  # a SIGTERM then would.
  monkeypatch.setattr(bench.tempfile, 'tempdir', str(tmp_path))

  def Run(*args, **kwargs):
    del args, kwargs
    signal.getsignal(signal.SIGTERM)(signal.SIGTERM, None)

  monkeypatch.setattr(bench.subprocess, 'run', Run)
  assert sigterm_stand_in.Main(
      bench.main, ['--other=' + REPO, '--commands=help']) == 130
  assert capsys.readouterr().err == (
      'bench_commands: interrupted; nothing measured is printed.\n')
  assert os.listdir(tmp_path) == []


@pytest.mark.e2e
def test_the_help_command_measured_on_both_sides():
  proc = subprocess.run(
      [sys.executable, SCRIPT, '--other=' + REPO, '--commands=help',
       '--repeats=1'], capture_output=True, text=True, timeout=300,
      check=False)
  assert proc.returncode == 0, proc.stderr[-2000:]
  line, = [l for l in proc.stdout.splitlines() if l.startswith('  help ')]
  this, other = (float(line.split(side)[1].split()[0])
                 for side in (' this ', ' other '))
  assert 0 < this < 60 and 0 < other < 60
  # The ratio of the unrounded medians: within rounding of the shown ones.
  assert float(line.split('this/other ')[1]) == pytest.approx(
      this / other, abs=0.03), line
