# shellcheck shell=bash
# The kernel and limit settings Redis asks for (system_tuning.py; its
# SETTINGS names the same ones: a setting added here goes there too).
#   system_tuning.sh apply [HOLDER [ROOT]]
#                              as root: takes HOLDER's place in the lease
#                              (below) if given, then sets each setting (one at a
#                              time, so one read-only knob does not stop
#                              the others); prints tuning_failed=NAME for
#                              each refused (tuning_failed=lease: nothing
#                              set) and tuning_shared=HOLDER,... when other
#                              holders' tunings are in force, with ROOT
#                              (as restore's) tuning_unseen=HOLDER,... for
#                              those whose run has no workspace there and
#                              tuning_workspace=HOLDER WORKSPACE for each
#                              of the others' workspaces (at most 8 each)
#   system_tuning.sh read      NAME=VALUE of every setting in force
#   system_tuning.sh snapshot  NAME=VALUE of every setting restore can write
#                              back, limits_file=present|absent, and, while
#                              a lease is kept, lease_NAME=VALUE of each of
#                              its values (the machine's own) and a
#                              holder=HOLDER line for each of its holders
#   system_tuning.sh restore HOLDER [ROOT]
#                              as root: gives HOLDER's place in the lease
#                              up; the last holder writes back each value
#                              of the lease no longer in force (and removes
#                              the limits file the first holder found
#                              absent); prints restore_deferred=HOLDER,...
#                              while others hold it, restore_failed=NAME
#                              for each it could not write back; with
#                              ROOT (where runs make their workspaces,
#                              ROOT/pkb-<run_uri>.*), restore_unseen=
#                              HOLDER,... for each other holder whose run
#                              has no workspace there: nothing of it runs
#                              on the machine (a run whose record was lost
#                              holds its place for good), and
#                              restore_workspace=HOLDER WORKSPACE for each
#                              workspace of the others (at most 8 each:
#                              where the runner finds each one's record)
# Exits 0: what failed is in the output.
#
# The lease: the machine's settings as they were before the first tuning
# still in force, and a holder=RUN_URI/VM line for each tuning in force,
# kept by root under an flock, written before anything is changed. Two
# runs on one lent machine (side by side, overlapping in prepare and
# teardown, or one never torn down) each took a snapshot of what the other
# had applied; now the machine gets back what it had before the first, when
# the last is torn down, and no run's teardown undoes a tuning another run
# is still measuring under.

umask 022
nofile=1048576
limits=/etc/security/limits.d/99-pkb-redis.conf
thp=/sys/kernel/mm/transparent_hugepage
lease=/var/lib/pkb-host-settings

# The settings kept in a file, a line each: NAME FILE VALUE-APPLIED.
in_files() {
  printf '%s\n' \
    "transparent_hugepage $thp/enabled never" \
    "transparent_hugepage_defrag $thp/defrag never" \
    "net_core_somaxconn /proc/sys/net/core/somaxconn 65535" \
    "net_ipv4_tcp_max_syn_backlog /proc/sys/net/ipv4/tcp_max_syn_backlog 65535" \
    "vm_overcommit_memory /proc/sys/vm/overcommit_memory 1"
}

# in_force FILE: its value ("always madvise [never]": never).
in_force() {
  local value re='\[([^]]*)\]'
  value=$(cat -- "$1" 2>/dev/null) || return 0
  if [[ $value =~ $re ]]; then value=${BASH_REMATCH[1]}; fi
  printf '%s' "$value"
}

# lock_lease: the lease opened on descriptor $held and locked (waits for
# another holder's apply or restore, at most a minute). The last holder
# removes the file while others may wait on it: a lock on a file no longer
# named is let go and the name opened again.
lock_lease() {
  for _ in 1 2 3 4 5; do
    [ ! -L "$lease" ] || return 1
    exec {held}<>"$lease" || return 1
    flock -w 60 "$held" || return 1
    if [ "$(stat -L -c %d:%i -- "/dev/fd/$held")" = \
        "$(stat -c %d:%i -- "$lease" 2>/dev/null)" ]; then
      return 0
    fi
    exec {held}>&-
  done
  return 1
}

# holders [BUT]: the lease's holders but BUT, comma-separated.
holders() {
  local IFS=,
  local -a found
  mapfile -t found < <(sed -n 's/^holder=//p' "$lease" | grep -vxF -- "$1")
  printf '%s' "${found[*]}"
}

# workspaces KEY ROOT HOLDER: a KEY=HOLDER WORKSPACE line for each
# workspace of HOLDER's run under ROOT (any user's; the first 8: a run has
# one; the runner checks each against the record it finds); fails when
# there is none. A name another user chose is said only if it is of plain
# characters (one with a newline would be lines of its own), though it
# counts as found.
workspaces() {
  local -a spaces
  local workspace
  spaces=("${2%/}/pkb-${3%%/*}".*)
  [ -e "${spaces[0]}" ] || [ -L "${spaces[0]}" ] || return 1
  for workspace in "${spaces[@]:0:8}"; do
    if [[ $workspace =~ ^[A-Za-z0-9_./-]+$ ]]; then
      echo "$1=$3 $workspace"
    fi
  done
}

# hold HOLDER [ROOT]: HOLDER's place in the lease; the first holder writes
# the settings in force (as the lender left them) before its line.
hold() {
  local others
  [[ $1 =~ ^[A-Za-z0-9_./-]+$ ]] && lock_lease 2>/dev/null || return 1
  if ! grep -q '^holder=' "$lease"; then
    snapshot > "$lease" || return 1
  fi
  others=$(holders "$1")
  [ -z "$others" ] || echo "tuning_shared=$others"
  [ -z "$others" ] || [ -z "$2" ] || unseen tuning "$2" "$others"
  grep -qxF -- "holder=$1" "$lease" || echo "holder=$1" >> "$lease"
}

apply() {
  local name file value
  # A machine deleted with the run (a cloud VM) holds no place.
  if [ -n "$1" ] && ! hold "$1" "$2"; then
    echo tuning_failed=lease  # Nothing changed that could not be put back.
    return
  fi
  while read -r name file value; do
    { echo "$value" > "$file"; } 2>/dev/null || echo "tuning_failed=$name"
  done < <(in_files)
  { printf '%s soft nofile %s\n%s hard nofile %s\n' '*' "$nofile" '*' \
      "$nofile" root "$nofile" root "$nofile" > "$limits"; } 2>/dev/null ||
    echo tuning_failed=nofile_limit
}

in_files_now() {
  local name file
  while read -r name file _; do
    echo "$name=$(in_force "$file")"
  done < <(in_files)
}

# put_back NAME=VALUE...: writes back each value no longer in force.
put_back() {
  local arg name value file
  for arg in "$@"; do
    name=${arg%%=*} value=${arg#*=}
    if [ "$name" = limits_file ]; then
      [ "$value" != absent ] || rm -f -- "$limits" 2>/dev/null ||
        echo restore_failed=nofile_limit
      continue
    fi
    file=$(in_files | while read -r n f _; do
      if [ "$n" = "$name" ]; then echo "$f"; fi
    done)
    if [ -z "$file" ]; then
      echo "restore_failed=$name"
    elif [ "$(in_force "$file")" != "$value" ]; then
      { echo "$value" > "$file"; } 2>/dev/null || echo "restore_failed=$name"
    fi
  done
}

# unseen VERB ROOT HOLDER,...: VERB_unseen= the holders whose run has no
# workspace under ROOT (any user's: a name there is enough to leave it be),
# and a VERB_workspace=HOLDER WORKSPACE line for each workspace of the
# others (the first 8: a run has one; the runner checks each against the
# record it finds). VERB: tuning (apply's) or restore.
unseen() {
  local holder
  local -a found=() all
  IFS=, read -r -a all <<< "$3"
  for holder in "${all[@]}"; do
    workspaces "$1_workspace" "$2" "$holder" || found+=("$holder")
  done
  local IFS=,
  [ "${#found[@]}" -eq 0 ] || echo "$1_unseen=${found[*]}"
}

restore() {
  local holder=$1 others rest
  local -a old
  if [ ! -e "$lease" ] && [ ! -L "$lease" ]; then
    return  # No tuning in force: never applied, or put back already.
  fi
  if ! lock_lease 2>/dev/null; then
    echo restore_failed=lease
    return
  fi
  if ! grep -qxF -- "holder=$holder" "$lease"; then
    # Not ours (never applied, or given up already); a lease nobody holds
    # (made by the open above, or by a hold cut short) goes.
    grep -q '^holder=' "$lease" || rm -f -- "$lease"
    return
  fi
  # Rewritten in place: the file (and its lock) stays the one others wait
  # on.
  rest=$(grep -vxF -- "holder=$holder" "$lease")
  printf '%s\n' "$rest" > "$lease"
  others=$(holders "")
  if [ -n "$others" ]; then
    echo "restore_deferred=$others"
    [ -z "$2" ] || unseen restore "$2" "$others"
    return
  fi
  mapfile -t old < <(grep -v '^holder=' "$lease")
  put_back "${old[@]}"
  rm -f -- "$lease"
}

snapshot() {
  in_files_now
  if [ -e "$limits" ]; then
    echo limits_file=present
  else
    echo limits_file=absent
  fi
}

case $1 in
  apply) apply "$2" "${3-}" ;;
  read)
    in_files_now
    echo "nofile_limit=$(ulimit -n 2>/dev/null)"
    ;;
  snapshot)
    snapshot
    if grep -q '^holder=' "$lease" 2>/dev/null; then
      sed -n '/^holder=/!s/^/lease_/p' "$lease"
      sed -n '/^holder=/p' "$lease"
    fi
    ;;
  restore) restore "$2" "${3-}" ;;
  *) echo "system_tuning.sh: unknown verb $1" >&2; exit 2 ;;
esac
exit 0
