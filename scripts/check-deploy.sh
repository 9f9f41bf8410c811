#!/usr/bin/env bash
# Checks the deployment files without a Docker engine or cloud access (CI
# runs this from scripts/test.sh):
#
#   1. shellcheck on every shell script of the repository;
#   2. the container build: infra/docker/service.Dockerfile parsed and
#      linted by BuildKit's own parser, its COPY sources exist, every
#      workspace module's go.mod and go.sum is copied, and every SERVICE it
#      builds compiles with the image's exact build step
#      (infra/docker/gobuild.sh: CGO_ENABLED=0, -trimpath, go.work; the web
#      UI bundle is left out: scripts/test.sh builds it separately);
#   3. the testcontainers-go tests (services/containertest, a module of
#      its own outside go.work; they need a Docker engine to run) vet and
#      compile;
#   4. docker-compose.yml loaded as Docker Compose loads it (compose-spec
#      schema, interpolation, dependencies) plus tbhub's own rules;
#   5. infra/terraform parsed with HashiCorp's HCL parser: syntax,
#      `terraform fmt` layout, version pins, descriptions, references,
#      every argument and block name against the providers' schemas, and
#      what a tbhub deployment must set (scripts/deploycheck/deployrules.go:
#      cpu_idle, the Cloud Resource Manager API, Spanner autoscaling and
#      backups, alert policies, a bucket lifecycle for JSON uploads).
#
#   scripts/check-deploy.sh            all of it
#   scripts/check-deploy.sh --no-build skip step 2's compilation
set -euo pipefail
cd "$(dirname "$0")/.."

build=true
case "${1:-}" in
  "") ;;
  --no-build) build=false ;;
  *) echo "usage: $0 [--no-build]" >&2; exit 2 ;;
esac

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "== shellcheck"
if ! command -v shellcheck >/dev/null 2>&1; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq shellcheck >/dev/null
fi
mapfile -t scripts < <(git ls-files -co --exclude-standard -- '*.sh' .ci/run)
shellcheck "${scripts[@]}"

echo "== container images (infra/docker)"
dockerfile=infra/docker/service.Dockerfile
missing=0
while read -r dir; do
  rel=${dir#"$PWD"/}
  for f in go.mod go.sum; do
    if ! grep -Eq "^COPY (.* )?$rel/$f " "$dockerfile"; then
      echo "$dockerfile does not copy $rel/$f (a go.work module)" >&2
      missing=1
    fi
  done
done < <(go list -m -f '{{.Dir}}')
[ "$missing" = 0 ]
mapfile -t services < <(infra/docker/gobuild.sh --list)
if $build; then
  for s in "${services[@]}"; do
    echo "   build $s"
    infra/docker/gobuild.sh "$s" "$work/$s"
  done
fi

echo "== services/containertest (testcontainers-go; compile only, they need a Docker engine)"
# A module of its own, outside go.work: GOWORK=off. Without
# TBHUB_CONTAINER_TESTS=1 the tests skip, so this builds and links them.
(cd services/containertest && GOWORK=off go vet ./... && GOWORK=off go test -count=1 ./...)

echo "== deploycheck (dockerfile, compose, terraform)"
# A module of its own, outside go.work: GOWORK=off.
(cd scripts/deploycheck && GOWORK=off go vet ./... && GOWORK=off go test -count=1 ./... &&
  GOWORK=off go build -o "$work/deploycheck" .)
"$work/deploycheck" dockerfile -context . "$dockerfile"
services_csv=$(IFS=,; echo "${services[*]}")
"$work/deploycheck" compose -services "$services_csv" docker-compose.yml
# The Terraform providers cannot be downloaded here, but their schemas can:
# the CDK for Terraform bindings on npm are generated from them. Kept in a
# cache between runs; versions match infra/terraform/versions.tf.
schemas=${XDG_CACHE_HOME:-$HOME/.cache}/tbhub/provider-schemas
declare -A schema_pkgs=([google]=@cdktf/provider-google@16.12.1 [random]=@cdktf/provider-random@12.0.1)
schema_arg=()
for provider in "${!schema_pkgs[@]}"; do
  pkg=${schema_pkgs[$provider]}
  dir="$schemas/${pkg//[@\/]/_}"
  if [ ! -d "$dir/package/lib" ]; then
    mkdir -p "$dir"
    tarball=$(cd "$dir" && npm pack --silent "$pkg")
    tar -xzf "$dir/$tarball" -C "$dir" --wildcards 'package/lib/*/index.d.ts'
    rm "$dir/$tarball"
  fi
  schema_arg+=("$provider=$dir/package")
done
"$work/deploycheck" terraform -tbhub-rules -schema "$(IFS=,; echo "${schema_arg[*]}")" infra/terraform
