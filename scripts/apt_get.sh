#!/usr/bin/env bash
# apt-get that waits for another apt to finish instead of failing at once.
#
#   scripts/apt_get.sh update | install -y PACKAGE...
#
# On a fresh machine unattended-upgrades (or a second setup) may hold apt's
# locks. DPkg::Lock::Timeout makes apt wait for the dpkg lock itself, but
# `apt-get update` still fails at once on the package lists' lock and an
# install on the archives' lock, so a run that failed only because a lock
# was held is tried again every few seconds, up to PKB_APT_LOCK_WAIT_S
# (default 600) in all; then one line says who holds it. PKB_APT_OPTIONS adds
# apt options (the tests point apt at scratch directories with it).
set -uo pipefail
wait_s="${PKB_APT_LOCK_WAIT_S:-600}"
retry_s="${PKB_APT_LOCK_RETRY_S:-5}"
read -r -a extra <<< "${PKB_APT_OPTIONS:-}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
start=$SECONDS
while true; do
  out=$($SUDO env DEBIAN_FRONTEND=noninteractive apt-get \
        -o DPkg::Lock::Timeout="$wait_s" "${extra[@]}" "$@" 2>&1)
  rc=$?
  if [ "$rc" -eq 0 ] || ! grep -q 'Could not get lock' <<< "$out"; then
    if [ -n "$out" ]; then
      if [ "$rc" -eq 0 ]; then printf '%s\n' "$out"; else printf '%s\n' "$out" >&2; fi
    fi
    exit "$rc"
  fi
  if [ $((SECONDS - start)) -ge "$wait_s" ]; then
    holder=$(grep -m1 'Could not get lock' <<< "$out")
    echo "apt_get.sh: another apt still holds its lock after ${wait_s} s (${holder#E: }); try again when it has finished." >&2
    exit "$rc"
  fi
  echo "Another apt holds its lock; waiting (up to ${wait_s} s)..." >&2
  sleep "$retry_s"
done
