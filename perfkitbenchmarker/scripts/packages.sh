# shellcheck shell=bash
# The OS package managers, run one way by every install script (install.sh,
# ycsb_tools.sh). A library: scripts include it with `. ./packages.sh`
# (shell_scripts.Text inlines it).

# as_root COMMAND...: COMMAND as root. The install scripts run as root
# already (remote_install.py runs them through sudo); scripts/apt_get.sh,
# which a user runs, puts sudo here, so only apt-get runs as root, never a
# script of a checkout.
as_root() { "$@"; }

# apt_get ARG...: apt-get as root on a machine nobody watches: it never
# asks (no terminal under a detached job), and it waits for another apt
# instead of failing at once. A fresh cloud VM's unattended-upgrades (or a
# second setup) holds apt's locks for a while: DPkg::Lock::Timeout makes apt
# wait for dpkg's lock itself, but `apt-get update` fails at once on the
# package lists' lock and an install on the archives' lock, so a run that
# failed only on a held lock is tried again every PKB_APT_LOCK_RETRY_S
# (default 5) seconds, up to PKB_APT_LOCK_WAIT_S (default 600) in all; then
# one line says who holds it. PKB_APT_OPTIONS adds apt options (tests point
# apt at scratch directories with it). Builtins only around apt-get and
# sleep: a script's PATH may hold nothing else.
apt_get() {
  local wait_s=${PKB_APT_LOCK_WAIT_S:-600} retry_s=${PKB_APT_LOCK_RETRY_S:-5}
  local start=$SECONDS out rc line extra=()
  read -r -a extra <<< "${PKB_APT_OPTIONS:-}"
  while true; do
    rc=0
    out=$(DEBIAN_FRONTEND=noninteractive as_root apt-get \
      -o DPkg::Lock::Timeout="$wait_s" -y -q "${extra[@]}" "$@" 2>&1) || rc=$?
    if [ "$rc" -eq 0 ] || [[ $out != *'Could not get lock'* ]]; then
      if [ -z "$out" ]; then :
      elif [ "$rc" -eq 0 ]; then printf '%s\n' "$out"
      else printf '%s\n' "$out" >&2
      fi
      return "$rc"
    fi
    if [ $((SECONDS - start)) -ge "$wait_s" ]; then
      while IFS= read -r line; do
        [[ $line == *'Could not get lock'* ]] && break
      done <<< "$out"
      echo "${0##*/}: another apt still holds its lock after ${wait_s} s" \
        "(${line#E: }); try again when it has finished." >&2
      return "$rc"
    fi
    echo "Another apt holds its lock; waiting (up to ${wait_s} s)..." >&2
    sleep "$retry_s"
  done
}

# rpm_install MANAGER PACKAGE...: dnf or yum, never asking.
rpm_install() {
  local manager=$1
  shift
  "$manager" install -y "$@"
}
