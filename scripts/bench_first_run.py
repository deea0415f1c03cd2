#!/usr/bin/env python3
"""The README's first command, with and without the 2-core server quota.

  sudo ./scripts/bench_first_run.py [--repeats=3] \\
      [--memtier_path=/path/to/memtier_benchmark] [--high_weight] \\
      [--sides="name=flags;name=flags"]

Runs the default study (`./pkb.py`, nothing else but a results directory
of its own) side by side in one invocation, alternating: with the Local
split's server quota (the default on 2 cores) and with
`--local_server_cpu_quota=0` (the plain split: server on one core, client
on the other), each with redis-benchmark (this machine's fallback) and,
given `--memtier_path`, with that memtier. Per run it prints the exit code,
the wall time, the search's probes and their seconds (the answer's
`search_probes` and `search_probe_seconds`: the rest of the wall time is
start-up, preload, the hold and teardown), the answer's ops/s, verdict and
limit and the load average
at its start (a shared machine's runs are disturbed, and say so); then, per
load generator, the wall-time ratio quota / plain (median over the
repeats) and how many runs of each confirmed.

`--sides` compares other flag sets the same way (e.g. two search margins:
`--sides="m85=;m80=--memtier_cap_margin=0.8"`), the ratio the first side's
wall time over the second's; a side's `--repo=PATH` runs that checkout's
`pkb.py` instead of this one's (old code against new:
`--sides="new=;old=--repo=/tmp/old-clone"`).

Root is needed for the quota's cgroup (without it both columns are the
plain split, and the plan warns). Results go to a temporary directory,
removed at the end.

`--high_weight` is a check of the design on a machine shared with other
work, not a user's run: each run's pkb (so its load generator) and the
server's quota cgroup get a high CPU weight (scripts/cpu_cgroups.py's, as
the attribution matrix's cases do), so others' load takes little from
them; the per-run line then adds the answer's client and server figures
(the load generator's share of its core, the server's throttling).
"""

import argparse
import json
import os
import shutil
import signal
import statistics
import sys
import tempfile
import threading
import time
from typing import Dict, List, Optional

_HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(_HERE)
sys.path.insert(0, REPO)
from perfkitbenchmarker import venv_reexec  # pylint: disable=g-import-not-at-top
venv_reexec.UseRepoVenv(REPO, __file__)

# pylint: disable=g-import-not-at-top,wrong-import-position
from perfkitbenchmarker import sample
from perfkitbenchmarker.providers.local import cpu_quota
from scripts import cpu_cgroups
from scripts import pkb_child

SPLITS = {'quota': [], 'plain': ['--local_server_cpu_quota=0']}


def _Sides(text: Optional[str]) -> Dict[str, List[str]]:
  """--sides 'a=--x=1 --y=2;b=' -> {'a': ['--x=1', '--y=2'], 'b': []}; the
  default: the quota and the plain split."""
  if not text:
    return dict(SPLITS)
  sides = {}
  for part in text.split(';'):
    name, _, flags = part.partition('=')
    sides[name.strip()] = flags.split()
  if len(sides) < 2:
    raise SystemExit('bench_first_run: --sides needs two sides or more')
  return sides


def _Answer(results_dir: str, run_uri: str) -> Dict[str, str]:
  """The latency_capped_throughput sample's value and labels ({} if none)."""
  path = os.path.join(results_dir, run_uri, 'perfkitbenchmarker_results.json')
  try:
    with open(path) as f:
      rows = [json.loads(line) for line in f if line.strip()]
  except OSError:
    return {}
  for row in rows:
    if row['metric'] == 'latency_capped_throughput':
      return dict(sample.ParseLabels(row['labels']), value=row['value'])
  return {}


def _WeighServerQuota(run_uri: str, stop: threading.Event) -> None:
  """Gives the run's server quota cgroup a high weight once it exists."""
  root = cpu_quota.Root()
  path = os.path.join(root or '', cpu_quota.CgroupName(run_uri, 'servers-0'))
  while root and not stop.wait(0.05):
    try:
      with open(os.path.join(path, 'cpu.shares'), 'w') as f:
        f.write(str(cpu_cgroups.HIGH_WEIGHT_V1))
      return
    except OSError:
      continue  # Not made yet (or cgroup v2: cpu.weight is not written).


def RunOnce(results_dir: str, run_uri: str, extra: List[str],
            high_weight: bool = False, repo: str = REPO) -> dict:
  load = os.getloadavg()[0]
  argv = [sys.executable, os.path.join(repo, 'pkb.py'), f'--run_uri={run_uri}',
          f'--results_dir={results_dir}'] + extra
  group = cpu_cgroups.CpuCgroup() if high_weight else None
  stop = threading.Event()
  weigher = threading.Thread(target=_WeighServerQuota, args=(run_uri, stop))
  started = time.monotonic()
  try:
    with pkb_child.Started(argv, repo) as proc:
      if group is not None:
        group.Add(proc.pid)  # Before it starts a load generator or a shard.
        weigher.start()
      _, err = proc.communicate(timeout=900)
  finally:
    stop.set()
    if weigher.is_alive():
      weigher.join()
    if group is not None:
      group.Remove()
  wall = time.monotonic() - started
  answer = _Answer(results_dir, run_uri)
  figures = ' '.join(f'{k}={answer[k]}' for k in (
      'client_busiest_thread_pct', 'client_cpu_used_pct',
      'server_throttled_pct', 'server_cpu_used_pct') if k in answer)
  if answer and answer.get('verdict') != 'confirmed':
    # Why, in the verdict's words (its first clause: the rest is figures).
    figures += f' ({answer.get("verdict_reason", "").split(";")[0]})'
  elif proc.returncode == 4 and not answer:
    figures += f' ({(err.strip().splitlines() or [""])[-1][:160]})'
  return {'rc': proc.returncode, 'wall_s': wall, 'load': load,
          'probes': answer.get('search_probes', '-'),
          'probe_s': answer.get('search_probe_seconds', '-'),
          'ops': answer.get('value'), 'verdict': answer.get('verdict', '-'),
          'limit': answer.get('limit', '-'),
          'error': (err.strip().splitlines() or [''])[-1]
                   if proc.returncode not in (0, 4) else figures}


def _Line(generator: str, split: str, i: int, r: dict) -> str:
  ops = f'{float(r["ops"]):>9,.0f}' if r['ops'] is not None else '        -'
  # Where the wall time went: the search's probes (repeats included) and
  # their seconds; the rest is start-up, preload, the hold and teardown.
  return (f'{generator:15} {split:5} #{i}  exit {r["rc"]}  '
          f'{r["wall_s"]:5.1f} s  {r["probes"]:>2} probes {r["probe_s"]:>6} s'
          f'  {ops} ops/s  {r["verdict"]:12} '
          f'{r["limit"]:13} load {r["load"]:.1f}  {r["error"]}')


def main(argv: Optional[List[str]] = None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument('--repeats', type=int, default=3)
  parser.add_argument('--memtier_path', default=None)
  parser.add_argument('--high_weight', action='store_true',
                      help='a check of the design on a shared machine (doc)')
  parser.add_argument('--sides', default=None,
                      help='what to compare instead of quota and plain: '
                      '"name=flags;name=flags", e.g. "m85=;m80=--memtier_'
                      'cap_margin=0.8"; ratios are to the second side')
  args = parser.parse_args(argv)
  if args.repeats < 1:  # The table below needs a run of each side.
    print(f'bench_first_run: --repeats={args.repeats}: give 1 or more',
          file=sys.stderr)
    return 2
  sides = _Sides(args.sides)
  generators = {'redis-benchmark': []}
  if args.memtier_path:
    generators['memtier'] = [f'--memtier_path={args.memtier_path}']
  # SIGTERM (timeout(1), a CI job's end) as Ctrl-C: RunOnce then stops its
  # pkb and the finally below removes the results, which the script's death
  # left behind with pkb running on.
  signal.signal(signal.SIGTERM, signal.default_int_handler)
  results_dir = tempfile.mkdtemp(prefix='bench-first-run-')
  runs: Dict[tuple, List[dict]] = {}
  try:
    for i in range(args.repeats):
      for generator, generator_flags in generators.items():
        for k, (split, split_flags) in enumerate(sides.items()):
          run_uri = f'b{os.getpid() % 1000:03d}{i}{k}{generator[0]}'
          repos = [f[len('--repo='):] for f in split_flags
                   if f.startswith('--repo=')]
          flags = [f for f in split_flags if not f.startswith('--repo=')]
          result = RunOnce(results_dir, run_uri, generator_flags + flags,
                           args.high_weight, repos[-1] if repos else REPO)
          runs.setdefault((generator, split), []).append(result)
          print(_Line(generator, split, i, result), flush=True)
  except KeyboardInterrupt:
    print('bench_first_run: interrupted; its pkb run was stopped and the '
          'results removed', file=sys.stderr)
    return 130
  finally:
    shutil.rmtree(results_dir, ignore_errors=True)
  print()
  first, second = list(sides)[:2]
  for generator in generators:
    a, b = runs[(generator, first)], runs[(generator, second)]
    ratio = (statistics.median(r['wall_s'] for r in a) /
             statistics.median(r['wall_s'] for r in b))
    confirmed = ', '.join(
        f'{s} {sum(r["verdict"] == "confirmed" for r in runs[(generator, s)])}'
        f'/{len(runs[(generator, s)])}' for s in sides)
    print(f'{generator}: wall time {first}/{second} {ratio:.2f}x (median '
          f'{statistics.median(r["wall_s"] for r in a):.1f} s vs '
          f'{statistics.median(r["wall_s"] for r in b):.1f} s); confirmed: '
          f'{confirmed}')
  # pkb's 4 is an answer it could not confirm: a measured run, counted.
  failed = sum(r['rc'] not in (0, 4) for rs in runs.values() for r in rs)
  if failed:
    print(f'bench_first_run: {failed} of {sum(map(len, runs.values()))} '
          'runs failed (their lines say why); the wall times above count '
          'them', file=sys.stderr)
    return 1
  return 0


if __name__ == '__main__':
  sys.exit(main())
