"""The shell scripts pkb runs on VMs are files, checked by shellcheck.

Issue 37 point 3: every script in perfkitbenchmarker/scripts/ passes
Debian's shellcheck (scripts/setup.sh installs it), in the fast tier
(tests/tier_guard.py's ALLOWED says why it may run there); a script gets
its values as arguments, never in its text.
"""

import glob
import os
import re
import shlex
import subprocess

import pytest

import e2e_support
import tier_guard
from perfkitbenchmarker import paths
from perfkitbenchmarker import shell_scripts

_SHELLCHECK = e2e_support.NeedsTools(
    'shellcheck', how="scripts/setup.sh installs Debian's shellcheck")


@_SHELLCHECK
def test_every_shipped_script_passes_shellcheck():
  names = shell_scripts.Names()
  assert 'process_stat.sh' in names
  # -x -P SCRIPTDIR: a script's `. ./<library>.sh` is followed, as
  # shell_scripts.Text inlines it. Every finding fails, style included.
  result = subprocess.run(
      ['shellcheck', '--shell=bash', '--severity=style', '-x',
       '--source-path=SCRIPTDIR'] + names,
      cwd=shell_scripts.SCRIPTS_DIR, capture_output=True, text=True,
      timeout=60, check=False)
  assert result.returncode == 0, result.stdout + result.stderr


@_SHELLCHECK
def test_the_checkouts_own_shell_scripts_pass_shellcheck():
  # Not shipped, but run by every developer and CI: setup, tests, builds.
  repo = paths.REPO_ROOT
  names = sorted(glob.glob('scripts/*.sh', root_dir=repo)) + ['.ci/run']
  assert 'scripts/setup.sh' in names
  result = subprocess.run(
      ['shellcheck', '--shell=bash', '--severity=style'] + names, cwd=repo,
      capture_output=True, text=True, timeout=60, check=False)
  assert result.returncode == 0, result.stdout + result.stderr


@_SHELLCHECK
def test_shellcheck_fails_a_script_it_should():
  # The check above can fail: an unquoted expansion is a finding.
  result = subprocess.run(
      ['shellcheck', '--shell=bash', '-'], input='rm -f $1\n',
      capture_output=True, text=True, timeout=60, check=False)
  assert result.returncode == 1 and 'SC2086' in result.stdout


def test_the_fast_tier_allows_shellcheck_only():
  with pytest.raises(tier_guard.TierViolation):
    subprocess.run(['bash', '-c', 'exit 0'], check=False)
  assert tier_guard.GUARD.Take()  # Taken: this test does not fail for it.


def test_a_library_is_inlined_where_a_script_includes_it():
  library = shell_scripts.Text('process_stat.sh')
  for function in ('pline()', 'ptail()', 'pstat()', 'alive()'):
    assert function in library
  assert library in shell_scripts.Text('snapshot.sh')
  for name in shell_scripts.Names():
    assert not re.search(r'^\. ', shell_scripts.Text(name), re.M), name


def test_arguments_are_passed_never_spliced():
  value = "x'; touch /tmp/pwned; echo '$(id)"
  sourced = shell_scripts.Sourced('probe.sh', value, 7)
  assert shell_scripts.Args(f'x=1\n{sourced}\n') == [value, '7']
  assert shlex.split(sourced) == ['.', '${PKB_SCRIPTS:?}/probe.sh', value, '7']
  # Run by path from the checked directory: the log names the script and
  # its arguments, not its text.
  command = shell_scripts.Command('trusted.sh', value, 7)
  assert shlex.split(command) == ['${BASH:-bash}', '${PKB_SCRIPTS:?}/trusted.sh',
                                  value, '7']
  assert '\n' not in command and shell_scripts.Uses(command)


def _TestShCopy(tmp_path, python_text):
  """A copy of scripts/test.sh beside a .venv whose python is
  `python_text`, and an empty tests/; returns the script's path."""
  (tmp_path / 'scripts').mkdir()
  script = tmp_path / 'scripts' / 'test.sh'
  with open(f'{paths.REPO_ROOT}/scripts/test.sh', encoding='utf-8') as f:
    script.write_text(f.read())
  script.chmod(0o755)
  python = tmp_path / '.venv' / 'bin' / 'python'
  python.parent.mkdir(parents=True)
  python.write_text(python_text)
  python.chmod(0o755)
  (tmp_path / 'tests').mkdir()
  return script


@pytest.mark.e2e
def test_test_sh_runs_a_test_file_given_by_absolute_path_alone(tmp_path):
  # './scripts/test.sh /checkout/tests/x_test.py' (a shell's completion)
  # ran the whole suite on 4 workers with that file added: only
  # 'tests/...' was taken for a test file. A copy of the script beside a
  # .venv whose python prints the arguments pytest would get.
  script = _TestShCopy(tmp_path, '#!/bin/sh\nprintf "%s\\n" "$@"\n')
  given = str(tmp_path.resolve() / 'tests' / 'x_test.py') + '::test_a'
  done = subprocess.run([str(script), '--fast', given], capture_output=True,
                        text=True, timeout=30, check=True)
  words = done.stdout.splitlines()
  assert words[-1] == given
  assert 'tests' not in words and '-n' not in words, words


@pytest.mark.e2e
def test_test_sh_fills_a_fresh_checkouts_collection_cache_once(tmp_path):
  # Without cached assertion-rewritten test modules each pytest-xdist
  # worker rewrote every test file itself: two collections of half the
  # files each come first, then the run; with the cache there, the run
  # alone. The stub python logs each call's arguments on one line.
  log = tmp_path / 'calls'
  script = _TestShCopy(tmp_path, f'#!/bin/sh\necho "$*" >> {log}\n')
  names = [f'tests/{c}_test.py' for c in 'abcd']
  for name in names:
    (tmp_path / name).write_text('')
  # test.sh's default worker count, whatever the suite running this was
  # given (PKB_TEST_WORKERS=6 ./scripts/test.sh failed here).
  env = {k: v for k, v in os.environ.items() if k != 'PKB_TEST_WORKERS'}
  subprocess.run([str(script), '--fast'], capture_output=True, text=True,
                 timeout=30, check=True, env=env)
  calls = sorted(log.read_text().splitlines())
  warm = [c for c in calls if '--collect-only' in c]
  assert sorted(c.split()[-2:] for c in warm) == [names[:2], names[2:]]
  (run,) = [c for c in calls if c not in warm]
  assert '-n 4' in run and run.endswith(' tests'), run
  log.unlink()
  (tmp_path / 'tests' / '__pycache__').mkdir()
  (tmp_path / 'tests' / '__pycache__' /
   'a_test.cpython-311-pytest-9.2.0.pyc').write_bytes(b'')
  subprocess.run([str(script), '--fast'], capture_output=True, text=True,
                 timeout=30, check=True, env=env)
  (run,) = log.read_text().splitlines()
  assert '--collect-only' not in run and '-n 4' in run, run


@pytest.mark.e2e
def test_snapshot_counts_live_threads_only_where_asked():
  """SNAP_LIVE is probe.sh's (its `threads` rule); the server sampler never
  reads it and took one more sum per live thread per snapshot, its array
  growing over a run. Counted only with SNAP_COUNT_LIVE set."""
  script = ('. ./snapshot.sh; SNAP_COUNT_LIVE=$1; pthreads $$ >/dev/null;'
            ' pthreads $$ >/dev/null; echo "${#SNAP_LIVE[@]} ${SNAP_LIVE[$$]}"')
  counts = [subprocess.run(
      ['bash', '-c', script, 'bash', flag], cwd=shell_scripts.SCRIPTS_DIR,
      capture_output=True, text=True, timeout=30, check=True).stdout.split()
            for flag in ('', '1')]
  assert counts == [['0'], ['1', '2']]  # bash -c: one live thread, twice.
