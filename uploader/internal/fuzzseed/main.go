// Command fuzzseed builds seed corpora for tbhub's fuzz targets from the
// shared event-file corpus (../shared/corpus), so that each fuzz run in CI
// starts from real TensorBoard data rather than only the few seeds written
// in the tests:
//
//	go run ./uploader/internal/fuzzseed -corpus ../shared/corpus -out "$(go env GOCACHE)/fuzz" \
//	    IMPORTPATH.FuzzTarget ...
//
// It writes files in Go's fuzz corpus format under
// OUT/<package import path>/<FuzzTarget>/, which is where `go test -fuzz`
// looks for its generated corpus (scripts/fuzz.sh runs it, naming every
// target it found). What a target gets depends on its name (seedKinds);
// targets it has no seeds for are left to their own. Seeds are
// inputs, not expectations: nothing here is committed. Inputs that crash a
// target are kept by `go test` in the package's testdata/fuzz instead.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
)

func main() {
	corpus := flag.String("corpus", filepath.Join("..", "shared", "corpus"), "event-file corpus")
	out := flag.String("out", "", "fuzz cache directory (go env GOCACHE, then /fuzz)")
	flag.Parse()
	if *out == "" {
		fmt.Fprintln(os.Stderr, "fuzzseed: -out is required")
		os.Exit(2)
	}
	if err := run(*corpus, *out, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "fuzzseed:", err)
		os.Exit(1)
	}
}
