# Alert policies (docs/operations.md, "Alerts"). Each opens an incident in
# Cloud Monitoring and notifies var.alert_notification_channels.
locals {
  run_filter = {
    for k, name in local.services : k => "resource.type = \"cloud_run_revision\" AND resource.labels.service_name = \"${name}\""
  }
}

# HTTP 5xx share per service. gRPC calls answer HTTP 200 with their status
# in the trailers, so this sees the front end's and the HTTP API's
# failures, crashes and timeouts; the tbhub_ metrics count gRPC codes.
resource "google_monitoring_alert_policy" "error_rate" {
  for_each              = local.services
  display_name          = "tbhub ${each.key}: 5xx responses above ${var.alert_error_percent}%"
  combiner              = "OR"
  notification_channels = var.alert_notification_channels
  user_labels           = var.labels

  conditions {
    display_name = "5xx share of ${each.value}'s responses"
    condition_threshold {
      filter             = "${local.run_filter[each.key]} AND metric.type = \"run.googleapis.com/request_count\" AND metric.labels.response_code_class = \"5xx\""
      denominator_filter = "${local.run_filter[each.key]} AND metric.type = \"run.googleapis.com/request_count\""
      comparison         = "COMPARISON_GT"
      threshold_value    = var.alert_error_percent / 100
      duration           = "300s"
      aggregations {
        alignment_period     = "60s"
        per_series_aligner   = "ALIGN_RATE"
        cross_series_reducer = "REDUCE_SUM"
      }
      denominator_aggregations {
        alignment_period     = "60s"
        per_series_aligner   = "ALIGN_RATE"
        cross_series_reducer = "REDUCE_SUM"
      }
    }
  }

  depends_on = [google_project_service.apis]
}

resource "google_monitoring_alert_policy" "latency" {
  for_each              = var.alert_latency_p99_ms
  display_name          = "tbhub ${each.key}: p99 latency above ${each.value} ms"
  combiner              = "OR"
  notification_channels = var.alert_notification_channels
  user_labels           = var.labels

  conditions {
    display_name = "p99 request latency of ${local.services[each.key]}"
    condition_threshold {
      filter          = "${local.run_filter[each.key]} AND metric.type = \"run.googleapis.com/request_latencies\""
      comparison      = "COMPARISON_GT"
      threshold_value = each.value
      duration        = "300s"
      aggregations {
        alignment_period     = "60s"
        per_series_aligner   = "ALIGN_PERCENTILE_99"
        cross_series_reducer = "REDUCE_MAX"
      }
    }
  }

  depends_on = [google_project_service.apis]
}

resource "google_monitoring_alert_policy" "spanner_cpu" {
  display_name          = "tbhub Spanner: high-priority CPU above ${var.alert_spanner_cpu_percent}%"
  combiner              = "OR"
  notification_channels = var.alert_notification_channels
  user_labels           = var.labels

  conditions {
    display_name = "high-priority CPU of ${google_spanner_instance.tbhub.name}"
    condition_threshold {
      filter          = "resource.type = \"spanner_instance\" AND resource.labels.instance_id = \"${google_spanner_instance.tbhub.name}\" AND metric.type = \"spanner.googleapis.com/instance/cpu/utilization_by_priority\" AND metric.labels.priority = \"high\""
      comparison      = "COMPARISON_GT"
      threshold_value = var.alert_spanner_cpu_percent / 100
      duration        = "600s"
      aggregations {
        alignment_period     = "60s"
        per_series_aligner   = "ALIGN_MEAN"
        cross_series_reducer = "REDUCE_SUM"
        group_by_fields      = ["resource.labels.instance_id"]
      }
    }
  }

  depends_on = [google_project_service.apis]
}
