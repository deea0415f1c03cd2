"""scripts/probe_path.py watches two product functions by file and name: the
probe's entry (load_generators/driver.py ProbeDriver.__call__) and where
every local command starts (vm_util.RunLocal, its `command`). A rename
would leave it measuring nothing, so the names are checked here; the script
itself refuses a run in which it saw no ssh command.
"""

import inspect
import os

from perfkitbenchmarker import vm_util
from perfkitbenchmarker.load_generators import driver
from scripts import probe_path


def test_the_watched_functions_are_where_the_script_looks():
  for (path, name), function in (
      (probe_path.PROBE, driver.ProbeDriver.__call__),
      (probe_path.RUN_LOCAL, vm_util.RunLocal)):
    assert function.__name__ == name
    assert probe_path.ProductFile(inspect.getsourcefile(function)) == path
  assert 'command' in inspect.signature(vm_util.RunLocal).parameters
  assert os.path.isdir(os.path.join(probe_path.REPO, probe_path.BENCHMARKS))


def test_product_files_are_named_from_the_repository_root():
  assert probe_path.ProductFile(os.path.join(probe_path.REPO, 'pkb.py')) == (
      'pkb.py')
  assert probe_path.ProductFile(
      os.path.join(probe_path.REPO, 'perfkitbenchmarker', 'sample.py')) == (
          'perfkitbenchmarker/sample.py')
  assert probe_path.ProductFile(
      os.path.join(probe_path.REPO, 'tests', 'conftest.py')) is None
  assert probe_path.ProductFile(inspect.getsourcefile(os)) is None


def test_help_prints_its_usage_and_runs_nothing(monkeypatch, capsys):
  # './scripts/probe_path.py --help' passed --help on to pkb: an sshd was
  # started, pkb printed its own help, and the script said 'probe_path: no
  # ssh command during a probe (pkb exit 0)', exit 1.
  def Refuse(unused_args):
    raise AssertionError('measured')
  monkeypatch.setattr(probe_path, 'Measure', Refuse)
  for flag in ('--help', '-h'):
    assert probe_path.main(['probe_path.py', flag]) == 0
    captured = capsys.readouterr()
    assert captured.out.startswith('usage: ')
    assert './scripts/probe_path.py --memtier_path=PATH' in captured.out
    assert captured.err == ''
