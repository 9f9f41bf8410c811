// Package spannerschema holds tbhub's Cloud Spanner schema as numbered DDL
// files (ddl/NNNN_name.sql) embedded in the binary. Files are append-only:
// a released file is never edited, a change is a new file. Migrations
// returns them in order, split into the statements UpdateDatabaseDdl takes;
// spannerstore.Migrate applies the ones a database lacks.
package spannerschema

import (
	"embed"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"
)

//go:embed ddl/*.sql
var ddlFiles embed.FS

// Migration is one DDL file.
type Migration struct {
	Version    int64    // the file's number, NNNN
	Name       string   // the file name, e.g. "0001_init.sql"
	Statements []string // without comments or trailing semicolons
}

// Migrations returns every embedded DDL file in version order. It fails if
// a file name does not start with a number or two files share one.
func Migrations() ([]Migration, error) {
	names, err := fs.Glob(ddlFiles, "ddl/*.sql")
	if err != nil {
		return nil, err
	}
	var out []Migration
	for _, name := range names {
		base := path.Base(name)
		num, _, ok := strings.Cut(base, "_")
		version, err := strconv.ParseInt(num, 10, 64)
		if !ok || err != nil || version <= 0 {
			return nil, fmt.Errorf("spannerschema: %s: name must be NNNN_description.sql", base)
		}
		text, err := ddlFiles.ReadFile(name)
		if err != nil {
			return nil, err
		}
		out = append(out, Migration{Version: version, Name: base, Statements: SplitStatements(string(text))})
	}
	slices.SortFunc(out, func(a, b Migration) int { return int(a.Version - b.Version) })
	for i := 1; i < len(out); i++ {
		if out[i].Version == out[i-1].Version {
			return nil, fmt.Errorf("spannerschema: %s and %s share version %d", out[i-1].Name, out[i].Name, out[i].Version)
		}
	}
	return out, nil
}

// Statements returns the statements of every migration in order: the
// whole schema, for creating a database in one call.
func Statements() ([]string, error) {
	ms, err := Migrations()
	if err != nil {
		return nil, err
	}
	var out []string
	for _, m := range ms {
		out = append(out, m.Statements...)
	}
	return out, nil
}

// SplitStatements removes "--" comments and splits DDL text at semicolons.
// Our DDL has no string literals containing "--" or ";", which keeps this
// simple; Migrations' test checks that every file splits cleanly.
func SplitStatements(text string) []string {
	var b strings.Builder
	for line := range strings.Lines(text) {
		if i := strings.Index(line, "--"); i >= 0 {
			line = line[:i] + "\n"
		}
		b.WriteString(line)
	}
	var out []string
	for stmt := range strings.SplitSeq(b.String(), ";") {
		if stmt = strings.TrimSpace(stmt); stmt != "" {
			out = append(out, stmt)
		}
	}
	return out
}
