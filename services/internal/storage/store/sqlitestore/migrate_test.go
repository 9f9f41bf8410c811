package sqlitestore

import (
	"database/sql"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/tbhub/tbhub/services/internal/storage/downsample"
	"github.com/tbhub/tbhub/services/internal/storage/store"
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

// TestMigrateScalarBlocksToChunks builds a version-11 database with scalars
// in 128-point blocks and per-point samples, converts one series in a
// batch of its own as an interrupted conversion would have, and checks
// that Open finishes the conversion: every point comes back to the bit
// (NaN payloads, ±Inf, -0, wall times), downsampled reads give the rule's
// steps, the old tables are gone, and the store takes writes after.
func TestMigrateScalarBlocksToChunks(t *testing.T) {
	t.Parallel()
	c := t.Context()
	eid := store.NewExperimentID()
	stmts := append(slices.Clone(migrations[:11]), "PRAGMA user_version = 11",
		"INSERT INTO users (id, name, create_time) VALUES ('u', 'u', 0)",
		fmt.Sprintf("INSERT INTO experiments (id, name, description, owner, visibility, create_time, update_time) VALUES ('%s', '', '', 'u', 'private', 0, 0)", eid),
		fmt.Sprintf("INSERT INTO runs (experiment_id, name, start_time) VALUES ('%s', 'r', 1)", eid))
	path := oldDatabase(t, stmts...)
	old, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(9, 10))
	want := map[string][]store.ScalarPoint{}
	tags := []string{"loss", "specials", "sparse", "one"}
	for i, tag := range tags {
		var points []store.ScalarPoint
		step := int64(-5)
		for j := range []int{3000, 300, 700, 1}[i] {
			step += 1 + int64(r.IntN(1+i*i*10))
			p := store.ScalarPoint{Step: step, WallTime: 1.7e9 + float64(step)*0.5 + r.Float64(), Value: float64(float32(r.NormFloat64()))}
			if tag == "specials" {
				p.Value = []float64{math.Float64frombits(0x7ff8_0000_dead_beef), math.Inf(1), math.Inf(-1), math.Copysign(0, -1), r.Float64()}[j%5]
				p.WallTime = []float64{math.NaN(), 0, 1.5, math.Inf(1)}[j%4]
			}
			points = append(points, p)
		}
		want[tag] = points
		id := int64(i + 1)
		if _, err := old.ExecContext(c, `INSERT INTO series (id, experiment_id, run, tag, plugin, data_class, display_name, description, point_count, max_step)
			VALUES (?, ?, 'r', ?, 'scalars', 1, '', '', ?, ?)`, id, eid, tag, len(points), step); err != nil {
			t.Fatal(err)
		}
		tx, err := old.BeginTx(c, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := writeV3Blocks(c, tx, id, points); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	// An interrupted conversion: version 10's table and one batch (one
	// series) committed, the version still 9.
	tx, err := old.BeginTx(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(c, migrations[11]); err != nil {
		t.Fatal(err)
	}
	if done, err := convertScalarBatch(c, tx, 1); err != nil || done {
		t.Fatalf("first batch: done %v, %v; want more to do", done, err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := old.Close(); err != nil {
		t.Fatal(err)
	}

	if from, to, err := Migrate(c, path); err != nil || from != 11 || to != SchemaVersion {
		t.Fatalf("Migrate = %d -> %d, %v; want 11 -> %d", from, to, err, SchemaVersion)
	}
	s, err := Open(c, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var n int
	if err := s.r.QueryRowContext(c, "SELECT COUNT(*) FROM sqlite_schema WHERE name IN ('scalar_blocks', 'scalar_samples')").Scan(&n); err != nil || n != 0 {
		t.Errorf("%d old scalar tables remain (%v)", n, err)
	}
	read := func(q store.Query) map[string][]store.ScalarPoint {
		got := map[string][]store.ScalarPoint{}
		err := s.ReadScalars(c, eid, q, func(ts *store.TimeSeries, ps []store.ScalarPoint) error {
			got[ts.Tag] = append(got[ts.Tag], ps...)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	all := read(store.Query{MaxPoints: store.AllPoints})
	for _, tag := range tags {
		if !sameScalarBits(all[tag], want[tag]) {
			t.Errorf("%s after the conversion: %d points, not the %d written (or not to the bit)", tag, len(all[tag]), len(want[tag]))
		}
	}
	for _, k := range []int{1, 50, 1000} {
		for tag, ps := range read(store.Query{MaxPoints: int64(k)}) {
			var steps, got []int64
			for _, p := range want[tag] {
				steps = append(steps, p.Step)
			}
			for _, p := range ps {
				got = append(got, p.Step)
			}
			if w := downsample.Select(steps, k); !slices.Equal(got, w) {
				t.Errorf("%s downsampled to %d after the conversion: steps %v, want %v", tag, k, got, w)
			}
		}
	}
	more := store.ScalarPoint{Step: want["one"][0].Step + 1, WallTime: 2e9, Value: 7}
	if err := s.WriteScalars(c, eid, []store.ScalarSeries{{Series: store.TimeSeries{Run: "r", Tag: "one", PluginName: "scalars"}, Points: []store.ScalarPoint{more}}}); err != nil {
		t.Fatal(err)
	}
	if got := read(store.Query{MaxPoints: store.AllPoints})["one"]; !sameScalarBits(got, append(want["one"], more)) {
		t.Errorf("one after a write: %v", got)
	}
}

// sameScalarBits tells whether a and b hold the same points, floats
// compared by their bits.
func sameScalarBits(a, b []store.ScalarPoint) bool {
	return slices.EqualFunc(a, b, func(p, q store.ScalarPoint) bool {
		return p.Step == q.Step && math.Float64bits(p.WallTime) == math.Float64bits(q.WallTime) &&
			math.Float64bits(p.Value) == math.Float64bits(q.Value)
	})
}

// TestMigrateFillsUserUsage: a database of the version before user_usage
// (the table dropped from one written now) gets each user's live
// experiments and their points counted from the series, and their blob
// rows' bytes, when it is opened.
func TestMigrateFillsUserUsage(t *testing.T) {
	t.Parallel()
	c := t.Context()
	path := filepath.Join(t.TempDir(), DefaultFile)
	s, err := Open(c, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"ada", "bob"} {
		if err := s.CreateUser(c, store.User{ID: id, Name: id}); err != nil {
			t.Fatal(err)
		}
	}
	write := func(owner string, points int) string {
		eid := store.NewExperimentID()
		if err := s.CreateExperiment(c, store.Experiment{ID: eid, Owner: owner, Visibility: store.VisibilityPrivate}); err != nil {
			t.Fatal(err)
		}
		b := store.ScalarSeries{Series: store.TimeSeries{Run: "r", Tag: "t", PluginName: "scalars", DataClass: store.DataClassScalar}}
		for i := range points {
			b.Points = append(b.Points, store.ScalarPoint{Step: int64(i), WallTime: 1, Value: 1})
		}
		if err := s.WriteScalars(c, eid, []store.ScalarSeries{b}); err != nil {
			t.Fatal(err)
		}
		return eid
	}
	// blobs stores unfinished and current blobs of these sizes in eid.
	blobs := func(eid string, sizes ...int64) {
		img := store.TimeSeries{Run: "r", Tag: "img", PluginName: "images"}
		if _, _, err := s.GetOrCreateBlobSequence(c, eid, img, 1, 1, int64(len(sizes))); err != nil {
			t.Fatal(err)
		}
		for i, size := range sizes {
			state := store.BlobStateCurrent
			if i%2 == 0 {
				state = store.BlobStateUnfinalized
			}
			if err := s.PutBlob(c, eid, store.BlobRef{Run: "r", Tag: "img", Step: 1, Index: int64(i)},
				store.Blob{ObjectKey: fmt.Sprintf("%s/%d", eid, i), Size: size, State: state}); err != nil {
				t.Fatal(err)
			}
		}
	}
	blobs(write("ada", 30), 250, 50)
	write("ada", 12)
	gone := write("bob", 8)
	blobs(gone, 40)
	if err := s.DeleteExperiment(c, gone); err != nil {
		t.Fatal(err)
	}
	write("bob", 3)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"DROP TABLE user_usage", "PRAGMA user_version = 15"} {
		if _, err := db.ExecContext(c, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = Open(c, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for user, want := range map[string][3]int64{"ada": {42, 2, 300}, "bob": {3, 1, 0}} {
		u, err := s.UserUsage(c, user)
		if err != nil {
			t.Fatal(err)
		}
		if u.Points != want[0] || u.Experiments != want[1] || u.BlobBytes != want[2] {
			t.Errorf("%s after the migration: %d points in %d experiments, %d blob bytes, want %d in %d, %d bytes",
				user, u.Points, u.Experiments, u.BlobBytes, want[0], want[1], want[2])
		}
	}
}
