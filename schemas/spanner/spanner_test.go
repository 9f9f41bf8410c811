package spannerschema

import (
	"slices"
	"strings"
	"testing"
)

func TestMigrations(t *testing.T) {
	ms, err := Migrations()
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) == 0 || ms[0].Version != 1 || ms[0].Name != "0001_init.sql" {
		t.Fatalf("first migration = %+v, want version 1 from 0001_init.sql", ms[0])
	}
	for i, m := range ms {
		if m.Version != int64(i+1) {
			t.Errorf("migration %s has version %d, want %d (no gaps)", m.Name, m.Version, i+1)
		}
		for _, s := range m.Statements {
			if strings.Contains(s, "--") || strings.Contains(s, ";") {
				t.Errorf("%s: statement still holds a comment or separator: %q", m.Name, s)
			}
			if !strings.HasPrefix(s, "CREATE ") && !strings.HasPrefix(s, "ALTER ") && !strings.HasPrefix(s, "DROP ") {
				t.Errorf("%s: statement does not start with CREATE/ALTER/DROP: %q", m.Name, s)
			}
		}
	}
}

// Every data table's key starts with ExperimentId and every point table has
// its SampleKey index: the two rules the read paths depend on.
func TestSchemaRules(t *testing.T) {
	stmts, err := Statements()
	if err != nil {
		t.Fatal(err)
	}
	joined := strings.Join(stmts, "\n")
	for _, table := range []string{"ReadGrants", "Runs", "TimeSeries", "ScalarPoints", "ScalarChunks", "TensorPoints", "BlobSequences", "Blobs"} {
		i := slices.IndexFunc(stmts, func(s string) bool { return strings.HasPrefix(s, "CREATE TABLE "+table+" (") })
		if i < 0 {
			t.Errorf("no table %s", table)
			continue
		}
		if !strings.Contains(stmts[i], "PRIMARY KEY (ExperimentId,") {
			t.Errorf("table %s: primary key does not start with ExperimentId", table)
		}
	}
	for _, table := range []string{"ScalarPoints", "TensorPoints", "BlobSequences"} {
		if !strings.Contains(joined, "ON "+table+" (ExperimentId, RunName, Tag, SampleKey)") {
			t.Errorf("table %s has no (series, SampleKey) index", table)
		}
	}
}

func TestSplitStatements(t *testing.T) {
	got := SplitStatements("-- head\nCREATE TABLE A (x INT64) PRIMARY KEY (x); -- tail\n\n-- only a comment;\nCREATE INDEX I ON A (x);\n")
	want := []string{"CREATE TABLE A (x INT64) PRIMARY KEY (x)", "CREATE INDEX I ON A (x)"}
	if !slices.Equal(got, want) {
		t.Errorf("SplitStatements = %q, want %q", got, want)
	}
}
