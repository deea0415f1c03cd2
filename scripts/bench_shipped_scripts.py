#!/usr/bin/env python3
"""What one command running a shipped script costs: sent as text, or run by
path from the VM's checked copy.

  sudo ./scripts/bench_shipped_scripts.py             # about a minute, root
  ./scripts/bench_shipped_scripts.py --rounds=100 --no-ssh

Times, side by side and interleaved (round after round, so a machine
growing busier weighs on each the same), three commands on a VM:

  plain    `true`: the round trip itself
  inline   run_processes.sh's `wait` for an identity that is not running
           (it reads one /proc file with a builtin and exits: what is left
           is what starting the script costs), the script's whole text in
           the command (`bash -c '<text>' run_processes.sh wait ...`, how
           every script ran before they were shipped)
  shipped  the same `wait` as run_processes.Command writes it now: the
           script by path from the VM's scratch directory, checked the
           run's own right before it runs (ssh_command.sh's find over SSH,
           shell_scripts.Problem on a Local VM)

on an SSH VM (a real sshd this script starts on a loopback address, as
root: logging in as root, as bench_probe_overhead does; --no-ssh skips it)
and on a Local VM. It prints each one's median and the bytes of the ssh
command line (what ps on both machines and a debug log of the argv would
show), then a line per VM kind `<kind>_inline_ms=<a> <kind>_shipped_ms=<b>
<kind>_ratio=<a/b> <kind>_overhead_ratio=<(a-plain)/(b-plain)>`.

The figures depend on the machine: a busy one pays more per process start
and per round trip; say which it was when quoting them.
"""

import argparse
import os
import shlex
import shutil
import signal
import statistics
import sys
import tempfile
import time
from typing import Callable, Dict, List

_HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(_HERE)
sys.path[:0] = [REPO]

# pylint: disable=g-import-not-at-top,wrong-import-position
from perfkitbenchmarker import venv_reexec
venv_reexec.UseRepoVenv(os.path.dirname(_HERE), __file__)

from perfkitbenchmarker import remote_shell
from perfkitbenchmarker import run_processes
from perfkitbenchmarker import shell_scripts
from perfkitbenchmarker import ssh_vm
from perfkitbenchmarker import virtual_machine
from perfkitbenchmarker.providers.local import provider as local
from scripts import loopback_sshd


def Forms() -> Dict[str, str]:
  """The three commands: this process with a start time it did not start
  at is not running."""
  args = ['wait', os.getpid(), 1, 0]
  inline = ' '.join(['"${BASH:-bash}"', '-c',
                     shlex.quote(shell_scripts.Text(run_processes.SCRIPT)),
                     run_processes.SCRIPT] + [str(a) for a in args])
  return {'plain': 'true', 'inline': inline,
          'shipped': run_processes.Command(*args)}


def Time(vm, forms: Dict[str, str], rounds: int) -> Dict[str, List[float]]:
  """Seconds of each form's command, `rounds` times each, interleaved."""
  times = {name: [] for name in forms}
  for name, command in forms.items():  # Once first: ships, warms the master.
    Check(vm, name, command)
  for _ in range(rounds):
    for name, command in forms.items():
      start = time.perf_counter()
      Check(vm, name, command)
      times[name].append(time.perf_counter() - start)
  return times


def Check(vm, name: str, command: str) -> None:
  _, err, rc = vm.RemoteCommandWithReturnCode(command, timeout=60)
  if rc != 0:
    raise SystemExit(f'{name} on {vm.name} failed (exit {rc}): {err[-300:]}')


def Report(kind: str, times: Dict[str, List[float]],
           argv_bytes: Callable[[str], int], forms: Dict[str, str]) -> str:
  medians = {name: statistics.median(t) * 1000 for name, t in times.items()}
  for name, ms in medians.items():
    print(f'{kind:6s} {name:8s} median {ms:6.2f} ms over {len(times[name])} '
          f'commands; command line {argv_bytes(forms[name]):6d} bytes')
  inline, shipped, plain = (medians[n] for n in ('inline', 'shipped',
                                                  'plain'))
  overhead = ((inline - plain) / (shipped - plain) if shipped > plain
              else float('inf'))
  return (f'{kind}_inline_ms={inline:.2f} {kind}_shipped_ms={shipped:.2f} '
          f'{kind}_ratio={inline / shipped:.2f} '
          f'{kind}_overhead_ratio={overhead:.2f}')


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  parser.add_argument('--rounds', type=int, default=60,
                      help='commands of each form per VM kind')
  parser.add_argument('--host', default='127.0.0.3',
                      help='loopback address the sshd listens on')
  parser.add_argument('--no-ssh', dest='ssh', action='store_false',
                      help='the Local VM only (no root needed)')
  args = parser.parse_args(argv)
  if args.rounds < 1 or args.rounds > 10000:
    print(f'--rounds={args.rounds}: give 1 to 10000', file=sys.stderr)
    return 2
  refusal = (loopback_sshd.BenchRefusal('bench_shipped_scripts', args.host)
             if args.ssh else None)
  if refusal:
    print(f'{refusal}; or --no-ssh', file=sys.stderr)
    return 2
  spec = virtual_machine.VmSpec(cloud='Bench', machine_type='bench')
  # SIGTERM (timeout(1), a CI job's end) as Ctrl-C: the finally below then
  # stops the sshd and removes the directory (its keys), which the
  # script's death left behind, the sshd listening.
  signal.signal(signal.SIGTERM, signal.default_int_handler)
  work = tempfile.mkdtemp(prefix='pkb-bench-shipped-')
  lines = []
  server = machine = None
  try:
    if args.ssh:
      server = loopback_sshd.Sshd(os.path.join(work, 'sshd'),
                                  host=args.host).Start()
      machine = ssh_vm.SshVirtualMachine(
          spec, 'ssh-0', 'servers', user=server.user,
          ip_address=server.host, keyfile=server.user_key, port=server.port,
          known_hosts_file=os.path.join(work, 'known_hosts'),
          run_uri=f'bench{os.getpid()}')
      machine.WaitForSsh(30)
      forms = Forms()
      lines.append(Report(
          'ssh', Time(machine, forms, args.rounds),
          lambda c: len(remote_shell.CommandScript(
              c, machine.scratch_dir, 60,
              scripts=shell_scripts.Uses(c))), forms))
    vm = local.LocalVirtualMachine(
        virtual_machine.VmSpec(cloud='Local', machine_type='local'),
        'local-0', 'servers', f'bench{os.getpid()}')
    vm.scratch_dir = os.path.join(work, 'local-0')
    os.mkdir(vm.scratch_dir, 0o700)
    forms = Forms()
    lines.append(Report('local', Time(vm, forms, args.rounds),
                        lambda c: len(shlex.join(['bash', '-c', c])), forms))
  except KeyboardInterrupt:
    print('bench_shipped_scripts: interrupted; its sshd was stopped and its '
          'files removed', file=sys.stderr)
    return 130
  finally:
    if machine is not None:
      machine.CleanUpScratch()
      machine.StopMaster()
    if server is not None:
      server.Stop()
    shutil.rmtree(work, ignore_errors=True)
  print(f'load average now {os.getloadavg()[0]:.1f} on {os.cpu_count()} '
        'cores')
  for line in lines:
    print(line)
  return 0


if __name__ == '__main__':
  sys.exit(main())
