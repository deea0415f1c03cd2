# shellcheck shell=bash
# The OS package managers, run one way by every install script (install.sh,
# ycsb_tools.sh). A library: scripts include it with `. ./packages.sh`
# (shell_scripts.Text inlines it).

# apt_get ARG...: apt-get as root on a VM nobody watches: it never asks
# (no terminal under a detached job), and it waits up to 10 minutes for
# dpkg's lock, which a fresh cloud VM's unattended-upgrades holds for a
# while after boot (without the wait the first install fails at once).
apt_get() {
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 -y -q "$@"
}

# rpm_install MANAGER PACKAGE...: dnf or yum, never asking.
rpm_install() {
  local manager=$1
  shift
  "$manager" install -y "$@"
}
