"""A preload library that keeps a load generator's password out of `ps`.

memtier_benchmark takes a password only as `-a`, and Debian's redis-benchmark
7.0 ignores REDISCLI_AUTH, so their argv would carry the load user's password
(redis_shard.py) for the whole probe, readable by every user of the
client VM through `ps` or /proc/<pid>/cmdline. Instead the command line
carries TOKEN, and this small library, preloaded into the tool only, swaps
each argument containing TOKEN for a private copy with the password before
the tool's main() runs. What /proc/<pid>/cmdline shows is the original
argument area, so `ps` only ever sees TOKEN.

How a probe uses it (load_generators/concurrent.py): the probe's 0600 script
holds the password in a shell variable it does not export, and each tool
runs as

    env LD_PRELOAD=/proc/self/fd/9 PKB_ARGV_SECRET_FD=8 \
        PKB_ARGV_SECRET_EXE=<the checked binary> <tool> ... \
        9<<library> 8< <(printf %s "$<variable>")

so the password travels through a pipe, never through an environment: no
/proc/<pid>/environ (of the script, `timeout`, `taskset`, `env` or the tool)
ever holds it. The library reads the pipe and closes it, and takes its
variables and LD_PRELOAD out of the environment, before main(); nothing the
tool starts inherits either. Naming the library through an inherited
descriptor keeps LD_PRELOAD working when the scratch path holds a space or a
colon (LD_PRELOAD's separators), and `timeout`/`taskset` before `env` never
load it.

The rule, for any wrapper: the password reaches exactly one process, the
checked program, and only in its argv's memory. The library hands it over
only to the program checked before the probe (`CheckTool`: an ELF binary,
or the interpreter a #! line names directly); if the program that starts
is another (/proc/self/exe differs) it hands over nothing and says so on
stderr. Once it has handed the password over, its guard refuses (EPERM, one
line on stderr) every way libc has to start a program (exec*, fexecve,
execveat, posix_spawn*, system, popen), whatever the new program's
arguments or environment: a wrapper, however it passes its arguments on
(argv, the environment, a file read by `sh -c`), cannot start the real tool
with the password. `CheckTool` runs the program once with a throwaway
password (`--version`) and refuses, in one line before any probe, one that
starts another; a shell script or a #! line through `env` is refused before
it runs at all.

Threat model (docs/secrets.md): it protects the password from other users
of the VM who read process arguments (`ps`, /proc/<pid>/cmdline) and
process environments (/proc/<pid>/environ). It does not protect against
root or the run's own user (they can read the 0600 files, the pipe and
/proc/<pid>/mem), against a tool that starts programs with raw system calls
(no libc: the guard does not see them) or writes its arguments somewhere
(memtier copies `-a` into its JSON; the product masks it on reading).

Fails safe: if the library cannot load, the tool sends TOKEN as the password
and the probe fails on authentication; nothing is leaked.

The library is compiled on each VM into the run's scratch directory (0700,
the run's own (own_dirs), deleted with the run) with the VM's C compiler;
remote VMs without one get gcc from their package manager. On a Local
machine without a compiler the run goes on with the password in argv and
says so once (scripts/setup.sh installs gcc).

Extension seam: `Wrap` is the only entry point load generators need; any
program linked against glibc can be wrapped the same way.
"""

import logging
import re
import secrets
import shlex
from typing import List, Sequence, Tuple

from perfkitbenchmarker import errors
from perfkitbenchmarker import vm_util
from perfkitbenchmarker.linux_packages import package_commands
from perfkitbenchmarker.linux_packages import remote_install

TOKEN = '@PKB_ARGV_SECRET@'
FD = 9  # The library, opened by the shell that starts the tool.
SECRET_FD = 8  # A pipe carrying the password, read once by the library.
FD_ENV = 'PKB_ARGV_SECRET_FD'
EXE_ENV = 'PKB_ARGV_SECRET_EXE'
# The probe script's unexported variable holding the password.
VARIABLE = '__pkb_argv_secret'
LIBRARY = 'argv_secret.so'
MAX_SECRET = 4096
# #! interpreters that would pass the password on in another program's argv.
_PASSING_ON = frozenset(['sh', 'bash', 'dash', 'zsh', 'ksh', 'ksh93', 'mksh',
                         'ash', 'busybox', 'fish', 'csh', 'tcsh', 'env'])

# Written for this project: the constructor runs in the preloaded tool before
# its main(), with the same argv array main() will read.
SOURCE = r'''
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char kToken[] = "%(token)s";
/* The password, kept for the exec guard once handed over. */
static char *g_secret;

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
  char *secret = malloc(%(max)d + 1);
  size_t len = 0;
  while (secret != NULL && len < %(max)d) {
    ssize_t n = read(fd, secret + len, %(max)d - len);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    len += (size_t)n;
  }
  close(fd);
  if (secret == NULL) return NULL;
  secret[len] = '\0';
  if (len == 0) {
    free(secret);
    return NULL;
  }
  return secret;
}

__attribute__((constructor))
static void SubstituteSecret(int argc, char **argv, char **envp) {
  (void)envp;
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  exe[n > 0 ? n : 0] = '\0';
  const char *want = getenv("%(exe_env)s");
  int checked = want != NULL && n > 0 && strcmp(exe, want) == 0;
  char *secret = ReadSecret();
  /* Nothing the tool might start inherits the library or its variables. */
  unsetenv("%(fd_env)s");
  unsetenv("%(exe_env)s");
  unsetenv("LD_PRELOAD");
  if (secret == NULL) return;
  if (!checked) {
    fprintf(stderr, "argv_secret: %%s is not the program checked before the "
            "probe; the password was not handed to it\n", exe);
    memset(secret, 0, strlen(secret));
    free(secret);
    return;
  }
  for (int i = 1; i < argc; i++) {
    char *replaced = Substitute(argv[i], secret);
    if (replaced != NULL) argv[i] = replaced;
  }
  g_secret = secret;
}

/* The exec guard: the program handed the password starts no other program
   at all, by any libc entry point (exec*, fexecve, execveat, posix_spawn*,
   system, popen). Checking only the new program's arguments is not enough:
   a wrapper can pass the password on in the environment, a file or a pipe
   to a shell that puts it in the real tool's argv. So the password reaches
   exactly one process, the checked one, whatever that program does. */
static int Refuse(const char *program) {
  fprintf(stderr, "argv_secret: not starting %%s: a program handed the "
          "password starts no other\n", program ? program : "a program");
  errno = EPERM;
  return -1;
}

#define HANDED_OVER() (g_secret != NULL)

#define NEXT(name) ((__typeof__(&name))dlsym(RTLD_NEXT, #name))

int execve(const char *path, char *const argv[], char *const envp[]) {
  if (HANDED_OVER()) return Refuse(path);
  return NEXT(execve)(path, argv, envp);
}

int execv(const char *path, char *const argv[]) {
  if (HANDED_OVER()) return Refuse(path);
  return NEXT(execv)(path, argv);
}

int execvp(const char *file, char *const argv[]) {
  if (HANDED_OVER()) return Refuse(file);
  return NEXT(execvp)(file, argv);
}

int execvpe(const char *file, char *const argv[], char *const envp[]) {
  if (HANDED_OVER()) return Refuse(file);
  return NEXT(execvpe)(file, argv, envp);
}

int fexecve(int fd, char *const argv[], char *const envp[]) {
  if (HANDED_OVER()) return Refuse(argv ? argv[0] : NULL);
  return NEXT(fexecve)(fd, argv, envp);
}

int posix_spawn(pid_t *pid, const char *path,
                const posix_spawn_file_actions_t *actions,
                const posix_spawnattr_t *attr, char *const argv[],
                char *const envp[]) {
  if (HANDED_OVER()) {
    Refuse(path);
    return EPERM;
  }
  return NEXT(posix_spawn)(pid, path, actions, attr, argv, envp);
}

int posix_spawnp(pid_t *pid, const char *file,
                 const posix_spawn_file_actions_t *actions,
                 const posix_spawnattr_t *attr, char *const argv[],
                 char *const envp[]) {
  if (HANDED_OVER()) {
    Refuse(file);
    return EPERM;
  }
  return NEXT(posix_spawnp)(pid, file, actions, attr, argv, envp);
}

/* glibc's system() and popen() start their shell through its own internal
   posix_spawn, which the wrappers above do not see. */
int system(const char *command) {
  if (HANDED_OVER()) {
    Refuse(command);
    return -1;
  }
  return NEXT(system)(command);
}

FILE *popen(const char *command, const char *type) {
  if (HANDED_OVER()) {
    Refuse(command);
    return NULL;
  }
  return NEXT(popen)(command, type);
}

#if defined(__GLIBC__) && __GLIBC_PREREQ(2, 34)
int execveat(int dirfd, const char *path, char *const argv[],
             char *const envp[], int flags) {
  if (HANDED_OVER()) return Refuse(path);
  return NEXT(execveat)(dirfd, path, argv, envp, flags);
}
#endif

/* execl, execlp and execle: their arguments gathered, then checked the same
   way (glibc would otherwise go straight to its internal execve). */
#define GATHER(first, args, argv, envp_out)                               \
  do {                                                                    \
    size_t count = 1;                                                     \
    va_list probe;                                                        \
    va_copy(probe, args);                                                 \
    while (va_arg(probe, char *) != NULL) count++;                        \
    va_end(probe);                                                        \
    argv = alloca((count + 1) * sizeof(char *));                          \
    argv[0] = (char *)(first);                                            \
    for (size_t i = 1; i <= count; i++) argv[i] = va_arg(args, char *);   \
    if (envp_out) *(char ***)(envp_out) = va_arg(args, char **);          \
  } while (0)

int execl(const char *path, const char *arg, ...) {
  char **argv;
  va_list args;
  va_start(args, arg);
  GATHER(arg, args, argv, (void *)0);
  va_end(args);
  return execv(path, argv);
}

int execlp(const char *file, const char *arg, ...) {
  char **argv;
  va_list args;
  va_start(args, arg);
  GATHER(arg, args, argv, (void *)0);
  va_end(args);
  return execvp(file, argv);
}

int execle(const char *path, const char *arg, ...) {
  char **argv, **envp = NULL;
  va_list args;
  va_start(args, arg);
  GATHER(arg, args, argv, &envp);
  va_end(args);
  return execve(path, argv, envp);
}
''' % {'token': TOKEN, 'fd_env': FD_ENV, 'exe_env': EXE_ENV,
       'max': MAX_SECRET}


def LibraryPath(vm) -> str:
  return f'{vm.scratch_dir}/{LIBRARY}'


def CompilerInstall(info) -> str:
  """Root script installing a C compiler (apt or dnf/yum systems)."""
  if info.family == 'debian':
    return f'set -e\n{package_commands.APT} install gcc libc6-dev\n'
  if info.family == 'rhel':
    return 'set -e\n(dnf -y install gcc || yum -y install gcc)\n'
  raise errors.PrerequisiteError(
      f'Cannot install a C compiler on {info.display_name}; '
      'install gcc by hand and rerun.')


def Install(vm) -> None:
  """Compiles the library into the VM's scratch directory (once per run)."""
  if not vm.HasCommand('cc'):
    if vm.CLOUD == 'Local':
      logging.warning(
          'No C compiler on %s: the load generators\' password (the '
          'restricted load user\'s) is visible in `ps` during probes; '
          'install gcc (scripts/setup.sh does) to keep it out.', vm.name)
      return
    remote_install.RunAsRoot(
        vm, remote_install.ScriptFor(vm, CompilerInstall),
        'Installing a C compiler')
  source = f'{vm.scratch_dir}/argv_secret.c'
  vm.WriteFile(source, SOURCE, 0o600)
  library = LibraryPath(vm)
  # Built under the run's own umask: IsInstalled refuses a library others
  # can write, and with the user's umask 000 it refused the one just built.
  vm.RemoteCommand(
      f'umask 077; cc -shared -fPIC -O2 -o {shlex.quote(library)} '
      f'{shlex.quote(source)} -ldl && rm -f -- {shlex.quote(source)}',
      timeout=120, what='compiling argv_secret')


def IsInstalled(vm) -> bool:
  """True if the library is there, and the run's own: a file of this user
  that nobody else can write (in a scratch directory that is the run's own,
  own_dirs). Another one is never loaded."""
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


def _ProbeScript(program: str) -> str:
  """Shell printing what CheckTool needs: the resolved path, then 'elf' or
  the #! line, then the resolved interpreter (if any)."""
  p = shlex.quote(program)
  return (f'p=$(type -P -- {p}) && [ -n "$p" ] || exit 4; r=$(readlink -f -- "$p"); '
          'printf "%s\\n" "$r"; '
          'if [ "$(head -c 4 -- "$r" | od -An -c | tr -d " \\n")" = 177ELF ]; '
          'then echo elf; exit 0; fi; l=$(head -n 1 -- "$r" | head -c 300); '
          'printf "%s\\n" "$l"; i=$(printf %s "$l" | '
          'sed -n "s/^#![[:space:]]*\\([^[:space:]]*\\).*/\\1/p"); '
          '[ -n "$i" ] && readlink -f -- "$i"; true')


def CheckTool(vm, program: str) -> str:
  """The executable the kernel runs for `program` on the VM, if the library
  may hand it the password; else one line (errors.UsageError).

  An ELF binary is itself; a script whose #! line names an interpreter
  directly (not a shell, not env) is that interpreter. Either is then run
  once (`--version`) with the library and a throwaway password: a program
  that starts another one when handed a password is a wrapper (it would
  pass the real one on, in arguments, the environment or a file) and is
  refused here; the library's guard stops one that waits until a probe to
  do so. Cached per VM.
  """
  cache = vm.__dict__.setdefault('_argv_secret_tools', {})
  if program in cache:
    return cache[program]
  out, _, rc = vm.RemoteCommandWithReturnCode(_ProbeScript(program))
  lines = out.split('\n')
  if rc != 0 or len(lines) < 2 or not lines[0]:
    raise errors.PrerequisiteError(f'{program} not found on {vm.name}.')
  path, kind = lines[0], lines[1]
  if kind == 'elf':
    exe = path
  else:
    interpreter = lines[2] if len(lines) > 2 else ''
    name = kind[2:].split()[0].rsplit('/', 1)[-1] if kind.startswith(
        '#!') and kind[2:].split() else ''
    why = ('the password would go into {}, which passes it on in the real '
           'tool\'s arguments, visible in `ps`')
    if not kind.startswith('#!') or not interpreter:
      raise errors.UsageError(
          f'{program} on {vm.name} ({path}) is neither a binary nor a #! '
          'script; give the load generator\'s binary itself.')
    if name in _PASSING_ON or interpreter.rsplit('/', 1)[-1] in _PASSING_ON:
      raise errors.UsageError(
          f'{program} on {vm.name} is a wrapper script '
          f'({vm_util.Tail(kind, 1)}): {why.format(name or interpreter)}; '
          'give the load generator\'s binary itself (docs/secrets.md).')
    exe = interpreter
  _CheckStartsNothing(vm, program, exe)
  cache[program] = exe
  return exe


_STARTED = re.compile(r'argv_secret: not starting (.{0,200}?): a program '
                      r'handed the password')


def _CheckStartsNothing(vm, program: str, exe: str) -> None:
  """Refuses `program` if, handed a (throwaway) password, it starts another
  program: whatever it passes on, and however, the password would reach a
  second process, where no rule of ours follows it."""
  if not _LibraryReady(vm):
    return  # No library (Local, no compiler): warned once, argv it is.
  command = (f'env LD_PRELOAD=/proc/self/fd/{FD} {FD_ENV}={SECRET_FD} '
             f'{EXE_ENV}={shlex.quote(exe)} {shlex.quote(program)} --version '
             f'</dev/null {FD}<{shlex.quote(LibraryPath(vm))} '
             f'{SECRET_FD}<<<{secrets.token_hex(16)}')
  _, err, _ = vm.RemoteCommandWithReturnCode(command, timeout=60)
  started = _STARTED.search(err)
  if started:
    what = started.group(1)
    what = what if what.isprintable() else repr(what)
    raise errors.UsageError(
        f'{program} on {vm.name} is a wrapper: handed a password (for '
        f'--version) it started {what}; a program handed the load password '
        'may start no other, which could show it in `ps`, so give the load '
        'generator\'s binary itself (docs/secrets.md).')


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
  the VM's cores. Without the library (no compiler on a Local machine) the
  secret is put into the arguments themselves.
  """
  if not _LibraryReady(vm):
    return ([vm.Pinned(vm_util.QuoteAll([a.replace(TOKEN, secret) for a in argv]))
             for argv in argvs], [])
  commands = []
  for argv in argvs:
    exe = CheckTool(vm, argv[0])
    preload = (f'env LD_PRELOAD=/proc/self/fd/{FD} {FD_ENV}={SECRET_FD} '
               f'{EXE_ENV}={shlex.quote(exe)}')
    commands.append(
        f'{vm.Pinned(f"{preload} {vm_util.QuoteAll(argv)}")} '
        f'{FD}<{shlex.quote(LibraryPath(vm))} '
        f'{SECRET_FD}< <(printf %s "${VARIABLE}")')
  return commands, [f'{VARIABLE}={shlex.quote(secret)}', f'export -n {VARIABLE}']
