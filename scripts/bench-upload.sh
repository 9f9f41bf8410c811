#!/usr/bin/env bash
# Upload benchmark of issue 5: tbup uploads a generated logdir of
# RUNS × TAGS × STEPS scalar points plus IMAGES images of IMAGE_BYTES to tbhub serve
# (embedded store), reporting scalar points/s end to end, and the uploader's CPU time
# and peak memory (max RSS).
#   scripts/bench-upload.sh                 # the issue's size: 100 × 20 × 10,000 + 1,000 × 100 KB
#   RUNS=10 scripts/bench-upload.sh         # smaller
set -euo pipefail
cd "$(dirname "$0")/../services/allinone"
export RUNS=${RUNS:-100} TAGS=${TAGS:-20} STEPS=${STEPS:-10000} IMAGES=${IMAGES:-1000} IMAGE_BYTES=${IMAGE_BYTES:-100000}
go test -run NONE -bench BenchmarkUpload -benchtime 1x -timeout 30m ./e2e/
