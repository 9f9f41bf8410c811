# The store. Schema changes are not Terraform's: the migrate job
# (`tbhub migrate`, run by scripts/deploy.sh before services roll) applies
# schemas/spanner/ddl in order and records them in SchemaMigrations.
resource "google_spanner_instance" "tbhub" {
  name             = var.name_prefix
  config           = "regional-${var.region}"
  display_name     = "tbhub"
  processing_units = var.spanner_processing_units
  labels           = var.labels

  depends_on = [google_project_service.apis]
}

resource "google_spanner_database" "tbhub" {
  instance = google_spanner_instance.tbhub.name
  name     = "tbhub"
  # Point-in-time recovery window (docs/operations.md, "Back up").
  version_retention_period = var.spanner_version_retention
  deletion_protection      = true
}
