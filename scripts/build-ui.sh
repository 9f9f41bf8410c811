#!/usr/bin/env bash
# Builds the web UI (frontend-api/web: TypeScript + Vite) into
# frontend-api/webui/dist, where package webui embeds it into the Go binary.
# Run it before `go build`/`go run` of tbhub to get the UI; without it the
# binary serves a placeholder page saying to run this.
#
#   scripts/build-ui.sh          npm ci (when package-lock.json changed) + vite build
set -euo pipefail
cd "$(dirname "$0")/../frontend-api/web"

# npm ci is slow; skip it when node_modules matches the lockfile already.
# (package.json pins rollup with "overrides" to a release whose platform
# packages all exist on the registry these machines reach: npm leaves a
# missing optional package out of the lockfile, and npm ci then refuses it.)
if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm ci --no-audit --no-fund --loglevel=error
fi

# The previous bundle goes; the committed placeholder stays.
rm -rf ../webui/dist/assets ../webui/dist/index.html
npx --no-install tsc --noEmit
npx --no-install vite build --logLevel warn
echo "web UI built into frontend-api/webui/dist ($(du -sh ../webui/dist | cut -f1))"
