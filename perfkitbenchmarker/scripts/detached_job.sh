# shellcheck shell=bash
# A command that outlives the SSH connection (remote_shell.py, ssh_jobs.py).
#   detached_job.sh start JOB TIMEOUT_S KILL_GRACE_S [COLLECTED_JOB...]
#     Reads the job's script from stdin into JOB/cmd (0600; the script
#     deletes itself when it starts) and starts it in a session of its own
#     (setsid, nohup) under `timeout`; the job writes stdout, stderr and
#     finally rc into JOB, and holds an flock on JOB/lock while it runs, so
#     a collector blocks on the lock instead of polling. Prints the session
#     leader's PID. COLLECTED_JOBs, earlier job dirs already collected, are
#     removed here, so collecting never deletes what it may read again.
#   detached_job.sh collect JOB WAIT_S
#     Waits up to WAIT_S for the job to end (on its lock), then prints its
#     rc, stdout and stderr (base64) and @pkb-job-done (remote_shell.
#     DONE_MARKER: output cut short is told apart), or @pending.
job=$2
case $1 in
  start)
    set -e
    timeout_s=$3 grace_s=$4
    shift 4
    umask 077
    mkdir -p "$job"
    cat > "$job/cmd"
    [ "$#" -eq 0 ] || rm -rf -- "$@"
    exec 8> "$job/lock"
    if command -v flock >/dev/null; then flock 8; fi
    # shellcheck disable=SC2016  # The runner's own $1..$3.
    setsid nohup bash -c 'timeout -k "$1" "$2" bash "$3/cmd" 8>&- \
        > "$3/stdout" 2> "$3/stderr"; echo $? > "$3/rc.tmp"; \
        mv "$3/rc.tmp" "$3/rc"' runner "$grace_s" "$timeout_s" "$job" \
      < /dev/null > /dev/null 2>&1 &
    echo $!
    ;;
  collect)
    if command -v flock >/dev/null; then
      flock -w "$3" "$job/lock" true
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
    ;;
esac
