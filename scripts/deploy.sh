#!/usr/bin/env bash
# Builds the tbhub images, pushes them to Artifact Registry and applies
# infra/terraform, migrating the schema before any service moves to the new
# images. docs/operations.md explains each step and what to do by hand.
#
#   scripts/deploy.sh --project P --state-bucket B [--region R] [--yes]
#
#   --project P        Google Cloud project (Terraform's project_id)
#   --state-bucket B   existing GCS bucket for Terraform state (prefix "tbhub")
#   --region R         region (default us-central1)
#   --tag T            image tag (default: the git commit, "-dirty" if the
#                      work tree has changes)
#   --skip-build       reuse images already pushed under --tag
#   --yes              apply without asking (CI)
#
# Other Terraform variables (oidc_client_ids, scaling, public_origin, ...)
# go in infra/terraform/terraform.tfvars, which Terraform reads itself.
#
# Needs: git, docker with buildx (a running engine), gcloud (logged in, with
# rights to create the resources), terraform >= 1.5.
set -euo pipefail
cd "$(dirname "$0")/.."

project=""
state_bucket=""
region="us-central1"
tag=""
build=true
approve=()
name_prefix=${TBHUB_NAME_PREFIX:-tbhub}

# usage prints the comment at the top of this file.
usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0" >&2; exit 2; }
while [ $# -gt 0 ]; do
  case "$1" in
    --project) project=${2:?}; shift 2 ;;
    --state-bucket) state_bucket=${2:?}; shift 2 ;;
    --region) region=${2:?}; shift 2 ;;
    --tag) tag=${2:?}; shift 2 ;;
    --skip-build) build=false; shift ;;
    --yes) approve=(-auto-approve); shift ;;
    *) usage ;;
  esac
done
if [ -z "$project" ] || [ -z "$state_bucket" ]; then
  usage
fi

for tool in git docker gcloud terraform; do
  command -v "$tool" >/dev/null 2>&1 || { echo "deploy: $tool is not installed" >&2; exit 1; }
done

if [ -z "$tag" ]; then
  tag=$(git rev-parse --short=12 HEAD)
  if [ -n "$(git status --porcelain)" ]; then
    tag="$tag-dirty"
  fi
fi
registry="$region-docker.pkg.dev/$project/$name_prefix"
tf=(terraform -chdir=infra/terraform)
vars=(-var "project_id=$project" -var "region=$region" -var "image_tag=$tag" -var "name_prefix=$name_prefix")

step() { printf '\n== %s\n' "$*"; }

step "terraform init (state in gs://$state_bucket/tbhub)"
"${tf[@]}" init -input=false -backend-config="bucket=$state_bucket" -backend-config="prefix=tbhub"

step "APIs and the image repository"
"${tf[@]}" apply -input=false "${approve[@]}" "${vars[@]}" \
  -target=google_project_service.apis -target=google_artifact_registry_repository.images

if $build; then
  step "build and push $registry/*:$tag"
  gcloud auth configure-docker "$region-docker.pkg.dev" --quiet
  while read -r service; do
    # Cloud Run runs linux/amd64, whatever the build machine is.
    docker buildx build --platform linux/amd64 --push \
      -f infra/docker/service.Dockerfile --build-arg "SERVICE=$service" \
      -t "$registry/$service:$tag" .
  done < <(infra/docker/gobuild.sh --list)
fi

step "schema first: the migrate job on the new image"
"${tf[@]}" apply -input=false "${approve[@]}" "${vars[@]}" -target=google_cloud_run_v2_job.migrate
gcloud run jobs execute "$name_prefix-migrate" --project "$project" --region "$region" --wait

step "everything else (the services roll to $tag)"
"${tf[@]}" apply -input=false "${approve[@]}" "${vars[@]}"

step "deployed"
"${tf[@]}" output
