package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/tbhub/tbhub/uploader/internal/corpustest"
)

// TestInspectCorpusMatchesExpected runs `tbup inspect --json` on the shared corpus and
// compares every run, series, count, sum, dtype, shape, blob count, error and total
// with the independently computed EXPECTED.json.
func TestInspectCorpusMatchesExpected(t *testing.T) {
	dir := corpustest.Dir(t)
	var out, errOut bytes.Buffer
	env := Env{Stdout: &out, Stderr: &errOut, Getenv: func(string) string { return "" }}
	if err := Run(context.Background(), env, []string{"inspect", "--json", "--logdir", dir}); err != nil {
		t.Fatalf("tbup inspect: %v\n%s", err, errOut.String())
	}
	var got, want any
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("output is not JSON: %v", err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "EXPECTED.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &want); err != nil {
		t.Fatal(err)
	}
	// The corpus's errors carry no detail strings; ours may explain more.
	for _, e := range got.(map[string]any)["errors"].([]any) {
		delete(e.(map[string]any), "detail")
	}
	var diffs []string
	compareJSON("", want, got, &diffs)
	if len(diffs) > 0 {
		sort.Strings(diffs)
		t.Errorf("%d differences from EXPECTED.json:\n%s", len(diffs), strings.Join(diffs, "\n"))
	}
	// Guard against a vacuous pass: the corpus has dozens of runs and hundreds of series.
	runs := got.(map[string]any)["runs"].(map[string]any)
	if len(runs) < 50 {
		t.Errorf("only %d runs found", len(runs))
	}
}

// compareJSON reports every difference between two decoded JSON values; numbers are
// equal within a relative tolerance of 1e-9 (sums are exactly rounded on both sides,
// the tolerance only absorbs decimal formatting).
func compareJSON(path string, want, got any, diffs *[]string) {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			*diffs = append(*diffs, fmt.Sprintf("%s: want object, got %v", path, got))
			return
		}
		for k, wv := range w {
			gv, ok := g[k]
			if !ok {
				*diffs = append(*diffs, fmt.Sprintf("%s/%s: missing", path, k))
				continue
			}
			compareJSON(path+"/"+k, wv, gv, diffs)
		}
		for k := range g {
			if _, ok := w[k]; !ok {
				*diffs = append(*diffs, fmt.Sprintf("%s/%s: unexpected", path, k))
			}
		}
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			*diffs = append(*diffs, fmt.Sprintf("%s: want %v, got %v", path, want, got))
			return
		}
		for i := range w {
			compareJSON(fmt.Sprintf("%s[%d]", path, i), w[i], g[i], diffs)
		}
	case float64:
		g, ok := got.(float64)
		if !ok || math.Abs(g-w) > 1e-9*math.Max(1, math.Abs(w)) {
			*diffs = append(*diffs, fmt.Sprintf("%s: want %v, got %v", path, want, got))
		}
	default:
		if want != got {
			*diffs = append(*diffs, fmt.Sprintf("%s: want %v, got %v", path, want, got))
		}
	}
}

func TestInspectTableAndErrors(t *testing.T) {
	dir := corpustest.Dir(t)
	var out, errOut bytes.Buffer
	env := Env{Stdout: &out, Stderr: &errOut, Getenv: func(string) string { return "" }}
	if err := Run(context.Background(), env, []string{"inspect", "--logdir", filepath.Join(dir, "generated", "damaged")}); err != nil {
		t.Fatalf("tbup inspect: %v", err)
	}
	for _, want := range []string{"bad_data_crc/events", "truncated_record", "RUN", "(no data)", "4 runs"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}
	out.Reset()
	err := Run(context.Background(), env, []string{"inspect", "--logdir", filepath.Join(dir, "no-such-dir")})
	if err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("missing logdir: got %v, want a not-found error", err)
	}
	if err := Run(context.Background(), env, []string{"inspect"}); err != ErrUsage {
		t.Errorf("no --logdir: got %v, want ErrUsage", err)
	}
}
