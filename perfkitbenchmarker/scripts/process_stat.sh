# shellcheck shell=bash
# /proc/<pid>/stat read one way in bash (process_stat.py's Parse is the same
# rule in Python): the kernel writes "<pid> (<name>) <state> <ppid> ...",
# where the name is any 15 bytes the process chose (spaces, ')', newlines),
# so the name ends at the line's LAST ')'. Builtins only: these run on
# machines being measured. A library: scripts include it with
# `. ./process_stat.sh` (shell_scripts.Text inlines it).

# pline FILE: sets l to the stat line in FILE, line breaks in the name read
# as spaces (one line to print); fails once the file is gone.
pline() {
  local m
  l=
  { IFS= read -r l && while IFS= read -r m; do l+=" $m"; done; } \
    2>/dev/null < "$1"
  [ -n "$l" ]
}

# ptail: sets pt to what follows the name in $l: ") S 1 ...".
ptail() { pt=${l%)*}; pt=${l:${#pt}}; }

# pstat PID: sets the array pf to the fields after the name (pf[0] state,
# pf[1] parent, pf[2] process group, pf[19] start time in clock ticks since
# boot); fails once the process is gone.
pstat() {
  local l pt
  pline "/proc/$1/stat" || return 1
  ptail
  read -ra pf <<< "${pt:1}"
}

# alive PID START: the process runs and started at START (clock ticks). A
# zombie has exited, unless other threads of it still run.
alive() {
  local t
  pstat "$1" && [ "${pf[19]}" = "$2" ] || return 1
  [ "${pf[0]}" != Z ] && return 0
  t=$(grep -s "^Threads:" "/proc/$1/status")
  t=${t##*[!0-9]}
  [ "${t:-0}" -gt 1 ]
}
