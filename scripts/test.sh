#!/usr/bin/env bash
# Runs every check and test of the repository, the way CI does:
# formatting, generated-code drift, go vet, `go mod tidy` drift, the web UI's
# build and unit tests, `go test` over every workspace module (the Spanner
# tests start the official emulator themselves; see services/; the browser
# tests need Chromium), the race detector on the packages with concurrency,
# and every fuzz target for a bounded time (scripts/fuzz.sh).
#
#   scripts/test.sh            everything
#   scripts/test.sh -short     skip the slow tiers: the Spanner emulator tests
#                              (spanneremu skips them), the 64 MiB blob tests
#                              (blobtest), the browser tests, the race pass and
#                              the fuzzing
set -euo pipefail
cd "$(dirname "$0")/.."

# Each stage's time is printed at the end, also when a stage fails.
stage_names=()
stage_starts=()
stage() {
  stage_names+=("$1")
  stage_starts+=("$(date +%s)")
  echo "== $1"
}
# shellcheck disable=SC2317 # called from the EXIT traps
print_stage_times() {
  local now i end
  now=$(date +%s)
  [ ${#stage_names[@]} -gt 0 ] || return 0
  echo "== stage times (seconds)"
  for i in "${!stage_names[@]}"; do
    end=$now
    if [ $((i + 1)) -lt ${#stage_names[@]} ]; then end=${stage_starts[$((i + 1))]}; fi
    printf '%6d  %s\n' "$((end - stage_starts[i]))" "${stage_names[$i]}"
  done
  if [ -n "${e2e_start:-}" ]; then
    printf '%6d  %s\n' "$(( ${e2e_end:-$now} - e2e_start ))" "go test services/allinone/e2e (in the background, beside the stages from go test on)"
  fi
  printf '%6d  %s\n' "$((now - stage_starts[0]))" "total"
}
trap print_stage_times EXIT

mods=$(go list -m -f '{{.Dir}}' | while read -r d; do echo "./${d#"$PWD"/}/..."; done)

stage "gofmt"
unformatted=$(git ls-files -co --exclude-standard -- '*.go' | grep -v '\.pb\.go$' | xargs -r gofmt -l)
if [ -n "$unformatted" ]; then
  echo "gofmt would change:"; echo "$unformatted"; exit 1
fi

stage "generated code matches schemas/proto"
scripts/gen.sh --check

stage "staticcheck"
# Pinned in scripts/tools/go.mod (outside go.work), built once into a temp dir.
sc_bin=$(mktemp -d)
trap 'rm -rf "$sc_bin"; print_stage_times' EXIT
(cd scripts/tools && GOWORK=off go build -o "$sc_bin/staticcheck" honnef.co/go/tools/cmd/staticcheck)
for m in $(go list -m -f '{{.Dir}}'); do
  (cd "$m" && "$sc_bin/staticcheck" ./...)
done

stage "go mod tidy -diff (every module, and the tools modules outside go.work)"
for m in $(go list -m -f '{{.Dir}}') "$PWD/scripts/tools" "$PWD/scripts/deploycheck" "$PWD/services/containertest"; do
  if ! (cd "$m" && GOWORK=off go mod tidy -diff); then
    echo "go mod tidy would change ${m#"$PWD"/} (run it there with GOWORK=off)"; exit 1
  fi
done

stage "go vet"
# shellcheck disable=SC2086
go vet $mods

stage "web UI: build (embedded by frontend-api/webui) and unit tests"
scripts/build-ui.sh
(cd frontend-api/web && npx --no-install vitest run --silent)

stage "deployment files: shellcheck, image builds, compose, terraform"
scripts/check-deploy.sh

stage "go test"
# The e2e package runs several minutes of multi-process tests on the
# emulators (several instances, the many-tenants load test), past go
# test's default 10 min per package. Most of that time it waits (the
# Spanner emulator runs one transaction at a time, and server processes
# make one store call at a time on it): on 2 cores the machine is nearly
# idle through its last ten minutes. So it runs in the background, beside
# the other packages, the race pass and the fuzzing; its output is printed
# (and its result checked) at the end.
#
# It runs as two processes, each with its own emulator (the emulator is
# the bottleneck: one transaction at a time): the two longest Spanner
# tests in one, everything else in the other.
e2e_pkg=github.com/tbhub/tbhub/services/allinone/e2e
e2e_long='^(TestUploadCorpusThenExportOnSpannerAndGCS|TestSeveralInstances)$'
e2e_log=$(mktemp)
e2e_log2=$(mktemp)
e2e_start=$(date +%s)
go test -count=1 -timeout 30m "$@" -run "$e2e_long" "$e2e_pkg" >"$e2e_log" 2>&1 &
e2e_pid=$!
go test -count=1 -timeout 30m "$@" -skip "$e2e_long" "$e2e_pkg" >"$e2e_log2" 2>&1 &
e2e_pid2=$!
trap 'rm -rf "$sc_bin" "$e2e_log" "$e2e_log2"; kill "$e2e_pid" "$e2e_pid2" 2>/dev/null || true; print_stage_times' EXIT
# shellcheck disable=SC2086
others=$(go list $mods | grep -vx "$e2e_pkg")
# shellcheck disable=SC2086
go test -count=1 -timeout 30m "$@" $others

short=false
for a in "$@"; do [ "$a" = -short ] && short=true; done
if ! $short; then
  stage "go test -race (packages with concurrency)"
  # The uploader, the write path (writer and tenancy, whose tests run their
  # services in process, and serve, the process), both stores, limits,
  # the readers, the blob stores, the HTTP answer cache (httpapi) and the
  # shared server infrastructure.
  go test -race -count=1 ./uploader/... ./services/internal/assembly/serve/ ./services/internal/api/writer/ \
    ./services/internal/policy/tenancy/ ./services/internal/storage/store/... \
    ./services/internal/policy/limits/ ./services/internal/policy/auth/ ./services/internal/api/reader/ \
    ./frontend-api/httpapi/... ./services/serverkit/...
  # The blob stores without their 64 MiB object (the plain pass streams it).
  go test -race -short -count=1 ./services/internal/storage/blob/...

  stage "fuzz (every target, bounded)"
  FUZZTIME=${FUZZTIME:-10s} scripts/fuzz.sh
fi

stage "go test $e2e_pkg (started with go test above)"
e2e_rc=0
wait "$e2e_pid" || e2e_rc=$?
wait "$e2e_pid2" || e2e_rc=$?
e2e_end=$(date +%s)
echo "-- $e2e_long"
cat "$e2e_log"
echo "-- the others"
cat "$e2e_log2"
exit "$e2e_rc"
