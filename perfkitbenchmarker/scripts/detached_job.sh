# shellcheck shell=bash
# A command that outlives the SSH connection (remote_shell.py, ssh_jobs.py).
#   detached_job.sh start JOB TIMEOUT_S KILL_GRACE_S WAIT_S [COLLECTED_JOB...]
#     Reads the job's script from stdin into JOB/cmd (0600; the script
#     deletes itself when it starts) and starts it in a session of its own
#     (setsid, nohup) under `timeout`; the job writes stdout, stderr and
#     finally rc into JOB, and holds an flock on JOB/lock while it runs, so
#     a collector blocks on the lock instead of polling. Writes the session
#     leader's identity to JOB/sid (run_processes.sh's `identity`), prints
#     @pkb-job-started (remote_shell.JOB_STARTED_MARKER) and, when WAIT_S is
#     not 0, collects as `collect` does. COLLECTED_JOBs, earlier job dirs
#     already collected, are removed here, so collecting never deletes what
#     it may read again. Exits 1, printing no marker, if the job could not
#     start.
#   detached_job.sh collect JOB WAIT_S
#     Waits up to WAIT_S for the job to end (on its lock), then prints its
#     rc, stdout and stderr (base64) and @pkb-job-done (remote_shell.
#     DONE_MARKER: output cut short is told apart), or @pending.

. ./run_processes.sh

start() {
  local job=$1 timeout_s=$2 grace_s=$3
  shift 4
  umask 077
  mkdir -p "$job" || return 1
  cat > "$job/cmd" || return 1
  [ "$#" -eq 0 ] || rm -rf -- "$@"
  exec 8> "$job/lock" || return 1
  if command -v flock >/dev/null; then flock 8 || return 1; fi
  # shellcheck disable=SC2016  # The runner's own $1..$3.
  setsid nohup bash -c 'timeout -k "$1" "$2" bash "$3/cmd" 8>&- \
      > "$3/stdout" 2> "$3/stderr"; echo $? > "$3/rc.tmp"; \
      mv "$3/rc.tmp" "$3/rc"' runner "$grace_s" "$timeout_s" "$job" \
    < /dev/null > /dev/null 2>&1 &
  identity "$job/sid" "$!" || return 1
  exec 8>&-
}

collect() {
  local job=$1
  if command -v flock >/dev/null; then
    flock -w "$2" "$job/lock" true
  else
    sleep 1
  fi 2>/dev/null
  if [ -e "$job/rc" ]; then
    printf '@rc %s\n@out ' "$(cat "$job/rc")"
    base64 -w0 "$job/stdout"
    printf '\n@err '
    base64 -w0 "$job/stderr"
    printf '\n@pkb-job-done\n'
  else
    echo @pending
  fi
}

case $1 in
  start)
    start "${@:2}" || exit 1
    echo @pkb-job-started
    [ "$5" = 0 ] || collect "$2" "$5"
    ;;
  collect) collect "$2" "$3" ;;
esac
