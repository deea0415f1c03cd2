"""Upstream PKB's module API, name by name (docs/upstream_api.md).

In-process checks of what a module written for upstream calls: configs'
LoadConfig and its anchors, sample, errors, background_tasks, vm_util's
Retry, regex_util, flag_util, data, and the VM methods over a VM whose
commands are scripted (tests/upstream_modules_test.py runs real modules on
Local and over SSH).
"""

import base64
import os
import re
import sys
import types

from absl import flags
import pytest

from perfkitbenchmarker import background_tasks
from perfkitbenchmarker import benchmark_contract
from perfkitbenchmarker import configs
from perfkitbenchmarker import data
from perfkitbenchmarker import errors
from perfkitbenchmarker import flag_util
from perfkitbenchmarker import linux_benchmarks
from perfkitbenchmarker import pkb  # pylint: disable=unused-import  (flags)
from perfkitbenchmarker import regex_util
from perfkitbenchmarker import sample
from perfkitbenchmarker import system_info
from perfkitbenchmarker import upstream_vm
from perfkitbenchmarker import virtual_machine
from perfkitbenchmarker import vm_util

FLAGS = flags.FLAGS
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLE_CONFIG = """
example_vm:
  description: Runs a sample benchmark.
  vm_groups:
    default:
      vm_spec: *default_dual_core
      vm_count: null
"""


@pytest.fixture(autouse=True)
def parsed_flags():
  if not FLAGS.is_parsed():
    FLAGS(['pkb'])
  yield
  FLAGS.num_vms = 1


# configs ---------------------------------------------------------------------


def test_load_config_resolves_upstreams_anchors_on_every_cloud():
  config = configs.LoadConfig(EXAMPLE_CONFIG, {}, 'example_vm')
  spec = config['vm_groups']['default']['vm_spec']
  assert spec['Local'] == {'machine_type': 'local', 'num_cpus': 2}
  assert spec['GCP']['machine_type'] == 'n4-standard-2'  # Upstream's.
  assert spec['AWS']['machine_type'] == 'm7i.large'
  single = configs.LoadConfig(
      EXAMPLE_CONFIG.replace('dual', 'single'), {}, 'example_vm')
  assert single['vm_groups']['default']['vm_spec']['Local']['num_cpus'] == 1


def test_a_null_vm_count_is_num_vms():
  assert configs.LoadConfig(EXAMPLE_CONFIG, {}, 'example_vm')[
      'vm_groups']['default']['vm_count'] == 1
  FLAGS.num_vms = 3
  assert configs.LoadConfig(EXAMPLE_CONFIG, {}, 'example_vm')[
      'vm_groups']['default']['vm_count'] == 3
  # A user's config file too, as upstream's VM group spec reads it: there
  # it was refused ('vm_count None: input should be a valid integer').
  text = 'redis_memtier:\n  vm_groups:\n    clients:\n      vm_count: null\n'
  user = configs.LoadYaml(text, 'x')
  configs.CheckUserConfig(user, ['redis_memtier'])
  assert user['redis_memtier']['vm_groups']['clients']['vm_count'] == 3
  default = configs.LoadYaml(configs.RedisVmGroups(), 'x')
  assert configs.MergeConfigs('redis_memtier', default, text, [])[
      'vm_groups']['clients']['vm_count'] == 3


def test_load_config_merges_the_users_file_and_overrides():
  user = {'file': 'example_vm:\n  vm_groups:\n    default:\n      vm_spec:\n'
                  '        Local:\n          num_cpus: 1\n',
          'overrides': ['example_vm.vm_groups.default.vm_count=2']}
  config = configs.LoadConfig(EXAMPLE_CONFIG, user, 'example_vm')
  group = config['vm_groups']['default']
  assert group['vm_count'] == 2
  assert group['vm_spec']['Local'] == {'machine_type': 'local', 'num_cpus': 1}
  # The anchor's other users are not changed through the alias.
  assert group['vm_spec']['GCP']['machine_type'] == 'n4-standard-2'


def test_load_config_names_a_missing_section_and_an_unknown_anchor():
  with pytest.raises(errors.ConfigError, match='no section named "other"'):
    configs.LoadConfig(EXAMPLE_CONFIG, {}, 'other')
  # The module's own line (upstream's anchors are read before it: the
  # joined text's line 28 was named).
  with pytest.raises(errors.ConfigError, match='invalid YAML at line 6: '
                     "found undefined alias 'default_triple_core'"):
    configs.LoadConfig(EXAMPLE_CONFIG.replace('dual', 'triple'), {},
                       'example_vm')


# sample, errors --------------------------------------------------------------


def test_sample_takes_upstreams_none_defaults():
  made = sample.Sample('m', None, 'ms', None, None)
  assert made.value == 0.0 and dict(made.metadata) == {}
  assert made.timestamp > 0
  assert made.asdict()['metric'] == 'm'
  kept = sample.Sample('m', 2, 'ms', {'a': 1}, timestamp=5.0)
  assert kept.asdict() == {'metric': 'm', 'value': 2.0, 'unit': 'ms',
                           'metadata': {'a': 1}, 'timestamp': 5.0}


@pytest.mark.parametrize('error,ours', [
    (errors.VirtualMachine.RemoteCommandError, errors.ProcessError),
    (errors.Benchmarks.RunError, errors.Error),
    (errors.Benchmarks.PrepareException, errors.Error),
    (errors.Setup.InvalidSetupError, errors.UsageError),
    (errors.Config.InvalidValue, errors.ConfigError),
    (errors.VmUtil.IssueCommandError, errors.ProcessError),
    (errors.Resource.CreationError, errors.ResourceError),
])
def test_upstream_error_types_are_ours_shown_as_one_line(error, ours):
  assert issubclass(error, ours)


# background_tasks, vm_util ---------------------------------------------------


def test_run_threaded_takes_args_and_kwargs_pairs_in_order():

  def Add(a, b, scale=1):
    return (a + b) * scale

  params = [((1, 2), {}), ((3, 4), {'scale': 10})]
  assert background_tasks.RunThreaded(Add, params) == [3, 70]
  assert vm_util.RunThreaded(lambda x: x * 2, [1, 2, 3],
                             max_concurrent_threads=2) == [2, 4, 6]


def test_run_threaded_reads_its_params_as_upstreams_does():
  # Ours ran a tuple of items, (1, 2) items (each as one argument) and a
  # later (args, kwargs) pair after a plain first item (unpacked), all of
  # which upstream's refuses or passes whole.
  with pytest.raises(ValueError, match='must be a list'):
    vm_util.RunThreaded(lambda x: x, (1, 2))
  with pytest.raises(ValueError, match=r'must be \(tuple, dict\)'):
    vm_util.RunThreaded(lambda x: x, [(1, 2), (3, 4)])
  assert vm_util.RunThreaded(lambda *a: a, [1, ((2, 3), {})]) == [
      (1,), (((2, 3), {}),)]
  assert vm_util.RunThreaded(lambda *a, **k: (a, k),
                             [((1,), {'b': 2}), ([3], {})]) == [
                                 ((1,), {'b': 2}), ((3,), {})]


def test_several_failures_are_upstreams_thread_exception():

  def Fail(item):
    raise errors.ProcessError(f'{item} failed')

  with pytest.raises(errors.VmUtil.ThreadException, match='2 failed'):
    background_tasks.RunThreaded(Fail, ['a', 'b'])


def test_retry_retries_then_names_why_it_gave_up():
  calls = []

  @vm_util.Retry(poll_interval=0.001, max_retries=2, fuzz=0,
                 retryable_exceptions=(ValueError,))
  def Flaky():
    calls.append(1)
    raise ValueError('not yet')

  with pytest.raises(vm_util.RetriesExceededRetryError,
                     match='Flaky still failed after 3 tries') as raised:
    Flaky()
  assert len(calls) == 3
  assert isinstance(raised.value.__cause__, ValueError)

  @vm_util.Retry(poll_interval=0.001, max_retries=5, fuzz=0)
  def SecondTime():
    calls.append(2)
    if calls.count(2) < 2:
      raise KeyError('once')
    return 'done'

  assert SecondTime() == 'done'


def test_retry_stops_at_its_timeout_and_skips_other_errors():

  @vm_util.Retry(poll_interval=0.05, timeout=0.01, fuzz=0)
  def Never():
    raise ValueError('no')

  with pytest.raises(vm_util.TimeoutExceededRetryError):
    Never()

  @vm_util.Retry(poll_interval=0.001, retryable_exceptions=(KeyError,))
  def Other():
    raise ValueError('not retried')

  with pytest.raises(ValueError, match='not retried'):
    Other()


def test_issue_command_refuses_a_string():
  with pytest.raises(ValueError, match='list of arguments'):
    vm_util.IssueCommand('ls -l')


# regex_util, flag_util -------------------------------------------------------

OUTPUT = 'Throughput: 1234.5 ops/s\nLatency p99: 0.8 ms\nlines=3 bytes=17\n'


def test_regex_helpers_extract_or_refuse():
  assert regex_util.ExtractFloat(r'Throughput: ([\d.]+)', OUTPUT) == 1234.5
  assert regex_util.ExtractGroup(r'p(\d+):', OUTPUT) == '99'
  assert regex_util.ExtractInt(r'lines=(\d+)', OUTPUT) == 3
  assert regex_util.ExtractAllMatches(r'(\w+)=(\d+)', OUTPUT) == [
      ('lines', '3'), ('bytes', '17')]
  assert regex_util.ExtractAllFloatMetrics(OUTPUT) == {'lines': 3.0,
                                                       'bytes': 17.0}
  # Upstream's refuses any '(' in the metric pattern; ours ran these.
  for metric in (r'(?:lines|bytes)', r'\(\w+'):
    with pytest.raises(NotImplementedError):
      regex_util.ExtractAllFloatMetrics(OUTPUT, metric)
  with pytest.raises(regex_util.NoMatchError):
    regex_util.ExtractFloat(r'Missing: (\d+)', OUTPUT)
  with pytest.raises(regex_util.TooManyMatchesError):
    regex_util.ExtractExactlyOneMatch(r'\w+=\d+', OUTPUT)
  assert regex_util.Substitute(r'ms', 'us', 'p99 0.8 ms') == 'p99 0.8 us'


def test_flag_helpers():
  values = flags.FlagValues()
  flag_util.DEFINE_integerlist('threads', [1], 'threads', flag_values=values)
  holder = flag_util.DEFINE_yaml('extra', None, 'extra', flag_values=values)
  values(['x', '--threads=1-7-3', '--extra={a: [1, 2]}'])
  assert values.threads == [1, 4, 7]
  # Upstream's arguments, as its fio flags give them: an IntegerList
  # default, help=, on_nonincreasing= and a flag's module_name.
  flag_util.DEFINE_integerlist(
      'numjobs', flag_util.IntegerList([1, (4, 8, 2), (3, 1, -1)]),
      help='jobs', on_nonincreasing=flag_util.IntegerListParser.WARN,
      flag_values=values, module_name='fio_flags')
  flag_util.DEFINE_integerlist(
      'depths', [1], 'depths',
      on_nonincreasing=flag_util.IntegerListParser.EXCEPTION,
      flag_values=values)
  assert values['numjobs'].default == [1, 4, 6, 8, 3, 2, 1]
  values(['x', '--numjobs=4,2', '--depths=1,2'])
  assert values.numjobs == [4, 2] and values.depths == [1, 2]
  with pytest.raises(flags.IllegalFlagValueError, match='not increasing'):
    values(['x', '--depths=2,1'])
  # Upstream's syntax: colon groups take negative numbers, and a range may
  # run downwards (refused here before, as the harness's own lists are).
  values(['x', '--numjobs=-3:4:2,-1', '--threads=8-1-3,5:3'])
  assert values.numjobs == [-3, -1, 1, 3, -1]
  assert values.threads == [8, 5, 2, 5, 4, 3]
  with pytest.raises(flags.IllegalFlagValueError, match='not increasing'):
    values(['x', '--depths=4-1'])
  assert holder.value == {'a': [1, 2]}
  assert flag_util.StringToBytes('2KiB') == 2048
  assert flag_util.StringToBytes('1.5KB') == 1500
  with pytest.raises(ValueError):
    flag_util.StringToBytes('lots')
  # Upstream's b is no byte (pint's barn): '10Mb' was 10,000,000 bytes.
  for size in ('10Mb', '10kb', '1b'):
    with pytest.raises(ValueError, match=f'parse size {size}'):
      flag_util.StringToBytes(size)
  assert flag_util.ParseKeyValuePairs(['a:1,b:x:y', 'bad']) == {
      'a': '1', 'b': 'x:y'}


# data ------------------------------------------------------------------------


def test_data_search_paths_come_first_and_are_named_when_missing(tmp_path):
  first, second = tmp_path / 'first', tmp_path / 'second'
  first.mkdir()
  second.mkdir()
  (second / 'x.txt').write_text('second')
  (first / 'x.txt').write_text('first')
  (second / 'y.txt').write_text('y')
  try:
    data.SetSearchPaths([str(first), str(second)], given=True)
    with open(data.ResourcePath('x.txt')) as f:
      assert f.read() == 'first'
    assert data.ResourcePath('y.txt') == str(second / 'y.txt')
    assert data.ResourceExists('y.txt')
    assert not data.ResourceExists('y.txt', search_user_paths=False)
    with pytest.raises(data.ResourceNotFound, match=f'z.txt is not in {first}'):
      data.ResourcePath('z.txt')
  finally:
    data.SetSearchPaths(['.'], given=False)


# The VM methods, over scripted commands --------------------------------------


class ScriptedVm(virtual_machine.BaseVirtualMachine):
  """Commands answer from `answers` (first key found in the command) and
  are kept in `commands`; nothing runs."""

  CLOUD = 'Scripted'

  def __init__(self, answers=None, **kwargs):
    super().__init__(virtual_machine.VmSpec('Scripted', 'scripted',
                                            num_cpus=4), 'vm-0', 'default',
                     **kwargs)
    self.scratch_dir = '/scratch/vm-0'
    self.answers = answers or {}
    self.commands = []

  def _Create(self):
    pass

  def _Delete(self):
    pass

  def RemoteCommandWithReturnCode(self, command, timeout=None, env=None,
                                  stdin=None, **upstream_options):
    command = upstream_vm.UpstreamCommand(command, upstream_options)
    self.commands.append((command, stdin))
    for key, answer in self.answers.items():
      if key in command:
        return answer
    return '', '', 0


def test_remote_command_is_upstreams_shape():
  vm = ScriptedVm({'false': ('out', 'bad', 1)})
  assert vm.RemoteCommand('echo hi') == ('', '')
  with pytest.raises(errors.VirtualMachine.RemoteCommandError,
                     match='exited with status 1: bad'):
    vm.RemoteCommand('false')
  assert vm.RemoteCommand('false', ignore_failure=True) == ('out', 'bad')
  assert vm.RemoteCommandWithReturnCode('false', ignore_failure=True,
                                        should_pre_log=False) == (
                                            'out', 'bad', 1)
  vm.RemoteCommand('env', login_shell=True)
  assert vm.commands[-1][0] == "bash -l -c env"
  with pytest.raises(errors.VirtualMachine.RemoteCommandError,
                     match='does not take ip_address'):
    vm.RemoteCommand('true', ip_address='10.0.0.2')
  # Past its timeout: upstream's modules catch IssueCommandTimeoutError
  # (ai_model_throughput's load driver), this harness RemoteCommandError.
  vm.answers['sleep'] = ('', '', -9)
  with pytest.raises(errors.VmUtil.IssueCommandTimeoutError,
                     match='sleep timed out') as raised:
    vm.RemoteCommand('sleep 9', timeout=1)
  assert isinstance(raised.value, errors.VirtualMachine.RemoteCommandError)
  # Even with ignore_failure, as upstream's (raise_on_timeout).
  with pytest.raises(errors.VmUtil.IssueCommandTimeoutError,
                     match='sleep timed out'):
    vm.RemoteCommand('sleep 9', timeout=1, ignore_failure=True)
  # Without a timeout, -9 is a kill like any other failure.
  assert vm.RemoteCommand('sleep 9', ignore_failure=True) == ('', '')


def test_a_sudo_that_would_prompt_is_named_with_what_to_do():
  for err in ('sudo: a password is required\n',
              'sudo: a terminal is required to read the password\n',
              'bash: line 1: sudo: command not found\n'):
    vm = ScriptedVm({'sudo': ('', err, 1)})
    with pytest.raises(errors.VirtualMachine.RemoteCommandError,
                       match='give the user passwordless sudo, or drop sudo'):
      vm.RemoteCommand('sudo apt-get update')
  vm = ScriptedVm({'cat': ('', 'cat: x: No such file or directory\n', 1)})
  with pytest.raises(errors.VirtualMachine.RemoteCommandError) as raised:
    vm.RemoteCommand('cat x')
  assert 'sudo' not in str(raised.value)


def test_robust_remote_command_runs_detached_where_the_vm_can():
  vm = ScriptedVm()
  detached = []
  vm.RunDetached = lambda command, timeout: detached.append(
      (command, timeout)) or ('done', '', 0)
  assert vm.RobustRemoteCommand('long job', timeout=60) == ('done', '')
  assert detached == [('long job', 60)] and not vm.commands
  vm.RunDetached = lambda command, timeout: ('', 'lost', 2)
  with pytest.raises(errors.VirtualMachine.RemoteCommandError):
    vm.RobustRemoteCommand('long job')


def _FakePackage(name, calls):
  module = types.ModuleType(name)
  module.AptInstall = lambda vm: calls.append('apt')
  module.YumInstall = lambda vm: calls.append('yum')
  sys.modules[f'perfkitbenchmarker.linux_packages.{name}'] = module


@pytest.mark.parametrize('os_release,expected', [
    ('ID=debian\n__pm=apt-get\n', 'apt'),
    ('ID="rocky"\nID_LIKE="rhel centos fedora"\n__pm=dnf\n', 'yum'),
])
def test_install_runs_the_hook_of_the_vms_package_manager(os_release,
                                                           expected):
  calls = []
  _FakePackage('fake_upstream_package', calls)
  vm = ScriptedVm({system_info.PROBE_COMMAND: (os_release, '', 0)})
  vm.Install('fake_upstream_package')
  vm.Install('fake_upstream_package')  # Once per VM, as upstream.
  assert calls == [expected]


def test_install_of_an_unknown_package_is_one_line():
  with pytest.raises(errors.VirtualMachine.RemoteCommandError,
                     match=r"no perfkitbenchmarker/linux_packages/nope\.py"):
    ScriptedVm().Install('nope')


def test_install_packages_checks_first_and_names_what_is_missing():
  probe = ('ID=debian\n__pm=apt-get\n', '', 0)
  vm = ScriptedVm({system_info.PROBE_COMMAND: probe,
                   'dpkg-query': ('', '', 0)})
  vm.InstallPackages('curl wget')  # Both there: one check, no install.
  assert len(vm.commands) == 2
  vm = ScriptedVm({system_info.PROBE_COMMAND: probe,
                   'dpkg-query': ('wget\n', '', 0)})
  with pytest.raises(errors.VirtualMachine.RemoteCommandError,
                     match=r'wget not installed.*apt-get -y install wget\)'):
    vm.InstallPackages('curl wget')


def test_files_move_through_the_command_channel(tmp_path):
  source = tmp_path / 'script.sh'
  source.write_bytes(b'\x00binary\xff')
  vm = ScriptedVm()
  vm.PushFile(str(source))
  command, stdin = vm.commands[-1]
  assert "t=/scratch/vm-0/script.sh;" in command
  assert stdin == 'AGJpbmFyef8='  # base64 of the bytes, unchanged.
  vm.PushFile(str(source), '~/bin/run.sh')
  assert vm.commands[-1][0].startswith('t="$HOME"/bin/run.sh;')
  vm.answers.update({'if [ -d "$s" ]': ('F 8\n', '', 0),
                     'tail -c +1 ': ('AGJpbmFyef8=\n', '', 0)})
  vm.PullFile(str(tmp_path), 'out/script.sh')
  assert (tmp_path / 'script.sh').read_bytes() == b'\x00binary\xff'
  assert "s=/scratch/vm-0/out/script.sh;" in vm.commands[-2][0]
  vm.RemoveFile('/scratch/vm-0/x*')
  assert vm.commands[-1][0] == 'rm -rf /scratch/vm-0/x*'


class FileVm(ScriptedVm):
  """Serves PullFile's commands from one remote file's bytes, and keeps
  the bytes each command's output carried."""

  def __init__(self, content, shrink_to=None):
    super().__init__()
    self.content, self.carried = content, []
    self.shrink_to = shrink_to  # After the first chunk, if given.

  def RemoteCommandWithReturnCode(self, command, timeout=None, env=None,
                                  stdin=None, **upstream_options):
    super().RemoteCommandWithReturnCode(command, timeout, env, stdin)
    if command.startswith('s='):
      if 'base64 < "$s"' in command:  # All of it in one output.
        payload = self.content
        self.carried.append(len(payload))
        return 'F\n' + base64.b64encode(payload).decode(), '', 0
      return f'F {len(self.content)}\n', '', 0
    start, size = map(int, re.search(r'tail -c \+(\d+) .* head -c (\d+)',
                                     command).groups())
    payload = self.content[start - 1:start - 1 + size]
    if self.shrink_to is not None:
      self.content = self.content[:self.shrink_to]
    self.carried.append(len(payload))
    return base64.b64encode(payload).decode(), '', 0


def test_a_pulled_file_moves_in_chunks_not_whole(tmp_path, monkeypatch):
  """A whole file in one command's output cost pkb five times its size in
  memory (a 200 MiB file: 1 GiB): a large one ended the run in the OOM
  killer's hands, leaving its processes and VMs behind."""
  monkeypatch.setattr(upstream_vm, 'FILE_CHUNK', 1000)
  content = bytes(range(256)) * 20  # 5,120 bytes: five chunks and a tail.
  vm = FileVm(content)
  vm.PullFile(str(tmp_path / 'out.bin'), 'results.bin')
  assert (tmp_path / 'out.bin').read_bytes() == content
  assert max(vm.carried) <= 1000 and sum(vm.carried) == len(content)
  vm = FileVm(content[:3000])  # A multiple of the chunk: no empty last.
  vm.PullFile(str(tmp_path / 'even.bin'), 'results.bin')
  assert (tmp_path / 'even.bin').read_bytes() == content[:3000]
  assert vm.carried == [1000] * 3
  # Cut to 1,500 bytes after the first chunk: the pull ended at 1,500, short,
  # without a word (the pipeline's status is base64's).
  vm = FileVm(content, shrink_to=1500)
  with pytest.raises(errors.VirtualMachine.RemoteCommandError, match=(
      r'the file changed while it was pulled \(1,500 of its 5,120 bytes')):
    vm.PullFile(str(tmp_path / 'cut.bin'), 'results.bin')


def test_a_pushed_file_moves_in_chunks_not_whole(tmp_path, monkeypatch):
  """The whole file read and base64-encoded into one command's input cost
  pkb four times its size in memory (a large data file the VM needs)."""
  monkeypatch.setattr(upstream_vm, 'FILE_CHUNK', 1000)
  content = bytes(range(256)) * 20  # 5,120 bytes: five chunks and a tail.
  source = tmp_path / 'data.bin'
  source.write_bytes(content)
  vm = ScriptedVm()
  vm.PushFile(str(source), 'in/data.bin')
  sent = [base64.b64decode(stdin) for _, stdin in vm.commands]
  assert max(map(len, sent)) <= 1000 and b''.join(sent) == content
  writes = [command.rsplit('base64 -d ', 1)[1] for command, _ in vm.commands]
  assert writes == ['> "$t"'] + ['>> "$t"'] * 5, writes
  assert all(c.startswith('t=/scratch/vm-0/in/data.bin;')
             for c, _ in vm.commands)
  source.write_bytes(b'')  # An empty file is made too.
  vm = ScriptedVm()
  vm.PushFile(str(source))
  assert vm.commands == [(vm.commands[0][0], '')]
  assert vm.commands[0][0].endswith('base64 -d > "$t"')


def test_render_template_needs_every_variable(tmp_path):
  template = tmp_path / 'conf.j2'
  template.write_text('port {{ port }} on {{ vm.name }}\n')
  vm = ScriptedVm()
  vm.RenderTemplate(str(template), 'conf', {'port': 7})
  command, stdin = vm.commands[-1]
  assert command == 'base64 -d > /scratch/vm-0/conf'
  assert stdin == 'cG9ydCA3IG9uIHZtLTA='  # 'port 7 on vm-0'
  with pytest.raises(Exception, match="'port' is undefined"):
    vm.RenderTemplate(str(template), 'conf', {})


def test_a_data_file_another_user_could_change_is_not_used(tmp_path):
  """A template runs as it renders (Jinja2 reaches Python's os): one in a
  shared search path (the default . run from /tmp) ran another user's code
  as the user running pkb. Refused in one line, as it would be pushed."""
  shared = tmp_path / 'shared'
  shared.mkdir()
  ran = tmp_path / 'ran'
  (shared / 'conf.j2').write_text(
      f"{{{{ cycler.__init__.__globals__.os.mkdir('{ran}') }}}}\n")
  shared.chmod(0o777)
  vm = ScriptedVm()
  try:
    data.SetSearchPaths([str(shared)], given=True)
    for call in (lambda: vm.RenderTemplate('conf.j2', 'conf', {}),
                 lambda: vm.PushDataFile('conf.j2')):
      with pytest.raises(errors.VirtualMachine.RemoteCommandError,
                         match=r'conf.j2 is not used: .*shared is writable '
                         'by other users'):
        call()
  finally:
    data.SetSearchPaths(['.'], given=False)
  assert not ran.exists() and vm.commands == []


def test_what_the_vm_is():
  vm = ScriptedVm({'lscpu': ('# CPU,Core,Socket\n0,0,0\n1,0,0\n2,1,0\n'
                             '3,1,0\n', '', 0)})
  assert vm.GetScratchDir() == '/scratch/vm-0'
  with pytest.raises(errors.Error, match='disk_num=1'):
    vm.GetScratchDir(1)
  assert vm.NumCpusForBenchmark() == 4
  assert vm.NumCpusForBenchmark(report_only_physical_cpus=True) == 2
  vm.cpu_set = [0, 1]  # Two SMT siblings of one core.
  assert vm.NumCpusForBenchmark(report_only_physical_cpus=True) == 1
  assert vm.GetInternalIPs() == []
  vm.internal_ip = '10.0.0.5'
  assert vm.GetInternalIPs() == ['10.0.0.5']


def test_allow_port_is_a_no_op_without_a_run_firewall_else_checked():
  vm = ScriptedVm()
  vm.AllowPort(8080)  # Local and Static: nothing between the run's VMs.
  vm.peer_tcp_ports = ((8000, 8100),)
  vm.AllowPort(8080, 8090)
  with pytest.raises(errors.VirtualMachine.VirtualMachineError,
                     match=r'add \(9000, 9000\) to the module\'s '
                     'PEER_TCP_PORTS'):
    vm.AllowPort(9000)


# The contract and the loader -------------------------------------------------


def test_the_upstream_style_modules_keep_the_contract(monkeypatch):
  monkeypatch.setenv(linux_benchmarks.DIRS_ENV,
                     os.path.join(REPO, 'tests', 'benchmarks'))
  found = linux_benchmarks._Discover()  # pylint: disable=protected-access
  for name in ('upstream_example_vm', 'upstream_install_data',
               'upstream_client_server', 'pkb_minimal'):
    benchmark_contract.Check(found[name], name)
    config = found[name].GetConfig({})
    assert config['vm_groups'], name


# docs/upstream_api.md ---------------------------------------------------------

# The names a module written for upstream calls (issue 36's lists).
DOCUMENTED = (
    'configs.LoadConfig', 'default_single_core', 'default_dual_core',
    'sample.Sample', 'errors.Benchmarks.RunError',
    'errors.VirtualMachine.RemoteCommandError',
    'background_tasks.RunThreaded', 'vm_util.IssueCommand', 'vm_util.Retry',
    'vm_util.RunThreaded', 'data.ResourcePath', 'regex_util.ExtractGroup',
    'ExtractFloat', 'ExtractAllMatches', 'flag_util.DEFINE_integerlist',
    'BenchmarkSpec.vms', 'BenchmarkSpec.vm_groups', 'CheckPrerequisites',
    'vm.RemoteCommand(', 'vm.RemoteCommandWithReturnCode(',
    'vm.RobustRemoteCommand(', 'vm.Install(', 'vm.InstallPackages(',
    'vm.PushFile(', 'vm.PushDataFile(', 'vm.PullFile(', 'vm.RemoveFile(',
    'vm.RenderTemplate(', 'vm.GetScratchDir(', 'vm.NumCpusForBenchmark(',
    'vm.GetInternalIPs(', 'vm.AllowPort(', '--num_vms', '--data_search_paths')


def test_upstream_api_md_gives_every_name_a_status():
  with open(os.path.join(REPO, 'docs', 'upstream_api.md')) as f:
    rows = [line for line in f if line.startswith('| `') or
            line.startswith('| vm')]
  for name in DOCUMENTED:
    row = next((r for r in rows if name in r), None)
    assert row is not None, f'docs/upstream_api.md has no row for {name}'
    status = row.rsplit('|', 2)[-2].strip()
    assert status.startswith(('same', 'differs', 'not supported')), row


@pytest.mark.parametrize('name', [
    'RemoteCommand', 'RemoteCommandWithReturnCode', 'RobustRemoteCommand',
    'Install', 'InstallPackages', 'PushFile', 'PushDataFile', 'PullFile',
    'RemoveFile', 'RenderTemplate', 'GetScratchDir', 'NumCpusForBenchmark',
    'GetInternalIPs', 'AllowPort'])
def test_every_provider_has_the_vm_methods(name):
  from perfkitbenchmarker.providers.aws import vm as aws_vm  # pylint: disable=g-import-not-at-top
  from perfkitbenchmarker.providers.gcp import vm as gcp_vm  # pylint: disable=g-import-not-at-top
  from perfkitbenchmarker.providers.local import provider as local  # pylint: disable=g-import-not-at-top
  from perfkitbenchmarker.providers.static import provider as static  # pylint: disable=g-import-not-at-top
  for cls in (local.LocalVirtualMachine, static.StaticVirtualMachine,
              gcp_vm.GceVirtualMachine, aws_vm.AwsVirtualMachine):
    assert callable(getattr(cls, name)), (cls, name)
