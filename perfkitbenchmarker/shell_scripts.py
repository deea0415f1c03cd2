"""The shell scripts pkb runs on VMs: `.sh` files in perfkitbenchmarker/scripts/.

A script is read from its file and never has a value spliced into its text:
what it works on comes in as positional arguments (`Command`, or `Sourced`
in the shell of a script the caller writes) or as the environment the caller hands
RemoteCommand (secrets: only that way, or as argv_secret says, never as
arguments). A library script (process_stat.sh, packages.sh,
owned_paths.sh) is pulled into another by a line `. ./<name>.sh`, which
`Text` replaces with the library's text, so each script stands alone; shellcheck follows
the same line (tests/shell_scripts_test.py runs it over every script here).

Shipped once, run by path: a VM holds the scripts in a directory of its
scratch directory (`ShippedDir`, named by their digest: a pkb of other
scripts ships its own), 0700 with each file 0500, the run user's own. A
command runs one as `Command` writes it, from the directory $PKB_SCRIPTS,
which the VM sets only once it has checked that directory is the run's own
(`Problem`'s rule: ssh_command.sh's check on SSH VMs, `Problem` itself on
Local ones) right before the command runs: a directory that is missing is
shipped (`ShipCommand`, `Bundle`), one that is not the run's own is refused
and nothing of it runs. The scratch directory is the run's (0700), so
nothing but the run changes the scripts between that check and their use.
Four scripts are sent inline, as text (`Inline`): ssh_command.sh, which
runs every command and makes that check, ship.sh, which ships,
other_runs.sh, which looks for other runs on a static machine before the
run has a scratch directory there, and workspace.sh, which makes it.

The files are package data (setup.py), so an installed pkb and the PKB
plugin read them from the package as a checkout does.
"""

import base64
import functools
import hashlib
import os
import posixpath
import re
import shlex
import stat
from typing import List, Optional

SCRIPTS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                           'scripts')
# Where a command finds the shipped scripts: set by the VM, once checked.
ENV = 'PKB_SCRIPTS'
# The scripts sent as text, never run from the shipped directory (module doc).
INLINE = ('ssh_command.sh', 'ship.sh', 'other_runs.sh', 'workspace.sh')
# `Problem`'s answer for a directory that is not there (ship it).
MISSING = 'missing'
# `. ./process_stat.sh` on a line of its own: the library inlined there.
_INCLUDE = re.compile(r'^\. \./([a-z0-9_]+\.sh)$', re.M)


def Names() -> List[str]:
  """Every shipped script's file name."""
  return sorted(n for n in os.listdir(SCRIPTS_DIR) if n.endswith('.sh'))


@functools.lru_cache(maxsize=None)
def Text(name: str) -> str:
  """The script's text, its `. ./<library>.sh` lines replaced by the
  library's own Text."""
  with open(os.path.join(SCRIPTS_DIR, name), encoding='utf-8') as f:
    text = f.read()
  return _INCLUDE.sub(lambda m: Text(m.group(1)).rstrip('\n'), text)


def Sourced(name: str, *args: object) -> str:
  """A line of a script the caller writes that runs the shipped script
  `name` in the script's own shell (`.`: what the lines before it set, an
  unexported variable too, it sees), `args` as its $1, $2, ... (`Args`
  reads them back)."""
  if name in INLINE:
    raise ValueError(f'{name} is sent inline, not shipped')
  return ' '.join([f'. "${{{ENV}:?}}"/{name}'] +
                  [shlex.quote(str(a)) for a in args])


def Args(text: str) -> List[str]:
  """The arguments of a script's first `Sourced` line."""
  for line in text.split('\n'):
    if line.startswith(f'. "${{{ENV}:?}}"/'):
      return shlex.split(line)[2:]
  raise ValueError('no shipped script sourced')


def Command(name: str, *args: object) -> str:
  """A one-line command running the shipped script `name` in a bash of its
  own with `args` as $1, $2, ... (each quoted; $0 is its path, $PPID the
  shell that runs the command), from the directory the VM checked and put
  in $PKB_SCRIPTS (module doc; unset, the command fails saying so). That
  bash is the one running the command ($BASH: every command on a VM runs
  in bash), so no other need be on PATH."""
  if name in INLINE:
    raise ValueError(f'{name} is sent inline, not shipped')
  return ' '.join([f'"${{BASH:-bash}}" "${{{ENV}:?}}"/{name}'] +
                  [shlex.quote(str(a)) for a in args])


def Uses(command: str, stdin: object = None) -> bool:
  """Whether `command`, or the script it reads from `stdin` (text), runs a
  shipped script: the VM checks them first (chunks of stdin are data)."""
  return ENV in command or (isinstance(stdin, str) and ENV in stdin)


def Inline(name: str, *args: object) -> List[str]:
  """argv of `bash -c` running script `name` sent as text, with `args`."""
  return ['bash', '-c', Text(name), name] + [str(a) for a in args]


def _Shipped() -> List[str]:
  return [n for n in Names() if n not in INLINE]


@functools.lru_cache(maxsize=None)
def _Digest() -> str:
  digest = hashlib.sha256()
  for name in _Shipped():
    digest.update(f'{name}\0{Text(name)}\0'.encode())
  return digest.hexdigest()[:16]


def ShippedDir(scratch_dir: str) -> str:
  """Where a VM of this scratch directory holds the scripts."""
  return posixpath.join(scratch_dir, f'.pkb-scripts-{_Digest()}')


def ShipCommand(directory: str) -> str:
  """A command putting the scripts in `directory`, read from stdin as
  `Bundle` writes them (scripts/ship.sh, sent inline)."""
  return shlex.join(Inline('ship.sh', directory))


@functools.lru_cache(maxsize=None)
def Bundle() -> str:
  """ShipCommand's stdin: a line "<name> <base64 text>" per script."""
  return ''.join(
      f'{name} {base64.b64encode(Text(name).encode()).decode()}\n'
      for name in _Shipped())


def Problem(directory: str) -> Optional[str]:
  """Why the scripts in `directory` (on this machine) must not run: MISSING
  when it is not there; else a line naming what is not the running user's
  own (a symlink, another's, anything not a regular file, or writable by
  group or others); None when every file is the run's own."""
  uid = os.geteuid()
  try:
    entries = [directory] + [os.path.join(directory, n)
                             for n in sorted(os.listdir(directory))]
  except FileNotFoundError:
    return None if os.path.isdir(directory) else MISSING
  except OSError as e:
    return f'{directory} cannot be read ({e.strerror})'
  for path in entries:
    try:
      st = os.lstat(path)
    except OSError as e:
      return f'{path} cannot be read ({e.strerror})'
    kind = stat.S_ISDIR if path == directory else stat.S_ISREG
    if (not kind(st.st_mode) or st.st_uid != uid or
        st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)):
      return (f'{path} (uid {st.st_uid}, mode '
              f'{stat.S_IMODE(st.st_mode):o}, type {_Kind(st.st_mode)})')
  return None


def _Kind(mode: int) -> str:
  """find's %y letter for the file's type (ssh_command.sh's check says it
  the same way)."""
  for test, letter in ((stat.S_ISDIR, 'd'), (stat.S_ISLNK, 'l'),
                       (stat.S_ISREG, 'f')):
    if test(mode):
      return letter
  return '?'
