#!/usr/bin/env bash
# apt-get that waits for another apt to finish instead of failing at once:
# packages.sh's apt_get, which VMs run too (its comment says why and how).
#
#   scripts/apt_get.sh update | install PACKAGE...
set -uo pipefail
# shellcheck disable=SC1091  # a shipped script, checked with them
. "$(dirname "$0")/../perfkitbenchmarker/scripts/packages.sh"
if [ "$(id -u)" -ne 0 ]; then
  # sudo passes no environment on: apt-get's goes along explicitly.
  as_root() { sudo env DEBIAN_FRONTEND="$DEBIAN_FRONTEND" "$@"; }
fi
apt_get "$@"
