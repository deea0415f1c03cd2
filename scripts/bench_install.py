#!/usr/bin/env python3
"""Times the install phase on a fresh Debian 12: ours against upstream PKB's.

  sudo ./scripts/bench_install.py          # about 6-10 min, root, Debian
  sudo ./scripts/bench_install.py --out=docs/data/install.json
      # also writes the timings: docs/search.md's install table is rendered
      # from that file (scripts/search_doc_tables.py)

What a cloud VM does in the study's install phase, run here in fresh
`debootstrap --variant=minbase bookworm` roots (one copy per path, so every
path starts from the same empty system, and from the Debian mirror this
machine's apt already uses):

  ours, server VM   the exact root script package_commands.RedisServerInstall
                    builds for that system (Debian's redis-server/redis-tools);
  ours, client VM   package_commands.RedisToolsInstall and the C compiler
                    argv_secret needs (a cloud image has none);
  PKB, server VM    upstream PKB's redis_server path: build_tools
                    (build-essential git libtool autoconf automake) and
                    tcl-dev, then Redis from source and `make` with one job,
                    as PKB runs it. PKB clones the Redis repository; here
                    the source is Debian's source package of the same Redis
                    release line (7.0), fetched with `apt-get source`;
  PKB, client VM    PKB's memtier build dependencies (build_tools and its
                    APT_PACKAGES).

Not measured here, and why: memtier from Redis's APT repository (ours) and
PKB's memtier build from its git repository both need hosts this machine
cannot reach; PKB's `git clone` of Redis likewise (the source package stands
in for it). The output says so next to the totals.

Each step runs in `chroot` with a policy-rc.d that keeps services from
starting (a cloud VM would start Debian's redis-server; our script stops it).
Servers and clients install at the same time in both tools, so each path's
install phase is the slower of its two VMs; the last line is
`install_ours_s=<s> install_pkb_s=<s> ratio_pct=<ours/PKB %>`.
The run needs root (chroot, debootstrap) and about 1.5 GB of disk.
"""

import argparse
import dataclasses
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from typing import List, Optional, Tuple

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(_HERE))

# pylint: disable=g-import-not-at-top,wrong-import-position
from perfkitbenchmarker import venv_reexec
venv_reexec.UseRepoVenv(os.path.dirname(_HERE), __file__)

from perfkitbenchmarker import input_checks
from perfkitbenchmarker import shell_scripts
from perfkitbenchmarker import system_info
from perfkitbenchmarker.linux_packages import argv_secret
from perfkitbenchmarker.linux_packages import package_commands

SUITE = 'bookworm'
STEP_TIMEOUT_S = 1800
# Where a root holds the product's shell scripts, which our install steps
# run (a VM holds them in its scratch directory: shell_scripts).
SCRIPTS_IN_ROOT = shell_scripts.ShippedDir('/root')
# Upstream PKB's package lists (linux_packages/build_tools.py AptInstall,
# redis_server.py AptInstall, memtier.py APT_PACKAGES), read from its source.
PKB_BUILD_TOOLS = ['build-essential', 'git', 'libtool', 'autoconf', 'automake']
PKB_REDIS_PACKAGES = ['tcl-dev']
PKB_MEMTIER_PACKAGES = ('build-essential autoconf automake libpcre3-dev '
                        'libevent-dev pkg-config zlib1g-dev libssl-dev').split()
NOT_MEASURED = (
    'not measured here: memtier from Redis\'s APT repository (ours, one '
    'small package) and PKB\'s git clones and memtier build (its git '
    'repositories); those hosts are out of reach')


class BenchError(Exception):
  """One line for the user; the bench exits 1."""


@dataclasses.dataclass(frozen=True)
class Step:
  name: str
  script: str


@dataclasses.dataclass
class Timed:
  path: str
  step: str
  seconds: float


def DebianMirror(apt_dir: str = '/etc/apt') -> str:
  """The first Debian archive URI this machine's apt uses for `SUITE`."""
  candidates = []
  sources_d = os.path.join(apt_dir, 'sources.list.d')
  for name in sorted(os.listdir(sources_d)) if os.path.isdir(sources_d) else []:
    if name.endswith('.sources'):
      candidates.append(os.path.join(sources_d, name))
  legacy = os.path.join(apt_dir, 'sources.list')
  for path in candidates + [legacy]:
    if not os.path.exists(path):
      continue
    with open(path) as f:
      text = f.read()
    mirror = _MirrorIn(text)
    if mirror:
      return mirror
  raise BenchError(f'no Debian {SUITE} source in {apt_dir}; this bench runs '
                   'on a Debian 12 machine with a working apt.')


def _MirrorIn(text: str) -> Optional[str]:
  """deb822 stanzas or one-line entries: a deb URI whose suite is SUITE."""
  for stanza in text.split('\n\n'):
    fields = {}
    for line in stanza.splitlines():
      key, sep, value = line.partition(':')
      if sep and not line.startswith((' ', '#')):
        fields[key.strip()] = value.split()
    if ('deb' in fields.get('Types', []) and
        SUITE in fields.get('Suites', []) and fields.get('URIs')):
      return fields['URIs'][0]
  for line in text.splitlines():
    words = line.split()
    if len(words) >= 3 and words[0] == 'deb':
      rest = [w for w in words[1:] if not w.startswith('[')]
      if len(rest) >= 2 and rest[1] == SUITE:
        return rest[0]
  return None


def _Run(argv: List[str], log_path: str, timeout: float = STEP_TIMEOUT_S
         ) -> float:
  start = time.monotonic()
  with open(log_path, 'ab') as log:
    try:
      rc = subprocess.run(argv, stdout=log, stderr=subprocess.STDOUT,
                          timeout=timeout, check=False).returncode
    except subprocess.TimeoutExpired as e:
      raise BenchError(f'{argv[0]} timed out after {timeout:.0f} s; see '
                       f'{log_path}') from e
  if rc != 0:
    with open(log_path, errors='replace') as f:
      tail = f.read().strip().splitlines()[-1:] or ['']
    raise BenchError(f'{" ".join(argv[:3])}... exited {rc}: {tail[0]} '
                     f'(log {log_path})')
  return time.monotonic() - start


def MakeBase(work: str, mirror: str) -> str:
  base = os.path.join(work, 'base')
  _Run(['debootstrap', '--variant=minbase', SUITE, base, mirror],
       os.path.join(work, 'debootstrap.log'))
  policy = os.path.join(base, 'usr', 'sbin', 'policy-rc.d')
  with open(policy, 'w') as f:
    f.write('#!/bin/sh\nexit 101\n')  # No service starts inside the chroot.
  os.chmod(policy, 0o755)
  shutil.copy('/etc/resolv.conf', os.path.join(base, 'etc', 'resolv.conf'))
  subprocess.run(
      ['bash', '-c', shell_scripts.ShipCommand(base + SCRIPTS_IN_ROOT)],
      input=shell_scripts.Bundle(), text=True, check=True, timeout=60)
  with open(os.path.join(base, 'etc', 'apt', 'sources.list'), 'a') as f:
    # PKB's Redis build takes its source from here (see the docstring).
    f.write(f'deb-src {mirror} {SUITE} main\n')
  return base


def Probe(root: str) -> system_info.SystemInfo:
  out = subprocess.run(['chroot', root, '/bin/sh', '-c',
                        system_info.PROBE_COMMAND], capture_output=True,
                       text=True, check=True).stdout
  return system_info.SystemInfo.Parse(out)


def InRoot(root: str, script: str, trace: bool = False) -> List[str]:
  """argv running `script` with bash in the chroot `root`, the shipped
  scripts at hand; `trace`: every bash traces (`set -x`), the scripts'
  own too (they run in a bash of their own, which reads SHELLOPTS)."""
  env = [f'{shell_scripts.ENV}={SCRIPTS_IN_ROOT}']
  return (['chroot', root, '/usr/bin/env'] + env +
          (['SHELLOPTS=xtrace'] if trace else []) + ['/bin/bash', '-c', script])


def Paths(info: system_info.SystemInfo
          ) -> List[Tuple[str, List[Step]]]:
  """Each VM kind's install, as the two tools run it (module docstring)."""
  return [
      ('ours_server', [
          Step('redis-server (Debian package)',
               package_commands.RedisServerInstall(info, 'distro'))]),
      ('ours_client', [
          Step('redis-tools', package_commands.RedisToolsInstall(info)),
          Step('C compiler for argv_secret',
               argv_secret.CompilerInstall(info))]),
      ('pkb_server', [
          Step('build tools + tcl-dev',
               _AptInstall(PKB_BUILD_TOOLS + PKB_REDIS_PACKAGES)),
          # The upstream tarball inside Debian's source package, unpatched
          # (Debian's patches switch to the system jemalloc; PKB builds the
          # bundled one).
          Step('Redis source', 'set -e\nmkdir -p /opt/pkb && cd /opt/pkb\n'
               'apt-get -q source --download-only redis\n'
               'tar xzf redis_*.orig.tar.gz\n'),
          Step('make (one job)', 'set -e\ncd /opt/pkb/redis-*/\nmake\n'
               'test -x src/redis-server\n')]),
      ('pkb_client', [
          Step('build tools + memtier build deps',
               _AptInstall(PKB_BUILD_TOOLS + PKB_MEMTIER_PACKAGES))]),
  ]


def _AptInstall(packages: List[str]) -> str:
  """PKB's packages, installed as ours are (the same apt-get options)."""
  step = package_commands.Step
  return package_commands.Script([step('apt', 'update'),
                                  step('apt', 'install', *packages)])


def RunPath(base: str, work: str, path: str, steps: List[Step]
            ) -> List[Timed]:
  root = os.path.join(work, path)
  _Run(['cp', '-a', base, root], os.path.join(work, 'copy.log'))
  timed = []
  try:
    for step in steps:
      seconds = _Run(InRoot(root, step.script),
                     os.path.join(work, f'{path}.log'))
      timed.append(Timed(path, step.name, seconds))
      print(f'  {path:<12} {step.name:<34} {seconds:7.1f} s', flush=True)
  finally:
    shutil.rmtree(root, ignore_errors=True)
  return timed


def WorkDirProblem(path: Optional[str]) -> Optional[str]:
  """Why --work_dir cannot take the roots, or None: checked before the
  minutes of debootstrap, where its mkdtemp ended in a traceback."""
  if path is None:
    return None
  if not os.path.isdir(path):
    return ('not a directory' if os.path.lexists(path) else
            'there is no such directory')
  if not os.access(path, os.W_OK | os.X_OK):
    return 'a directory this user cannot write'
  return None


def Summary(timed: List[Timed]) -> Tuple[float, float]:
  def Total(path):
    return sum(t.seconds for t in timed if t.path == path)
  ours = max(Total('ours_server'), Total('ours_client'))
  pkb = max(Total('pkb_server'), Total('pkb_client'))
  return ours, pkb


def Conditions(load_before: Tuple[float, ...]) -> str:
  """The machine's state beside the figures (docs/search.md prints it)."""
  load_after = os.getloadavg()
  return (f'{os.cpu_count()} cores, 1-min load average {load_before[0]:.1f} '
          f'before and {load_after[0]:.1f} after the run')


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument('--out', help='write the timings as JSON here')
  parser.add_argument('--work_dir', default=None,
                      help='where the roots go (default: a new temp dir)')
  args = parser.parse_args(argv)
  problem = WorkDirProblem(args.work_dir)
  if problem:
    print(f'bench_install: --work_dir={args.work_dir}: {problem}; nothing '
          'was run.', file=sys.stderr)
    return 2
  # Written after the minutes of installs: a file that cannot be is
  # refused now, not found as a traceback at the end.
  if args.out:
    problem = input_checks.FileProblem(args.out)
    if problem:
      print(f'bench_install: --out={args.out}: {problem}; nothing was run.',
            file=sys.stderr)
      return 2
  try:
    if os.geteuid() != 0:
      raise BenchError('needs root (debootstrap and chroot); run it with '
                       'sudo.')
    for tool in ('debootstrap', 'chroot'):
      if not shutil.which(tool):
        raise BenchError(f'{tool} not found; apt-get install debootstrap.')
    mirror = DebianMirror()
    load_before = os.getloadavg()
    work = tempfile.mkdtemp(prefix='pkb-bench-install-', dir=args.work_dir)
    done = False
    try:
      start = time.monotonic()
      base = MakeBase(work, mirror)
      print(f'fresh {SUITE} root in {time.monotonic() - start:.0f} s '
            '(not part of any path)', flush=True)
      info = Probe(base)
      timed = []
      for path, steps in Paths(info):
        timed += RunPath(base, work, path, steps)
      done = True
    finally:
      # The logs stay when a step failed (the error names them).
      shutil.rmtree(os.path.join(work, 'base'), ignore_errors=True)
      if done:
        shutil.rmtree(work, ignore_errors=True)
  except BenchError as e:
    print(f'bench_install: {e}', file=sys.stderr)
    return 1
  ours, pkb = Summary(timed)
  print(f'install phase (servers and clients at once, the slower VM): '
        f'ours {ours:.0f} s, PKB {pkb:.0f} s; {NOT_MEASURED}.')
  if args.out:
    with open(args.out, 'w') as f:
      json.dump({'suite': SUITE, 'date': time.strftime('%Y-%m-%d'),
                 'steps': [dataclasses.asdict(t) for t in timed],
                 'install_ours_s': round(ours, 1),
                 'install_pkb_s': round(pkb, 1),
                 'not_measured': NOT_MEASURED,
                 'raw_out': os.path.relpath(
                     os.path.abspath(args.out),
                     os.path.dirname(_HERE)),
                 'conditions': Conditions(load_before)}, f, indent=1)
      f.write('\n')
  print(f'install_ours_s={ours:.1f} install_pkb_s={pkb:.1f} '
        f'ratio_pct={ours / pkb * 100:.1f}')
  return 0


if __name__ == '__main__':
  sys.exit(main())
