"""The benchmark contract (perfkitbenchmarker/benchmark_contract.py).

A module with PKB's names alone (tests/benchmarks/pkb_minimal_benchmark.py)
is loaded the way pkb.py loads any benchmark, from a directory on
PKB_BENCHMARK_DIRS, and dry-runs and runs on Local; a module that breaks
the contract stops pkb with one line naming the module and the hook.
"""

import os
import re
import types

import pytest

from perfkitbenchmarker import benchmark_contract
from perfkitbenchmarker import errors
from perfkitbenchmarker import linux_benchmarks
from tests import e2e_support as e2e

MINIMAL_DIR = os.path.join(e2e.REPO, 'tests', 'benchmarks')
PKB_NAMES = ('BENCHMARK_NAME', 'BENCHMARK_CONFIG', 'GetConfig', 'Prepare',
             'Run', 'Cleanup')


def _Module(**names):
  module = types.ModuleType('x_benchmark')
  module.BENCHMARK_NAME = 'x'
  module.BENCHMARK_CONFIG = 'x: {}'
  for name in ('GetConfig', 'Prepare', 'Run', 'Cleanup'):
    setattr(module, name, lambda arg: None)
  for name, value in names.items():
    if value is None:
      delattr(module, name)
    else:
      setattr(module, name, value)
  return module


def _Env():
  return dict(os.environ, PKB_BENCHMARK_DIRS=MINIMAL_DIR)


def test_the_required_names_are_pkbs():
  required = {h.name for h in benchmark_contract.CONTRACT if h.required}
  assert required == set(PKB_NAMES)
  benchmark_contract.Check(_Module(), 'x_benchmark.py')  # Accepted.


def test_every_module_here_keeps_the_contract():
  for name, module in linux_benchmarks.BENCHMARKS.items():
    benchmark_contract.Check(module, name)


def test_the_harness_looks_up_only_hooks_the_contract_names():
  """Every hook the product code looks for is in the table, none by hasattr.

  A hook found by hasattr(module, ...) is one nobody wrote down (there were
  nine); the harness asks benchmark_contract.Call/Has instead.
  """
  lookup = re.compile(r"(?:Call|Has)\([^,]+, '(\w+)'")
  by_hasattr = re.compile(r"(?:hasattr|getattr)\((?:self\.)?(?:spec\.)?"
                          r"(?:module|m), '(\w+)'")
  named = {h.name for h in benchmark_contract.CONTRACT}
  # Constants (PEER_TCP_PORTS, ...) are read as values, by getattr.
  constants = {h.name for h in benchmark_contract.CONTRACT if h.args is None}
  looked_up, unlisted = set(), []
  root = os.path.join(e2e.REPO, 'perfkitbenchmarker')
  for parent, _, files in os.walk(root):
    for file in files:
      if not file.endswith('.py'):
        continue
      with open(os.path.join(parent, file)) as f:
        text = f.read()
      looked_up |= set(lookup.findall(text))
      unlisted += [f'{file}: {n}' for n in by_hasattr.findall(text)
                   if n not in constants]
  assert looked_up - named == set()
  assert {'DescribePlan', 'CheckPrerequisites', 'EstimatedMinutes'} <= (
      looked_up)
  assert unlisted == []


def test_architecture_md_lists_every_hook_with_its_arguments():
  with open(os.path.join(e2e.REPO, 'docs', 'architecture.md')) as f:
    doc = f.read()
  section = doc[doc.index('## The benchmark contract'):]
  for hook in benchmark_contract.CONTRACT:
    shown = (hook.name if hook.args is None else
             f'{hook.name}({", ".join(hook.args)})')
    assert f'| `{shown}` |' in section, f'{shown} is not in architecture.md'


@pytest.mark.parametrize('name', PKB_NAMES)
def test_a_missing_pkb_name_is_named(name):
  with pytest.raises(errors.Error, match=f'x_benchmark.py lacks {name} '):
    benchmark_contract.Check(_Module(**{name: None}), 'x_benchmark.py')


def test_a_hook_with_the_wrong_arguments_is_named():
  with pytest.raises(errors.Error,
                     match=r'x_benchmark.py: Run\(\) cannot be called as '
                     r'Run\(spec\)'):
    benchmark_contract.Check(_Module(Run=lambda: []), 'x_benchmark.py')
  with pytest.raises(errors.Error, match=r'DescribePlan must be a function '
                     r'DescribePlan\(spec\)'):
    benchmark_contract.Check(_Module(DescribePlan=['a line']),
                             'x_benchmark.py')
  with pytest.raises(errors.Error, match='BENCHMARK_NAME must be lowercase'):
    benchmark_contract.Check(_Module(BENCHMARK_NAME='X Y'), 'x_benchmark.py')
  # Optional hooks with defaults: absent, the harness's default runs.
  module = _Module()
  assert benchmark_contract.Call(module, 'DescribePlan', None) == []
  assert benchmark_contract.Call(module, 'CheckPrerequisites', {}) is None
  assert benchmark_contract.Call(module, 'PublishedTestName', 'GCP') == 'x'
  # Absent, a run is not estimated (cost_estimate counts it to its bound).
  assert not benchmark_contract.Has(module, 'EstimatedMinutes')


def test_modules_load_from_benchmark_dirs(monkeypatch):
  monkeypatch.setenv(linux_benchmarks.DIRS_ENV, MINIMAL_DIR)
  found = linux_benchmarks._Discover()  # pylint: disable=protected-access
  assert {'redis_memtier', 'pkb_minimal'} <= set(found)
  minimal = found['pkb_minimal']
  assert not [h.name for h in benchmark_contract.CONTRACT
              if not h.required and benchmark_contract.Has(minimal, h.name)]


def test_a_directory_named_twice_is_read_once(monkeypatch):
  # A profile appending to PKB_BENCHMARK_DIRS each time it is sourced: every
  # pkb start was refused with '<m> and <m> both name the benchmark'.
  here = os.path.dirname(linux_benchmarks.__file__)
  monkeypatch.setenv(linux_benchmarks.DIRS_ENV, os.pathsep.join(
      [MINIMAL_DIR, MINIMAL_DIR + '/.', os.path.relpath(MINIMAL_DIR), here]))
  found = linux_benchmarks._Discover()  # pylint: disable=protected-access
  assert {'redis_memtier', 'pkb_minimal'} <= set(found)


def test_a_module_another_user_can_change_is_not_loaded(monkeypatch,
                                                         tmp_path):
  """Loading a module runs it: one in a directory others can write, or
  another user's, is refused in one line before any of it runs."""
  plugins = tmp_path / 'plugins'
  plugins.mkdir()
  ran = tmp_path / 'ran'
  module = plugins / 'planted_benchmark.py'
  module.write_text(f'open({str(ran)!r}, "w").close()\n')
  monkeypatch.setenv(linux_benchmarks.DIRS_ENV, str(plugins))
  plugins.chmod(0o777)
  with pytest.raises(errors.Error, match=r'planted_benchmark.py is not '
                     r'loaded: .*plugins is writable by other users'):
    linux_benchmarks._Discover()  # pylint: disable=protected-access
  plugins.chmod(0o755)
  if os.geteuid() == 0:
    os.chown(module, 65534, 65534)
    with pytest.raises(errors.Error, match=r'planted_benchmark.py is owned '
                       'by'):
      linux_benchmarks._Discover()  # pylint: disable=protected-access
  assert not ran.exists()


def test_a_cached_pyc_beside_a_module_is_never_what_runs(monkeypatch,
                                                         tmp_path):
  """The module's source is checked (it and the directories above it are
  no other user's); a __pycache__ beside it is not, and Python's import
  would run a .pyc there whose header matches the source's mtime and size
  (one made with umask 000 is writable by all) instead of the source."""
  import importlib.util  # pylint: disable=g-import-not-at-top
  plugins = tmp_path / 'plugins'
  plugins.mkdir()
  module = plugins / 'cached_benchmark.py'
  module.write_text(
      "BENCHMARK_NAME = 'cached'\nBENCHMARK_CONFIG = 'cached: {}'\n"
      'def GetConfig(user_config): return {}\n'
      'def Prepare(spec): pass\n'
      'def Run(spec): return []\n'
      'def Cleanup(spec): pass\n')
  planted = compile(module.read_text() + 'PLANTED = True\n', str(module),
                    'exec')
  st = module.stat()
  pyc = importlib.util.cache_from_source(str(module))
  os.makedirs(os.path.dirname(pyc), mode=0o777)
  with open(pyc, 'wb') as f:
    f.write(importlib._bootstrap_external._code_to_timestamp_pyc(  # pylint: disable=protected-access
        planted, st.st_mtime, st.st_size))
  monkeypatch.setenv(linux_benchmarks.DIRS_ENV, str(plugins))
  found = linux_benchmarks._Discover()  # pylint: disable=protected-access
  assert not hasattr(found['cached'], 'PLANTED')


@pytest.mark.e2e
def test_a_module_with_pkbs_functions_alone_dry_runs_and_runs(tmp_path):
  results = str(tmp_path)
  proc, _ = e2e.Run(['--benchmarks=pkb_minimal', '--dry_run'], results,
                    env=_Env())
  assert proc.returncode == 0, proc.stderr
  assert 'Dry run of pkb_minimal on Local' in proc.stdout
  assert 'default: 1 x local' in proc.stdout
  assert proc.stderr == ''

  proc, run_uri = e2e.Run(['--benchmarks=pkb_minimal'], results, env=_Env())
  assert proc.returncode == 0, proc.stdout + proc.stderr
  samples = e2e.Samples(results, run_uri)
  measured = [s for s in samples if s['metric'] == 'command_seconds']
  assert len(measured) == 1 and measured[0]['test'] == 'pkb_minimal'
  # Prepare's file was read back by Run on the same VM.
  assert e2e.Labels(measured[0])['file_read_back'] == 'True'
  record = e2e.Record(results, run_uri)
  assert record['status'] == 'succeeded', record['status']
  assert [s for s in record['stages_done']] == [
      'provision', 'prepare', 'run', 'cleanup', 'teardown']
  scratch = [e['data']['scratch_dir'] for e in record['resources']
             if e['kind'] == 'local_vm']
  assert scratch and not any(os.path.exists(d) for d in scratch)


@pytest.mark.e2e
def test_a_module_breaking_the_contract_stops_pkb_in_one_line(tmp_path):
  plugins = tmp_path / 'plugins'
  plugins.mkdir()
  (plugins / 'broken_benchmark.py').write_text(
      "BENCHMARK_NAME = 'broken'\nBENCHMARK_CONFIG = 'broken: {}'\n"
      'def GetConfig(user_config): return {}\n'
      'def Prepare(spec): pass\n'
      'def Run(): return []\n'
      'def Cleanup(spec): pass\n')
  proc, _ = e2e.Run(['--dry_run'], str(tmp_path / 'results'),
                    env=dict(os.environ, PKB_BENCHMARK_DIRS=str(plugins)))
  assert proc.returncode == 1
  assert proc.stderr == (f'pkb: {plugins}/broken_benchmark.py: Run() cannot '
                         'be called as Run(spec), as the harness calls '
                         'it.\n')


def test_a_module_that_fails_to_load_is_one_printable_line(monkeypatch,
                                                            capsys):
  """The module's own exception text went to the terminal as it was: a
  line break made two lines, an escape sequence played on the terminal."""
  from perfkitbenchmarker import pkb  # pylint: disable=g-import-not-at-top
  monkeypatch.setattr(linux_benchmarks, 'LOAD_ERROR', errors.Error(
      '/p/bad_benchmark.py could not be loaded: ValueError: first line\n'
      'second \x1b[31mred'))
  assert pkb.Main(['pkb.py', '--dry_run']) == pkb.EXIT_FAILED
  err = capsys.readouterr().err
  assert err.count('\n') == 1 and '\x1b' not in err, err
  assert err.startswith('pkb: /p/bad_benchmark.py could not be loaded'), err
