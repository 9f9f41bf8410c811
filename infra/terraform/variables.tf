variable "project_id" {
  description = "Google Cloud project that holds the whole deployment."
  type        = string
}

variable "region" {
  description = "Region of the Cloud Run services, the Artifact Registry repository, the bucket and (regional-REGION) the Spanner instance."
  type        = string
  default     = "us-central1"
}

variable "name_prefix" {
  description = "Prefix of every resource name (services, accounts, secrets, instance)."
  type        = string
  default     = "tbhub"
}

variable "image_tag" {
  description = "Tag of the images scripts/deploy.sh pushed (it passes the git commit)."
  type        = string
}

variable "spanner_processing_units" {
  description = "Spanner compute capacity: 100 processing units is the smallest instance; 1000 is one node."
  type        = number
  default     = 100
}

variable "spanner_max_processing_units" {
  description = "Upper bound of Spanner's managed autoscaler (spanner_processing_units is the lower); 0 turns autoscaling off and keeps spanner_processing_units."
  type        = number
  default     = 1000
}

variable "spanner_cpu_target_percent" {
  description = "High-priority CPU utilization the Spanner autoscaler aims at (65 is Google's recommended maximum for regional instances)."
  type        = number
  default     = 65
}

variable "spanner_backup_retention_days" {
  description = "How long the daily Spanner backups are kept (at most 366 days)."
  type        = number
  default     = 30
}

variable "alert_notification_channels" {
  description = "Cloud Monitoring notification channels (projects/P/notificationChannels/ID) the alert policies notify; empty: the policies open incidents without notifying anyone."
  type        = list(string)
  default     = []
}

variable "alert_error_percent" {
  description = "Share of a service's HTTP responses that are 5xx, over 5 minutes, above which an alert opens."
  type        = number
  default     = 2
}

variable "alert_latency_p99_ms" {
  description = "99th percentile request latency, over 5 minutes, above which an alert opens, per service. The write service has none: its blob streams last up to 15 minutes by design."
  type        = map(number)
  default = {
    read     = 2000
    frontend = 3000
  }
}

variable "alert_spanner_cpu_percent" {
  description = "High-priority Spanner CPU utilization, over 10 minutes, above which an alert opens (above the autoscaler's target: it fires when autoscaling is off, at its maximum, or too slow)."
  type        = number
  default     = 80
}

variable "spanner_version_retention" {
  description = "How far back point-in-time recovery reaches (Spanner version_retention_period, 1h to 7d)."
  type        = string
  default     = "7d"
}

variable "bucket_name" {
  description = "Name of the blob bucket (globally unique); PROJECT-tbhub-blobs if empty."
  type        = string
  default     = ""
}

variable "deleted_blob_retention_days" {
  description = "Days a deleted experiment's objects stay recoverable as noncurrent versions before the lifecycle rule removes them."
  type        = number
  default     = 30
}

variable "public_origin" {
  description = "Origin users open experiments at (a custom domain mapped to the frontend). The frontend's run.app URL if empty."
  type        = string
  default     = ""
}

variable "oidc_issuer" {
  description = "OpenID Connect issuer whose ID tokens sign users in."
  type        = string
  default     = "https://accounts.google.com"
}

variable "oidc_client_ids" {
  description = "Accepted OAuth client IDs, comma-separated; stored in Secret Manager. Empty: API tokens only."
  type        = string
  default     = ""
  sensitive   = true
}

variable "oidc_web_client_id" {
  description = "OAuth web client the browser sign-in uses (authorization code + PKCE; its redirect URI is TBHUB_PUBLIC_ORIGIN/auth/callback). It must also be one of oidc_client_ids, which the write service accepts. Empty: the web UI signs in with API tokens only."
  type        = string
  default     = ""
}

variable "oidc_web_client_secret" {
  description = "That web client's secret, if the issuer requires one (Google does); stored in Secret Manager."
  type        = string
  default     = ""
  sensitive   = true
}

variable "read_service_public" {
  description = "Let anyone invoke the read service (it checks every call's tbhub credential itself). Needed for `tbup view` from users' machines and while the frontend sends no Cloud Run ID token; false leaves only the frontend's service account as invoker."
  type        = bool
  default     = true
}

variable "scaling" {
  description = "Instances per Cloud Run service: min (kept warm) and max."
  type = map(object({
    min = number
    max = number
  }))
  default = {
    write    = { min = 0, max = 10 }
    read     = { min = 0, max = 20 }
    frontend = { min = 0, max = 10 }
  }
}

variable "write_service_env" {
  description = "Extra environment of the write service, e.g. limits: TBHUB_MAX_BLOB_BYTES, TBHUB_MAX_EXPERIMENTS_PER_USER, TBHUB_MAX_POINTS_PER_USER, TBHUB_MAX_BLOB_BYTES_PER_USER, TBHUB_REQUESTS_PER_SECOND (docs/write-service.md)."
  type        = map(string)
  default     = {}
}

variable "telemetry_export" {
  description = "Send the services' traces to Cloud Trace and their tbhub_ metrics to Cloud Monitoring (TBHUB_TRACE_EXPORTER and TBHUB_METRICS_EXPORTER = gcp)."
  type        = bool
  default     = true
}

variable "labels" {
  description = "Labels put on every resource that takes them."
  type        = map(string)
  default     = { app = "tbhub" }
}
