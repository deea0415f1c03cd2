# shellcheck shell=bash
# workspace.sh ROOT PREFIX NAME [WORKSPACE]: makes VM NAME's scratch
# directory and prints its path (run_scope.RemoteWorkspaceScript): in
# WORKSPACE while that is a 0700 directory of this user (another VM of the
# run on this machine made it), else in a new one mktemp -d makes,
# ROOT/PREFIX<random>. Sent inline (shell_scripts.INLINE): nothing of the
# run is shipped before its scratch directory is there.
# ROOT is checked first, by owned_paths.sh's rule (run_scope.CheckRoot's on
# the runner): it, every directory above it and every link on its way are
# root's or this user's, and writable by no one else (nor through an ACL)
# unless sticky (/tmp, 1777); else another user could rename the run's
# workspace away and put theirs in its place. A ROOT that fails is refused
# before anything is made: exit 4 (run_scope.ROOT_REFUSED) after a line
# \036pkb-root\036REASON WORDS on stderr (owned_check's reason and problem).
. ./owned_paths.sh

root=${1%/}
root=${root:-/}
if [[ $root != /* ]]; then
  problem="unreadable $1 is not an absolute path"
else
  problem=$(owned_check "$root" && [ -n "${owned_problem[$root]}" ] &&
    printf '%s %s' "${owned_reason[$root]}" "${owned_problem[$root]}")
fi
if [ -n "$problem" ]; then
  printf '\036pkb-root\036%s\n' "${problem%%$'\n'*}" >&2
  exit 4
fi
d=${4-}
if [ -z "$d" ] || [ -L "$d" ] ||
    [ "$(stat -c %u:%a -- "$d" 2> /dev/null)" != "$(id -u):700" ]; then
  d=$(mktemp -d "${root%/}/${2}XXXXXXXX") || exit 1
fi
mkdir -m 700 -- "$d/$3" && printf '%s\n' "$d/$3"
