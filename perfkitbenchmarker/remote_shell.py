"""Shell text that ssh_vm.py sends to a remote Linux VM.

Pure functions, so the quoting and the timeouts are testable without a
machine:
  * `CommandScript` (scripts/ssh_command.sh) wraps one command the way
    Local VMs run it (bash, in the scratch directory) under `timeout`, after
    printing a marker that tells "the remote shell started" apart from an
    ssh connection failure (both can end with exit 255), after checking
    the shipped scripts when the command runs one (shell_scripts), and
    after reading the environment, if any, from the first line of stdin so
    secrets never appear in any process's argv;
  * `Detached*Script` start, collect and kill a command that outlives the
    SSH connection: setsid + nohup, output and exit code in files of a job
    dir, an flock held while it runs so that collecting is one blocking
    command (ssh_jobs.py drives them).

Extension seam: another remote shell convention (e.g. no coreutils
`timeout`) is a change here only.
"""

import base64
import math
import re
import shlex
from typing import Dict, List, NamedTuple, Optional, Sequence, Tuple

from perfkitbenchmarker import owned_paths
from perfkitbenchmarker import run_processes
from perfkitbenchmarker import shell_scripts

STARTED_MARKER = '\x1epkb-started\x1e'
# Before each entry of the login's PATH ssh_command.sh left out, on a line
# of stderr of its own: "<marker>REASON ENTRY (WHY)".
PATH_MARKER = '\x1epkb-path\x1e'
_LEFT_OUT = re.compile(f'{PATH_MARKER}(.*)\n?')
# ssh_command.sh's refusal to run a command of the shipped scripts: its
# exit, and the marker before what is wrong on stderr.
SCRIPTS_REFUSED = 125
SCRIPTS_MARKER = '\x1epkb-scripts\x1e'
_COMMAND_SCRIPT = 'ssh_command.sh'  # Prints STARTED_MARKER first.
_JOB_SCRIPT = 'detached_job.sh'  # Its collect ends with DONE_MARKER.
KILL_GRACE_S = 5  # after `timeout` sends TERM, before KILL
# Lines ssh prints about connection sharing that are not the command's.
_SSH_NOISE = re.compile(
    r'^(ControlSocket .* already exists, disabling multiplexing|'
    r'mux_client_\w+: .*|Control socket connect\(.*\): .*)\r?\n?', re.M)
_ENV_NAME = re.compile(r'[A-Za-z_][A-Za-z0-9_]*')


def Seconds(timeout_s: float) -> int:
  return max(1, math.ceil(timeout_s))


def EnvScript(env: Dict[str, str]) -> str:
  bad = [k for k in env if not _ENV_NAME.fullmatch(k)]
  if bad:
    raise ValueError(f'Bad environment variable name(s): {bad}')
  return ''.join(f'export {k}={shlex.quote(str(v))}\n' for k, v in env.items())


def EnvLine(env: Dict[str, str]) -> str:
  """The first stdin line CommandScript(env_on_stdin=True) reads."""
  return base64.b64encode(EnvScript(env).encode()).decode() + '\n'


# Where the remote login shell finds the bash that runs each command: the
# login's own PATH (a ~/.bashrc, ~/.ssh/environment or /etc/environment
# may put a directory any user can write first) is read only by
# ssh_command.sh, which keeps its safe directories for the command.
SYSTEM_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'


def CommandScript(command: str, scratch_dir: str, timeout_s: float,
                  env_on_stdin: bool = False, scripts: bool = False) -> str:
  """The remote shell command that runs `command` under `timeout`
  (scripts/ssh_command.sh, its values as arguments; with `scripts`,
  checking the shipped scripts of scratch_dir first); `bash -c` itself, as
  the remote login shell may be another, found on SYSTEM_PATH, the login's
  PATH handed on in PKB_LOGIN_PATH ("$PATH": sh, bash, zsh, csh and fish
  read it alike) for ssh_command.sh to leave out of the command's what
  other users can write."""
  scripts = shell_scripts.ShippedDir(scratch_dir) if scripts else ''
  argv = shell_scripts.Inline(_COMMAND_SCRIPT, scratch_dir, scripts,
                              Seconds(timeout_s), KILL_GRACE_S,
                              int(env_on_stdin), command)
  # --norc: bash started by sshd reads ~/.bashrc, whose PATH is the login's.
  argv.insert(1, '--norc')
  # Nor BASH_ENV, a file every bash the command starts would run first
  # (and print into its output), as a Local run does not pass it on.
  return (f'/usr/bin/env -u BASH_ENV PATH={SYSTEM_PATH} '
          'PKB_LOGIN_PATH="$PATH" ' + shlex.join(argv))


def ScriptsProblem(stderr: str) -> Optional[str]:
  """What ssh_command.sh found wrong with the shipped scripts
  (shell_scripts.MISSING when they are not there), or None."""
  _, marker, rest = stderr.partition(SCRIPTS_MARKER)
  return rest.split('\n', 1)[0] if marker else None


def Started(stderr: str) -> bool:
  return STARTED_MARKER in stderr


def _AfterStart(text: str) -> str:
  """What CommandScript printed after its marker (all, with no marker)."""
  _, marker, rest = text.partition(STARTED_MARKER)
  return rest if marker else text


def CommandStdout(stdout: str) -> str:
  """The command's own stdout: without what the login shell printed before
  CommandScript started (its startup files' greeting) and the marker."""
  return _AfterStart(stdout)


class LeftOut(NamedTuple):
  """An entry of the login's PATH ssh_command.sh left out: `entry` says it
  and why ("ENTRY (WHY)"); `reason` is what kind of fault (what mends it,
  trusted_programs.Fix), None for a relative entry (it names no one place)
  or a reason word this code does not know."""
  entry: str
  reason: Optional[owned_paths.Reason]


def LeftOutOfPath(stderr: str) -> List[LeftOut]:
  """Each entry of the login's PATH ssh_command.sh left out, from a
  command's stderr."""
  found = []
  for line in _LEFT_OUT.findall(stderr):
    fault = owned_paths.FaultOf(line)  # Its words: the entry and why.
    found.append(LeftOut(line.partition(' ')[2],
                         fault.reason if fault else None))
  return found


def CleanStderr(stderr: str) -> str:
  """The command's own stderr: without the markers and ssh's mux chatter,
  and once the command started, without what came before (the login
  shell's startup files', ssh's); all of it when it never started."""
  return _SSH_NOISE.sub('', _LEFT_OUT.sub('', _AfterStart(stderr)))


def DetachedStartScript(job_dir: str, timeout_s: float, wait_s: float = 0,
                        remove: Sequence[str] = ()) -> str:
  """Starts the job's script, read from stdin, in its own session and
  writes its leader's identity into job_dir/sid (run_processes), then
  prints JOB_STARTED_MARKER and, with wait_s, waits that long for the job
  as DetachedCollectScript does (scripts/detached_job.sh start); fails,
  without going on, if it could not start. `remove`: earlier job dirs
  already collected."""
  return shell_scripts.Command(_JOB_SCRIPT, 'start', job_dir,
                               Seconds(timeout_s), KILL_GRACE_S,
                               Seconds(wait_s) if wait_s > 0 else 0, *remove)


JOB_STARTED_MARKER = '@pkb-job-started'
DONE_MARKER = '@pkb-job-done'


def DetachedCollectScript(job_dir: str, wait_s: float) -> str:
  """Waits up to wait_s for the job to end (blocked on its lock, no
  polling), then prints its rc, stdout and stderr (base64), or `@pending`.

  The output ends with DONE_MARKER, so output cut short by a dropped
  connection is told apart from a finished job (`ParseCollected`).
  """
  return shell_scripts.Command(_JOB_SCRIPT, 'collect', job_dir,
                               Seconds(wait_s))


def ParseCollected(out: str) -> Optional[Tuple[str, str, int]]:
  """(stdout, stderr, rc) from DetachedCollectScript's output; None when
  the job has not ended; raises ValueError when the output is cut short."""
  if out.strip() == '@pending':
    return None
  fields = dict(line.partition(' ')[::2] for line in out.splitlines())
  if DONE_MARKER not in fields or '@rc' not in fields:
    raise ValueError('job output cut short')
  decode = lambda text: base64.b64decode(text).decode(errors='replace')
  return (decode(fields.get('@out', '')), decode(fields.get('@err', '')),
          int(fields['@rc'].strip()))


def DetachedKillScript(job_dir: str, wait_s: float) -> str:
  """Stops every process of the job's session, while its leader is the
  process that started the job (run_processes' escalation, waiting up to
  wait_s after each signal)."""
  return run_processes.Command('stop-job', job_dir,
                               run_processes.WaitMs(wait_s))
