#!/usr/bin/env bash
# Measures `tbup inspect` on a generated logdir of several GiB: wall time, events/s,
# and peak memory (max RSS from /usr/bin/time). Usage:
#   scripts/bench-inspect.sh [DIR]   (default: a temp dir, removed afterwards)
# Size knobs (environment): RUNS TAGS STEPS IMAGES IMAGE_BYTES.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-20} TAGS=${TAGS:-50} STEPS=${STEPS:-40000} IMAGES=${IMAGES:-20000} IMAGE_BYTES=${IMAGE_BYTES:-100000}
dir=${1:-}
if [ -z "$dir" ]; then
  dir=$(mktemp -d)
  trap 'rm -rf "$dir"' EXIT
fi
bin=$(mktemp -d)
go build -o "$bin/tbgen" ./uploader/cmd/tbgen
go build -o "$bin/tbup" ./uploader/cmd/tbup
if [ ! -d "$dir/logs" ]; then
  "$bin/tbgen" --out "$dir/logs" --runs "$RUNS" --tags "$TAGS" --steps "$STEPS" --images "$IMAGES" --image-bytes "$IMAGE_BYTES"
fi
du -sh "$dir/logs"
sync
for procs in 1 2; do
  echo "== GOMAXPROCS=$procs"
  GOMAXPROCS=$procs /usr/bin/time -f 'wall %e s, user %U s, max RSS %M KiB' "$bin/tbup" inspect --json --logdir "$dir/logs" > "$dir/report.json"
  python3 -c "import json,sys; t=json.load(open(sys.argv[1]))['totals']; print('records', t['records'], 'scalar points', t['scalar_points'], 'blobs', t['blobs'])" "$dir/report.json"
done
rm -rf "$bin"
