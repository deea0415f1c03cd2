#!/usr/bin/env python3
"""CPU seconds of one-shot commands, this checkout against another.

  ./scripts/bench_commands.py --other=/path/to/checkout [--repeats=5] \\
      [--commands=gcp_plan,compare_report,help]

Runs each command in this checkout and in `--other` (an older clone, say),
alternating, `--repeats` times a side, and prints per command the median
CPU seconds of each side (user + system of the command's whole process
tree, as the kernel counts it for a waited child) and their ratio, this /
other. CPU rather than wall time: on a shared machine a command's wall time
moves with others' load; its CPU mostly does not.

The commands, none of which runs a study:
  gcp_plan        ./pkb.py --cloud=GCP --dry_run (a plan: no API call);
  compare_report  ./scripts/compare.py over the recorded history
                  (tests/data/history) with --report (HTML) and --markdown;
  help            ./pkb.py --help (start-up alone).
Each side runs its own checkout's scripts with its own virtualenv; outputs
go to a temporary directory, removed at the end. Exit 1 if a command fails
on either side; SIGTERM or Ctrl-C stops the command running and exits
130.
"""

import argparse
import os
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
from typing import Dict, List

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TIMEOUT_S = 300  # Per command: each takes seconds.
HISTORY = os.path.join('tests', 'data', 'history')
COMMANDS = {
    'gcp_plan': lambda out: [
        './pkb.py', '--cloud=GCP', '--dry_run', '--project=bench-project',
        '--zone=us-central1-a', f'--results_dir={out}'],
    'compare_report': lambda out: [
        './scripts/compare.py', HISTORY, f'--report={out}/report.html',
        f'--markdown={out}/summary.md'],
    'help': lambda out: ['./pkb.py', '--help'],
}


def _Fail(message: str) -> None:
  print(f'bench_commands: {message}', file=sys.stderr)
  sys.exit(2)


def CpuSeconds(argv: List[str], cwd: str) -> float:
  """The CPU seconds of `argv` run in `cwd` with its process tree; raises
  RuntimeError if it fails or outlives TIMEOUT_S."""
  before = resource.getrusage(resource.RUSAGE_CHILDREN)
  try:
    proc = subprocess.run(argv, cwd=cwd, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=TIMEOUT_S,
                          check=False)
  except subprocess.TimeoutExpired:
    raise RuntimeError(f'{" ".join(argv[:2])} in {cwd} took over '
                       f'{TIMEOUT_S} s') from None
  after = resource.getrusage(resource.RUSAGE_CHILDREN)
  if proc.returncode != 0:
    last = (proc.stderr.strip().splitlines() or ['no output'])[-1]
    raise RuntimeError(f'{" ".join(argv[:2])} in {cwd} exited '
                       f'{proc.returncode}: {last[:200]}')
  return ((after.ru_utime - before.ru_utime) +
          (after.ru_stime - before.ru_stime))


def Compare(sides: Dict[str, str], names: List[str], repeats: int,
            scratch: str) -> Dict[str, Dict[str, List[float]]]:
  """{command: {side: [CPU seconds, one per repeat]}}, sides alternated."""
  seconds = {name: {side: [] for side in sides} for name in names}
  for _ in range(repeats):
    for name in names:
      for side, checkout in sides.items():
        out = tempfile.mkdtemp(dir=scratch)
        seconds[name][side].append(
            CpuSeconds(COMMANDS[name](out), checkout))
  return seconds


def main(argv: List[str]) -> int:
  parser = argparse.ArgumentParser(
      description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
  parser.add_argument('--other', required=True,
                      help='the checkout to compare this one with')
  parser.add_argument('--repeats', type=int, default=5)
  parser.add_argument('--commands', default=','.join(COMMANDS))
  args = parser.parse_args(argv)
  names = [n for n in args.commands.split(',') if n]
  unknown = sorted(set(names) - set(COMMANDS))
  if unknown or not names:
    _Fail(f'--commands: {", ".join(unknown) or "none given"}; known: '
          f'{", ".join(COMMANDS)}.')
  if not 1 <= args.repeats <= 100:
    _Fail(f'--repeats={args.repeats}: give 1 to 100.')
  other = os.path.realpath(args.other)
  if not os.path.isfile(os.path.join(other, 'pkb.py')):
    _Fail(f'--other={args.other}: no pkb.py there; give a checkout.')
  sides = {'this': REPO, 'other': other}
  # SIGTERM as Ctrl-C, as the other benches take it: subprocess.run kills
  # the command it waits on, and the scratch directory goes.
  signal.signal(signal.SIGTERM, signal.default_int_handler)
  scratch = tempfile.mkdtemp(prefix='bench-commands-')
  try:
    seconds = Compare(sides, names, args.repeats, scratch)
  except RuntimeError as e:
    print(f'bench_commands: {e}', file=sys.stderr)
    return 1
  except KeyboardInterrupt:
    print('bench_commands: interrupted; nothing measured is printed.',
          file=sys.stderr)
    return 130
  finally:
    shutil.rmtree(scratch, ignore_errors=True)
  print(f'CPU seconds, median of {args.repeats} (this: {REPO}; other: '
        f'{other}):')
  for name in names:
    this, that = (statistics.median(seconds[name][s]) for s in sides)
    ratio = f'{this / that:.2f}' if that else '?'
    print(f'  {name:15s} this {this:6.2f}  other {that:6.2f}  '
          f'this/other {ratio}')
  return 0


if __name__ == '__main__':
  sys.exit(main(sys.argv[1:]))
