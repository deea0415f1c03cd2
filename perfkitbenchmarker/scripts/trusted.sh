# shellcheck shell=bash
# trusted.sh PROGRAM: prints what is wrong with PROGRAM (a path, or a name
# PATH finds) by trusted_programs.py's rule (owned_paths.sh), for the user
# running it, in one line: its reason (owned_paths.Reason's value), a
# space, the words. Prints nothing when it passes.
# Exits 3 when PATH finds no such name (a code of its own: bash's errors
# and a refused login are 1, 2, 126, 127, 255), else 0 (a path that is not
# there passes too: its caller says so).
. ./owned_paths.sh

program=$1
case $program in
  /*) ;;
  *) program=$(command -v -- "$program") || exit 3 ;;
esac
[ -e "$program" ] || exit 0
[[ $program == /* ]] || program=$PWD/$program
owned_check "$program"
[ -z "${owned_problem[$program]}" ] ||
  printf '%s %s\n' "${owned_reason[$program]}" "${owned_problem[$program]}"
exit 0
