# shellcheck shell=bash
# own_dir PATH, a library (`. ./own_dir.sh`): exits 3, one line on stderr,
# when PATH exists and is not a directory of the run's own: a symlink, not
# a directory, not this user's, or writable by group or others
# (run_scope.CheckOwnDir's rule, on a VM). Returns 0 otherwise, when PATH
# is not there too.
own_dir() {
  [ -e "$1" ] || [ -L "$1" ] || return 0
  if [ -L "$1" ] || [ ! -d "$1" ] || [ ! -O "$1" ] ||
      (( 8#$(stat -c %a -- "$1") & 8#022 )); then
    echo "$1 is not this run's own directory (a symlink, not ours, or" \
      "writable by others); left alone." >&2
    exit 3
  fi
}
