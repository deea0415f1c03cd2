"""--redis_server_options passes tuning directives only (an allow-list).

The audited case (issue 24 point 7): `--redis_server_options="proc-title-
template x"`, a directive outside the old deny-list, started a shard whose
process title no longer named it, so no teardown could recognise and stop
it (rc 1, a traceback, the scratch directory deleted under the live shard,
still listening). One parser (redis_config.UserLineProblem) now lets
through only the directives in TUNABLE_DIRECTIVES, from the command line,
a config file and the PKB plugin alike; the allow-list is checked against
the real redis-server, which must know every directive in it.
"""

import os
import subprocess
import time

import pytest

import e2e_support as e2e
import pkb_plugin_test as plugin
from pkb_plugin_test import upstream  # pylint: disable=unused-import  (fixture)
from perfkitbenchmarker import errors
from perfkitbenchmarker.linux_packages import redis_config
from perfkitbenchmarker.study import options

# Each changes what a shard is called, where it listens or writes, how it
# stops, or who may do what: none is a tuning knob.
_REFUSED = [
    'proc-title-template x', "'proc-title-template' \"{title}\"",
    'Proc-Title-Template x', 'set-proc-title no', 'loadmodule /tmp/x.so',
    'rename-command KEYS ""', 'appendfilename x.aof',
    'appenddirname /tmp/elsewhere', 'shutdown-on-sigterm nosave',
    'shutdown-timeout 3600', 'oom-score-adj-values 0 200 800',
    'cluster-announce-port 7999', 'replica-announce-ip 10.1.1.1',
    'enable-debug-command yes', 'server_cpulist 0', 'syslog-enabled yes',
    'tls-cert-file /tmp/c.pem', 'acl-pubsub-default allchannels',
    'no-such-directive yes',
]


@pytest.mark.parametrize('line', _REFUSED)
def test_a_directive_outside_the_allow_list_is_refused(line):
  with pytest.raises(errors.UsageError) as refused:
    options.CheckServerOption(line)
  message = str(refused.value)
  assert '\n' not in message
  directive = redis_config.Directive(line)
  assert f'"{directive}"' in message, message


@pytest.mark.parametrize('line', [
    'maxclients 20000', 'io-threads 2', 'hz 50', 'save ""',
    'appendonly yes', 'maxmemory-policy allkeys-lru', "'hz' 20",
    'client-output-buffer-limit normal 0 0 0', '# a comment', ''])
def test_tuning_directives_pass(line):
  options.CheckServerOption(line)


@pytest.mark.parametrize('line,args', [
    ('  hz\t 50 ', ['hz', '50']),
    ('po"rt" 1', ['port', '1']),  # A quote may start mid-argument.
    (r'x "a\x41\n\"\q\x4g"', ['x', 'aA\n"qx4g']),  # \xHH, \n, \", \q is q.
    (r"x 'it\'s \n'", ['x', "it's \\n"]),  # Only \' escapes in '...'.
    ('save ""', ['save', '']),
    ('save "" ""', ['save', '', '']),
    ('x "a"b', None),  # A closing quote must end the argument.
    ("x 'a'b", None),
    ('x "open', None),
    (r"x 'a\'", None),  # \' does not close.
    ('x "a\\', None),
])
def test_config_lines_split_as_redis_server_splits_them(line, args):
  """sds.c's sdssplitargs rules (redis_config's docstring)."""
  assert redis_config.SplitArgs(line) == args


@pytest.mark.e2e
def test_every_allowed_directive_is_one_redis_server_knows(tmp_path):
  """A stale or misspelt entry would pass a line redis-server then refuses
  (or, worse, one a later version reads differently): CONFIG GET of each
  on the real server must answer it."""
  server = e2e.RequireTool('redis-server')
  cli = e2e.RequireTool('redis-cli')
  port = e2e.FreePort()
  proc = subprocess.Popen(
      [server, '--port', str(port), '--bind', '127.0.0.1', '--save', '',
       '--dir', str(tmp_path)],
      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
  try:
    deadline = time.monotonic() + 20
    while 'PONG' not in subprocess.run(
        [cli, '-p', str(port), 'PING'], capture_output=True, text=True,
        timeout=10).stdout:
      assert time.monotonic() < deadline and proc.poll() is None
      time.sleep(0.05)
    unknown = []
    for directive in sorted(redis_config.TUNABLE_DIRECTIVES):
      out = subprocess.run([cli, '-p', str(port), 'CONFIG', 'GET', directive],
                           capture_output=True, text=True, timeout=10).stdout
      if directive not in out.lower().split('\n'):
        unknown.append(directive)
    assert unknown == []
  finally:
    proc.kill()
    proc.wait(timeout=10)


@pytest.mark.e2e
def test_the_run_refuses_a_process_title_template_before_any_shard(tmp_path):
  """The reported command: refused in one line (exit 2) before anything
  exists; on 90140b1 it left a shard listening that teardown could not
  stop."""
  results = tmp_path / 'results'
  port = e2e.FreePort()
  proc, run_uri = e2e.Run(
      e2e.FAST + ['--redis_server_options=proc-title-template x',
                  f'--redis_start_port={port}'], str(results))
  try:
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert '"proc-title-template"' in lines[0], lines[0]
    assert 'Traceback' not in proc.stdout + proc.stderr
    assert not os.path.exists(results / run_uri)
  finally:
    leftover = subprocess.run(['ss', '-Htln', f'sport = :{port}'],
                              capture_output=True, text=True).stdout
    assert leftover.strip() == '', leftover


@pytest.mark.e2e
def test_a_matrix_axis_and_a_config_file_use_the_same_check(tmp_path):
  config = tmp_path / 'c.yaml'
  config.write_text('flags: {redis_server_options: "set-proc-title no"}\n')
  proc, run_uri = e2e.Run([f'--benchmark_config_file={config}', '--dry_run'],
                          str(tmp_path / 'results'))
  assert proc.returncode == 2, proc.stderr
  assert '"set-proc-title"' in proc.stderr
  assert len(proc.stderr.splitlines()) == 1, proc.stderr
  del run_uri


@pytest.mark.e2e
def test_the_pkb_plugin_refuses_it_in_its_check(upstream, tmp_path):  # pylint: disable=redefined-outer-name
  """The same through upstream PKB's plugin: its CheckPrerequisites runs the
  harness's dry run, which refuses the line before anything is
  provisioned."""
  out = plugin._Drive(upstream, tmp_path, {  # pylint: disable=protected-access
      'flags': ['--redis_price_performance_flags=--redis_server_options='
                '"proc-title-template x"'],
      'planned': plugin._Groups()})  # pylint: disable=protected-access
  assert 'checked' not in out and out['harness_argv'] == [], out
  assert '"proc-title-template"' in out['error'], out['error']


def test_an_engine_that_reads_no_redis_conf_refuses_them():
  """Dragonfly takes a flag file: its shards ran without the lines, and
  nothing said so."""
  options.ServerOptions(engine='valkey', extra_config=('hz 50',)).Check()
  options.ServerOptions(engine='dragonfly', extra_config=()).Check()
  with pytest.raises(errors.UsageError) as refused:
    options.ServerOptions(engine='dragonfly', extra_config=('hz 50',)).Check()
  message = str(refused.value)
  assert '\n' not in message and 'dragonfly' in message, message


def test_the_port_check_counts_the_replicas_each_server_vm_holds():
  """A VM holds its primaries and the replicas of a VM's primaries, on the
  ports after them: --redis_start_port=65534 with 2 primaries and 1 replica
  each passed the check, provisioned, started the primaries, then stopped
  with 'No free port for redis-server on servers-0'."""
  options.ServerOptions(start_port=65532, shards_per_vm=2,
                        replicas_per_primary=1).Check()
  with pytest.raises(errors.UsageError) as refused:
    options.ServerOptions(start_port=65534, shards_per_vm=2,
                          replicas_per_primary=1).Check()
  message = str(refused.value)
  assert '\n' not in message and 'needs ports up to 65537' in message, message
  with pytest.raises(errors.UsageError):
    options.ServerOptions(start_port=55531, shards_per_vm=2,
                          replicas_per_primary=2, cluster_mode=True).Check()
