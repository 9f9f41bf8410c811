// Package storetest is the conformance suite every store.Store backend
// passes: one Run call from the backend's tests, with a factory that returns
// a fresh, empty store per call.
//
// The suite checks behaviour only through the store interfaces, so any
// backend that passes behaves the same to the services: writes and
// idempotent rewrites, every filter (absent versus empty), step windows,
// the downsampling rule against downsample.Select, deletion and sweeping,
// concurrent writers and readers, NaN and infinities, and batches larger
// than one commit of any backend.
package storetest

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/tbhub/tbhub/services/internal/storage/store"
)

// Run runs the suite. newStore is called once per subtest and must return
// an empty store that lives until the subtest ends (use t.Cleanup). Subtests
// run in parallel.
func Run(t *testing.T, newStore func(t *testing.T) store.Store) {
	for _, tc := range []struct {
		name string
		fn   func(t *testing.T, s store.Store)
	}{
		{"Users", testUsers},
		{"Experiments", testExperiments},
		{"DamagedRecords", testDamagedRecords},
		{"CreateRequests", testCreateRequests},
		{"ListExperiments", testListExperiments},
		{"ListPublicExperiments", testListPublicExperiments},
		{"ExperimentFacts", testExperimentFacts},
		{"ReadGrants", testReadGrants},
		{"ScalarsRoundTrip", testScalarsRoundTrip},
		{"IdempotentRewrites", testIdempotentRewrites},
		{"LaterEntriesWin", testLaterEntriesWin},
		{"RandomRewrites", testRandomRewrites},
		{"MetadataFirstWriteWins", testMetadataFirstWriteWins},
		{"DataClassConflict", testDataClassConflict},
		{"InvalidWrites", testInvalidWrites},
		{"Filters", testFilters},
		{"StepWindows", testStepWindows},
		{"DownsampleRule", testDownsampleRule},
		{"DownsampleSameStepsAcrossTags", testDownsampleSameStepsAcrossTags},
		{"BucketedReads", testBucketedReads},
		{"SpecialFloats", testSpecialFloats},
		{"Tensors", testTensors},
		{"BlobSequences", testBlobSequences},
		{"BlobRowConditions", testBlobRowConditions},
		{"HostileNames", testHostileNames},
		{"RunsPluginsCounts", testRunsPluginsCounts},
		{"PutRuns", testPutRuns},
		{"CountRuns", testCountRuns},
		{"ListRunsAfter", testListRunsAfter},
		{"Delete", testDelete},
		{"Sweep", testSweep},
		{"AbandonedBlobs", testAbandonedBlobs},
		{"Leases", testLeases},
		{"BigBatches", testBigBatches},
		{"ConcurrentWriters", testConcurrentWriters},
		{"ReadersDuringWrites", testReadersDuringWrites},
		{"SameLogdirUploaders", testSameLogdirUploaders},
		{"SeriesCounters", testSeriesCounters},
		{"AppendsDuringDelete", testAppendsDuringDelete},
		{"UsageCounts", testUsageCounts},
		{"PointsQuota", testPointsQuota},
		{"PointsQuotaRace", testPointsQuotaRace},
		{"ExperimentsQuota", testExperimentsQuota},
		{"BytesQuota", testBytesQuota},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, newStore(t))
		})
	}
}

// ctx is the context of a subtest.
func ctx(t *testing.T) context.Context { return t.Context() }

// wantErr fails the test unless err wraps want.
func wantErr(t *testing.T, what string, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Errorf("%s: got error %v, want %v", what, err, want)
	}
}

// must fails the test now if err is not nil.
func must(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// newUser creates a user named name with ID "u-"+name.
func newUser(t *testing.T, s store.Store, name string) string {
	t.Helper()
	id := "u-" + name
	must(t, "CreateUser "+name, s.CreateUser(ctx(t), store.User{ID: id, Name: name}))
	return id
}

// newExperiment creates a private experiment owned by a new user and
// returns its ID.
func newExperiment(t *testing.T, s store.Store) string {
	t.Helper()
	owner := newUser(t, s, fmt.Sprintf("owner-%s", store.NewExperimentID()))
	eid := store.NewExperimentID()
	must(t, "CreateExperiment", s.CreateExperiment(ctx(t), store.Experiment{
		ID: eid, Name: "exp", Owner: owner, Visibility: store.VisibilityPrivate,
	}))
	return eid
}

// ownedExperiments creates n private experiments owned by owner and
// returns their IDs.
func ownedExperiments(t *testing.T, s store.Writer, owner string, n int) []string {
	t.Helper()
	var eids []string
	for range n {
		eid := store.NewExperimentID()
		must(t, "CreateExperiment", s.CreateExperiment(ctx(t), store.Experiment{ID: eid, Owner: owner, Visibility: store.VisibilityPrivate}))
		eids = append(eids, eid)
	}
	return eids
}

// series is a read result: one series and all the points the visitor got.
type series[P any] struct {
	store.TimeSeries
	Points []P
}

// collect returns a visitor that gathers a read's results and checks the
// visitor contract: series in (run, tag) order, each seen in consecutive
// calls, points ascending by step.
func collect[P any](t *testing.T, step func(*P) int64, out *[]series[P]) func(*store.TimeSeries, []P) error {
	return func(ts *store.TimeSeries, points []P) error {
		t.Helper()
		n := len(*out)
		if n > 0 && (*out)[n-1].Run == ts.Run && (*out)[n-1].Tag == ts.Tag {
			last := &(*out)[n-1]
			if len(last.Points) > 0 && len(points) > 0 && step(&last.Points[len(last.Points)-1]) >= step(&points[0]) {
				t.Errorf("series (%q, %q): a later call restarts at step %d", ts.Run, ts.Tag, step(&points[0]))
			}
			last.Points = append(last.Points, points...)
		} else {
			if n > 0 {
				prev := (*out)[n-1]
				if prev.Run > ts.Run || (prev.Run == ts.Run && prev.Tag >= ts.Tag) {
					t.Errorf("series (%q, %q) visited after (%q, %q)", ts.Run, ts.Tag, prev.Run, prev.Tag)
				}
			}
			cp := *ts
			cp.SummaryMetadata = append([]byte(nil), ts.SummaryMetadata...)
			*out = append(*out, series[P]{TimeSeries: cp, Points: append([]P(nil), points...)})
		}
		for i := 1; i < len(points); i++ {
			if step(&points[i-1]) >= step(&points[i]) {
				t.Errorf("series (%q, %q): steps %d, %d not ascending", ts.Run, ts.Tag, step(&points[i-1]), step(&points[i]))
			}
		}
		return nil
	}
}

func scalarStep(p *store.ScalarPoint) int64              { return p.Step }
func tensorStep(p *store.TensorPoint) int64              { return p.Step }
func blobSeqStep(p *store.BlobSequencePoint) int64       { return p.Step }
func ptr[T any](v T) *T                                  { return &v }
func all(f store.Filter) store.Query                     { return store.Query{Filter: f, MaxPoints: store.AllPoints} }
func ref(run, tag string) store.SeriesRef                { return store.SeriesRef{Run: run, Tag: tag} }
func refOf(ts *store.TimeSeries) store.SeriesRef         { return store.SeriesRef{Run: ts.Run, Tag: ts.Tag} }
func stepsOf[P any](ps []P, step func(*P) int64) []int64 { return mapSlice(ps, step) }

func mapSlice[P, R any](ps []P, f func(*P) R) []R {
	out := make([]R, len(ps))
	for i := range ps {
		out[i] = f(&ps[i])
	}
	return out
}

// readScalars reads q and returns the series in order.
func readScalars(t *testing.T, s store.Store, eid string, q store.Query) []series[store.ScalarPoint] {
	t.Helper()
	var out []series[store.ScalarPoint]
	must(t, "ReadScalars", s.ReadScalars(ctx(t), eid, q, collect(t, scalarStep, &out)))
	return out
}

// refs lists the (run, tag) of read results.
func refs[P any](ss []series[P]) []store.SeriesRef {
	out := make([]store.SeriesRef, len(ss))
	for i := range ss {
		out[i] = refOf(&ss[i].TimeSeries)
	}
	return out
}

// scalarSeries builds a write batch entry with values derived from the step
// (value = step/2 + salt, wall time = 1000 + step).
func scalarSeries(run, tag string, salt float64, steps ...int64) store.ScalarSeries {
	b := store.ScalarSeries{Series: store.TimeSeries{Run: run, Tag: tag, PluginName: "scalars", DataClass: store.DataClassScalar}}
	for _, st := range steps {
		b.Points = append(b.Points, store.ScalarPoint{Step: st, WallTime: 1000 + float64(st), Value: float64(st)/2 + salt})
	}
	return b
}

func stepRange(lo, hi int64) []int64 {
	var s []int64
	for i := lo; i < hi; i++ {
		s = append(s, i)
	}
	return s
}
