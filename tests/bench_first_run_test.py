"""scripts/bench_first_run.py's arguments, refused before any run starts.

The bench itself runs ./pkb.py several times (minutes, root for the
quota); this case stops before the first.
"""

import importlib.util
import os

_SPEC = importlib.util.spec_from_file_location(
    'bench_first_run', os.path.join(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))), 'scripts', 'bench_first_run.py'))
bench = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(bench)


def test_no_repeats_is_one_line(tmp_path, monkeypatch, capsys):
  # '--repeats=0' ran nothing, then ended in "KeyError: ('redis-benchmark',
  # 'quota')" under a traceback where the table of ratios is printed.
  monkeypatch.setattr(bench.tempfile, 'tempdir', str(tmp_path))
  assert bench.main(['--repeats=0']) == 2
  captured = capsys.readouterr()
  assert captured.out == ''
  assert captured.err == 'bench_first_run: --repeats=0: give 1 or more\n'
  assert os.listdir(tmp_path) == []
