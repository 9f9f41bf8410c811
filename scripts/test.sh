#!/usr/bin/env bash
# Runs every check and test of the repository, the way CI does:
# formatting, generated-code drift, go vet, the web UI's build and unit tests, and
# `go test` over every workspace module (the Spanner tests start the official
# emulator themselves; see services/; the browser tests need Chromium).
#
#   scripts/test.sh            everything
#   scripts/test.sh -short     skip the slow tiers (emulator, 64 MiB blobs, browsers)
set -euo pipefail
cd "$(dirname "$0")/.."

mods=$(go list -m -f '{{.Dir}}' | while read -r d; do echo "./${d#"$PWD"/}/..."; done)

echo "== gofmt"
unformatted=$(git ls-files -co --exclude-standard -- '*.go' | grep -v '\.pb\.go$' | xargs -r gofmt -l)
if [ -n "$unformatted" ]; then
  echo "gofmt would change:"; echo "$unformatted"; exit 1
fi

echo "== generated code matches schemas/proto"
scripts/gen.sh --check

echo "== staticcheck"
# Pinned in scripts/tools/go.mod (outside go.work), built once into a temp dir.
sc_bin=$(mktemp -d)
trap 'rm -rf "$sc_bin"' EXIT
(cd scripts/tools && GOWORK=off go build -o "$sc_bin/staticcheck" honnef.co/go/tools/cmd/staticcheck)
for m in $(go list -m -f '{{.Dir}}'); do
  (cd "$m" && "$sc_bin/staticcheck" ./...)
done

echo "== go vet"
# shellcheck disable=SC2086
go vet $mods

echo "== web UI: build (embedded by frontend-api/webui) and unit tests"
scripts/build-ui.sh
(cd frontend-api/web && npx --no-install vitest run --silent)

echo "== deployment files: shellcheck, image builds, compose, terraform"
scripts/check-deploy.sh

echo "== go test"
# shellcheck disable=SC2086
go test -count=1 "$@" $mods
