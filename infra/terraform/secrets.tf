# Secret Manager holds what must not sit in a service's plain environment:
# the OIDC client settings and the key that authenticates blob URLs (every
# read-service replica must share it). Cloud Run reads the latest version
# at each instance start: rotate by adding a version and redeploying
# (docs/operations.md, "Rotate keys and tokens").

locals {
  # Without client IDs there is no version (Secret Manager refuses an empty
  # payload) and the services get no TBHUB_OIDC_CLIENT_IDS: API tokens only.
  oidc_enabled = nonsensitive(var.oidc_client_ids != "")
  # Browser sign-in on the frontend, and whether its client has a secret.
  web_oidc_enabled        = var.oidc_web_client_id != ""
  web_oidc_secret_enabled = local.web_oidc_enabled && nonsensitive(var.oidc_web_client_secret != "")

  # secret => the service accounts that read it.
  secret_readers = {
    oidc-client-ids        = ["write", "read"]
    blob-key-secret        = ["read"]
    oidc-web-client-secret = ["frontend"]
    # The frontend's calls carry it with the browser's address, which the
    # services' invalid-credentials throttle keys on.
    forwarding-secret = ["write", "read", "frontend"]
  }
}

resource "google_secret_manager_secret" "s" {
  for_each  = local.secret_readers
  secret_id = "${var.name_prefix}-${each.key}"
  labels    = var.labels
  replication {
    auto {}
  }
  depends_on = [google_project_service.apis]
}

resource "google_secret_manager_secret_version" "oidc_client_ids" {
  count       = local.oidc_enabled ? 1 : 0
  secret      = google_secret_manager_secret.s["oidc-client-ids"].id
  secret_data = var.oidc_client_ids
}

resource "google_secret_manager_secret_version" "oidc_web_client_secret" {
  count       = local.web_oidc_secret_enabled ? 1 : 0
  secret      = google_secret_manager_secret.s["oidc-web-client-secret"].id
  secret_data = var.oidc_web_client_secret
}

resource "random_bytes" "blob_key" {
  length = 32
}

resource "google_secret_manager_secret_version" "blob_key" {
  secret      = google_secret_manager_secret.s["blob-key-secret"].id
  secret_data = random_bytes.blob_key.base64
}

resource "random_bytes" "forwarding_secret" {
  length = 32
}

resource "google_secret_manager_secret_version" "forwarding_secret" {
  secret      = google_secret_manager_secret.s["forwarding-secret"].id
  secret_data = random_bytes.forwarding_secret.base64
}

resource "google_secret_manager_secret_iam_member" "readers" {
  for_each = merge([
    for secret, sas in local.secret_readers : { for sa in sas : "${secret} ${sa}" => { secret = secret, sa = sa } }
  ]...)
  secret_id = google_secret_manager_secret.s[each.value.secret].id
  role      = "roles/secretmanager.secretAccessor"
  member    = "serviceAccount:${google_service_account.sa[each.value.sa].email}"
}
