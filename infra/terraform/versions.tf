# Versions are pinned so that a plan made today is the plan made next month.
# The provider lock file (.terraform.lock.hcl) is written by `terraform init`
# on the operator's machine; commit it with the state configuration.
terraform {
  required_version = ">= 1.5.0, < 2.0.0"

  required_providers {
    google = {
      source  = "hashicorp/google"
      version = "~> 6.20"
    }
    random = {
      source  = "hashicorp/random"
      version = "~> 3.6"
    }
  }

  # State holds the generated blob-key secret and the OIDC settings: keep it
  # in a private bucket, e.g.
  #   terraform init -backend-config="bucket=MY-STATE-BUCKET" -backend-config="prefix=tbhub"
  backend "gcs" {}
}

provider "google" {
  project = var.project_id
  region  = var.region
}
