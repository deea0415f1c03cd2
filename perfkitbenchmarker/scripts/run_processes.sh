# shellcheck shell=bash
# The processes a run owns, on any machine of the run: the bash half of
# run_processes.py (read its docstring first). Run as
#   run_processes.sh VERB ARG...   (run_processes.Command builds the line)
#   own DIR MARK          writes the identity of the caller's process group
#                         (the shell that runs this: this process's parent) to
#                         DIR/.probe-MARK.<its pid>; exits 143 when the
#                         probe of MARK was stopped already (stop-marked ran
#                         before the command got going: it must not start)
#   stop-marked DIR MARK WAIT_MS
#                         marks the probe of MARK stopped, then stops each
#                         process group its files name (escalate)
#   stop-job JOB WAIT_MS  stops the session JOB/sid names (a detached job)
#   stop PID START KIND WAIT_MS
#                         stops the process group (KIND group) or session
#                         (KIND session) PID leads
#   wait PID START WAIT_MS
#                         waits for PID's exit (PID's alone), sending nothing
#   identity FILE PID     writes PID's identity to FILE
#   read PID DIR          what ReadProcess parses: PID's stat line, its
#                         Threads: line, DIR as the machine resolves it, its
#                         command line and its working directory, a line each
#   busy DIR              exits 3 printing "<pid> <name>" of a process that
#                         works under DIR (the ownership rule; its control
#                         characters as \xNN), else 0
# Included, it also gives stop_strays (a probe's leftovers: scripts/probe.sh).
# Every stop exits 3 when a process it identified outlived TERM, the wait,
# KILL and the wait again. Included in another script (`. ./run_processes.sh`)
# it only defines its functions.

. ./process_stat.sh

# An identity is "<pid> <start time in clock ticks since boot>": with the
# PID the start time names one process for as long as the machine is up.
valid_identity() {
  case "$1$2" in '' | *[!0-9]*) return 1 ;; esac
  [ -n "$1" ] && [ -n "$2" ]
}

# works_under PID ROOT: the ownership rule (run_processes.WorksUnder is the
# same rule in Python): PID's working directory is ROOT or below it. The
# run's directories are its own (0700, unguessable names), so nothing else
# works there. Changes the shell's directory (a builtin, no fork per
# process: the foreign-CPU scan runs it over every process of a measured
# machine).
works_under() {
  cd -P "/proc/$1/cwd" 2>/dev/null && [[ $PWD/ == "${2%/}"/* ]]
}

# send SIGNAL ID KIND: the one place a signal is sent to a process of the
# run: to the process group (KIND group) or session (KIND session) ID leads,
# or to process ID alone (KIND leader: stop_strays). The caller has just
# checked ID's identity (escalate).
send() {
  if [ "$3" = leader ]; then
    kill "-$1" -- "$2" 2>/dev/null
  elif [ "$3" = session ]; then
    pkill "-$1" -s "$2" 2>/dev/null || kill "-$1" -- "-$2" 2>/dev/null
  else
    kill "-$1" -- "-$2" 2>/dev/null
  fi
}

# held ID KIND: a live process (not a zombie) is still in the group (KIND
# group) or session (KIND session) ID; never for KIND leader. The kernel
# gives no process the ID while a group or session of that ID exists, so
# once its leader was checked, what the group still holds after the
# leader's exit is what the leader led: the escalation goes on to it (a
# member that ignores TERM).
held() {
  local p field
  case "$2" in group) field=2 ;; session) field=3 ;; *) return 1 ;; esac
  for p in /proc/[0-9]*; do
    pstat "${p#/proc/}" || continue
    [ "${pf[0]}" != Z ] && [ "${pf[field]}" = "$1" ] && return 0
  done
  return 1
}

# ours ID START KIND: the leader is the process that started at START, or
# its group or session still holds a process (held).
ours() { alive "$1" "$2" || held "$1" "$3"; }

# gone_within ID START KIND WAIT_MS: waits (50 ms polls) until nothing is
# ours; fails if something still is after WAIT_MS.
gone_within() {
  local polls=$(($4 / 50))
  while ours "$1" "$2" "$3"; do
    [ "$polls" -gt 0 ] || return 1
    polls=$((polls - 1))
    sleep 0.05
  done
}

# escalate ID START KIND WAIT_MS: the one escalation. Nothing unless ID is
# the process that started at START; then SIGTERM to what it leads, up to
# WAIT_MS for all of it to exit, then SIGKILL and the wait again, each
# signal only while the leader, or what its group holds, is still ours, so
# an ID another process took meanwhile is never signalled. 0 once all of it
# is gone, 3 if something outlived both.
escalate() {
  local signal
  alive "$1" "$2" || return 0
  for signal in TERM KILL; do
    ours "$1" "$2" "$3" || return 0
    send "$signal" "$1" "$3"
    gone_within "$1" "$2" "$3" "$4" && return 0
  done
  return 3
}

# The files of a probe's mark in DIR: its groups', and the one saying it
# was stopped (a '-' where the groups' have a '.'). The mark is the run's
# (run_processes.py checks it); checked here too, as it becomes a name.
mark_files() {
  case "$2" in
    '' | *[!a-z0-9_-]*) echo "not a probe mark: $2" >&2; exit 2 ;;
  esac
  groups="${1%/}/.probe-$2."
  stopped="${1%/}/.probe-$2-stopped"
}

own() {
  local caller group
  mark_files "$1" "$2"
  # The process's own parent, run as `bash -c` or in a subshell alike ($$
  # and $PPID are the main shell's in a subshell).
  pstat "$BASHPID" || exit 1
  caller=${pf[1]}
  pstat "$caller" || exit 1
  group=${pf[2]}
  pstat "$group" || pf=()
  echo "$group ${pf[19]}" > "$groups$caller"
  [ ! -e "$stopped" ] || exit 143
}

stop_marked() {
  local f g t
  mark_files "$1" "$2"
  : 2>/dev/null > "$stopped"
  for f in "$groups"*; do
    [ -f "$f" ] || continue
    read -r g t < "$f"
    if valid_identity "$g" "$t"; then
      escalate "$g" "$t" group "$3" || exit 3
    fi
    rm -f -- "$f"
  done
}

stop_job() {
  local sid start
  read -r sid start 2>/dev/null < "$1/sid" || return 0  # It never started.
  valid_identity "$sid" "$start" || return 0
  escalate "$sid" "$start" session "$2"
}

# stop_strays WAIT_MS: stops, one process at a time (escalate, KIND
# leader), what the caller's process group holds besides the caller and the
# processes above it: a probe's tool whose `timeout` was killed goes on in
# the probe's group after the probe (reparented, nothing waits for it), as
# do a tool's children, which `timeout --foreground` never signals
# (scripts/probe.sh). The group is the caller's own, so what it holds is the
# run's. 0 once they are gone, 3 if one outlived TERM and KILL.
stop_strays() {
  local p group above=" " strays=() stray rc=0
  p=$BASHPID
  pstat "$p" || return 0
  group=${pf[2]}
  while [ "$p" -gt 1 ] && pstat "$p"; do above+="$p "; p=${pf[1]}; done
  for p in /proc/[0-9]*; do
    p=${p#/proc/}
    [[ $above == *" $p "* ]] && continue
    pstat "$p" && [ "${pf[2]}" = "$group" ] && [ "${pf[0]}" != Z ] &&
      strays+=("$p ${pf[19]}")
  done
  for stray in "${strays[@]}"; do
    # shellcheck disable=SC2086  # "<pid> <start>": two words.
    escalate $stray leader "$1" || rc=3
  done
  return "$rc"
}

identity() {
  pstat "$2" || pf=()
  echo "$2 ${pf[19]:-0}" > "$1"
}

read_process() {
  local pid=$1
  pline "/proc/$pid/stat" || exit 3
  echo "$l"
  grep -s "^Threads:" "/proc/$pid/status" || echo
  (cd -- "$2" 2>/dev/null && pwd -P) || echo
  tr '\0\n' '  ' < "/proc/$pid/cmdline" 2>/dev/null
  echo
  # Last: everything after the fourth line is it, verbatim.
  readlink "/proc/$pid/cwd" 2>/dev/null || true
}

busy() {
  local p c i name='' shown='' above=" "
  # This process and those above it (the command that runs it, `timeout`)
  # started in DIR: not what is meant.
  p=$BASHPID
  while [ "$p" -gt 1 ] && pstat "$p"; do above+="$p "; p=${pf[1]}; done
  for p in /proc/[0-9]*; do
    p=${p#/proc/}
    [[ $above == *" $p "* ]] && continue
    if works_under "$p" "$1"; then
      # Its name is any bytes but NUL (prctl(PR_SET_NAME), its
      # executable's): each control character is said as \xNN, so a
      # newline in it is no line of its own (other_runs.sh's lines).
      IFS= read -r -d '' name 2>/dev/null < "/proc/$p/comm"
      name=${name%$'\n'}
      for ((i = 0; i < ${#name}; i++)); do
        c=${name:i:1}
        [[ $c != [[:cntrl:]] ]] || printf -v c '\\x%02x' "'$c"
        shown+=$c
      done
      echo "$p $shown"
      exit 3
    fi
  done
}

if [ "${0##*/}" = run_processes.sh ]; then
  case "${1-}" in
    own) own "$2" "$3" ;;
    stop-marked) stop_marked "$2" "$3" "$4" ;;
    stop-job) stop_job "$2" "$3" ;;
    stop) valid_identity "$2" "$3" && escalate "$2" "$3" "$4" "$5" ;;
    wait)
      valid_identity "$2" "$3" || exit 0
      gone_within "$2" "$3" leader "$4" || exit 3
      ;;
    identity) identity "$2" "$3" ;;
    read) read_process "$2" "$3" ;;
    busy) busy "$2" ;;
    *) echo "run_processes.sh: unknown verb ${1-}" >&2; exit 2 ;;
  esac
fi
