"""A module in upstream PKB's style that installs a package and pushes data.

Prepare installs curl with vm.Install('curl') (linux_packages/curl.py, in
upstream's AptInstall/YumInstall shape), pushes a script with
vm.PushDataFile (found as data.ResourcePath finds it: --data_search_paths
names tests/benchmarks/data) and renders a Jinja2 template onto the VM
with vm.RenderTemplate. Run runs the script with vm.RobustRemoteCommand,
parses its output with regex_util, and checks the pushed script's SHA-256
against the local file's (vm_util.IssueCommand). Cleanup removes both files
(vm.RemoveFile). tests/upstream_modules_test.py runs it on Local and
Static.
"""

from perfkitbenchmarker import configs
from perfkitbenchmarker import data
from perfkitbenchmarker import errors
from perfkitbenchmarker import regex_util
from perfkitbenchmarker import sample
from perfkitbenchmarker import vm_util

BENCHMARK_NAME = 'upstream_install_data'
BENCHMARK_CONFIG = """
upstream_install_data:
  description: Installs curl, pushes a script and a rendered file, runs it.
  vm_groups:
    default:
      vm_spec: *default_single_core
"""

_SCRIPT = 'upstream_file_stats.sh'
_TEMPLATE = 'upstream_words.txt.j2'
_LINES = 50


def _Paths(vm):
  scratch = vm.GetScratchDir()
  return f'{scratch}/{_SCRIPT}', f'{scratch}/words.txt'


def GetConfig(user_config):
  return configs.LoadConfig(BENCHMARK_CONFIG, user_config, BENCHMARK_NAME)


def CheckPrerequisites(benchmark_config):
  del benchmark_config
  if not data.ResourceExists(_SCRIPT):
    raise errors.Setup.InvalidSetupError(
        f'{_SCRIPT} is not on the data search path; give '
        '--data_search_paths=tests/benchmarks/data.')


def Prepare(benchmark_spec):
  vm = benchmark_spec.vms[0]
  vm.Install('curl')
  script, words = _Paths(vm)
  vm.PushDataFile(_SCRIPT, script)
  vm.RenderTemplate(data.ResourcePath(_TEMPLATE), words,
                    {'word': 'pkb', 'lines': _LINES})


def Run(benchmark_spec):
  vm = benchmark_spec.vms[0]
  script, words = _Paths(vm)
  stdout, _ = vm.RobustRemoteCommand(f'bash {script} {words}')
  metrics = regex_util.ExtractAllFloatMetrics(stdout)
  version, _ = vm.RemoteCommand('curl --version')
  remote_sum, _ = vm.RemoteCommand(f'sha256sum {script}')
  local_sum, _, _ = vm_util.IssueCommand(
      ['sha256sum', data.ResourcePath(_SCRIPT)])
  metadata = {
      'curl_version': regex_util.ExtractGroup(r'^curl (\S+)', version),
      'script_intact': remote_sum.split()[0] == local_sum.split()[0],
      'words_sha256': regex_util.ExtractGroup(r'sha256 (\w+)', stdout),
  }
  return [
      sample.Sample('rendered_lines', metrics['lines'], 'lines', metadata),
      sample.Sample('rendered_bytes', metrics['bytes'], 'bytes', metadata),
      sample.Sample('curl_read_seconds', metrics['curl_seconds'], 'seconds',
                    metadata),
  ]


def Cleanup(benchmark_spec):
  vm = benchmark_spec.vms[0]
  for path in _Paths(vm):
    vm.RemoveFile(path)
