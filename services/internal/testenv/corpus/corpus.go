// Package corpus finds the shared event-file corpus and builds the tbup
// binary, for tests that upload the corpus the way users do.
package corpus

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Dir is ../shared/corpus beside the repository root (the directory
// holding go.work), or $TBHUB_CORPUS.
func Dir(tb testing.TB) string {
	tb.Helper()
	if d := os.Getenv("TBHUB_CORPUS"); d != "" {
		return d
	}
	return filepath.Join(RepoRoot(tb), "..", "shared", "corpus")
}

// RepoRoot is the repository root: the directory holding go.work above the
// test's working directory.
func RepoRoot(tb testing.TB) string {
	tb.Helper()
	wd, _ := os.Getwd()
	for d := wd; filepath.Dir(d) != d; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.work")); err == nil {
			return d
		}
	}
	tb.Fatal("no go.work above the test; set TBHUB_CORPUS for the corpus")
	return ""
}

// BuildTbup builds uploader/cmd/tbup into dir and returns the binary's
// path. Call it from TestMain.
func BuildTbup(dir string) (string, error) {
	bin := filepath.Join(dir, "tbup")
	build := exec.Command("go", "build", "-o", bin, "github.com/tbhub/tbhub/uploader/cmd/tbup")
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building tbup: %v\n%s", err, out)
	}
	return bin, nil
}
