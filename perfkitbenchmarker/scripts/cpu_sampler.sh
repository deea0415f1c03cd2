# shellcheck shell=bash
# The server sampler (load_generators/interference.py): snapshots a
# server's processes into a series until it is told to stop.
#   cpu_sampler.sh BASE RUN_ROOT OWN_PID SLEEPS PID...
# BASE.out gets the series (snapshot.sh's snapshots, one after another,
# then {"end":true}); the first and the last snapshot scan for foreign
# processes (RUN_ROOT, OWN_PID: snapshot.sh). SLEEPS: the sleeps between
# snapshots, space-separated (client_cpu.SampleSchedule). It prints `ready`
# once its first snapshot is written, holds an flock on BASE.lock while it
# runs, and ends when a line arrives on the FIFO BASE.wake (it sleeps in
# `read -t` on it: the stop costs no polling and no signal) or BASE.stop
# appears, when SLEEPS are spent (bounded), or when BASE's directory is
# gone.

. ./snapshot.sh

base=$1 PKB_RUN_ROOT=$2 PKB_OWN_PID=$3
read -ra sleeps <<< "$4"
shift 4
pids=("$@")
exec {lock}>>"$base.lock"
flock "$lock"
mkfifo -m 600 "$base.wake" 2>/dev/null
exec {wake}<>"$base.wake"
# The series is written through one descriptor opened here: a stop that
# gave up waiting (a starved machine) and removed BASE.out leaves the late
# writes in no file, where reopening by name would make the file again.
exec {out}>>"$base.out"

shot() { snapshot "$1" "${pids[@]}" 1>&"$out" 2>/dev/null; }

shot scan
echo ready
exec > /dev/null
# Gone with the run's directory: a run killed between Start and Stop
# leaves no sampler behind past its teardown.
# The stop also leaves BASE.stop (and, once done, removes BASE.wake): a
# wake line that arrives as `read -t` times out can be lost (bash drops
# what it read when the timeout fires, as on a starved machine), and the
# stop must still end the sampler.
for sleep_s in "${sleeps[@]}"; do
  read -r -t "$sleep_s" -u "$wake" _ && break
  [ -d "${base%/*}/" ] || break
  if [ -e "$base.stop" ] || [ ! -p "$base.wake" ]; then break; fi
  shot
done
shot scan
echo '{"end":true}' 1>&"$out"
