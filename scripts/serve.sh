#!/usr/bin/env bash
# Builds the web UI into the binary (only when its sources changed since
# the last build: see build-ui.sh --if-changed) and runs `tbhub serve` with
# the given flags (default: the embedded store on http://localhost:6006).
#
#   scripts/serve.sh [--data DIR] [--addr HOST:PORT] ...
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build-ui.sh --if-changed
exec go run ./services/allinone/cmd/tbhub serve "$@"
