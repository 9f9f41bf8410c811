package sqlitestore

import (
	"database/sql"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/tbhub/tbhub/services/internal/storage/scalarchunk"
	"github.com/tbhub/tbhub/services/internal/storage/store"
)

// TestMigrateSummaries: a database of version 12 (scalars in chunks, no
// summaries) gets the summaries of its long series from migration 15, in
// batches (17 series: more than one batch), and bucketed reads after it
// answer as on a store that kept them from the start; a short series gets
// none.
func TestMigrateSummaries(t *testing.T) {
	t.Parallel()
	c := t.Context()
	path := filepath.Join(t.TempDir(), DefaultFile)
	s, err := Open(c, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	eid := newTestExperiment(t, s)
	const long, series = 20_000, 17
	var batch []store.ScalarSeries
	for i := range series {
		b := scalarBatch(0, long)
		b.Series.Tag = string(rune('a' + i))
		b.Points[1234+i].Value = 1e9
		batch = append(batch, b)
	}
	short := scalarBatch(0, 500)
	short.Series.Tag = "short"
	batch = append(batch, short)
	if err := s.WriteScalars(c, eid, batch); err != nil {
		t.Fatal(err)
	}
	read := func(s *Store) map[string][]store.ScalarPoint {
		t.Helper()
		out := map[string][]store.ScalarPoint{}
		err := s.ReadScalars(c, eid, store.Query{Buckets: 7}, func(ts *store.TimeSeries, ps []store.ScalarPoint) error {
			out[ts.Tag] = append(out[ts.Tag], ps...)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	want := read(s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// Back to version 14, before the summaries: the summaries gone.
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(c, "DELETE FROM scalar_chunks WHERE sample_level < -1; PRAGMA user_version = 14"); err != nil {
		t.Fatal(err)
	}
	db.Close()

	if from, _, err := Migrate(c, path); err != nil || from != 14 {
		t.Fatalf("Migrate from %d: %v; want from 14", from, err)
	}
	s, err = Open(c, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := read(s); !reflect.DeepEqual(got, want) {
		t.Errorf("bucketed reads after the migration differ from those before")
	}
	var withSummaries int
	if err := s.r.QueryRowContext(c, "SELECT COUNT(DISTINCT series_id) FROM scalar_chunks WHERE sample_level = ?", scalarchunk.BaseSummaryLevel).Scan(&withSummaries); err != nil {
		t.Fatal(err)
	}
	if withSummaries != series {
		t.Errorf("%d series with summaries after the migration, want the %d long ones", withSummaries, series)
	}
}
