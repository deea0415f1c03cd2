# shellcheck shell=bash
# What YCSB's build needs on a remote VM (linux_packages/ycsb.py):
#   ycsb_tools.sh MIN_JAVA missing
#       prints `jdk` (no java of at least MIN_JAVA on PATH) and/or `maven`
#       (no mvn); non-root.
#   ycsb_tools.sh MIN_JAVA install FAMILY MANAGER
#       as root: installs what is missing from the OS packages (FAMILY
#       debian: a headless JDK 17 and maven with apt; rhel: OpenJDK 17,
#       else Amazon Linux's Corretto 17, and maven with MANAGER, dnf or
#       yum), then checks java and mvn and prints "java MAJOR, MVN".
set -eo pipefail
. ./packages.sh
min_java=$1

# The major version of the java on PATH (0 if none).
java_major() {
  local out re='version "(1\.)?([0-9]+)'
  out=$(java -version 2>&1) || { echo 0; return 0; }
  if [[ $out =~ $re ]]; then echo "${BASH_REMATCH[2]}"; else echo 0; fi
}

missing() {
  [ "$(java_major)" -ge "$min_java" ] || echo jdk
  command -v mvn >/dev/null 2>&1 || echo maven
}

if [ "$2" = missing ]; then
  missing
  exit 0
fi
family=$3
manager=$4

packages=()
for tool in $(missing); do
  case $family:$tool in
    debian:jdk) packages+=(openjdk-17-jdk-headless) ;;
    debian:maven) packages+=(maven) ;;
    # Amazon Linux 2023 has Corretto, not OpenJDK packages.
    rhel:jdk) rpm_install "$manager" java-17-openjdk-devel ||
                rpm_install "$manager" java-17-amazon-corretto-devel ;;
    rhel:maven) rpm_install "$manager" maven ;;
  esac
done
if [ "${#packages[@]}" -gt 0 ]; then
  apt_get update
  apt_get install "${packages[@]}"
fi
major=$(java_major)
if [ "$major" -lt "$min_java" ]; then
  echo "java on PATH is version $major after installing; YCSB's build" \
    "needs $min_java or later" >&2
  exit 1
fi
command -v mvn >/dev/null ||
  { echo "mvn is not on PATH after installing maven" >&2; exit 1; }
echo "java $major, $(command -v mvn)"
