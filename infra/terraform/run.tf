# The three Cloud Run services and the migrate job. Each container listens
# on $PORT (Cloud Run sets it from container_port). Probes: the startup
# probe waits for readiness (/readyz; gRPC health for the read service,
# which serves gRPC only), the liveness probe asks /healthz, which answers
# while the process lives. On SIGTERM each binary turns not-ready and
# drains within 10 s, inside Cloud Run's grace period.

locals {
  oidc_secret = local.oidc_enabled ? { TBHUB_OIDC_CLIENT_IDS = "oidc-client-ids" } : {}

  # Every service: the project names log lines' traces (Cloud Logging links
  # them to Cloud Trace); with telemetry_export, spans go to Cloud Trace and
  # the tbhub_ metrics to Cloud Monitoring (docs/operations.md).
  telemetry_env = merge({ TBHUB_GCP_PROJECT = var.project_id }, var.telemetry_export ? {
    TBHUB_TRACE_EXPORTER   = "gcp"
    TBHUB_METRICS_EXPORTER = "gcp"
  } : {})

  run_services = {
    # Uploads (gRPC), export, experiments, auth and the uploader handshake.
    write = {
      image   = local.images["write-service"]
      h2c     = true    # gRPC needs end-to-end HTTP/2; HTTP/1 still works
      timeout = "3600s" # long uploads stream blobs
      memory  = "1Gi"
      probe   = "http"
      env = merge(var.write_service_env, {
        TBHUB_STORE = local.store_url
        TBHUB_BLOBS = local.blobs_url
        # The handshake's experiment URL template: links open on the frontend.
        TBHUB_PUBLIC_ORIGIN = local.public_origin
        # Where uploaders dial gRPC (TLS on 443: tbup uses TLS for https servers).
        TBHUB_API_ENDPOINT = "${trimprefix(local.urls.write, "https://")}:443"
        TBHUB_OIDC_ISSUER  = var.oidc_issuer
        # Cloud Run's front end appends the client's address to X-Forwarded-For:
        # the invalid-credentials throttle keys on it, not on the proxy's.
        TBHUB_TRUSTED_PROXY_HOPS = "1"
        # Per-process budgets (write rate, blob streams, the credential
        # throttle) are each instance's share of the configured ones.
        TBHUB_INSTANCES = tostring(var.scaling["write"].max)
      })
      secrets = merge(local.oidc_secret, { TBHUB_FORWARDING_SECRET = "forwarding-secret" })
    }
    # TensorBoard's data provider (gRPC only).
    read = {
      image   = local.images["read-service"]
      h2c     = true
      timeout = "300s"
      memory  = "1Gi"
      probe   = "grpc"
      env = {
        TBHUB_STORE         = local.store_url
        TBHUB_BLOBS         = local.blobs_url
        TBHUB_PUBLIC_ORIGIN = local.public_origin
        TBHUB_OIDC_ISSUER   = var.oidc_issuer
        # As the write service's: one proxy (Cloud Run's front end).
        TBHUB_TRUSTED_PROXY_HOPS = "1"
        TBHUB_INSTANCES          = tostring(var.scaling["read"].max)
      }
      secrets = merge(local.oidc_secret, { TBHUB_BLOB_KEY_SECRET = "blob-key-secret", TBHUB_FORWARDING_SECRET = "forwarding-secret" })
    }
    # TensorBoard's HTTP API for browsers (HTTP/1.1), calling the read
    # service and the write service's experiment service over TLS.
    frontend = {
      image   = local.images["frontend"]
      h2c     = false
      timeout = "60s"
      memory  = "512Mi"
      probe   = "http"
      env = merge({
        TBHUB_READ_SERVICE       = "${trimprefix(local.urls.read, "https://")}:443"
        TBHUB_EXPERIMENT_SERVICE = "${trimprefix(local.urls.write, "https://")}:443"
        # Sign-in cookies and the OIDC redirect URI (TBHUB_PUBLIC_ORIGIN/auth/callback).
        TBHUB_PUBLIC_ORIGIN = local.public_origin
        # The browser's address, forwarded to the services, is the one Cloud Run's front end appended.
        TBHUB_TRUSTED_PROXY_HOPS = "1"
        }, local.web_oidc_enabled ? {
        TBHUB_OIDC_ISSUER        = var.oidc_issuer
        TBHUB_OIDC_WEB_CLIENT_ID = var.oidc_web_client_id
      } : {})
      secrets = merge({ TBHUB_FORWARDING_SECRET = "forwarding-secret" },
      local.web_oidc_secret_enabled ? { TBHUB_OIDC_WEB_CLIENT_SECRET = "oidc-web-client-secret" } : {})
    }
  }
}

resource "google_cloud_run_v2_service" "svc" {
  for_each            = local.run_services
  name                = local.services[each.key]
  location            = var.region
  ingress             = "INGRESS_TRAFFIC_ALL"
  deletion_protection = false
  labels              = var.labels

  template {
    service_account                  = google_service_account.sa[each.key].email
    timeout                          = each.value.timeout
    max_instance_request_concurrency = 80

    scaling {
      min_instance_count = var.scaling[each.key].min
      max_instance_count = var.scaling[each.key].max
    }

    containers {
      image = each.value.image

      ports {
        name           = each.value.h2c ? "h2c" : "http1"
        container_port = 8080
      }

      resources {
        limits = {
          cpu    = "1"
          memory = each.value.memory
        }
        startup_cpu_boost = true
        # Request-based billing, the model docs/capacity.md prices: CPU is
        # allocated (and billed) only while a request is in flight. The
        # write service's background sweeps run on instances kept alive
        # by traffic, under a lease (docs/operations.md, "Background
        # work").
        cpu_idle = true
      }

      dynamic "env" {
        for_each = merge(local.telemetry_env, each.value.env)
        content {
          name  = env.key
          value = env.value
        }
      }
      dynamic "env" {
        for_each = each.value.secrets
        content {
          name = env.key
          value_source {
            secret_key_ref {
              secret  = google_secret_manager_secret.s[env.value].secret_id
              version = "latest"
            }
          }
        }
      }

      startup_probe {
        period_seconds    = 2
        timeout_seconds   = 1
        failure_threshold = 30
        dynamic "http_get" {
          for_each = each.value.probe == "http" ? ["/readyz"] : []
          content {
            path = http_get.value
            port = 8080
          }
        }
        dynamic "grpc" {
          for_each = each.value.probe == "grpc" ? [8080] : []
          content {
            port = grpc.value
          }
        }
      }
      liveness_probe {
        period_seconds    = 15
        timeout_seconds   = 3
        failure_threshold = 3
        dynamic "http_get" {
          for_each = each.value.probe == "http" ? ["/healthz"] : []
          content {
            path = http_get.value
            port = 8080
          }
        }
        dynamic "grpc" {
          for_each = each.value.probe == "grpc" ? [8080] : []
          content {
            port = grpc.value
          }
        }
      }
    }
  }

  depends_on = [
    google_spanner_database_iam_member.sa,
    google_storage_bucket_iam_member.sa,
    google_secret_manager_secret_iam_member.readers,
    google_secret_manager_secret_version.blob_key,
    google_secret_manager_secret_version.forwarding_secret,
    google_secret_manager_secret_version.oidc_client_ids,
    google_secret_manager_secret_version.oidc_web_client_secret,
  ]
}

# Invokers. Uploaders and browsers reach the write service and the
# frontend directly; the frontend's account may call the read service; and
# unless read_service_public is false, so may anyone (`tbup view`). Every
# service checks tbhub credentials on every call regardless.
locals {
  invokers = merge(
    {
      "write allUsers"    = { service = "write", member = "allUsers" }
      "frontend allUsers" = { service = "frontend", member = "allUsers" }
      "read frontend"     = { service = "read", member = "serviceAccount:${google_service_account.sa["frontend"].email}" }
    },
    var.read_service_public ? { "read allUsers" = { service = "read", member = "allUsers" } } : {},
  )
}

resource "google_cloud_run_v2_service_iam_member" "invoker" {
  for_each = local.invokers
  location = var.region
  name     = google_cloud_run_v2_service.svc[each.value.service].name
  role     = "roles/run.invoker"
  member   = each.value.member
}

# `tbhub migrate`: brings the schema up to date, idempotently. Run it before
# the services move to a new image (scripts/deploy.sh does).
resource "google_cloud_run_v2_job" "migrate" {
  name                = "${var.name_prefix}-migrate"
  location            = var.region
  deletion_protection = false
  labels              = var.labels

  template {
    task_count  = 1
    parallelism = 1

    template {
      service_account = google_service_account.sa["migrate"].email
      max_retries     = 1
      timeout         = "1800s"

      containers {
        image = local.images["tbhub"]
        args  = ["migrate", "--store", local.store_url]

        resources {
          limits = {
            cpu    = "1"
            memory = "512Mi"
          }
        }
      }
    }
  }

  depends_on = [google_spanner_database_iam_member.sa]
}
