#!/bin/sh
# Builds one tbhub server binary the way its container image does. The
# Dockerfile runs this script, and scripts/check-deploy.sh runs it in CI for
# every service, so a binary that would not build in the image fails CI even
# where no Docker engine runs.
#
#   infra/docker/gobuild.sh SERVICE OUT     (from the repository root)
#   infra/docker/gobuild.sh --list          the SERVICE names, one a line
#
# SERVICE is one of the names below; OUT is the file to write.
#
# Flags, and why:
#   CGO_ENABLED=0   a static binary for distroless/static (SQLite is
#                   modernc.org/sqlite, pure Go)
#   -trimpath       no build-machine paths in the binary or its stack traces
#   -buildvcs=false the image's build context has no .git; CI must not
#                   differ from the image by stamping VCS data
#   -ldflags=-s -w  no symbol table or DWARF: a smaller image
# The build runs in workspace mode (go.work at the root), exactly as a
# developer's does: the modules reach each other through go.work, not
# through replace lines.
set -eu

services="tbhub write-service read-service frontend"
if [ "${1:-}" = "--list" ]; then
  for s in $services; do echo "$s"; done
  exit 0
fi
if [ $# -ne 2 ]; then
  echo "usage: $0 SERVICE OUT" >&2
  exit 2
fi
service=$1
out=$2

case "$service" in
  tbhub)         pkg=./services/allinone/cmd/tbhub ;;
  write-service) pkg=./services/cmd/write-service ;;
  read-service)  pkg=./services/cmd/read-service ;;
  frontend)      pkg=./frontend-api/cmd/frontend ;;
  *)
    echo "$0: unknown service \"$service\" (one of: $services)" >&2
    exit 2
    ;;
esac

if [ ! -f go.work ]; then
  echo "$0: run from the repository root (the directory holding go.work)" >&2
  exit 2
fi

CGO_ENABLED=0 GOWORK="$PWD/go.work" go build -trimpath -buildvcs=false -ldflags='-s -w' -o "$out" "$pkg"
