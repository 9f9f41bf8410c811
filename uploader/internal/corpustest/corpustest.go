// Package corpustest locates the shared event-file corpus for tests: the folder
// ../shared/corpus beside the repository root (the directory holding go.work), or
// $TBHUB_CORPUS. The corpus is never copied into the repository.
package corpustest

import (
	"os"
	"path/filepath"
	"testing"
)

// Dir returns the corpus directory, failing the test when it cannot be found.
func Dir(tb testing.TB) string {
	tb.Helper()
	if d := os.Getenv("TBHUB_CORPUS"); d != "" {
		return d
	}
	wd, err := os.Getwd()
	if err != nil {
		tb.Fatal(err)
	}
	for d := wd; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.work")); err == nil {
			c := filepath.Join(d, "..", "shared", "corpus")
			if _, err := os.Stat(filepath.Join(c, "EXPECTED.json")); err != nil {
				tb.Fatalf("corpus not found at %s (set TBHUB_CORPUS): %v", c, err)
			}
			return c
		}
		if filepath.Dir(d) == d {
			tb.Fatal("no go.work above the test directory; set TBHUB_CORPUS")
		}
	}
}
