package spannerstore_test

import (
	"slices"
	"testing"

	"cloud.google.com/go/spanner"
	"cloud.google.com/go/spanner/admin/database/apiv1/databasepb"

	spannerschema "github.com/tbhub/tbhub/schemas/spanner"
	"github.com/tbhub/tbhub/services/internal/storage/store/spannerstore"
	"github.com/tbhub/tbhub/services/internal/testenv/spanneremu"
)

// Migrating a database that is already up to date changes nothing and
// records every version once.
func TestMigrateIsIdempotent(t *testing.T) {
	db := spanneremu.NewDatabase(t) // migrated once already
	ddl := func() []string {
		resp, err := db.Admin.GetDatabaseDdl(t.Context(), &databasepb.GetDatabaseDdlRequest{Database: db.Name})
		if err != nil {
			t.Fatal(err)
		}
		return resp.Statements
	}
	before := ddl()
	for range 2 {
		if err := spannerstore.Migrate(t.Context(), db.Admin, db.Name); err != nil {
			t.Fatalf("Migrate again: %v", err)
		}
	}
	if after := ddl(); !slices.Equal(before, after) {
		t.Errorf("a repeated Migrate changed the schema:\nbefore %q\nafter  %q", before, after)
	}
	migrations, err := spannerschema.Migrations()
	if err != nil {
		t.Fatal(err)
	}
	var want, got []int64
	for _, m := range migrations {
		want = append(want, m.Version)
	}
	err = db.Client.Single().Read(t.Context(), "SchemaMigrations", spanner.AllKeys(), []string{"Version"}).Do(func(r *spanner.Row) error {
		var v int64
		if err := r.Column(0, &v); err != nil {
			return err
		}
		got = append(got, v)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Errorf("SchemaMigrations holds versions %v, want %v", got, want)
	}
}
