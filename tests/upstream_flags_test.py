"""Our flags against upstream PKB's definitions of the same names.

tests/data/upstream_pkb_flags.json is upstream's flag registry read at a
recorded commit (scripts/record_upstream_flags.py); docs/upstream_flags.md
is the table of differences kept on purpose. A shared flag must match
upstream's type and default or have a row there with both values, and say
"upstream" in its help.
"""

import getpass
import json
import os
import re
import sys

import pytest
from absl import flags

from perfkitbenchmarker import flag_types
from perfkitbenchmarker import pkb  # pylint: disable=unused-import  (every flag)
import script_modules

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(REPO, 'tests', 'data', 'upstream_pkb_flags.json')
DOC = os.path.join(REPO, 'docs', 'upstream_flags.md')
INTEGER_LISTS = ('memtier_clients', 'memtier_threads', 'memtier_pipeline',
                 'redis_server_io_threads')


@pytest.fixture(scope='module')
def upstream():
  with open(DATA) as f:
    return json.load(f)


def _Ours():
  registry = flags.FLAGS
  return {name: flag for name, flag in registry._flags().items()  # pylint: disable=protected-access
          if name == flag.name and not (
              registry.find_module_defining_flag(name) or '').startswith(
                  'absl')}


def _Default(flag):
  value = flag.default
  return list(value) if isinstance(value, tuple) else value


def _DocRows():
  """flag -> ((upstream type, default), (our type, default)) from the doc."""
  rows = {}
  with open(DOC) as f:
    for line in f:
      cells = [c.strip() for c in line.strip().strip('|').split('|')]
      if len(cells) != 4 or not re.fullmatch(r'`\w+`', cells[0]):
        continue
      sides = []
      for cell in cells[1:3]:
        match = re.fullmatch(r'(.+), `(.*)`', cell)
        assert match, f'docs/upstream_flags.md: cannot read "{cell}"'
        sides.append((match.group(1), json.loads(match.group(2))))
      rows[cells[0].strip('`')] = tuple(sides)
  return rows


def _Same(flag, type_name, default, recorded_type, recorded_default):
  if type_name != recorded_type:
    return False
  if isinstance(flag, flags.MultiFlag) and not default and not (
      recorded_default):
    return True  # [] and None both mean "not given"
  return default == recorded_default


def test_help_shows_every_flag_whose_default_differs_on_purpose():
  """`./pkb.py --help` (the run-level flags only since --helpfull lists
  every flag) had lost 14 of the table's flags, memtier_clients and
  memtier_ratio among them."""
  from perfkitbenchmarker import flags as pkb_flags  # pylint: disable=g-import-not-at-top
  rows = _DocRows()
  assert set(pkb_flags.UPSTREAM_DIFFERENCES) == set(rows)
  text = pkb_flags.HelpText(['pkb', '--help'])
  for name in rows:
    shown = re.search(rf'^  --(\[no\])?{name}: (.*(\n    .*)*)', text, re.M)
    assert shown, f'--{name} is not in --help'
    assert 'upstream' in shown.group(2).lower(), shown.group(0)


def test_owners_help_names_the_variable_the_owner_is_read_from(
    monkeypatch):
  # The help said '$USER at run time'; with LOGNAME=alice USER=bob a run's
  # samples said owner alice (pkb: FLAGS.owner or getpass.getuser()).
  monkeypatch.setenv('LOGNAME', 'alice')
  monkeypatch.setenv('USER', 'bob')
  assert getpass.getuser() == 'alice'
  help_text = ' '.join(flags.FLAGS['owner'].help.split())
  assert '$LOGNAME' in help_text
  assert help_text.index('$LOGNAME') < help_text.index('$USER')


def test_the_record_names_its_upstream_commit(upstream):
  assert re.fullmatch(r'[0-9a-f]{40}', upstream['upstream_commit'])
  assert len(upstream['all_upstream_names']) > 1000
  assert upstream['upstream_commit'] in open(DOC).read()


def test_every_flag_name_we_share_with_upstream_is_recorded(upstream):
  clashing = set(_Ours()) & set(upstream['all_upstream_names'])
  assert clashing == set(upstream['shared']), (
      'rerun scripts/record_upstream_flags.py and review the differences')
  # The doc's count said 67 after upstream's module API added --num_vms
  # and --data_search_paths (69).
  with open(DOC) as f:
    said = re.search(r'(\d+) of this harness\'s flag names', f.read())
  assert said and int(said.group(1)) == len(clashing), said


def test_shared_flags_match_upstream_or_are_documented(upstream):
  ours, rows = _Ours(), _DocRows()
  undocumented = []
  for name, recorded in upstream['shared'].items():
    flag = ours[name]
    mine = (flag.flag_type(), _Default(flag))
    if _Same(flag, *mine, recorded['type'], recorded['default']):
      assert name not in rows, f'{name} matches upstream; drop its doc row'
      continue
    if name not in rows:
      undocumented.append(name)
      continue
    assert rows[name] == ((recorded['type'], recorded['default']), mine), (
        f'docs/upstream_flags.md row for {name} is stale')
    assert 'upstream' in flag.help.lower(), (
        f'--{name} differs from upstream; its help must say so')
  assert not undocumented, f'differ from upstream, not in the doc table: ' \
      f'{undocumented}'
  assert set(rows) <= set(upstream['shared'])


def test_upstream_integer_lists_are_integer_lists_here(upstream):
  ours = _Ours()
  for name in INTEGER_LISTS:
    assert ours[name].flag_type() == 'integer list', name
  for name in INTEGER_LISTS[:3]:
    assert upstream['shared'][name]['type'] == 'integer list'


def test_integer_list_syntax_is_upstreams():
  parser = flag_types.IntegerListParser(lower_bound=1, upper_bound=128)
  assert parser.parse('1,2,4') == [1, 2, 4]
  assert parser.parse('5-7') == [5, 6, 7]
  assert parser.parse('8-32-8') == [8, 16, 24, 32]
  assert parser.parse(30) == [30]
  assert parser.parse([1, '3-4']) == [1, 3, 4]
  for bad in ('', 'x', '1,,2', '4-2', '0', '129', '1-3-0'):
    with pytest.raises(ValueError):
      parser.parse(bad)


def test_an_integer_list_expands_to_a_bounded_number_of_values():
  """--memtier_clients=1-100000000 filled memory before any bound was
  checked (MemoryError traceback); 1-100000 printed a 589 KB error line."""
  parser = flag_types.IntegerListParser(lower_bound=1, upper_bound=10000)
  assert len(parser.parse(f'1-{flag_types.MAX_VALUES}')) == (
      flag_types.MAX_VALUES)
  for bad in ('1-100000000', '1-1000000000000000000000', '1-600,1-600'):
    with pytest.raises(ValueError) as e:
      parser.parse(bad)
    assert str(e.value) == (f'"{bad}" gives more than 1000 values (at most '
                            '1000 runs per flag)')
  with pytest.raises(ValueError, match='gives more than 1000 values'):
    parser.parse(['1-600', '1-600'])  # a config's YAML list


def test_several_values_where_one_run_takes_one_are_refused_in_one_line():
  assert flag_types.OneValue(None, 'f', 'why') is None
  assert flag_types.OneValue([4], 'f', 'why') == 4
  with pytest.raises(Exception) as e:
    flag_types.OneValue([2, 4], 'redis_server_io_threads', 'because.')
  assert str(e.value) == ('--redis_server_io_threads=2,4: give one value; '
                          'because.')


def test_record_script_with_a_python_lacking_upstream_s_requirements(
    tmp_path, monkeypatch, capsys):
  # 'python3 scripts/record_upstream_flags.py' from an upstream checkout,
  # with a python that has no absl (not upstream's virtualenv), ended in
  # 'ModuleNotFoundError: No module named 'absl'' under a traceback.
  record = script_modules.Script('record_upstream_flags')
  (tmp_path / 'perfkitbenchmarker').mkdir()
  (tmp_path / 'perfkitbenchmarker' / 'benchmark_sets.py').write_text('')
  monkeypatch.chdir(tmp_path)
  monkeypatch.setattr(sys, 'path', list(sys.path))
  monkeypatch.setattr(sys, 'argv', list(sys.argv))
  monkeypatch.setitem(sys.modules, 'absl', None)  # Its import fails.
  assert record.main() == 2
  err = capsys.readouterr().err
  assert err.startswith("record_upstream_flags: upstream's pkb does not "
                        f'import with {sys.executable} (')
  assert err.count('\n') == 1
