#!/usr/bin/env bash
# Runs the test suite in the virtualenv made by scripts/setup.sh: both tiers
# by default, the whole suite.
#   ./scripts/test.sh          every test (the fast tier and the e2e tier)
#   ./scripts/test.sh --fast   the fast tier only: tests that start no
#                              process and use no network beyond loopback
#                              (tests/tier_guard.py fails a
#                              fast test that starts a process)
#   ./scripts/test.sh --e2e    the end-to-end tier only (pytest mark `e2e`):
#                              tests that run redis-server, sshd, pkb.py, ...
# Extra arguments go to pytest, e.g. ./scripts/test.sh -k search; test files
# or directories given (./scripts/test.sh tests/argv_secret_test.py) replace
# the whole suite, by absolute path too.
# The suite runs in parallel (pytest-xdist): PKB_TEST_WORKERS workers
# (default 4: on 2 cores most end-to-end tests wait on sleeps, servers and
# sshd rather than compute), each running a test file at a time; tests that
# measure CPU or time (mark `alone`) run with no other test beside them
# (tests/conftest.py). Test files given, or -n given, run as pytest would.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .venv/bin/python ]; then
  echo "No .venv: run ./scripts/setup.sh first." >&2
  exit 2
fi
# Bytecode caches on (__pycache__, ignored by git) even where the
# environment turns them off: each worker collects every test module, and
# the tests start ./pkb.py hundreds of times; without caches each of them
# compiles every module again (collection: 9 s of CPU instead of 5).
unset PYTHONDONTWRITEBYTECODE
targets=(tests)
tier=()
args=()
workers=(-n "${PKB_TEST_WORKERS:-4}" --dist loadfile --no-loadscope-reorder)
for arg in "$@"; do
  case "$arg" in
    --fast) tier=(-m 'not e2e') ;;
    --e2e) tier=(-m e2e) ;;
    tests/*|./tests/*) targets=(); workers=(); args+=("$arg") ;;
    /*)  # This checkout's tests by absolute path (a shell's completion).
      case "$(realpath -m -- "${arg%%::*}")/" in
        "$(pwd -P)"/tests/*) targets=(); workers=() ;;
      esac
      args+=("$arg") ;;
    -n|-n*|--numprocesses*) workers=(); args+=("$arg") ;;
    *) args+=("$arg") ;;
  esac
done
# A fresh checkout (CI's) has no assertion-rewritten test modules cached:
# every pytest-xdist worker rewrote and compiled each test file itself as
# it collected (4 workers: 33 CPU-s of collection, 13 once cached). Two
# collections of half the files each fill the cache first, one a core
# (13 CPU-s together: 26 in all); what they say is the real run's to say.
if [ "${#workers[@]}" -gt 0 ] &&
    ! compgen -G 'tests/__pycache__/*-pytest-*.pyc' > /dev/null; then
  files=(tests/*_test.py)
  half=$(( ${#files[@]} / 2 ))
  .venv/bin/python -m pytest -q -p no:cacheprovider --collect-only \
    "${files[@]:0:half}" > /dev/null 2>&1 &
  .venv/bin/python -m pytest -q -p no:cacheprovider --collect-only \
    "${files[@]:half}" > /dev/null 2>&1 || true
  wait "$!" || true
fi
exec .venv/bin/python -m pytest -q -p no:cacheprovider "${tier[@]}" \
  "${workers[@]}" "${targets[@]}" "${args[@]}"
