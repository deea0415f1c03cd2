# shellcheck shell=bash
# owned_paths.py's rule in bash, its one statement on a VM (trusted.sh for
# a program, ssh_command.sh's safe_path for a login PATH): a path passes
# when it and every directory of it, as given and with its links resolved,
# is owned by root or this user and writable by no one else (group: root's
# only; a sticky directory passes), and so is every directory above each
# symbolic link met on the way (a link to a link, a directory that is one:
# each where it lives), each such link owned by root or this user.
#
# owned_check PATH...: for each absolute PATH, owned_problem[PATH] is the
# first place at fault as owned_paths.Problem words it ('' when none is),
# owned_real[PATH] the PATH with its links resolved, owned_info[DIR] each
# directory's "uid gid mode" (stat -L, the mode in hex with the type). One
# stat for all the directories and one per link: cd -P resolves with no
# program run, so run it in a process or subshell of its own.
declare -A owned_problem=() owned_real=() owned_info=()

# _owned_dirs DIR: / and each directory down to DIR onto owned_check's way.
_owned_dirs() {
  local at='' rest=$1/ part
  way+=(d/)
  while [ -n "$rest" ]; do
    part=${rest%%/*} rest=${rest#*/}
    [ -z "$part" ] || { at=$at/$part; way+=("d$at"); }
  done
}

owned_check() {
  local me=$EUID path at part rest found parent link target hops i line
  local uid gid mode problem
  # way: each place in the order checked, "d" (a directory), "l" (a link)
  # or "!" (a problem) before it, "e" at each path's end.
  local -a way=() dirs=()
  local -A first=() seen=() links=()
  for path in "$@"; do
    first[$path]=${#way[@]}
    _owned_dirs "${path%/*}"
    # Each link resolving PATH passes through, named in its directory with
    # that directory's links resolved, after the directories above it
    # (owned_paths._Links); then PATH resolved, with no link left in `at`.
    rest=$path/ hops=0
    while :; do
      at='' found=''
      while [ -n "$rest" ] && [ -z "$found" ]; do
        part=${rest%%/*} rest=${rest#*/}
        [ -z "$part" ] || at=$at/$part
        [ -z "$part" ] || [ ! -L "$at" ] || found=$at
      done
      [ -n "$found" ] || break
      if (( ++hops > 40 )) || ! cd -P -- "${found%/*}/" 2> /dev/null; then
        way+=("!$found cannot be read")
        break
      fi
      parent=$PWD link=${PWD%/}/$part
      _owned_dirs "$parent"
      way+=("l$link")
      # "uid link -> target" (an unreadable link: no target, no way on).
      [ -n "${links[$link]+x}" ] || links[$link]=$(QUOTING_STYLE=literal \
        stat --printf '%u %N' -- "$link" 2> /dev/null)
      target=${links[$link]#* "$link -> "}
      [ "$target" != "${links[$link]}" ] || break
      [[ $target == /* ]] || target=${parent%/}/$target
      rest=$target/$rest
    done
    if [ -n "$found" ]; then
      :
    elif [ -d "${at:-/}" ] && cd -P -- "${at:-/}" 2> /dev/null; then
      owned_real[$path]=$PWD
    elif cd -P -- "${at%/*}/" 2> /dev/null; then
      owned_real[$path]=${PWD%/}/${at##*/}
    fi
    [ -n "${owned_real[$path]-}" ] || way+=("!$path cannot be read")
    _owned_dirs "${owned_real[$path]-}"
    way+=(e)
  done
  for at in "${way[@]}"; do
    [[ $at != d* || -n ${seen[$at]} ]] || dirs+=("${at#d}")
    seen[$at]=1
  done
  # "uid gid mode name": the name (any character but NUL) after the third
  # space; a directory stat cannot read has no line.
  while IFS= read -rd '' line; do
    owned_info[${line#* * * }]=${line%% /*}
  done < <(stat -L --printf '%u %g %f %n\0' -- "${dirs[@]}" 2> /dev/null)
  for path in "$@"; do
    problem='' i=${first[$path]}  # Not in (( )): a name is no expression.
    while [ -z "$problem" ] && [ "${way[i]}" != e ]; do
      at=${way[i]#?}
      case ${way[i]} in
        '!'*) problem=$at ;;
        l*)
          uid=${links[$at]%% *}
          [ -n "$uid" ] || problem="$at cannot be read"
          [ -z "$uid" ] || [ "$uid" = 0 ] || [ "$uid" = "$me" ] ||
            problem="$at is a symbolic link owned by uid $uid" ;;
        d*)
          read -r uid gid mode <<< "${owned_info[$at]:-- - 0}"
          mode=$((16#$mode))
          if [ "$uid" = - ]; then
            problem="$at cannot be read"
          elif [ "$uid" != 0 ] && [ "$uid" != "$me" ]; then
            problem="$at is owned by uid $uid"
          elif (( (mode & 0xF000) != 0x4000 || !(mode & 01000) )) &&
              (( mode & 2 || (mode & 020 && gid != 0) )); then
            printf -v problem '%s is writable by other users (mode %04o)' \
              "$at" $((mode & 07777))
          fi ;;
      esac
      i=$((i + 1))
    done
    # shellcheck disable=SC2034  # Read by the script including this one.
    owned_problem[$path]=$problem
  done
}
