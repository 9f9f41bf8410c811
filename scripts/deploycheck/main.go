// Command deploycheck checks the deployment files where no Docker engine
// and no Terraform provider can run (CI): it parses the Dockerfile with
// BuildKit's parser and linter, loads docker-compose.yml the way Docker
// Compose does (compose-spec schema, interpolation, consistency) and
// parses every Terraform file with HashiCorp's HCL parser, checking
// formatting, version pins, documentation and that every reference names
// something declared. scripts/check-deploy.sh runs it.
//
//	deploycheck dockerfile -context . infra/docker/service.Dockerfile
//	deploycheck compose -services a,b,c docker-compose.yml
//	deploycheck terraform -schema google=DIR,random=DIR infra/terraform
//
// It lives in its own module, outside go.work, so its parsers never change
// the product modules' dependency versions.
package main

import (
	"context"
	"os"
)

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}
