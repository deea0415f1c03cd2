"""Teardown from a corrupted or hostile run record, process exit, run locks.

Every "victim" (a file, a directory, a process) is made by the test itself,
outside the run's roots; `./pkb.py --run_stage=teardown` must leave each one
alone and say so in one line with a non-zero exit.
"""

import json
import os
import signal
import subprocess
import sys
import time

import psutil
import pytest

import e2e_support as e2e
import pkb_forkserver
from perfkitbenchmarker import process_stat
from perfkitbenchmarker import virtual_machine
from perfkitbenchmarker import vm_util
from perfkitbenchmarker.providers.local import provider as local

# Every test here starts a process (tests/tier_guard.py).
pytestmark = pytest.mark.e2e


def _Env(scratch_root):
  return dict(os.environ, PKB_LOCAL_SCRATCH=str(scratch_root))


def _WriteRecord(results_dir, run_uri, resources=None, data=None):
  run_dir = os.path.join(results_dir, run_uri)
  os.makedirs(run_dir, exist_ok=True)
  if data is None:
    data = {'format_version': 1, 'run_uri': run_uri, 'created': 0,
            'info': {}, 'stages_done': [], 'status': 'running',
            'resources': [{'kind': k, 'name': n, 'status': 'created',
                           'data': d, 'recorded': 0}
                          for k, n, d in resources]}
  path = os.path.join(run_dir, 'run_record.json')
  with open(path, 'w') as f:
    f.write(data if isinstance(data, str) else json.dumps(data))
  return path


def _Teardown(results_dir, run_uri, scratch_root):
  proc = pkb_forkserver.Run(
      e2e.Command(['--run_stage=teardown'], run_uri, str(results_dir)),
      timeout=120, cwd=e2e.REPO,
      env=_Env(scratch_root))
  return proc


def _AssertOneLineFailure(proc, needle=''):
  assert proc.returncode != 0, proc.stdout
  assert 'Traceback' not in proc.stderr
  lines = [l for l in proc.stderr.splitlines() if l.strip()]
  assert len(lines) == 1, proc.stderr
  assert needle in lines[0], lines[0]
  assert 'every recorded resource is deleted' not in proc.stdout
  return lines[0]


def _LocalVm(scratch_dir, name='servers-0'):
  return ('local_vm', name, {'group': 'servers', 'scratch_dir':
                             str(scratch_dir), 'cpu_set': None})


def _Victim(path):
  os.makedirs(path, exist_ok=True)
  with open(os.path.join(path, 'precious'), 'w') as f:
    f.write('keep me')
  return os.path.join(path, 'precious')


@pytest.mark.parametrize('text,needle', [
    ('[]', 'JSON list'),
    ('{"format_version": 1, "run_uri": "RUN", "info": {}, "stages_done": [],'
     ' "status": "running", "resources": null}', 'resources is missing'),
    ('{"format_version": 1, "run_uri": "RUN", "info": {}, "stages_done": [],'
     ' "status": "running", "resources": [{"name": "x", "status": "created",'
     ' "data": {}}]}', 'resources[0].kind is missing'),
    ('{"format_version": 1, "run_uri": "RUN", "info": {}, "stages_done": [],'
     ' "status": "running", "resources": [{"kind": "local_vm", "name": "x",'
     ' "status": "created", "data": "rm -rf /"}]}', 'resources[0].data'),
    ('{"format_version": 1, "run_uri": "RUN", "info": {}, "stages_done": [],'
     ' "status": "running", "resources": [7]}', 'resources[0] 7: input should be'),
    ('{"format_version": 99, "run_uri": "RUN", "resources": []}',
     'format version 99'),
    ('{"format_version": 1, "run_uri": "other", "info": {}, '
     '"stages_done": [], "status": "running", "resources": []}',
     "run 'other'"),
    ('{"format_version": 1, "run_uri": ', 'unreadable'),
    ('[' * 100000 + ']' * 100000, 'unreadable'),
])
def test_malformed_record_is_one_line(tmp_path, text, needle):
  run_uri = e2e.NewRunUri()
  path = _WriteRecord(tmp_path / 'results', run_uri,
                      data=text.replace('RUN', run_uri))
  proc = _Teardown(tmp_path / 'results', run_uri, tmp_path / 'scratch')
  line = _AssertOneLineFailure(proc, needle)
  assert path in line


def test_hostile_paths_are_refused(tmp_path):
  run_uri = e2e.NewRunUri()
  results, scratch = tmp_path / 'results', tmp_path / 'scratch'
  own_root = scratch / f'pkb-{run_uri}.own'
  own_root.mkdir(parents=True)
  outside = tmp_path / 'outside'
  victims = [_Victim(outside / 'pkb-victim' / 'servers-0'),
             _Victim(outside / 'pkb-dotdot' / 'servers-0'),
             _Victim(outside / 'pkb-linked')]
  os.symlink(outside / 'pkb-linked', own_root / 'clients-0')
  key = outside / 'id_ed25519'
  key.write_text('not yours')
  via_dotdot = (f'{results}/{run_uri}/../../outside/id_ed25519')
  own_dir = own_root / 'servers-1'
  own_dir.mkdir()
  _WriteRecord(results, run_uri, [
      _LocalVm(outside / 'pkb-victim' / 'servers-0', 'servers-0'),
      _LocalVm(f'{own_root}/../../outside/pkb-dotdot/servers-0', 'a-0'),
      _LocalVm(own_root / 'clients-0', 'clients-0'),
      _LocalVm(own_dir, 'servers-1'),
      ('gcp_ssh_key', 'run-ssh-key', {'directory': str(outside),
                                       'private_key_path': str(key)}),
      ('gcp_ssh_key', 'other-key', {'directory': f'{results}/{run_uri}',
                                     'private_key_path': via_dotdot}),
  ])
  proc = _Teardown(results, run_uri, scratch)
  line = _AssertOneLineFailure(proc, 'left alone')
  assert 'Teardown left 5 resource(s)' in line
  for victim in victims:
    assert os.path.exists(victim), victim
  assert key.read_text() == 'not yours'
  assert not own_dir.exists()  # The one entry that is the run's own went.


def _FakeShard(port, title=True):
  """A sleep the test starts that looks like a shard in `ps`."""
  argv0 = f'redis-server 127.0.0.1:{port}' if title else 'sleep'
  proc = subprocess.Popen(['bash', '-c', f'exec -a "{argv0}" sleep 120'])
  deadline = time.monotonic() + 5
  while time.monotonic() < deadline:
    if argv0 in ' '.join(psutil.Process(proc.pid).cmdline()):
      return proc
    time.sleep(0.02)
  raise AssertionError('fake shard did not start')


def test_processes_and_shell_fields_are_refused(tmp_path):
  run_uri = e2e.NewRunUri()
  results, scratch = tmp_path / 'results', tmp_path / 'scratch'
  vm_dir = scratch / f'pkb-{run_uri}.own' / 'servers-0'
  vm_dir.mkdir(parents=True)
  marker = tmp_path / 'PWNED'
  touch = f'; touch {marker}'
  fakes = {7001: _FakeShard(7001), 7002: _FakeShard(7002),
           7003: _FakeShard(7003, title=False)}
  start = e2e.StartTicks(fakes[7001].pid)

  def Shard(port, **data):
    entry = {'vm_name': 'servers-0', 'port': port,
             'config_path': f'{vm_dir}/redis-{port}.conf',
             'pidfile': f'{vm_dir}/redis-{port}.pid'}
    entry.update(data)
    return ('redis_process', f'servers-0:{port}', entry)

  try:
    _WriteRecord(results, run_uri, [
        _LocalVm(vm_dir),
        # Its PID and port, but not its start time: not ours.
        Shard(7001, pid=fakes[7001].pid, start_time=start - 100),
        # No start time recorded: only its own pidfile could name it.
        Shard(7002, pid=fakes[7002].pid),
        Shard(7003, pid=fakes[7003].pid,
              start_time=e2e.StartTicks(fakes[7003].pid)),
        Shard(7004, pid=f'1{touch}'),
        Shard(7005, pid=None, pidfile=f'{vm_dir}/x{touch}'),
        Shard(7006, pid=None, config_path=f'/etc/passwd{touch}'),
        Shard(f'7007{touch}'),
    ])
    proc = _Teardown(results, run_uri, scratch)
    line = _AssertOneLineFailure(proc, 'left alone')
    assert 'Teardown left 6 resource(s)' in line
    for fake in fakes.values():
      assert fake.poll() is None, 'a process the run never started was killed'
    assert not marker.exists()
  finally:
    for fake in fakes.values():
      fake.kill()
      fake.wait()


class _ShellVm(virtual_machine.BaseVirtualMachine):
  """A VM whose commands run through bash here (like one reached by SSH),
  the scripts found as the shipped_scripts fixture put them."""

  def __init__(self, **kwargs):
    super().__init__(virtual_machine.VmSpec('Test', 'test'), 'vm-0', 'g',
                     **kwargs)

  def _Create(self):
    pass

  def _Delete(self):
    pass

  def RemoteCommandWithReturnCode(self, command, timeout=None, env=None,
                                  stdin=None):
    return vm_util.RunLocal(command, timeout=timeout, env=env, stdin=stdin)


# KillProcess on a Local VM and on one whose commands go through a shell (as
# over SSH): one implementation, run through each VM's own commands.
_VM_CLASSES = [
    lambda **kwargs: local.LocalVirtualMachine(
        virtual_machine.VmSpec('Local', 'local'), 'vm-0', 'g', run_uri='x',
        **kwargs),
    _ShellVm]

# KillProcess's wait after a signal (the product's is
# virtual_machine.STOP_WAIT_S, 5 s) for the cases whose process outlives it
# on purpose (SIGTERM ignored; an exit that never completes): what is
# checked is what KillProcess does once it has elapsed, not its length.
_SHORT_WAIT_S = 1.0


def _Stubborn(port, cwd=None, session=True, child=False):
  """A fake shard that ignores SIGTERM, so only SIGKILL stops it; in a
  session of its own (as a daemonized shard is) unless `session` is off;
  with `child`, it has forked one more such process (as a shard's
  background save is)."""
  fork = 'sleep 121 & ' if child else ''
  proc = subprocess.Popen(
      ['bash', '-c', f'trap "" TERM; {fork}exec -a '
       f'"redis-server 127.0.0.1:{port}" sleep 120'], cwd=cwd,
      start_new_session=session)
  deadline = time.monotonic() + 5
  while 'redis-server' not in ' '.join(psutil.Process(proc.pid).cmdline()):
    assert time.monotonic() < deadline
    time.sleep(0.02)
  return proc


def _Gone(proc):
  try:
    return psutil.Process(proc.pid).status() == psutil.STATUS_ZOMBIE
  except psutil.NoSuchProcess:
    return True


def _ForeignRedis(directory):
  """A real redis-server the run never started, working in `directory`."""
  os.makedirs(directory, exist_ok=True)
  port = e2e.FreePort()
  proc = subprocess.Popen(
      ['redis-server', '--port', str(port), '--bind', '127.0.0.1',
       '--save', '', '--appendonly', 'no', '--dir', str(directory)],
      cwd=directory, stdout=subprocess.DEVNULL)
  deadline = time.monotonic() + 10
  while f':{port}' not in ' '.join(psutil.Process(proc.pid).cmdline()):
    assert time.monotonic() < deadline and proc.poll() is None
    time.sleep(0.02)
  return proc, port


@e2e.NeedsTools('redis-server', how='./scripts/setup.sh installs it')
def test_processes_without_the_runs_mark_are_left_alone(tmp_path):
  """A record (or a pidfile in the run's own scratch directory) naming a
  real redis-server by pid, port and its true start time: it does not work
  in the run's scratch directory, so teardown leaves it alone and says so."""
  run_uri = e2e.NewRunUri()
  results, scratch = tmp_path / 'results', tmp_path / 'scratch'
  vm_dir = scratch / f'pkb-{run_uri}.own' / 'servers-0'
  vm_dir.mkdir(parents=True)
  named, named_port = _ForeignRedis(tmp_path / 'foreign-1')
  planted, planted_port = _ForeignRedis(tmp_path / 'foreign-2')
  try:
    (vm_dir / f'redis-{planted_port}.pid').write_text(f'{planted.pid}\n')

    def Shard(port, **data):
      return ('redis_process', f'servers-0:{port}', dict(
          vm_name='servers-0', port=port,
          config_path=f'{vm_dir}/redis-{port}.conf',
          pidfile=f'{vm_dir}/redis-{port}.pid', **data))

    _WriteRecord(results, run_uri, [
        _LocalVm(vm_dir),
        Shard(named_port, pid=named.pid,
              start_time=e2e.StartTicks(named.pid)),
        Shard(planted_port, pid=None),
    ])
    proc = _Teardown(results, run_uri, scratch)
    line = _AssertOneLineFailure(proc, 'not a process of this run')
    assert 'Teardown left 2 resource(s)' in line
    assert named.poll() is None and planted.poll() is None
  finally:
    for foreign in (named, planted):
      foreign.kill()
      foreign.wait()


@pytest.mark.parametrize('vm_class', _VM_CLASSES)
@pytest.mark.usefixtures('shipped_scripts')  # _ShellVm's commands run them.
def test_kill_process_waits_for_the_exit(vm_class, tmp_path):
  vm = vm_class(stop_wait_s=_SHORT_WAIT_S)
  vm.scratch_dir = str(tmp_path / 'scratch')
  os.mkdir(vm.scratch_dir, 0o700)
  outside = _Stubborn(7102, cwd=tmp_path)
  proc = _Stubborn(7101, cwd=vm.scratch_dir, child=True)
  # Its own scratch directory, PID, command line and start time, but it
  # leads no group of its own: the run started no such process.
  grouped = _Stubborn(7103, cwd=vm.scratch_dir, session=False)
  try:
    start, _ = vm.ProcessIdentity(grouped.pid)
    with pytest.raises(Exception, match='does not lead a process group'):
      vm.KillProcess(grouped.pid, markers=('redis-server', ':7103'),
                     start_time=start)
    assert not _Gone(grouped)
    start, _ = vm.ProcessIdentity(outside.pid)
    # Its PID, its command line and its start time, but not the run's mark.
    with pytest.raises(Exception, match='not a process of this run'):
      vm.KillProcess(outside.pid, markers=('redis-server', ':7102'),
                     start_time=start)
    assert not _Gone(outside)
    start, cmdline = vm.ProcessIdentity(proc.pid)
    assert 'redis-server' in cmdline
    with pytest.raises(Exception, match='left alone'):
      vm.KillProcess(proc.pid, markers=('redis-server', ':7101'),
                     start_time=start + 1)
    assert not _Gone(proc)
    with pytest.raises(Exception, match='left alone'):
      vm.KillProcess(proc.pid, markers=('redis-server', ':9999'),
                     start_time=start)
    assert not _Gone(proc)
    deadline = time.monotonic() + 5
    while not psutil.Process(proc.pid).children():
      assert time.monotonic() < deadline
      time.sleep(0.02)
    forked = psutil.Process(proc.pid).children()[0]
    vm.KillProcess(proc.pid, markers=('redis-server', ':7101'),
                   start_time=start)
    # Gone when KillProcess returns: SIGTERM ignored, SIGKILL awaited; and
    # what it forked went with it (the whole group was stopped).
    assert _Gone(proc)
    assert forked.wait(timeout=5) is not None or not forked.is_running()
  finally:
    for stubborn in (proc, outside, grouped):
      stubborn.kill()
      stubborn.wait()


_MAIN_EXITS = r"""
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>
static void *Later(void *seconds) { sleep(atoi(seconds)); return NULL; }
int main(int argc, char **argv) {
  pthread_t t;
  pthread_create(&t, NULL, Later, argv[1]);
  pthread_exit(NULL);  /* The main thread goes; the process lives on. */
}
"""


def _ExitingProcess(tmp_path, cwd, seconds):
  """A process that reads as exiting: its main thread has exited (the
  kernel shows a zombie with no command line and no working directory, as
  for a process in the middle of its exit) while another thread lives on
  for `seconds`. Returns (Popen, its start time as `vm` records it)."""
  binary = tmp_path / 'main_exits'
  if not binary.exists():
    source = tmp_path / 'main_exits.c'
    source.write_text(_MAIN_EXITS)
    subprocess.run(['gcc', '-O', '-o', str(binary), str(source),
                    '-lpthread'], check=True)
  proc = subprocess.Popen([str(binary), str(seconds)], cwd=cwd,
                          start_new_session=True)
  deadline = time.monotonic() + 10
  while True:  # Until the main thread has gone.
    if process_stat.Read(proc.pid).state == 'Z':
      break
    assert time.monotonic() < deadline
    time.sleep(0.01)
  return proc


def _StartTime(vm, pid):
  """The start time `vm` records for pid (clock ticks since boot)."""
  del vm  # Every VM records the same.
  return e2e.StartTicks(pid)


@e2e.NeedsTools('gcc', how='./scripts/setup.sh installs it')
@pytest.mark.parametrize('vm_class', _VM_CLASSES)
@pytest.mark.usefixtures('shipped_scripts')  # _ShellVm's commands run them.
def test_kill_process_waits_for_a_process_that_is_exiting(vm_class, tmp_path):
  vm = vm_class()
  vm.scratch_dir = str(tmp_path / 'scratch')
  os.mkdir(vm.scratch_dir, 0o700)
  # Ended means all of it (its exit status can be collected), not a zombie
  # main thread.
  # Ends by itself 3 s later (within KillProcess's 5 s wait): waited for,
  # never "not the recorded process; left alone" (its command line reads
  # empty meanwhile). 1 s ended it before the identity was read, at load
  # from 5 test workers on 2 cores ('None == (7424139.0, ...)').
  proc = _ExitingProcess(tmp_path, vm.scratch_dir, 3)
  try:
    start = _StartTime(vm, proc.pid)
    assert vm.ProcessIdentity(proc.pid) == (start, '')
    vm.KillProcess(proc.pid, markers=('main_exits',), start_time=start)
    # Ended by itself (status 0), not stopped by a signal.
    assert proc.poll() == 0
  finally:
    proc.kill()
    proc.wait()
  # One that outlives the wait is stopped when its recorded start time
  # names it, and left alone, said so, when nothing does.
  vm = vm_class(stop_wait_s=_SHORT_WAIT_S)
  vm.scratch_dir = str(tmp_path / 'scratch')
  proc = _ExitingProcess(tmp_path, vm.scratch_dir, 120)
  try:
    start = _StartTime(vm, proc.pid)
    with pytest.raises(Exception, match='has been exiting for .* no start '
                       'time was recorded for it; left alone'):
      vm.KillProcess(proc.pid, markers=('main_exits',))
    assert proc.poll() is None
    with pytest.raises(Exception, match='another process; left alone'):
      vm.KillProcess(proc.pid, markers=('main_exits',), start_time=start + 1)
    assert proc.poll() is None
    vm.KillProcess(proc.pid, markers=('main_exits',), start_time=start)
    assert proc.poll() is not None
  finally:
    proc.kill()
    proc.wait()


@pytest.mark.parametrize('vm_class', _VM_CLASSES)
@pytest.mark.usefixtures('shipped_scripts')  # _ShellVm's commands run them.
def test_kill_process_takes_a_zombie_for_gone(vm_class, tmp_path):
  vm = vm_class()
  vm.scratch_dir = str(tmp_path)
  proc = subprocess.Popen(['true'], cwd=tmp_path)
  deadline = time.monotonic() + 10
  while psutil.Process(proc.pid).status() != psutil.STATUS_ZOMBIE:
    assert time.monotonic() < deadline
    time.sleep(0.01)
  try:
    assert vm.ProcessIdentity(proc.pid) is None
    # Taken for gone: a process taken for exiting would be waited for and,
    # with no start time recorded, refused ("has been exiting ... left
    # alone").
    vm.KillProcess(proc.pid, markers=('true',), start_time=None)
  finally:
    proc.wait()


def _RunProcessesAlive(run_uri, record):
  alive = []
  for entry in record['resources']:
    data = entry['data']
    if entry['kind'] == 'redis_process' and data.get('pid'):
      try:
        proc = psutil.Process(data['pid'])
        if (e2e.StartTicks(proc.pid) == data['start_time']
            and proc.status() != psutil.STATUS_ZOMBIE):
          alive.append(' '.join(proc.cmdline()))
      except psutil.NoSuchProcess:
        pass
  for proc in psutil.process_iter(['cmdline']):
    if f'pkb-{run_uri}' in ' '.join(proc.info['cmdline'] or []):
      alive.append(' '.join(proc.info['cmdline']))
  return alive


def test_no_shard_outlives_a_default_run(tmp_path):
  # Every stage, shards, a preload and a probe with its load generator and
  # samplers; one probe is enough (the search's answer is not the point).
  proc, run_uri = e2e.Run(e2e.FAST + ['--memtier_max_probes=1'],
                          str(tmp_path))
  record = e2e.Record(str(tmp_path), run_uri)
  # However the study ended (latency noise may fail it), its shards ran.
  assert proc.returncode in (0, 1), proc.stderr
  shards = [e for e in record['resources'] if e['kind'] == 'redis_process']
  # Each shard that started has its start time recorded. One whose port
  # another run took first (runs beside this one) never got a pid: it was
  # retried on the next port, its entry deleted.
  started = [e for e in shards if e['data']['pid']]
  assert started and all(e['data']['start_time'] for e in started)
  assert all(e['status'] == 'deleted' for e in shards), shards
  # Gone within LeftoverProcesses' settle of pkb's exit (a killed process
  # is reaped once scheduled, later on a busy machine); then checked.
  e2e.WaitFor(lambda: not _RunProcessesAlive(run_uri, record),
              "the run's processes gone", timeout=3.0)
  assert e2e.LeftoverProcesses(str(tmp_path), run_uri) == []


def test_same_run_uri_twice_is_refused_and_kill9_never_blocks(tmp_path):
  run_uri = e2e.NewRunUri()
  # The run's first line comes once it holds its lock: the second pkb is
  # refused while the first provisions and preloads meanwhile.
  # FAST_CONFIRMED: its repeats keep it running past its first probe line.
  first = e2e.StartUntil(e2e.FAST_CONFIRMED + ['--memtier_run_duration=3'],
                         run_uri, str(tmp_path), marker=f'Run {run_uri}:')
  try:
    assert first.poll() is None
    second = pkb_forkserver.Run(
        e2e.Command(e2e.FAST, run_uri, str(tmp_path)), timeout=60, cwd=e2e.REPO)
    assert second.returncode == 2
    lines = second.stderr.strip().splitlines()
    assert len(lines) == 1 and f'pid {first.pid} ' in lines[0], lines
    assert 'in use' in lines[0]
    # Killed as its search starts: shards up, keys loaded, probes next.
    for line in first.stdout:  # Bounded by the run's own length.
      if 'probe' in line:
        break
    assert first.poll() is None
    first.send_signal(signal.SIGKILL)
    first.wait(timeout=10)
  finally:
    # A lock left by a killed run blocks neither a teardown nor a new stage.
    teardown = e2e.KillAndTearDown(first, run_uri, str(tmp_path))
  assert teardown.returncode == 0, teardown.stderr
  assert 'every recorded resource is deleted' in teardown.stdout
  assert e2e.LeftoverProcesses(str(tmp_path), run_uri, settle_s=0.5) == []
  again = pkb_forkserver.Run(
      e2e.Command(['--run_stage=teardown'], run_uri, str(tmp_path)),
      timeout=60, cwd=e2e.REPO)
  assert 'in use' not in again.stderr


if __name__ == '__main__':
  sys.exit(pytest.main([__file__, '-q']))
