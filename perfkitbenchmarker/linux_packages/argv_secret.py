"""A preload library that keeps a load generator's password out of `ps`.

memtier_benchmark takes a password only as `-a`, and Debian's redis-benchmark
7.0 ignores REDISCLI_AUTH, so their argv would carry the load user's password
(engines/load_user.py) for the whole probe, readable by every user of the
client VM through `ps` or /proc/<pid>/cmdline. Instead the command line
carries TOKEN, and this small library, preloaded into the tool only, swaps
each argument containing TOKEN for a private copy with the password from the
environment (ENV) before the tool's main() runs. What /proc/<pid>/cmdline
shows is the original argument area, so `ps` only ever sees TOKEN; the
environment (/proc/<pid>/environ) is readable by the owner and root only.

How a probe uses it (load_generators/concurrent.py): the probe's 0600 script
exports ENV, and each tool runs as `env LD_PRELOAD=/proc/self/fd/9 <tool> ...
9<<library>`: naming the library through an inherited descriptor keeps
LD_PRELOAD working when the scratch path holds a space or a colon (which
LD_PRELOAD would take as separators), and `timeout`/`taskset` before the tool
never load it (they would otherwise pass the substituted argv on, visibly).

Fails safe: if the library cannot load, the tool sends TOKEN as the password
and the probe fails on authentication; nothing is leaked.

The library is compiled on each VM into the run's scratch directory (0700,
deleted with the run) with the VM's C compiler; remote VMs without one get
gcc from their package manager. On a Local machine without a compiler the
run goes on with the password in argv and says so once (scripts/setup.sh
installs gcc).

Extension seam: `Wrap` is the only entry point load generators need; any
program linked against glibc can be wrapped the same way.
"""

import logging
import shlex
from typing import List, Sequence, Tuple

from perfkitbenchmarker import errors
from perfkitbenchmarker import vm_util
from perfkitbenchmarker.linux_packages import package_commands
from perfkitbenchmarker.linux_packages import remote_install

TOKEN = '@PKB_ARGV_SECRET@'
ENV = 'PKB_ARGV_SECRET'
FD = 9
LIBRARY = 'argv_secret.so'

# Written for this project: the constructor runs in the preloaded tool before
# its main(), with the same argv array main() will read.
SOURCE = r'''
#include <stdlib.h>
#include <string.h>

static const char kToken[] = "%(token)s";

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

__attribute__((constructor))
static void SubstituteSecret(int argc, char **argv, char **envp) {
  (void)envp;
  const char *secret = getenv("%(env)s");
  if (secret == NULL) return;
  for (int i = 1; i < argc; i++) {
    char *replaced = Substitute(argv[i], secret);
    if (replaced != NULL) argv[i] = replaced;
  }
  /* Nothing the tool might start inherits the secret or the library. */
  unsetenv("%(env)s");
  unsetenv("LD_PRELOAD");
}
''' % {'token': TOKEN, 'env': ENV}


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
  vm.RemoteCommand(
      f'cc -shared -fPIC -O2 -o {shlex.quote(library)} '
      f'{shlex.quote(source)} && rm -f -- {shlex.quote(source)}',
      timeout=120, what='compiling argv_secret')


def IsInstalled(vm) -> bool:
  _, _, rc = vm.RemoteCommandWithReturnCode(
      f'test -f {shlex.quote(LibraryPath(vm))}')
  return rc == 0


def Wrap(vm, argvs: Sequence[Sequence[str]], secret: str
         ) -> Tuple[List[str], List[str]]:
  """Shell commands running `argvs` (holding TOKEN) without the secret shown.

  Returns (commands, script lines to run before them). Each command is
  pinned to the VM's cores. Without the library (no compiler on a Local
  machine) the secret is put into the arguments themselves.
  """
  vm.Install('argv_secret')
  # Asked once per VM: a probe must not pay a round trip for it each time.
  installed = vm.__dict__.get('_argv_secret_library')
  if installed is None:
    installed = vm.__dict__['_argv_secret_library'] = IsInstalled(vm)
  if not installed:
    return ([vm.Pinned(vm_util.QuoteAll([a.replace(TOKEN, secret) for a in argv]))
             for argv in argvs], [])
  redirect = f'{FD}<{shlex.quote(LibraryPath(vm))}'
  preload = f'env LD_PRELOAD=/proc/self/fd/{FD}'
  return ([f'{vm.Pinned(f"{preload} {vm_util.QuoteAll(argv)}")} {redirect}'
           for argv in argvs], [f'export {ENV}={shlex.quote(secret)}'])
