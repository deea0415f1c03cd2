# shellcheck shell=bash
# Every command on an SSH VM (remote_shell.CommandScript):
#   ssh_command.sh SCRATCH_DIR SCRIPTS_DIR TIMEOUT_S KILL_GRACE_S \
#       ENV_ON_STDIN COMMAND
# Prints the marker \036pkb-started\036 on stderr first, which tells "the
# remote shell started" apart from an ssh connection failure (both can end
# with exit 255). With a SCRIPTS_DIR (the command runs a shipped script),
# checks it first: it and every file in it this user's own, a directory
# (a regular file), writable by no one else (shell_scripts.Problem's rule);
# then exports PKB_SCRIPTS, else exits 125 before running anything, after
# \036pkb-scripts\036 and what is wrong ("missing", or the first file at
# fault) on stderr. With ENV_ON_STDIN 1,
# reads the environment (export lines, base64) from stdin's first line, so
# secrets never appear in any process's argv; then runs COMMAND with bash
# in SCRATCH_DIR (as Local VMs run it) under `timeout`: TERM after
# TIMEOUT_S, KILL KILL_GRACE_S later.
printf '\036pkb-started\036' >&2
unset PKB_SCRIPTS  # Only ever the one checked here.
if [ -n "$2" ]; then
  if [ -e "$2" ] || [ -L "$2" ]; then
    problem=$(find "$2" -maxdepth 1 \( ! -user "$EUID" -o -perm /022 \
      -o \( -path "$2" ! -type d \) -o \( ! -path "$2" ! -type f \) \) \
      -printf '%p (uid %U, mode %m, type %y)\n' -quit 2>&1)
  else
    problem=missing
  fi
  if [ -n "$problem" ]; then
    printf '\036pkb-scripts\036%s\n' "${problem%%$'\n'*}" >&2
    exit 125
  fi
  export PKB_SCRIPTS=$2
fi
if [ "$5" = 1 ]; then
  IFS= read -r __pkb_env
  eval "$(printf %s "$__pkb_env" | base64 -d)"
  unset __pkb_env
fi
cd -- "$1" 2>/dev/null || true
# Redis clients need many sockets; the hard limit is the ceiling.
ulimit -n "$(ulimit -Hn)" 2>/dev/null
exec timeout -k "$4" "$3" bash -c "$6"
