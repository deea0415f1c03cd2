#!/usr/bin/env bash
# Runs the test suite in the virtualenv made by scripts/setup.sh.
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
for arg in "$@"; do
  case "$arg" in
    tests/*|./tests/*) targets=() ;;
  esac
done
exec .venv/bin/python -m pytest -q -p no:cacheprovider "${targets[@]}" "$@"
