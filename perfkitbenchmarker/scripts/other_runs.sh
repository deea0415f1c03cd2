# shellcheck shell=bash
# other_runs.sh ROOT RUN_URI LIMIT [WAIT MAKE [LIVE]]: the workspaces other
# runs of this user have under ROOT (run_scope: ROOT/pkb-<run_uri>.<random>),
# a line each:
#   busy WORKSPACE PID NAME   a process works in it (run_processes.sh's
#                             busy: the ownership rule)
#   live WORKSPACE            none does, but its run is one of LIVE (the
#                             run_uris, comma-separated, whose pkb holds its
#                             run lock on the runner: one provisioning)
#   idle WORKSPACE            none does (a run that ended without teardown,
#                             or one between two stages)
# Only directories of this user's own (own_dir's rule: never a symlink,
# another user's or one others can write; a process working in one of ours
# is ours), the first LIMIT of them; RUN_URI's own are left out. Read by
# provider.StaticVirtualMachine before the run makes its workspace, so it
# is sent inline (shell_scripts.INLINE): nothing is shipped there yet.
# With WAIT and MAKE (the shell making the run's workspace), the look and
# the making are one step under a lock on ROOT (waited for at most WAIT
# seconds): MAKE runs only when no line says busy or live, so of two runs
# provisioning at one moment the second sees the first's workspace.

. ./own_dir.sh
. ./run_processes.sh

root=${1%/}
mine="pkb-$2."

scan() {
  local workspace name found run
  # -user before the limit: other users' names cannot use it up.
  while IFS= read -r -d '' workspace; do
    name=${workspace##*/}
    [[ $name != "$mine"* && $name =~ ^pkb-[a-z0-9]+\.[A-Za-z0-9_]+$ ]] ||
      continue
    (own_dir "$workspace") 2>/dev/null || continue
    if found=$(busy "$workspace"); then
      run=${name#pkb-}
      if [[ ,${6-}, == *",${run%%.*},"* ]]; then
        echo "live $workspace"
      else
        echo "idle $workspace"
      fi
    else
      echo "busy $workspace $found"
    fi
  done < <(find "$root/" -mindepth 1 -maxdepth 1 -name 'pkb-*.*' -type d \
    -user "$(id -u)" -print0 2>/dev/null | head -z -n "$3")
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
if grep -q '^\(busy\|live\) ' <<< "$found"; then exit 0; fi
bash -c "$5"
