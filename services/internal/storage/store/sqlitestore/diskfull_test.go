package sqlitestore

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/tbhub/tbhub/services/internal/storage/store"
)

// bigTensors is one series of n points of size bytes each.
func bigTensors(n, size int) []store.TensorSeries {
	ts := store.TensorSeries{Series: store.TimeSeries{Run: "r", Tag: "t", DataClass: store.DataClassTensor}}
	for i := range n {
		payload := []byte(strings.Repeat(string(rune('a'+i%26)), size))
		ts.Points = append(ts.Points, store.TensorPoint{Step: int64(i), WallTime: 1, DType: 7, Tensor: payload})
	}
	return []store.TensorSeries{ts}
}

// When SQLite answers SQLITE_FULL (here for real: the database may not
// grow past its current page count, as on a full disk) the write fails
// with store.ErrDiskFull, which the RPC edge turns into "the server's disk
// is full", and nothing of it is stored; once there is room again the same
// store writes without a restart (issue 20 #8).
func TestDiskFullIsErrDiskFull(t *testing.T) {
	s := newTestStore(t)
	ctx := t.Context()
	eid := newTestExperiment(t, s)
	var pages int
	if err := s.w.QueryRowContext(ctx, "PRAGMA page_count").Scan(&pages); err != nil {
		t.Fatal(err)
	}
	if _, err := s.w.ExecContext(ctx, fmt.Sprintf("PRAGMA max_page_count = %d", pages)); err != nil {
		t.Fatal(err)
	}
	err := s.WriteTensors(ctx, eid, bigTensors(100, 4000))
	if !errors.Is(err, store.ErrDiskFull) {
		t.Fatalf("WriteTensors on a full database = %v, want store.ErrDiskFull", err)
	}
	if series, err := s.ListSeries(ctx, eid, store.DataClassTensor, store.Filter{}); err != nil || len(series) != 0 {
		t.Errorf("after the failed write: %d series (%v), want none", len(series), err)
	}
	if _, err := s.w.ExecContext(ctx, "PRAGMA max_page_count = 1073741823"); err != nil {
		t.Fatal(err)
	}
	if err := s.WriteTensors(ctx, eid, bigTensors(100, 4000)); err != nil {
		t.Fatalf("WriteTensors once there is room: %v", err)
	}
}

// After a purge the write-ahead log is checkpointed and truncated: the
// space a purge frees is given back, not kept in a log that grew while
// the disk filled up (issue 20 #8).
func TestWALTruncatedAfterPurge(t *testing.T) {
	s := newTestStore(t)
	ctx := t.Context()
	eid := newTestExperiment(t, s)
	// One transaction of ~8 MB: the log cannot be checkpointed in the middle.
	if err := s.WriteTensors(ctx, eid, bigTensors(2000, 4000)); err != nil {
		t.Fatal(err)
	}
	wal := s.path + "-wal"
	before := fileSize(t, wal)
	if before < 4<<20 {
		t.Fatalf("the log holds %d bytes after a big write; the test needs more than 4 MiB", before)
	}
	if err := s.DeleteExperiment(ctx, eid); err != nil {
		t.Fatal(err)
	}
	if err := s.PurgeExperiment(ctx, eid); err != nil {
		t.Fatal(err)
	}
	if after := fileSize(t, wal); after > 1<<20 {
		t.Errorf("the log holds %d bytes after the purge (%d before); want it truncated", after, before)
	}
}

func fileSize(t *testing.T, name string) int64 {
	t.Helper()
	info, err := os.Stat(name)
	if err != nil {
		t.Fatal(err)
	}
	return info.Size()
}
