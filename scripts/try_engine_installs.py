#!/usr/bin/env python3
"""Runs the Dragonfly and KeyDB Debian install scripts in a fresh Debian 12.

  sudo ./scripts/try_engine_installs.py     # a few minutes, root, Debian

The scripts a cloud VM runs for `--redis_engine=dragonfly` and
`--redis_engine=keydb` on a Debian/Ubuntu image (the exact text
dragonfly_server.InstallScript and keydb_server.InstallScript build for
that system), each in its own copy of a `debootstrap --variant=minbase
bookworm` root made as scripts/bench_install.py makes it (the product's
shell scripts shipped into it), traced (`set -x`, install.sh's bash too):

  dragonfly            Debian's redis-tools and curl, then Dragonfly's
                       release .deb for this CPU, installed with apt;
  keydb                KeyDB's APT repository (its key, its source line)
                       and its keydb-server / keydb-tools packages;
  keydb 6.3.4 source   KeyDB's build dependencies from Debian, then the
                       pinned source release, built and installed;
  memtier              the client VMs' memtier-benchmark from Redis's APT
                       repository (its key, its source line, the package).

Every command each script ran is printed with its outcome; the first
failing one ends that script (as on a VM: `set -eo pipefail`), and its last
error line says why. Debian's archive is reachable from here; Dragonfly's
and KeyDB's release hosts and KeyDB's and Redis's APT repositories are not,
so those downloads are expected to fail here, and the output names them. Exit 0
when every script ran to the step it could reach; the last line is
`engine_installs ran=<n> failed_at_download=<n> failed_otherwise=<n>`.
"""

import argparse
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.parse
from typing import List, Tuple

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, _HERE)
sys.path.insert(0, os.path.dirname(_HERE))

# pylint: disable=g-import-not-at-top,wrong-import-position
from perfkitbenchmarker import venv_reexec
venv_reexec.UseRepoVenv(os.path.dirname(_HERE), __file__)
import bench_install
from perfkitbenchmarker.linux_packages import dragonfly_server
from perfkitbenchmarker.linux_packages import keydb_server
from perfkitbenchmarker.linux_packages import package_commands

STEP_TIMEOUT_S = 1800
# Hosts the scripts download from that only the projects themselves serve
# (no package registry reachable here carries these builds).
OUTSIDE_HOSTS = tuple(sorted({urllib.parse.urlparse(url).hostname for url in (
    dragonfly_server.RELEASE_URL, keydb_server.APT_URL,
    keydb_server.SOURCE_URL, package_commands.REDIS_APT_URL)}))


# The install paths, in the order they run (--only names them).
NAMES = ('dragonfly', 'keydb', f'keydb {keydb_server.SOURCE_RELEASE} source',
         'memtier')


def Scripts(info, machine: str) -> List[Tuple[str, str]]:
  return list(zip(NAMES, [
      dragonfly_server.InstallScript(info, machine),
      keydb_server.InstallScript(info),
      keydb_server.InstallScript(info, keydb_server.SOURCE_RELEASE),
      # What every client VM runs (the T2D preset's Debian clients too).
      package_commands.MemtierInstall(info),
  ]))


def Commands(trace: str) -> List[str]:
  """The top-level commands the trace shows, in order (a bare variable
  assignment such as DEBIAN_FRONTEND=noninteractive is part of the next)."""
  return [line[2:] for line in trace.splitlines() if _IsCommand(line)]


def _IsCommand(line: str) -> bool:
  return line.startswith('+ ') and not re.fullmatch(r'\+ \w+=\S*', line)


def Outcome(rc: int, trace: str) -> Tuple[str, str]:
  """(failing command or '', its error line) of one traced run: the last
  line a command wrote to stderr and the command traced before it (an EXIT
  trap's cleanup may be traced after it)."""
  if rc == 0:
    return '', ''
  command, why = '?', f'exit {rc}'
  last = '?'
  for line in trace.splitlines():
    if _IsCommand(line):
      last = line[2:]
    elif line.strip() and not line.startswith('+'):
      command, why = last, line.strip()
  return command, why


def IsOutsideDownload(command: str) -> bool:
  return any(host in command for host in OUTSIDE_HOSTS) or (
      'apt-get' in command and ('keydb' in command or 'memtier' in command))


def RunScript(base: str, work: str, name: str, script: str) -> str:
  root = os.path.join(work, re.sub(r'\W+', '_', name))
  subprocess.run(['cp', '-a', base, root], check=True)
  log = os.path.join(work, f'{os.path.basename(root)}.log')
  start = time.monotonic()
  try:
    proc = subprocess.run(bench_install.InRoot(root, script, trace=True),
                          capture_output=True, text=True, check=False,
                          timeout=STEP_TIMEOUT_S)
    with open(log, 'w') as f:
      f.write(proc.stdout + proc.stderr)
    trace = proc.stderr
    failed, why = Outcome(proc.returncode, trace)
    print(f'{name}: {len(Commands(trace))} commands in '
          f'{time.monotonic() - start:.0f} s (log {log})')
    mark = 'ok'
    for command in Commands(trace):
      if failed and command == failed:
        mark = 'FAILED'
      elif mark != 'ok':
        mark = 'after'  # Cleanup after the failure (a trap, an || branch).
      print(f'  {mark:<6} {command[:200]}')
    if not failed:
      return 'ran'
    kind = ('failed_at_download' if IsOutsideDownload(failed) else
            'failed_otherwise')
    print(f'  -> stopped at: {failed[:200]}\n     because: {why[:200]}')
    return kind
  finally:
    shutil.rmtree(root, ignore_errors=True)


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument('--work_dir', default=None)
  parser.add_argument('--only', action='append', default=[],
                      help='run only this path (dragonfly, keydb, ...); '
                      'repeatable')
  args = parser.parse_args(argv)
  unknown = [name for name in args.only if name not in NAMES]
  if unknown:
    # Before the minutes of debootstrap that would run none of them.
    print(f'try_engine_installs: --only={unknown[0]!r} is no install path; '
          f'the paths are {", ".join(repr(n) for n in NAMES)}.',
          file=sys.stderr)
    return 2
  problem = bench_install.WorkDirProblem(args.work_dir)
  if problem:
    print(f'try_engine_installs: --work_dir={args.work_dir}: {problem}; '
          'nothing was run.', file=sys.stderr)
    return 2
  if os.geteuid() != 0:
    print('try_engine_installs: needs root (debootstrap and chroot).',
          file=sys.stderr)
    return 1
  for tool in ('debootstrap', 'chroot'):
    if not shutil.which(tool):
      print(f'try_engine_installs: {tool} not found; apt-get install '
            'debootstrap.', file=sys.stderr)
      return 1
  work = tempfile.mkdtemp(prefix='pkb-engine-installs-', dir=args.work_dir)
  counts = {'ran': 0, 'failed_at_download': 0, 'failed_otherwise': 0}
  try:
    start = time.monotonic()
    base = bench_install.MakeBase(work, bench_install.DebianMirror())
    print(f'fresh {bench_install.SUITE} root in '
          f'{time.monotonic() - start:.0f} s', flush=True)
    info = bench_install.Probe(base)
    for name, script in Scripts(info, platform.machine()):
      if not args.only or name in args.only:
        counts[RunScript(base, work, name, script)] += 1
  except (bench_install.BenchError, subprocess.SubprocessError) as e:
    print(f'try_engine_installs: {e}', file=sys.stderr)
    return 1
  finally:
    shutil.rmtree(os.path.join(work, 'base'), ignore_errors=True)
  print('engine_installs ' + ' '.join(f'{k}={v}' for k, v in counts.items()))
  return 1 if counts['failed_otherwise'] else 0


if __name__ == '__main__':
  sys.exit(main())
