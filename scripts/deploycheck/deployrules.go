package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// tfResource is one resource block of a module, with its source text.
type tfResource struct {
	typ, name string
	blk       *hclsyntax.Block
	src       string
}

// deployRule is one thing a tbhub deployment must get right, each a gap
// once found in review (issue 22, item 9); check returns a problem or "".
type deployRule struct {
	name  string
	check func(rs []tfResource) string
}

var deployRules = []deployRule{
	{"cpu_idle", func(rs []tfResource) string {
		for _, r := range ofType(rs, "google_cloud_run_v2_service") {
			if !hasPath(r.blk.Body, "template", "containers", "resources", "cpu_idle") {
				return fmt.Sprintf("%s.%s leaves template.containers.resources.cpu_idle to the provider's default; set it to the billing model docs/capacity.md prices", r.typ, r.name)
			}
		}
		return ""
	}},
	{"cloudresourcemanager", func(rs []tfResource) string {
		if !anyContains(ofType(rs, "google_project_service"), `"cloudresourcemanager.googleapis.com"`) {
			return "cloudresourcemanager.googleapis.com is not enabled (google_project_service); data.google_project reads through it"
		}
		return ""
	}},
	{"spanner autoscaling", func(rs []tfResource) string {
		for _, r := range ofType(rs, "google_spanner_instance") {
			if !hasPath(r.blk.Body, "autoscaling_config") {
				return fmt.Sprintf("%s.%s has no autoscaling_config (the managed autoscaler)", r.typ, r.name)
			}
		}
		return ""
	}},
	{"backup schedule", func(rs []tfResource) string {
		if len(ofType(rs, "google_spanner_backup_schedule")) == 0 {
			return "no google_spanner_backup_schedule: the database is never backed up beyond point-in-time recovery"
		}
		return ""
	}},
	{"alerts", func(rs []tfResource) string {
		policies := ofType(rs, "google_monitoring_alert_policy")
		var missing []string
		for what, metric := range map[string]string{
			"error rate":  "run.googleapis.com/request_count",
			"latency":     "run.googleapis.com/request_latencies",
			"Spanner CPU": "spanner.googleapis.com/instance/cpu/",
		} {
			if !anyContains(policies, metric) {
				missing = append(missing, what+" ("+metric+")")
			}
		}
		sort.Strings(missing)
		if len(missing) > 0 {
			return "no alert policy on " + strings.Join(missing, ", ")
		}
		return ""
	}},
	{"bucket lifecycle", func(rs []tfResource) string {
		for _, r := range ofType(rs, "google_storage_bucket") {
			if strings.Contains(r.src, "AbortIncompleteMultipartUpload") {
				return fmt.Sprintf("%s.%s has an AbortIncompleteMultipartUpload rule: it concerns XML API multipart uploads only, which tbhub never makes (the Go client uploads with JSON resumable sessions)", r.typ, r.name)
			}
		}
		return ""
	}},
}

// checkDeployRules checks the module in dir against deployRules.
func checkDeployRules(dir string) ([]string, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.tf"))
	if err != nil {
		return nil, err
	}
	sort.Strings(paths)
	parser := hclparse.NewParser()
	var rs []tfResource
	for _, p := range paths {
		src, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		f, diags := parser.ParseHCL(src, p)
		if diags.HasErrors() {
			return nil, diags
		}
		for _, blk := range f.Body.(*hclsyntax.Body).Blocks {
			if blk.Type == "resource" && len(blk.Labels) == 2 {
				r := blk.Range()
				rs = append(rs, tfResource{typ: blk.Labels[0], name: blk.Labels[1], blk: blk, src: string(src[r.Start.Byte:r.End.Byte])})
			}
		}
	}
	var problems []string
	for _, rule := range deployRules {
		if p := rule.check(rs); p != "" {
			problems = append(problems, fmt.Sprintf("%s: %s", rule.name, p))
		}
	}
	return problems, nil
}

func ofType(rs []tfResource, typ string) []tfResource {
	var out []tfResource
	for _, r := range rs {
		if r.typ == typ {
			out = append(out, r)
		}
	}
	return out
}

func anyContains(rs []tfResource, s string) bool {
	for _, r := range rs {
		if strings.Contains(r.src, s) {
			return true
		}
	}
	return false
}

// hasPath reports whether body sets the nested blocks and, last, the
// attribute or block path names; a dynamic block of a name counts as
// that block, its content as its body.
func hasPath(body *hclsyntax.Body, path ...string) bool {
	if len(path) == 1 {
		if _, ok := body.Attributes[path[0]]; ok {
			return true
		}
	}
	for _, b := range body.Blocks {
		inner := b.Body
		name := b.Type
		if b.Type == "dynamic" && len(b.Labels) == 1 {
			name = b.Labels[0]
			for _, c := range b.Body.Blocks {
				if c.Type == "content" {
					inner = c.Body
				}
			}
		}
		if name != path[0] {
			continue
		}
		if len(path) == 1 || hasPath(inner, path[1:]...) {
			return true
		}
	}
	return false
}
