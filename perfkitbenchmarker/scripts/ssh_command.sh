# shellcheck shell=bash
# Every command on an SSH VM (remote_shell.CommandScript):
#   ssh_command.sh SCRATCH_DIR TIMEOUT_S KILL_GRACE_S ENV_ON_STDIN COMMAND
# Prints the marker \036pkb-started\036 on stderr first, which tells "the
# remote shell started" apart from an ssh connection failure (both can end
# with exit 255); with ENV_ON_STDIN 1, reads the environment (export lines,
# base64) from stdin's first line, so secrets never appear in any process's
# argv; then runs COMMAND with bash in SCRATCH_DIR (as Local VMs run it)
# under `timeout`: TERM after TIMEOUT_S, KILL KILL_GRACE_S later.
printf '\036pkb-started\036' >&2
if [ "$4" = 1 ]; then
  IFS= read -r __pkb_env
  eval "$(printf %s "$__pkb_env" | base64 -d)"
  unset __pkb_env
fi
cd -- "$1" 2>/dev/null || true
# Redis clients need many sockets; the hard limit is the ceiling.
ulimit -n "$(ulimit -Hn)" 2>/dev/null
exec timeout -k "$3" "$2" bash -c "$5"
