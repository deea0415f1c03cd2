"""A process's name cannot hide its CPU from the foreign-CPU scan.

Issue 35 class 3: a stat line is "<pid> (<name>) <state> <ppid> ...", and a
name is any 15 bytes its owner chooses (prctl PR_SET_NAME): `x) R 2 y`
looked to the scan's shell filter like a kernel thread (parent 2), and a
line break cut the line short, so a busy process so named was never
counted and a disturbed run could come out confirmed. Every reader splits
the name at the line's last ')' (process_stat), the kernel's own rule.
Checked on stat lines, on the real scan over real processes named so, and
through ./pkb.py with such a process busy on the run's cores.
"""

import glob
import gzip
import os
import subprocess
import sys
import time

import pytest

import e2e_support as e2e
import snapshot_text
from perfkitbenchmarker import process_stat
from perfkitbenchmarker import shell_scripts
from perfkitbenchmarker.load_generators import client_cpu

# Names that fooled a reader, or could: the kernel-thread pattern, a line
# break, a carriage return (a line break to Python's splitlines), a
# parenthesis at the end and the run's own server's name.
HOSTILE_NAMES = ('x) R 2 y', 'a\nb) S 2 c', 'r\rs) R 2 ', 'z)', 'redis-server')
BUSY_LIMIT_S = 90  # Each busy process ends by itself, even if never killed.
_BUSY = ('import ctypes, sys, time\n'
         'ctypes.CDLL(None).prctl(15, sys.argv[1].encode(), 0, 0, 0)\n'
         'end = time.monotonic() + float(sys.argv[2])\n'
         'while time.monotonic() < end:\n'
         '  pass\n')


def _StatLine(pid, name, state='R', ppid=1, cpu=500, start=1234):
  fields = ([state, str(ppid), '7', '7'] + ['0'] * 7 + [str(cpu), '0'] +
            ['0'] * 6 + [str(start)] + ['0'] * 16 + ['1'] + ['0'] * 15)
  return f'{pid} ({name}) {" ".join(fields)}'


@pytest.mark.parametrize('name', HOSTILE_NAMES)
def test_the_name_ends_at_the_last_parenthesis(name):
  stat = process_stat.Parse(_StatLine(4321, name))
  assert (stat.pid, stat.name, stat.state, stat.ppid) == (4321, name, 'R', 1)
  assert (stat.cpu_ticks, stat.start_ticks, stat.processor) == (500, 1234, 1)
  assert not stat.kernel_thread


def test_a_snapshot_keeps_every_foreign_process_whatever_its_name():
  # As the scan prints them: a line break in a name read as a space.
  lines = [_StatLine(500 + i, n.replace(chr(10), ' '))
           for i, n in enumerate(HOSTILE_NAMES)]
  lines.append(_StatLine(600, 'kworker/0:1', ppid=2))
  foreign = client_cpu.Snapshot.Parse(snapshot_text.Text(
      100.0, 50, ['cpu  1 0 0 1 0 0 0 0'], snapshot_text.Scan(lines))).foreign
  assert sorted(p.pid for p in foreign.values()) == [500, 501, 502, 503, 504]


def _StartBusy(name, core=None, seconds=BUSY_LIMIT_S):
  """A busy process named `name` (its comm), working in / (outside any
  run's workspace: foreign to every run), pinned to `core` if given."""
  argv = [sys.executable, '-c', _BUSY, name, str(seconds)]
  if core is not None:
    argv = ['taskset', '-c', str(core)] + argv
  proc = subprocess.Popen(argv, cwd='/', stdin=subprocess.DEVNULL,
                          stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL)
  deadline = time.monotonic() + 10
  while time.monotonic() < deadline:  # Named once prctl has run.
    with open(f'/proc/{proc.pid}/comm', 'rb') as f:
      if f.read()[:-1] == name.encode()[:15]:
        return proc
    time.sleep(0.02)
  proc.kill()
  pytest.fail(f'the busy process never took the name {name!r}')


def _StopAll(procs):
  for proc in procs:
    proc.kill()
  for proc in procs:
    proc.wait(timeout=10)


@pytest.mark.e2e
def test_the_scan_reports_busy_processes_with_hostile_names(tmp_path):
  workspace = tmp_path / 'pkb-run.x'
  workspace.mkdir()
  procs = [_StartBusy(name, seconds=30) for name in HOSTILE_NAMES]
  try:
    script = shell_scripts.Text('snapshot.sh') + 'snapshot scan\n'
    out = subprocess.run(['bash', '-c', script], cwd='/', check=True,
                         capture_output=True, timeout=60,
                         env=dict(os.environ,
                                  PKB_RUN_ROOT=str(workspace))).stdout
  finally:
    _StopAll(procs)
  foreign = client_cpu.Snapshot.Parse(
      out.decode('utf-8', 'replace')).foreign
  names = {p.pid: p.name for p in foreign.values()}
  for proc, name in zip(procs, HOSTILE_NAMES):
    assert names.get(proc.pid) == name[:15].replace('\n', ' '), (name, names)


@pytest.mark.e2e
@pytest.mark.alone
def test_a_busy_process_named_like_a_kernel_thread_disturbs_a_pkb_run(
    tmp_path):
  e2e.NeedsTools('redis-server', 'redis-benchmark')
  # One on each core this process may use: whichever the run gives its
  # client and its server, a busy `x) R 2 y` shares it.
  procs = [_StartBusy('x) R 2 y', core)
           for core in sorted(os.sched_getaffinity(0))]
  try:
    # Two probes and no hold: the probes' client snapshots are the question.
    proc, run_uri = e2e.Run(
        e2e.FAST + ['--load_generator=redis_benchmark',
                    '--memtier_max_probes=2', '--memtier_hold_duration=0'],
        str(tmp_path))
  finally:
    _StopAll(procs)
  assert proc.returncode in (0, 4), proc.stderr[-2000:]
  probes = [r for r in e2e.Samples(str(tmp_path), run_uri)
            if 'foreign_cpu_pct' in e2e.Labels(r)]
  assert probes, 'no probe sample carries foreign_cpu_pct'
  # The figure is the scans' (client_cpu.ForeignPct): each probe's client
  # snapshots, kept in the run dir, must hold both busy processes as
  # foreign, their CPU time growing over the probe. (Other work on this
  # shared machine moves the figure itself, so it is not what is checked.)
  busy = {p.pid for p in procs}
  windows = [(w, w.replace('stat0', 'stat1')) for w in glob.glob(
      # The probes' own (a pilot before the first measures no CPU).
      os.path.join(str(tmp_path), run_uri, 'raw', 'clients-0',
                   'redis-benchmark-[0-9]*', 'stat0*'))]
  windows = [(a, b) for a, b in windows if os.path.exists(b)]
  assert windows, 'no client snapshots kept'
  grown = 0.0
  for before_path, after_path in windows:
    before, after = _KeptSnapshot(before_path), _KeptSnapshot(after_path)
    seen = {p.pid: p.cpu_ticks for p in before.foreign.values()}
    later = {p.pid: p.cpu_ticks for p in after.foreign.values()}
    assert busy <= set(seen) and busy <= set(later), before_path
    grown += sum(later[pid] - seen[pid] for pid in busy)
  # Counted: their CPU over the probes (however little this shared
  # machine gave them) is in the figure's ticks.
  assert grown > 0, windows


def _KeptSnapshot(path):
  opener = gzip.open if path.endswith('.gz') else open
  with opener(path, 'rb') as f:
    return client_cpu.Snapshot.Parse(f.read().decode('utf-8', 'replace'))
