#!/usr/bin/env python3
"""The attribution matrix with whatever load generator is given.

  sudo ./scripts/bench_attribution.py                       # redis-benchmark (or memtier on PATH)
  sudo ./scripts/bench_attribution.py --memtier_path=/path/to/memtier_benchmark
  sudo ./scripts/bench_attribution.py --cases=server_quota,client_hog --ssh

Runs each case of scripts/attribution_cases.py as a real staged ./pkb.py
run on Local (and, with --ssh, over a loopback sshd as a Static run): the
server held to 20 % of a CPU by a cgroup quota, the client held to 20 %, a
busy loop on the client's cores, a quiet run, and a client with a thread
of its own on a CPU all the time. That last case needs a load generator
that spins: the tests give it the memtier stand-in's spinning thread; a
real tool has none, so here it is the same run at pipeline 64 (the
client's parsing work grows with it) and prints whatever limit that gives.

Prints one line per case: the case, the answer's limit, its verdict flags,
each probe's limit and the key figures (on-CPU, wait, throttled and
foreign shares, in %). Needs root (the cgroups; a writable v1 `cpu` or v2
controller) and the tools the run uses. Takes about 15-40 s a case.
"""

import argparse
import json
import os
import shutil
import sys
import tempfile

_HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(_HERE)
sys.path.insert(0, REPO)

# pylint: disable=g-import-not-at-top,wrong-import-position
from perfkitbenchmarker import venv_reexec
venv_reexec.UseRepoVenv(REPO, __file__)

from scripts import attribution_cases
from scripts import cpu_cgroups
from scripts import loopback_sshd


def _Args(argv):
  parser = argparse.ArgumentParser(
      description='Runs the attribution matrix (scripts/attribution_cases.py)'
      ' and prints one line per case: case, limit, verdict, figures.')
  parser.add_argument('--memtier_path', default=None,
                      help='a real memtier_benchmark to run the cases with '
                      '(default: what ./pkb.py picks: memtier on PATH, else '
                      'redis-benchmark)')
  parser.add_argument('--cases', default=','.join(attribution_cases.CASES),
                      help='comma-separated cases (default: all): ' +
                      ', '.join(attribution_cases.CASES))
  parser.add_argument('--ssh', action='store_true',
                      help='also run server_quota and client_hog over a '
                      'loopback sshd (a Static run)')
  parser.add_argument('--duration', type=int, default=1,
                      help='probe seconds (default 1)')
  parser.add_argument('--keep', action='store_true',
                      help='keep the runs\' results directory and print it')
  args = parser.parse_args(argv)
  cases = [c.strip() for c in args.cases.split(',') if c.strip()]
  unknown = [c for c in cases if c not in attribution_cases.CASES]
  if unknown:
    parser.error(f'unknown case {unknown[0]!r}; one of '
                 f'{", ".join(attribution_cases.CASES)}')
  if args.memtier_path and not os.access(args.memtier_path, os.X_OK):
    parser.error(f'--memtier_path {args.memtier_path} is not an executable')
  if not 1 <= args.duration <= 60:
    parser.error('--duration is 1..60 seconds')
  args.cases = cases
  return args


def _Extra(args, case):
  extra = [f'--memtier_run_duration={args.duration}']
  if args.memtier_path:
    extra.append(f'--memtier_path={args.memtier_path}')
  if case == 'client_spin':
    extra.append('--memtier_pipeline=64')
  return extra


def Main(argv=None) -> int:
  args = _Args(argv)
  if not cpu_cgroups.Available():
    print('bench_attribution: needs root and a writable CPU cgroup '
          'controller (v1 cpu or v2 with cpu delegated)', file=sys.stderr)
    return 2
  results = tempfile.mkdtemp(prefix='pkb-attribution-')
  print(f'# load generator: {args.memtier_path or "default (pkb picks)"}; '
        f'{args.duration} s probes; load average '
        f'{" ".join(f"{x:.2f}" for x in os.getloadavg())}')
  failed = 0
  try:
    runs = [('local', c) for c in args.cases]
    if args.ssh:
      runs += [('ssh', c) for c in args.cases
               if c in ('server_quota', 'client_hog')]
    server = None
    for where, case in runs:
      extra = _Extra(args, case)
      client_pids = ()
      if where == 'ssh':
        if server is None:
          if not loopback_sshd.Available():
            print('# ssh: openssh-server not available; skipped')
            break
          server = loopback_sshd.Sshd(tempfile.mkdtemp(
              prefix='sshd-', dir=results)).Start()
        machine = {'ip_address': server.host, 'user_name': server.user,
                   'keyfile_path': server.user_key, 'ssh_port': server.port}
        static = os.path.join(results, 'static.json')
        with open(static, 'w') as f:
          json.dump([machine, machine], f)
        extra.append(f'--static_vm_file={static}')
        client_pids = (server.pid,)
      result = attribution_cases.RunCase(
          case, os.path.join(results, f'{where}-{case}'), extra,
          client_pids=client_pids)
      label = f'{where}/{result.Line()}'
      if not result.probes:
        failed += 1
        tail = (result.stderr.strip().splitlines() or ['no output'])[-1]
        label += f'  (no probes: exit {result.returncode}: {tail})'
      print(label, flush=True)
    if server is not None:
      server.Stop()
  finally:
    if args.keep:
      print(f'# results kept in {results}')
    else:
      shutil.rmtree(results, ignore_errors=True)
  return 1 if failed else 0


if __name__ == '__main__':
  sys.exit(Main())
