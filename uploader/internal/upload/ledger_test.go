package upload

import (
	"errors"
	"testing"

	"github.com/tbhub/tbhub/uploader/internal/migrate"
	"github.com/tbhub/tbhub/uploader/internal/state"
)

// ledgerUnderTest is a ledger whose saves and crash points are recorded.
type ledgerUnderTest struct {
	*ledger
	failure error
	saves   []map[fileKey]int64 // the offsets of each save
	events  []CrashPoint
	saveErr error
}

func newTestLedger() *ledgerUnderTest {
	lt := &ledgerUnderTest{}
	lt.ledger = newLedger(state.New("s", "l"),
		func(s *state.State) error {
			if lt.saveErr != nil {
				return lt.saveErr
			}
			offs := map[fileKey]int64{}
			for run, r := range s.Runs {
				for f, fs := range r.Files {
					offs[fileKey{run, f}] = fs.Offset
				}
			}
			lt.saves = append(lt.saves, offs)
			return nil
		},
		func(p CrashPoint) { lt.events = append(lt.events, p) },
		func() bool { return lt.failure != nil },
		func(err error) { lt.failure = err })
	return lt
}

// TestLedgerCommitsInOrder: segments acknowledged out of order are saved only
// once every earlier one is, each save between the two crash points.
func TestLedgerCommitsInOrder(t *testing.T) {
	l := newTestLedger()
	k := fileKey{"run", "f"}
	var segs []*segment
	for i := range 3 {
		seg, _ := l.join(10, nil)
		l.reached(k, int64(100*(i+1)))
		l.seal(seg)
		segs = append(segs, seg)
	}
	if got := l.readOffset(k).Offset; got != 300 {
		t.Errorf("reading resumes at %d, want 300 (past what this process read)", got)
	}
	l.done(segs[2], 10, nil, true)
	l.done(segs[1], 10, nil, true)
	if len(l.saves) != 0 {
		t.Fatalf("saved %v while the first segment is unacknowledged", l.saves)
	}
	l.done(segs[0], 10, nil, true)
	if len(l.saves) != 1 || l.saves[0][k] != 300 {
		t.Fatalf("saves %v, want one at offset 300", l.saves)
	}
	if want := []CrashPoint{CrashStateSaving, CrashStateSaved}; len(l.events) != 2 || l.events[0] != want[0] || l.events[1] != want[1] {
		t.Errorf("crash points %v, want %v", l.events, want)
	}
	if l.pending() != 0 || l.queued != 0 {
		t.Errorf("pending %d, queued %d after every acknowledgement", l.pending(), l.queued)
	}
}

// TestLedgerUnsealedSegmentWaits: a segment still taking requests is not saved,
// however acknowledged.
func TestLedgerUnsealedSegmentWaits(t *testing.T) {
	l := newTestLedger()
	seg, _ := l.join(10, nil)
	l.reached(fileKey{"run", "f"}, 50)
	l.done(seg, 10, nil, true)
	if len(l.saves) != 0 {
		t.Fatalf("an unsealed segment was saved: %v", l.saves)
	}
	l.seal(nil)
	if len(l.saves) != 1 {
		t.Fatalf("sealing the acknowledged segment saved %d times, want 1", len(l.saves))
	}
}

// TestLedgerNothingAfterFailure: after a failed request nothing more is saved,
// and a failed save fails the upload.
func TestLedgerNothingAfterFailure(t *testing.T) {
	l := newTestLedger()
	a, _ := l.join(10, nil)
	l.reached(fileKey{"run", "f"}, 10)
	l.seal(a)
	b, _ := l.join(10, nil)
	l.reached(fileKey{"run", "f"}, 20)
	l.seal(b)
	l.failure = errors.New("refused")
	l.done(a, 10, nil, false)
	l.done(b, 10, nil, true)
	if len(l.saves) != 0 {
		t.Errorf("saved %v after a failure", l.saves)
	}
	if seg, _ := l.join(10, nil); seg != nil {
		t.Error("a request joined after the failure")
	}

	l = newTestLedger()
	l.saveErr = errors.New("disk full")
	seg, _ := l.join(10, nil)
	l.seal(seg)
	l.done(seg, 10, nil, true)
	if !errors.Is(l.failure, l.saveErr) {
		t.Errorf("a failed save reported %v", l.failure)
	}
	if len(l.events) != 1 || l.events[0] != CrashStateSaving {
		t.Errorf("crash points %v: state-saved reached after a failed save", l.events)
	}
}

// TestLedgerSeriesAndStops: series new to the state and stopped files are saved
// with their segment; a series the state knows is not recorded again.
func TestLedgerSeriesAndStops(t *testing.T) {
	l := newTestLedger()
	l.st.Run("run").Series["known"] = &state.Series{Plugin: "scalars"}
	l.newSeries("run", "known", &state.Series{Plugin: "other"})
	l.newSeries("run", "new", &state.Series{Plugin: "images"})
	k := fileKey{"run", "f"}
	l.stop(k, 42, "corrupt")
	if f := l.readOffset(k); f.Stopped != "corrupt" || f.Offset != 42 {
		t.Errorf("readOffset %+v before the commit", f)
	}
	l.seal(nil)
	r := l.st.Runs["run"]
	if r.Series["known"].Plugin != "scalars" || r.Series["new"].Plugin != "images" {
		t.Errorf("series %+v %+v", r.Series["known"], r.Series["new"])
	}
	if f := r.Files["f"]; f.Offset != 42 || f.Stopped != "corrupt" {
		t.Errorf("file %+v", f)
	}
}

// TestLedgerWaitSeries: waitSeries returns once the series' requests are
// acknowledged.
func TestLedgerWaitSeries(t *testing.T) {
	l := newTestLedger()
	s := &migrate.Series{Tag: "x"}
	seg, _ := l.join(10, []*migrate.Series{s})
	returned := make(chan struct{})
	go func() { l.waitSeries(s); close(returned) }()
	select {
	case <-returned:
		t.Fatal("waitSeries returned with a request of the series in flight")
	default:
	}
	l.done(seg, 10, []*migrate.Series{s}, true)
	<-returned
}
