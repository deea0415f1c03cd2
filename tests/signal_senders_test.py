"""One place sends a signal to a process of a run: run_processes.

Issue 37 asked that a grep find one sender (plus the shipped script); this
is that grep, over every product file (Python and the shipped scripts), so
a second kill path is seen when it is written. The others it finds are
listed with why they are not processes of a run.
"""

import os
import re

import architecture_test

REPO = architecture_test.REPO
# A signal sent: Python's os.kill/killpg, Popen's send_signal/terminate/
# kill, and the shell's kill and pkill (kill -0 only asks whether a PID
# lives: it sends nothing).
# The shell's kill counts where a command starts (a line, after ; & | { or
# a quote, then or do), so prose such as "(kill -9 of pkb" does not.
_SENDS = re.compile(
    r'\bos\.kill(pg)?\(|\.send_signal\(|\.terminate\(\)|\.kill\(\)|'
    r'\bpkill\b|(^\s*|[;&|{\'"]\s*|\b(then|do)\s+)kill\s+(?!-0\b)["$-]')
_ALLOWED = {
    'perfkitbenchmarker/run_processes.py': 'the one sender (Python)',
    'perfkitbenchmarker/scripts/run_processes.sh': 'the one sender (shell)',
    'perfkitbenchmarker/scripts/probe.sh':
        'ends its own sampler, a background job it has not reaped',
    'pkb_plugin/redis_price_performance_benchmark.py':
        "stops the harness it runs for upstream PKB, a run of its own (the "
        "plugin runs inside upstream's perfkitbenchmarker, not this one)",
}


def _ProductFiles():
  for top in ('perfkitbenchmarker', 'pkb_plugin'):
    for root, _, names in os.walk(os.path.join(REPO, top)):
      for name in names:
        if name.endswith(('.py', '.sh')):
          path = os.path.join(root, name)
          yield os.path.relpath(path, REPO), path


def _Senders():
  found = {}
  for relative, path in _ProductFiles():
    with open(path, encoding='utf-8') as f:
      for number, line in enumerate(f, 1):
        if not line.lstrip().startswith('#') and _SENDS.search(line):
          found.setdefault(relative, []).append(f'{number}: {line.strip()}')
  return found


def test_only_run_processes_signals_a_process_of_a_run():
  others = {path: lines for path, lines in _Senders().items()
            if path not in _ALLOWED}
  assert not others, (
      'a signal sent outside run_processes (stop the run\'s processes '
      f'through run_processes.Identity or run_processes.sh): {others}')


def test_the_pattern_finds_each_way_of_sending():
  for line in ('os.killpg(pid, 9)', 'os.kill(pid, 15)', 'p.send_signal(2)',
               'p.terminate()', 'p.kill()', 'pkill -s "$sid"',
               'kill -TERM -- "-$g"', '{ kill "$sampler"; }', 'kill $pid'):
    assert _SENDS.search(line), line
  for line in ("ended += ' || ! kill -0 1'", 'a killed run', 'skill',
               'can die in the middle of one (kill -9 of pkb',
               'KillProcess(pid)', 'run_processes.KillStartedGroup(pid)'):
    assert not _SENDS.search(line), line


def test_every_allowed_file_still_sends():
  """An exception whose sender is gone is dropped from the list."""
  assert set(_ALLOWED) == set(_Senders())
