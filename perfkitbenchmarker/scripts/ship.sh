# shellcheck shell=bash
# ship.sh DIR: puts the run's scripts in DIR (shell_scripts.ShipCommand),
# read from stdin as lines "NAME BASE64-TEXT": into a new directory beside
# DIR (0700, each file 0500, the user's own), which then takes DIR's place.
# Nothing when something is there already (shipped before, by another
# thread maybe, or something the commands' check refuses: left as it is,
# never replaced).
# Exits 4 when DIR's parent (the VM's scratch directory) is not there, 3
# (own_dir) when it or its parent (the run's workspace) is not the run's
# own: nothing is written there.
# Run inline: it is what puts the others on the machine.

. ./own_dir.sh

set -e
umask 077
dir=${1%/}
[ ! -e "$dir" ] && [ ! -L "$dir" ] || exit 0
scratch=${dir%/*}
if [ ! -d "$scratch" ]; then
  echo "ship.sh: $scratch is not there" >&2
  exit 4
fi
own_dir "${scratch%/*}"
own_dir "$scratch"
new=$(mktemp -d "$dir.XXXXXX")
while read -r name text; do
  case $name in
    '' | */* | .*) echo "ship.sh: not a script name: $name" >&2; exit 2 ;;
  esac
  printf %s "$text" | base64 -d > "$new/$name"
  chmod 500 "$new/$name"
done
mv -T -- "$new" "$dir" 2>/dev/null || rm -rf -- "$new"
