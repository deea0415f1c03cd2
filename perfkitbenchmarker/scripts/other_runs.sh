# shellcheck shell=bash
# other_runs.sh ROOT RUN_URI LIMIT [WAIT MAKE [LIVE [QUIET]]]: the
# workspaces other runs have under ROOT (run_scope: ROOT/pkb-<run_uri>.
# <random>), a line each:
#   busy WORKSPACE PID NAME   a process works in it (run_processes.sh's
#                             busy: the ownership rule)
#   live WORKSPACE            none does, but its run is one of LIVE (the
#                             run_uris, comma-separated, whose pkb holds its
#                             run lock on the runner: one provisioning)
#   recent WORKSPACE AGE USER none seen working, but its run sent a command
#                             here AGE (< QUIET) seconds ago: the time of the
#                             workspace, which each command of the run
#                             touches (ssh_command.sh), and which any login
#                             can read: a run of another runner, or another
#                             login USER's (whose processes are not to see)
#   idle WORKSPACE            none of that (a run that ended without
#                             teardown, or one between two stages, QUIET
#                             seconds after its last command)
# This user's: only directories of its own (own_dir's rule: never a symlink,
# another user's or one others can write; a process working in one of ours
# is ours), the first LIMIT of them; another login's: 0700 directories
# (as mktemp makes them), the first LIMIT, and only when recent. RUN_URI's
# own are left out. Read by provider.StaticVirtualMachine before the run
# makes its workspace, so it is sent inline (shell_scripts.INLINE): nothing
# is shipped there yet.
# With WAIT and MAKE (the shell making the run's workspace), the look and
# the making are one step under a lock on ROOT (waited for at most WAIT
# seconds): MAKE runs only when no line says busy, live or recent, so of two
# runs provisioning at one moment the second sees the first's workspace.

. ./own_dir.sh
. ./run_processes.sh

root=${1%/}
mine="pkb-$2."

# shape WORKSPACE: a workspace's name of a run not this one.
shape() {
  local name=${1##*/}
  [[ $name != "$mine"* && $name =~ ^pkb-[a-z0-9]+\.[A-Za-z0-9_]+$ ]]
}

scan() {
  local workspace name found run when user now age
  printf -v now '%(%s)T' -1
  # -user before the limit: other users' names cannot use it up.
  while IFS=' ' read -r -d '' when user workspace; do
    shape "$workspace" || continue
    (own_dir "$workspace") 2>/dev/null || continue
    name=${workspace##*/}
    run=${name#pkb-}
    age=$((now - ${when%.*}))
    if found=$(busy "$workspace"); then
      if [[ ,${6-}, == *",${run%%.*},"* ]]; then
        echo "live $workspace"
      elif ((age < ${7:-0})); then
        echo "recent $workspace $((age < 0 ? 0 : age)) $user"
      else
        echo "idle $workspace"
      fi
    else
      echo "busy $workspace $found"
    fi
  done < <(find "$root/" -mindepth 1 -maxdepth 1 -name 'pkb-*.*' -type d \
    -user "$(id -u)" -printf '%T@ %u %p\0' 2>/dev/null | head -z -n "$3")
  ((${7:-0} > 0)) || return 0
  # Another login's: its 0700 directory is all it shows; its time says
  # whether its run is sending commands here.
  while IFS=' ' read -r -d '' when user workspace; do
    shape "$workspace" || continue
    age=$((now - ${when%.*}))
    ((age < $7)) && echo "recent $workspace $((age < 0 ? 0 : age)) $user"
  done < <(find "$root/" -mindepth 1 -maxdepth 1 -name 'pkb-*.*' -type d \
    ! -user "$(id -u)" -perm 0700 -printf '%T@ %u %p\0' 2>/dev/null |
    head -z -n "$3")
  return 0
}

if [ -z "${5-}" ]; then
  scan "$@"
  exit 0
fi
if ! command -v flock > /dev/null; then
  echo "flock (util-linux) is not installed; it keeps two runs from" \
    "starting on this machine at one moment" >&2
  exit 1
fi
exec {claim}<"$root" || exit 1
if ! flock -w "$4" "$claim"; then
  echo "waited $4 s for the lock on $root (another run making its" \
    "workspace there)" >&2
  exit 1
fi
found=$(scan "$@")
[ -z "$found" ] || printf '%s\n' "$found"
if grep -q '^\(busy\|live\|recent\) ' <<< "$found"; then exit 0; fi
bash -c "$5"
