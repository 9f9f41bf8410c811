package main

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// messages strips the file positions from problems.
func messages(problems []string) []string {
	var out []string
	for _, p := range problems {
		if i := strings.LastIndex(p, ": "); i >= 0 {
			p = p[i+2:]
		}
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

const terraformBlock = `terraform {
  required_version = ">= 1.5.0"
  required_providers {
    google = {
      source  = "hashicorp/google"
      version = "~> 6.20"
    }
  }
}
`

func TestTerraformReferences(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"versions.tf": terraformBlock,
		"main.tf": `variable "region" {
  description = "r"
  type        = map(object({ a = string }))
}

locals {
  names = [for n in ["a", "b"] : "${n}-${var.region}"]
}

resource "google_service_account" "sa" {
  for_each   = toset(local.names)
  account_id = each.key
}

resource "google_thing" "x" {
  name   = google_service_account.sa["a"].email
  other  = google_missing.y.id
  zone   = var.zone
  local  = local.nope
  source = data.google_project.p.number

  dynamic "env" {
    for_each = local.names
    content {
      name = env.value
    }
  }

  lifecycle {
    ignore_changes = [labels]
  }
}
`,
	})
	problems, err := checkTerraform(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"undeclared data source data.google_project.p",
		"undeclared local local.nope",
		"undeclared resource google_missing.y",
		"undeclared variable var.zone",
	}
	if got := messages(problems); !slices.Equal(got, want) {
		t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(problems, "\n"), strings.Join(want, "\n"))
	}
}

func TestTerraformDeclarationRules(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"versions.tf": `terraform {
  required_providers {
    google = {
      source = "hashicorp/google"
    }
  }
}
`,
		"vars.tf": `variable "a" {
  type = string
}

variable "a" {
  description = "again"
  type        = string
}

output "o" {
  value = var.a
}
`,
	})
	problems, err := checkTerraform(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"output o has no description",
		"provider google has no version constraint",
		"terraform block without required_version",
		"variable a declared twice",
		"variable a has no description",
	}
	if got := messages(problems); !slices.Equal(got, want) {
		t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(problems, "\n"), strings.Join(want, "\n"))
	}
}

func TestTerraformSyntaxAndFormat(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"versions.tf": terraformBlock,
		"a.tf":        "locals {\n  x=1\n}\n",
		"b.tf":        "locals {\n  y = \n}\n",
	})
	problems, err := checkTerraform(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(problems) != 2 || !strings.Contains(problems[0], "a.tf: not formatted") || !strings.Contains(problems[1], "b.tf:2") {
		t.Errorf("want a syntax error in b.tf and a.tf not formatted, got:\n%s", strings.Join(problems, "\n"))
	}
}

func TestComposeRules(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"app.Dockerfile": "FROM scratch\n",
		"docker-compose.yml": `services:
  ok:
    build:
      context: .
      dockerfile: app.Dockerfile
      args:
        SERVICE: api
  badarg:
    build:
      context: .
      dockerfile: app.Dockerfile
      args:
        SERVICE: nope
  nodockerfile:
    build:
      context: .
      dockerfile: missing.Dockerfile
      args:
        SERVICE: api
  latest:
    image: busybox
  mount:
    image: busybox:1.36
    volumes:
      - ./absent.sh:/absent.sh:ro
`,
	})
	problems, err := checkCompose(context.Background(), filepath.Join(dir, "docker-compose.yml"), []string{"api"})
	if err != nil {
		t.Fatal(err)
	}
	joined := strings.Join(problems, "\n")
	for _, want := range []string{
		"service badarg: build argument SERVICE=nope is none of [api]",
		"service latest: image busybox is not pinned",
		"service mount: bind mount source",
		"service nodockerfile: Dockerfile",
	} {
		if !strings.Contains(joined, want) {
			t.Errorf("no problem %q in:\n%s", want, joined)
		}
	}
	if len(problems) != 4 {
		t.Errorf("%d problems, want 4:\n%s", len(problems), joined)
	}
}

func TestComposeSchema(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"docker-compose.yml": `services:
  a:
    image: busybox:1.36
    portz: ["80:80"]
`,
	})
	_, err := checkCompose(context.Background(), filepath.Join(dir, "docker-compose.yml"), []string{"api"})
	if err == nil || !strings.Contains(err.Error(), "portz") {
		t.Errorf("want a schema error about portz, got %v", err)
	}
}

func TestPinned(t *testing.T) {
	for image, want := range map[string]bool{
		"busybox":                        false,
		"busybox:latest":                 false,
		"busybox:1.36":                   true,
		"localhost:5000/app":             false,
		"localhost:5000/app:v1":          true,
		"gcr.io/a/b@sha256:0123456789ab": true,
	} {
		if got := pinned(image); got != want {
			t.Errorf("pinned(%q) = %v, want %v", image, got, want)
		}
	}
}

func TestDockerfile(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"present.txt": "x",
		"good.Dockerfile": `FROM golang:1.26 AS build
COPY present.txt /src/
RUN true
FROM scratch
COPY --from=build /src/present.txt /
ENTRYPOINT ["/present.txt"]
`,
		"bad.Dockerfile": `FROM golang:1.26 as build
COPY present.txt absent.txt /src/
FROM scratch
ENTRYPOINT ["/x"]
`,
		"broken.Dockerfile": "FROM scratch\nEXPOZE 80\n",
	})
	check := func(name string) []string {
		t.Helper()
		problems, err := checkDockerfile(filepath.Join(dir, name), dir)
		if err != nil {
			t.Fatal(err)
		}
		return problems
	}
	if p := check("good.Dockerfile"); len(p) != 0 {
		t.Errorf("good.Dockerfile: %q", p)
	}
	bad := strings.Join(check("bad.Dockerfile"), "\n")
	for _, want := range []string{"bad.Dockerfile:1: FromAsCasing", "bad.Dockerfile:2: COPY source absent.txt is not in the build context"} {
		if !strings.Contains(bad, want) {
			t.Errorf("no %q in:\n%s", want, bad)
		}
	}
	if p := check("broken.Dockerfile"); len(p) != 1 || !strings.Contains(p[0], "unknown instruction") {
		t.Errorf("broken.Dockerfile: %q", p)
	}
}

func TestTerraformProviderSchema(t *testing.T) {
	schema := writeFiles(t, map[string]string{
		"lib/thing/index.d.ts": `export interface ThingConfig extends cdktf.TerraformMetaArguments {
    readonly name: string;
    readonly sizeLimit?: number;
    readonly part?: ThingPart[] | cdktf.IResolvable;
}
export interface ThingPart {
    readonly label?: string;
}
`,
		"lib/data-widget-zone/index.d.ts": `export interface DataWidgetZoneConfig extends cdktf.TerraformMetaArguments {
    readonly region?: string;
}
`,
	})
	dir := writeFiles(t, map[string]string{
		"versions.tf": terraformBlock,
		"main.tf": `data "widget_zone" "z" {
  region = "r"
}

resource "widget_thing" "a" {
  count      = 1
  name       = data.widget_zone.z.region
  size_limit = 3
  colour     = "red"

  part {
    label = "x"
  }

  dynamic "part" {
    for_each = ["y"]
    content {
      lable = part.value
    }
  }

  lifecycle {
    ignore_changes = [name]
  }
}

resource "widget_gadget" "b" {
  name = "b"
}

resource "other_thing" "c" {
  anything = true
}
`,
	})
	problems, err := checkTerraform(dir, map[string]string{"widget": schema})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`no such type in the provider's schema`,
		`widget_thing has no argument "colour"`,
		`widget_thing has no argument "lable"`,
	}
	if got := messages(problems); !slices.Equal(got, want) {
		t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(problems, "\n"), strings.Join(want, "\n"))
	}
}
