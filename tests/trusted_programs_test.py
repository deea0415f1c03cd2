"""A program the run executes must be one no other user can change.

Issue 35 class 4: `--memtier_path` inside a directory writable by `nobody`
passed every check, and nobody's script ran as root with the load password
in its arguments. Every program the run executes on this machine (load
generators, server binaries, java and its jars, any `--*_path`) must be
owned by root or the invoking user and writable by no one else, and so
must each directory above it (trusted_programs.py); otherwise one line,
exit 2, before anything runs. The programs this checkout really runs (the
venv's python, the wheels' servers, /usr/bin's tools) pass.
"""

import importlib.util
import os
import shutil
import sys

import pytest

import e2e_support as e2e
from perfkitbenchmarker import errors
from perfkitbenchmarker import trusted_programs
from perfkitbenchmarker.linux_packages import local_redis_builds
from perfkitbenchmarker.linux_packages import valkey_server

NOBODY = 65534
_IS_ROOT = os.geteuid() == 0


def _Program(directory, name='tool', mode=0o755):
  path = os.path.join(directory, name)
  with open(path, 'w') as f:
    f.write('#!/bin/sh\nexit 0\n')
  os.chmod(path, mode)
  return path


@pytest.fixture
def safe_dir(tmp_path):
  """A directory only its owner (this user) can write, under pytest's own
  (0700) base."""
  os.chmod(tmp_path, 0o755)
  return str(tmp_path)


def test_the_programs_this_checkout_runs_pass():
  assert trusted_programs.Problem(sys.executable) is None
  for program in ('bash', 'redis-server', 'redis-cli', 'redis-benchmark'):
    found = shutil.which(program)
    if found:
      assert trusted_programs.Problem(found) is None, found
  wheel_servers = [valkey_server.WheelServerPath()]
  for module, relative in local_redis_builds.WHEELS.values():
    spec = importlib.util.find_spec(module)
    if spec is not None:
      wheel_servers.append(os.path.join(
          list(spec.submodule_search_locations)[0], relative))
  for path in wheel_servers:
    assert trusted_programs.Problem(path) is None, path


def test_a_safe_program_passes_and_keeps_its_path(safe_dir):
  path = _Program(safe_dir)
  assert trusted_programs.Check(path, '--x_path') == path


@pytest.mark.parametrize('mode', [0o777, 0o775, 0o757])
def test_a_program_others_can_write_is_refused(safe_dir, mode):
  path = _Program(safe_dir, mode=mode)
  if mode == 0o775 and os.stat(path).st_gid == 0:
    if not _IS_ROOT:
      pytest.skip("root's own group may write (as sudo allows)")
    os.chown(path, -1, NOBODY)  # nogroup
  with pytest.raises(errors.UsageError, match='writable by other users'):
    trusted_programs.Check(path, '--x_path')


def test_a_directory_others_can_write_is_refused_at_any_depth(safe_dir):
  open_dir = os.path.join(safe_dir, 'open')
  os.makedirs(os.path.join(open_dir, 'deep', 'er'))
  os.chmod(open_dir, 0o777)
  path = _Program(os.path.join(open_dir, 'deep', 'er'))
  with pytest.raises(errors.UsageError) as e:
    trusted_programs.Check(path, f'--memtier_path={path}')
  message = str(e.value)
  assert '\n' not in message
  assert message.startswith(f'--memtier_path={path}: {open_dir} is writable')


def test_a_sticky_directory_is_fine_but_what_others_own_in_it_is_not(
    safe_dir):
  sticky = os.path.join(safe_dir, 'sticky')
  os.mkdir(sticky)
  os.chmod(sticky, 0o1777)  # As /tmp.
  mine = os.path.join(sticky, 'mine')
  os.mkdir(mine, 0o755)
  assert trusted_programs.Problem(_Program(mine)) is None


def test_a_link_is_followed_and_both_paths_checked(safe_dir):
  open_dir = os.path.join(safe_dir, 'open')
  os.mkdir(open_dir)
  os.chmod(open_dir, 0o777)
  target = _Program(open_dir)
  link = os.path.join(safe_dir, 'link')
  os.symlink(target, link)
  assert 'writable by other users' in trusted_programs.Problem(link)
  # A safe program reached through a directory others can write: they
  # could point the link elsewhere.
  good = _Program(safe_dir, 'good')
  os.symlink(good, os.path.join(open_dir, 'to-good'))
  assert 'writable by other users' in trusted_programs.Problem(
      os.path.join(open_dir, 'to-good'))


@e2e.Needs('root (chown to nobody)', lambda: _IS_ROOT, 'run the tests as root')
def test_a_program_or_directory_owned_by_another_user_is_refused(safe_dir):
  path = _Program(safe_dir)
  os.chown(path, NOBODY, -1)
  assert 'owned by' in trusted_programs.Problem(path)
  os.chown(path, 0, -1)
  assert trusted_programs.Problem(path) is None
  os.chown(safe_dir, NOBODY, -1)
  try:
    assert f'{safe_dir} is owned by' in trusted_programs.Problem(path)
  finally:
    os.chown(safe_dir, 0, -1)


@pytest.mark.e2e
@pytest.mark.skipif(not _IS_ROOT, reason='makes a directory nobody owns')
@pytest.mark.parametrize('dry_run', [True, False])
def test_pkb_refuses_a_memtier_path_nobody_can_write_before_running_it(
    tmp_path, dry_run):
  os.chmod(tmp_path, 0o755)
  planted = tmp_path / 'nobodys'
  planted.mkdir()
  os.chown(planted, NOBODY, -1)
  os.chmod(planted, 0o755)
  ran = tmp_path / 'ran'
  # What nobody could put there: a "memtier" that leaves a trace of
  # having run (and of its arguments) as whoever ran it.
  tool = planted / 'memtier_benchmark'
  tool.write_text(f'#!/bin/sh\necho "$(id -u) $*" >> {ran}\n'
                  'echo "memtier_benchmark 2.1.0"\n')
  tool.chmod(0o755)
  os.chown(tool, NOBODY, -1)
  results = tmp_path / 'results'
  proc, run_uri = e2e.Run(
      e2e.FAST + [f'--memtier_path={tool}'] +
      (['--dry_run'] if dry_run else []), str(results))
  assert not ran.exists(), ran.read_text()  # Never run, as anyone.
  assert proc.returncode == 2, (proc.stdout, proc.stderr)
  lines = proc.stderr.strip().splitlines()
  assert len(lines) == 1 and 'Traceback' not in proc.stderr, proc.stderr
  assert f'{planted} is owned by nobody' in lines[0], lines[0]
  assert not (results / run_uri).exists()
