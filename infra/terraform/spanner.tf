# The store. Schema changes are not Terraform's: the migrate job
# (`tbhub migrate`, run by scripts/deploy.sh before services roll) applies
# schemas/spanner/ddl in order and records them in SchemaMigrations.
#
# Compute follows load (the managed autoscaler) between
# spanner_processing_units and spanner_max_processing_units, aiming at the
# high-priority CPU Google recommends for regional instances (65%);
# spanner_max_processing_units = 0 keeps spanner_processing_units fixed.
resource "google_spanner_instance" "tbhub" {
  name             = var.name_prefix
  config           = "regional-${var.region}"
  display_name     = "tbhub"
  processing_units = var.spanner_max_processing_units > 0 ? null : var.spanner_processing_units
  labels           = var.labels

  dynamic "autoscaling_config" {
    for_each = var.spanner_max_processing_units > 0 ? [1] : []
    content {
      autoscaling_limits {
        min_processing_units = var.spanner_processing_units
        max_processing_units = var.spanner_max_processing_units
      }
      autoscaling_targets {
        high_priority_cpu_utilization_percent = var.spanner_cpu_target_percent
        storage_utilization_percent           = 90
      }
    }
  }

  depends_on = [google_project_service.apis]
}

resource "google_spanner_database" "tbhub" {
  instance = google_spanner_instance.tbhub.name
  name     = "tbhub"
  # Point-in-time recovery window (docs/operations.md, "Back up").
  version_retention_period = var.spanner_version_retention
  deletion_protection      = true
}

# A full backup every day at 03:00 UTC, kept spanner_backup_retention_days
# (docs/operations.md, "Back up and restore"): the horizon beyond
# point-in-time recovery's week.
resource "google_spanner_backup_schedule" "daily" {
  instance           = google_spanner_instance.tbhub.name
  database           = google_spanner_database.tbhub.name
  name               = "daily"
  retention_duration = "${var.spanner_backup_retention_days * 86400}s"

  spec {
    cron_spec {
      text = "0 3 * * *"
    }
  }
  full_backup_spec {}
}
