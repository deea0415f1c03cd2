# shellcheck shell=bash
# trusted.sh PROGRAM: prints what is wrong with PROGRAM (a path, or a name
# PATH finds) by trusted_programs.py's rule, for the user running it: owned
# by root or this user and writable by no one else (a sticky directory
# passes; group write only for root's group), and so every directory above
# it, as given and with its links resolved, and every link on the way
# (owned by root or this user) with the directories above it. Prints
# nothing when it passes.
# Exits 3 when PATH finds no such name (a code of its own: bash's errors
# and a refused login are 1, 2, 126, 127, 255), else 0 (a path that is not
# there passes too: its caller says so).
# Coreutils' stat and readlink only.

me=$(id -u)
program=$1
case $program in
  /*) ;;
  *) program=$(command -v -- "$program") || exit 3 ;;
esac
[ -e "$program" ] || exit 0
real=$(readlink -f -- "$program") || real=$program

# check PATH: fails, saying why, when PATH itself is not safe.
check() {
  local uid gid mode
  read -r uid gid mode < <(stat -Lc "%u %g %a" -- "$1") ||
    { echo "$1 cannot be read"; return 1; }
  if [ "$uid" != 0 ] && [ "$uid" != "$me" ]; then
    echo "$1 is owned by uid $uid"
    return 1
  fi
  mode=$((8#$mode))
  [ -d "$1" ] && (( mode & 01000 )) && return 0
  if (( mode & 2 )) || { (( mode & 020 )) && [ "$gid" != 0 ]; }; then
    printf "%s is writable by other users (mode %04o)\n" "$1" \
      $((mode & 07777))
    return 1
  fi
}

# walk PATH: check of / and each directory down to PATH.
walk() {
  local at='' part parts
  check / || return 1
  IFS=/ read -ra parts <<< "${1#/}"
  for part in "${parts[@]}"; do
    [ -n "$part" ] || continue
    at=$at/$part
    check "$at" || return 1
  done
}

# links PATH: walk of the directory of each symbolic link resolving PATH
# passes through (that directory's links resolved) and the link's owner
# check, in order: a link met half way (a link to a link, a directory that
# is a link) is checked where it lives, as trusted_programs._Links.
links() {
  local path=$1 at part parts parent target uid i hops=0 found
  while (( hops < 40 )); do
    at='' found=''
    IFS=/ read -ra parts <<< "${path#/}"
    for i in "${!parts[@]}"; do
      part=${parts[i]}
      [ -n "$part" ] || continue
      at=$at/$part
      if [ -L "$at" ]; then
        found=$at
        break
      fi
    done
    [ -n "$found" ] || return 0
    hops=$((hops + 1))
    parent=$(readlink -f -- "$(dirname -- "$found")") || parent=/
    walk "$parent" || return 1
    read -r uid < <(stat -c %u -- "$found") ||
      { echo "$found cannot be read"; return 1; }
    if [ "$uid" != 0 ] && [ "$uid" != "$me" ]; then
      echo "${parent%/}/$part is a symbolic link owned by uid $uid"
      return 1
    fi
    target=$(readlink -- "$found") || return 0
    case $target in
      /*) ;;
      *) target=${parent%/}/$target ;;
    esac
    # What follows the link in the path, after its target.
    path=$target
    for part in "${parts[@]:i+1}"; do
      path=$path/$part
    done
  done
}

walk "$(dirname -- "$program")" && links "$program" && walk "$real"
exit 0
