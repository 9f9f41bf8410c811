# Versions are pinned so that a plan made today is the plan made next month.
# CI checks every argument and block name against these providers' schemas
# (google 6.50.0, random 3.7.2, through their @cdktf bindings on npm:
# scripts/check-deploy.sh); raise both together.
# The provider lock file (.terraform.lock.hcl) is written by `terraform init`
# on the operator's machine; commit it with the state configuration.
terraform {
  required_version = ">= 1.5.0, < 2.0.0"

  required_providers {
    google = {
      source  = "hashicorp/google"
      version = "~> 6.50"
    }
    random = {
      source  = "hashicorp/random"
      version = "~> 3.7"
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
