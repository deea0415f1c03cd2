#!/usr/bin/env bash
# Builds actionlint (the linter tests/nightly_workflow_test.py runs on
# .github/workflows/nightly.yml) from source, pinned, into
# build/actionlint/actionlint (git-ignored). It is in no Debian release, so
# Go builds it through the Go module proxy; Go is the first go on PATH, else
# /usr/local/go/bin/go, else Debian's golang-go (installed when neither is
# there). An actionlint of the pinned version already built is kept (a second
# run takes < 1 s). Usage: scripts/build_actionlint.sh
set -euo pipefail
cd "$(dirname "$0")/.."

# The test reads the pin from here: one place for the version.
ACTIONLINT_VERSION=v1.7.7
MODULE=github.com/rhysd/actionlint/cmd/actionlint
OUT="$PWD/build/actionlint"
BIN="$OUT/actionlint"

if [ -x "$BIN" ] && "$BIN" -version 2>/dev/null | grep -qxF "$ACTIONLINT_VERSION"; then
  exit 0
fi
go="$(command -v go || true)"
if [ -z "$go" ] && [ -x /usr/local/go/bin/go ]; then go=/usr/local/go/bin/go; fi
if [ -z "$go" ]; then
  echo "Installing Debian's golang-go to build actionlint..."
  ./scripts/apt_get.sh install -y -qq golang-go >/dev/null
  go=/usr/bin/go
fi
echo "Building actionlint $ACTIONLINT_VERSION with $("$go" version | cut -d' ' -f3) (about 2 minutes the first time)..."
mkdir -p "$OUT"
GOBIN="$OUT" "$go" install "$MODULE@$ACTIONLINT_VERSION"
"$BIN" -version | head -1
