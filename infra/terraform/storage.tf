# Blobs (images, audio, graphs): one object per blob under
# experiments/{experiment id}/. The service deletes a purged experiment's
# prefix itself; versioning keeps those objects as noncurrent versions, so
# an accidental delete can be undone until the lifecycle rule below removes
# them.
resource "google_storage_bucket" "blobs" {
  name                        = local.bucket_name
  location                    = var.region
  storage_class               = "STANDARD"
  uniform_bucket_level_access = true
  public_access_prevention    = "enforced"
  labels                      = var.labels

  versioning {
    enabled = true
  }

  # Deleted experiments' objects: gone for good after the retention period.
  lifecycle_rule {
    condition {
      matches_prefix             = ["experiments/"]
      with_state                 = "ARCHIVED"
      days_since_noncurrent_time = var.deleted_blob_retention_days
    }
    action {
      type = "Delete"
    }
  }

  # Objects replaced under the same key: a blob upload resumed after a
  # broken stream rewrites its partial object, and of two instances racing
  # on one blob the winner replaces the loser's object (docs/write-service.md,
  # "Two instances on one blob"). Versioning keeps each replaced version; it
  # has a newer version, unlike a deleted experiment's last one, so it can
  # go after a day. (The services upload with the Go client's JSON resumable
  # uploads: an unfinished one leaves no object, and its session expires by
  # itself after a week; a rule aborting incomplete multipart uploads, which only
  # concerns XML API multipart uploads, would do nothing here.)
  lifecycle_rule {
    condition {
      matches_prefix             = ["experiments/"]
      with_state                 = "ARCHIVED"
      num_newer_versions         = 1
      days_since_noncurrent_time = 1
    }
    action {
      type = "Delete"
    }
  }

  depends_on = [google_project_service.apis]
}
