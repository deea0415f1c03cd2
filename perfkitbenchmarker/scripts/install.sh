# shellcheck shell=bash
# One step of an install on a remote VM, run as root:
#   install.sh STEP ARG...
# linux_packages/package_commands.py chooses the steps and their arguments
# from the VM's OS family and the run's options, one `install.sh STEP ARG...`
# line each, the first to fail ending the install; remote_install.py runs
# them through sudo, detached. Every value (a version, URL, codename,
# package, path) is an argument, never part of this text.
#
#   apt ARG...                 apt-get with ARGs (packages.sh's apt_get)
#   rpm MANAGER PACKAGE...     dnf or yum installs PACKAGEs
#   packages MANAGER PACKAGE...
#                              the OS's PACKAGEs with MANAGER (apt, dnf or
#                              yum); apt refreshes its lists and tries again
#                              when the first try fails (a fresh VM's lists
#                              are stale or empty)
#   rpm-redis MANAGER BIN_DIR [PACKAGE...]
#                              the OS's Redis (and PACKAGEs, in the same
#                              transaction): `redis`, else Amazon Linux
#                              2023's `redis6`, its redis6-* programs linked
#                              as BIN_DIR/redis-*
#   has-package PACKAGE        exit 0 when apt has PACKAGE, else 1
#   apt-repo KEY_URL KEYRING LIST LINE
#                              adds an APT repository: its signing key in
#                              KEYRING (fetched once), LINE in the sources
#                              file LIST; then refreshes the lists
#   pinned PRODUCT VERSION SOURCE PACKAGE...
#                              installs PACKAGEs at the newest packaged
#                              build of VERSION; if none, exit 3 saying
#                              PRODUCT VERSION is not in SOURCE and which
#                              versions are
#   deb URL                    downloads a .deb and installs it with apt
#   binary URL MEMBER DEST     downloads a tar.gz, installs its file MEMBER
#                              as DEST (mode 0755)
#   build URL PREFIX MAKE_ARG...
#                              downloads a source tarball, builds it with
#                              make and installs it into PREFIX
#   stop UNIT...               stops and disables packaged services (the
#                              benchmark starts its own shards; a stray
#                              server would take memory and CPU from them)
#   link-cli CLI BIN_DIR       links CLI as BIN_DIR/redis-cli unless a
#                              redis-cli is on PATH (the harness drives
#                              every shard with redis-cli: same protocol)
#   version PROGRAM            prints PROGRAM --version
#
# Downloads go into a private directory (mktemp -d) removed however the
# step ends: a fixed name in /tmp is another user's to make first, as a
# directory they can write or a file of theirs that root would install.
# Each download is a command of its own, so a failed one ends the step with
# curl's own error (in a pipe or before && it would not, and the next
# command would fail on the missing file instead).
set -eo pipefail
. ./packages.sh

# private: sets work to a new private directory, removed on exit.
private() {
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
}

apt_repo() {
  local key_url=$1 keyring=$2 list=$3 line=$4
  apt_get update
  apt_get install ca-certificates curl gpg
  if [ ! -s "$keyring" ]; then
    private
    curl -fsSL "$key_url" -o "$work/key"
    # apt reads binary keyrings; a repository may publish its key armored.
    if grep -q -e '-----BEGIN PGP' "$work/key"; then
      gpg --batch --yes --dearmor -o "$work/keyring" "$work/key"
    else
      mv -- "$work/key" "$work/keyring"
    fi
    mv -f -- "$work/keyring" "$keyring"
  fi
  # apt reads it as its own unprivileged user.
  chmod 644 "$keyring"
  printf '%s\n' "$line" > "$list"
  apt_get update
}

# The versions apt has of package $1, one a line, newest first.
packaged_versions() {
  apt-cache madison "$1" | awk -F'|' '{gsub(/ /, "", $2); print $2}'
}

pinned() {
  local product=$1 version=$2 source=$3 build package found="" packages=()
  shift 3
  # A build of VERSION: [EPOCH:]VERSION followed by '-' or '.' (7.2 takes
  # 7.2.4-1rl1~jammy1, not 7.20.0); VERSION is compared as text.
  while IFS= read -r build; do
    if [[ ${build#[0-9]*:} == "$version"[-.]* ]]; then
      found=$build
      break
    fi
  done < <(packaged_versions "$1")
  if [ -z "$found" ]; then
    echo "$product $version is not in $source; packaged versions:" \
      "$(packaged_versions "$1" | tr '\n' ' ')" >&2
    exit 3
  fi
  for package in "$@"; do packages+=("$package=$found"); done
  apt_get install --allow-downgrades "${packages[@]}"
}

rpm_redis() {
  local manager=$1 bin_dir=$2 program
  shift 2
  rpm_install "$manager" "$@" redis && return 0
  # Amazon Linux 2023 names the package and its programs redis6.
  rpm_install "$manager" "$@" redis6
  for program in server cli benchmark; do
    ln -sf "/usr/bin/redis6-$program" "$bin_dir/redis-$program"
  done
}

step=$1
shift
case $step in
  apt) apt_get "$@" ;;
  rpm) rpm_install "$@" ;;
  packages)
    if [ "$1" != apt ]; then
      rpm_install "$@"
    else
      shift
      apt_get install "$@" || { apt_get update && apt_get install "$@"; }
    fi
    ;;
  rpm-redis) rpm_redis "$@" ;;
  has-package) apt-cache show "$1" > /dev/null 2>&1 ;;
  apt-repo) apt_repo "$@" ;;
  pinned) pinned "$@" ;;
  deb)
    private
    curl -fsSL "$1" -o "$work/package.deb"
    apt_get install --allow-downgrades "$work/package.deb"
    ;;
  binary)
    private
    curl -fsSL "$1" -o "$work/archive.tar.gz"
    tar -xzf "$work/archive.tar.gz" -C "$work"
    install -D -m 0755 -- "$work/$2" "$3"
    ;;
  build)
    private
    curl -fsSL "$1" -o "$work/source.tar.gz"
    mkdir "$work/source"
    tar -xzf "$work/source.tar.gz" -C "$work/source" --strip-components=1
    prefix=$2
    shift 2
    make -C "$work/source" -j"$(nproc)" "$@"
    make -C "$work/source" install PREFIX="$prefix" "$@"
    ;;
  stop)
    for unit in "$@"; do
      systemctl disable --now "$unit" > /dev/null 2>&1 ||
        service "$unit" stop > /dev/null 2>&1 || true
    done
    ;;
  link-cli)
    if ! command -v redis-cli > /dev/null 2>&1; then
      cli=$(command -v "$1") ||
        { echo "install.sh: neither redis-cli nor $1 is on PATH" >&2; exit 1; }
      ln -sf "$cli" "$2/redis-cli"
    fi
    ;;
  version) "$1" --version ;;
  *)
    echo "install.sh: unknown step '$step'" >&2
    exit 2
    ;;
esac
