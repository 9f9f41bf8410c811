#!/bin/sh
# Prepares the emulators for a local tbhub stack (docker-compose.yml runs it
# once before `tbhub migrate`): the Cloud Spanner instance and an empty
# database, through the emulator's REST gateway, and the blob bucket in
# fake-gcs-server. Idempotent: what exists already is left alone, so
# `docker compose up` after a restart of this container is harmless.
#
# Environment (defaults are docker-compose.yml's):
#   SPANNER_REST      the emulator's REST address   (http://spanner:9020)
#   GCS_URL           fake-gcs-server's address      (http://gcs:4443)
#   SPANNER_DATABASE  projects/P/instances/I/databases/D
#   GCS_BUCKET        bucket name
# Needs only sh and curl.
set -eu

spanner=${SPANNER_REST:-http://spanner:9020}
gcs=${GCS_URL:-http://gcs:4443}
db=${SPANNER_DATABASE:-projects/tbhub-local/instances/local/databases/tbhub}
bucket=${GCS_BUCKET:-tbhub}

# projects/P/instances/I/databases/D -> P, I, D
project=$(echo "$db" | cut -d/ -f2)
instance=$(echo "$db" | cut -d/ -f4)
database=$(echo "$db" | cut -d/ -f6)
if [ "projects/$project/instances/$instance/databases/$database" != "$db" ]; then
  echo "init-emulators: SPANNER_DATABASE=$db is not projects/P/instances/I/databases/D" >&2
  exit 2
fi

# wait_for URL: the emulators take a few seconds to listen.
wait_for() {
  i=0
  until curl -fs -o /dev/null "$1"; do
    i=$((i + 1))
    if [ "$i" -ge 60 ]; then
      echo "init-emulators: $1 did not answer within 60 s" >&2
      curl -sS -o /dev/null "$1" || true
      exit 1
    fi
    sleep 1
  done
}

# create WHAT URL JSON: POST and accept 200 (created) or 409 (exists).
create() {
  code=$(curl -sS -o /tmp/init-emulators.out -w '%{http_code}' -X POST \
    -H 'Content-Type: application/json' --data "$3" "$2")
  case "$code" in
    200) echo "init-emulators: created $1" ;;
    409) echo "init-emulators: $1 exists" ;;
    *)
      echo "init-emulators: creating $1: HTTP $code" >&2
      cat /tmp/init-emulators.out >&2
      exit 1
      ;;
  esac
}

wait_for "$spanner/v1/projects/$project/instances"
create "instance projects/$project/instances/$instance" \
  "$spanner/v1/projects/$project/instances" \
  "{\"instanceId\":\"$instance\",\"instance\":{\"config\":\"projects/$project/instanceConfigs/emulator-config\",\"displayName\":\"tbhub local\",\"nodeCount\":1}}"
# Instance creation is a long-running operation; the emulator finishes it
# at once, but wait until the instance answers before adding the database.
wait_for "$spanner/v1/projects/$project/instances/$instance"
create "database $db" \
  "$spanner/v1/projects/$project/instances/$instance/databases" \
  "{\"createStatement\":\"CREATE DATABASE \`$database\`\"}"
wait_for "$spanner/v1/$db"

wait_for "$gcs/storage/v1/b?project=$project"
create "bucket gs://$bucket" "$gcs/storage/v1/b?project=$project" "{\"name\":\"$bucket\"}"
