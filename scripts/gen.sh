#!/usr/bin/env bash
# Regenerates the Go code for every .proto file under schemas/proto into
# schemas/gen/go.
#
#   scripts/gen.sh          regenerate in place
#   scripts/gen.sh --check  regenerate into a temporary directory and fail
#                           (exit 1, with a summary) if schemas/gen/go differs
#
# Generators are pinned so output is byte-identical run to run:
#   protoc              Debian bookworm's protobuf-compiler (PROTOC_VERSION
#                       below); installed with apt-get when missing
#   protoc-gen-go       \ versions pinned by `tool` directives in
#   protoc-gen-go-grpc  / scripts/tools/go.mod (a module outside go.work)
# protoc-gen-go writes the protoc version into every file header, so a
# different protoc is refused rather than producing a spurious diff.
set -euo pipefail

PROTOC_VERSION="3.21.12"
GO_MODULE_PREFIX="github.com/tbhub/tbhub/schemas/gen/go"

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
proto_dir="$root/schemas/proto"
gen_dir="$root/schemas/gen/go"

check=false
case "${1:-}" in
  "") ;;
  --check) check=true ;;
  *) echo "usage: $0 [--check]" >&2; exit 2 ;;
esac

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# --- protoc -----------------------------------------------------------------
# Well-known types (google/protobuf/*.proto) ship with libprotobuf-dev.
find_wkt_dir() {
  for d in /usr/include /usr/local/include; do
    if [ -f "$d/google/protobuf/timestamp.proto" ]; then echo "$d"; return; fi
  done
}
if ! command -v protoc >/dev/null 2>&1 || [ -z "$(find_wkt_dir)" ]; then
  echo "gen.sh: protoc or its well-known types missing; installing protobuf-compiler and libprotobuf-dev with apt-get" >&2
  apt_get=(apt-get)
  if [ "$(id -u)" -ne 0 ]; then apt_get=(sudo apt-get); fi
  "${apt_get[@]}" update -qq
  DEBIAN_FRONTEND=noninteractive "${apt_get[@]}" install -y -qq protobuf-compiler libprotobuf-dev >/dev/null
fi
have="$(protoc --version | awk '{print $2}')"
if [ "$have" != "$PROTOC_VERSION" ]; then
  echo "gen.sh: protoc $have found, $PROTOC_VERSION required (Debian bookworm protobuf-compiler);" >&2
  echo "        generated headers embed the protoc version, so output would drift." >&2
  exit 1
fi
wkt_dir="$(find_wkt_dir)"
if [ -z "$wkt_dir" ]; then
  echo "gen.sh: google/protobuf/timestamp.proto not found; install libprotobuf-dev" >&2
  exit 1
fi

# --- protoc plugins -----------------------------------------------------------
# Built from scripts/tools/go.mod; GOWORK=off because that module is
# deliberately not part of go.work.
(cd "$root/scripts/tools" && GOWORK=off GOBIN="$work/bin" go install tool)

# --- generate -----------------------------------------------------------------
mapfile -t protos < <(cd "$proto_dir" && find . -name '*.proto' -printf '%P\n' | LC_ALL=C sort)
if [ "${#protos[@]}" -eq 0 ]; then
  echo "gen.sh: no .proto files under $proto_dir" >&2
  exit 1
fi

stage="$work/stage"
mkdir -p "$stage"
(cd "$proto_dir" && protoc \
  -I . -I "$wkt_dir" \
  --plugin=protoc-gen-go="$work/bin/protoc-gen-go" \
  --plugin=protoc-gen-go-grpc="$work/bin/protoc-gen-go-grpc" \
  --go_out="$stage" --go_opt=paths=source_relative \
  --go-grpc_out="$stage" --go-grpc_opt=paths=source_relative \
  "${protos[@]}")

# Move each generated file into the directory of its Go import path. Several
# TensorBoard files share a base name and a Go package (every plugin's
# plugin_data.proto is in proto package "tensorboard"), so files under
# tensorboard/plugins/<plugin>/ get the plugin name as a prefix (unless the
# base name already starts with it).
out="$work/out"
mkdir -p "$out"
for p in "${protos[@]}"; do
  go_package="$(sed -n 's/^option go_package = "\([^";]*\)\(;[^"]*\)\{0,1\}";/\1/p' "$proto_dir/$p")"
  case "$go_package" in
    "$GO_MODULE_PREFIX"/*) ;;
    *) echo "gen.sh: $p: go_package must start with $GO_MODULE_PREFIX/" >&2; exit 1 ;;
  esac
  dest_dir="$out/${go_package#"$GO_MODULE_PREFIX"/}"
  base="$(basename "$p" .proto)"
  case "$p" in
    tensorboard/plugins/*/*)
      plugin="${p#tensorboard/plugins/}"
      plugin="${plugin%%/*}"
      case "$base" in "$plugin"_*) ;; *) base="${plugin}_$base" ;; esac
      ;;
  esac
  mkdir -p "$dest_dir"
  for suffix in .pb.go _grpc.pb.go; do
    src="$stage/${p%.proto}$suffix"
    [ -f "$src" ] || continue
    dest="$dest_dir/$base$suffix"
    if [ -e "$dest" ]; then
      echo "gen.sh: two proto files map to $dest" >&2
      exit 1
    fi
    mv "$src" "$dest"
  done
done

# --- install or compare -------------------------------------------------------
if $check; then
  if diff -r -q "$gen_dir" "$out" >"$work/diff.txt" 2>&1; then
    echo "gen.sh --check: schemas/gen/go is up to date (${#protos[@]} proto files)"
    exit 0
  fi
  echo "gen.sh --check: schemas/gen/go differs from what schemas/proto generates:" >&2
  sed -e "s#$gen_dir#schemas/gen/go#g" -e "s#$out#<regenerated>#g" "$work/diff.txt" >&2
  diff -r -u "$gen_dir" "$out" 2>/dev/null | grep -E '^[-+][^-+]' | head -n 40 >&2 || true
  echo "Run scripts/gen.sh and commit the result." >&2
  exit 1
fi

rm -rf "$gen_dir"
mkdir -p "$(dirname "$gen_dir")"
cp -r "$out" "$gen_dir"
echo "gen.sh: generated $(find "$gen_dir" -name '*.go' | wc -l) Go files from ${#protos[@]} proto files into schemas/gen/go"
