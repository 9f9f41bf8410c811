// Package allinone_test checks the arrows between the workspace's modules
// (docs/architecture.md): each module imports only modules below it, so
// services and frontend-api, the two halves, never import each other, and
// only this module, the all-in-one binary's, imports both.
package allinone_test

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// layer of each module in go.work: a module may import only modules of a
// lower layer.
var layer = map[string]int{
	"github.com/tbhub/tbhub/schemas":            0,
	"github.com/tbhub/tbhub/services/serverkit": 1,
	"github.com/tbhub/tbhub/uploader":           1,
	"github.com/tbhub/tbhub/services":           2,
	"github.com/tbhub/tbhub/frontend-api":       2,
	"github.com/tbhub/tbhub/services/allinone":  3,
}

func TestModulesPointDown(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	mods := goList(t, root, "-m", "-f", "{{.Path}} {{.Dir}}")
	for _, line := range mods {
		mod, dir, _ := strings.Cut(line, " ")
		from, ok := layer[mod]
		if !ok {
			t.Errorf("module %s (go.work) has no layer here", mod)
			continue
		}
		// Every package the module's packages and tests import, with the
		// module it comes from.
		deps := goList(t, dir, "-deps", "-test", "-f", "{{if .Module}}{{.Module.Path}} {{.ImportPath}}{{end}}", "./...")
		seen := map[string]bool{}
		for _, d := range deps {
			to, pkg, _ := strings.Cut(d, " ")
			l, local := layer[to]
			if !local || to == mod || seen[to] {
				continue
			}
			if l >= from {
				seen[to] = true
				t.Errorf("module %s imports %s (%s), which is not below it", mod, to, pkg)
			}
		}
	}
}

func goList(t *testing.T, dir string, args ...string) []string {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list"}, args...)...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %s in %s: %v", strings.Join(args, " "), dir, err)
	}
	return strings.Split(strings.TrimSpace(string(out)), "\n")
}
