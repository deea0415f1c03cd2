#!/usr/bin/env bash
# apt-get that waits for another apt to finish instead of failing at once:
# packages.sh's apt_get, which VMs run too (its comment says why and how).
#
#   scripts/apt_get.sh update | install PACKAGE...
#
# Not root: runs itself again through sudo, which passes no environment on,
# so the PKB_APT_* settings go along explicitly.
set -uo pipefail
if [ "$(id -u)" -ne 0 ]; then
  exec sudo env PKB_APT_LOCK_WAIT_S="${PKB_APT_LOCK_WAIT_S:-}" \
    PKB_APT_LOCK_RETRY_S="${PKB_APT_LOCK_RETRY_S:-}" \
    PKB_APT_OPTIONS="${PKB_APT_OPTIONS:-}" "$BASH" "$0" "$@"
fi
# shellcheck disable=SC1091  # a shipped script, checked with them
. "$(dirname "$0")/../perfkitbenchmarker/scripts/packages.sh"
apt_get "$@"
