"""A preload library that keeps a load generator's password out of `ps`.

Why it exists (docs/secrets.md): memtier_benchmark takes a password only as
an argument (`-a` or `--uri`; it reads no environment variable and no
configuration file) and Debian's redis-benchmark 7.0 likewise (`-a` only; it
ignores REDISCLI_AUTH, which only redis-cli reads). Their argv would carry the
load user's password (redis_shard.py) for the whole probe, readable by every
user of the client VM through `ps` or /proc/<pid>/cmdline. Instead the
command line carries TOKEN, and this library, preloaded into the tool only,
points each argument holding TOKEN at a private copy with the password before
the tool's main() runs. /proc/<pid>/cmdline shows the original argument
area, so `ps` only ever sees TOKEN.

How a probe uses it (load_generators/concurrent.py): the probe's 0600 script
holds the password in a shell variable it does not export, and each tool
runs as

    env LD_PRELOAD=/proc/self/fd/9 PKB_ARGV_SECRET_FD=8 <tool> ... \
        9<<library> 8< <(printf %s "$<variable>")

so the password travels through a pipe: no process's argv or environment
holds it. Naming the library through an inherited descriptor keeps
LD_PRELOAD working whatever the scratch path holds (LD_PRELOAD splits on
spaces and colons), and `timeout`/`taskset` before `env` never load it.

The one rule: the password reaches exactly one process, the program `env`
starts, and only its memory. Before handing it over, the library forbids
that process (and any child it forks) to start a program: a seccomp filter
kills it (SIGSYS) at execve/execveat, whichever way it gets there (libc,
a shell, raw system calls). So a wrapper script, which would pass the
password on in the real tool's argv, dies instead; `CheckTool` runs the
program once with a throwaway password (`--version`) and refuses such a
wrapper in one line before any probe. If the filter cannot be installed,
the password is not handed over.

Fails closed: if the library cannot load, the tool sends TOKEN as the
password and fails on authentication; nothing is leaked.

The library is compiled on each VM into the run's scratch directory (0700,
the run's own, deleted with the run) with the VM's C compiler; remote VMs
without one get gcc from their package manager, and a Local machine without
one is refused in one line (./scripts/setup.sh installs gcc).
"""

import secrets
import shlex
from typing import List, Sequence, Tuple

from perfkitbenchmarker import errors
from perfkitbenchmarker import record_checks
from perfkitbenchmarker import terminal_text
from perfkitbenchmarker import vm_util
from perfkitbenchmarker.linux_packages import package_commands
from perfkitbenchmarker.linux_packages import remote_install

TOKEN = '@PKB_ARGV_SECRET@'
FD = 9  # The library, opened by the shell that starts the tool.
SECRET_FD = 8  # A pipe carrying the password, read once by the library.
FD_ENV = 'PKB_ARGV_SECRET_FD'
# The probe script's unexported variable holding the password.
VARIABLE = '__pkb_argv_secret'
LIBRARY = 'argv_secret.so'
MAX_SECRET = 4096
# How a shell reports a process the library's filter killed (128 + SIGSYS).
KILLED_STATUS = 128 + 31

# Written for this project: the constructor runs in the preloaded tool before
# its main(), with the same argv array main() will read.
SOURCE = r'''
#define _GNU_SOURCE
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#if defined(__x86_64__)
#define ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define ARCH AUDIT_ARCH_AARCH64
#else
#error "argv_secret: only x86_64 and arm64 clients"
#endif

static const char kToken[] = "%(token)s";

/* From now on this process and its children start no program: execve and
   execveat (and, on x86_64, any x32 system call) kill the process. */
static int ForbidExec(void) {
  struct sock_filter filter[] = {
    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, ARCH, 1, 0),
    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_execve, 3, 0),
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_execveat, 2, 0),
#if defined(__x86_64__)
    BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000, 1, 0),
#else
    BPF_JUMP(BPF_JMP | BPF_JA, 0, 0, 0),
#endif
    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
  };
  struct sock_fprog program = {sizeof(filter) / sizeof(filter[0]), filter};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return -1;
  return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program);
}

/* A new string: arg with every kToken replaced by secret, or NULL if none. */
static char *Substitute(const char *arg, const char *secret) {
  size_t token_len = sizeof(kToken) - 1, secret_len = strlen(secret);
  size_t count = 0;
  const char *p;
  for (p = strstr(arg, kToken); p; p = strstr(p + token_len, kToken)) count++;
  if (count == 0) return NULL;
  char *out = malloc(strlen(arg) - count * token_len + count * secret_len + 1);
  if (out == NULL) return NULL;
  char *w = out;
  const char *r = arg;
  while ((p = strstr(r, kToken)) != NULL) {
    memcpy(w, r, (size_t)(p - r));
    w += p - r;
    memcpy(w, secret, secret_len);
    w += secret_len;
    r = p + token_len;
  }
  strcpy(w, r);
  return out;
}

/* The password from the descriptor named by FD_ENV (read whole, then
   closed), or NULL. */
static char *ReadSecret(void) {
  const char *fd_text = getenv("%(fd_env)s");
  if (fd_text == NULL) return NULL;
  int fd = atoi(fd_text);
  char *secret = calloc(%(max)d + 1, 1);
  size_t len = 0;
  while (secret != NULL && len < %(max)d) {
    ssize_t n = read(fd, secret + len, %(max)d - len);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    len += (size_t)n;
  }
  close(fd);
  if (secret != NULL && len == 0) {
    free(secret);
    return NULL;
  }
  return secret;
}

__attribute__((constructor))
static void SubstituteSecret(int argc, char **argv, char **envp) {
  (void)envp;
  char *secret = ReadSecret();
  /* Nothing the tool might start inherits the library or its variable. */
  unsetenv("%(fd_env)s");
  unsetenv("LD_PRELOAD");
  if (secret == NULL) return;
  if (ForbidExec() != 0) {
    fprintf(stderr, "argv_secret: cannot forbid starting programs (seccomp: "
            "%%s); the password was not handed over\n", strerror(errno));
    memset(secret, 0, strlen(secret));
    free(secret);
    return;
  }
  for (int i = 1; i < argc; i++) {
    char *replaced = Substitute(argv[i], secret);
    if (replaced != NULL) argv[i] = replaced;
  }
}
''' % {'token': TOKEN, 'fd_env': FD_ENV, 'max': MAX_SECRET}


def LibraryPath(vm) -> str:
  return f'{vm.scratch_dir}/{LIBRARY}'


def CompilerInstall(info) -> str:
  """Root script installing a C compiler (apt or dnf/yum systems)."""
  if info.family == 'debian':
    return package_commands.Script([package_commands.Step(
        'apt', 'install', 'gcc', 'libc6-dev')])
  if info.family == 'rhel':
    return package_commands.Script([package_commands.Step(
        'rpm', info.package_manager, 'gcc')])
  raise errors.PrerequisiteError(
      f'Cannot install a C compiler on {info.display_name}; '
      'install gcc by hand and rerun.')


def NoCompiler(where: str) -> str:
  """The line refusing a machine without a C compiler (cc) to build the
  library with, which installs no packages itself."""
  return (f'No C compiler on {where}: the load generators\' password would '
          'be visible in `ps`; install gcc (./scripts/setup.sh does).')


def Install(vm) -> None:
  """Compiles the library into the VM's scratch directory (once per run)."""
  if not vm.HasCommand('cc'):
    if not vm.CAN.installs_packages:
      raise errors.PrerequisiteError(NoCompiler(vm.name))
    remote_install.RunAsRoot(
        vm, remote_install.ScriptFor(vm, CompilerInstall),
        'Installing a C compiler')
  source = f'{vm.scratch_dir}/argv_secret.c'
  vm.WriteFile(source, SOURCE, 0o600)
  library = LibraryPath(vm)
  # Built under the run's own umask: IsInstalled refuses a library others
  # can write, and with the user's umask 000 it refused the one just built.
  # The compiler's own files (the assembly, the object it links) go in the
  # scratch directory too: in a TMPDIR others can rename things in (no
  # sticky bit) one could be swapped between cc writing and reading it,
  # and the library built from theirs.
  vm.RemoteCommand(
      f'umask 077; TMPDIR={shlex.quote(vm.scratch_dir)} cc -shared -fPIC '
      f'-O2 -o {shlex.quote(library)} {shlex.quote(source)} && '
      f'rm -f -- {shlex.quote(source)}',
      timeout=120, what='compiling argv_secret')


def IsInstalled(vm) -> bool:
  """True if the library is there, and the run's own: a file of this user
  that nobody else can write (in a scratch directory that is the run's own,
  run_scope). Another one is never loaded."""
  lib = shlex.quote(LibraryPath(vm))
  out, _, rc = vm.RemoteCommandWithReturnCode(
      f'test -e {lib} || test -L {lib} || exit 1; '
      f'if [ -f {lib} ] && [ ! -L {lib} ] && [ -O {lib} ] && '
      f'[ $(( 8#$(stat -c %a -- {lib}) & 8#022 )) -eq 0 ]; then exit 0; fi; '
      'echo foreign')
  if out.strip() == 'foreign':
    raise errors.UsageError(
        f'{LibraryPath(vm)} on {vm.name} is not the run\'s own (not its '
        'user\'s, a symlink or writable by others); it is not loaded.')
  return rc == 0


def _Preloaded(vm, command: str) -> str:
  return (f'env LD_PRELOAD=/proc/self/fd/{FD} {FD_ENV}={SECRET_FD} '
          f'{command} {FD}<{shlex.quote(LibraryPath(vm))}')


def CheckTool(vm, program: str) -> None:
  """Refuses, in one line, a `program` that starts another when handed a
  password: a wrapper (a shell script, a #! line through `env`, a launcher)
  would pass the real one on in the tool's argv. It is run once with the
  library and a throwaway password (`--version`); the library kills it if it
  starts a program. A wrapper that hides at this check dies the same way in
  its first probe. Once per program and VM; no check without a library (a
  dry run's machine: prepare checks on the VM).
  """
  checked = vm.__dict__.setdefault('_argv_secret_tools', set())
  if program in checked or not _LibraryReady(vm):
    return
  command = _Preloaded(vm, f'{shlex.quote(program)} --version </dev/null')
  _, err, rc = vm.RemoteCommandWithReturnCode(
      f'{command} {SECRET_FD}<<<{secrets.token_hex(16)}', timeout=60)
  if rc == 127:
    raise errors.PrerequisiteError(f'{program} not found on {vm.name}.')
  not_loaded = [line for line in terminal_text.Lines(err)
                if 'cannot be preloaded' in line]
  if not_loaded:
    # ld.so only warns and runs the tool, which then fails every probe on
    # its placeholder password (WRONGPASS) without saying why.
    why = vm_util.Tail(not_loaded[0], 1)
    advice = 'the run built something else there; run again'
    if 'failed to map segment' in why:
      advice = 'its filesystem is likely mounted noexec; ' + (
          'set PKB_LOCAL_SCRATCH (default /tmp) to a directory on one that '
          'is not' if vm.CAN.is_runner_machine else
          f'the run\'s scratch directories are under '
          f'{record_checks.REMOTE_SCRATCH_ROOT} there: mount it without '
          'noexec, or use another machine')
    raise errors.PrerequisiteError(
        f'{LibraryPath(vm)} on {vm.name} cannot be loaded ({why}): '
        f'{advice}.')
  if rc == KILLED_STATUS or 'Bad system call' in err:
    raise errors.UsageError(
        f'{program} on {vm.name} is a wrapper: handed a password (for '
        '--version) it started another program, which would show the '
        'password in `ps`; give the load generator\'s binary itself '
        '(docs/secrets.md).')
  checked.add(program)


def _LibraryReady(vm) -> bool:
  """Whether the library is on the VM and the run's own (asked once per VM:
  a probe must not pay a round trip for it each time)."""
  if not hasattr(vm, 'Install'):
    # A check before the run has VMs (memtier.CheckLocalPath, a dry run):
    # nowhere to build the library yet; prepare checks on the VM itself.
    return False
  vm.Install('argv_secret')
  installed = vm.__dict__.get('_argv_secret_library')
  if installed is None:
    installed = vm.__dict__['_argv_secret_library'] = IsInstalled(vm)
  return installed


def Wrap(vm, argvs: Sequence[Sequence[str]], secret: str
         ) -> Tuple[List[str], List[str]]:
  """Shell commands running `argvs` (holding TOKEN) without the secret shown.

  Returns (commands, script lines to run before them; they set a variable
  the commands read, so the commands need bash). Each command is pinned to
  the VM's cores.
  """
  if not _LibraryReady(vm):
    raise errors.PrerequisiteError(
        f'{LibraryPath(vm)} was not built on {vm.name}; the password is '
        'never put in a load generator\'s arguments.')
  commands = []
  for argv in argvs:
    CheckTool(vm, argv[0])
    commands.append(
        vm.Pinned(_Preloaded(vm, vm_util.QuoteAll(argv)))
        + f' {SECRET_FD}< <(printf %s "${VARIABLE}")')
  return commands, [f'{VARIABLE}={shlex.quote(secret)}', f'export -n {VARIABLE}']
