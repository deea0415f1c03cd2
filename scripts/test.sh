#!/usr/bin/env bash
# Runs the test suite in the virtualenv made by scripts/setup.sh: both tiers
# by default, the whole suite.
#   ./scripts/test.sh          every test (the fast tier and the e2e tier)
#   ./scripts/test.sh --fast   the fast tier only: tests that start no
#                              process and use no network beyond loopback
#                              (about 2 minutes; tests/tier_guard.py fails a
#                              fast test that starts a process)
#   ./scripts/test.sh --e2e    the end-to-end tier only (pytest mark `e2e`):
#                              tests that run redis-server, sshd, pkb.py, ...
# Extra arguments go to pytest, e.g. ./scripts/test.sh -k search; test files
# or directories given (./scripts/test.sh tests/argv_secret_test.py) replace
# the whole suite.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .venv/bin/python ]; then
  echo "No .venv: run ./scripts/setup.sh first." >&2
  exit 2
fi
targets=(tests)
tier=()
args=()
for arg in "$@"; do
  case "$arg" in
    --fast) tier=(-m 'not e2e') ;;
    --e2e) tier=(-m e2e) ;;
    tests/*|./tests/*) targets=(); args+=("$arg") ;;
    *) args+=("$arg") ;;
  esac
done
exec .venv/bin/python -m pytest -q -p no:cacheprovider "${tier[@]}" \
  "${targets[@]}" "${args[@]}"
