package main

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// A module with every gap issue 22 found fails each rule once; the
// repository's module passes them all.
func TestDeployRules(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"main.tf": `resource "google_project_service" "apis" {
  for_each = toset(["run.googleapis.com"])
  service  = each.value
}

resource "google_cloud_run_v2_service" "svc" {
  template {
    containers {
      resources {
        startup_cpu_boost = true
      }
    }
  }
}

resource "google_spanner_instance" "db" {
  processing_units = 100
}

resource "google_monitoring_alert_policy" "errors" {
  conditions {
    condition_threshold {
      filter = "metric.type = \"run.googleapis.com/request_count\""
    }
  }
}

resource "google_storage_bucket" "b" {
  lifecycle_rule {
    action {
      type = "AbortIncompleteMultipartUpload"
    }
  }
}
`,
	})
	problems, err := checkDeployRules(dir)
	if err != nil {
		t.Fatal(err)
	}
	var rules []string
	for _, p := range problems {
		rule, _, _ := strings.Cut(p, ": ")
		rules = append(rules, rule)
	}
	slices.Sort(rules)
	want := []string{"alerts", "backup schedule", "bucket lifecycle", "cloudresourcemanager", "cpu_idle", "spanner autoscaling"}
	if !slices.Equal(rules, want) {
		t.Errorf("rules broken: %q, want %q:\n%s", rules, want, strings.Join(problems, "\n"))
	}
	if !strings.Contains(strings.Join(problems, "\n"), "Spanner CPU (spanner.googleapis.com/instance/cpu/), latency (run.googleapis.com/request_latencies)") {
		t.Errorf("the alerts problem should name the missing latency and Spanner CPU policies:\n%s", strings.Join(problems, "\n"))
	}

	problems, err = checkDeployRules(filepath.Join("..", "..", "infra", "terraform"))
	if err != nil {
		t.Fatal(err)
	}
	if len(problems) > 0 {
		t.Errorf("infra/terraform breaks deploy rules:\n%s", strings.Join(problems, "\n"))
	}
}
