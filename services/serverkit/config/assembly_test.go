package config_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// assemblies are the packages, besides every package main, that build a
// binary's configuration: only they define flags and name TBHUB_*
// variables. Library packages describe their settings (Setting) and take
// values.
var assemblies = []string{
	"services/serverkit/config",              // Parse, Bind: the TBHUB_<FLAG> rule itself
	"services/internal/assembly/tbhubcmd",    // tbhub serve, migrate, token; write-service
	"services/internal/assembly/readservice", // read-service
	"services/allinone/readpath",             // tbhub serve's HTTP API flags
	"frontend-api/frontend",                  // frontend
	"uploader/internal/cli",                  // tbup
}

// testHelpers are packages only tests import: they may read TBHUB_CORPUS
// (where the shared corpus is) and build TBHUB_ names to check the
// binaries' flags.
var testHelpers = []string{
	"services/internal/testenv/corpus",
	"uploader/internal/corpustest",
	"services/internal/assembly/tbhubcmd/tbhubcmdtest",
}

// flagDefiners are the flag package's functions and FlagSet's methods that
// define a flag; each takes at least a name, a default or value, and a usage.
var flagDefiners = map[string]bool{
	"String": true, "StringVar": true, "Int": true, "IntVar": true, "Int64": true, "Int64Var": true,
	"Uint": true, "UintVar": true, "Uint64": true, "Uint64Var": true, "Float64": true, "Float64Var": true,
	"Bool": true, "BoolVar": true, "Duration": true, "DurationVar": true, "Var": true, "Func": true,
	"BoolFunc": true, "TextVar": true,
}

// maxMainLines bounds a main.go: signals, the logger, the config, one call.
const maxMainLines = 40

// No package but a binary's assembly defines flags or names a TBHUB_
// variable, and no main is longer than maxMainLines: configuration is one
// struct per binary, built in one place and passed down.
func TestOnlyAssembliesConfigure(t *testing.T) {
	root := repoRoot(t)
	var found int
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules" || name == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		found++
		checkFile(t, filepath.ToSlash(rel), path)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if found < 100 {
		t.Fatalf("read %d Go files under %s; the walk missed the tree", found, root)
	}
}

func checkFile(t *testing.T, rel, path string) {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := parser.ParseFile(token.NewFileSet(), path, src, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	if f.Name.Name == "main" {
		if hasMain(f) {
			if n := strings.Count(strings.TrimRight(string(src), "\n"), "\n") + 1; n > maxMainLines {
				t.Errorf("%s: main's file has %d lines, more than %d: move its body to its assembly's Main or to other files", rel, n, maxMainLines)
			}
		}
		return
	}
	dir := filepath.ToSlash(filepath.Dir(rel))
	if slices.Contains(assemblies, dir) || slices.Contains(testHelpers, dir) {
		return
	}
	flagName := importName(f, "flag")
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CallExpr:
			sel, ok := n.Fun.(*ast.SelectorExpr)
			if ok && flagName != "" && flagDefiners[sel.Sel.Name] && len(n.Args) >= 3 {
				t.Errorf("%s: %s defines a flag (%s); describe it as a config.Setting and let the binary's assembly bind it", rel, dir, sel.Sel.Name)
			}
		case *ast.BasicLit:
			if s, err := strconv.Unquote(n.Value); n.Kind == token.STRING && err == nil && strings.Contains(s, "TBHUB_") {
				t.Errorf("%s: %s names a TBHUB_ variable (%q); only assemblies read the environment", rel, dir, s)
			}
		}
		return true
	})
}

func hasMain(f *ast.File) bool {
	for _, d := range f.Decls {
		if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv == nil && fn.Name.Name == "main" {
			return true
		}
	}
	return false
}

// importName is the name f refers to the package at path by, or "".
func importName(f *ast.File, path string) string {
	for _, imp := range f.Imports {
		if p, _ := strconv.Unquote(imp.Path.Value); p == path {
			if imp.Name != nil {
				return imp.Name.Name
			}
			return filepath.Base(path)
		}
	}
	return ""
}

// repoRoot is the directory holding go.work, above the test.
func repoRoot(t *testing.T) string {
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.work above the test: it checks the whole repository")
		}
		dir = parent
	}
}
