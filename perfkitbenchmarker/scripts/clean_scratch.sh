# shellcheck shell=bash
# clean_scratch.sh SCRATCH_DIR: removes an SSH VM's scratch directory, then
# its workspace (the directory above it) once empty (ssh_vm.CleanUpScratch).
# Exits 3 and removes nothing when either is not the run's own (own_dir:
# one line on stderr), or when a process still works under the scratch
# directory (run_processes.sh's `busy`: its "<pid> <name>" on stdout; a
# shard that could not be stopped: its config and pidfile are how a later
# teardown finds it).

. ./own_dir.sh
. ./run_processes.sh

scratch=${1%/}
workspace=${scratch%/*}
own_dir "$workspace"
own_dir "$scratch"
busy "$scratch"
rm -rf -- "$scratch"
rmdir -- "$workspace" 2>/dev/null
exit 0
