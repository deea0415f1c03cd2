# shellcheck shell=bash
# The kernel and limit settings Redis asks for (system_tuning.py; its
# SETTINGS names the same ones: a setting added here goes there too).
#   system_tuning.sh apply     as root: sets each (one at a time, so one
#                              read-only knob does not stop the others);
#                              prints tuning_failed=NAME for each refused
#   system_tuning.sh read      NAME=VALUE of every setting in force
#   system_tuning.sh snapshot  NAME=VALUE of every setting restore can write
#                              back, and limits_file=present|absent
#   system_tuning.sh restore NAME=VALUE...
#                              as root: writes back each value no longer in
#                              force (limits_file=absent: removes the limits
#                              file the run made); prints restore_failed=NAME
#                              for each it could not
# Exits 0: what failed is in the output.

nofile=1048576
limits=/etc/security/limits.d/99-pkb-redis.conf
thp=/sys/kernel/mm/transparent_hugepage

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

apply() {
  local name file value
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

restore() {
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

case $1 in
  apply) apply ;;
  read)
    in_files_now
    echo "nofile_limit=$(ulimit -n 2>/dev/null)"
    ;;
  snapshot)
    in_files_now
    if [ -e "$limits" ]; then
      echo limits_file=present
    else
      echo limits_file=absent
    fi
    ;;
  restore) restore "${@:2}" ;;
  *) echo "system_tuning.sh: unknown verb $1" >&2; exit 2 ;;
esac
exit 0
