"""Command builders for installing and tuning a Redis Enterprise cluster.

Pure text: every function returns shell command strings (values quoted with
shlex.quote) or parses command output; redis_enterprise.py runs them
over SSH. None of these commands carries a secret. The cluster is not
formed here: `rladmin cluster create`/`join` take the admin password only
as an argument, where `ps` shows it, so the cluster is created and joined
through the REST API's bootstrap requests
(redis_enterprise_rest.ClusterBootstrap).

Paths: the installer goes into a work directory the caller names
(a run's scratch directory on the VM, removed at teardown); the programs are
under the install directory, /opt/redislabs unless install.sh was given
another with --install-dir (Redis Enterprise's custom installation
directories).
"""

import posixpath
import re
import shlex
from typing import List, Optional, Sequence

INSTALL_DIR = '/opt/redislabs'
CLUSTER_NAME = 'pkb-cluster'


def _Bin(install_dir: str, program: str) -> str:
  return shlex.quote(posixpath.join(install_dir, 'bin', program))


def InstallCommands(workdir: str, tarball_name: str, tune_on_startup: bool,
                    install_dir: Optional[str] = None) -> List[str]:
  """Unpack the user's installer tarball (already copied into `workdir`) and
  run install.sh unattended; without OS tuning when asked; into
  `install_dir` when one is given (else the installer's /opt/redislabs)."""
  work = shlex.quote(workdir)
  tar = shlex.quote(posixpath.join(workdir, tarball_name))
  install = ('sudo ./install.sh -y' if tune_on_startup else
             'sudo env CONFIG_systune=no ./install.sh -y -n')
  if install_dir:
    install += f' --install-dir {shlex.quote(install_dir)}'
  return [f'mkdir -p {work}',
          f'tar -xf {tar} -C {work}',
          f'cd {work} && {install}']


def TuneProxy(threads: int, install_dir: str = INSTALL_DIR) -> List[str]:
  """All proxies to `threads` worker threads, then restart them."""
  n = int(threads)
  return [f'sudo {_Bin(install_dir, "rladmin")} tune proxy all '
          f'max_threads {n} threads {n}',
          f'sudo {_Bin(install_dir, "dmc_ctl")} restart']


def OfflineCpus(cpu_ids: Sequence[int]) -> List[str]:
  return [f'echo 0 | sudo tee /sys/devices/system/cpu/cpu{int(c)}/online'
          for c in cpu_ids]


def NumaNodeCpuList(node: int) -> str:
  return f'cat /sys/devices/system/node/node{int(node)}/cpulist'


def PinWorkers(node_cpu_list: str, already_pinned: int,
               per_node: int, install_dir: str = INSTALL_DIR) -> str:
  """Pins the next `per_node` proxy worker threads to one NUMA node's CPUs."""
  if not re.fullmatch(r'[0-9,\-]+', node_cpu_list):
    raise ValueError(f'not a CPU list: {node_cpu_list!r}')
  return (f'sudo {_Bin(install_dir, "dmc-cli")} -ts root list | '
          'grep worker | '
          f'head -n -{int(already_pinned)} | tail -n {int(per_node)} | '
          "awk '{print $3}' | "
          f'xargs -r -I{{}} sudo taskset -pc {node_cpu_list} {{}}')


def Status(install_dir: str = INSTALL_DIR) -> str:
  return f'sudo {_Bin(install_dir, "rladmin")} status nodes'


_RAM = re.compile(r'(\d+(?:\.\d+)?)\s*(GB|MB|TB|KB)/(\d+(?:\.\d+)?)\s*(GB|MB|TB|KB)')
_UNITS = {'KB': 1e3, 'MB': 1e6, 'GB': 1e9, 'TB': 1e12}


def ProvisionableRamBytes(status_output: str) -> int:
  """Sum over nodes of the free provisional RAM in `rladmin status nodes`.

  Node lines look like
  `*node:1 master 10.0.0.2 host1 0/100 14.95GB/15.5GB 12.2GB/12.76GB 6.2.4-54 OK`
  (FREE_RAM then PROVISIONAL_RAM as free/total); the second pair counts.
  """
  total = 0.0
  for line in status_output.splitlines():
    if not re.match(r'\s*\*?node:\d+', line):
      continue
    pairs = _RAM.findall(line)
    if len(pairs) >= 2:
      value, unit = pairs[1][0], pairs[1][1]
      total += float(value) * _UNITS[unit]
  if not total:
    raise ValueError('no node lines with provisional RAM in rladmin status')
  return int(total)
