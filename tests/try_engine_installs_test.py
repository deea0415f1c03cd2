"""scripts/try_engine_installs.py's reading of a `bash -x` trace.

The script itself needs root, debootstrap and minutes (its output is in
docs/engine_installs.md); this checks how it names the step that stopped a
script, on a trace shaped like the real one (an EXIT trap runs after the
failing download).
"""


from perfkitbenchmarker import system_info
import script_modules

tries = script_modules.Script('try_engine_installs')

TRACE = """+ set -eo pipefail
+ DEBIAN_FRONTEND=noninteractive
+ apt-get -y -q install build-essential
debconf: delaying package configuration, since apt-utils is not installed
++ mktemp -d
+ build=/tmp/tmp.Y95SP9Fqep
+ trap 'rm -rf "$build"' EXIT
+ curl -fsSL https://github.com/Snapchat/KeyDB/archive/v6.3.4.tar.gz -o x
curl: (6) Could not resolve host: github.com
+ rm -rf /tmp/tmp.Y95SP9Fqep
"""


def test_the_failing_step_is_the_one_before_the_last_error():
  command, why = tries.Outcome(6, TRACE)
  assert command.startswith('curl -fsSL https://github.com/Snapchat')
  assert why == 'curl: (6) Could not resolve host: github.com'
  assert tries.IsOutsideDownload(command)
  assert tries.Outcome(0, TRACE) == ('', '')


def test_commands_leave_out_bare_assignments_and_subshells():
  commands = tries.Commands(TRACE)
  assert commands[0] == 'set -eo pipefail'
  assert 'DEBIAN_FRONTEND=noninteractive' not in commands
  assert commands[-1] == 'rm -rf /tmp/tmp.Y95SP9Fqep'
  assert not any(c.startswith('mktemp') for c in commands)


_DEBIAN = system_info.SystemInfo(
    os_id='debian', os_codename='bookworm', os_version_id='12',
    arch='x86_64', package_managers=('apt-get',))


def test_an_unknown_path_is_refused_before_debootstrap_runs(capsys):
  # '--only=dragonfy' (a typo) made the fresh Debian root (debootstrap,
  # minutes), ran none of the paths and ended 'ran=0 ...', exit 0.
  assert tries.main(['--only=dragonfly', '--only=dragonfy']) == 2
  captured = capsys.readouterr()
  assert captured.out == ''
  assert captured.err == (
      "try_engine_installs: --only='dragonfy' is no install path; the paths "
      "are 'dragonfly', 'keydb', 'keydb 6.3.4 source', 'memtier'.\n")
  assert [name for name, _ in tries.Scripts(_DEBIAN, 'x86_64')] == list(
      tries.NAMES)


def test_a_work_dir_it_cannot_use_is_refused_before_it_runs(
    tmp_path, monkeypatch, capsys):
  # '--work_dir=/nonexistent' (as root, with debootstrap) ended in
  # tempfile.mkdtemp's FileNotFoundError traceback.
  monkeypatch.setattr(tries.os, 'geteuid', lambda: 0)
  monkeypatch.setattr(tries.bench_install, 'MakeBase', None)  # Not reached.
  path = str(tmp_path / 'missing')
  assert tries.main([f'--work_dir={path}']) == 2
  assert capsys.readouterr().err == (
      f'try_engine_installs: --work_dir={path}: there is no such directory; '
      'nothing was run.\n')
