#!/usr/bin/env python3
"""What a probe costs beyond the load it runs: Local, and over SSH.

  sudo ./scripts/bench_probe_overhead.py              # about 2-4 min, root
  ./scripts/bench_probe_overhead.py --probes=8 --duration=2

Runs the same short study twice, side by side in one invocation: `./pkb.py`
on Local (the default cloud), and `./pkb.py --static_vm_file=...` against a
real sshd this script starts on a loopback address (127.0.0.x, as root:
the two "machines" of the Static run are this machine reached over SSH,
exactly as a cloud VM is), which it stops at the end. Both use the load
generator this machine has (redis-benchmark; memtier_benchmark when on
PATH) with `--duration` second probes.

For each study it reads the probes' samples: the wall time of a probe is
the time between its samples and the previous probe's (everything the
harness does for one probe: start, wait, collect, CPU and interference
figures, the search, the samples), and the probe's duration is its samples'
`probe_duration_s` (how long the load ran). It prints the means, their
ratio, and the overhead per probe (wall - duration) in seconds, and last a
line `local_ratio=<x> ssh_ratio=<y>` (mean wall / mean duration). The first
probe has no previous one and is left out.

The figures depend on the machine: a busy one (other jobs on the same
cores) pays more per process start and per SSH round trip; say which it
was when quoting them.
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from typing import Dict, List, Optional

_HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(_HERE)
sys.path.insert(0, REPO)

# pylint: disable=g-import-not-at-top,wrong-import-position
from scripts import loopback_sshd


def _Labels(row: dict) -> Dict[str, str]:
  if 'metadata' in row:
    return {k: str(v) for k, v in row['metadata'].items()}
  labels = {}
  for item in row.get('labels', '').split('|,|'):
    key, _, value = item.strip('|').partition(':')
    labels[key] = value
  return labels


def ProbeTimes(results_json: str) -> List[Dict[str, float]]:
  """[{'wall_s', 'duration_s'}] of every probe after the first, in order."""
  probes = []
  with open(results_json) as f:
    for line in f:
      if not line.strip():
        continue
      row = json.loads(line)
      if row['metric'] != 'throughput':
        continue
      labels = _Labels(row)
      probes.append((float(row['timestamp']),
                     float(labels['probe_duration_s'])))
  return [{'wall_s': t1 - t0, 'duration_s': d1}
          for (t0, _), (t1, d1) in zip(probes, probes[1:])]


def RunStudy(name: str, results_dir: str, duration: float, probes: int,
             extra: List[str]) -> List[Dict[str, float]]:
  run_uri = f'po{name[:1]}{os.getpid() % 100000}'
  argv = [os.path.join(REPO, '.venv', 'bin', 'python'),
          os.path.join(REPO, 'pkb.py'), f'--run_uri={run_uri}',
          f'--results_dir={results_dir}',
          f'--memtier_run_duration={duration:g}',
          f'--memtier_max_probes={probes}',
          # The study, not the answer, is what is timed: a cap a busy machine
          # cannot fail keeps every probe a search probe.
          '--memtier_latency_cap=50', '--memtier_key_maximum=20000',
          # Whether the answer is confirmed is beside the point here.
          '--accept_unconfirmed',
          '--timeout_minutes=15', *extra]
  done = subprocess.run(argv, capture_output=True, text=True, cwd=REPO,
                        timeout=1200, check=False)
  if done.returncode != 0:
    raise SystemExit(f'{name} study failed (exit {done.returncode}): '
                     f'{done.stderr.strip().splitlines()[-1:]}')
  return ProbeTimes(os.path.join(results_dir, run_uri,
                                 'perfkitbenchmarker_results.json'))


def Report(name: str, times: List[Dict[str, float]]) -> Optional[float]:
  if not times:
    print(f'{name}: fewer than two probes ran; no figure')
    return None
  wall = statistics.mean(t['wall_s'] for t in times)
  duration = statistics.mean(t['duration_s'] for t in times)
  overhead = statistics.mean(t['wall_s'] - t['duration_s'] for t in times)
  ratio = wall / duration
  print(f'{name:5}  {len(times)} probes  mean wall {wall:6.2f} s  mean '
        f'duration {duration:5.2f} s  ratio {ratio:5.2f}  overhead '
        f'{overhead:5.2f} s/probe (min {min(t["wall_s"] - t["duration_s"] for t in times):.2f}, '
        f'max {max(t["wall_s"] - t["duration_s"] for t in times):.2f})')
  return ratio


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  parser.add_argument('--duration', type=float, default=2.0,
                      help='seconds per probe (--memtier_run_duration)')
  parser.add_argument('--probes', type=int, default=8,
                      help='probe budget per study (--memtier_max_probes)')
  parser.add_argument('--host', default='127.0.0.2',
                      help='loopback address the sshd listens on')
  parser.add_argument('--memtier_path', default=None,
                      help='memtier_benchmark to drive both studies with '
                      '(fixed-length probes); default: what pkb.py finds')
  args = parser.parse_args(argv)
  if os.geteuid() != 0:
    print('bench_probe_overhead needs root (it runs its own sshd and logs '
          'in to it as root): sudo ./scripts/bench_probe_overhead.py',
          file=sys.stderr)
    return 2
  if not loopback_sshd.Available():
    print('bench_probe_overhead needs openssh-server and ssh '
          '(./scripts/setup.sh installs them)', file=sys.stderr)
    return 2
  if not args.host.startswith('127.'):
    print(f'--host={args.host} is not a loopback address', file=sys.stderr)
    return 2
  work = tempfile.mkdtemp(prefix='pkb-probe-overhead-')
  server = None
  try:
    tool = [f'--memtier_path={args.memtier_path}'] if args.memtier_path else []
    local = RunStudy('local', os.path.join(work, 'results'), args.duration,
                     args.probes, tool)
    server = loopback_sshd.Sshd(os.path.join(work, 'sshd'),
                                host=args.host).Start()
    machine = {'ip_address': server.host, 'user_name': server.user,
               'keyfile_path': server.user_key, 'ssh_port': server.port}
    static_file = os.path.join(work, 'static_vms.json')
    with open(static_file, 'w') as f:
      json.dump([machine, machine], f)
    ssh = RunStudy('ssh', os.path.join(work, 'results'), args.duration,
                   args.probes, tool + [f'--static_vm_file={static_file}',
                                        '--nosystem_tuning'])
  finally:
    if server is not None:
      server.Stop()
    shutil.rmtree(work, ignore_errors=True)
  print(f'{args.duration:g} s probes; load average now '
        f'{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores')
  local_ratio = Report('local', local)
  ssh_ratio = Report('ssh', ssh)

  def Text(x):
    return 'n/a' if x is None else f'{x:.2f}'

  print(f'local_ratio={Text(local_ratio)} ssh_ratio={Text(ssh_ratio)}')
  return 0


if __name__ == '__main__':
  sys.exit(main())
