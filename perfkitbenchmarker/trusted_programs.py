"""Programs this machine runs for a run: only ones no other user can change.

pkb often runs as root (Local runs, prepare's installs), and it hands the
programs it starts the run's password, so every program the run executes
here (load generators, server binaries, java, any `--*_path`) must pass
owned_paths' rule: owned by root or the user pkb runs as, writable by no
one else, and so every directory and link on its way.

`KeepSafePath` leaves out of pkb's PATH (and LD_LIBRARY_PATH) the
directories others could add a program (or library) to, since the run's
commands name most tools bare.

`Check` refuses in one line (errors.UsageError, exit 2) before the program
is run; `Which` finds a program on PATH and checks it. On another machine
(a static VM) `CheckOn` runs the same rule there, in bash
(scripts/trusted.sh), as the user the run logs in as, and `OnPath` finds
and checks a program on its PATH (every VM's HasCommand but Local's, which
is `Which`).
"""

import shutil
from typing import List, Optional

from perfkitbenchmarker import errors
from perfkitbenchmarker import owned_paths
from perfkitbenchmarker import shell_scripts
from perfkitbenchmarker import vm_util


# The rule and the names other modules use it by (owned_paths.py).
Problem = owned_paths.Problem
UserName = owned_paths.UserName


NOT_ON_PATH = 3  # trusted.sh's exit when PATH finds no such name.


def _AskOn(vm, program: str) -> Optional[str]:
  """trusted.sh's answer on `vm`: what is wrong with `program` (a Fault,
  from its line "REASON WORDS"; '' when nothing is), or None when PATH
  finds no such name.

  Raises:
    errors.ProcessError: the check itself did not run (no shipped scripts,
      a refused login), in one line with its exit status and last error,
      or answered in no such form; it never reads as "not there" or as
      nothing wrong.
  """
  out, err, rc = vm.RemoteCommandWithReturnCode(
      shell_scripts.Command('trusted.sh', program))
  if rc == NOT_ON_PATH:
    return None
  if rc != 0:
    raise errors.ProcessError(
        f'Checking {program} on {vm.name} failed (trusted.sh exited with '
        f'status {rc}: {vm_util.Tail(err, 1) or "no message"}).')
  answer = vm_util.Tail(out, 1)
  if not answer:
    return ''
  fault = owned_paths.FaultOf(answer)
  if fault is None:
    raise errors.ProcessError(
        f'Checking {program} on {vm.name} failed (trusted.sh answered '
        f'{answer[:200]!r}, not a reason and what is wrong).')
  return fault


def CheckOn(vm, path: str, what: str) -> str:
  """`Check` on `vm` (any machine with bash, reached as the run reaches
  it): `path` itself when it is safe to run there.

  Raises:
    errors.UsageError: in one line, naming the VM and what is at fault.
    errors.ProcessError: the check did not run (_AskOn).
  """
  _Refuse(f'{what} on {vm.name}', _AskOn(vm, path))
  return path


def OnPath(vm, program: str) -> bool:
  """Whether `vm`'s PATH has `program` (as the run logs in), `CheckOn`'s
  rule applied to what it finds there, in the same round trip.

  Raises:
    errors.UsageError: found where another user could change it.
    errors.ProcessError: the check did not run (_AskOn).
  """
  problem = _AskOn(vm, program)
  _Refuse(f'{program} (found on PATH) on {vm.name}', problem)
  return problem is not None


def Fix(reason: owned_paths.Reason) -> str:
  """What to change for a problem of `reason` (a Fault's, never its
  words): the owner and mode, and the ACL when one lets others write or
  may (a mode alone does not take one away)."""
  if reason is owned_paths.Reason.ACL:
    return ('fix the owner and mode, and remove the ACL (setfacl -b on the '
            'path named)')
  return 'fix the owner and mode'


def _Refuse(what: str, problem: Optional[owned_paths.Fault]) -> None:
  """errors.UsageError when `problem` says what is wrong with `what`."""
  if problem:
    raise errors.UsageError(
        f'{what}: {problem}; a program pkb runs (as root, with the run\'s '
        'password) must be owned by root or by you and writable by no one '
        'else, and so must every directory above it (as sudo and sshd '
        'require): install it in such a place (e.g. /usr/local/bin) or '
        f'{Fix(problem.reason)}.')


def Check(path: str, what: str) -> str:
  """`path` itself when it is safe to run (module doc).

  Args:
    path: the program, absolute or relative to the current directory.
    what: how the user named it, for the message (e.g. '--memtier_path=x').

  Raises:
    errors.UsageError: in one line, naming the file or directory at fault.
  """
  _Refuse(what, Problem(path))
  return path


# Where this process's commands find what they run: programs (PATH) and,
# for each program, its shared libraries (LD_LIBRARY_PATH: a liblzf.so.1
# put in such a directory ran in redis-server and redis-benchmark).
SEARCH_PATHS = ('PATH', 'LD_LIBRARY_PATH')


def KeepSafePath() -> List[str]:
  """Leaves out of this process's PATH and LD_LIBRARY_PATH, and so of
  every command it runs, each directory another user could add programs
  or libraries to (owned_paths.KeepSafe): the run's commands name most
  tools bare (bash, base64, chmod, taskset) and the shell finds them there,
  as root with the run's password. Left out rather than refused: a CI
  runner's PATH can hold such a directory (a tool cache every job may
  write) that pkb needs nothing from. Returns each entry left out."""
  return owned_paths.KeepSafe(SEARCH_PATHS)


def Which(program: str, what: str = '') -> Optional[str]:
  """`program` as PATH finds it (None: not there), checked by `Check`."""
  found = shutil.which(program)
  if found is None:
    return None
  return Check(found, what or f'{program} (found on PATH at {found})')
