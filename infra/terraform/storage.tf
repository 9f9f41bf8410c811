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

  # Uploads abandoned half way (a resumable upload never finished).
  lifecycle_rule {
    condition {
      age = 7
    }
    action {
      type = "AbortIncompleteMultipartUpload"
    }
  }

  depends_on = [google_project_service.apis]
}
