"""The attribution matrix: ./pkb.py runs whose limit is known beforehand.

Each case is a real staged run (`--run_stage=provision,prepare`, then the
case's adversary is put in place, then `--run_stage=run,cleanup,teardown`),
on Local or, given a static VM file, over SSH. Cases may share one
provisioned run (`Prepare`, then each case's run stage, then `TearDown`):

  quiet         nothing done: the run says what limited it, with figures
  server_quota  the shards moved into a cgroup held to 20 % of a CPU
  client_quota  the run stage (so its load generators) in a cgroup held to
                20 % of a CPU once its search starts
  client_hog    a busy loop pinned on each of the client's cores, in a
                cgroup of high weight held to half of each core (it takes
                half of the cores it is on, whatever else runs), spinning
                from the search's start; the shards at a high weight
  client_spin   the load generator has a spinning thread of its own (the
                memtier stand-in's `spinning_thread`, tests only), run in a
                cgroup of high weight (it gets the CPU it spins on)

In the server-quota case the run stage also runs at a high weight, so that
the load generator is not starved by others' load.

The cgroups (scripts/cpu_cgroups.py) carry a high weight so that, on a
machine shared with other work, the case under test gets the CPU it asks
for: the server reaches its quota, the hog takes its cores. Everything the
case made (cgroups, hogs) is removed in `finally`, and a run that failed
between its stages is torn down.

Used by tests/attribution_matrix_test.py and scripts/bench_attribution.py.
"""

import dataclasses
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from typing import Callable, Dict, List, Optional, Sequence

import psutil

_HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(_HERE)
if REPO not in sys.path:
  sys.path.insert(0, REPO)

# pylint: disable=g-import-not-at-top,wrong-import-position
from perfkitbenchmarker.publishers import bigquery_schema
from scripts import cpu_cgroups

CASES = ('quiet', 'server_quota', 'client_quota', 'client_hog', 'client_spin')
QUOTA_CORES = 0.2
HOG_SHARE = 0.5
# Short runs: 1 s probes and no hold (the answer's limit is named from its
# search probes, verdict.OfSearch; a hold adds a probe of 2 s or more to each
# case and only a reason to unconfirm), few probes, a cap every probe stays
# under (the limit is the question here, not the capped figure). GETs only:
# with redis-benchmark one process, not a SET and a GET one sharing the CPU
# a case starves; it sizes its first probe from a guessed rate (40,000 ops/s
# a process), which a client held to 20 % of a CPU, or sharing its core
# with a hog, or a server held to 20 % reaches nowhere near: that probe
# took 3 to 25 s with both processes.
FLAGS = ['--memtier_run_duration=1', '--memtier_hold_duration=0',
         '--memtier_key_maximum=5000',
         '--memtier_max_probes=3', '--memtier_latency_cap=200',
         '--memtier_adaptive_min_connections=8',
         '--memtier_adaptive_max_connections=32',
         '--nosystem_tuning', '--timeout_minutes=5', '--noaccept_unconfirmed']
# The run stage's own flags for a case: GETs only where the case starves the
# client or the server (see above), and under the client's quota pipelined
# too, so that its first probe lasts a second or two, not 6 (beside the hog,
# pipelined it took 0.6 s: too short a window). Not for the quiet case:
# GETs only on a quiet machine, its first probe took 0.4 s (136k ops/s), too
# short for two server samples, and its probe had no server figures.
RUN_FLAGS = {'client_quota': ('--memtier_ratio=0:1', '--memtier_pipeline=4'),
             'client_hog': ('--memtier_ratio=0:1',),
             'server_quota': ('--memtier_ratio=0:1',)}
# A hog stops itself once started; it spins from SIGCONT (`at_search`).
HOG_CODE = ('import os, signal\nos.kill(os.getpid(), signal.SIGSTOP)\n'
            'while True: pass\n')


@dataclasses.dataclass
class CaseResult:
  case: str
  run_uri: str
  returncode: int
  stdout: str
  stderr: str
  probes: List[Dict[str, str]]  # each probe's throughput sample labels
  answer: Optional[Dict[str, str]]  # latency_capped_throughput's labels

  @property
  def limits(self) -> List[str]:
    return [p.get('limit', '') for p in self.probes]

  def Majority(self) -> Optional[str]:
    limits = self.limits
    if not limits:
      return None
    return max(sorted(set(limits)), key=limits.count)

  def Line(self) -> str:
    """One line: case, the answer's limit, verdict, key figures."""
    answer = self.answer or {}
    figures = [f'{k}={answer[k]}' for k in (
        'client_busiest_thread_pct', 'client_thread_wait_pct',
        'client_throttled_pct', 'client_foreign_cpu_pct',
        'server_main_thread_pct', 'server_throttled_pct',
        'server_foreign_cpu_pct') if answer.get(k) not in (None, '')]
    return (f'{self.case:13} limit={answer.get("limit", "-"):13} '
            f'verdict={answer.get("verdict_flags", "-"):22} '
            f'probes={",".join(self.limits) or "-"}  ' + ' '.join(figures))


def _Rows(results_dir: str, run_uri: str) -> List[dict]:
  path = os.path.join(results_dir, run_uri,
                      'perfkitbenchmarker_results.json')
  if not os.path.exists(path):
    return []
  with open(path) as f:
    return [json.loads(line) for line in f if line.strip()]


def ShardPids(results_dir: str, run_uri: str) -> List[int]:
  with open(os.path.join(results_dir, run_uri,
                         'run_record.json')) as f:
    record = json.load(f)
  return [int(e['data']['pid']) for e in record['resources']
          if e['kind'].endswith('_process') and e['kind'] != 'probe_process'
          and e['data'].get('pid') and e.get('status') != 'deleted']


def ClientCores(results_dir: str, run_uri: str) -> List[int]:
  """The client VMs' pinned cores (Local), else every core here."""
  with open(os.path.join(results_dir, run_uri,
                         'run_record.json')) as f:
    record = json.load(f)
  cores = set()
  for e in record['resources']:
    if e['data'].get('group') == 'clients':
      if not e['data'].get('cpu_set'):
        return sorted(os.sched_getaffinity(0))
      cores.update(e['data']['cpu_set'])
  return sorted(cores) or sorted(os.sched_getaffinity(0))


def Watch(argv: Sequence[str], timeout: float,
          on_line: Optional[Callable[[str], None]] = None,
          stop: int = signal.SIGKILL,
          preexec_fn: Optional[Callable[[], None]] = None
          ) -> subprocess.CompletedProcess:
  """Runs `argv` from the repo, calling `on_line` with each line of its
  stdout as it comes (to act at a point of a run), and sends it `stop`
  once `timeout` has passed (SIGTERM lets pkb clean up first)."""
  with tempfile.TemporaryFile('w+') as err:
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=err,
                            text=True, cwd=REPO, preexec_fn=preexec_fn)
    watchdog = threading.Timer(timeout, proc.send_signal, (stop,))
    watchdog.start()
    lines = []
    try:
      for line in proc.stdout:
        lines.append(line)
        if on_line is not None:
          on_line(line)
      proc.wait()
    finally:
      watchdog.cancel()
      if proc.poll() is None:
        proc.kill()
        proc.wait()
      proc.stdout.close()
    err.seek(0)
    return subprocess.CompletedProcess(list(argv), proc.returncode,
                                       ''.join(lines), err.read())


def Pkb(args: Sequence[str], run_uri: str, results_dir: str,
        cgroup: Optional[cpu_cgroups.CpuCgroup] = None,
        timeout: float = 300,
        at_search: Optional[Callable[[], None]] = None,
        marker: str = 'Searching for'
        ) -> subprocess.CompletedProcess:
  """./pkb.py `args`, born in `cgroup` if given; `at_search` is called once
  at the first line that starts with `marker` (by default when its search
  starts, before its first probe)."""
  argv = [os.path.join(REPO, '.venv', 'bin', 'python'),
          os.path.join(REPO, 'pkb.py'), f'--run_uri={run_uri}',
          f'--results_dir={results_dir}', *args]
  if not os.path.exists(argv[0]):
    argv[0] = sys.executable
  # The child joins the cgroup before it execs: every process it starts
  # (the probe scripts, the load generators) is born there.
  join = None
  if cgroup is not None:
    procs = os.path.join(cgroup.path, 'cgroup.procs')

    def join():
      with open(procs, 'w') as f:
        f.write(str(os.getpid()))
  pending = [at_search] if at_search is not None else []

  def OnLine(line):
    if pending and line.startswith(marker):
      pending.pop()()

  return Watch(argv, timeout, OnLine, preexec_fn=join)


def _WaitStopped(pid: int, timeout_s: float = 30) -> None:
  """Returns once process `pid` has stopped itself (SIGSTOP)."""
  deadline = time.monotonic() + timeout_s
  while psutil.Process(pid).status() != psutil.STATUS_STOPPED:
    if time.monotonic() > deadline:
      raise RuntimeError(f'the hog {pid} did not stop itself')
    time.sleep(0.01)


def _Flags(extra: Sequence[str]) -> List[str]:
  """FLAGS and `extra`; on Local also no server quota of the run's own (a
  2-core run's default split, README "The 2-core split"): each case's
  adversary is the only one."""
  local = not any(a.startswith('--static_vm_file') for a in extra)
  return [*FLAGS, *extra] + (['--local_server_cpu_quota=0'] if local else [])


def Prepare(results_dir: str, extra: Sequence[str] = ()) -> str:
  """A provisioned and prepared run that several cases share, each with a
  run stage of its own (RunCase's `run_uri`); TearDown ends it."""
  run_uri = f'at{uuid.uuid4().hex[:8]}'
  first = Pkb(['--run_stage=provision,prepare', *_Flags(extra)], run_uri,
              results_dir)
  if first.returncode != 0:
    TearDown(run_uri, results_dir, extra)
    raise RuntimeError(f'provision,prepare failed: {first.stderr[-2000:]}')
  return run_uri


def TearDown(run_uri: str, results_dir: str, extra: Sequence[str] = ()):
  Pkb(['--run_stage=cleanup,teardown', *_Flags(extra)], run_uri,
      results_dir)


def RunCase(case: str, results_dir: str, extra: Sequence[str] = (),
            quota_cores: float = QUOTA_CORES,
            client_pids: Sequence[int] = (),
            run_uri: Optional[str] = None) -> CaseResult:
  """Runs one case of the matrix; everything it made is gone afterwards.

  `client_pids`: processes that start the load generators other than the
  run stage itself (the loopback sshd of a Static run: its sessions are
  born where it is), put into the client's cgroup with the run stage.
  `run_uri`: a run from Prepare to give only this case's run stage to (its
  samples are those the stage adds); None provisions and tears down one.
  """
  if case not in CASES:
    raise ValueError(f'unknown case {case!r}; one of {", ".join(CASES)}')
  shared = run_uri is not None
  run_uri = run_uri or f'at{uuid.uuid4().hex[:8]}'
  args = _Flags(extra)
  groups: List[cpu_cgroups.CpuCgroup] = []
  hogs: List[subprocess.Popen] = []
  torn_down = shared
  try:
    if not shared:
      first = Pkb(['--run_stage=provision,prepare', *args], run_uri,
                   results_dir)
      if first.returncode != 0:
        return CaseResult(case, run_uri, first.returncode, first.stdout,
                          first.stderr, [], None)
    known = len(_Rows(results_dir, run_uri))
    runner = None
    # What puts a client-side adversary in place once the search starts:
    # the run's own start-up (imports, restoring the deployment) measures
    # nothing, and held to 20 % of a CPU it took 5 s more.
    at_search = None
    if case == 'server_quota':
      group = cpu_cgroups.CpuCgroup(quota_cores)
      groups.append(group)
      for pid in ShardPids(results_dir, run_uri):
        group.Add(pid)
      # The client at a high weight too: others' load must not starve it
      # (the server's quota is the case, not a starved client).
      runner = cpu_cgroups.CpuCgroup()
      groups.append(runner)
    elif case == 'client_quota':
      runner = cpu_cgroups.CpuCgroup()
      groups.append(runner)
      at_search = lambda: runner.SetQuota(quota_cores)
    elif case == 'client_spin':
      runner = cpu_cgroups.CpuCgroup()
      groups.append(runner)
    elif case == 'client_hog':
      # Half of each of the client's cores, whatever else runs here: the
      # client waits for a CPU, yet still gets enough to finish its probes.
      cores = ClientCores(results_dir, run_uri)
      group = cpu_cgroups.CpuCgroup(HOG_SHARE * len(cores))
      groups.append(group)
      for core in cores:
        hog = subprocess.Popen(['taskset', '-c', str(core), sys.executable,
                                '-c', HOG_CODE])
        hogs.append(hog)
        group.Add(hog.pid)
      for hog in hogs:
        _WaitStopped(hog.pid)
      at_search = lambda: [os.kill(hog.pid, signal.SIGCONT) for hog in hogs]
      # The shards at a high weight: others' load must not starve them (a
      # starved server leaves the client idle, not waiting for a CPU; with
      # 4 more busy loops here the matrix once saw a share of 3 % where its
      # case asks at least 10).
      shards = cpu_cgroups.CpuCgroup()
      groups.append(shards)
      for pid in ShardPids(results_dir, run_uri):
        shards.Add(pid)
    if runner is not None:
      for pid in client_pids:
        runner.Add(pid)
    stages = 'run' if shared else 'run,cleanup,teardown'
    second = Pkb([f'--run_stage={stages}', *args, *RUN_FLAGS.get(case, ())],
                  run_uri, results_dir,
                  runner, at_search=at_search)
    torn_down = True
    rows = _Rows(results_dir, run_uri)[known:]
    probes = [bigquery_schema.RowLabels(r) for r in rows if r['metric'] == 'throughput']
    capped = [bigquery_schema.RowLabels(r) for r in rows
              if r['metric'] == 'latency_capped_throughput']
    return CaseResult(case, run_uri, second.returncode, second.stdout,
                      second.stderr, probes, capped[-1] if capped else None)
  finally:
    for hog in hogs:
      hog.kill()
      hog.wait()
    for group in groups:
      group.Remove()
    if not torn_down:
      TearDown(run_uri, results_dir, extra)
