# shellcheck shell=bash
# owned_paths.py's rule in bash, its one statement on a VM (trusted.sh for
# a program, ssh_command.sh's safe_path for a login PATH, workspace.sh for
# the root of the run's workspace): a path passes
# when it and every directory of it, as given and with its links resolved,
# is owned by root or this user and writable by no one else (group: root's
# only; a sticky directory passes), and so is every directory above each
# symbolic link met on the way (a link to a link, a directory that is one:
# each where it lives), each such link owned by root or this user. A POSIX ACL counts as the
# mode does: one whose mask and a named entry let a user other than root
# and this one, or a group other than root's, write (_owned_acl).
#
# owned_check PATH...: for each absolute PATH, owned_problem[PATH] is the
# first place at fault as owned_paths.Problem words it ('' when none is),
# owned_reason[PATH] what kind of fault (owned_paths.Reason's value: owner,
# link, mode, acl, unreadable), owned_real[PATH] the PATH with its links
# resolved, owned_info[DIR] each directory's "uid gid mode" (stat -L, the
# mode in hex with the type). One stat for all the directories and one per
# link: cd -P resolves with no program run, so run it in a process or
# subshell of its own.
declare -A owned_problem=() owned_reason=() owned_real=() owned_info=()

# _owned_dirs DIR: / and each directory down to DIR onto owned_check's way.
_owned_dirs() {
  local at='' rest=$1/ part
  way+=(d/)
  while [ -n "$rest" ]; do
    part=${rest%%/*} rest=${rest#*/}
    [ -z "$part" ] || { at=$at/$part; way+=("d$at"); }
  done
}

# _owned_acl PATH: in acl_why, why PATH's access ACL lets another user
# write it (owned_paths._AclWriter's words), else ''. Only asked where the
# group bits (an ACL's mask) let write and the group is root's, the one
# case the mode passes that an ACL can open. getfacl reads it; without
# getfacl (package acl, not on every image) an ACL `ls -l` marks with '+'
# is refused, unread.
_owned_acl() {
  local line tag id perms mask=rwx
  local -a named=()
  acl_why=''
  if ! command -v getfacl > /dev/null; then
    case $(ls -dn -l -- "$1" 2> /dev/null) in
      ??????????+*) acl_why="$1 is writable by other users as far as can be"
        acl_why+=" told (it has an ACL, and getfacl, of package acl, is not"
        acl_why+=" installed to read it)" ;;
    esac
    return
  fi
  if ! line=$(getfacl -cpnE -- "$1" 2>&1); then
    acl_why="$1 is writable by other users as far as can be told (its ACL"
    acl_why+=" cannot be read: ${line##*: })"
    return
  fi
  while IFS=: read -r tag id perms; do
    case $tag in
      mask) mask=$perms ;;
      user|group) [ -z "$id" ] || named+=("$tag:$id:$perms") ;;
    esac
  done <<< "$line"
  for line in "${named[@]}"; do
    IFS=: read -r tag id perms <<< "$line"
    [[ $perms == ?w? && $mask == ?w? ]] || continue
    if [ "$tag" = user ] && [ "$id" != 0 ] && [ "$id" != "$EUID" ]; then
      acl_why="$1 is writable by other users (its ACL lets uid $id write)"
    elif [ "$tag" = group ] && [ "$id" != 0 ]; then
      acl_why="$1 is writable by other users (its ACL lets group gid $id"
      acl_why+=" write)"
    fi
    [ -z "$acl_why" ] || return
  done
}

owned_check() {
  local me=$EUID path at part rest found parent link target hops i line
  local uid gid mode problem reason acl_why
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
    # i: not set in (( )), where a name is no expression.
    problem='' reason='' i=${first[$path]}
    while [ -z "$problem" ] && [ "${way[i]}" != e ]; do
      at=${way[i]#?}
      case ${way[i]} in
        '!'*) problem=$at reason=unreadable ;;
        l*)
          uid=${links[$at]%% *}
          if [ -z "$uid" ]; then
            problem="$at cannot be read" reason=unreadable
          elif [ "$uid" != 0 ] && [ "$uid" != "$me" ]; then
            problem="$at is a symbolic link owned by uid $uid" reason=link
          fi ;;
        d*)
          read -r uid gid mode <<< "${owned_info[$at]:-- - 0}"
          mode=$((16#$mode))
          if [ "$uid" = - ]; then
            problem="$at cannot be read" reason=unreadable
          elif [ "$uid" != 0 ] && [ "$uid" != "$me" ]; then
            problem="$at is owned by uid $uid" reason=owner
          elif (( (mode & 0xF000) != 0x4000 || !(mode & 01000) )) &&
              (( mode & 2 || (mode & 020 && gid != 0) )); then
            printf -v problem '%s is writable by other users (mode %04o)' \
              "$at" $((mode & 07777))
            reason=mode
          elif (( (mode & 0xF000) != 0x4000 || !(mode & 01000) )) &&
              (( mode & 020 )); then
            _owned_acl "$at"
            problem=$acl_why reason=acl
          fi ;;
      esac
      i=$((i + 1))
    done
    # shellcheck disable=SC2034  # Read by the script including this one.
    owned_problem[$path]=$problem owned_reason[$path]=${problem:+$reason}
  done
}
