output "frontend_url" {
  description = "Where users open experiments (the handshake's experiment links point here)."
  value       = local.public_origin
}

output "write_service_url" {
  description = "The server uploaders use: tbup upload --server THIS."
  value       = google_cloud_run_v2_service.svc["write"].uri
}

output "read_service_url" {
  description = "The read service (gRPC, TLS on 443), for tbup view."
  value       = google_cloud_run_v2_service.svc["read"].uri
}

output "image_registry" {
  description = "Artifact Registry path the images are pushed to."
  value       = local.registry
}

output "migrate_job" {
  description = "Name of the Cloud Run job that applies the schema."
  value       = google_cloud_run_v2_job.migrate.name
}

output "spanner_database" {
  description = "The store, as --store takes it."
  value       = local.store_url
}

output "blob_bucket" {
  description = "The blob bucket, as --blobs takes it."
  value       = local.blobs_url
}

output "service_accounts" {
  description = "Service account e-mail per process."
  value       = { for k, sa in google_service_account.sa : k => sa.email }
}
