package spanneremu

import (
	"os"
	"slices"
	"strings"
	"testing"

	"cloud.google.com/go/spanner"
	"google.golang.org/grpc/codes"

	spannerschema "github.com/tbhub/tbhub/schemas/spanner"
)

func TestMain(m *testing.M) { os.Exit(Main(m)) }

// A fresh database holds the whole schema and nothing else.
func TestNewDatabase(t *testing.T) {
	db := NewDatabase(t)
	var tables []string
	err := db.Client.Single().Query(t.Context(), spanner.Statement{SQL: `SELECT TABLE_NAME FROM INFORMATION_SCHEMA.TABLES
		WHERE TABLE_SCHEMA = '' ORDER BY TABLE_NAME`}).Do(func(r *spanner.Row) error {
		var name string
		if err := r.Column(0, &name); err != nil {
			return err
		}
		tables = append(tables, name)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// Every table the embedded DDL creates, and no other.
	stmts, err := spannerschema.Statements()
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, s := range stmts {
		if rest, ok := strings.CutPrefix(s, "CREATE TABLE "); ok {
			want = append(want, strings.Fields(rest)[0])
		}
	}
	slices.Sort(want)
	if !slices.Equal(tables, want) {
		t.Errorf("tables = %q, want %q", tables, want)
	}
	var users int64
	if err := db.Client.Single().Query(t.Context(), spanner.Statement{SQL: "SELECT COUNT(*) FROM Users"}).Do(func(r *spanner.Row) error {
		return r.Column(0, &users)
	}); err != nil || users != 0 {
		t.Errorf("new database has %d users (err %v), want 0", users, err)
	}
}

// Two databases from one emulator are independent.
func TestDatabasesAreIsolated(t *testing.T) {
	a, b := NewDatabase(t), NewDatabase(t)
	if a.Name == b.Name {
		t.Fatalf("two databases share the name %s", a.Name)
	}
	_, err := a.Client.Apply(t.Context(), []*spanner.Mutation{spanner.Insert("Users",
		[]string{"UserId", "Name", "CreateTime"}, []any{"u1", "one", spanner.CommitTimestamp})})
	if err != nil {
		t.Fatal(err)
	}
	row, err := b.Client.Single().ReadRow(t.Context(), "Users", spanner.Key{"u1"}, []string{"Name"})
	if spanner.ErrCode(err) != codes.NotFound {
		t.Errorf("user written to %s is visible in %s: row %v, err %v", a.Name, b.Name, row, err)
	}
}
