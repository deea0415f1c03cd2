# shellcheck shell=bash
# `snapshot SCAN PID...`: one CPU snapshot, the one both sides take (the
# probe's `snap`, the server sampler), read by client_cpu.Snapshot.Parse.
# A library: a script includes it with `. ./snapshot.sh` and sets
# PKB_RUN_ROOT (the directory every process of the run works under; empty:
# no foreign scan) and PKB_OWN_PID (pkb's PID when the VM is this machine,
# else 0) before it takes a snapshot.
#
# A snapshot is JSON lines; its first line is its head, with the format's
# version (the @-line format before it was version 1; 2 had no last line),
# its last line says it is whole:
#   {"v":3,"wall":EPOCH_S,"uptime":S,"clk":CLK_TCK}
#   {"cpu":ROW}                     each cpu row of /proc/stat
#   {"pid":P,"tid":T,"stat":LINE}   each thread's stat line ...
#   {"pid":P,"tid":T,"sched":LINE}  ... and schedstat line (pthreads)
#   {"pid":P,"cpus":LIST}           its Cpus_allowed_list (pcg)
#   {"pid":P,"cgroup":DIR}          its cgroup and each parent with a CPU
#   {"dir":DIR,"file":F,"text":L}   quota, each quota file and cpu.stat line
#   {"scan":true,"uptime":S}        then {"fg":LINE}: the stat line of each
#                                   process foreign to the run (fscan),
#                                   S when the scan began
#   {"whole":true}                  the snapshot's end: a snapshot written
#                                   line by line and cut short (a starved
#                                   sampler its stop gave up on) may end
#                                   between two lines, short of a process's
#                                   affinity or cgroup, and is not read. A
#                                   part appended later (probe.sh's scan0)
#                                   ends with one too; what follows the
#                                   last one is not read.
# It also sets SNAP_WALL to its head's wall clock, SNAP_SEEN to 1 once a
# live thread of a PID was read, and, where the including script sets
# SNAP_COUNT_LIVE (probe.sh; the server sampler has no use for it),
# SNAP_LIVE[PID] to the number of its live threads read. Bash builtins only (read, echo, cd,
# $EPOCHREALTIME) but getconf once: snapshots run while the machine is
# measured.

# process_stat.sh's pline/ptail/pstat, and works_under: the run's ownership
# rule.
. ./run_processes.sh

clk=$(getconf CLK_TCK 2>/dev/null || echo 100)

# js TEXT: sets j to TEXT as a JSON string. A process's name is any 15
# bytes: control characters are written as \u escapes (rare: one test).
js() {
  j=$1
  # Most lines need no escape: one test for them.
  [[ $j == *[\\\"[:cntrl:]]* ]] || { j=\"$j\"; return; }
  j=${j//\\/\\\\}
  j=${j//\"/\\\"}
  if [[ $j == *[[:cntrl:]]* ]]; then
    local i c out=
    for ((i = 0; i < ${#j}; i++)); do
      c=${j:i:1}
      [[ $c != [[:cntrl:]] ]] || printf -v c '\\u%04x' "'$c"
      out+=$c
    done
    j=$out
  fi
  j=\"$j\"
}

# stamp: sets t to the time (a fork only where bash lacks $EPOCHREALTIME).
stamp() {
  t=${EPOCHREALTIME/,/.}
  [ -n "$t" ] || t=$(date +%s.%N)
}

# counters: every snapshot's head and /proc/stat's cpu rows.
counters() {
  local l t
  stamp
  # shellcheck disable=SC2034  # For the including script.
  SNAP_WALL=$t
  read -r l _ < /proc/uptime
  echo "{\"v\":3,\"wall\":$t,\"uptime\":$l,\"clk\":$clk}"
  while IFS= read -r l; do
    [ "${l#cpu}" = "$l" ] || { js "$l"; echo "{\"cpu\":$j}"; }
  done < /proc/stat
}

# The cgroup mounts (v1 with the cpu controller, v2), read once.
cg1='' r1=/ cg2='' r2=/
{
  while read -r _ _ _ root mount _ rest; do
    fs=${rest#*- }
    fs=${fs%% *}
    case $fs in
      cgroup) [[ ,${rest##* }, == *,cpu,* ]] && { cg1=$mount; r1=$root; } ;;
      cgroup2) cg2=$mount; r2=$root ;;
    esac
  done < /proc/self/mountinfo
} 2>/dev/null

# pthreads PID: every thread's stat and schedstat line.
pthreads() {
  local f l pt tid
  case $1 in ''|*[!0-9]*) return 0 ;; esac
  for f in /proc/"$1"/task/*/stat /proc/"$1"/task/*/schedstat; do
    pline "$f" || continue
    tid=${f#/proc/*/task/}
    tid=${tid%/*}
    js "$l"
    if [[ $f == */schedstat ]]; then
      echo "{\"pid\":$1,\"tid\":$tid,\"sched\":$j}"
      continue
    fi
    echo "{\"pid\":$1,\"tid\":$tid,\"stat\":$j}"
    # A zombie (argv_secret's finished process substitution) is no load.
    ptail
    [[ $pt == ") Z "* ]] && continue
    # shellcheck disable=SC2034  # For the including script.
    SNAP_SEEN=1
    [ -z "$SNAP_COUNT_LIVE" ] || SNAP_LIVE[$1]=$(( ${SNAP_LIVE[$1]:-0} + 1 ))
  done
}

# pcg PID: its Cpus_allowed_list, then its cgroup and each parent that has
# a CPU quota file: the quota files (v1 cpu.cfs_quota_us and
# cpu.cfs_period_us, v2 cpu.max) and cpu.stat.
pcg() {
  local p=$1 l id c path d top r f dir
  case $p in ''|*[!0-9]*) return 0 ;; esac
  while IFS= read -r l; do
    if [ "${l#Cpus_allowed_list:}" != "$l" ]; then
      js "${l#Cpus_allowed_list:[[:space:]]}"
      echo "{\"pid\":$p,\"cpus\":$j}"
      break
    fi
  done 2>/dev/null < /proc/"$p"/status
  while IFS=: read -r id c path; do
    if [ "$id" = 0 ] && [ -z "$c" ]; then
      top=$cg2 r=$r2
    elif [[ ,$c, == *,cpu,* ]]; then
      top=$cg1 r=$r1
    else
      continue
    fi
    [ -n "$top" ] || continue
    [ "$r" = / ] || path=${path#"$r"}
    top=${top%/}
    d=$top${path%/}
    while [ "${#d}" -gt "${#top}" ]; do
      if [ -r "$d/cpu.max" ] || [ -r "$d/cpu.cfs_quota_us" ]; then
        js "$d"
        dir=$j
        echo "{\"pid\":$p,\"cgroup\":$dir}"
        for f in cpu.max cpu.cfs_quota_us cpu.cfs_period_us cpu.stat; do
          while IFS= read -r l; do
            js "$l"
            echo "{\"dir\":$dir,\"file\":\"$f\",\"text\":$j}"
          done 2>/dev/null < "$d/$f"
        done
      fi
      d=${d%/*}
    done
  done 2>/dev/null < /proc/"$p"/cgroup
}

# fscan: {"scan":true,"uptime":S} (S: /proc/uptime as it starts), then the
# stat line of every process that does not work under PKB_RUN_ROOT
# (run_processes.sh's works_under) and is not PKB_OWN_PID, i.e. the
# processes foreign to the run.
fscan() {
  [ -n "$PKB_RUN_ROOT" ] || return 0
  local up
  read -r up _ < /proc/uptime
  echo "{\"scan\":true,\"uptime\":$up}"
  (
    root=${PKB_RUN_ROOT%/}
    for f in /proc/[0-9]*/stat; do
      pline "$f" || continue
      p=${f#/proc/}
      p=${p%/stat}
      ptail
      # Kernel threads (PID 2 and its children) are never the run's
      # competitors here: their work (softirq, I/O) is mostly done for it.
      # Nor is the snapshotting shell itself ($$: the sampler works from /).
      # The parent is read after the name (ptail): a name is any 15 bytes.
      [[ $p == 2 || $p == "$$" || $p == "${PKB_OWN_PID:-0}" ||
         $pt == ") "?" 2 "* ]] && continue
      works_under "$p" "$root" && continue
      js "$l"
      echo "{\"fg\":$j}"
    done
  )
}

# whole: the line that ends a snapshot, and each part appended to one.
whole() {
  echo '{"whole":true}'
}

# snapshot SCAN PID...: counters, then pthreads and pcg of each PID, then
# fscan if SCAN is not empty. The shell's own cgroup too: a probe's load
# processes are born in it, so the first snapshot, taken before they exist,
# has its counters (their throttling counts from the start).
snapshot() {
  local p
  counters
  pcg $$
  for p in "${@:2}"; do
    pthreads "$p"
    pcg "$p"
  done
  [ -z "$1" ] || fscan
  whole
}
