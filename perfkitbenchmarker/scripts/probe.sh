# shellcheck shell=bash
# A probe (load_generators/concurrent.py): its load commands side by side,
# each under `timeout`, with the client's CPU snapshots around its window;
# ends by printing one bundle of everything it brought back.
#   probe.sh BASE TIMEOUT_S WINDOW_US SAMPLE_EVERY_S RUN_ROOT OWN_PID N
#            COMMAND... FILE...
# BASE: its files' prefix; the N COMMANDs (shell command lines) run side by
# side, each `timeout --foreground` TIMEOUT_S, its output in BASE.<i>.out
# and .err, its PID in .pid and "rc start end" in .rc. The load processes'
# snapshots: BASE.stat0 when they start, BASE.stat1 after WINDOW_US (the
# load's test time) or, with WINDOW_US empty, every SAMPLE_EVERY_S while
# they run (the last one taken while they ran counts). RUN_ROOT, OWN_PID:
# snapshot.sh. The bundle: a line "KEY BASE64" for stat0, stat1, rc.<i>,
# out.<i>, err.<i> and file.<k> (each FILE), then @pkb-bundle-end
# (concurrent.ParseBundle). Sourced (shell_scripts.Sourced) by the probe's
# script, whose lines before may set what its commands need (an unexported
# password) and when to stop a command before its TIMEOUT_S. Without a
# window, at each sample a command still running is stopped (its processes,
# by run_processes.sh's escalation), BASE.<i>.stopped saying why in a word
# and what it saw ("stop.<i>" in the bundle):
#   STOP_ON       "error LINE": its stderr's first 20 lines hold this text
#                 (redis-benchmark --cluster retries a CLUSTERDOWN until its
#                 request count is done, minutes, for a probe the run
#                 refuses at its first error reply anyway);
#   IDLE_ON, IDLE_US
#                 "idle LINE": for IDLE_US microseconds, every line its
#                 stdout printed ('\r' or '\n' ended; blank ones aside)
#                 held IDLE_ON, or it printed none, counted from the probe's
#                 start (redis-benchmark's progress line of a quarter second
#                 with no reply: a server SIGSTOPped mid-probe held it to
#                 its bound, minutes);
#   STOP_AFTER_US "bound": the probe has run this many microseconds (a
#                 request count planned from a rate the server no longer
#                 serves would run several times the probe's length; what
#                 it printed until then is what it measured); with IDLE_ON,
#                 counted from the command's first line that is not
#                 IDLE_ON (its first replies): on a loaded machine a tool
#                 can take seconds to start, and one stopped before a whole
#                 second of replies measured nothing (a CI run's linear
#                 walk failed so: two progress lines in 2.25 s).
# That script, $0, is removed first.
rm -f -- "$0"

. ./snapshot.sh

base=$1 timeout_s=$2 window_us=$3 sample_every_s=$4
PKB_RUN_ROOT=$5 PKB_OWN_PID=$6
count=$7
shift 7
commands=("${@:1:count}")
files=("${@:count+1}")

# snap FILE [threads] [noscan]: snapshot.sh's snapshot of the load
# processes (the child of each `timeout` whose PID is in BASE.<i>.pid), with
# the foreign scan unless `noscan`, written whole or not at all (with
# `threads`: only if it saw a thread, so the last snapshot of a run that
# ends between two is one taken while it ran, and no process of the one it
# replaces has fewer live threads: a tool whose workers have ended while it
# prints its report is done, and its main thread alone read as an idle
# client, 0.3 % on a CPU and `latency` (hog flake hunt 9, over SSH). A
# process gone altogether (one of two tools, a helper) does not count.)
kept_live=()
snap() {
  local t f k p scan=scan ps=() SNAP_SEEN='' how=" ${*:2} "
  local -a SNAP_LIVE=()
  # shellcheck disable=SC2034  # Read by snapshot.sh: count SNAP_LIVE.
  local SNAP_COUNT_LIVE=1
  [[ $how != *" noscan "* ]] || scan=
  for f in "$base".*.pid; do
    read -r t < "$f" || continue
    if [ -r "/proc/$t/task/$t/children" ]; then
      read -ra k < "/proc/$t/task/$t/children"
    else
      mapfile -t k < <(pgrep -P "$t")
    fi
    ps+=("${k[@]}")
  done 2>/dev/null
  snapshot "$scan" "${ps[@]}" > "$1.tmp" 2>/dev/null
  if [[ $how == *" threads "* ]]; then
    [ -n "$SNAP_SEEN" ] || return 0
    for p in "${!kept_live[@]}"; do
      (( ${SNAP_LIVE[p]:-${kept_live[p]}} >= kept_live[p] )) || return 0
    done
  fi
  mv -f "$1.tmp" "$1"
  kept_live=()
  for p in "${!SNAP_LIVE[@]}"; do kept_live[p]=${SNAP_LIVE[p]}; done
}

# The probe's own overhead is what it adds to the tool's run, so its waits
# fork nothing: `nap S` sleeps in bash's `read -t` on a pipe that never
# gets data (a `sleep` child would need finding and killing at the end: a
# pkill costs 40-100 ms on a busy 2-core machine).
exec {nap_fd}<> <(:)
nap() { read -rt "$1" -u "$nap_fd" _; }

# stop_due: stops each command that is due to stop (STOP_ON, IDLE_ON,
# STOP_AFTER_US above). Builtins only: it runs at every sample; a command's
# stdout is read on from where the sample before left it (its fd kept open),
# never again from the start.
idle_fd=() idle_rest=() idle_seen=() idle_line=() first_seen=()
stop_due() {
  local f i n line t k why now fd text start
  now=${EPOCHREALTIME/[.,]/}
  for f in "$base".*.pid; do
    i=${f%.pid}
    i=${i##*.}
    if [ -e "$base.$i.stopped" ] || [ -e "$base.$i.rc" ]; then continue; fi
    why=
    if [ -n "${STOP_ON-}" ] && [ -s "$base.$i.err" ]; then
      n=0
      while (( n++ < 20 )) && IFS= read -r line; do
        [[ $line != *"$STOP_ON"* ]] || { why="error $line"; break; }
      done < "$base.$i.err"
    fi
    if [ -z "$why" ] && [ -n "${IDLE_ON-}" ] && [ -n "$t0" ]; then
      if [ -z "${idle_fd[i]-}" ] && [ -e "$base.$i.out" ] &&
        exec {fd}< "$base.$i.out"; then
        idle_fd[i]=$fd
      fi
      text=${idle_rest[i]-}
      if [ -n "${idle_fd[i]-}" ]; then
        IFS= read -r -d '' -u "${idle_fd[i]}" line
        text+=${line//$'\n'/$'\r'}
      fi
      while [[ $text == *$'\r'* ]]; do
        line=${text%%$'\r'*}
        text=${text#*$'\r'}
        [[ $line == *[![:space:]]* ]] || continue
        if [[ $line == *"$IDLE_ON"* ]]; then
          idle_line[i]=$line
        else
          idle_seen[i]=$now
          : "${first_seen[i]:=$now}"
        fi
      done
      idle_rest[i]=$text
      (( now - ${idle_seen[i]:-$t0} < IDLE_US )) ||
        why="idle ${idle_line[i]-}"
    fi
    start=$t0
    [ -z "${IDLE_ON-}" ] || start=${first_seen[i]-}
    if [ -z "$why" ] && [ -n "${STOP_AFTER_US-}" ] && [ -n "$start" ] &&
      (( now - start >= STOP_AFTER_US )); then
      why=bound
    fi
    [ -n "$why" ] || continue
    read -r t < "$f" || continue
    # The children file has no line end: read fails, k is set. Each child
    # (the tool, and argv_secret's helper beside it).
    read -ra k < "/proc/$t/task/$t/children"
    (( ${#k[@]} )) || continue  # It has just ended by itself.
    echo "$why" > "$base.$i.stopped"
    for t in "${k[@]}"; do
      pstat "$t" && escalate "$t" "${pf[19]}" leader 5000
    done
  done 2>/dev/null
}

# The first snapshot's scan of foreign processes (tens of ms) is taken
# once the tools have started, not before them: the scan is of
# the same moment within that time, and the tools start that much sooner.
# Not stopped mid-scan (a partial scan would count the processes it missed
# as born during the probe); stopped at once after it. Its own WHOLE line
# (snapshot.sh) ends it: one cut short anyway is not read.
scan0() {
  # A TERM waits for the scan (bash runs a trap once its foreground child
  # is done), then for its WHOLE line: exiting in the trap itself left the
  # scan without one, so it was not read (hog flake hunt 8).
  local stop=
  trap 'stop=1' TERM
  { fscan; whole; } >> "$base.stat0" 2>/dev/null
  trap - TERM
  [ -z "$stop" ] || exit 0
}

rm -f "$base".*.pid "$base".*.stopped "$base.stat1"
snap "$base.stat0" noscan
# The window's start: that snapshot's own clock (in us).
t0=${SNAP_WALL/./}
[ -n "$EPOCHREALTIME" ] || t0=
scanner=
if [ -n "$window_us" ]; then
  # The window counts from the first snapshot, not from the scan's end.
  (
    scan0
    w=$window_us
    [ -z "$t0" ] || w=$(( w - ${EPOCHREALTIME/[.,]/} + t0 ))
    (( w > 0 )) || w=0
    printf -v w %d.%06d $(( w / 1000000 )) $(( w % 1000000 ))
    nap "$w"
    snap "$base.stat1"
  ) &
  sampler=$!
else
  # The first soon (0.1 s in: /proc's clocks tick every 10 ms), then every
  # 20 ms until a tool is seen, then every SAMPLE_EVERY_S; a later snapshot
  # replaces it only when whole (one cut short by the end is dropped). None
  # has a foreign scan (tens of ms, on a busy machine seconds): the first
  # snapshot's is scan0's, beside the sampler, and the last one's is taken
  # once the tools have ended (below). A sampler that waited for a scan
  # kept its first snapshot when the scan outlasted the tools: the client's
  # figures read over 0.11 s of a 0.69 s probe (hog flake hunt 9, over SSH
  # at load 30).
  (
    nap 0.1
    until snap "$base.stat1" threads noscan; [ -e "$base.stat1" ]; do
      nap 0.02
    done
    while :; do
      nap "$sample_every_s"
      snap "$base.stat1" threads noscan
      [ -z "${STOP_ON-}${IDLE_ON-}${STOP_AFTER_US-}" ] || stop_due
    done
  ) &
  sampler=$!
  ( nap 0.1; scan0 ) &
  scanner=$!
fi

pids=()
for i in "${!commands[@]}"; do
  (
    stamp
    s=$t
    # exec: the PID written down is timeout's, whose child is the tool.
    eval "exec timeout --foreground -s INT -k 5 $timeout_s ${commands[i]}" \
      > "$base.$i.out" 2> "$base.$i.err" &
    echo $! > "$base.$i.pid"
    wait $!
    rc=$?
    stamp
    echo "$rc $s $t" > "$base.$i.rc"
  ) &
  pids+=($!)
done
for p in "${pids[@]}"; do wait "$p"; done
# A window the tools outlived is complete; else (they ended first, or no
# window) the last snapshot taken while they ran, or one now. The sampler
# naps in a builtin, so killing it leaves no child to find.
{ kill "$sampler" ${scanner:+"$scanner"}; wait; } 2>/dev/null
[ -e "$base.stat1" ] || snap "$base.stat1"
# A last snapshot without a foreign scan (the sampler's) gets one now,
# timed by its own clock (ForeignPct): without it the foreign share is
# unknown, and a client that waited for others' CPU most of the window
# read as `latency` (hog flake hunt 8, over SSH).
if ! grep -qF '{"scan":' "$base.stat1" 2>/dev/null; then
  { fscan; whole; } >> "$base.stat1" 2>/dev/null
fi
# A command that did not end by itself (timed out, or its `timeout` was
# killed: SIGKILL to the wrapper leaves the tool running, reparented) may
# have left processes in the probe's group that would outlive the probe:
# they are stopped now (run_processes.sh's stop_strays; a scan of /proc,
# tens of ms, so not after a probe whose commands all exited by themselves).
for i in "${!commands[@]}"; do
  rc=255
  read -r rc _ < "$base.$i.rc" 2>/dev/null
  if [[ $rc != [0-9]* ]] || (( rc >= 124 )); then
    stop_strays 5000 2>/dev/null
    break
  fi
done

emit() { printf "%s " "$1"; base64 -w0 "$2" 2>/dev/null; echo; }
# A tool's stderr past ERR_MAX bytes comes back as its first and last
# halves of that around a line saying how much was left out (CUT_MARK in
# concurrent.py): memtier writes a line per error reply (a preload of 1M
# keys refused by maxmemory: 100 MB, 663 MB of pkb's memory), and no
# bundle may grow without bound.
ERR_MAX=4194304
emiterr() {
  local size
  size=$(stat -c %s -- "$2" 2>/dev/null) || size=0
  if (( size <= ERR_MAX )); then
    emit "$1" "$2"
    return
  fi
  printf "%s " "$1"
  {
    head -c $((ERR_MAX / 2)) -- "$2"
    printf '\n@pkb-cut %d bytes left out\n' $((size - ERR_MAX))
    tail -c $((ERR_MAX / 2)) -- "$2"
  } 2>/dev/null | base64 -w0
  echo
}
emit stat0 "$base.stat0"
emit stat1 "$base.stat1"
for i in "${!commands[@]}"; do
  emit "rc.$i" "$base.$i.rc"
  emit "out.$i" "$base.$i.out"
  emiterr "err.$i" "$base.$i.err"
  [ ! -e "$base.$i.stopped" ] || emit "stop.$i" "$base.$i.stopped"
done
for k in "${!files[@]}"; do emit "file.$k" "${files[k]}"; done
echo @pkb-bundle-end
