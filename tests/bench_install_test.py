"""scripts/bench_install.py's pure parts: the mirror it reads, the steps it
times (the product's own install scripts) and the summary. The timing run
itself needs root, debootstrap and minutes; it is a bench, not a test."""

import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..', 'scripts'))
import bench_install  # pylint: disable=g-import-not-at-top,wrong-import-position

from perfkitbenchmarker import system_info  # pylint: disable=g-import-not-at-top,wrong-import-position
from perfkitbenchmarker.linux_packages import argv_secret  # pylint: disable=g-import-not-at-top,wrong-import-position
from perfkitbenchmarker.linux_packages import package_commands  # pylint: disable=g-import-not-at-top,wrong-import-position

DEB822 = """Types: deb
URIs: http://mirror.example/debian
Suites: bookworm bookworm-updates
Components: main

Types: deb
URIs: http://mirror.example/debian-security
Suites: bookworm-security
Components: main
"""


def _AptDir(tmp_path, name, text):
  (tmp_path / 'sources.list.d').mkdir(exist_ok=True)
  (tmp_path / 'sources.list.d' / name).write_text(text)
  return str(tmp_path)


def test_mirror_from_deb822_sources(tmp_path):
  apt = _AptDir(tmp_path, 'debian.sources', DEB822)
  assert bench_install.DebianMirror(apt) == 'http://mirror.example/debian'


def test_mirror_from_a_one_line_sources_list(tmp_path):
  (tmp_path / 'sources.list').write_text(
      '# comment\ndeb-src http://src.example/debian bookworm main\n'
      'deb [arch=amd64] http://one.example/debian bookworm main\n')
  assert bench_install.DebianMirror(str(tmp_path)) == (
      'http://one.example/debian')


def test_no_bookworm_source_is_one_line(tmp_path):
  apt = _AptDir(tmp_path, 'other.sources',
                DEB822.replace('bookworm', 'trixie'))
  with pytest.raises(bench_install.BenchError, match='no Debian bookworm'):
    bench_install.DebianMirror(apt)


def test_ours_are_the_products_own_install_scripts():
  info = system_info.SystemInfo(os_id='debian', os_codename='bookworm',
                                package_managers=('apt-get',))
  paths = dict(bench_install.Paths(info))
  assert [s.script for s in paths['ours_server']] == [
      package_commands.RedisServerInstall(info, 'distro')]
  assert [s.script for s in paths['ours_client']] == [
      package_commands.RedisToolsInstall(info),
      argv_secret.CompilerInstall(info)]
  # PKB's path builds Redis from the unpatched upstream tarball, one job.
  pkb = '\n'.join(s.script for s in paths['pkb_server'])
  assert 'orig.tar.gz' in pkb and '\nmake\n' in pkb and '-j' not in pkb


def test_summary_is_the_slower_vm_of_each_tool():
  timed = [bench_install.Timed('ours_server', 'a', 7),
           bench_install.Timed('ours_client', 'b', 6),
           bench_install.Timed('ours_client', 'c', 11),
           bench_install.Timed('pkb_server', 'd', 140),
           bench_install.Timed('pkb_client', 'e', 40)]
  assert bench_install.Summary(timed) == (17, 140)


def test_refuses_to_run_without_root(monkeypatch, capsys):
  monkeypatch.setattr(os, 'geteuid', lambda: 1000)
  assert bench_install.main([]) == 1
  err = capsys.readouterr().err.strip()
  assert err.startswith('bench_install: needs root') and '\n' not in err


@pytest.mark.parametrize('where', ['missing/install.json', '.'])
def test_an_out_file_it_cannot_write_is_refused_before_it_runs(
    tmp_path, monkeypatch, capsys, where):
  # '--out=/nonexistent/install.json' ran the whole bench (minutes of
  # debootstrap and installs: here with those stubbed), printed its
  # summary, then ended in a FileNotFoundError traceback, the timings
  # docs/search.md is rendered from lost.
  monkeypatch.setattr(os, 'geteuid', lambda: 0)
  path = str(tmp_path / where)
  assert bench_install.main([f'--out={path}']) == 2
  err = capsys.readouterr().err
  assert err.startswith(f'bench_install: --out={path}: ')
  assert err.endswith('; nothing was run.\n') and err.count('\n') == 1


@pytest.mark.parametrize('where, problem', [
    ('missing', 'there is no such directory'),
    ('a_file', 'not a directory'),
    ('read_only', 'a directory this user cannot write')])
def test_a_work_dir_it_cannot_use_is_refused_before_it_runs(
    tmp_path, monkeypatch, capsys, where, problem):
  # '--work_dir=/nonexistent' (as root, with debootstrap) ended in
  # tempfile.mkdtemp's FileNotFoundError traceback.
  (tmp_path / 'a_file').write_text('')
  (tmp_path / 'read_only').mkdir()
  real_access = os.access
  monkeypatch.setattr(os, 'access', lambda path, mode: real_access(
      path, mode) and not path.endswith('read_only'))
  monkeypatch.setattr(os, 'geteuid', lambda: 0)
  monkeypatch.setattr(bench_install, 'MakeBase', None)  # Never reached.
  path = str(tmp_path / where)
  assert bench_install.main([f'--work_dir={path}']) == 2
  assert capsys.readouterr().err == (
      f'bench_install: --work_dir={path}: {problem}; nothing was run.\n')
