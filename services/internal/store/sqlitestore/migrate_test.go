package sqlitestore

import (
	"database/sql"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/tbhub/tbhub/services/internal/downsample"
	"github.com/tbhub/tbhub/services/internal/store"
)

// oldDatabase writes a database of an older schema version with stmts
// (that version's migrations, its user_version and rows) and returns its
// path.
func oldDatabase(t *testing.T, stmts ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), DefaultFile)
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range stmts {
		if _, err := db.ExecContext(t.Context(), q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestMigrateScalarsToBlocks builds a version-2 database with scalars in
// the old one-row-per-point table and checks that Open moves them to
// blocks without losing or changing a point.
func TestMigrateScalarsToBlocks(t *testing.T) {
	t.Parallel()
	c := t.Context()
	eid := store.NewExperimentID()
	path := oldDatabase(t, migrations[0], migrations[1], "PRAGMA user_version = 2",
		"INSERT INTO users VALUES ('u', 'u', 0)",
		fmt.Sprintf("INSERT INTO experiments (id, name, description, owner, visibility, create_time, update_time) VALUES ('%s', '', '', 'u', 'private', 0, 0)", eid),
		fmt.Sprintf("INSERT INTO runs VALUES ('%s', 'r', 1)", eid),
		fmt.Sprintf("INSERT INTO series (id, experiment_id, run, tag, plugin, data_class, display_name, description, point_count, max_step) VALUES (7, '%s', 'r', 'x', 'scalars', 1, '', '', 300, 299)", eid),
		// A blob sequence with an unfinished and a current blob.
		fmt.Sprintf("INSERT INTO series (id, experiment_id, run, tag, plugin, data_class, display_name, description, point_count, max_step, blob_count, total_bytes) VALUES (8, '%s', 'r', 'img', 'images', 3, '', '', 1, 1, 1, 5)", eid),
		"INSERT INTO blob_sequences VALUES (8, 1, 0, 1.5, 2)",
		"INSERT INTO blobs VALUES (8, 1, 0, 'k0', 3, 0, 1), (8, 1, 1, 'k1', 5, 0, 2)",
	)
	old, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	want := make([]store.ScalarPoint, 300)
	for i := range want {
		st := int64(i)
		want[i] = store.ScalarPoint{Step: st, WallTime: float64(i) + 0.25, Value: math.Sqrt(float64(i))}
		if _, err := old.ExecContext(c, "INSERT INTO scalar_points VALUES (7, ?, ?, ?, ?)",
			st, downsample.Level(st), want[i].WallTime, int64(math.Float64bits(want[i].Value))); err != nil {
			t.Fatal(err)
		}
	}
	if err := old.Close(); err != nil {
		t.Fatal(err)
	}

	beforeMigrate := time.Now()
	from, to, err := Migrate(c, path)
	if err != nil {
		t.Fatal(err)
	}
	if from != 2 || to != SchemaVersion {
		t.Errorf("Migrate reported %d -> %d, want 2 -> %d", from, to, SchemaVersion)
	}
	if from, _, err := Migrate(c, path); err != nil || from != SchemaVersion {
		t.Errorf("second Migrate found version %d (%v), want %d: nothing to do", from, err, SchemaVersion)
	}
	s, err := Open(c, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var got []store.ScalarPoint
	err = s.ReadScalars(c, eid, store.Query{MaxPoints: store.AllPoints}, func(_ *store.TimeSeries, ps []store.ScalarPoint) error {
		got = append(got, ps...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("read %d points after migration, want %d", len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			t.Errorf("point %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	var n int
	if err := s.r.QueryRowContext(c, "SELECT COUNT(*) FROM sqlite_schema WHERE name = 'scalar_points'").Scan(&n); err != nil || n != 0 {
		t.Errorf("scalar_points still exists (%d, %v)", n, err)
	}
	// Version 5: a run keeps the start time its points gave it until an
	// uploader records its first event's.
	runs, err := s.ListRuns(c, eid)
	if err != nil || !slices.Equal(runs, []store.Run{{Name: "r", StartTime: 1}}) {
		t.Errorf("ListRuns after migration = %v, %v; want r starting at 1", runs, err)
	}
	if err := s.PutRuns(c, eid, []store.Run{{Name: "r", StartTime: 0.5}, {Name: "new"}}); err != nil {
		t.Fatal(err)
	}
	runs, err = s.ListRuns(c, eid)
	if err != nil || !slices.Equal(runs, []store.Run{{Name: "new"}, {Name: "r", StartTime: 0.5}}) {
		t.Errorf("ListRuns after PutRuns = %v, %v", runs, err)
	}
	// Version 7: an unfinished blob is stamped with the upgrade's time, so
	// the sweeper removes it once that is old enough; a current one never.
	if got, err := s.ListAbandonedBlobs(c, beforeMigrate.Add(-time.Second), 10); err != nil || len(got) != 0 {
		t.Errorf("blobs abandoned before the upgrade: %+v, %v; want none", got, err)
	}
	got2, err := s.ListAbandonedBlobs(c, time.Now().Add(time.Minute), 10)
	if err != nil || len(got2) != 1 || got2[0].ObjectKey != "k0" || got2[0].Size != 3 ||
		got2[0].Ref != (store.BlobRef{Run: "r", Tag: "img", Step: 1, Index: 0}) || got2[0].WriteTime.Before(beforeMigrate.Add(-time.Second)) {
		t.Errorf("blobs abandoned before now: %+v, %v; want k0, stamped at the upgrade (after %v)", got2, err, beforeMigrate)
	}
}

// TestMigrateGivesUsersHandles upgrades a version-7 database, whose OIDC
// user is named by their email, and checks that others now see (and the
// gallery searches) the user's handle, not the email.
func TestMigrateGivesUsersHandles(t *testing.T) {
	t.Parallel()
	c := t.Context()
	eid := store.NewExperimentID()
	path := oldDatabase(t, append(slices.Clone(migrations[:7]), "PRAGMA user_version = 7",
		"INSERT INTO users (id, name, create_time) VALUES ('uK3f9aZq1xYw', 'ada@uni.example', 0)",
		fmt.Sprintf("INSERT INTO experiments (id, name, description, owner, visibility, create_time, update_time) VALUES ('%s', 'mnist', '', 'uK3f9aZq1xYw', 'public', 0, 0)", eid))...)
	if from, to, err := Migrate(c, path); err != nil || from != 7 || to != SchemaVersion {
		t.Fatalf("Migrate = %d -> %d, %v, want 7 -> %d", from, to, err, SchemaVersion)
	}
	s, err := Open(c, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	u, err := s.GetUser(c, "uK3f9aZq1xYw")
	if err != nil {
		t.Fatal(err)
	}
	if u.Name != "ada@uni.example" || u.DisplayName != "" || u.PublicName() != "user-K3f9aZq1" {
		t.Errorf("migrated user = %+v, public name %q, want the handle user-K3f9aZq1", u, u.PublicName())
	}
	for search, want := range map[string]int{"uni.example": 0, "user-k3f9azq1": 1} {
		list, err := s.ListPublicExperiments(c, store.PublicQuery{Search: search, Limit: 10})
		if err != nil || len(list) != want {
			t.Errorf("gallery search %q = %d experiments (%v), want %d", search, len(list), err, want)
		}
	}
}

// TestMigrateTokenParentsAndScope builds a version-7 database with a full
// (upload+read) token and a read-only one and checks that Open keeps them,
// with no parent, the full one gaining the tokens scope it had in effect
// before version 8, the read-only one not.
func TestMigrateTokenParentsAndScope(t *testing.T) {
	t.Parallel()
	c := t.Context()
	path := filepath.Join(t.TempDir(), DefaultFile)
	old, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	stmts := append(slices.Clone(migrations[:7]), "PRAGMA user_version = 7",
		"INSERT INTO users VALUES ('u', 'u', 0)",
		"INSERT INTO api_tokens (id, hash, user_id, name, scopes, secret_prefix, create_time) VALUES ('full', x'01', 'u', 'laptop', 3, 'tbh_a', 1), ('ro', x'02', 'u', 'ci', 2, 'tbh_b', 2)")
	for _, q := range stmts {
		if _, err := old.ExecContext(c, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if err := old.Close(); err != nil {
		t.Fatal(err)
	}
	s, err := Open(c, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tokens, err := s.ListAPITokens(c, "u")
	if err != nil {
		t.Fatal(err)
	}
	want := []store.TokenScopes{store.AllScopes, store.ScopeRead}
	if len(tokens) != 2 {
		t.Fatalf("tokens after the migration: %+v, want 2", tokens)
	}
	for i, tok := range tokens {
		if tok.Scopes != want[i] || tok.ParentID != "" {
			t.Errorf("token %s after the migration: scopes %v, parent %q; want %v, none", tok.ID, tok.Scopes, tok.ParentID, want[i])
		}
	}
}
