# Names, URLs and images every other file uses.
data "google_project" "this" {
  project_id = var.project_id
}

locals {
  services = {
    write    = "${var.name_prefix}-write"
    read     = "${var.name_prefix}-read"
    frontend = "${var.name_prefix}-frontend"
  }
  # Cloud Run's deterministic URLs (https://SERVICE-PROJECT_NUMBER.REGION.run.app)
  # let each service name the others without a dependency cycle: the write
  # service advertises the frontend's origin, the frontend calls the write
  # service.
  urls = {
    for k, name in local.services : k => "https://${name}-${data.google_project.this.number}.${var.region}.run.app"
  }
  public_origin = var.public_origin != "" ? trimsuffix(var.public_origin, "/") : local.urls.frontend

  registry = "${var.region}-docker.pkg.dev/${var.project_id}/${google_artifact_registry_repository.images.repository_id}"
  images = {
    for svc in ["tbhub", "write-service", "read-service", "frontend"] : svc => "${local.registry}/${svc}:${var.image_tag}"
  }

  store_url   = "spanner://projects/${var.project_id}/instances/${google_spanner_instance.tbhub.name}/databases/${google_spanner_database.tbhub.name}"
  bucket_name = var.bucket_name != "" ? var.bucket_name : "${var.project_id}-tbhub-blobs"
  blobs_url   = "gs://${google_storage_bucket.blobs.name}"
}

resource "google_project_service" "apis" {
  for_each = toset([
    "artifactregistry.googleapis.com",
    # data.google_project (the project number in the services' URLs)
    # reads through it; it is not on by default in every project.
    "cloudresourcemanager.googleapis.com",
    "cloudtrace.googleapis.com",
    "iam.googleapis.com",
    "logging.googleapis.com",
    "monitoring.googleapis.com",
    "run.googleapis.com",
    "secretmanager.googleapis.com",
    "spanner.googleapis.com",
    "storage.googleapis.com",
  ])
  service            = each.value
  disable_on_destroy = false
}

resource "google_artifact_registry_repository" "images" {
  location      = var.region
  repository_id = var.name_prefix
  format        = "DOCKER"
  description   = "tbhub container images (scripts/deploy.sh pushes here)"
  labels        = var.labels

  # Images older than 30 days go, except the 20 newest (rollback targets).
  cleanup_policies {
    id     = "delete-old"
    action = "DELETE"
    condition {
      older_than = "2592000s"
    }
  }
  cleanup_policies {
    id     = "keep-recent"
    action = "KEEP"
    most_recent_versions {
      keep_count = 20
    }
  }

  depends_on = [google_project_service.apis]
}
