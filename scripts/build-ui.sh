#!/usr/bin/env bash
# Builds the web UI (frontend-api/web: TypeScript + Vite) into
# frontend-api/webui/dist, where package webui embeds it into the Go binary.
# Run it before `go build`/`go run` of tbhub to get the UI; without it the
# binary serves a placeholder page saying to run this.
#
#   scripts/build-ui.sh              npm ci (when package-lock.json changed) + vite build
#   scripts/build-ui.sh --if-changed  the same, unless the built bundle is from
#                                     the sources as they are now (scripts/serve.sh)
#
# The bundle's stamp, dist/.source-hash, is a hash of the sources' names and
# contents (src/, index.html, the package, Vite and TypeScript files),
# written after each build; dist/.gitignore keeps it out of git.
set -euo pipefail
cd "$(dirname "$0")/../frontend-api/web"

stamp=../webui/dist/.source-hash
source_hash() {
  find src index.html package.json package-lock.json vite.config.ts tsconfig.json -type f -print0 |
    LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum | cut -d' ' -f1
}
hash=$(source_hash)
if [ "${1:-}" = "--if-changed" ] && [ -f ../webui/dist/index.html ] && [ "$(cat "$stamp" 2>/dev/null)" = "$hash" ]; then
  echo "web UI up to date (sources unchanged since the last build)"
  exit 0
fi

# npm ci is slow; skip it when node_modules matches the lockfile already.
# (package.json pins rollup with "overrides" to a release whose platform
# packages all exist on the registry these machines reach: npm leaves a
# missing optional package out of the lockfile, and npm ci then refuses it.)
if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm ci --no-audit --no-fund --loglevel=error
fi

# The previous bundle goes; the committed placeholder stays.
rm -rf ../webui/dist/assets ../webui/dist/index.html "$stamp"
npx --no-install tsc --noEmit
npx --no-install vite build --logLevel warn
echo "$hash" >"$stamp"
echo "web UI built into frontend-api/webui/dist ($(du -sh ../webui/dist | cut -f1))"
