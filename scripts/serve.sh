#!/usr/bin/env bash
# Builds the web UI into the binary and runs `tbhub serve` with the given
# flags (default: the embedded store on http://localhost:6006).
#
#   scripts/serve.sh [--data DIR] [--addr HOST:PORT] ...
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build-ui.sh
exec go run ./services/cmd/tbhub serve "$@"
