"""Text from a run is shown as text by every renderer (terminal_text).

Issue 35 class 6: a machine type holding `$...$` made matplotlib parse it as
math, and a bad formula stopped compare's report (exit 3, no page); the
Markdown summary left bare URLs and @mentions live (GitHub links and
notifies them whatever the escaping); recompute printed a run dir's text,
terminal escapes and all. One sanitiser per medium, in terminal_text.py,
used by the charts, the HTML page, the Markdown summary and the consoles.
"""

import html
import json
import os
import re

import pytest

from perfkitbenchmarker import errors
from perfkitbenchmarker import recompute
from perfkitbenchmarker import redis_shard
from perfkitbenchmarker import system_info
from perfkitbenchmarker import run_scope
from perfkitbenchmarker import terminal_text
from perfkitbenchmarker import vm_util
from perfkitbenchmarker.linux_packages import argv_secret
from perfkitbenchmarker.linux_packages import memtier
from perfkitbenchmarker.linux_packages import package_commands
from perfkitbenchmarker.linux_packages import redis_server
from perfkitbenchmarker.linux_packages import ycsb
from perfkitbenchmarker.load_generators import base
from perfkitbenchmarker.load_generators import commands
from perfkitbenchmarker.load_generators import concurrent
from perfkitbenchmarker.load_generators import redis_benchmark
from perfkitbenchmarker.load_generators import ycsb_results
from perfkitbenchmarker.providers.static import provider
from perfkitbenchmarker.results_history import compare_cli
from perfkitbenchmarker.results_history import loader
from perfkitbenchmarker.study import deployment

HERE = os.path.dirname(os.path.abspath(__file__))
ONE_RUN = os.path.join(HERE, 'data', 'history', 'runs', '902af480',
                       loader.RESULTS_FILE)
# matplotlib's mathtext: a formula, and one it cannot parse (it raised).
MATH = r'$\frac{1}{0}$ and $x^$'
LINKS = ('@octocat ping @github-team https://evil.example/x '
         'www.evil.example mail me@evil.example')
CONTROLS = '\x1b]0;pwned\x07\x1b[2J\r'
# What GitHub turns into a link or a notification in a summary.
_MENTION = re.compile(r'(?<![\w`])@[A-Za-z0-9][A-Za-z0-9-]*')
_BARE_URL = re.compile(r'(?i)\b(?:https?://|www\.)')
_CONTROL = re.compile('[\x00-\x08\x0b-\x1f\x7f-\x9f]')


def _Rendered(markdown):
  """What a reader sees of Markdown text: its entities decoded, its
  zero-width spaces invisible."""
  return html.unescape(markdown).replace('\u200b', '')


def _History(tmp_path, label):
  with open(ONE_RUN) as f:
    rows = [json.loads(line) for line in f if line.strip()]
  for row in rows:
    row['labels'] = row['labels'].replace(
        '|local_priced_as:AWS:c6gn.xlarge|', f'|local_priced_as:{label}|')
  path = tmp_path / 'h.json'
  path.write_text(''.join(json.dumps(r) + '\n' for r in rows))
  return str(path)


def test_each_medium_shows_the_text_as_written():
  assert terminal_text.ChartText('a $x$ b') == r'a \$x\$ b'
  assert terminal_text.ChartText('one\ntwo\x1b') == 'one\ntwo\\x1b'
  markdown = terminal_text.MarkdownText(LINKS + ' |*_[x](y)#1\n' + CONTROLS)
  assert not _MENTION.search(markdown) and not _BARE_URL.search(markdown)
  assert not _CONTROL.search(markdown) and '\n' not in markdown
  # Rendered (entities decoded), the text is what was written, with
  # invisible zero-width spaces.
  assert _Rendered(markdown).startswith(LINKS)
  assert terminal_text.HtmlText('a\nb\x1b') == 'a\nb\\x1b'


def test_a_commands_output_in_one_line_keeps_its_lines_and_plays_nothing():
  """vm_util.Tail, the last lines of a command's output in an error or a
  warning (logged to the console as it is). Before: str.splitlines ended
  a line at ssh_command.sh's \\x1e markers, a lone \\r, \\x85 and
  \\u2028 too, so the markers and a program's bytes were lines of their
  own, and the kept text reached the terminal raw (an ESC sequence set its
  title, a \\r rewrote the line). Now lines end at \\n and \\r\\n
  only, and every control shows as its escape."""
  output = ('\x1epkb-started\x1eWarning: x\r\nprogress 10%\rprogress 100%'
            '\n\x1b]0;pwned\x07done\u2028more\x85end\n\n')
  assert vm_util.Tail(output, 3) == (
      '\\x1epkb-started\\x1eWarning: x | progress 10%\\rprogress 100% | '
      '\\x1b]0;pwned\\x07done\\u2028more\\x85end')
  assert vm_util.Tail(output, 1) == (
      '\\x1b]0;pwned\\x07done\\u2028more\\x85end')
  # Escaped once: what prints it escapes nothing twice.
  assert terminal_text.Printable(vm_util.Tail(output)) == vm_util.Tail(output)
  assert vm_util.Tail(' \r\n\n') == '' and vm_util.Tail(None) == ''


class _Machine:
  """A machine whose every command says `said` on stderr, exit 1: a lent
  machine's sudo, or a load generator ld.so warns of; `out` on stdout."""

  name = 'servers-0'
  run_uri = 'ta1b2c3d'
  scratch_dir = '/tmp/pkb-ta1b2c3d'

  def __init__(self, said, out=''):
    self.said, self.out = said, out
    self._argv_secret_library = True  # Built: CheckTool runs the tool.

  def Install(self, package):
    del package

  def Sudo(self, command):
    return command

  def RemoteCommand(self, command, **kwargs):
    del command, kwargs
    # The run holds the tuning.
    return self.out or 'holder=ta1b2c3d/servers-0\n', ''

  def RemoteCommandWithReturnCode(self, command, timeout=None):
    del command, timeout
    return self.out, self.said, 1


def test_a_machines_words_in_a_message_are_its_lines_escaped():
  """What a machine said, in an error: the static machine's refused
  restore, a failed probe process, YCSB's errors and ld.so's refusal of the
  argv_secret library. Before, each split it with str.splitlines, so a
  \x1e, \x1c or \u2028 in it cut its line (the message kept a piece),
  and YCSB's line reached the message raw; now they are lines as
  vm_util.Tail reads them (terminal_text.Lines), escaped as it shows them."""
  said = 'sudo: \x1b]0;pwned\x07a password\x1eis required\n'
  settings = provider.HostSettings(_Machine(said), {})
  with pytest.raises(errors.ResourceError) as refused:
    settings._Delete()  # pylint: disable=protected-access
  assert ('(sudo: \\x1b]0;pwned\\x07a password\\x1eis required)'
          in str(refused.value))
  said = 'error: authentication\x1efailed [x]\nerror: again\n'
  assert concurrent._Said(said) == (  # pylint: disable=protected-access
      'error: authentication\\x1efailed [x] | error: again')
  with open(os.path.join(HERE, 'data', 'ycsb', 'load_string.stdout')) as f:
    result = ycsb_results.YcsbResult.Parse(
        f.read(), 'Error: reply\u2028lost\x1b[2J\n')
  assert result.Errors(2000) == ['Error: reply\\u2028lost\\x1b[2J']
  said = ("ERROR: ld.so: object '/tmp/pkb\x1c/libargv.so' from LD_PRELOAD "
          'cannot be preloaded (wrong ELF class: ELFCLASS32): ignored.\n')
  with pytest.raises(errors.PrerequisiteError) as refused:
    argv_secret.CheckTool(_Machine(said), 'redis-benchmark')
  assert ("(ERROR: ld.so: object '/tmp/pkb\\x1c/libargv.so' from LD_PRELOAD"
          in str(refused.value))


def test_a_machines_words_in_four_more_messages_are_its_lines_escaped():
  """The refused remote root's fault (run_scope.RemoteRootFault), redis-cli
  --pipe's last line, a failed client VM's preload error and the settings
  a static machine could not put back. Before, the first kept a \\r\\n
  line's \\r in its words; the second and third cut their line at a \\x1e
  or \\u2028 (str.splitlines) and showed the piece raw, a secret too; the
  last cut the machine's setting names likewise and showed them raw."""
  vm_util.RegisterSecret('fold2-secret-pw')
  fault = run_scope.RemoteRootFault(
      run_scope.ROOT_REFUSED, 'sudo: warning\r\n'
      '\x1epkb-root\x1emode /tmp is writable by other users (mode 0777)\r\n')
  assert fault == '/tmp is writable by other users (mode 0777)'
  said = ('All data transferred.\nerrors: 1, replies: 2\u2028(error) '
          'WRONGPASS fold2-secret-pw\x1b[2J\n')
  generator = redis_benchmark.RedisBenchmarkGenerator(_Machine('', said))
  with pytest.raises(errors.ProcessError) as refused:
    generator._Pipe(  # pylint: disable=protected-access
        base.Endpoint('10.0.0.1', 6379), 'pw',
        commands.RespStream('k', 1, 1, 8), 1)
  assert str(refused.value).endswith(
      'every key set: errors: 1, replies: 2\\u2028(error) WRONGPASS '
      f'{vm_util.MASK}\\x1b[2J')
  failed = deployment._Failure([(  # pylint: disable=protected-access
      'clients-1', errors.ProcessError(
          '\nredis-cli\x1e\x1b]0;pwned\x07 fold2-secret-pw\nmore'))])
  assert str(failed) == ('Preload failed on clients-1: '
                         f'redis-cli\\x1e\\x1b]0;pwned\\x07 {vm_util.MASK}')
  settings = provider.HostSettings(_Machine('', (
      'holder=ta1b2c3d/servers-0\nrestore_failed=thp\x1b[2J\u2028x\n')), {})
  with pytest.raises(errors.ResourceError) as refused:
    settings._Delete()  # pylint: disable=protected-access
  assert 'could not put back thp\\x1b[2J\\u2028x on servers-0' in str(
      refused.value)


def test_a_programs_words_in_its_failure_are_its_lines():
  """Maven's [ERROR] lines (ycsb.MavenErrors), what a program given as
  memtier printed for --version and redis-server's log lines when it did
  not start: str.splitlines cut a line at a \\x1e or \\u2028, so the
  message kept a piece of it."""
  assert ycsb.MavenErrors('[INFO] x\n[ERROR] no \u2028pom\n') == (
      '[ERROR] no \\u2028pom')
  with pytest.raises(errors.PrerequisiteError) as refused:
    memtier.GetVersion(_Machine('', 'sh\x1e5.2\n'), '/bin/sh')
  assert "its --version printed 'sh\\x1e5.2';" in str(refused.value)
  shard = redis_server.RedisProcess(_Machine('', (
      '1:M 01 Jan # Failed listening\u2028on port 7001\n')), 7001, 'pw',
                                    redis_shard.ShardOptions())
  with pytest.raises(errors.ProcessError) as refused:
    shard._Fail('')  # pylint: disable=protected-access
  assert str(refused.value).endswith(
      'did not start: 1:M 01 Jan # Failed listening\\u2028on port 7001')


def test_a_machines_os_name_in_a_refusal_is_whole_and_escaped():
  """/etc/os-release's PRETTY_NAME names the OS in an install's refusal
  (SystemInfo.display_name): str.splitlines cut it at a \\u2028 or \\x1e
  and the piece reached the message raw."""
  info = system_info.SystemInfo.Parse(
      'ID=evil\nPRETTY_NAME="Evil\u2028OS \x1b]0;pwned\x07"\n')
  with pytest.raises(errors.PrerequisiteError) as refused:
    package_commands.RequireFamily(info, 'redis-server')
  assert str(refused.value).startswith(
      'Cannot install redis-server on Evil\\u2028OS \\x1b]0;pwned\\x07: ')


def test_what_a_program_given_as_memtier_printed_is_masked():
  """memtier.GetVersion's refusal showed the program's first line as
  repr() shows it: escaped, but a registered secret in it (a wrapper
  echoing its arguments) unmasked. Now as vm_util.Tail shows it."""
  vm_util.RegisterSecret('fold3-secret-pw')
  with pytest.raises(errors.PrerequisiteError) as refused:
    memtier.GetVersion(_Machine('', 'auth fold3-secret-pw\x1b[2J\n'), '/x')
  assert ("its --version printed "
          f"'auth {vm_util.MASK}\\x1b[2J'; give") in str(refused.value)


def test_compare_renders_a_machine_type_holding_math_links_and_escapes(
    capsys, tmp_path):
  md, page = tmp_path / 'summary.md', tmp_path / 'r.html'
  label = f'AWS:c6gn.xlarge {MATH} {LINKS} {CONTROLS}'
  code = compare_cli.Main(['compare', _History(tmp_path, label),
                       f'--markdown={md}', f'--report={page}',
                       '--include_unconfirmed'])
  out, err = capsys.readouterr()
  assert code == 0, err
  html, summary = page.read_text(), md.read_text()
  assert 'data:image/png;base64,' in html  # Its charts were drawn.
  # The machine type shows as written, in the page and the summary.
  assert r'$\frac{1}{0}$ and $x^$' in html
  assert r'$\\frac{1}{0}$ and $x^$' in summary
  assert '@octocat' in html and '@octocat' in out  # Text, as written.
  assert not _MENTION.search(summary) and not _BARE_URL.search(summary)
  assert LINKS in _Rendered(summary)  # Shown as written.
  for text in (out, err, html, summary):
    assert not _CONTROL.search(text)


def test_recompute_shows_a_run_dirs_text_and_never_plays_it(capsys,
                                                             tmp_path):
  run_dir = tmp_path / f'run{CONTROLS}'
  code = recompute.Main([str(run_dir)])
  _, err = capsys.readouterr()
  assert code != 0
  assert err.count('\n') == 1 and not _CONTROL.search(err[:-1]), repr(err)
  assert '\\x1b]0;pwned' in err
