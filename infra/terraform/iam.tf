# One service account per process, each with only what it uses:
#
#   write     Spanner databaseUser, bucket objectAdmin, the OIDC secret
#   read      Spanner databaseReader, bucket objectViewer, the OIDC and
#             blob-key secrets (secrets.tf)
#   frontend  invoker of the read service (run.tf), nothing in the data
#   migrate   Spanner databaseAdmin (DDL) on the one database
#
# All of them may write traces and metrics (docs/operations.md, "Metrics
# and logs").
resource "google_service_account" "sa" {
  for_each     = toset(["write", "read", "frontend", "migrate"])
  account_id   = "${var.name_prefix}-${each.key}"
  display_name = "tbhub ${each.key}"

  depends_on = [google_project_service.apis]
}

resource "google_spanner_database_iam_member" "sa" {
  for_each = {
    write   = "roles/spanner.databaseUser"
    read    = "roles/spanner.databaseReader"
    migrate = "roles/spanner.databaseAdmin"
  }
  instance = google_spanner_instance.tbhub.name
  database = google_spanner_database.tbhub.name
  role     = each.value
  member   = "serviceAccount:${google_service_account.sa[each.key].email}"
}

resource "google_storage_bucket_iam_member" "sa" {
  for_each = {
    write = "roles/storage.objectAdmin"
    read  = "roles/storage.objectViewer"
  }
  bucket = google_storage_bucket.blobs.name
  role   = each.value
  member = "serviceAccount:${google_service_account.sa[each.key].email}"
}

locals {
  telemetry_grants = {
    for pair in setproduct(["write", "read", "frontend", "migrate"], ["roles/cloudtrace.agent", "roles/monitoring.metricWriter"]) :
    "${pair[0]} ${pair[1]}" => { sa = pair[0], role = pair[1] }
  }
}

resource "google_project_iam_member" "telemetry" {
  for_each = local.telemetry_grants
  project  = var.project_id
  role     = each.value.role
  member   = "serviceAccount:${google_service_account.sa[each.value.sa].email}"
}
