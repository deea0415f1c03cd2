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

For each study it reads the probes' samples and their kept raw files
(evidence.py): a probe's wall time is the time between its samples and the
previous probe's (everything one probe costs: start, wait, collect, CPU and
interference figures, the search, the samples); the tool's lifetime is from
the first of its processes starting to the last ending (the `rc.N` files:
each process's own start and end, taken on the client); the nominal
duration is what the probe asked for (memtier's --test-time; the
`--duration` redis-benchmark's request count was sized for). It prints,
for memtier and redis-benchmark alike:

  harness   wall - tool lifetime: the harness's own cost per probe
  overrun   tool lifetime - nominal: what the tool itself adds (memtier's
            start-up and its idle last second; redis-benchmark's request
            count planned from the last rate)

and last a line `local_harness_s=<x> ssh_harness_s=<y> local_overrun_s=<u>
ssh_overrun_s=<v> local_ratio=<a> ssh_ratio=<b>` (means; ratio = wall /
nominal). The first probe has no previous one and is left out.

The figures depend on the machine: a busy one (other jobs on the same
cores) pays more per process start and per SSH round trip; say which it
was when quoting them.
"""

import argparse
import json
import os
import shutil
import signal
import statistics
import sys
import tempfile
from typing import Dict, List, Optional, Tuple

_HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(_HERE)
sys.path.insert(0, REPO)
from perfkitbenchmarker import venv_reexec  # pylint: disable=g-import-not-at-top
venv_reexec.UseRepoVenv(REPO, __file__)

# pylint: disable=g-import-not-at-top,wrong-import-position
from perfkitbenchmarker import evidence
from perfkitbenchmarker.publishers import bigquery_schema
from scripts import loopback_sshd
from scripts import pkb_child


def ProbeTimes(results_json: str, nominal_s: Optional[float] = None
               ) -> List[Dict[str, float]]:
  """[{'wall_s', 'lifetime_s', 'nominal_s'}] of every probe after the
  first, in order: its wall time, its tool's lifetime (from its raw files;
  None without them) and its nominal duration (memtier's test time, else
  `nominal_s`, else the samples' probe_duration_s)."""
  run_dir = os.path.dirname(results_json)
  probes = []
  with open(results_json) as f:
    for line in f:
      if not line.strip():
        continue
      row = json.loads(line)
      if row['metric'] != 'throughput':
        continue
      labels = bigquery_schema.RowLabels(row)
      lifetime, test_time = ToolLifetime(run_dir,
                                         labels.get(evidence.METADATA_KEY))
      nominal = test_time or nominal_s or float(labels['probe_duration_s'])
      probes.append((float(row['timestamp']), lifetime, nominal))
  return [{'wall_s': t1 - t0, 'lifetime_s': life, 'nominal_s': nominal}
          for (t0, _, _), (t1, life, nominal) in zip(probes, probes[1:])]


def ToolLifetime(run_dir: str, raw_output: Optional[str]
                 ) -> Tuple[Optional[float], Optional[float]]:
  """(seconds from the first of a probe's tool processes starting to the
  last ending, on every client VM; memtier's --test-time) from its raw
  files; (None, None) without them."""
  if not raw_output:
    return None, None
  starts, ends, test_time = [], [], None
  for rel in raw_output.split(','):
    parts = evidence.Read(run_dir, rel)
    for key, text in parts.items():
      if key.startswith('rc.'):
        _, start, end = text.split()[:3]
        starts.append(float(start))
        ends.append(float(end))
    manifest = json.loads(parts.get(evidence.MANIFEST) or '{}')
    test_time = manifest.get('test_time_s') or test_time
  if not starts:
    return None, test_time
  return max(ends) - min(starts), test_time


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
  returncode, err = pkb_child.Run(argv, REPO, 1200)
  if returncode != 0:
    raise SystemExit(f'{name} study failed (exit {returncode}): '
                     f'{err.strip().splitlines()[-1:]}')
  return ProbeTimes(os.path.join(results_dir, run_uri,
                                 'perfkitbenchmarker_results.json'), duration)


def Report(name: str, times: List[Dict[str, float]]
           ) -> Dict[str, Optional[float]]:
  """Prints one study's line; returns its means (harness_s, overrun_s,
  ratio)."""
  timed = [t for t in times if t['lifetime_s'] is not None]
  if not timed:
    print(f'{name}: fewer than two probes with raw files ran; no figure')
    return {'harness_s': None, 'overrun_s': None, 'ratio': None}
  harness = [t['wall_s'] - t['lifetime_s'] for t in timed]
  overrun = [t['lifetime_s'] - t['nominal_s'] for t in timed]
  wall = statistics.mean(t['wall_s'] for t in timed)
  nominal = statistics.mean(t['nominal_s'] for t in timed)
  figures = {'harness_s': statistics.mean(harness),
             'overrun_s': statistics.mean(overrun), 'ratio': wall / nominal}
  print(f'{name:5}  {len(timed)} probes  wall {wall:5.2f} s  tool '
        f'{statistics.mean(t["lifetime_s"] for t in timed):5.2f} s  nominal '
        f'{nominal:5.2f} s  harness {figures["harness_s"]:5.2f} s/probe '
        f'(min {min(harness):.2f}, max {max(harness):.2f})  overrun '
        f'{figures["overrun_s"]:5.2f} s/probe (min {min(overrun):.2f}, max '
        f'{max(overrun):.2f})  ratio {figures["ratio"]:4.2f}')
  return figures


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
  refusal = loopback_sshd.BenchRefusal('bench_probe_overhead', args.host)
  if refusal:
    print(refusal, file=sys.stderr)
    return 2
  # SIGTERM (timeout(1), a CI job's end) as Ctrl-C: RunStudy then stops its
  # pkb and the finally below the sshd and the directory (its keys), which
  # the script's death left behind, the sshd listening and pkb running on.
  signal.signal(signal.SIGTERM, signal.default_int_handler)
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
  except KeyboardInterrupt:
    print('bench_probe_overhead: interrupted; its pkb run and sshd were '
          'stopped and its files removed', file=sys.stderr)
    return 130
  finally:
    if server is not None:
      server.Stop()
    shutil.rmtree(work, ignore_errors=True)
  print(f'{args.duration:g} s probes; load average now '
        f'{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores')
  figures = {'local': Report('local', local), 'ssh': Report('ssh', ssh)}

  def Text(x):
    return 'n/a' if x is None else f'{x:.2f}'

  print(' '.join(f'{study}_{key}={Text(values[key])}'
                 for key in ('harness_s', 'overrun_s', 'ratio')
                 for study, values in figures.items()))
  return 0

if __name__ == '__main__':
  sys.exit(main())
