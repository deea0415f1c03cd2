# shellcheck shell=bash
# Every command on an SSH VM (remote_shell.CommandScript):
#   ssh_command.sh SCRATCH_DIR SCRIPTS_DIR TIMEOUT_S KILL_GRACE_S \
#       ENV_ON_STDIN COMMAND
# Prints the marker \036pkb-started\036 on stderr first, which tells "the
# remote shell started" apart from an ssh connection failure (both can end
# with exit 255) and from a login shell whose startup files ended it before
# the command (a ~/.bashrc that exits); and on stdout, where what such files
# print (a greeting) comes before it, so it is told apart from the
# command's output (remote_shell.CommandStdout); then keeps of the login's PATH only what no other user
# can add a program to (safe_path; what it leaves out said on stderr). With a SCRIPTS_DIR (the command runs
# a shipped script), checks it first: it and every file in it this user's own, a directory
# (a regular file), writable by no one else (shell_scripts.Problem's rule);
# then exports PKB_SCRIPTS, else exits 125 before running anything, after
# \036pkb-scripts\036 and what is wrong ("missing", or the first file at
# fault) on stderr. With ENV_ON_STDIN 1,
# reads the environment (export lines, base64) from stdin's first line, so
# secrets never appear in any process's argv; then runs COMMAND with bash
# in SCRATCH_DIR (as Local VMs run it) under `timeout`: TERM after
# TIMEOUT_S, KILL KILL_GRACE_S later. The run's workspace (SCRATCH_DIR's
# parent) is touched once a minute: other_runs.sh reads when its run last
# sent a command.
printf '\036pkb-started\036' >&2
printf '\036pkb-started\036'

# The login's PATH, kept below to what no other user can add to.
login=${PKB_LOGIN_PATH-$PATH}
# Nor does a bash the command starts read ~/.bashrc (bash does when it
# sees it was run by sshd).
unset PKB_LOGIN_PATH SSH_CLIENT SSH2_CLIENT
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
# run_command ARGS: the command itself, once PATH is set.
run_command() {
  export PATH
  unset login cache key safe
  if [ "$5" = 1 ]; then
    IFS= read -r __pkb_env
    eval "$(printf %s "$__pkb_env" | base64 -d)"
    unset __pkb_env
  fi
  if [ -n "$1" ] && cd -- "$1" 2>/dev/null; then
    # The workspace's time: when the run last sent a command here, which
    # any login can read (scripts/other_runs.sh; nothing of a run may work
    # in its workspace yet, and another login's processes are not to see).
    # Set once a minute (.pkb-seen: the minute it was), well inside
    # other_runs' QUIET: touch is a fork, 2-6 ms of CPU a command.
    local minute seen=
    printf -v minute '%(%s)T' -1
    minute=$((minute / 60))
    { IFS= read -r seen < .pkb-seen; } 2>/dev/null
    if [ "$seen" != "$minute" ]; then
      touch -c -- .. 2>/dev/null
      echo "$minute" 2>/dev/null > .pkb-seen
    fi
  fi
  # Redis clients need many sockets; the hard limit is the ceiling.
  ulimit -n "$(ulimit -Hn)" 2>/dev/null
  exec timeout -k "$4" "$3" bash --norc -c "$6"
}
# The command line started this bash on the system's directories, the
# login's PATH in PKB_LOGIN_PATH (remote_shell.CommandScript). safe_path
# costs about 10 ms of CPU and a run sends thousands of commands, so a
# command that finds the scratch directory the run's (its scripts checked
# above) keeps the answer for this login PATH there, and every command reads
# it back: only from a regular file this user owns (no other user can make
# one, and it is written 0600), and only for the same login PATH. Such a
# command execs before bash reads further (it reads a script a command at
# a time), so it never parses safe_path and owned_paths.sh either.
cache=$1/.pkb-safe-path
if [ -n "$1" ] && [ -f "$cache" ] && [ ! -L "$cache" ] && [ -O "$cache" ] &&
    { IFS= read -r key && IFS= read -r safe; } < "$cache" &&
    [ "$key" = "$login" ]; then
  PATH=$safe
  run_command "$@"
fi
. ./owned_paths.sh

# safe_path PATH: PATH's directories that no other user can add a program
# to (trusted_programs.KeepSafePath's rule, as a Local run keeps its own):
# each existing one (or the nearest above a missing one) passes
# owned_paths.sh's rule and is itself writable by no one else (group:
# root's only; sticky or not; nor by its ACL). A relative entry (the directory a command
# runs in, which varies) is left out. Joined by ':'; the system's
# directories when none is kept. Each entry left out is said on stderr, a
# line each: \036pkb-path\036REASON ENTRY (WHY) (remote_shell.LeftOutOfPath;
# the run warns once), REASON owned_paths.sh's word for the kind of fault
# (owner, link, mode, acl, unreadable: what mends it), or relative for a
# relative entry, which names no one place. Run in a subshell (it changes
# directory).
safe_path() {
  local entry base why reason gid mode acl_why
  local -a entries kept=() left=()
  local -A bases=()
  IFS=: read -ra entries <<< "$1"
  for entry in "${entries[@]}"; do
    [[ $entry == /* && $entry != *$'\n'* ]] || continue
    base=$entry
    while [ ! -e "$base" ] && [ ! -L "$base" ]; do
      base=${base%/*}
      base=${base:-/}
    done
    bases[$entry]=$base
  done
  owned_check "${bases[@]}"
  for entry in "${entries[@]}"; do
    why='relative: the directory each command runs in' reason=relative
    [[ $entry != /* ]] || why='it cannot be entered' reason=unreadable
    if [[ $entry == /* && -n ${bases[$entry]-} ]]; then
      base=${bases[$entry]}
      why=${owned_problem[$base]} reason=${owned_reason[$base]}
    fi
    if [ -z "$why" ]; then
      read -r _ gid mode <<< "${owned_info[${owned_real[$base]}]}"
      mode=$((16#$mode))
      if (( mode & 2 )) || { (( mode & 020 )) && [ "$gid" != 0 ]; }; then
        printf -v why '%s is writable by other users (mode %04o)' \
          "${owned_real[$base]}" $((mode & 07777))
        reason=mode
      elif (( mode & 020 )); then
        _owned_acl "${owned_real[$base]}"
        why=$acl_why reason=acl
      fi
    fi
    if [ -n "$why" ]; then
      left+=("$reason ${entry:-(empty)} ($why)")
    else
      kept+=("$entry")
    fi
  done
  [ "${#left[@]}" = 0 ] || printf '\036pkb-path\036%s\n' "${left[@]}" >&2
  local IFS=:
  printf %s "${kept[*]:-$2}"
}
PATH=$(safe_path "$login" "$PATH")
if [ -n "$2" ]; then
  (set -C && umask 077 && printf '%s\n%s\n' "$login" "$PATH" > "$cache.$$" &&
    mv -f -- "$cache.$$" "$cache") 2> /dev/null
fi
run_command "$@"
