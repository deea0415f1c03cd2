"""The shell scripts pkb runs on VMs: `.sh` files in perfkitbenchmarker/scripts/.

A script is read from its file and never has a value spliced into its text:
what it works on comes in as positional arguments (`Command`, or `WithArgs`
for a script run from a file) or as the environment the caller hands
RemoteCommand (secrets: only that way, or as argv_secret says, never as
arguments). A library script (process_stat.sh)
is pulled into another by a line `. ./<name>.sh`, which `Text` replaces
with the library's text, so the VM needs no files of ours; shellcheck
follows the same line (tests/shell_scripts_test.py runs it over every
script here).

The files are package data (setup.py), so an installed pkb and the PKB
plugin read them from the package as a checkout does.
"""

import functools
import os
import re
import shlex
from typing import List

SCRIPTS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                           'scripts')
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


def WithArgs(name: str, *args: object) -> str:
  """The script's text to run from a file (`bash FILE`, its text sent on
  stdin over SSH), its arguments set first by a `set --` line of quoted
  words (`Args` reads them back)."""
  return ' '.join(['set --'] + [shlex.quote(str(a)) for a in args]) + (
      '\n' + Text(name))


def Args(text: str) -> List[str]:
  """The arguments a WithArgs text sets (its first `set --` line)."""
  for line in text.split('\n'):
    if line.startswith('set -- ') or line == 'set --':
      return shlex.split(line)[2:]
  raise ValueError('no arguments set')


def Command(name: str, *args: object) -> str:
  """A one-line command running the script in a bash of its own with `args`
  as $1, $2, ... (each quoted; $0 is its name, $PPID the shell that runs
  the command). That bash is the one running the command ($BASH: every
  command on a VM runs in bash), so no other need be on PATH."""
  return ' '.join(['"${BASH:-bash}"', '-c', shlex.quote(Text(name)), name] +
                  [shlex.quote(str(a)) for a in args])
